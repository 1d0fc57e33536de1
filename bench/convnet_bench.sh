#!/usr/bin/env bash
# Issue 14's figures in one run (~5-8 minutes on an idle 2-core machine): the convnet's
# training step and its bounds, the MLP against its GEMM bound, inference throughput, and
# the same models in bf16 mixed precision (the hardware path or the fallback, as printed),
# Loom beside PyTorch 1.13 (Debian's python3-torch). Each configuration runs REPEATS times,
# Loom and PyTorch alternating; the median is kept, and beside it the fastest single step
# of all the runs (min ms: on a shared machine what other processes disturb least; the
# min-based ratios use it). Every line carries the load average when it was taken; the
# header names the CPU and its vector extensions.
# MODE "bf16" runs only the bf16 figures (~3-4 minutes): Loom's float32 step beside Loom's
# bf16 and PyTorch's autocast bf16 for each model and thread count, no GEMM bounds and no
# float32 PyTorch runs.
# Usage: bench/convnet_bench.sh BUILD_DIR [REPEATS] [all|bf16]
set -euo pipefail
build=${1:-build}
repeats=${2:-3}
mode=${3:-all}
if [[ $mode != all && $mode != bf16 ]]; then
  echo "convnet_bench.sh: MODE must be 'all' or 'bf16', got '$mode'" >&2
  exit 2
fi
bench="$build/bench/core_bench"
# PyTorch's thread count: torch.set_num_threads (torch_peer.py) sets OpenMP's, not that of
# the pthread OpenBLAS that Debian's python3-torch runs its float32 matrix products on (one
# thread per core by default), so without OPENBLAS_NUM_THREADS a "threads=1" PyTorch run
# multiplied on every core (found in session 16). THREADS is torch_peer.py's second argument.
torch_peer() { OPENBLAS_NUM_THREADS=$2 /usr/bin/python3 "$(dirname "$0")/torch_peer.py" "$@"; }
torch=torch_peer

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
field() { sed -E "s/.*\"$1\": ([0-9.eE+-]+).*/\1/"; }
load() { cut -d' ' -f1 /proc/loadavg; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
isa=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' |
  grep -E '^(avx2|fma|avx512f|avx512_bf16|amx_bf16|amx_tile)$' | tr '\n' ' ')
echo "CPU: $cpu ($(nproc) cores; $isa)"
echo "date: $(date -u +%FT%TZ); load at start: $(cat /proc/loadavg)"
printf '%-40s %12s %12s %10s %6s\n' "configuration" "median" "unit" "min ms" "load"

minimum() { sort -g | head -1; }
# pair NAME FIELD LOOM_ARGS -- TORCH_ARGS: alternating runs; sets loom_v / torch_v (medians
# of FIELD) and loom_m / torch_m (the fastest step, ms).
pair() {
  local name=$1 key=$2; shift 2
  local largs=() targs=() l=() t=() lm=() tm=() out
  while [[ $1 != -- ]]; do largs+=("$1"); shift; done
  shift
  targs=("$@")
  for _ in $(seq "$repeats"); do
    out=$("$bench" "${largs[@]}"); l+=("$(field "$key" <<<"$out")"); lm+=("$(field min_ms_per_step <<<"$out")")
    out=$($torch "${targs[@]}"); t+=("$(field "$key" <<<"$out")"); tm+=("$(field min_ms_per_step <<<"$out")")
  done
  loom_v=$(printf '%s\n' "${l[@]}" | median) loom_m=$(printf '%s\n' "${lm[@]}" | minimum)
  torch_v=$(printf '%s\n' "${t[@]}" | median) torch_m=$(printf '%s\n' "${tm[@]}" | minimum)
  printf '%-40s %12.2f %12s %10.2f %6s\n' "loom    $name" "$loom_v" "$key" "$loom_m" "$(load)"
  printf '%-40s %12.2f %12s %10.2f %6s\n' "pytorch $name" "$torch_v" "$key" "$torch_m" "$(load)"
}
single() {  # single NAME FIELD LOOM_ARGS...: sets one_v (median) and one_m (fastest step, ms)
  local name=$1 key=$2; shift 2
  local v=() m=() out
  for _ in $(seq "$repeats"); do
    out=$("$bench" "$@"); v+=("$(field "$key" <<<"$out")"); m+=("$(field min_ms_per_step <<<"$out")")
  done
  one_v=$(printf '%s\n' "${v[@]}" | median) one_m=$(printf '%s\n' "${m[@]}" | minimum)
  printf '%-40s %12.2f %12s %10.2f %6s\n' "loom    $name" "$one_v" "$key" "$one_m" "$(load)"
}

summary=()
declare -A conv_f32 mlp_f32  # Loom's float32 medians per thread count, for the bf16 ratios
declare -A predict_f32       # Loom's float32 predict medians, by model
if [[ $mode == bf16 ]]; then
  for threads in 1 2; do
    single "mlp b256 train threads=$threads" steps_per_sec mlp "$threads" 200
    mlp_f32[$threads]=$one_v
    single "convnet b64 train threads=$threads" steps_per_sec convnet "$threads" 30
    conv_f32[$threads]=$one_v
  done
  single "predict dnn b1024 threads=1" rows_per_sec predict_dnn 1 100
  predict_f32[dnn]=$one_v
  single "predict convnet b256 threads=1" rows_per_sec predict_convnet 1 10
  predict_f32[convnet]=$one_v
fi
for threads in 1 2; do
  [[ $mode == bf16 ]] && break
  pair "convnet b64 train threads=$threads" steps_per_sec convnet "$threads" 30 -- \
    convnet "$threads" 30 1
  cl=$loom_v ct=$torch_v clm=$loom_m ctm=$torch_m
  conv_f32[$threads]=$cl
  single "convnet GEMM-only bound threads=$threads" steps_per_sec convnet_gemm "$threads" 30
  cg=$one_v cgm=$one_m
  single "convnet kernel bound threads=$threads" steps_per_sec convnet_kernels "$threads" 30
  ck=$one_v ckm=$one_m
  summary+=("convnet $threads thread(s): loom/pytorch = $(ratio "$cl" "$ct") (min-step: $(ratio "$ctm" "$clm")) (target >= 2)"
    "  loom/GEMM-bound = $(ratio "$cl" "$cg") (min-step: $(ratio "$cgm" "$clm")) (target >= 0.85); loom/kernel-bound = $(ratio "$cl" "$ck") (min-step: $(ratio "$ckm" "$clm"))")
done
for threads in 1 2; do
  [[ $mode == bf16 ]] && break
  pair "mlp b256 train threads=$threads" steps_per_sec mlp "$threads" 200 -- mlp "$threads" 200 1
  ml=$loom_v mt=$torch_v mlm=$loom_m mtm=$torch_m
  mlp_f32[$threads]=$ml
  single "mlp GEMM-only bound threads=$threads" steps_per_sec mlp_gemm "$threads" 200
  summary+=("mlp $threads thread(s): loom/pytorch = $(ratio "$ml" "$mt") (min-step: $(ratio "$mtm" "$mlm")) (target >= 1.25 at 1)"
    "  loom/GEMM-bound = $(ratio "$ml" "$one_v") (min-step: $(ratio "$one_m" "$mlm")) (target >= 0.95)")
done
if [[ $mode == all ]]; then
  pair "predict dnn b1024 threads=1" rows_per_sec predict_dnn 1 100 -- predict_dnn 1 100 1
  predict_f32[dnn]=$loom_v
  summary+=("predict dnn: loom/pytorch = $(ratio "$loom_v" "$torch_v") (min-step: $(ratio "$torch_m" "$loom_m")) (target >= 1.5)")
  pair "predict convnet b256 threads=1" rows_per_sec predict_convnet 1 10 -- predict_convnet 1 10 1
  predict_f32[convnet]=$loom_v
  summary+=("predict convnet: loom/pytorch = $(ratio "$loom_v" "$torch_v") (min-step: $(ratio "$torch_m" "$loom_m")) (target >= 1.5)")
fi

# bf16 mixed precision (docs/training.md): the same models under the "bf16" policy, beside
# Loom's float32 runs above and PyTorch's torch.autocast("cpu", dtype=torch.bfloat16).
# Which path ran is the bf16 line: oneDNN's bf16 kernels on AMX or AVX-512 BF16, else the
# float32 fallback, where the emulated policy (software rounding, float32 products) is
# timed too: what the rounding costs, not a speed-up.
bf16_info=$("$bench" bf16_info)
echo "bf16: $bf16_info"
for threads in 1 2; do
  pair "mlp b256 train bf16 threads=$threads" steps_per_sec mlp:bf16 "$threads" 200 -- \
    mlp:bf16 "$threads" 200 1
  summary+=("mlp bf16 $threads thread(s): loom bf16/float32 = $(ratio "$loom_v" "${mlp_f32[$threads]}") (target >= 3 on AMX, >= 1.7 on AVX-512 BF16); loom/pytorch autocast = $(ratio "$loom_v" "$torch_v") (target >= 2)")
  pair "convnet b64 train bf16 threads=$threads" steps_per_sec convnet:bf16 "$threads" 30 -- \
    convnet:bf16 "$threads" 30 1
  summary+=("convnet bf16 $threads thread(s): loom bf16/float32 = $(ratio "$loom_v" "${conv_f32[$threads]}") (target >= 2 on AMX); loom/pytorch autocast = $(ratio "$loom_v" "$torch_v")")
done
pair "predict dnn b1024 bf16 threads=1" rows_per_sec predict_dnn:bf16 1 100 -- \
  predict_dnn:bf16 1 100 1
summary+=("predict dnn bf16: loom/pytorch autocast = $(ratio "$loom_v" "$torch_v") (target >= 1.5); loom bf16/float32 = $(ratio "$loom_v" "${predict_f32[dnn]}")")
pair "predict convnet b256 bf16 threads=1" rows_per_sec predict_convnet:bf16 1 10 -- \
  predict_convnet:bf16 1 10 1
summary+=("predict convnet bf16: loom/pytorch autocast = $(ratio "$loom_v" "$torch_v") (target >= 1.5); loom bf16/float32 = $(ratio "$loom_v" "${predict_f32[convnet]}")")
if [[ $bf16_info == *"falls back"* ]]; then
  summary+=("bf16: no bf16 hardware on this CPU, so \"bf16\" ran the float32 fallback: the bf16 targets cannot be met here")
  single "mlp b256 train bf16-emulated threads=1" steps_per_sec mlp:bf16-emulated 1 200
  summary+=("mlp bf16-emulated 1 thread: loom emulated/float32 = $(ratio "$one_v" "${mlp_f32[1]}") (the software rounding's cost)")
  single "convnet b64 train bf16-emulated threads=1" steps_per_sec convnet:bf16-emulated 1 30
  summary+=("convnet bf16-emulated 1 thread: loom emulated/float32 = $(ratio "$one_v" "${conv_f32[1]}")")
fi
echo
printf '%s\n' "${summary[@]}"
