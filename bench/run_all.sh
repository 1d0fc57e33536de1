#!/usr/bin/env bash
# `make bench`: every benchmark, Loom beside its peer. Figures go to bench/RESULTS.md by hand,
# with the machine and the command.
set -euo pipefail
build=${1:-build}
here=$(dirname "$0")
echo "== core engine (issue 2) =="
"$here/run_core.sh" "$build"
if [[ -x "$here/run_data.sh" ]]; then
  echo "== input pipeline (issue 3) =="
  "$here/run_data.sh" "$build"
fi
