#!/usr/bin/env bash
# The README's C++ example must be exactly the lines between README-BEGIN and README-END in
# examples/readme_example.cc (which the suite builds and runs), so the README cannot rot.
set -euo pipefail
root=$1
expected=$(sed -n '/README-BEGIN/,/README-END/p' "$root/examples/readme_example.cc" | sed '1d;$d' | sed 's/^  //')
actual=$(sed -n '/<!-- example:begin -->/,/<!-- example:end -->/p' "$root/README.md" | sed '1,2d;$d' | sed '$d')
if [[ "$expected" != "$actual" ]]; then
  echo "README.md's example differs from examples/readme_example.cc:"
  diff <(echo "$expected") <(echo "$actual") || true
  exit 1
fi
echo "README example matches examples/readme_example.cc"
