# Every test script stops before it does harm (issue 27: test_rotate_secrets,
# run by hand with empty folder variables, wrote into /):
# tests/integration/portable/script_guards.py holds each one to its rules
# (its header says them): `set -eu -o pipefail` as its first command, and
# the guard (lib.sh, or need_dir) before its first write. This test first
# checks that the scanner finds each kind of breach and lets each correct
# form through, then runs it on the tree; then that lib.sh's need_dir
# refuses (exit 2) each kind of bad folder variable.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

SCAN=$NAVETTE_SOURCE/tests/integration/portable/script_guards.py
mkdir -p "$T/fx"
N=0
FAILS=
PASSES=

# fixture WHAT NAME LINE...: a script fixture/NAME holding the lines
fixture() {
	N=$((N + 1))
	printf '%s\n' "$1" >"$T/fx/$N.what"
	printf '%s\n' "$2" >"$T/fx/$N.name"
	mkdir -p "$T/fx/$N"
	local f=$T/fx/$N/$2
	shift 2
	printf '%s\n' "$@" >"$f"
}
# scan_fails WHAT NAME LINE...: the scanner reports the script
scan_fails() { fixture "$@"; FAILS="$FAILS $N"; }
# scan_passes WHAT NAME LINE...: the scanner lets it through
scan_passes() { fixture "$@"; PASSES="$PASSES $N"; }

LIB='. "$(dirname "$0")/lib.sh"'
scan_fails "no set line: lib.sh sourced first" test_a.sh \
	"# a test" "$LIB" 'echo x >"$T/f"'
scan_fails "set -u only" test_a.sh "set -u" "$LIB"
scan_fails "set -eu without pipefail in a bash script" test_a.sh \
	"set -eu" "$LIB"
scan_fails "set -eu -o pipefail after the first command" test_a.sh \
	"X=1" "set -eu -o pipefail" "$LIB"
scan_fails "a #!/bin/sh script without set -eu" run.sh "#!/bin/sh" \
	"dir=\$1" 'need_dir dir' 'touch "$dir/x"'
scan_fails "a redirection before the guard" test_a.sh \
	"set -eu -o pipefail" 'echo x >"$OUT/f"' "$LIB"
scan_fails "an append before the guard" test_a.sh \
	"set -eu -o pipefail" 'echo x >>"$OUT/f"' "$LIB"
scan_fails "mkdir before the guard" start.sh "#!/usr/bin/env bash" \
	"set -euo pipefail" 'DIR=$1' 'mkdir -p "$DIR/run"' "need_dir DIR"
scan_fails "rm -rf before the guard" stop.sh "#!/usr/bin/env bash" \
	"set -euo pipefail" 'rm -rf "$W"'
scan_fails "cp after && before the guard" bench.sh "#!/usr/bin/env bash" \
	"set -euo pipefail" 'true && cp a "$W/b"'
scan_fails "a write in a script that never calls the guard" bench.sh \
	"#!/usr/bin/env bash" "set -euo pipefail" 'W=$(mktemp -d)' \
	'printf x | tee "$W/log"'

scan_passes "set -eu -o pipefail, lib.sh, then writes" test_a.sh \
	"# a test" "" "set -eu -o pipefail" "$LIB" "set +e" 'echo x >"$T/f"'
scan_passes "set -euo pipefail and need_dir before the first write" \
	start.sh "#!/usr/bin/env bash" "# starts it" "set -euo pipefail" \
	'DIR=$1' "need_dir DIR" 'mkdir -p "$DIR/run"'
scan_passes "a #!/bin/sh script with set -eu and need_dir" certs.sh \
	"#!/bin/sh" "set -eu" 'dir=$1' "need_dir dir" 'cd "$dir"' '>ext.cnf'
scan_passes "no write at all needs no guard" stop.sh \
	"#!/usr/bin/env bash" "set -euo pipefail" 'echo "$1"'
scan_passes "output to /dev/null and 2>&1 are not writes" check.sh \
	"#!/usr/bin/env bash" "set -euo pipefail" \
	'command -v curl >/dev/null 2>&1 || echo "no curl" >&2'
scan_passes "a > inside quotes is not a write" check.sh \
	"#!/usr/bin/env bash" "set -euo pipefail" "echo 'a > b' \"c >> d\""
scan_passes "a > in a here-document is not a write" check.sh \
	"#!/usr/bin/env bash" "set -euo pipefail" "python3 - <<'PY'" \
	"print(1 > 0)" "open('x', 'w')" "PY"
scan_passes "a comparison in (( )) is not a write" check.sh \
	"#!/usr/bin/env bash" "set -euo pipefail" '[ "$a" -gt 1 ] && echo big'
scan_passes "a library (x_lib.sh) is its callers'" image_lib.sh \
	'mkdir -p "$T/x"'
scan_passes "a marked line" bench.sh "#!/usr/bin/env bash" \
	"set -euo pipefail" 'echo x >"$LOG" # guard-ok: LOG is given by ctest'

LIST=
for n in $FAILS $PASSES; do LIST="$LIST fx/$n/$(cat "$T/fx/$n.name")"; done
FOUND=$(cd "$T" && python3 "$SCAN" "$T" $LIST 2>/dev/null)
for n in $FAILS; do
	if grep -q "^fx/$n/" <<<"$FOUND"; then
		pass "found: $(cat "$T/fx/$n.what")"
	else
		fail "found: $(cat "$T/fx/$n.what") (not reported: $(cat "$T/fx/$n/"*))"
	fi
done
for n in $PASSES; do
	if grep -q "^fx/$n/" <<<"$FOUND"; then
		fail "allowed: $(cat "$T/fx/$n.what") (got: $(grep "^fx/$n/" <<<"$FOUND"))"
	else
		pass "allowed: $(cat "$T/fx/$n.what")"
	fi
done

# The tree itself.
out=$(python3 "$SCAN" "$NAVETTE_SOURCE" 2>"$T/scan.err")
rc=$?
if [ "$rc" = 0 ]; then
	pass "every test script sets -eu -o pipefail first and guards its folders ($(cat "$T/scan.err"))"
else
	fail "test scripts that break the rules ($(cat "$T/scan.err")):
$out"
fi

# need_dir itself: each bad value refused with exit 2, naming the variable
guard() { (X=$1 need_dir X) 2>&1; }
for bad in "" / relative "$T/../etc" /etc/navette; do
	got=$(guard "$bad")
	rc=$?
	check_eq "need_dir refuses X='$bad' (exit 2)" "$rc" 2
	check_match "  saying which variable" "$got" "refusing to run: X[= ]"
done
check_eq "need_dir lets a folder under \$T through" "$(guard "$T/sub"; echo $?)" 0
mkdir -p "$T/build/x"
: >"$T/build/CMakeCache.txt"
check_eq "... and one of a build folder" "$(T=/nonexistent guard "$T/build/x/stack"; echo $?)" 0
finish
