#!/usr/bin/env bash
# tests/mutate.sh [ID...]: applies each mutant of tests/mutations.md (or the
# ones named) in a scratch checkout of HEAD, one at a time: the planted
# bug, an incremental build, the test the row names. A mutant is `caught`
# when that test fails, `survived` when it passes, `stale` when its `find`
# text does not occur exactly once. Not run by CI: minutes per mutant.
# Prints one line per mutant and "N caught, N survived, N stale"; exits 1
# unless every mutant was caught.
#
# NAVETTE_MUTATE_DIR: the scratch folder (default: a new one under
# $TMPDIR), kept between runs when given so its build is incremental.
set -eu -o pipefail
. "$(dirname "$0")/need_dir_lib.sh"

ROOT=$(cd "$(dirname "$0")/.." && pwd -P)
TABLE=$ROOT/tests/mutations.md
[ -r "$TABLE" ] || { echo "mutate: no $TABLE" >&2; exit 2; }

WORK=${NAVETTE_MUTATE_DIR:-}
if [ -z "$WORK" ]; then
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/navette-mutate.XXXXXX")
	trap 'rm -rf -- "$WORK"' EXIT
fi
case $WORK in
/*) ;;
*) echo "mutate: NAVETTE_MUTATE_DIR must be an absolute path" >&2; exit 2 ;;
esac
[ "$WORK" != / ] || { echo "mutate: refusing / as the scratch folder" >&2; exit 2; }
need_dir WORK

SRC=$WORK/src
if [ ! -d "$SRC/.git" ]; then
	git clone -q "$ROOT" "$SRC"
fi
git -C "$SRC" fetch -q "$ROOT" HEAD
git -C "$SRC" checkout -q --force FETCH_HEAD
git -C "$SRC" clean -qfd
cmake -S "$SRC" -B "$SRC/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
make -C "$SRC/build" -j"$(nproc 2>/dev/null || echo 2)" >/dev/null

# The rows: id <US> file <US> find <US> replace <US> test (python3 reads
# the table; \n, \t and \| are decoded there).
rows() {
	python3 - "$TABLE" "$@" <<'PY'
import re, sys
table, wanted = sys.argv[1], set(sys.argv[2:])
def decode(s):
    return s.replace("\\|", "|").replace("\\n", "\n").replace("\\t", "\t")
for line in open(table, encoding="utf-8"):
    if not re.match(r"^\| [A-Z]+\d+ \|", line):
        continue
    cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
    cells = [c.strip() for c in cells]
    if len(cells) != 6:
        print("mutate: malformed row: " + line.strip(), file=sys.stderr)
        sys.exit(2)
    ident, _claim, path, find, repl, test = cells
    if wanted and ident not in wanted:
        continue
    unq = [decode(c[1:-1]) if c.startswith("`") and c.endswith("`") else c
           for c in (path, find, repl, test)]
    sys.stdout.write("\x1f".join([ident] + unq) + "\x1e")
PY
}

apply() { # FILE FIND REPLACE -> 0 when FIND occurred exactly once
	python3 - "$@" <<'PY'
import sys
path, find, repl = sys.argv[1:4]
text = open(path, encoding="utf-8").read()
if text.count(find) != 1:
    sys.exit(1)
open(path, "w", encoding="utf-8").write(text.replace(find, repl))
PY
}

caught=0 survived=0 stale=0
while IFS=$'\x1f' read -r -d $'\x1e' id file find repl test; do
	target=$SRC/$file
	if [ ! -f "$target" ] || ! apply "$target" "$find" "$repl"; then
		echo "$id stale: the text to mutate is not once in $file"
		stale=$((stale + 1))
		continue
	fi
	touch "$target"
	if ! make -C "$SRC/build" -j"$(nproc 2>/dev/null || echo 2)" >"$WORK/build.log" 2>&1; then
		echo "$id caught: the build fails ($file)"
		caught=$((caught + 1))
	elif (cd "$SRC/build" && ctest -R "^${test}\$" --timeout 600 >"$WORK/$id.log" 2>&1); then
		if grep -q "No tests were found" "$WORK/$id.log"; then
			echo "$id stale: no test named $test"
			stale=$((stale + 1))
		else
			echo "$id SURVIVED: $test passes with the bug in $file"
			survived=$((survived + 1))
		fi
	else
		echo "$id caught by $test"
		caught=$((caught + 1))
	fi
	git -C "$SRC" checkout -q -- "$file"
	touch "$target"
done < <(rows "$@")
make -C "$SRC/build" -j2 >/dev/null 2>&1 || true
echo "mutations: $caught caught, $survived survived, $stale stale"
[ "$survived" -eq 0 ] && [ "$stale" -eq 0 ]
