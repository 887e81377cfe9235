#!/usr/bin/env bash
# run_sanitized.sh BUILD_DIR [RUNS]
#
# Malformed-blob testing of serialization/ under AddressSanitizer + UndefinedBehaviorSanitizer:
#   1. configures BUILD_DIR as a clang build tree of its own (VKD_SANITIZE=address,undefined,
#      VKD_FUZZ=ON; cmake/VkdSanitizers.cmake) and builds only vkd_serialization_tests,
#      fuzz_deserialize and make_seed_corpus (the GPU runtime is never built here);
#   2. runs vkd_serialization_tests (must be clean: any sanitizer report aborts it);
#   3. writes the seed corpus (valid blobs) and runs fuzz_deserialize for RUNS executions
#      (default 1000000), capped at VKD_FUZZ_MAX_TIME seconds (default 600) in case the machine
#      is slow. New inputs collect in BUILD_DIR/fuzz/corpus and are reused by the next run.
# Exits non-zero on a build error, a failing test, a sanitizer report or a fuzzer finding
# (crash, uncaught exception, leak, timeout, out-of-memory); the input that caused a finding is
# saved as BUILD_DIR/fuzz/crash-* (or leak-*, timeout-*, oom-*). Replay it with
#   BUILD_DIR/test/fuzz_deserialize BUILD_DIR/fuzz/crash-...
# CC / CXX choose the compiler (default clang / clang++); CTest's fuzz_deserialize runs this.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: $0 BUILD_DIR [RUNS]" >&2
  exit 2
fi
build=$(realpath -m "$1")
runs=${2:-1000000}
max_time=${VKD_FUZZ_MAX_TIME:-600}
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
start=$SECONDS
mkdir -p "$build/fuzz"

# Prints the log and fails when a step fails; keeps the output short when it passes.
quiet() {
  local log=$1; shift
  if ! "$@" >"$log" 2>&1; then
    cat "$log"
    echo "run_sanitized: FAILED: $*" >&2
    exit 1
  fi
}

echo "run_sanitized: configuring and building $build"
generator=()
if [ ! -f "$build/CMakeCache.txt" ] && command -v ninja >/dev/null; then
  generator=(-G Ninja)
fi
quiet "$build/fuzz/configure.log" env CC="${CC:-clang}" CXX="${CXX:-clang++}" \
  cmake -S "$src" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DVKD_SANITIZE=address,undefined -DVKD_FUZZ=ON
quiet "$build/fuzz/build.log" \
  cmake --build "$build" --target vkd_serialization_tests fuzz_deserialize make_seed_corpus
echo "run_sanitized: built in $((SECONDS - start)) s"

# halt_on_error: the first report fails the run (UBSan would otherwise print and go on).
asan_options=halt_on_error=1:detect_leaks=1:strict_string_checks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

echo "run_sanitized: vkd_serialization_tests under ASan + UBSan"
# Stack-use-after-return detection only here: it makes the fuzzer 4-5x slower.
ASAN_OPTIONS=$asan_options:detect_stack_use_after_return=1 \
  quiet "$build/fuzz/tests.log" "$build/test/vkd_serialization_tests"
export ASAN_OPTIONS=$asan_options
grep -E '^\[  PASSED  \]' "$build/fuzz/tests.log"

seeds=$build/fuzz/seeds
corpus=$build/fuzz/corpus
rm -rf "$seeds"
mkdir -p "$seeds" "$corpus"
quiet "$build/fuzz/seeds.log" "$build/test/make_seed_corpus" "$seeds"

echo "run_sanitized: fuzz_deserialize, $runs runs (at most $max_time s)"
fuzz_start=$SECONDS
log=$build/fuzz/fuzz.log
# -timeout: one input running 10 s is a hang. -rss_limit_mb also caps single allocations.
# -max_len: room for the seeds (about 1-2 KiB) to grow. New inputs go to the first directory.
if ! "$build/test/fuzz_deserialize" -runs="$runs" -max_total_time="$max_time" \
    -rss_limit_mb=2048 -timeout=10 -max_len=8192 -print_final_stats=1 \
    -artifact_prefix="$build/fuzz/" "$corpus" "$seeds" >"$log" 2>&1; then
  tail -n 200 "$log"
  echo "run_sanitized: FAILED: fuzz_deserialize found a problem; see $log and" \
       "$build/fuzz/ (crash-*, leak-*, timeout-*, oom-*)" >&2
  exit 1
fi
grep -E '^(Done [0-9]+ runs|stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb))' \
  "$log"
done_runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log")
if [ "${done_runs:-0}" -lt "$runs" ]; then
  echo "run_sanitized: note: stopped by the ${max_time} s cap after ${done_runs:-0} of $runs runs"
fi
echo "run_sanitized: fuzzing took $((SECONDS - fuzz_start)) s;" \
     "corpus $(ls "$corpus" | wc -l) inputs; total $((SECONDS - start)) s; clean"
