#!/usr/bin/env bash
# The repository's documentation stands on its own. Fails when
#   1. a file names something outside the repository that a clone elsewhere does not
#      have: the design notes and API sketch the project started from (their content now
#      lives in docs/design.md and the examples) or a path into a sibling folder of the
#      checkout (the patterns are assembled below, so this file does not name them);
#   2. a relative Markdown link ([text](path)) outside code leaves the repository or points
#      to a file that does not exist;
#   3. a source comment or doc names a docs/*.md page that does not exist.
# Usage: doc_links_test.sh REPOSITORY_ROOT
set -euo pipefail
root=$(cd "$1" && pwd -P)
cd "$root"
self=tests/doc_links_test.sh
failures=0
fail() {
  echo "$1"
  failures=$((failures + 1))
}

# Every text file we own: docs, sources, build files, scripts (not build trees or .git).
mapfile -t files < <(find . \( -path ./.git -o -path './build*' -o -name '_deps' \) -prune -o \
  -type f \( -name '*.md' -o -name '*.h' -o -name '*.cc' -o -name '*.txt' -o -name '*.cmake' \
  -o -name '*.sh' -o -name '*.toml' -o -name '*.proto' -o -name Makefile -o -path './.ci/*' \) \
  -print | sed 's|^\./||' | sort)
[[ ${#files[@]} -gt 50 ]] || { echo "found only ${#files[@]} files under $root"; exit 1; }

# 1. References to files the repository does not have (the third-party test files are in
# testdata/, the design in docs/design.md).
sibling='shared'
outside="API-SKE""TCH|\\.\\./${sibling}|${sibling}/(DESIGN|STYLE)\\.md"
for f in "${files[@]}"; do
  [[ $f == "$self" ]] && continue
  while IFS= read -r hit; do
    fail "$f:$hit: refers to a file outside the repository"
  done < <(grep -nE "$outside" "$f" || true)
done

# 2. Relative links in Markdown, outside fenced code blocks and inline code.
for f in "${files[@]}"; do
  [[ $f == *.md ]] || continue
  dir=$(dirname "$f")
  while IFS=: read -r line target; do
    target=${target%%#*}
    [[ -z $target ]] && continue
    resolved=$(realpath -m "$dir/$target")
    if [[ $resolved != "$root" && $resolved != "$root"/* ]]; then
      fail "$f:$line: link '$target' leaves the repository"
    elif [[ ! -e $resolved ]]; then
      fail "$f:$line: link '$target' points to a missing file"
    fi
  done < <(awk '/^[ \t]*```/ { code = !code; next }
                !code { gsub(/`[^`]*`/, ""); print NR ":" $0 }' "$f" |
           grep -oE '^[0-9]+:|\]\([^) ]+\)' |
           awk '/^[0-9]+:$/ { n = substr($0, 1, length($0) - 1); next }
                { t = substr($0, 3, length($0) - 3);
                  if (t !~ /^(https?|mailto|file):/) print n ":" t }')
done

# 3. docs/*.md pages named anywhere (comments, docs, help strings) exist.
for f in "${files[@]}"; do
  [[ $f == "$self" ]] && continue
  while IFS=: read -r line page; do
    [[ -e $page ]] || fail "$f:$line: names '$page', which does not exist"
  done < <(grep -noE '(^|[^A-Za-z0-9_./-])docs/[A-Za-z0-9_/.-]+\.md' "$f" |
           sed -E 's/^([0-9]+):[^d]*/\1:/' || true)
done

if [[ $failures -gt 0 ]]; then
  echo "$failures reference(s) leave the repository or point to missing files"
  exit 1
fi
echo "documentation links: ${#files[@]} files checked, all references inside the repository"
