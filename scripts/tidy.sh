#!/usr/bin/env bash
# clang-tidy over Loom's sources with the checks of .clang-tidy (every finding is an error).
#
#   scripts/tidy.sh [-p BUILD_DIR] [-j JOBS] [--all] [FILE...]
#
# FILE...: just these sources (.cc; a header is checked through the sources that include
# it). Without files: every library source under loom/ (tests excluded); --all adds the
# tests, bench/, examples/ and tests/. BUILD_DIR (default: build) must be configured
# (compile_commands.json) and have generated the protobuf headers (ninja -C BUILD loom_proto).
# The compile commands may be g++'s: GCC-only flags are dropped for clang. Compiler
# warnings (-Wall -Wextra of the project) are reported as clang-diagnostic-* findings, so a
# clean run also means the sources are clang-warning-free.
# Exit status: 0 when clean, 1 when any file has a finding (each is printed).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
jobs=$(nproc)
all=0
files=()
while (($#)); do
  case $1 in
    -p) build=$2; shift 2 ;;
    -j) jobs=$2; shift 2 ;;
    --all) all=1; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) files+=("$1"); shift ;;
  esac
done
tidy=$(command -v clang-tidy-14 || command -v clang-tidy) ||
  { echo "tidy.sh: clang-tidy not found (apt-get install clang-tidy-14)"; exit 2; }
db=$build/compile_commands.json
[[ -f $db ]] || { echo "tidy.sh: no $db; configure first (cmake -S . -B $build -G Ninja)"; exit 2; }
[[ -f $build/loom/io/proto/graph.pb.h ]] ||
  { echo "tidy.sh: generate the protobuf headers first: ninja -C $build loom_proto"; exit 2; }

if ((${#files[@]} == 0)); then
  # The sources the compile database knows, under the source root, generated code aside.
  mapfile -t files < <(python3 - "$db" "$root" "$all" <<'PY'
import json, os, sys
db, root, everything = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
seen = set()
for entry in json.load(open(db)):
    path = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
    rel = os.path.relpath(path, root)
    if rel.startswith("..") or "/proto/" in rel or rel in seen:
        continue
    is_lib = rel.startswith("loom/") and not rel.endswith("_test.cc")
    is_other = rel.split("/")[0] in ("loom", "tests", "bench", "examples")
    if is_lib or (everything and is_other):
        seen.add(rel)
        print(rel)
PY
)
fi
echo "tidy.sh: ${#files[@]} files, $jobs jobs, $("$tidy" --version | grep -o 'version [0-9.]*')"
cd "$root"
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
# The compile commands without the flags clang does not know (g++'s -fvect-cost-model:
# clang stops with "unknown argument").
python3 - "$db" "$log/compile_commands.json" <<'PY'
import json, re, sys
gcc_only = re.compile(r"-fvect-cost-model(=\S*)?")
entries = json.load(open(sys.argv[1]))
for e in entries:
    if "command" in e:
        e["command"] = gcc_only.sub("", e["command"])
    if "arguments" in e:
        e["arguments"] = [a for a in e["arguments"] if not gcc_only.fullmatch(a)]
json.dump(entries, open(sys.argv[2], "w"))
PY
start=$(date +%s)
# One clang-tidy per file, JOBS at a time; each file's output is kept apart so that
# findings print whole.
printf '%s\n' "${files[@]}" | xargs -P "$jobs" -I{} sh -c '
  out="$1/$(echo "$2" | tr / _).log"
  if ! "$0" -p "$3" --quiet \
       --extra-arg=-Wno-unknown-warning-option \
       --extra-arg=-Wno-ignored-optimization-argument \
       --extra-arg=-Wno-unused-command-line-argument "$2" >"$out" 2>&1; then
    echo "$2" >>"$1/failed"
  fi' "$tidy" "$log" {} "$log"
failed=0
if [[ -f $log/failed ]]; then
  sort "$log/failed" | while read -r f; do
    echo "== $f"
    grep -v '^[0-9]* warnings\? generated\.$' "$log/$(echo "$f" | tr / _).log" || true
  done
  failed=$(wc -l <"$log/failed")
fi
echo "tidy.sh: $failed of ${#files[@]} files with findings, $(( $(date +%s) - start )) s"
((failed == 0))
