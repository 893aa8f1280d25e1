#!/usr/bin/env python3
"""Holds every test script to two rules (issue 27), and prints each breach
as FILE:LINE: what, exiting 1 when there is one.

The scripts: tests/**/*.sh, tests/mutate.sh and .ci/run, and any other
file under tests/ that starts with a shell's #! line. A file named lib.sh,
*_lib.sh or *-lib.sh is a library that scripts source (lib.sh,
image_lib.sh, slurm-lib.sh): it runs under its caller's settings and is
not held to the rules; its writes are its callers' (rule 2 is theirs).
The stand-ins for tools under tests/data/launcher and tests/data/creds
(curl, container runtimes, macOS's security, a credential command) are
not test scripts: the code under test runs them and they write where it
tells them, as the tool would; they are not read.

Rule 1. Its first command (after the #! line, comments and blank lines)
  is `set -eu -o pipefail` (or `set -euo pipefail`): an unset variable, a
  failing command or a failing pipe stage stops it before it does harm.
  A #!/bin/sh script says `set -eu` (dash, Debian's sh, has no pipefail).

Rule 2. A script that writes files calls the guard before its first write:
  it sources tests/integration/lib.sh (which makes the test's temporary
  folder $T, refuses to go on without one, and offers need_dir) or calls
  need_dir itself: the guard that refuses (exit 2) a folder variable that
  is empty, unset, relative, /, or outside the test's temporary folder
  and any build folder. A script that does not source lib.sh sources
  tests/need_dir_lib.sh, the one copy of need_dir. A write is the target of > or >>, or a
  command among mkdir, cp, mv, rm, ln, touch, tee, install and chmod. What
  the rule cannot see: whether each variable a script writes under after
  the guard is one need_dir checked (a function's argument, a repository
  made by new_repo); scripts pass the folders that come from outside
  ($1, the environment) to need_dir.

A write is found outside quotes, comments and here-documents; the check
reads the text in order (a guard in a function defined later does not
count). A line may end with `# guard-ok: WHY` when a write is safe for a
reason the rule cannot see (WHY is required).
"""
import os
import re
import sys

STAND_INS = {os.path.join("tests", "data", "launcher"),
             os.path.join("tests", "data", "creds")}
WRITERS = {"mkdir", "cp", "mv", "rm", "ln", "touch", "tee", "install", "chmod"}
SET_FULL = re.compile(r"^set +(-eu +-o +pipefail|-euo +pipefail)\s*(#.*)?$")
SET_SH = re.compile(r"^set +-eu\b")
GUARD_OK = re.compile(r"#\s*guard-ok:\s*\S")
SOURCES_LIB = re.compile(r"^\.\s+.*integration/lib\.sh\"?\s*$|^\.\s+\"\$\(dirname \"\$0\"\)/(\.\./)?lib\.sh\"$")


def logical_lines(text):
    """Yields (line number, code) with quoted text blanked ('' kept as
    markers), comments and here-document bodies dropped."""
    lines = text.split("\n")
    heredoc = []
    quote = None  # the open quote across lines
    out = []
    for n, raw in enumerate(lines, 1):
        if heredoc:
            if raw.strip() == heredoc[0] or raw.lstrip("\t") == heredoc[0]:
                heredoc.pop(0)
            continue
        code = []
        i = 0
        while i < len(raw):
            c = raw[i]
            if quote:
                if quote == "'" and c == "'":
                    quote = None
                    code.append("'")
                elif quote == '"' and c == "\\":
                    i += 1
                elif quote == '"' and c == '"':
                    quote = None
                    code.append('"')
                else:
                    code.append("_")
            elif c == "\\":
                code.append(raw[i:i + 2])
                i += 1
            elif c in "'\"":
                quote = c
                code.append(c)
            elif c == "#" and (i == 0 or raw[i - 1] in " \t;(|&"):
                break
            else:
                code.append(c)
            i += 1
        line = "".join(code)
        for m in re.finditer(r"<<-?\s*['\"]?([A-Za-z_][A-Za-z0-9_]*)", raw):
            # (a here-doc marker outside quotes: look in the blanked line)
            if "<<" in line:
                heredoc.append(m.group(1))
        out.append((n, raw, line))
    return out


def write_targets(raw, line):
    """The words a line writes to: redirection targets and the arguments
    of the writing commands (from the raw text, at the places the blanked
    line says are code)."""
    targets = []
    for m in re.finditer(r"(?<![<&0-9])>>?\|?\s*", line):
        if m.start() > 0 and line[m.start() - 1] in "=-":
            continue
        word = raw[m.end():].split()[0] if raw[m.end():].split() else ""
        if word.startswith(("&", "/dev/")) or word in ("", ")"):
            continue
        targets.append(word)
    for m in re.finditer(r"(?:^|[;&|(]|\bthen|\bdo|\belse)\s*([a-z]+)\b", line):
        if m.group(1) in WRITERS:
            rest = raw[m.end():]
            words = [w for w in rest.split() if not w.startswith("-")]
            stop = [i for i, w in enumerate(words) if w in (";", "&&", "||", "|")]
            words = words[:stop[0]] if stop else words
            targets.extend(words or ["(" + m.group(1) + ")"])
    return targets


def check(path, rel):
    try:
        text = open(path, encoding="utf-8", errors="replace").read()
    except OSError as e:
        return ["%s:0: cannot read: %s" % (rel, e)]
    first = text.split("\n", 1)[0]
    if re.search(r"(^|[_-])lib\.sh$", os.path.basename(path)):
        return []  # a library: sourced, not run
    posix_sh = re.search(r"\b(sh|dash)\s*$", first) is not None
    found = []
    lines = logical_lines(text)
    guard_seen = False
    first_command = True
    for n, raw, line in lines[1 if first.startswith("#!") else 0:]:
        code = line.strip()
        if not code:
            continue
        if first_command:
            first_command = False
            ok = SET_FULL.match(code) or (posix_sh and SET_SH.match(code))
            if not ok:
                found.append("%s:%d: the first command is not `set -eu -o pipefail`%s"
                             % (rel, n, " (or `set -eu` under #!/bin/sh)" if posix_sh else ""))
        stripped = raw.strip()
        if SOURCES_LIB.match(stripped):
            guard_seen = True
            continue
        m = re.match(r"^need_dir\s+(.*)$", stripped)
        if m:
            guard_seen = True
            continue
        if GUARD_OK.search(raw):
            continue
        targets = write_targets(raw, line)
        if targets and not guard_seen:
            found.append("%s:%d: writes (%s) before calling the guard (source lib.sh, or need_dir)"
                         % (rel, n, targets[0]))
            guard_seen = True  # (one finding a script)
    return found


def scripts(root):
    for base in ("tests",):
        for d, dirs, files in os.walk(os.path.join(root, base)):
            dirs[:] = sorted(x for x in dirs if x not in ("corpus",)
                             and os.path.relpath(os.path.join(d, x), root)
                             not in STAND_INS)
            for f in sorted(files):
                p = os.path.join(d, f)
                if f.endswith(".sh"):
                    yield p
                elif not os.path.splitext(f)[1]:
                    try:
                        head = open(p, "rb").read(64)
                    except OSError:
                        continue
                    if re.match(rb"#!\s*\S*(/(ba)?sh|env (ba)?sh)\b", head):
                        yield p
    ci = os.path.join(root, ".ci", "run")
    if os.path.exists(ci):
        yield ci


def main(argv):
    root = argv[1]
    files = argv[2:] or list(scripts(root))
    found = []
    for p in files:
        full = p if os.path.isabs(p) else os.path.join(root, p)
        found.extend(check(full, os.path.relpath(full, root)))
    for f in found:
        print(f)
    sys.stderr.write("%d scripts read, %d breaches\n" % (len(files), len(found)))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
