#!/usr/bin/env bash
# The README's "Recipe catalogue" library steps, as written: the Lua
# block of that section becomes train.lua of a fresh repository whose
# navette.lua only names the project (no datasets, no allow-list), and
# the command block's lines run there, in order (navette lock, the git
# commit of the lock, navette run --wait on the local backend). Two
# substitutions only, since the README names a remote: its URL becomes
# file:// of a clone of this checkout's HEAD (committed work only), and
# its ref a tag this test makes in that clone. The sweep must succeed,
# from the library's commit, with the digits set the library ships.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

catalogue_python torch sklearn
[ -f /usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz ] ||
	{ skip "the README's library steps" "no Debian python3-sklearn: vendor/bootstrap test installs it"; finish; }
git -C "$NAVETTE_SOURCE" rev-parse HEAD >/dev/null 2>&1 ||
	{ skip "the README's library steps" "the sources are not a git clone"; finish; }

# the section, up to its first subsection
section=$(awk '/^## Recipe catalogue$/ { p = 1; next }
	p && /^##/ { exit } p' "$NAVETTE_SOURCE/README.md")
block() { # block LANG: the first fenced block of the section opened by ```LANG
	printf '%s\n' "$section" | awk -v want="$1" '
		/^```/ && !inb { inb = 1; mine = !done && substr($0, 4) == want; next }
		/^```$/ && inb { inb = 0; if (mine) done = 1; mine = 0; next }
		mine { print }'
}
LUA=$(block lua)
CMDS=$(block "")
check_contains "README: the section has the library's Lua" "$LUA" "navette.use"
check_contains "README: ... and its commands" "$CMDS" "navette run"
url=$(printf '%s\n' "$LUA" | sed -n 's/.*git = "\([^"]*\)".*/\1/p')
ref=$(printf '%s\n' "$LUA" | sed -n 's/.*ref = "\([^"]*\)".*/\1/p')
recipe=$(printf '%s\n' "$CMDS" | sed -n 's/^navette run \([^ ]*\).*/\1/p')
[ -n "$url" ] && [ -n "$ref" ] && [ -n "$recipe" ] ||
	{ fail "README: no git URL, ref or recipe in the section"; finish; }

LIB=$T/navette-clone
git clone -q "$NAVETTE_SOURCE" "$LIB" || exit 1
git -C "$LIB" tag "$ref" || exit 1

# (the user's repository has a commit; the recipe is new, as the README
# has the user commit it with the lock)
U=$(new_repo user) || exit 1
commit_all "$U" >/dev/null || exit 1
printf '%s\n' "$LUA" | FROM=$url TO=file://$LIB \
	perl -pe 's/\Q$ENV{FROM}\E/$ENV{TO}/g' >"$U/$recipe"
check_contains "the recipe uses the clone" "$(cat "$U/$recipe")" "file://$LIB"
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t \
	GIT_COMMITTER_EMAIL=t@t
SECONDS=0
while IFS= read -r line; do
	[ -n "$line" ] || continue
	case $line in
	navette\ *) nv_in "$U" ${line#navette } ;;
	*) (cd "$U" && eval "$line") >"$T/.out" 2>"$T/.err" && RC=0 || RC=$? ;;
	esac
	check_rc "README step: $line" 0
	[ "$RC" = 0 ] || { printf '%s\n' "$OUT" "$ERR" "$(cat "$T/.err")"; finish; }
done <<<"$CMDS"
echo "the README's library steps: ${SECONDS}s"
BEST=$(printf '%s\n' "$OUT" | sed -n 's/^job train-best submitted: //p')
B=$(store_dir user "$BEST")
check_eq "the sweep's best.json lists its two runs" \
	"$(json 'len(d["runs"])' <"$B/best.json" 2>&1)" 2
check_eq "the jobs ran the library's commit" \
	"$(json 'd["commit"]' <"$B/navette-run.json" 2>&1)" \
	"$(git -C "$LIB" rev-parse "$ref")"
check_eq "the project declares no data set" \
	"$(grep -c datasets "$U/navette.lua")" 0
finish
