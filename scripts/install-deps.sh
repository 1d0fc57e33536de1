#!/usr/bin/env bash
# Installs what Loom needs to build, test and run its demo on Debian 12.
# Idempotent: packages already installed are skipped, so a second run does nothing.
# Usage: scripts/install-deps.sh [--bench]   (--bench adds the PyTorch peer for `make bench`)
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  clang-format               # scripts/check-format.sh (CI checks the tree is formatted)
  clang-tidy                 # scripts/tidy.sh (`make tidy`; CI runs it per unity batch)
  clang libclang-rt-14-dev      # make sanitize / fuzz / tsan: clang++ and its ASan, UBSan, TSan, libFuzzer runtimes
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-dev            # GEMM for MatMul / Conv2D (chosen by measurement, bench/RESULTS.md)
  libdnnl-dev                # oneDNN: float32 Conv2D and its backprops (~2x im2col + GEMM on 5x5
                             # layers: no im2col matrix, blocked layouts) and dnnl_sgemm where it
                             # beats OpenBLAS (short sides); kernels picked per CPU at run time
  libprotobuf-dev protobuf-compiler   # GraphDef / Event / Example wire formats
  zlib1g-dev                 # GZIP/ZLIB TFRecords, gzipped IDX, PNG image summaries
  nlohmann-json3-dev         # safetensors headers, SavedModel signatures
  libcli11-dev               # the `loom` command line
  libtomlplusplus-dev        # job files for `loom train`
  libopenmpi-dev openmpi-bin # data-parallel training: `mpirun -np N loom train` (loom/distribute)
  libsnappy-dev              # TF checkpoints: Snappy-compressed blocks of the .index table
  libleveldb-dev             # tests only: LevelDB's TableBuilder writes test TF checkpoints
  dataset-fashion-mnist      # the demo's data
  chromium                   # the report render test (cli_test: headless Chromium)
  python3-onnx               # ONNX export tests: onnx.checker.check_model(full_check=True)
  nodejs                     # ONNX export tests: ONNX Runtime from npm (below)
  python3-dev pybind11-dev   # the Python front end (python/): `import loom.compat.v1 as tf`
  python3-numpy python3-pytest  # its arrays (passed without copies) and its tests under CTest
)
# npm: Debian's nodejs needs the npm package beside it; NodeSource's nodejs carries npm.
command -v npm >/dev/null || packages+=(npm)
if [[ "${1:-}" == "--bench" ]]; then
  packages+=(python3-torch python3-numpy)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# ONNX Runtime's CPU build for the ONNX export tests, from npm (not packaged by Debian),
# where CMake's LOOM_ONNXRUNTIME_NODE_DIR expects it by default. No-op when present.
"$(dirname "$0")/install-onnxruntime-node.sh" "${HOME}/.cache/loom/onnxruntime-node"
