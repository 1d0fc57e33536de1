#!/usr/bin/env bash
# Issue 14's figures in one run (~3-5 minutes on an idle 2-core machine): the convnet's
# training step and its bounds, the MLP against its GEMM bound, and inference throughput,
# Loom beside PyTorch 1.13 (Debian's python3-torch). Each configuration runs REPEATS times,
# Loom and PyTorch alternating; the median is kept. Every line carries the load average
# when it was taken; the header names the CPU and its vector extensions.
# Usage: bench/convnet_bench.sh BUILD_DIR [REPEATS]
set -euo pipefail
build=${1:-build}
repeats=${2:-3}
bench="$build/bench/core_bench"
torch="/usr/bin/python3 $(dirname "$0")/torch_peer.py"

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
field() { sed -E "s/.*\"$1\": ([0-9.eE+-]+).*/\1/"; }
load() { cut -d' ' -f1 /proc/loadavg; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
isa=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' |
  grep -E '^(avx2|fma|avx512f|avx512_bf16|amx_bf16|amx_tile)$' | tr '\n' ' ')
echo "CPU: $cpu ($(nproc) cores; $isa)"
echo "date: $(date -u +%FT%TZ)"
printf '%-40s %12s %12s %6s\n' "configuration" "value" "unit" "load"

# pair NAME FIELD LOOM_ARGS -- TORCH_ARGS: alternating runs; sets loom_v / torch_v (medians).
pair() {
  local name=$1 key=$2; shift 2
  local largs=() targs=() l=() t=()
  while [[ $1 != -- ]]; do largs+=("$1"); shift; done
  shift
  targs=("$@")
  for _ in $(seq "$repeats"); do
    l+=("$("$bench" "${largs[@]}" | field "$key")")
    t+=("$($torch "${targs[@]}" | field "$key")")
  done
  loom_v=$(printf '%s\n' "${l[@]}" | median)
  torch_v=$(printf '%s\n' "${t[@]}" | median)
  printf '%-40s %12.2f %12s %6s\n' "loom    $name" "$loom_v" "$key" "$(load)"
  printf '%-40s %12.2f %12s %6s\n' "pytorch $name" "$torch_v" "$key" "$(load)"
}
single() {  # single NAME FIELD LOOM_ARGS...: sets one_v (median)
  local name=$1 key=$2; shift 2
  local v=()
  for _ in $(seq "$repeats"); do v+=("$("$bench" "$@" | field "$key")"); done
  one_v=$(printf '%s\n' "${v[@]}" | median)
  printf '%-40s %12.2f %12s %6s\n' "loom    $name" "$one_v" "$key" "$(load)"
}

summary=()
for threads in 1 2; do
  pair "convnet b64 train threads=$threads" steps_per_sec convnet "$threads" 30 -- \
    convnet "$threads" 30 1
  cl=$loom_v ct=$torch_v
  single "convnet GEMM-only bound threads=$threads" steps_per_sec convnet_gemm "$threads" 30
  cg=$one_v
  single "convnet kernel bound threads=$threads" steps_per_sec convnet_kernels "$threads" 30
  ck=$one_v
  summary+=("convnet $threads thread(s): loom/pytorch = $(ratio "$cl" "$ct") (target >= 2);" \
    "  loom/GEMM-bound = $(ratio "$cl" "$cg") (target >= 0.85); loom/kernel-bound = $(ratio "$cl" "$ck")")
done
for threads in 1 2; do
  pair "mlp b256 train threads=$threads" steps_per_sec mlp "$threads" 200 -- mlp "$threads" 200 1
  ml=$loom_v mt=$torch_v
  single "mlp GEMM-only bound threads=$threads" steps_per_sec mlp_gemm "$threads" 200
  summary+=("mlp $threads thread(s): loom/pytorch = $(ratio "$ml" "$mt") (target >= 1.25 at 1);" \
    "  loom/GEMM-bound = $(ratio "$ml" "$one_v") (target >= 0.95)")
done
pair "predict dnn b1024 threads=1" rows_per_sec predict_dnn 1 100 -- predict_dnn 1 100 1
summary+=("predict dnn: loom/pytorch = $(ratio "$loom_v" "$torch_v") (target >= 1.5)")
pair "predict convnet b256 threads=1" rows_per_sec predict_convnet 1 10 -- predict_convnet 1 10 1
summary+=("predict convnet: loom/pytorch = $(ratio "$loom_v" "$torch_v") (target >= 1.5)")
echo
printf '%s\n' "${summary[@]}"
