#!/usr/bin/env bash
# Installs ONNX Runtime's CPU build, npm's onnxruntime-node, into DIR/node_modules: the
# runtime the ONNX export tests (loom/estimator/onnx_export_test.cc) load exported models
# with. ONNXRUNTIME_NODE_INSTALL=skip keeps its install script from fetching the GPU
# libraries; the CPU binaries ship inside the package. Idempotent: a DIR that already holds
# the pinned version is left alone. Needs node and npm (Debian: nodejs, npm).
# Usage: scripts/install-onnxruntime-node.sh DIR
set -euo pipefail
version=1.30.0
dir=${1:?usage: install-onnxruntime-node.sh DIR}
pkg="$dir/node_modules/onnxruntime-node/package.json"
if [[ -f "$pkg" ]] && grep -q "\"version\": \"$version\"" "$pkg"; then
  echo "install-onnxruntime-node: onnxruntime-node $version present in $dir"
  exit 0
fi
for tool in node npm; do
  if ! command -v "$tool" >/dev/null; then
    echo "install-onnxruntime-node: '$tool' is not installed (Debian: apt-get install nodejs npm)" >&2
    exit 1
  fi
done
mkdir -p "$dir"
echo "install-onnxruntime-node: installing onnxruntime-node $version into $dir"
if ! ONNXRUNTIME_NODE_INSTALL=skip npm install --prefix "$dir" --no-audit --no-fund --no-save \
       "onnxruntime-node@$version"; then
  echo "install-onnxruntime-node: npm could not install onnxruntime-node@$version (is the npm" \
       "registry, $(npm config get registry), reachable?); the ONNX export tests need it" >&2
  exit 1
fi
