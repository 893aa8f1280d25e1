# The floors of libnavette, which a newcomer relies on to find a room:
# - host/core is the ground floor: no file of it includes a header of a
#   primitive (git, storage, jobs, creds, audit, image, net) or of host/lib;
#   where it needs a service of a higher floor it offers a hook;
# - host/lib is the one place that wires them: every primitive's luaopen_
#   function is opened there (host/lib/wire.c);
# - the public C API lives there too: each function navette.h declares is
#   defined in host/lib and nowhere else;
# - at link level too: a symbol an object of a floor refers to is never
#   defined by an object of a higher floor (core < the primitives < lib <
#   cli), read with nm from the build's objects, so a call up that no
#   #include shows (a declaration written by hand, a weak symbol) fails.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

HOST=$NAVETTE_SOURCE/host
# the build folder: NAVETTE_BUILD_DIR, else the one the program is in
BUILD=${NAVETTE_BUILD_DIR:-$(dirname "$NAVETTE")}

# ---- core includes nothing above it ----------------------------------------

upward=$(grep -n '^#include "[a-z_]*/' "$HOST"/core/*.[ch] \
	"$HOST"/core/tools/*.c | grep -v '#include "core/' || true)
check_eq "no file of host/core includes a header of another folder" \
	"$upward" ""

# ---- no object refers to a symbol of a higher floor ------------------------

OBJECTS=$BUILD/CMakeFiles
# "FLOOR FOLDER/FILE TYPE SYMBOL" for every global symbol of every object,
# the floor 0 for core, 1 for a primitive, 2 for lib, 3 for cli; nm -P -A
# is POSIX (GNU and LLVM nm): "path: name type value size"
symbols=$(nm -gPA "$OBJECTS"/navette_objects.dir/host/*/*.o \
	"$OBJECTS"/navette.dir/host/cli/*.o 2>/dev/null | awk '{
	n = split($1, part, "/"); dir = part[n - 1]; file = part[n]
	sub(/\.o:$/, "", file)
	floor = dir == "core" ? 0 : dir == "lib" ? 2 : dir == "cli" ? 3 : 1
	print floor, dir "/" file, $3, $2
}')
check_ne "the build's objects are found under $OBJECTS" \
	"$(printf '%s\n' "$symbols" | grep ' cli/' | head -n 1)" ""
# a symbol defined on two floors counts as the lower one's
upcalls=$(printf '%s\n' "$symbols" | awk '
	$3 != "U" && $3 != "w" && $3 != "v" {
		if (!($4 in def) || $1 < def[$4]) { def[$4] = $1; where[$4] = $2 }
		next
	}
	{ ref[NR] = $0; rf[NR] = $1; rw[NR] = $2; rs[NR] = $4 }
	END {
		for (i in ref)
			if ((rs[i] in def) && def[rs[i]] > rf[i])
				print rw[i] " -> " rs[i] " (" where[rs[i]] ")"
	}' | sort)
check_eq "no object refers to a symbol defined on a higher floor" \
	"$upcalls" ""

# ---- every native is opened in one place ------------------------------------

opens=$(grep -ho '^int luaopen_navette_[a-z0-9_]*' "$HOST"/*/*.c |
	sed 's/^int //' | sort -u)
check_ne "the primitives' luaopen_ functions are found" "$opens" ""
check_true "host/lib/wire.c opens the natives of host/lib/natives.def" \
	grep -q '^#include "lib/natives.def"' "$HOST/lib/wire.c"
for fn in $opens; do
	if ! grep -qx "NV_NATIVE(${fn#luaopen_navette_})" "$HOST/lib/natives.def"
	then
		fail "$fn is opened by host/lib/wire.c (host/lib/natives.def)"
		continue
	fi
	pass "$fn is opened by host/lib/wire.c (host/lib/natives.def)"
done
elsewhere=$(grep -ln 'luaopen_navette_[a-z0-9_]*}' "$HOST"/*/*.c |
	grep -v '/lib/wire\.c$' || true)
check_eq "no other file opens natives" "$elsewhere" ""

# ---- navette.h is defined in host/lib ---------------------------------------

api=$(grep -o '^NAVETTE_API [^(]*(' "$HOST/include/navette.h" |
	grep -o 'navette_[a-z_]*($' | tr -d '(' | sort -u)
check_ne "navette.h declares functions" "$api" ""
for fn in $api; do
	where=$(grep -lE "^[a-z][^(;]*[ *]$fn\(" "$HOST"/*/*.c |
		sed "s|^$HOST/||" | tr '\n' ' ' | sed 's/ $//')
	case $where in
	*" "*) fail "$fn is defined once (got: '$where')" ;;
	"lib/"*) pass "$fn is defined in host/lib ($where)" ;;
	*) fail "$fn is defined in host/lib (got: '$where')" ;;
	esac
done

finish
