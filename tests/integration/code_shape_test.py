#!/usr/bin/python3
"""The code's shape, as facts a reviewer can check with grep (README, "Layout"):

1. server/ reaches the backend through Directory alone: no server/ file includes
   backend/writer.h, backend/update_job.h or a backend/detail/ header (the writer's is
   backend/detail/writer.h).
2. No include cycle between modules: a module is a .h and the .cc of the same name (a detail/
   header belongs with its folder's file of the same name); module A depends on module B when a
   file of A includes a header of B. No two modules may depend on each other, directly or
   through others.
3. No thread_local in the libraries (base, schema, backend, threadpool, listener, server): what
   a thread keeps lives in its worker's state, passed where it is used.
4. No function longer than 150 lines in the libraries and programs (perf/ included). A function
   is found by the repo's clang-format layout: it starts on a line at column 0 and its body ends
   on a line that is exactly "}".

What is left to do is listed in KNOWN (reported, not failed on; an entry that no longer matches
fails the test).

  code_shape_test.py [--room backend] [--source-dir DIR] (the other options are the harness's)
"""
import argparse
import os
import re
import sys

ROOMS = ["base", "schema", "backend", "threadpool", "listener", "server", "perf"]
# What is left to do, by file and what the line starts with: reported, not failed on. An entry
# that no longer matches anything fails the test, so that this list only shrinks.
KNOWN = [
]
LIBRARY_ROOMS = ROOMS[:-1]
MAX_FUNCTION_LINES = 150
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def source_files(root, rooms):
    """Returns: the .h and .cc files under each room, as paths relative to root, sorted."""
    found = []
    for room in rooms:
        for folder, _, names in os.walk(os.path.join(root, room)):
            for name in names:
                if name.endswith((".h", ".cc")):
                    found.append(os.path.relpath(os.path.join(folder, name), root))
    return sorted(found)


def module_of(path):
    stem = path.rsplit(".", 1)[0]
    return stem.replace("/detail/", "/")


def includes(root, path):
    with open(os.path.join(root, path), errors="replace") as stream:
        return [(number, match.group(1)) for number, line in enumerate(stream, 1)
                if (match := INCLUDE.match(line))]


def writer_includes(root, files):
    return [f"{path}:{number}: includes {header}: server/ reaches the backend through "
            "backend/directory.h"
            for path in files if path.startswith("server/")
            for number, header in includes(root, path)
            if header in ("backend/writer.h", "backend/update_job.h") or
            header.startswith("backend/detail/")]


def include_cycles(root, files):
    """Returns: one message per strongly connected set of two or more modules."""
    modules = {module_of(path) for path in files}
    edges = {}
    why = {}
    for path in files:
        source = module_of(path)
        for number, header in includes(root, path):
            target = module_of(header)
            if target != source and target in modules:
                edges.setdefault(source, set()).add(target)
                why.setdefault((source, target), f"{path}:{number} includes {header}")
    # Tarjan's strongly connected components, iteratively.
    index, low, on_stack, stack, components = {}, {}, set(), [], []
    for start in sorted(modules):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    messages = []
    for component in components:
        members = set(component)
        arrows = [why[(a, b)] for a in component for b in sorted(edges.get(a, ())) if b in members]
        messages.append(f"an include cycle among {', '.join(component)}:\n    " +
                        "\n    ".join(arrows))
    return messages


def thread_locals(root, files):
    found = []
    for path in files:
        if path.split("/", 1)[0] not in LIBRARY_ROOMS:
            continue
        with open(os.path.join(root, path), errors="replace") as stream:
            for number, line in enumerate(stream, 1):
                code = line.split("//", 1)[0]
                if re.search(r"\bthread_local\b", code):
                    found.append(f"{path}:{number}: thread_local: keep it in the worker's state")
    return found


def long_functions(root, files):
    found = []
    for path in files:
        start = None
        with open(os.path.join(root, path), errors="replace") as stream:
            for number, line in enumerate(stream, 1):
                line = line.rstrip("\n")
                if line == "}" and start is not None:
                    length = number - start[0] + 1
                    if length > MAX_FUNCTION_LINES:
                        found.append(f"{path}:{start[0]}: {length} lines (at most "
                                     f"{MAX_FUNCTION_LINES}): {start[1].strip()}")
                    start = None
                elif line.startswith("}"):
                    start = None  # The end of a class, a namespace or an initializer.
                elif (not line or line[0] in " \t#/" or
                      line.startswith(("namespace", "extern"))):
                    continue
                elif start is None:
                    if not line.rstrip().endswith((";", "}")):  # Not a one-line definition.
                        start = (number, line)
                elif line.rstrip().endswith(";") and "{" not in line:
                    start = None  # A declaration over several lines.
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--room", choices=ROOMS, action="append",
                        help="check only this room's files (may repeat)")
    parser.add_argument("--source-dir", default=os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "..", ".."))
    parser.add_argument("--numadir")
    parser.add_argument("--gen")
    parser.add_argument("--bin-dir")
    parser.add_argument("--keep-going", action="store_true")
    args = parser.parse_args()
    root = os.path.realpath(args.source_dir)
    files = source_files(root, args.room or ROOMS)
    if len(files) < 50 and not args.room:
        print(f"code shape: only {len(files)} source files under {root}: wrong --source-dir?")
        return 1
    checks = [
        ("server/ reaches the backend through Directory alone", writer_includes),
        ("no include cycle between modules", include_cycles),
        ("no thread_local in the libraries", thread_locals),
        (f"no function over {MAX_FUNCTION_LINES} lines", long_functions),
    ]
    failed = 0
    used = set()
    for name, check in checks:
        problems = []
        for problem in check(root, files):
            known = next((entry for entry in KNOWN if problem.startswith(entry[0] + ":") and
                          (entry[1] in problem)), None)
            if known is None:
                problems.append(problem)
            else:
                used.add(known)
                print(f"  known, left to do: {problem}")
        if problems:
            failed += 1
            print(f"FAIL code shape: {name}:")
            for problem in problems:
                print(f"  {problem}")
        else:
            print(f"  ok: {name} ({len(files)} files)")
    if not args.room:
        for entry in KNOWN:
            if entry not in used:
                failed += 1
                print(f"FAIL code shape: {entry[0]}: {entry[1]!r} is listed in KNOWN but no longer "
                      "found: take it off the list")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
