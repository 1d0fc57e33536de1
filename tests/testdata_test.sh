#!/usr/bin/env bash
# testdata/ holds third-party files whose bytes the compatibility tests trust: every file
# there must match its line in testdata/SHA256SUMS, and every data file must have a line
# (so nothing unverified slips in). SOURCES.md, SHA256SUMS itself and LICENSES/ are text
# written by us and are exempt. Usage: tests/testdata_test.sh REPO_ROOT
set -euo pipefail
cd "$1/testdata"
sha256sum --check --quiet --strict SHA256SUMS
listed=$(sed -E 's/^[0-9a-f]{64} [ *](\.\/)?//' SHA256SUMS | sort)
present=$(find . -type f ! -name SHA256SUMS ! -name SOURCES.md ! -path './LICENSES/*' \
            | sed 's|^\./||' | sort)
unlisted=$(comm -13 <(echo "$listed") <(echo "$present"))
if [[ -n "$unlisted" ]]; then
  echo "testdata/: files without a line in SHA256SUMS (add one, and a row in SOURCES.md):"
  echo "$unlisted"
  exit 1
fi
echo "testdata/: $(echo "$present" | wc -l) files match SHA256SUMS"
