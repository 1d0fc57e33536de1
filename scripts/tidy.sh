#!/usr/bin/env bash
# clang-tidy over Loom's sources with the checks of .clang-tidy (every finding is an error).
#
#   scripts/tidy.sh [-p BUILD_DIR] [-j JOBS] [--batches] [--all] [FILE...]
#
# Without files: every library source under loom/ (tests excluded), one clang-tidy per
# source (`make tidy`); --all adds the tests, bench/, examples/ and tests/. FILE...: just
# these sources (.cc; a header is checked through the sources that include it).
# --batches (CI): one clang-tidy per unity batch of a build configured with
# -DCMAKE_UNITY_BUILD=ON (`make test` configures one), so the headers (protobuf, the
# standard library, the layers') are parsed and matched once per 8 sources instead of once
# per source: about a fifth of the CPU time. The findings are the same: the header filter
# of .clang-tidy covers the .cc files a batch includes, and a line filter keeps only those
# sources and the headers, so the generated batch file itself (its #include "x.cc" lines)
# reports nothing. Sources outside any batch run alone.
# BUILD_DIR (default: build) must be configured (compile_commands.json); the protobuf
# headers are generated there first (ninja loom_proto_headers: protoc only, no compile).
# The compile commands may be g++'s:
# GCC-only flags are dropped for clang. Compiler warnings (-Wall -Wextra of the project,
# and -Wthread-safety, which g++ has not) are reported as clang-diagnostic-* findings, so
# a clean run also means the sources are clang-warning-free and their locking agrees with
# the LOOM_GUARDED_BY / LOOM_REQUIRES annotations.
# Exit status: 0 when clean, 1 when any source has a finding (each is printed).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
jobs=$(nproc)
all=0
batches=0
files=()
while (($#)); do
  case $1 in
    -p) build=$(cd "$2" && pwd); shift 2 ;;
    -j) jobs=$2; shift 2 ;;
    --all) all=1; shift ;;
    --batches) batches=1; shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) files+=("$1"); shift ;;
  esac
done
tidy=$(command -v clang-tidy-14 || command -v clang-tidy) ||
  { echo "tidy.sh: clang-tidy not found (apt-get install clang-tidy-14)"; exit 2; }
db=$build/compile_commands.json
[[ -f $db ]] || { echo "tidy.sh: no $db; configure first (cmake -S . -B $build -G Ninja)"; exit 2; }
ninja -C "$build" loom_proto_headers >/dev/null ||
  { echo "tidy.sh: ninja -C $build loom_proto_headers failed"; exit 2; }

cd "$root"
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
# Writes $log/compile_commands.json (the build's commands without the flags clang does not
# know, g++'s -fvect-cost-model: clang stops with "unknown argument"; in per-source mode
# each unity batch expanded into one command per source it includes) and $log/jobs, one
# line per clang-tidy to run: the file, a tab, the --line-filter (or nothing).
python3 - "$db" "$root" "$log" "$all" "$batches" "${files[@]}" <<'PY'
import json, os, re, sys
db, root, log, everything, batches = sys.argv[1:6]
everything, batches = everything == "1", batches == "1"
given = [os.path.normpath(os.path.join(root, f)) for f in sys.argv[6:]]
gcc_only = re.compile(r"-fvect-cost-model(=\S*)?")
include = re.compile(r'^#include "([^"]+)"', re.M)

def selected(path):
    rel = os.path.relpath(path, root)
    if given:
        return path in given
    if rel.startswith("..") or "/proto/" in rel:
        return False
    if rel.startswith("loom/") and not rel.endswith("_test.cc"):
        return True
    return everything and rel.split("/")[0] in ("loom", "tests", "bench", "examples")

entries, units = [], []  # units: (entry, the sources it compiles)
for e in json.load(open(db)):
    if "command" in e:
        e["command"] = gcc_only.sub("", e["command"])
    if "arguments" in e:
        e["arguments"] = [a for a in e["arguments"] if not gcc_only.fullmatch(a)]
    path = os.path.normpath(os.path.join(e["directory"], e["file"]))
    if "/Unity/unity_" in path:
        sources = [os.path.normpath(s) for s in include.findall(open(path).read())]
    else:
        sources = [path]
    units.append((e, path, sources))

jobs, covered = [], set()

def alone(e, path, source):
    """A run of clang-tidy over one source that the unit `path` compiles."""
    one = dict(e, file=source)
    if source != path:
        if "command" in one:
            one["command"] = one["command"].replace(path, source)
        if "arguments" in one:
            one["arguments"] = [source if a == path else a for a in one["arguments"]]
    entries.append(one)
    jobs.append((source, ""))

if batches:
    # Widest batches first, so a source that two targets compile is checked once.
    for e, path, sources in sorted(units, key=lambda u: -sum(map(selected, u[2]))):
        new = [s for s in sources if selected(s) and s not in covered]
        if not new:
            continue
        covered.update(new)
        if path in new:
            entries.append(e)
            jobs.append((path, ""))
        elif 2 * len(new) < len(sources):
            # Mostly sources that are not checked (a test binary's batch holding one helper
            # source): parsing and matching the whole batch for it costs more than alone.
            for s in new:
                alone(e, path, s)
        else:
            # Only these sources and headers (a name matches a file that ends with it).
            entries.append(e)
            jobs.append((path, json.dumps([{"name": s} for s in new] + [{"name": ".h"}])))
else:
    for e, path, sources in units:
        for s in sources:
            if not selected(s) or s in covered:
                continue
            covered.add(s)
            alone(e, path, s)
missing = [f for f in given if f not in covered]
if missing:
    sys.exit("tidy.sh: not in the compile database: " + " ".join(missing))
json.dump(entries, open(os.path.join(log, "compile_commands.json"), "w"))
with open(os.path.join(log, "jobs"), "w") as out:
    for path, line_filter in jobs:
        out.write(f"{path}\t{line_filter}\n")
print(f"tidy.sh: {len(covered)} sources in {len(jobs)} clang-tidy runs", file=sys.stderr)
PY
echo "tidy.sh: $jobs jobs, $("$tidy" --version | grep -o 'version [0-9.]*')"
start=$(date +%s)
# One clang-tidy per job line, JOBS at a time; each one's output is kept apart so that
# findings print whole.
tr '\n' '\0' <"$log/jobs" | xargs -0 -P "$jobs" -I{} sh -c '
  file=${2%%	*} filter=${2#*	}
  out="$1/$(echo "$file" | tr / _).log"
  t0=$(date +%s)
  if ! "$0" -p "$1" --quiet ${filter:+"--line-filter=$filter"} \
       --extra-arg=-Wthread-safety \
       --extra-arg=-Wno-unknown-warning-option \
       --extra-arg=-Wno-ignored-optimization-argument \
       --extra-arg=-Wno-unused-command-line-argument "$file" >"$out" 2>&1; then
    echo "$file" >>"$1/failed"
  fi
  echo "$(( $(date +%s) - t0 )) s ${file#"$3"/}" >>"$1/times"' "$tidy" "$log" {} "$root"
failed=0
if [[ -f $log/failed ]]; then
  sort "$log/failed" | while read -r f; do
    echo "== $f"
    grep -v '^[0-9]* warnings\? generated\.$' "$log/$(echo "$f" | tr / _).log" || true
  done
  failed=$(wc -l <"$log/failed")
fi
echo "tidy.sh: the slowest runs:"
sort -rn "$log/times" | head -5 | sed 's/^/  /'
echo "tidy.sh: $failed of $(wc -l <"$log/jobs") runs with findings, $(( $(date +%s) - start )) s"
((failed == 0))
