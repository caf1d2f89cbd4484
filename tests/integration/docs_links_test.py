#!/usr/bin/python3
"""Every relative link of README.md and docs/*.md names a file that exists, and a link with an
#anchor names a heading of the file it points to (GitHub's anchors: the heading in lower case,
punctuation dropped, spaces made hyphens, a repeated heading given -1, -2, ...).

Links are `[text](target)` and `![alt](target)` outside fenced blocks and inline code;
http(s):// and mailto: targets are not followed. The checker first runs on a small document
with one good and three broken links (a missing file, a missing anchor in this file and one in
another), which it must report, so that a checker that finds nothing cannot pass.

Standard library only; the options the integration tests share (--numadir, ...) are accepted
and not used.
"""
import glob
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numadir_harness import check, check_equal, fail, parse_args, run_checks  # noqa: E402

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def prose_lines(text: str):
    """(line number, line) of `text` outside fenced code blocks, inline code blanked out."""
    fence = None
    for number, line in enumerate(text.split("\n"), start=1):
        marker = re.match(r"^\s*(```+|~~~+)", line)
        if marker:
            if fence is None:
                fence = marker.group(1)[0] * 3
            elif line.strip().startswith(fence):
                fence = None
            continue
        if fence is None:
            yield number, re.sub(r"`[^`]*`", lambda m: " " * len(m.group(0)), line)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # A link's text only.
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(path: str) -> set:
    with open(path, encoding="utf-8") as stream:
        text = stream.read()
    seen = {}
    result = set()
    fence = None
    for line in text.split("\n"):
        marker = re.match(r"^\s*(```+|~~~+)", line)
        if marker:
            fence = marker.group(1)[0] * 3 if fence is None else (
                None if line.strip().startswith(fence) else fence)
            continue
        match = HEADING.match(line) if fence is None else None
        if match is None:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else f"{base}-{count}")
    return result


def broken_links(path: str) -> list:
    """Every broken relative link of the Markdown file `path`, as "FILE:LINE: target: why"."""
    with open(path, encoding="utf-8") as stream:
        text = stream.read()
    problems = []
    for number, line in prose_lines(text):
        for match in LINK.finditer(line):
            target = match.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            resolved = (os.path.normpath(os.path.join(os.path.dirname(path), file_part))
                        if file_part else path)
            where = f"{os.path.relpath(path, REPO)}:{number}: {target}"
            if not os.path.exists(resolved):
                problems.append(f"{where}: no file {os.path.relpath(resolved, REPO)}")
            elif anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
                problems.append(f"{where}: no heading with the anchor #{anchor}")
    return problems


def check_the_checker():
    with tempfile.TemporaryDirectory() as work:
        other = os.path.join(work, "other.md")
        with open(other, "w") as stream:
            stream.write("# Other page\n\n## A `code` heading (with, punctuation)\n")
        page = os.path.join(work, "page.md")
        with open(page, "w") as stream:
            stream.write("# Page\n\n## Two words\n\n"
                         "[good](other.md#a-code-heading-with-punctuation) [good](#two-words)\n"
                         "[no file](missing.md) [no anchor](#three-words)\n"
                         "```\n[in a fence](ignored.md)\n```\n"
                         "`[inline code](ignored.md)` ![image](other.md#nothing-here)\n")
        problems = broken_links(page)
        check_equal(len(problems), 3, "the checker finds the three broken links of a test page")
        check(any("missing.md" in p for p in problems) and
              any("#three-words" in p for p in problems) and
              any("#nothing-here" in p for p in problems),
              "each broken link is named", "\n".join(problems))


def check_docs():
    files = [os.path.join(REPO, "README.md")] + sorted(glob.glob(os.path.join(REPO, "docs",
                                                                              "*.md")))
    check(len(files) > 1, "README.md and docs/*.md exist", ", ".join(files))
    problems = []
    links = 0
    for path in files:
        with open(path, encoding="utf-8") as stream:
            links += sum(len(LINK.findall(line)) for _, line in prose_lines(stream.read()))
        problems += broken_links(path)
    if problems:
        fail("broken links:\n" + "\n".join(problems))
    check(links > 0, f"all {links} links of {len(files)} files point to files and headings that "
          "exist")


def main() -> int:
    parse_args(__doc__)
    return run_checks("docs links", [
        ("the checker reports broken links", check_the_checker),
        ("README.md and docs/*.md", check_docs),
    ])


if __name__ == "__main__":
    sys.exit(main())
