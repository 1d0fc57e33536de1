#!/usr/bin/env bash
# Input pipeline benchmarks (issue 3), Loom beside PyTorch's DataLoader on this machine.
# Usage: bench/run_data.sh BUILD_DIR [ROWS]
set -euo pipefail
build=${1:-build}
rows=${2:-1000000}
here=$(dirname "$0")
echo "-- FromTensorSlices -> Shuffle(100000) -> Repeat -> Batch(256) -> Prefetch(2), $rows x 784"
"$build/bench/data_pipeline_bench" "$rows" 3000
/usr/bin/python3 "$here/torch_dataloader.py" "$rows" 500
echo "-- the same over a memory-mapped .npy; TFRecord read + parse vs raw read"
"$build/bench/data_files_bench" "$rows" 200000 /tmp 5
echo "-- peak memory over 4 GiB of features, one epoch of Shuffle -> Batch -> Prefetch"
echo "   (in memory: VmHWM <= 1.05 x data + 100 MiB; memory-mapped .npy: RssAnon <= 300 MiB)"
"$build/bench/data_memory_bench" memory 4
"$build/bench/data_memory_bench" npy 4 /tmp
