#!/usr/bin/env python3
"""tests/docs/links_test.py SOURCE_DIR: every relative link and image of README.md and docs/*.md
points at a file that exists, and every #anchor at a heading of its page (GitHub's slugs). Links
inside code (fenced blocks, `spans`) are not links; http(s) and mailto links are not checked."""
import pathlib
import re
import sys
import unicodedata

LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
IMG_TAG = re.compile(r"<img\s[^>]*src=\"([^\"]+)\"", re.I)
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def prose_lines(text):
    """The lines outside fenced code blocks, with their numbers."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        marker = re.match(r"(`{3,}|~{3,})", stripped)
        if marker:
            if fence is None:
                fence = marker.group(1)[0] * len(marker.group(1))
                continue
            if stripped.startswith(fence):
                fence = None
                continue
        if fence is None:
            yield number, line


def without_code_spans(line):
    return re.sub(r"(`+)(.+?)\1", "", line)


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text stays
    text = text.replace("`", "").strip().lower()
    kept = []
    for ch in text:
        if ch in " -_" or ch.isalnum() or unicodedata.category(ch).startswith("M"):
            kept.append("-" if ch == " " else ch)
    return "".join(kept)


def anchors(path, cache={}):
    if path not in cache:
        seen, result = {}, set()
        for _, line in prose_lines(path.read_text(encoding="utf-8")):
            match = HEADING.match(line)
            if not match:
                continue
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            result.add(base if count == 0 else "%s-%d" % (base, count))
        cache[path] = result
    return cache[path]


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    pages = [root / "README.md"] + sorted((root / "docs").glob("*.md"))
    failures, checked = [], 0
    for page in pages:
        for number, line in prose_lines(page.read_text(encoding="utf-8")):
            prose = without_code_spans(line)
            for target in LINK.findall(prose) + IMG_TAG.findall(prose):
                if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):
                    continue  # https:, mailto:
                checked += 1
                where = "%s:%d" % (page.relative_to(root), number)
                path_part, _, anchor = target.partition("#")
                file = (page.parent / path_part).resolve() if path_part else page
                if not file.exists():
                    failures.append("%s: %s: no such file" % (where, target))
                    continue
                if anchor and file.suffix == ".md" and anchor not in anchors(file):
                    failures.append("%s: %s: %s has no heading with the anchor #%s"
                                    % (where, target, file.relative_to(root), anchor))
    for failure in failures:
        print("FAILED: " + failure)
    print("%d links and images in %d pages, %d broken" % (checked, len(pages), len(failures)))
    return 1 if failures or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
