#!/usr/bin/env bash
# Issue 14's "no oversubscription": the MLP step of two core_bench binaries (e.g. a saved
# build from before a change and the current one) side by side. bench/RESULTS.md, session 17.
# The 2-thread MLP step: old pools (BASE binary) against one OpenMP team (NEW binary),
# alternating, idle and under a controlled load (LOAD busy loops), default libgomp waiting
# and OMP_WAIT_POLICY=passive. Usage: threads_bench.sh BASE NEW [REPEATS] [LOAD]
set -uo pipefail
base=$1; new=$2; reps=${3:-6}; load=${4:-4}
sps() { grep -o '"steps_per_sec": [0-9.]*' | awk '{print $2}'; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) ; $(date -u +%FT%TZ); load $(cut -d' ' -f1-3 /proc/loadavg)"
run_set() {  # label
  local label=$1
  for cfg in "1 default" "2 default" "2 passive"; do
    set -- $cfg; t=$1; pol=$2
    : > /tmp/tb_base; : > /tmp/tb_new
    for ((i = 0; i < reps; i++)); do
      for b in base new; do
        bin=${!b}
        if [[ $pol == passive ]]; then
          OMP_WAIT_POLICY=passive $bin mlp $t 150 | sps >> /tmp/tb_$b
        else
          $bin mlp $t 150 | sps >> /tmp/tb_$b
        fi
      done
    done
    printf '%-8s threads=%s %-8s base %7.1f [%s]  new %7.1f [%s]\n' "$label" "$t" "$pol" \
      "$(median < /tmp/tb_base)" "$(tr '\n' ' ' < /tmp/tb_base)" \
      "$(median < /tmp/tb_new)" "$(tr '\n' ' ' < /tmp/tb_new)"
  done
}
echo "== idle"; run_set idle
echo "== under load: $load busy loops"
pids=()
for ((j = 0; j < load; j++)); do (while :; do :; done) & pids+=($!); done
run_set load
kill "${pids[@]}"
