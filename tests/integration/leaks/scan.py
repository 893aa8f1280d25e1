"""Looks for every corpus value in every file under the given roots.

usage: scan.py CORPUS BASE ROOT...

CORPUS holds "INDEX<TAB>MODE<TAB>LABEL<TAB>VALUE" lines. Every file under
each ROOT (recursively, binary files too) is searched for each VALUE, for the
standard base64 form of each MODE=reg value, and for well-known shapes (JWTs,
AWS key ids, X-Amz-Signature values). Prints one line per finding, never the
value itself:

  LEAK<TAB>INDEX<TAB>LABEL<TAB>LENGTH<TAB>FORM<TAB>PATH<TAB>COUNT
  SHAPE<TAB>NAME<TAB>PATH<TAB>COUNT

PATH is relative to BASE.
"""
import base64
import os
import re
import sys

SHAPES = {
    "jwt": re.compile(rb"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}"),
    "aws-key-id": re.compile(rb"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])"),
    "x-amz-signature": re.compile(rb"X-Amz-Signature=[0-9a-f]{64}"),
}


def main():
    corpus_path, base = sys.argv[1], sys.argv[2]
    needles = []
    with open(corpus_path, "rb") as f:
        for line in f:
            line = line.rstrip(b"\n")
            if not line:
                continue
            idx, mode, label, value = line.split(b"\t", 3)
            needles.append((idx, label, value, "raw", value))
            if mode == b"reg":
                needles.append((idx, label, value, "base64",
                                base64.b64encode(value).rstrip(b"=")))
    files = []
    for root in sys.argv[3:]:
        for d, _, names in os.walk(root):
            for n in names:
                p = os.path.join(d, n)
                if os.path.isfile(p) and not os.path.islink(p):
                    files.append(p)
    for p in sorted(files):
        try:
            with open(p, "rb") as f:
                data = f.read()
        except OSError:
            continue
        rel = os.path.relpath(p, base)
        for idx, label, value, form, needle in needles:
            c = data.count(needle)
            if c:
                print("LEAK\t%s\t%s\t%d\t%s\t%s\t%d" % (
                    idx.decode(), label.decode(), len(value), form, rel, c))
        for name, rx in SHAPES.items():
            c = len(rx.findall(data))
            if c:
                print("SHAPE\t%s\t%s\t%d" % (name, rel, c))
    print("SCANNED\t%d" % len(files))


main()
