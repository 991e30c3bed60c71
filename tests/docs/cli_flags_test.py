#!/usr/bin/env python3
"""tests/docs/cli_flags_test.py SOURCE_DIR BIN_DIR: docs/cli.md and the programs' --help agree.

For ringmasterctl and ringmaster-agent and each of their subcommands (found in their --help),
ringmaster (the app, on Qt's offscreen platform) and installer/install-agent.sh: every long option
the help prints is named in the command's section of docs/cli.md (a heading "ringmasterctl submit",
"ringmaster-agent authorize", ...), and every long option a section names is one the help prints
(for a subcommand, its own or its program's; for a program's own section, any of its commands').
A program that is not built is skipped, with a note; none built: exit 77."""
import os
import pathlib
import re
import subprocess
import sys

OPTION = re.compile(r"^\s+(?:-\w,\s?)?(--[A-Za-z0-9][A-Za-z0-9-]*)")
MENTION = re.compile(r"(?<![\w-])(--[A-Za-z0-9][A-Za-z0-9-]*)")
SUBCOMMAND = re.compile(r"^\s{2}([a-z][a-z0-9-]*)\s{2,}\S")


def run_help(argv, env=None):
    done = subprocess.run(argv + ["--help"], capture_output=True, text=True, timeout=30,
                          env=dict(os.environ, **(env or {})))
    if done.returncode != 0:
        raise RuntimeError("%s --help exited %d: %s" % (" ".join(argv), done.returncode,
                                                        done.stderr.strip()))
    return done.stdout


def parse_help(text):
    """(long options, subcommands) of a CLI11, Qt or usage-style help text."""
    options, subcommands, section = set(), [], None
    for line in text.splitlines():
        if re.match(r"^\S.*:\s*$", line):
            section = line.strip().rstrip(":").lower()
            continue
        match = OPTION.match(line)
        if match:
            options.add(match.group(1))
        elif section == "subcommands":
            sub = SUBCOMMAND.match(line)
            if sub:
                subcommands.append(sub.group(1))
    return options, subcommands


def commands(program, argv, env=None, prefix=()):
    """{command words: options} of a program and, recursively, its subcommands."""
    options, subs = parse_help(run_help(argv + list(prefix), env))
    found = {(program,) + tuple(prefix): (options, bool(subs))}
    for sub in subs:
        found.update(commands(program, argv, env, tuple(prefix) + (sub,)))
    return found


def doc_sections(path):
    """{heading words: text} of the page's level 2 and 3 headings."""
    sections, current, fence = {}, None, False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fence = not fence
        heading = None if fence else re.match(r"^#{2,3}\s+(.*)$", line)
        if heading:
            current = tuple(heading.group(1).replace("`", "").split())
            sections[current] = []
        elif current is not None:
            sections[current].append(line)
    return {words: "\n".join(lines) for words, lines in sections.items()}


def main():
    source = pathlib.Path(sys.argv[1]).resolve()
    bin_dir = pathlib.Path(sys.argv[2]).resolve()
    programs = [
        ("ringmasterctl", [str(bin_dir / "ringmasterctl")], None),
        ("ringmaster-agent", [str(bin_dir / "ringmaster-agent")], None),
        ("ringmaster", [str(bin_dir / "ringmaster")], {"QT_QPA_PLATFORM": "offscreen"}),
        ("installer/install-agent.sh", [str(source / "installer/install-agent.sh")], None),
    ]
    sections = doc_sections(source / "docs/cli.md")
    failures, checked = [], 0
    for name, argv, env in programs:
        if not os.access(argv[0], os.X_OK):
            print("note: %s is not built: not checked" % argv[0])
            continue
        found = commands(name, argv, env)
        every_option = set().union(*(options for options, _ in found.values()))
        top_options = found[(name,)][0]
        for words, (options, has_subcommands) in sorted(found.items()):
            title = " ".join(words)
            own = options - {"--help"}
            if words not in sections:
                if own or not has_subcommands:
                    failures.append("docs/cli.md has no section '%s'" % title)
                continue
            checked += 1
            named = set(MENTION.findall(sections[words]))
            for option in sorted(own - named):
                failures.append("%s: %s is in its --help but not in its section of docs/cli.md"
                                % (title, option))
            allowed = every_option if len(words) == 1 else options | top_options
            for option in sorted(named - allowed - {"--help"}):
                failures.append("%s: docs/cli.md names %s, which its --help does not print"
                                % (title, option))
            print("%s: %d options, %d named in docs/cli.md" % (title, len(own), len(named)))
    for failure in failures:
        print("FAILED: " + failure)
    if checked == 0:
        print("no program built: skipped")
        return 77
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
