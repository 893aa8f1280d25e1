#!/usr/bin/env bash
# The audit chain on a full disk (issue 27 F4): NAVETTE_HOME on a small
# tmpfs (root only; otherwise the test says it is skipped). An append
# that the full disk cuts part way (the last page of the log had room for
# part of the line) is cut back at once: the log still ends with a whole
# line, `audit verify` passes while the disk is full, and once space is
# freed the next line is appended and the chain verifies. The line is
# that of a refused run (a dirty tree), whose recipe path is chosen so the
# room left in the log's last page is less than one line.
set -eu -o pipefail
. "$(dirname "$0")/../integration/lib.sh"
set +e

case $T in /*/navette-it.*) ;; *)
	echo "FAIL: T=$T is not the test's own temporary folder" >&2
	exit 1
	;;
esac
MNT=$T/disk
mkdir -p "$MNT"
if [ "$(id -u)" != 0 ] || ! mount -t tmpfs -o size=2m tmpfs "$MNT" 2>/dev/null; then
	skip "audit on a full disk" "a full disk needs a small tmpfs, which only root can mount here"
	finish
fi
_unmount() { umount "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null; }
trap '_unmount; _cleanup' EXIT
export NAVETTE_HOME=$MNT/home
LOG=$NAVETTE_HOME/audit/audit.jsonl

R=$(new_repo fulla)
cat >"$R/navette.lua" <<LUA
return { name = "fulla", default_profile = "here", profiles = {
  here = { backend = "local", storage = "file://$T/store/",
           require_pushed = false } } }
LUA
put_file "$R" recipes/one.lua <<'LUA'
local navette = require "navette"
navette.job { name = "one", command = { "true" } }
LUA
commit_all "$R" >/dev/null || exit 1
echo dirty >"$R/dirty.txt" # each run is refused, with one audit line

size() { wc -c <"$LOG" | tr -d ' '; }
lines() { wc -l <"$LOG" | tr -d ' '; }
# refused runs until the log's last 4 KiB page has room for less than
# one line (a line is about 330 bytes)
room=0
for _ in $(seq 1 40); do
	nv_in "$R" run recipes/one.lua
	room=$((4096 - $(size) % 4096))
	[ "$room" -gt 0 ] && [ "$room" -lt 250 ] && break
done
check_rc "a run on a dirty tree is refused" 3
check_true "the log's last page has room for part of a line ($room bytes)" \
	test "$room" -gt 0 -a "$room" -lt 250
before_size=$(size)
before_lines=$(lines)

# the disk filled, page by page
dd if=/dev/zero of="$MNT/filler" bs=4096 count=1024 2>/dev/null
nv_in "$R" run recipes/one.lua
check_rc "on the full disk the run is still refused" 3
check_contains "the audit warning names the full disk" "$ERR" "No space left on device"
check_eq "the partial line was cut back: the log is as it was" "$(size)" "$before_size"
check_eq "it ends with a whole line" "$(tail -c 1 "$LOG" | od -An -c | tr -d ' ')" '\n'
nv audit verify
check_rc "the chain verifies while the disk is full" 0

rm -f "$MNT/filler"
nv_in "$R" run recipes/one.lua
check_rc "once space is freed, the run is refused as before" 3
check_no_match "with no audit warning" "$ERR" "warning: audit"
check_eq "and its line appended" "$(lines)" $((before_lines + 1))
nv audit verify
check_rc "the chain verifies after space came back" 0
check_contains "intact" "$OUT" "intact: $((before_lines + 1)) line(s)"
finish
