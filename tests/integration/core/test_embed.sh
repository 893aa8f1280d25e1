# libnavette installed and embedded: `cmake --install` of this build into a
# temporary prefix gives the program, both libraries, the header, the
# pkg-config file and the CMake package; tests/embed/host.c built against
# that prefix with pkg-config and with find_package(navette) registers
# host.greet, runs tests/embed/recipe.lua to `succeeded` on the local
# backend and reads the job's status; a host that gives no way to start
# the agent gets the cause within seconds instead of a wait that hangs.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

: "${NAVETTE_BUILD_DIR:?set NAVETTE_BUILD_DIR to the build folder (ctest does)}"
LIBDIR=${NAVETTE_INSTALL_LIBDIR:-lib}
SOVERSION=${NAVETTE_SOVERSION:-0}
CC=${CC:-cc}
EMBED_CFLAGS=${NAVETTE_EMBED_CFLAGS:-}
P=$T/prefix
LOGS=$T/logs
mkdir -p "$LOGS"

# show LOGFILE: its lines on stderr (after a failed step)
show() {
	sed 's/^/  | /' "$1" | tail -40 >&2
}

# "${BOUNDED[@]}" CMD...: runs CMD, killed after 120 s (macOS has no
# timeout(1)); an array so that env(1) can run it too
BOUNDED=(perl -e 'alarm shift; exec @ARGV or die "exec: $!\n"' 120)

now() { python3 -c 'import time; print("%.3f" % time.time())'; }

# ---- install ------------------------------------------------------------
if cmake --install "$NAVETTE_BUILD_DIR" --prefix "$P" >"$LOGS/install" 2>&1; then
	pass "cmake --install into a fresh prefix"
else
	fail "cmake --install into a fresh prefix (exit $?)"
	show "$LOGS/install"
	finish
fi

check_true "installed bin/navette is executable" test -x "$P/bin/navette"
check_file "installed include/navette.h" "$P/include/navette.h"
check_file "installed $LIBDIR/libnavette.a" "$P/$LIBDIR/libnavette.a"
check_file "installed $LIBDIR/pkgconfig/navette.pc" \
	"$P/$LIBDIR/pkgconfig/navette.pc"
check_file "installed $LIBDIR/cmake/navette/navetteConfig.cmake" \
	"$P/$LIBDIR/cmake/navette/navetteConfig.cmake"
check_file "installed $LIBDIR/cmake/navette/navetteConfigVersion.cmake" \
	"$P/$LIBDIR/cmake/navette/navetteConfigVersion.cmake"
check_file "installed $LIBDIR/cmake/navette/navetteTargets.cmake" \
	"$P/$LIBDIR/cmake/navette/navetteTargets.cmake"
# the manual's pages beside the man page, the same text the binary prints
for page in "$NAVETTE_SOURCE"/lua/navette/doc/*.md; do
	name=$(basename "$page" .md)
	check_eq "installed share/doc/navette/$name.md" \
		"$(cat "$P/share/doc/navette/$name.md" 2>&1)" "$(cat "$page")"
done
check_eq "installed navette help cli prints the installed page" \
	"$(NAVETTE_HOME=$T/help-home "$P/bin/navette" help cli 2>&1)" \
	"$(cat "$P/share/doc/navette/cli.md")"
check_eq "only navette.h is installed under include/" \
	"$(cd "$P/include" 2>/dev/null && ls -A)" navette.h

if [ "$(uname)" = Darwin ]; then
	SO=$P/$LIBDIR/libnavette.$SOVERSION.dylib
	check_file "installed $LIBDIR/libnavette.$SOVERSION.dylib" "$SO"
	check_match "the dylib's install name carries the ABI version" \
		"$(otool -D "$SO" 2>&1)" "libnavette\\.$SOVERSION\\.dylib"
else
	SO=$P/$LIBDIR/libnavette.so.$SOVERSION
	check_file "installed $LIBDIR/libnavette.so.$SOVERSION" "$SO"
	check_true "libnavette.so links to the versioned file" \
		test -e "$P/$LIBDIR/libnavette.so"
	if command -v readelf >/dev/null 2>&1; then
		DYN=$(readelf -d "$SO" 2>&1)
		SYMS=$(readelf --dyn-syms -W "$SO" 2>&1)
	else
		DYN=$(objdump -p "$SO" 2>&1)
		SYMS=$(objdump -T "$SO" 2>&1)
	fi
	check_match "libnavette.so has SONAME libnavette.so.$SOVERSION" \
		"$DYN" "SONAME.*libnavette\\.so\\.$SOVERSION\\b"
	check_match "the shared library exports navette_open" "$SYMS" \
		'\bnavette_open\b'
	check_no_match "the shared library keeps internals hidden" \
		"$(printf '%s\n' "$SYMS" | grep -v ' UND ')" '\bnv_(redact|agent)_'
fi

PC=$(cat "$P/$LIBDIR/pkgconfig/navette.pc" 2>/dev/null)
check_match "navette.pc: Requires names Lua (the API takes lua_CFunction)" \
	"$PC" '^Requires: *lua'
for dep in libgit2 libcurl libcjson sqlite3 expat zlib openssl; do
	check_match "navette.pc: Requires.private lists $dep" "$PC" \
		"^Requires\\.private:.*\\b$dep\\b"
done

# ---- the test repository ------------------------------------------------
R=$(new_repo embed)
cp "$NAVETTE_SOURCE/tests/embed/recipe.lua" "$R/recipe.lua"
put_file "$R" plain.lua <<'EOF'
require("navette").job { name = "plain", command = { "true" } }
EOF
commit_all "$R" >/dev/null
# the key the recipe prints, built here as there (no key in the tree)
KEY="AKIA$(printf '7%.0s' 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16)"

# check_host NAME LOG: the output of a host run that should succeed
check_host() {
	local name=$1 log=$2 result status id
	result=$(sed -n 's/^RESULT //p' "$log")
	status=$(sed -n 's/^STATUS //p' "$log")
	check_eq "$name: the result's job succeeded" \
		"$(printf '%s' "$result" | json 'd["jobs"][0]["state"]')" succeeded
	check_eq "$name: the result names the project" \
		"$(printf '%s' "$result" | json 'd["project"]')" embed
	id=$(printf '%s' "$result" | json 'd["jobs"][0]["id"]')
	check_eq "$name: the status is the job's" \
		"$(printf '%s' "$status" | json 'd["id"]')" "$id"
	check_eq "$name: the status says succeeded" \
		"$(printf '%s' "$status" | json 'd["state"]')" succeeded
	check_eq "$name: the status lists the output" \
		"$(printf '%s' "$status" | json '[o["name"] for o in d["outputs"]]')" \
		'["greeting.txt"]'
	check_eq "$name: the plan declares the job" \
		"$(sed -n 's/^PLAN //p' "$log" | json 'd["jobs"][0]["name"]')" greet
	check_eq "$name: the output landed, with host.greet's answer" \
		"$(cat "$(store_dir embed "$id")/greeting.txt" 2>&1)" \
		"hello, recipe from the host"
	check_match "$name: the output callback received the recipe's print" \
		"$(grep '^OUTPUT ' "$log")" 'hello, recipe from the host'
	check_match "$name: the output callback received it redacted" \
		"$(grep '^OUTPUT ' "$log")" 'key in output: <redacted:aws-access-key-id>'
	check_no_match "$name: no key reached the output callback" \
		"$(cat "$log")" "$KEY"
}

# ---- built with pkg-config ----------------------------------------------
if ! command -v pkg-config >/dev/null 2>&1; then
	fail "pkg-config is not installed (needed to build against navette.pc)"
	finish
fi
export PKG_CONFIG_PATH=$P/$LIBDIR/pkgconfig
FLAGS=$(pkg-config --cflags --libs navette 2>"$LOGS/pc")
check_match "pkg-config --libs navette names the library" "$FLAGS" '-lnavette\b'
# shellcheck disable=SC2086 # FLAGS and EMBED_CFLAGS are word lists
if "$CC" $EMBED_CFLAGS -o "$T/host_pc" "$NAVETTE_SOURCE/tests/embed/host.c" \
	$FLAGS -Wl,-rpath,"$P/$LIBDIR" >"$LOGS/cc" 2>&1; then
	pass "host.c builds with \$(pkg-config --cflags --libs navette)"
else
	fail "host.c builds with \$(pkg-config --cflags --libs navette)"
	show "$LOGS/cc"
	show "$LOGS/pc"
fi
if command -v ldd >/dev/null 2>&1 && [ -x "$T/host_pc" ]; then
	check_match "the pkg-config host uses the installed shared library" \
		"$(ldd "$T/host_pc")" "libnavette\\.so\\.$SOVERSION => $P/"
fi

# The agent program: found beside the installed library (no navette on
# this PATH, no NAVETTE_BIN).
SYSPATH=/usr/bin:/bin
export NAVETTE_HOME=$T/home-pc
(cd "$R" && PATH=$SYSPATH "${BOUNDED[@]}" "$T/host_pc" recipe.lua) >"$LOGS/pc.out" 2>&1
RC=$?
if [ "$RC" = 0 ]; then
	pass "pkg-config host: runs the recipe with --wait and exits 0"
else
	fail "pkg-config host: runs the recipe with --wait and exits 0 (exit $RC)"
	show "$LOGS/pc.out"
	show "$NAVETTE_HOME/agent.log"
fi
check_host "pkg-config host" "$LOGS/pc.out"

# ---- built with find_package(navette) -----------------------------------
if CFLAGS=$EMBED_CFLAGS LDFLAGS=$EMBED_CFLAGS cmake -S "$NAVETTE_SOURCE/tests/embed" \
	-B "$T/cmake-host" -DCMAKE_PREFIX_PATH="$P" >"$LOGS/cmake" 2>&1 &&
	cmake --build "$T/cmake-host" >>"$LOGS/cmake" 2>&1; then
	pass "host.c builds with find_package(navette) and navette::navette"
else
	fail "host.c builds with find_package(navette) and navette::navette"
	show "$LOGS/cmake"
fi

# This host is its own agent (navette_agent_main): with the installed
# navette out of the way, nothing else could run the job.
mv "$P/bin/navette" "$P/bin/navette.away"
export NAVETTE_HOME=$T/home-cmake
(cd "$R" && PATH=$SYSPATH "${BOUNDED[@]}" "$T/cmake-host/host" --self recipe.lua) \
	>"$LOGS/cmake.out" 2>&1
RC=$?
if [ "$RC" = 0 ]; then
	pass "CMake host (its own agent): runs the recipe and exits 0"
else
	fail "CMake host (its own agent): runs the recipe and exits 0 (exit $RC)"
	show "$LOGS/cmake.out"
	show "$NAVETTE_HOME/agent.log"
fi
check_host "CMake host" "$LOGS/cmake.out"

# ---- no way to start the agent: a clear error within seconds --------------
# host_fails NAME WHAT ERE ENV... -- ARGS...: runs the CMake host with
# ENV and ARGS in a fresh home; it must fail in under 10 s with an ERROR
# line matching ERE.
host_fails() {
	local name=$1 ere=$2 start end rc
	shift 2
	local envs=()
	while [ "$1" != -- ]; do
		envs+=("$1")
		shift
	done
	shift
	export NAVETTE_HOME=$T/home-$name
	start=$(now)
	(cd "$R" && env PATH=$SYSPATH "${envs[@]}" \
		"${BOUNDED[@]}" "$T/cmake-host/host" "$@" recipe.lua) \
		>"$LOGS/$name.out" 2>&1
	rc=$?
	end=$(now)
	check_ne "$name: the host fails" "$rc" 0
	check_match "$name: the error says why" \
		"$(grep '^ERROR ' "$LOGS/$name.out")" "$ere"
	check_true "$name: it fails in under 10 s (took $(python3 -c \
"print('%.1f' % ($end - $start))") s)" python3 -c \
		"import sys; sys.exit(0 if $end - $start < 10 else 1)"
	if [ "$rc" = 0 ] || ! grep -q '^ERROR ' "$LOGS/$name.out"; then
		show "$LOGS/$name.out"
	fi
}

host_fails missing-program "cannot execute $T/no/navette" \
	X=1 -- --agent "$T/no/navette"
# a host that says it is its own agent but does not answer `agent`
mkdir -p "$T/home-no-dispatch"
: >"$T/home-no-dispatch/host-no-dispatch"
host_fails no-dispatch "did not start.*unknown command 'agent'" \
	HOST_NO_DISPATCH=1 -- --self
mv "$P/bin/navette.away" "$P/bin/navette"

# a code a recipe makes up (a key id, here) is handed out as "recipe":
# codes are the library's own, never a recipe's text
put_file "$R" code.lua <<'EOF'
error({ code = "AKIA" .. string.rep("7", 16), message = "made up" })
EOF
commit_all "$R" >/dev/null
(cd "$R" && "${BOUNDED[@]}" "$T/cmake-host/host" code.lua) \
	>"$LOGS/code.out" 2>&1
check_eq "an error code a recipe made up is handed out as recipe" \
	"$(sed -n 's/^CODE //p' "$LOGS/code.out")" "recipe"
check_no_match "the made-up code reaches the host nowhere" \
	"$(cat "$LOGS/code.out")" "$KEY"

# the CLI registers no host module: a recipe that needs one is told so
nv_in "$R" plan recipe.lua
check_rc "navette plan of a recipe needing host.greet exits 2" 2
check_match "navette plan names the missing host module" "$ERR" \
	"registered no host module 'greet'"

# the CLI too: run --wait whose agent program cannot be executed says so
export NAVETTE_HOME=$T/home-cli
start=$(now)
NAVETTE_BIN=$T/no/navette nv_in "$R" run plain.lua --wait
end=$(now)
check_ne "navette run --wait without an agent program fails" "$RC" 0
check_match "navette run --wait says why" "$ERR" \
	"cannot execute $T/no/navette"
check_true "navette run --wait fails in under 10 s" python3 -c \
	"import sys; sys.exit(0 if $end - $start < 10 else 1)"

# a NAVETTE_HOME too long is refused with the reason, never cut short
NAVETTE_HOME=/$(python3 -c 'print("h" * 5000)') nv jobs
check_rc "navette with a NAVETTE_HOME of 5001 bytes exits 2" 2
check_match "it says the home is too long" "$ERR" \
	'^navette: navette_open: home \(or NAVETTE_HOME\).* longer than'

finish
