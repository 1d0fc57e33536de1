#!/usr/bin/env bash
# Fails (exit 1) when a C++ file of the repository differs from what clang-format makes of
# it under .clang-format, listing the files; `scripts/check-format.sh --fix` formats them.
# CI runs it first (.ci/run). Uses clang-format 14, the version install-deps.sh installs.
set -euo pipefail
cd "$(dirname "$0")/.."
CLANG_FORMAT="${CLANG_FORMAT:-clang-format}"
mapfile -t files < <(git ls-files '*.cc' '*.h')
if [[ "${1:-}" == "--fix" ]]; then
  "$CLANG_FORMAT" -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  "$CLANG_FORMAT" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  echo "check-format: ${#bad[@]} file(s) differ from clang-format's output (.clang-format):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  echo "check-format: run scripts/check-format.sh --fix and commit the result" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files formatted"
