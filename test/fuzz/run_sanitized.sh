#!/usr/bin/env bash
# run_sanitized.sh MODE BUILD_DIR [TARGET] [RUNS]    (test/fuzz/README.md has the whole story)
#
# The ASan + UBSan + libFuzzer build tree and the fuzz runs, in steps:
#   build BUILD_DIR
#       configures BUILD_DIR as a clang build tree of its own (VKD_SANITIZE=address,undefined,
#       VKD_FUZZ=ON; cmake/VkdSanitizers.cmake), builds the fuzz targets, make_seed_corpus,
#       vkd_serialization_tests and the vkd CLI (BUILD_DIR/vkd, which test/cli's
#       cli_sanitized_* tests run), runs vkd_serialization_tests (any sanitizer report fails it)
#       and writes the seed corpora to BUILD_DIR/fuzz/<target>/seeds. CTest's fuzz_build.
#   run BUILD_DIR TARGET [RUNS]
#       the short, repeatable run (CTest's fuzz_<target>): replays test/fuzz/regressions/TARGET/*
#       (each must finish without a finding, loaded as the harness picks and aligned), then
#       fuzzes from the seeds into a corpus emptied first, with libFuzzer seed VKD_FUZZ_SEED
#       (default 1), for RUNS executions (default 100000) or VKD_FUZZ_MAX_TIME seconds (default
#       60), whichever comes first. Stopping at the time cap is a pass; the executions done are
#       printed either way.
#   long BUILD_DIR TARGET [RUNS]
#       the nightly-style run: like `run`, but a random libFuzzer seed, a corpus kept in
#       BUILD_DIR/fuzz/TARGET/corpus between runs, RUNS default 1000000 and VKD_FUZZ_MAX_TIME
#       default 86400. Extra libFuzzer flags: VKD_FUZZ_FLAGS (e.g. "-fork=1 -ignore_crashes=1").
#   replay BUILD_DIR TARGET FILE...
#       runs TARGET once on each FILE (a finding, a regression input) with the same sanitizer
#       options, printing the whole report.
#   all BUILD_DIR [RUNS]
#       build, then `run` for every target.
# TARGET: fuzz_deserialize | fuzz_load_blob | fuzz_graph_ir | fuzz_partition_plan. Exits
# non-zero on a build error, a failing test, a sanitizer report or a fuzzer finding (crash,
# uncaught exception, leak, timeout, out-of-memory); the input is saved as
# BUILD_DIR/fuzz/TARGET/{crash,leak,timeout,oom}-<sha1>. CC / CXX choose the compiler (default
# clang / clang++).
set -euo pipefail

usage() {
  echo "usage: $0 build BUILD_DIR | run|long BUILD_DIR TARGET [RUNS] |" \
       "replay BUILD_DIR TARGET FILE... | all BUILD_DIR [RUNS]" >&2
  exit 2
}
[ $# -ge 2 ] || usage
mode=$1
build=$(realpath -m "$2")
shift 2
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
targets=(fuzz_deserialize fuzz_load_blob fuzz_graph_ir fuzz_partition_plan)

# Prints the log and fails when a step fails; keeps the output short when it passes.
quiet() {
  local log=$1; shift
  if ! "$@" >"$log" 2>&1; then
    tail -n 100 "$log"
    echo "run_sanitized: FAILED: $* (whole log: $log)" >&2
    exit 1
  fi
}

# halt_on_error: the first report fails the run (UBSan would otherwise print and go on). The
# Vulkan loader and driver are not instrumented and keep a few allocations for the life of the
# process: lsan.supp names only those libraries.
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$src/test/fuzz/lsan.supp:print_suppressions=0}

do_build() {
  local start=$SECONDS
  mkdir -p "$build/fuzz"
  echo "run_sanitized: configuring and building $build"
  local generator=()
  if [ ! -f "$build/CMakeCache.txt" ] && command -v ninja >/dev/null; then
    generator=(-G Ninja)
  fi
  # A fresh tree starts from the parent build's compiled shaders (a per-variant cache keyed by
  # content, tools/shadergen), when there is one.
  local parent_cache
  parent_cache=$(dirname "$build")/vkd_shaders_cache
  if [ ! -d "$build/vkd_shaders_cache" ] && [ -d "$parent_cache" ]; then
    cp -r "$parent_cache" "$build/vkd_shaders_cache"
  fi
  quiet "$build/fuzz/configure.log" env CC="${CC:-clang}" CXX="${CXX:-clang++}" \
    cmake -S "$src" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DVKD_SANITIZE=address,undefined -DVKD_FUZZ=ON
  # vkd: the CLI under the sanitizers, for test/cli's cli_sanitized_* tests.
  quiet "$build/fuzz/build.log" cmake --build "$build" --target vkd_serialization_tests \
    make_seed_corpus vkd "${targets[@]}"
  echo "run_sanitized: built in $((SECONDS - start)) s"

  echo "run_sanitized: vkd_serialization_tests under ASan + UBSan"
  # Stack-use-after-return detection only here: it makes the fuzzers 4-5x slower.
  ASAN_OPTIONS=$ASAN_OPTIONS:detect_stack_use_after_return=1 \
    quiet "$build/fuzz/tests.log" "$build/test/vkd_serialization_tests"
  grep -E '^\[  PASSED  \]' "$build/fuzz/tests.log"

  rm -rf "$build/fuzz/seeds"
  quiet "$build/fuzz/seeds.log" "$build/test/make_seed_corpus" "$build/fuzz/seeds" \
    "$src/test/compiler/graphs" "$src/test/cli/graphs"
  local t
  for t in "${targets[@]}"; do
    echo "run_sanitized: $t: $(ls "$build/fuzz/seeds/$t" | wc -l) seeds"
  done
  echo "run_sanitized: fuzz_build done in $((SECONDS - start)) s"
}

check_target() {
  local t
  for t in "${targets[@]}"; do [ "$1" = "$t" ] && return 0; done
  echo "run_sanitized: unknown target '$1' (one of: ${targets[*]})" >&2
  exit 2
}

# Per-target libFuzzer flags. -timeout: one input running this long is a hang (generous: a
# loaded 2-core machine must not make a slow input a finding). -rss_limit_mb also caps single
# allocations. -max_len: room for the seeds to grow.
target_flags() {
  local dict=$build/fuzz/seeds/$1.dict
  case $1 in
    fuzz_deserialize) echo "-timeout=25 -rss_limit_mb=2048 -max_len=8192" ;;
    fuzz_graph_ir) echo "-timeout=25 -rss_limit_mb=2048 -max_len=16384 -dict=$dict" ;;
    # The Vulkan driver compiles kernels on first use (LLVM): slower inputs, more memory.
    # -mutate_depth: fewer chained mutations, so most new inputs still deserialize.
    fuzz_load_blob)
      echo "-timeout=60 -rss_limit_mb=4096 -max_len=32768 -mutate_depth=3 -dict=$dict" ;;
    # A plan with its blobs: the plan's text is what gets mutated; a loaded one runs on the
    # device as fuzz_load_blob's blobs do.
    fuzz_partition_plan) echo "-timeout=60 -rss_limit_mb=4096 -max_len=65536 -dict=$dict" ;;
  esac
}

binary_of() {
  local bin=$build/test/$1
  if [ ! -x "$bin" ]; then
    echo "run_sanitized: $bin missing; run '$0 build $build' first" >&2
    exit 1
  fi
  echo "$bin"
}

# do_fuzz TARGET RUNS MAX_TIME SEED(empty = random) CORPUS FRESH(0/1)
do_fuzz() {
  local target=$1 runs=$2 max_time=$3 seed=$4 corpus=$5 fresh=$6
  local bin work seeds log
  bin=$(binary_of "$target")
  work=$build/fuzz/$target
  seeds=$build/fuzz/seeds/$target
  log=$work/fuzz.log
  mkdir -p "$work"
  if [ ! -d "$seeds" ]; then
    echo "run_sanitized: no seeds in $seeds; run '$0 build $build'" >&2
    exit 1
  fi

  local regressions=("$src/test/fuzz/regressions/$target"/*)
  if [ -e "${regressions[0]}" ]; then
    echo "run_sanitized: $target: replaying ${#regressions[@]} regression input(s)"
    # Twice: as the harness loads each input (fuzz_load_blob: a hash of the input picks a
    # misaligned copy for some), and aligned (VKD_FUZZ_ALIGNED=1).
    local aligned
    for aligned in 0 1; do
      # shellcheck disable=SC2046
      if ! VKD_FUZZ_ALIGNED=$aligned "$bin" $(target_flags "$target") -runs=1 \
          "${regressions[@]}" >"$work/replay.log" 2>&1; then
        tail -n 150 "$work/replay.log"
        echo "run_sanitized: FAILED: $target: a regression input in" \
             "test/fuzz/regressions/$target/ is still a finding (log: $work/replay.log)" >&2
        exit 1
      fi
    done
  fi

  if [ "$fresh" = 1 ]; then rm -rf "$corpus"; fi
  mkdir -p "$corpus"
  local seed_flag=()
  [ -n "$seed" ] && seed_flag=(-seed="$seed")
  echo "run_sanitized: $target: up to $runs runs, at most $max_time s${seed:+, seed $seed}"
  local start=$SECONDS
  # New inputs go to the first directory. VKD_FUZZ_FLAGS: extra flags (long runs).
  # shellcheck disable=SC2046,SC2086
  if ! "$bin" $(target_flags "$target") ${VKD_FUZZ_FLAGS:-} -runs="$runs" \
      -max_total_time="$max_time" "${seed_flag[@]}" -print_final_stats=1 \
      -artifact_prefix="$work/" "$corpus" "$seeds" >"$log" 2>&1; then
    tail -n 150 "$log"
    echo "run_sanitized: FAILED: $target found a problem; log: $log; input:" \
         "$(ls -t "$work"/{crash,leak,timeout,oom,slow-unit}-* 2>/dev/null | head -n 1)" >&2
    echo "run_sanitized: replay with: $0 replay $build $target INPUT" >&2
    exit 1
  fi
  # The last coverage line (cov: edges, ft: features, corp: corpus), then the final figures.
  grep -E '^#[0-9]+.* cov: ' "$log" | tail -n 1 || true
  grep -E '^Done [0-9]+ runs|^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' \
    "$log" || true
  local done_runs
  done_runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -n 1)
  if [ "${done_runs:-0}" -lt "$runs" ]; then
    echo "run_sanitized: $target: stopped by the ${max_time} s cap after ${done_runs:-0} of" \
         "$runs runs (a bound, not a failure)"
  fi
  echo "run_sanitized: $target: ${done_runs:-0} runs in $((SECONDS - start)) s;" \
       "corpus $(ls "$corpus" | wc -l) inputs; clean"
}

case $mode in
  build)
    [ $# -eq 0 ] || usage
    do_build
    ;;
  run|long)
    [ $# -ge 1 ] && [ $# -le 2 ] || usage
    check_target "$1"
    if [ "$mode" = run ]; then
      do_fuzz "$1" "${2:-100000}" "${VKD_FUZZ_MAX_TIME:-60}" "${VKD_FUZZ_SEED:-1}" \
        "$build/fuzz/$1/run-corpus" 1
    else
      do_fuzz "$1" "${2:-1000000}" "${VKD_FUZZ_MAX_TIME:-86400}" "" \
        "$build/fuzz/$1/corpus" 0
    fi
    ;;
  replay)
    [ $# -ge 2 ] || usage
    check_target "$1"
    bin=$(binary_of "$1")
    target=$1
    shift
    # shellcheck disable=SC2046
    exec "$bin" $(target_flags "$target") -runs=1 "$@"
    ;;
  all)
    [ $# -le 1 ] || usage
    do_build
    for t in "${targets[@]}"; do do_fuzz "$t" "${1:-100000}" "${VKD_FUZZ_MAX_TIME:-60}" \
      "${VKD_FUZZ_SEED:-1}" "$build/fuzz/$t/run-corpus" 1; done
    ;;
  *) usage ;;
esac
