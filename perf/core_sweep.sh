#!/usr/bin/env bash
# For a user's own many-core machine: how numadir percpu, numadir single and OpenLDAP slapd scale
# from 1 CPU to all of them (taskset, node by node), in under 5 minutes. Installs what is missing,
# builds the release preset, then runs perf/core_sweep.py, which writes its table into
# perf/RESULTS.md (between the core-sweep markers) and its plot into perf/core_sweep.png.
# Options go to perf/core_sweep.py (see perf/core_sweep.py --help), e.g.
#   perf/core_sweep.sh                       # 1, 2, 4, ... all CPUs
#   perf/core_sweep.sh --levels 1,8,16 --repeat 3
# Run it on a quiet machine: another load moves the ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target numadir authrate
exec /usr/bin/python3 perf/core_sweep.py --build-dir build/release "$@"
