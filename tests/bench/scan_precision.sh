#!/bin/sh
# Precision and recall of the secret scanner (host/creds/scan.c), the one
# that refuses a job's commit when it holds something like a secret.
#
#   tests/bench/scan_precision.sh [--quick] [--scan-tree BIN] [DATA]
#
# Precision: navette's own tree (the HEAD commit, as runner.lua scans it,
# and every file of `git ls-files` as the working folder has it) must give
# no finding, and so must tests/bench/scan_quiet/, the precision corpus of
# look-alikes (part of that tree, also scanned alone); then public source trees of several languages, Debian source
# packages, are scanned and every finding is listed. They are kept in DATA
# (default $TMPDIR/navette-scan-data, never in the repository): a tree
# already there is reused, a missing one is fetched with
# `apt-get source --download-only` (deb-src lines needed) and its upstream
# tarballs unpacked. NAVETTE_SCAN_PACKAGES replaces the list
# ("Language:package ...").
#
# Recall: tests/bench/scan_corpus.py writes the leak corpus's credential
# kinds as literals in 16 languages and file kinds (seeded by
# NAVETTE_SCAN_SEED, default 10), and every planted file must be reported
# with the rule it calls for.
#
# --quick skips the Debian trees (ctest runs it so). Exit status: 1 when
# navette's own tree has a finding or recall is under 100%; findings in the
# public trees are for a human to judge (a test key committed upstream is a
# true finding), printed, not failed.
set -eu
. "$(dirname "$0")/../need_dir_lib.sh"

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SCAN=${NAVETTE_BUILD:-$ROOT/build}/tests/bench/scan_tree
QUICK=0
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
	--scan-tree) SCAN=$2; shift ;;
	-*) echo "usage: $0 [--quick] [--scan-tree BIN] [DATA]" >&2; exit 2 ;;
	*) break ;;
	esac
	shift
done
DATA=${1:-${TMPDIR:-/tmp}/navette-scan-data}
PACKAGES=${NAVETTE_SCAN_PACKAGES:-"C:zlib C:curl Lua:lua-lpeg \
Go:golang-github-spf13-cobra Go:golang-github-pkg-errors \
Go:golang-github-gin-gonic-gin Python:jinja2 Python:python-django \
Ruby:ruby-nokogiri Ruby:ruby-devise Rust:rust-hex JavaScript:node-yargs \
JavaScript:node-ms JavaScript:node-express Shell:bash-completion"}
case $SCAN in /*) ;; *) SCAN=$PWD/$SCAN ;; esac
[ -x "$SCAN" ] || {
	echo "scan_precision: no $SCAN (build the scan_tree target)" >&2
	exit 2
}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/nv-scan-bench.XXXXXX")
need_dir WORK
trap 'rm -rf "$WORK"' EXIT INT TERM
: >"$WORK/findings"
: >"$WORK/trees"

# scan LABEL LANGUAGE ARGS...: scan_tree's output, summed up per tree.
scan() {
	label=$1 lang=$2
	shift 2
	"$SCAN" "$@" >"$WORK/out" || return 1
	awk -F'\t' -v OFS='\t' -v label="$label" \
		'$1 == "finding" { $2 = label; print }' "$WORK/out" \
		>>"$WORK/findings"
	files=$(sed -n 's/^tree.*files=\([0-9]*\).*/\1/p' "$WORK/out" |
		awk '{s += $1} END {print s + 0}')
	count=$(grep -c '^finding' "$WORK/out" || true)
	printf '%s\t%s\t%s\t%s\n' "$label" "$lang" "$files" "$count" \
		>>"$WORK/trees"
}

# ---- navette's own tree -------------------------------------------------------
if HEAD=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null); then
	scan "navette@HEAD" "C/Lua/sh" --commit "$ROOT" "$HEAD"
	mkdir "$WORK/self"
	git -C "$ROOT" ls-files -z | python3 -c '
import os, shutil, sys
root, dest = sys.argv[1], sys.argv[2]
for rel in sys.stdin.buffer.read().split(b"\0"):
    src = os.path.join(root.encode(), rel)
    if not rel or os.path.islink(src) or not os.path.isfile(src):
        continue
    out = os.path.join(dest.encode(), rel)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    shutil.copyfile(src, out)
' "$ROOT" "$WORK/self"
	scan "navette(ls-files)" "C/Lua/sh" "$WORK/self"
else
	echo "scan_precision: $ROOT is not a git checkout, its own tree is skipped"
fi

# ---- the precision corpus -----------------------------------------------------
scan "navette(scan_quiet)" "C" "$ROOT/tests/bench/scan_quiet"

# ---- public trees -------------------------------------------------------------
unavailable=""
if [ "$QUICK" = 0 ]; then
	mkdir -p "$DATA/trees"
	for entry in $PACKAGES; do
		lang=${entry%%:*} pkg=${entry#*:}
		tree=$DATA/trees/$pkg
		if [ ! -d "$tree" ]; then
			(cd "$DATA" && apt-get source -q --download-only "$pkg" \
				>"$DATA/get-$pkg.log" 2>&1) || true
			for t in "$DATA/${pkg}_"*.orig.tar.* "$DATA/${pkg}_"*.orig-*.tar.*; do
				case $t in *.asc | *'*'*) continue ;; esac
				mkdir -p "$tree.part"
				tar -xf "$t" -C "$tree.part"
			done
			if [ -d "$tree.part" ]; then mv "$tree.part" "$tree"; fi
		fi
		if [ -d "$tree" ]; then
			scan "$pkg" "$lang" "$tree"
		else
			unavailable="$unavailable $pkg"
		fi
	done
fi

# ---- recall -------------------------------------------------------------------
python3 "$ROOT/tests/bench/scan_corpus.py" "$WORK/recall" \
	"${NAVETTE_SCAN_SEED:-10}"
(cd "$WORK/recall/tree" && "$SCAN" * >"$WORK/recall/out")

# ---- report -------------------------------------------------------------------
python3 - "$WORK/trees" "$WORK/findings" "$WORK/recall" "$unavailable" <<'EOF'
import collections, sys

trees_file, findings_file, recall, unavailable = sys.argv[1:5]
trees = [l.rstrip("\n").split("\t") for l in open(trees_file)]
print("%-30s %-12s %7s %9s" % ("tree", "language", "files", "findings"))
for label, lang, files, count in trees:
    print("%-30s %-12s %7s %9s" % (label, lang, files, count))
findings = [l.rstrip("\n") for l in open(findings_file)]
for f in findings:
    print("  " + f.replace("\t", "  "))
if unavailable.strip():
    print("not fetched:%s" % unavailable)

public = [t for t in trees if not t[0].startswith("navette")]
clean = [t for t in public if t[3] == "0"]
public_findings = sum(int(t[3]) for t in public)
self_findings = sum(int(t[3]) for t in trees if t[0].startswith("navette"))
langs = sorted({t[1] for t in clean})
print()
print("navette's own tree: %d finding(s)" % self_findings)
if public:
    print("public trees with no finding: %d of %d (%s)" % (
        len(clean), len(public), ", ".join(langs)))
    print("findings in public trees: %d in %d files scanned" % (
        public_findings, sum(int(t[2]) for t in public)))

expected = [l.rstrip("\n").split("\t") for l in open(recall + "/expected")]
found = collections.defaultdict(set)
for l in open(recall + "/out"):
    f = l.rstrip("\n").split("\t")
    if f[0] == "finding":
        found[f[1] + "/" + f[2].rsplit(":", 1)[0]].add(f[3])
scope = [e for e in expected if e[1] != "-"]
hit = [e for e in scope if e[1] in found[e[0]]]
below = [e for e in expected if e[1] == "-"]
for e in scope:
    if e not in hit:
        print("  missed: %s (%s), got %s" % (e[0], e[2],
                                            sorted(found[e[0]]) or "nothing"))
print("recall: %d of %d planted secrets found with their rule (%.1f%%)" % (
    len(hit), len(scope), 100.0 * len(hit) / max(len(scope), 1)))
print("below the 16-character floor, not counted: %d (%d reported)" % (
    len(below), sum(1 for e in below if found[e[0]])))
false_alarms = public_findings + self_findings
print("precision: %d of %d findings are planted secrets (%.1f%%); every "
      "finding in a real tree is counted as a false alarm, test keys "
      "committed upstream included" % (
          len(hit), len(hit) + false_alarms,
          100.0 * len(hit) / max(len(hit) + false_alarms, 1)))
sys.exit(1 if self_findings or len(hit) != len(scope) else 0)
EOF
