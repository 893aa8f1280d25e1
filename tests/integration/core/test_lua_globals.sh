# Every module of the embedded library (lua/navette) reads only the
# globals it may: Lua's own and _navette. A name the module forgot to
# require (a `util` required in one branch and used in another) is a read
# of a global that is nil there, which no test of the other branch sees;
# Lua's compiler lists each such read (GETTABUP _ENV "name"), whether the
# line runs or not. A write of a global (SETTABUP _ENV) is a bug too: the
# library keeps its state in its modules.
# And when such a bug is hit all the same, the command says it is one:
# exit 70 (not 2, a usage or recipe error), the library's line, and a
# hint to report it, while a recipe's own runtime error stays exit 2.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

LUAC=
for c in luac5.4 luac; do
	if command -v "$c" >/dev/null 2>&1 &&
		"$c" -v 2>&1 | grep -q '^Lua 5\.4'; then
		LUAC=$c
		break
	fi
done
if [ -z "$LUAC" ]; then
	echo "error: no Lua 5.4 compiler (luac5.4 or luac): install the" \
		"group test of vendor/packages.txt (vendor/bootstrap deps)" >&2
	exit 1
fi

ALLOWED=" _navette _G _VERSION assert collectgarbage coroutine debug error
getmetatable io ipairs math next os package pairs pcall print rawequal rawget
rawlen rawset require select setmetatable string table tonumber tostring
type utf8 warn xpcall "
ALLOWED=$(printf '%s' "$ALLOWED" | tr '\n' ' ')

found=0
bad=""
while IFS= read -r f; do
	found=$((found + 1))
	listing=$("$LUAC" -p -l "$f" 2>&1) || {
		bad="$bad${f#"$NAVETTE_SOURCE"/}: does not compile: $listing
"
		continue
	}
	# "  12  [57]  GETTABUP  1 0 3  ; _ENV "util"": line 57 reads util
	while IFS=' ' read -r op line name; do
		case "$ALLOWED" in
		*" $name "*) [ "$op" = GETTABUP ] && continue ;;
		esac
		what=reads
		[ "$op" = SETTABUP ] && what=writes
		bad="$bad${f#"$NAVETTE_SOURCE"/}:$line $what the global '$name'
"
	done < <(printf '%s\n' "$listing" | perl -ne \
		'print "$2 $1 $3\n" if /\[(\d+)\]\s+([GS]ETTABUP)\s.*; _ENV "([^"]*)"/')
done < <(find "$NAVETTE_SOURCE/lua/navette" -name '*.lua' | sort)

check_true "the library's modules are found ($found)" test "$found" -gt 50
check_eq "no module of lua/navette reads a global it did not require, or writes one" \
	"$bad" ""

# ---- a bug of the library is told as one -----------------------------------

# a copy of the library (NAVETTE_LUA_PATH loads it from disk) whose
# `version` command indexes nil
cp -R "$NAVETTE_SOURCE/lua" "$T/lua"
perl -pi -e 's/^(  local v = _navette\.core\.versions\(opts\.linked\))$/$1\n  local broken; broken.field = 1/' \
	"$T/lua/navette/cli/version.lua"
check_true "the copy's version command is broken" \
	grep -q 'broken.field' "$T/lua/navette/cli/version.lua"
out=$(NAVETTE_LUA_PATH="$T/lua" "$NAVETTE" version 2>&1)
rc=$?
check_eq "a library bug exits 70" "$rc" 70
check_contains "it names the library's line" "$out" \
	"navette/cli/version.lua:"
check_contains "it says it is a bug of navette" "$out" \
	"this is a bug in navette, not in what you wrote"
out=$(NAVETTE_LUA_PATH="$T/lua" NAVETTE_DEBUG=1 "$NAVETTE" version 2>&1)
check_contains "NAVETTE_DEBUG=1 prints the traceback" "$out" "traceback"

# the same runtime error in a recipe is the recipe's: exit 2
repo=$(new_repo globals)
printf 'local broken\nbroken.field = 1\n' | put_file "$repo" r.lua
commit_all "$repo" >/dev/null
out=$(cd "$repo" && "$NAVETTE" plan r.lua 2>&1)
rc=$?
check_eq "a recipe's runtime error exits 2" "$rc" 2
check_contains "it names the recipe's line" "$out" "r.lua:2:"
check_no_match "it is not called a bug of navette" "$out" "bug in navette"
finish
