#!/usr/bin/env bash
# One command for the side-by-side benchmark: installs what is missing, builds the release
# preset, then runs perf/bench.py (floor server, OpenLDAP slapd, numadir percpu and single
# driven by authrate) and writes its tables into perf/RESULTS.md and its plot into
# perf/bench.png. Options go to perf/bench.py (see perf/bench.py --help), e.g.
#   perf/bench.sh --users 100000 --connections 16,64,256 --repeat 3
#   perf/bench.sh --tls        # also over ldaps:// (persistent, and a handshake per auth)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target numadir authrate floor-server
exec /usr/bin/python3 perf/bench.py --build-dir build/release "$@"
