#!/usr/bin/env bash
# fuzz/run.sh BUILD_DIR SECONDS_EACH
#
# Runs every libFuzzer harness built in BUILD_DIR/fuzz (a -DLOOM_FUZZ=ON build, see
# docs/fuzzing.md) for SECONDS_EACH seconds over a scratch copy of its seed corpus
# fuzz/corpus/<name>/ (the committed seeds are never modified). Prints one line per
# harness: its exec count and the result. Exits non-zero when any harness crashed (or is
# missing), after printing the reproducer's path and the end of the harness's log. The
# scratch copies, logs and reproducers stay in BUILD_DIR/fuzz-run/<name>/.
set -u

if [ $# -ne 2 ]; then
  echo "usage: $0 BUILD_DIR SECONDS_EACH" >&2
  exit 2
fi
build=$(cd "$1" && pwd) || exit 2
seconds=$2
here=$(cd "$(dirname "$0")" && pwd)
run_dir="$build/fuzz-run"

harnesses=()
for bin in "$build"/fuzz/fuzz_*; do
  [ -x "$bin" ] || continue
  name=$(basename "$bin")
  name=${name#fuzz_}
  [ "$name" = seed_writer ] && continue
  harnesses+=("$name")
done
if [ ${#harnesses[@]} -eq 0 ]; then
  echo "no harnesses in $build/fuzz: configure with -DLOOM_FUZZ=ON -DLOOM_SANITIZE=ON" \
       "-DCMAKE_CXX_COMPILER=clang++ and build the fuzz_* targets" >&2
  exit 2
fi

status=0
for name in "${harnesses[@]}"; do
  work="$run_dir/$name"
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/artifacts"
  if [ -d "$here/corpus/$name" ]; then
    cp -R "$here/corpus/$name/." "$work/corpus/"
  else
    echo "fuzz_$name: no seed corpus in fuzz/corpus/$name (add one)"
    status=1
  fi
  seeds=$(find "$work/corpus" -type f | wc -l)
  "$build/fuzz/fuzz_$name" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
      -print_final_stats=1 -artifact_prefix="$work/artifacts/" "$work/corpus" \
      >"$work/log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -1)
  [ -n "$execs" ] || execs=$(grep -o '^#[0-9]*' "$work/log" | tail -1 | tr -d '#')
  found=$(find "$work/corpus" -type f | wc -l)
  if [ $rc -eq 0 ]; then
    printf 'fuzz_%-18s ok     %10s execs in %ss, corpus %d -> %d inputs\n' \
        "$name" "${execs:-?}" "$seconds" "$seeds" "$found"
  else
    status=1
    reproducer=$(find "$work/artifacts" -type f | head -1)
    printf 'fuzz_%-18s CRASH  %10s execs (exit %d); reproducer: %s\n' \
        "$name" "${execs:-?}" "$rc" "${reproducer:-<none written>}"
    echo "---- end of $work/log ----"
    tail -n 40 "$work/log"
    echo "---- replay: $build/fuzz/fuzz_$name ${reproducer:-<file>} ----"
  fi
done
exit $status
