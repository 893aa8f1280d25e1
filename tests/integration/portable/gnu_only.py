"""Finds uses of GNU-only (or Linux-only, or bash 4) tools in the scripts the
test command runs, so that the tests can pass on macOS (BSD userland,
/bin/bash 3.2) as well as on Linux.

usage: gnu_only.py ROOT [FILE...]

Without FILEs, scans what the test command runs under ROOT: every *.sh and
every shell script (a #! line naming sh or bash) under tests/, the C unit
tests (their shell commands), vendor/bootstrap and .ci/run. Prints one line
per finding, "PATH:LINE: [NAME] what to use instead", and exits 1 when there
is any.

Whole-line comments are not scanned. A use is allowed:
  - on a line that falls back when the tool is missing (`tool ... 2>/dev/null
    || other`), as vendor/bootstrap does for nproc;
  - on a line holding the marker "portable-ok: REASON";
  - in a file of ALLOWED below, with its reason.
"""
import os
import re
import sys

# Files that run only on Linux, and why.
ALLOWED = {
    "tests/stack/s3-start.sh": "starts ceph (mon, osd, radosgw): Linux only",
    "tests/stack/s3-stop.sh": "stops the ceph stack: Linux only",
    "tests/stack/slurm-start.sh": "starts slurmctld/slurmd: Linux only",
    "tests/stack/slurm-stop.sh": "stops the Slurm stack: Linux only",
    "tests/stack/slurm-node.sh": "starts a slurmd: Linux only",
    "tests/stack/slurm-lib.sh": "helpers of the Slurm stack: Linux only",
    "tests/stack/registry-start.sh":
        "starts docker-registry, a Debian package: Linux only",
    "tests/stack/registry-stop.sh": "stops docker-registry: Linux only",
    "tests/stack/sshd-start.sh":
        "starts sshd as a user of its own (useradd, runuser): Linux only",
    "tests/stack/sshd-stop.sh": "stops the login node's sshd: Linux only",
    "tests/bench/s3_bench.sh": "benchmarks against the ceph stack",
    "tests/bench/slurm_bench.sh": "benchmarks against the Slurm stack",
    "tests/bench/sweep_bench.sh":
        "benchmarks against the Slurm stack (and its sbatch)",
    "tests/bench/image_bench.sh": "benchmarks skopeo and GNU sha256sum",
    "tests/integration/core/test_portable_scripts.sh":
        "holds GNU-only lines on purpose, as this scanner's fixtures",
}

# name, pattern, what to use instead
RULES = [
    ("sha256sum", r"(?<![\w.-])(sha1sum|sha256sum|sha512sum|md5sum)\b",
     "shasum -a 256 (perl's, on both), perl -MDigest::MD5"),
    ("sed -i", r"(?<![\w.-])sed\s+(-[a-zA-Z]+\s+)*-[a-zA-Z]*i",
     "sed into a temp file, then mv (BSD sed -i needs an argument)"),
    ("head/tail -N", r"(?<![\w.-])(head|tail)\s+(-[a-z]+\s+)*-[cn]\s*-\d",
     "head -c $((size - N)) with wc -c, or python3/perl"),
    ("setsid", r"(?<![\w.$-])setsid(?!\s*\()\b",
     "exec_in_new_session (lib.sh: python3 os.setsid)"),
    ("flock(1)", r"(?<![\w.$:-])flock\s+-",
     "lock_is_free (lib.sh: perl flock)"),
    ("base64 -w", r"(?<![\w.-])base64\s+(-[a-z]+\s+)*(-w|--wrap)",
     "base64 | tr -d '\\n' | fold -w N"),
    ("stat -c", r"(?<![\w.-])stat\s+(-[a-zA-Z]+\s+)*(-c|--format|--printf)\b",
     "wc -c < FILE for a size, python3 os.stat for the rest"),
    ("date -d", r"(?<![\w.-])date\s+(-[a-zA-Z]+\s+)*(-d\b|--date)",
     "python3 datetime"),
    ("date %N", r"(?<![\w.-])date\b[^|;]*%N",
     "python3 time.time() (BSD date prints N)"),
    ("readlink -f", r"(?<![\w.-])readlink\s+(-[a-zA-Z]+\s+)*-[a-zA-Z]*[fem]",
     "(cd DIR && pwd -P)"),
    ("realpath -m", r"(?<![\w.-])realpath\s+(-[a-zA-Z]+\s+)*(-[me]\b|--)",
     "(cd DIR && pwd -P)"),
    ("timeout", r"(?<![\w.$=\"'-])timeout\s+(-[a-zA-Z]+\s+)*\d",
     "a bounded loop (wait_for in lib.sh); macOS has no timeout"),
    ("grep -P", r"(?<![\w.-])grep\s+(-[a-zA-Z]+\s+)*(-[a-zA-Z]*P|--perl)",
     "grep -E"),
    ("xargs -r", r"(?<![\w.-])xargs\s+(-[a-zA-Z0-9]+\s+)*(-[a-zA-Z]*r\b|"
     r"--no-run-if-empty)", "a loop, or a guard on empty input"),
    ("find -printf", r"(?<![\w.-])find\b.*\s-printf\b",
     "find ... -exec, or python3 os.walk"),
    ("mktemp --opt", r"(?<![\w.-])mktemp\s+.*(--[a-z]|\s-p\b)",
     "mktemp -d \"${TMPDIR:-/tmp}/name.XXXXXX\""),
    ("cp --opt", r"(?<![\w.-])cp\s+(-[a-zA-Z]+\s+)*--(reflink|parents|"
     r"no-target|target)", "plain cp, mkdir -p first"),
    ("tar GNU option", r"(?<![\w.-])tar\b.*--(full-time|transform|xform|"
     r"sort=|mtime|owner|group|wildcards|show-transformed|checkpoint)",
     "python3 tarfile"),
    ("tac", r"(?:^|[|;&(]\s*)tac\b", "awk (tail -r is BSD's only)"),
    ("shuf", r"(?<![\w.-])shuf\b", "python3 random, or awk"),
    ("truncate", r"(?:^|[|;&(]\s*)truncate\s", "python3 os.truncate"),
    ("nproc", r"(?<![\w.-])nproc\b(?!=)",
     "getconf _NPROCESSORS_ONLN"),
    ("install -D", r"(?<![\w.-])install\s+(-[a-zA-Z]+\s+)*-[a-zA-Z]*D",
     "mkdir -p, then install or cp"),
    ("ln -r", r"(?<![\w.-])ln\s+(-[a-zA-Z]+\s+)*(-[a-zA-Z]*r|--relative)",
     "a relative target written out"),
    ("tr on raw bytes", r"^(?=.*/dev/urandom)(?!.*LC_ALL=C)(?!.*base64)"
     r".*(?<![\w.-])tr\s+-",
     "LC_ALL=C tr (macOS tr stops at bytes that are not UTF-8: "
     "\"Illegal byte sequence\")"),
    ("bash 4", r"(?<![\w.-])(mapfile|readarray|coproc)\b|"
     r"(declare|local|typeset)\s+-[a-zA-Z]*[An]\b|wait\s+-n\b|"
     r"\$\{[a-zA-Z_][a-zA-Z_0-9]*(,,|\^\^)|EPOCHREALTIME",
     "bash 3.2 forms (macOS /bin/bash is 3.2)"),
]
COMPILED = [(n, re.compile(p), h) for n, p, h in RULES]
FALLBACK = re.compile(r"2>\s*/dev/null\s*\|\|")
MARKER = "portable-ok:"


def is_comment(line, c_file):
    s = line.lstrip()
    if c_file:
        return s.startswith(("/*", "*", "//"))
    return s.startswith("#")


def scan_file(path, shown):
    findings = []
    c_file = path.endswith((".c", ".h"))
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
    except OSError as e:
        return ["%s:0: [unreadable] %s" % (shown, e)]
    for no, line in enumerate(lines, 1):
        if is_comment(line, c_file) or MARKER in line:
            continue
        for name, rx, hint in COMPILED:
            m = rx.search(line)
            if not m:
                continue
            if FALLBACK.search(line[m.end():]):
                continue
            findings.append("%s:%d: [%s] use %s instead: %s" %
                            (shown, no, name, hint, line.strip()[:120]))
    return findings


def is_shell_script(path):
    if path.endswith(".sh"):
        return True
    try:
        with open(path, "rb") as f:
            first = f.readline(200)
    except OSError:
        return False
    return first.startswith(b"#!") and re.search(rb"\b(ba)?sh\b", first)


def tree_files(root):
    out = []
    for top in ("tests",):
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(x for x in dirs if x not in ("corpus",))
            rel_dir = os.path.relpath(d, root)
            for name in sorted(files):
                rel = os.path.join(rel_dir, name)
                full = os.path.join(root, rel)
                if (rel.startswith("tests/unit/") and name.endswith(".c")) \
                        or is_shell_script(full):
                    out.append(rel)
    for rel in ("vendor/bootstrap", ".ci/run"):
        if os.path.exists(os.path.join(root, rel)):
            out.append(rel)
    return out


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = sys.argv[1]
    named = sys.argv[2:]
    files = named or tree_files(root)
    findings = []
    for rel in files:
        if not named and rel in ALLOWED:
            continue
        findings += scan_file(os.path.join(root, rel), rel)
    for f in findings:
        print(f)
    if not named:
        print("scanned %d files (%d allowed as Linux-only)" %
              (len(files), sum(1 for r in files if r in ALLOWED)),
              file=sys.stderr)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
