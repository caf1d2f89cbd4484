#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine and runs every test of numadir:
#   1. ctest for the `release` and `asan` (ASan + UBSan) presets;
#   2. the threading code's tests (listener, threadpool) under the `tsan` preset;
#   3. each libFuzzer target of the `fuzz` preset (clang, which also checks the thread-safety
#      annotations with -Wthread-safety) for NUMADIR_FUZZ_SECONDS (default 15) over its
#      committed seed corpus.
# Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh

jobs="$(nproc)"
fuzz_seconds="${NUMADIR_FUZZ_SECONDS:-15}"

for preset in release asan; do
  echo "== build and test: $preset"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$jobs"
  ctest --preset "$preset" -j "$jobs"
done

echo "== build and test: tsan (the threading code: listener_tests, threadpool_tests)"
cmake --preset tsan >/dev/null
cmake --build --preset tsan -j "$jobs" --target listener_tests threadpool_tests
ctest --preset tsan -j "$jobs" -R "^(listener_tests|threadpool_tests):"

echo "== build fuzz targets"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$jobs" --target fuzz_targets

fuzz_failed=0
for corpus in tests/fuzz/corpus/*/; do
  name="$(basename "$corpus")"
  target="build/fuzz/tests/fuzz/${name}_fuzz"
  work="$(mktemp -d)"
  echo "== fuzz: $name for ${fuzz_seconds}s (seed corpus: $corpus)"
  # New inputs go to a temporary directory; the committed corpus is only read.
  if ! "$target" -max_total_time="$fuzz_seconds" -print_final_stats=1 \
      -artifact_prefix="$work/" "$work" "$corpus" >"$work/log" 2>&1; then
    tail -n 60 "$work/log"
    echo "fuzz: $name FAILED (artifacts in $work)"
    fuzz_failed=1
    continue
  fi
  grep -E "stat::number_of_executed_units|Done [0-9]+ runs" "$work/log" | tail -n 2
  echo "fuzz: $name ok"
  rm -rf "$work"
done
exit "$fuzz_failed"
