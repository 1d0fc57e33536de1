#!/usr/bin/env bash
# `cmake --install` and find_package(Loom): installs BUILD_DIR into a fresh prefix, checks
# the layout, then configures, builds and runs tests/install_consumer against the prefix
# alone, and runs the installed `loom` on the checkpoint the program wrote. Fails on any
# step. Usage: install_test.sh CMAKE SOURCE_DIR BUILD_DIR
set -euo pipefail
cmake=$1 src=$2 build=$3
# A fixed directory (wiped first), so a ccache hit is possible on the consumer's compile.
work=$build/install_test
prefix=$work/prefix
rm -rf "$work"
mkdir -p "$work"

"$cmake" --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; echo "install_test: cmake --install failed (is the build complete?)"; exit 1; }
for f in bin/loom include/loom/loom.h include/loom/io/proto/event.pb.h \
         lib/libloom_estimator.a lib/cmake/Loom/LoomConfig.cmake \
         lib/cmake/Loom/LoomConfigVersion.cmake lib/cmake/Loom/LoomTargets.cmake; do
  [[ -e $prefix/$f ]] || { echo "install_test: $prefix/$f was not installed"; exit 1; }
done
# Only public headers: no implementation header, test helper, command header or protobuf
# side (*_proto.h, example_wire.h).
private=$(cd "$prefix/include" && find loom -name '*.h' \
  \( -name '*_internal.h' -o -name '*test_util.h' -o -name 'test_ops.h' -o -name '*_impl.h' \
     -o -name '*_proto.h' -o -name example_wire.h \
     -o -path 'loom/cli/*' -o -name elementwise.h -o -name blas.h -o -name training_kernels.h \) )
if [[ -n $private ]]; then
  echo "install_test: implementation, test or command headers were installed:"; echo "$private"
  exit 1
fi
# The package carries no -march: a program built against it runs on any x86-64 machine
# (the kernels choose AVX2 / AVX-512 at run time).
if grep -rl -- '-march' "$prefix/lib/cmake/Loom"; then
  echo "install_test: the installed CMake package passes -march to its users"; exit 1
fi
# No installed header includes a protobuf header: a consumer compiles without them.
protobuf=$(cd "$prefix/include" && grep -rlE '^#include [<"](google/protobuf/|.*\.pb\.h)' \
  --include='*.h' --exclude='*.pb.h' loom || true)
if [[ -n $protobuf ]]; then
  echo "install_test: installed headers include protobuf headers:"; echo "$protobuf"; exit 1
fi
# Every installed header's own includes of Loom headers are installed too (a public header
# that includes a private one breaks every consumer that includes it).
missing=$(cd "$prefix/include" && find loom -name '*.h' -exec grep -H '^#include "loom/' {} + |
  sed -E 's/^([^:]*):#include "([^"]*)".*/\1 \2/' |
  while read -r header included; do [[ -e $included ]] || echo "$header includes $included"; done)
if [[ -n $missing ]]; then
  echo "install_test: installed headers include headers that were not installed:"; echo "$missing"
  exit 1
fi

configure=(-S "$src/tests/install_consumer" -B "$work/consumer" -DCMAKE_BUILD_TYPE=Release
           -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
if command -v ninja >/dev/null; then configure+=(-G Ninja); fi
if command -v ccache >/dev/null; then configure+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
"$cmake" "${configure[@]}" >"$work/configure.log" || { cat "$work/configure.log"; exit 1; }
# The package found must be the one just installed, not a build tree.
grep -q "from $prefix/lib/cmake/Loom" "$work/configure.log" ||
  { echo "install_test: find_package(Loom) did not use $prefix:"; cat "$work/configure.log"; exit 1; }
"$cmake" --build "$work/consumer" >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }

out=$("$work/consumer/install_consumer" "$work/model" 2>"$work/run.log") ||
  { echo "install_test: install_consumer failed: $out"; tail -20 "$work/run.log"; exit 1; }
echo "$out"
[[ $out == *"install_consumer: rmse "*" after 200 steps"* ]] ||
  { echo "install_test: unexpected output"; exit 1; }

inspect=$("$prefix/bin/loom" inspect "$work/model")
[[ $inspect == *"global step: 200"* ]] ||
  { echo "install_test: the installed loom did not read the checkpoint:"; echo "$inspect"; exit 1; }
echo "installed loom reads the consumer's checkpoint (global step 200)"
