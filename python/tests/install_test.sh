#!/usr/bin/env bash
# `cmake --install` of the Python package: installs BUILD_DIR's "python" component into a
# fresh prefix and imports loom.compat.v1 from there, outside the build tree, running a
# one-op graph. Usage: install_test.sh CMAKE BUILD_DIR PYTHON SITE_DIR_RELATIVE_TO_PREFIX
set -euo pipefail
cmake=$1 build=$2 python=$3 site=$4
work=$build/python/install_test
prefix=$work/prefix
rm -rf "$work"
mkdir -p "$work"
"$cmake" --install "$build" --prefix "$prefix" --component python >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; echo "python install_test: cmake --install failed"; exit 1; }
for f in loom/__init__.py loom/compat/v1/__init__.py loom/compat/v1/train.py; do
  [[ -e $prefix/$site/$f ]] || { echo "python install_test: $prefix/$site/$f was not installed"; exit 1; }
done
ls "$prefix/$site"/loom/_loom*.so >/dev/null ||
  { echo "python install_test: the extension module was not installed"; exit 1; }
cd "$work"
PYTHONPATH="$prefix/$site" "$python" - "$prefix/$site" <<'PY'
import os, sys
import loom.compat.v1 as tf
where = os.path.realpath(tf.__file__)
assert where.startswith(os.path.realpath(sys.argv[1])), where
x = tf.constant([1.0, 2.0])
with tf.Session() as sess:
    print("installed loom:", sess.run(x * 2.0))
PY
