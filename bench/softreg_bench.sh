#!/usr/bin/env bash
# Softmax regression (784 -> 10, batch 32, GradientDescent), Loom beside PyTorch 1.13,
# alternating, with the step's two products alone (issue 14: Loom's step time <= 0.2 of
# PyTorch's). Prints the CPU model and the load average beside every figure: the machine
# may be shared, so the fastest step (min) is printed next to the mean.
# Usage: bench/softreg_bench.sh BUILD_DIR [REPEATS] [BASELINE_BUILD_DIR]
#   BASELINE_BUILD_DIR: another build (an earlier commit) run in the same alternation.
set -euo pipefail
build=${1:-build}
repeats=${2:-5}
base=${3:-}
# PyTorch's thread count: torch.set_num_threads (torch_peer.py) sets OpenMP's, not that of
# the pthread OpenBLAS that Debian's python3-torch runs its float32 matrix products on (one
# thread per core by default), so without OPENBLAS_NUM_THREADS a "threads=1" PyTorch run
# multiplied on every core (found in session 16). THREADS is torch_peer.py's second argument.
torch_peer() { OPENBLAS_NUM_THREADS=$2 /usr/bin/python3 "$(dirname "$0")/torch_peer.py" "$@"; }
torch=torch_peer
field() { sed -E "s/.*\"$1\": ([0-9.eE+-]+).*/\1/"; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores"
peers=(loom torch)
[[ -n "$base" ]] && peers=(loom base torch)
declare -A mean minv
for _ in $(seq "$repeats"); do
  for p in "${peers[@]}"; do
    case $p in
      loom) line=$("$build/bench/core_bench" softreg 1 30000) ;;
      base) line=$("$base/bench/core_bench" softreg 1 30000) ;;
      torch) line=$($torch softreg 1 3000 1) ;;
    esac
    ms=$(field ms_per_step <<<"$line")
    mn=$(field min_ms_per_step <<<"$line")
    printf '%-6s softreg step %8.2f us  min %8.2f us  load %s\n' "$p" \
      "$(awk -v v="$ms" 'BEGIN{print 1000*v}')" "$(awk -v v="$mn" 'BEGIN{print 1000*v}')" "$(load)"
    mean[$p]+="$ms "
    minv[$p]+="$mn "
  done
done
med() { tr ' ' '\n' <<<"$1" | grep . | median; }
echo
for p in "${peers[@]}"; do
  printf '%-6s median step %8.2f us, median min %8.2f us\n' "$p" \
    "$(awk -v v="$(med "${mean[$p]}")" 'BEGIN{print 1000*v}')" \
    "$(awk -v v="$(med "${minv[$p]}")" 'BEGIN{print 1000*v}')"
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a / b}'; }
for p in "${peers[@]}"; do
  [[ $p == torch ]] && continue
  echo "$p/pytorch step time: mean $(ratio "$(med "${mean[$p]}")" "$(med "${mean[torch]}")")," \
    "min $(ratio "$(med "${minv[$p]}")" "$(med "${minv[torch]}")") (target <= 0.2)"
done
echo
echo "The step's two products alone (32x784 * 784x10 and its weight gradient 784x32 * 32x10):"
for flag in "" openblas onednn; do
  line=$("$build/bench/core_bench" softreg_gemm 1 20000 $flag)
  printf '%-12s min %7.2f us  cpu %7.2f us  load %s\n' "${flag:-loom::Gemm}" \
    "$(field min_us_per_step <<<"$line")" "$(field cpu_us_per_step <<<"$line")" "$(load)"
done
