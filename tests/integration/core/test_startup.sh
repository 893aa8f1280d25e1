# What keeps navette's start-up short, and what it must not cost:
# - version and help load no library but Lua, status of a local job only
#   SQLite and cJSON (where the program loads libraries on first use:
#   NAVETTE_LAZY_LIBS, Linux x86-64; the loader's LD_DEBUG tells), and
#   status writes nothing to the job database's file;
# - every other command loads them all before doing anything, so that a
#   library missing stops it at start (exit 127), never halfway; a function
#   missing from a library fails only where it is called;
# - the stubs and thunks start with endbr64 (indirect branch tracking);
# - version says which versions are as built, --linked loads and asks them;
# - the precompiled library keeps recipe lines in errors and library lines
#   in tracebacks; NAVETTE_LUA_PATH still loads sources from disk.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

# ---- the embedded library, precompiled --------------------------------------

R=$(new_repo startup)
put_file "$R" hello.lua <<'EOF'
local navette = require "navette"
navette.job {
  name = "hello",
  command = { "sh", "-c", "echo hi >\"$NAVETTE_OUTPUTS/hi.txt\"" },
  success = { outputs = { "hi.txt" } },
}
EOF
put_file "$R" bad_field.lua <<'EOF'
local navette = require "navette"

navette.job { name = "bad", command = 42 }
EOF
put_file "$R" bad_index.lua <<'EOF'
local navette = require "navette"
local nothing = nil
return nothing.field
EOF
commit_all "$R" >/dev/null

nv_in "$R" plan bad_field.lua
check_rc "a recipe error exits 2" 2
check_match "a recipe error names the recipe's line" "$ERR" \
	'bad_field\.lua:3: navette\.job'
nv_in "$R" plan bad_index.lua
check_match "a Lua error in a recipe names the recipe's line" "$ERR" \
	'bad_index\.lua:3: attempt to index a nil value'
(cd "$R" && NAVETTE_DEBUG=1 "$NAVETTE" plan bad_index.lua) >"$T/tb.out" 2>&1
check_match "a traceback names library frames with their lines" \
	"$(cat "$T/tb.out")" 'navette/([a-z_]+/)?[a-z_]+\.lua:[0-9]+: in '

# NAVETTE_LUA_PATH: the library's sources from disk, not the embedded ones
mkdir -p "$T/lua"
cp -R "$NAVETTE_SOURCE/lua/navette" "$T/lua/"
python3 - "$T/lua/navette/cli/version.lua" <<'EOF'
import sys
path = sys.argv[1]
text = open(path).read()
marker = "Prints the versions of navette"
assert marker in text
open(path, "w").write(text.replace(marker, "FROM-DISK " + marker, 1))
EOF
NAVETTE_LUA_PATH=$T/lua "$NAVETTE" help version >"$T/help.out" 2>&1
check_match "NAVETTE_LUA_PATH loads the library from its folder" \
	"$(cat "$T/help.out")" 'FROM-DISK Prints the versions'
nv help version
check_no_match "without it, the embedded library answers" "$OUT" 'FROM-DISK'

nv_in "$R" run hello.lua --wait
check_rc "a job runs to its end" 0
ID=$(submitted_id)
check_match "the job has an id" "$ID" '^startup-'

# ---- libraries loaded on first use -----------------------------------------

# What the program loads: the files the dynamic loader maps at start and
# later (glibc's LD_DEBUG=files), by SONAME, space-separated.
loaded() {
	LD_DEBUG=files "$NAVETTE" "$@" 2>&1 >/dev/null |
		perl -ne 'print "$1\n" if /file=(\S+) \[0\];  (?:needed|dynamically loaded) by/' |
		sort -u | tr '\n' ' '
}
lazy=$(sed -n 's/^NAVETTE_LAZY_LIBS:BOOL=//p' \
	"$(dirname "$NAVETTE")/CMakeCache.txt" 2>/dev/null)
if [ "$lazy" != "ON" ]; then
	skip "the checks of lazily loaded libraries" \
		"this navette links its libraries as usual (NAVETTE_LAZY_LIBS is '${lazy:-unknown}')"
elif [ -z "$(loaded help)" ]; then
	skip "the checks of loaded libraries" \
		"the dynamic loader does not answer LD_DEBUG=files (not glibc)"
else
	for cmd in help version; do
		got=$(loaded "$cmd")
		check_no_match "navette $cmd loads no library but Lua ($got)" \
			"$got" '(curl|git2|crypto|ssl|sqlite|cjson|expat|libz)'
		check_match "navette $cmd loads Lua" "$got" 'liblua'
	done
	got=$(loaded status "$ID")
	check_match "navette status loads SQLite ($got)" "$got" 'libsqlite3'
	check_no_match "navette status loads no network, git or crypto" \
		"$got" '(curl|git2|crypto|ssl)'
	got=$(loaded version --linked)
	check_match "version --linked loads the libraries it asks" "$got" \
		'libcurl.*libgit2|libgit2.*libcurl'

	nv version
	check_match "version gives libcurl as built" "$OUT" \
		'libcurl +[0-9.]+ \(as built\)'
	nv version --linked
	check_rc "version --linked exits 0" 0
	check_match "version --linked gives the linked libcurl and its TLS" \
		"$OUT" 'libcurl +[0-9.]+ \([^)]*\)'
	check_no_match "version --linked gives nothing as built" "$OUT" \
		'as built'

	# Commands that will need the libraries load them all before doing
	# anything: plan of a recipe that does not exist touches none of them.
	got=$(cd "$R" && loaded plan no-such-recipe.lua)
	check_match "plan loads every library at start" "$got" \
		'libcurl.*libgit2|libgit2.*libcurl'
	got=$(NAVETTE_LAZY_TRACE=1 "$NAVETTE" help 2>&1 >/dev/null)
	check_no_match "NAVETTE_LAZY_TRACE: help loads nothing" "$got" 'lazy:'
	got=$(cd "$R" && NAVETTE_LAZY_TRACE=1 "$NAVETTE" plan no-such.lua 2>&1)
	check_match "NAVETTE_LAZY_TRACE: plan says what it loads" "$got" \
		'lazy: loaded libcurl\.so'

	# A library that cannot be loaded (a file that is not ELF, found first
	# by its SONAME): run stops at start, exit 127, nothing queued.
	mkdir -p "$T/broken"
	echo "not a library" >"$T/broken/libcjson.so.1"
	nv jobs
	before=$(printf '%s\n' "$OUT" | grep -c 'startup-')
	(cd "$R" && LD_LIBRARY_PATH=$T/broken "$NAVETTE" run hello.lua) \
		>"$T/broken.out" 2>&1
	check_eq "run with a library missing exits 127" "$?" 127
	check_match "run names the library it cannot load" \
		"$(cat "$T/broken.out")" 'cannot load library libcjson\.so\.1'
	check_no_match "run queued nothing" "$(cat "$T/broken.out")" 'submitted'
	nv jobs
	check_eq "no job was queued" \
		"$(printf '%s\n' "$OUT" | grep -c 'startup-')" "$before"
	LD_LIBRARY_PATH=$T/broken "$NAVETTE" agent >/dev/null 2>&1
	check_eq "the agent with a library missing exits 127 at start" "$?" 127
	LD_LIBRARY_PATH=$T/broken "$NAVETTE" help >/dev/null 2>&1
	check_eq "help needs no library" "$?" 0

	# A library without a function navette links: only a call of that
	# function fails. An empty libcjson.so.1 stands for one.
	mkdir -p "$T/empty"
	printf 'int nv_nothing;\n' >"$T/empty.c"
	if ${CC:-cc} -shared -fPIC -Wl,-soname,libcjson.so.1 \
		-o "$T/empty/libcjson.so.1" "$T/empty.c"; then
		(cd "$R" && LD_LIBRARY_PATH=$T/empty "$NAVETTE" plan no-such.lua) \
			>"$T/empty.out" 2>&1
		check_eq "a function missing but never called: plan goes on" \
			"$?" 2
		check_no_match "plan does not stop on the missing functions" \
			"$(cat "$T/empty.out")" 'has no'
		LD_LIBRARY_PATH=$T/empty "$NAVETTE" jobs >"$T/empty.out" 2>&1
		check_eq "calling a missing function exits 127" "$?" 127
		check_match "the call names the library and the function" \
			"$(cat "$T/empty.out")" \
			'navette: libcjson\.so\.1 has no cJSON_[A-Za-z]+'
	else
		skip "the missing-function checks" "no C compiler"
	fi

	# Indirect branch tracking: every thunk starts with endbr64, and so
	# does a stub (cJSON_Delete's, for one).
	if command -v objdump >/dev/null 2>&1; then
		bad=$(objdump -d --no-show-raw-insn "$NAVETTE" | perl -ne '
			if (/^[0-9a-f]+ <(nv_lazy_thunk_\d+|nv_lazy_enter|cJSON_Delete)>:/) {
				$want = $1; $n++; next;
			}
			if ($want && /^\s+[0-9a-f]+:\s+(\S+)/) {
				print "$want " if $1 ne "endbr64"; $want = "";
			}
			END { print "none" unless $n }')
		check_eq "every lazy thunk and stub starts with endbr64" "$bad" ""
	fi
fi
nv status "$ID"
check_rc "status of the job exits 0" 0
check_match "status reads the job's record" "$OUT" 'succeeded'

# A read command writes nothing: with no agent holding the job database
# open, status (the last to close it) leaves its file as it was. Setting
# a pragma to the value it had wrote the header page, and the close then
# checkpointed the WAL into the file with two fsyncs (1.5 ms of status).
nv agent stop
check_rc "the agent stops (no job left)" 0
db_file() { perl -MTime::HiRes=stat -e '@s = stat($ARGV[0]); printf "%.9f %d\n", $s[9], $s[7]' "$NAVETTE_HOME/jobs.db"; shasum -a 256 "$NAVETTE_HOME/jobs.db" | cut -d' ' -f1; }
BEFORE=$(db_file)
nv status "$ID"
check_rc "status with no agent exits 0" 0
check_eq "status leaves the job database's file untouched (time, size, bytes)" \
	"$(db_file)" "$BEFORE"

finish
