#!/usr/bin/env bash
# Core engine benchmarks, Loom beside PyTorch 1.13 on this machine (issue 2).
# Each configuration runs REPEATS times alternating Loom and PyTorch; the median is kept.
# Usage: bench/run_core.sh BUILD_DIR [REPEATS]
set -euo pipefail
build=${1:-build}
repeats=${2:-5}
bench="$build/bench/core_bench"
# PyTorch's thread count: torch.set_num_threads (torch_peer.py) sets OpenMP's, not that of
# the pthread OpenBLAS that Debian's python3-torch runs its float32 matrix products on (one
# thread per core by default), so without OPENBLAS_NUM_THREADS a "threads=1" PyTorch run
# multiplied on every core (found in session 16). THREADS is torch_peer.py's second argument.
torch_peer() { OPENBLAS_NUM_THREADS=$2 /usr/bin/python3 "$(dirname "$0")/torch_peer.py" "$@"; }
torch=torch_peer

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
field() { sed -E "s/.*\"$1\": ([0-9.eE+-]+).*/\1/"; }

run() {  # run NAME CMD... -> median steps/s
  local name=$1; shift
  for _ in $(seq "$repeats"); do "$@" | field steps_per_sec; done | median
}

printf '%-34s %12s\n' "configuration" "steps/s"
declare -A r
for cfg in "mlp 1 200" "mlp 2 200" "softreg 1 3000" "softreg 2 3000" "convnet 1 30" "convnet 2 30"; do
  set -- $cfg
  r[loom_$1_$2]=$(run loom "$bench" "$1" "$2" "$3")
  r[torch_$1_$2]=$(run torch $torch "$1" "$2" "$3" 1)
  printf '%-34s %12.2f\n' "loom    $1 threads=$2" "${r[loom_$1_$2]}"
  printf '%-34s %12.2f\n' "pytorch $1 threads=$2 interop=1" "${r[torch_$1_$2]}"
done
r[torch_mlp_2_i2]=$(run torch $torch mlp 2 200 2)
printf '%-34s %12.2f\n' "pytorch mlp threads=2 interop=2" "${r[torch_mlp_2_i2]}"
# OpenMP's default spin-waiting costs PyTorch most of its 2-thread speed on this VM;
# passive waiting is its best 2-thread configuration here.
r[torch_mlp_2_passive]=$(OMP_WAIT_POLICY=PASSIVE run torch $torch mlp 2 200 1)
printf '%-34s %12.2f\n' "pytorch mlp threads=2 OMP passive" "${r[torch_mlp_2_passive]}"
r[gemm_1]=$(run gemm "$bench" mlp_gemm 1 200)
r[gemm_2]=$(run gemm "$bench" mlp_gemm 2 200)
printf '%-34s %12.2f\n' "GEMM-only bound mlp threads=1" "${r[gemm_1]}"
printf '%-34s %12.2f\n' "GEMM-only bound mlp threads=2" "${r[gemm_2]}"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
best2=$(printf '%s\n%s\n%s\n' "${r[torch_mlp_2]}" "${r[torch_mlp_2_i2]}" "${r[torch_mlp_2_passive]}" | sort -g | tail -1)
echo
echo "MLP 1 thread:  loom/pytorch = $(ratio "${r[loom_mlp_1]}" "${r[torch_mlp_1]}") (target >= 1.25)"
echo "MLP 2 threads: loom/pytorch-best = $(ratio "${r[loom_mlp_2]}" "$best2") (target >= 1.1)"
echo "MLP 1 thread:  loom/GEMM-bound = $(ratio "${r[loom_mlp_1]}" "${r[gemm_1]}") (target >= 0.8)"
echo "MLP 2 threads: loom/GEMM-bound = $(ratio "${r[loom_mlp_2]}" "${r[gemm_2]}") (target >= 0.8)"
# time per step is 1 / (steps/s), so Loom's time over PyTorch's is PyTorch's steps/s over Loom's
echo "softreg 1 thread: loom time/pytorch time = $(ratio "${r[torch_softreg_1]}" "${r[loom_softreg_1]}") (target <= 0.2, issue 14)"
echo "convnet 1 thread: loom/pytorch = $(ratio "${r[loom_convnet_1]}" "${r[torch_convnet_1]}")"
echo "convnet 2 threads: loom/pytorch = $(ratio "${r[loom_convnet_2]}" "${r[torch_convnet_2]}")"
