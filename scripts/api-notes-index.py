#!/usr/bin/env python3
"""docs/api-notes.md's index: each section and each decision it holds (a
bullet's bold lead, given an anchor of its own), linked, so that a reader
finds a decision by its words.

    scripts/api-notes-index.py          rewrite the index
    scripts/api-notes-index.py --check  exit 1 when the index is stale

Run it after adding a section or a decision; `make test` runs --check
(tests/api/api_notes.rs).
"""
import pathlib
import re
import sys

NOTES = pathlib.Path(__file__).resolve().parent.parent / "docs" / "api-notes.md"
START = "<!-- index: made by scripts/api-notes-index.py; a test checks it -->"
END = "<!-- end of index -->"


def slug(heading):
    """GitHub's anchor of a heading."""
    heading = re.sub(r"[^\w\- ]", "", heading.lower())
    return heading.replace(" ", "-")


ANCHOR = re.compile(r'^- <a id="[^"]*"></a>')


def indexed(text):
    """The text with its decisions' anchors and its index made afresh."""
    if START in text:
        before, rest = text.split(START, 1)
        text = before.rstrip("\n") + "\n\n" + rest.split(END, 1)[1].lstrip("\n")
    sections = []
    lines = []
    taken = set()
    for line in text.splitlines():
        line = ANCHOR.sub("- ", line)
        heading = re.match(r"^## (.*)", line)
        if heading:
            sections.append((heading.group(1), []))
        lead = re.match(r"^- \*\*(.+?)\*\*", line)
        if lead and sections:
            name = lead.group(1).rstrip(":.").strip()
            anchor = f"{slug(sections[-1][0])}--{slug(name)}"
            while anchor in taken:
                anchor += "-"
            taken.add(anchor)
            sections[-1][1].append((name, anchor))
            line = f'- <a id="{anchor}"></a>' + line[2:]
        lines.append(line)
    text = "\n".join(lines) + "\n"
    index = [
        START,
        "",
        "## Index",
        "",
        "Each section, and each decision it holds: find a word here, then follow its link.",
        "",
    ]
    for heading, leads in sections:
        entry = f"- [{heading}](#{slug(heading)})"
        decisions = "; ".join(f"[{name}](#{anchor})" for name, anchor in leads)
        index.append(entry + (": " + decisions if decisions else ""))
    index += ["", END]
    first = text.index("\n## ")
    return text[:first].rstrip("\n") + "\n\n" + "\n".join(index) + "\n" + text[first:]


def main():
    text = NOTES.read_text()
    fresh = indexed(text)
    if "--check" in sys.argv[1:]:
        if fresh != text:
            print("docs/api-notes.md's index is stale: run scripts/api-notes-index.py", file=sys.stderr)
            return 1
        return 0
    NOTES.write_text(fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
