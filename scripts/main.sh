#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine and runs numadir's main job.
#
# Today the main job is the codec benchmark (perf/codec_bench): ns per decode and per encode of
# each LDAP message of one auth. When the server and the authrate load generator exist, this
# script starts `numadir serve` on a generated directory and drives it with authrate.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target codec_bench
exec build/release/perf/codec_bench --benchmark_min_time=0.5 "$@"
