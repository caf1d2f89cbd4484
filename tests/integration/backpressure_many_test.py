#!/usr/bin/python3
"""Output backpressure against 50 clients that do not read at once: the server's memory grows by
at most 50 times the output bound and the requests each had read, another client is served
throughout, and every stalled reader is closed after limits.write_timeout, with a log line. The
checks and their limits are backpressure_test.py's (its docstring says them); this half runs on
a server of its own so that CTest runs the two halves side by side.

  backpressure_many_test.py --numadir build/release/server/numadir --gen perf/gen_users.py
Exits 0 on success, 1 with the first failure.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import backpressure_test  # noqa: E402

if __name__ == "__main__":
    sys.exit(backpressure_test.main("backpressure many", ("50 stalled readers",)))
