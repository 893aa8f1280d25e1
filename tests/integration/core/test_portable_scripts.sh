# The scripts the test command runs use only tools macOS has too (BSD
# userland, bash 3.2, no coreutils): tests/integration/portable/gnu_only.py
# finds GNU-only uses in tests/, vendor/bootstrap and .ci/run; this test
# first checks that it finds each kind, then runs it on the tree.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

SCAN=$NAVETTE_SOURCE/tests/integration/portable/gnu_only.py
mkdir -p "$T/fx"
N=0
FINDS=
PASSES=

# scan_finds WHAT LINE: the scanner reports LINE (a GNU-only use).
scan_finds() {
	N=$((N + 1))
	printf '%s\n' "$2" >"$T/fx/f$N.sh"
	FINDS="$FINDS $N"
	printf '%s\n' "$1" >"$T/fx/f$N.what"
}

# scan_passes WHAT LINE: the scanner lets LINE (a portable form) through.
scan_passes() {
	N=$((N + 1))
	printf '%s\n' "$2" >"$T/fx/f$N.sh"
	PASSES="$PASSES $N"
	printf '%s\n' "$1" >"$T/fx/f$N.what"
}

scan_finds "sha256sum" 'sum=$(sha256sum "$f" | cut -d" " -f1)'
scan_finds "md5sum" 'md5sum <"$file"'
scan_finds "sed -i" "sed -i '2d' \"\$LOG\""
scan_finds "sed -n -i" "sed -n -i.bak '2p' x"
scan_finds "head -c -20" 'head -c -20 "$a" >"$b"'
scan_finds "setsid" '(exec setsid sh -c "echo")'
scan_finds "flock(1)" 'flock -n "$H/agent.lock" true'
scan_finds "base64 -w" 'head -c 600 /dev/urandom | base64 -w 64'
scan_finds "stat -c" 'size=$(stat -c %s "$f")'
scan_finds "date -d" 'date -d @0 +%F'
scan_finds "date +%N" 'started_ns=$(date +%s%N)'
scan_finds "readlink -f" 'd=$(readlink -f "$0")'
scan_finds "realpath -m" 'DIR=$(realpath -m "$1")'
scan_finds "timeout" 'timeout 20 ceph status'
scan_finds "grep -P" "grep -oP '\\d+' x"
scan_finds "xargs -r" 'find . -name x | xargs -r rm'
scan_finds "find -printf" 'find "$d" -type f -printf "%s\n"'
scan_finds "mktemp --suffix" 'mktemp --suffix=.json'
scan_finds "cp --reflink" 'cp --reflink=auto a b'
scan_finds "tar --full-time" 'tar --numeric-owner --full-time -tvzf x'
scan_finds "tac" 'cat x | tac'
scan_finds "nproc" 'make -j"$(nproc)"'
scan_finds "bash 4: mapfile" 'mapfile -t lines <x'
scan_finds "bash 4: declare -A" 'declare -A SEEN'
scan_finds "tr on random bytes" \
	'id=$(head -c 2048 /dev/urandom | tr -dc "A-Z0-9" | head -c 16)'
scan_finds "a C test's shell command" \
	'CHECK(sh_out(out, sizeof(out), "sha256sum %s", f) == 0);'

scan_passes "shasum -a 256" 'sum=$(shasum -a 256 "$f" | cut -d" " -f1)'
scan_passes "sed into a new file" "sed '2d' \"\$T/orig\" >\"\$LOG\""
scan_passes "head -c N" 'head -c "$(($(wc -c <"$a") - 20))" "$a"'
scan_passes "perl flock" "perl -MFcntl=:flock -e 'flock(\$f, LOCK_EX)'"
scan_passes "python setsid" "python3 -c 'import os; os.setsid()'"
scan_passes "curl --connect-timeout" 'curl --connect-timeout 20 -sS "$u"'
scan_passes "a fallback" 'nproc 2>/dev/null || getconf _NPROCESSORS_ONLN'
scan_passes "a comment" '# not sha256sum: shasum -a 256'
scan_passes "a marked line" 'sha256sum x # portable-ok: a test of sha256sum'
scan_passes "LC_ALL=C tr" 'LC_ALL=C tr -dc "A-Z0-9" </dev/urandom | head -c 16'
scan_passes "tr on base64" 'head -c 48 /dev/urandom | base64 | tr -d "/+="'
scan_passes "a setting named nproc" 'ulimits = ["nproc=32768:32768"]'

# One scan of every fixture (a python3 start each would take long).
(cd "$T" && ls fx/*.sh) >"$T/fx.list"
FOUND=$(cd "$T" && python3 "$SCAN" "$T" $(cat "$T/fx.list"))
for n in $FINDS; do
	if grep -q "^fx/f$n.sh:1: " <<<"$FOUND"; then
		pass "found: $(cat "$T/fx/f$n.what")"
	else
		fail "found: $(cat "$T/fx/f$n.what") (not reported: $(cat "$T/fx/f$n.sh"))"
	fi
done
for n in $PASSES; do
	if grep -q "^fx/f$n.sh:" <<<"$FOUND"; then
		fail "allowed: $(cat "$T/fx/f$n.what") (got: $(printf '%s\n' \
			"$FOUND" | grep "^fx/f$n.sh:"))"
	else
		pass "allowed: $(cat "$T/fx/f$n.what")"
	fi
done

# The tree itself.
out=$(python3 "$SCAN" "$NAVETTE_SOURCE" 2>"$T/scan.err")
rc=$?
if [ "$rc" = 0 ]; then
	pass "the test scripts use only portable tools ($(cat "$T/scan.err"))"
else
	fail "the test scripts use GNU-only tools (macOS lacks them):
$out"
fi

finish
