# The floors of libnavette, which a newcomer relies on to find a room:
# - host/core is the ground floor: no file of it includes a header of a
#   primitive (git, storage, jobs, creds, audit, image, net) or of host/lib;
#   where it needs a service of a higher floor it offers a hook;
# - host/lib is the one place that wires them: every primitive's luaopen_
#   function is opened there (host/lib/wire.c);
# - the public C API lives there too: each function navette.h declares is
#   defined in host/lib and nowhere else.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

HOST=$NAVETTE_SOURCE/host

# ---- core includes nothing above it ----------------------------------------

upward=$(grep -n '^#include "[a-z_]*/' "$HOST"/core/*.[ch] \
	"$HOST"/core/tools/*.c | grep -v '#include "core/' || true)
check_eq "no file of host/core includes a header of another folder" \
	"$upward" ""

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
