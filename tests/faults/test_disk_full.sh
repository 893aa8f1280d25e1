#!/usr/bin/env bash
# A full disk under NAVETTE_HOME (and the local store on it): a small
# tmpfs, mounted for the test (root only; otherwise the test says it is
# skipped). A job whose log fills the disk fails with a clear reason at the
# phase it reached; a run on an already full disk is refused with what to
# check; the job database and the audit chain stay intact (`navette jobs`,
# `navette audit verify`) and work again once space is freed.
set -eu -o pipefail
. "$(dirname "$0")/../integration/lib.sh"
set +e

MNT=$T/disk
mkdir -p "$MNT"
if [ "$(id -u)" != 0 ] || ! mount -t tmpfs -o size=3m tmpfs "$MNT" 2>/dev/null; then
	skip "disk-full checks" "a full disk needs a small tmpfs, which only root can mount here"
	finish
fi
_unmount() { umount "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null; }
# (the test's status passes through the unmount to _cleanup, which exits
# with it: a failed check is never an exit 0)
trap 'st=$?; _unmount; (exit "$st"); _cleanup' EXIT
export NAVETTE_HOME=$MNT/home
export NAVETTE_AGENT_IDLE=1

R=$(new_repo full)
cat >"$R/navette.lua" <<LUA
return { name = "full", default_profile = "here", profiles = {
  here = { backend = "local", storage = "file://$MNT/store/",
           require_pushed = false } } }
LUA
put_file "$R" recipes/big.lua <<'LUA'
local navette = require "navette"
-- about 4 MB of log on a 3 MB disk
navette.job { name = "big", command = { "sh", "-c", [[
i=0
while [ $i -lt 80000 ]; do echo "line $i of a log long enough to fill the disk"; i=$((i+1)); done
echo done >"$NAVETTE_OUTPUTS/out.txt"]] } }
LUA
commit_all "$R" >/dev/null

# a wait ends, whatever the disk: `run --wait` under a bound (perl's alarm)
REAL_NAVETTE=$NAVETTE
BOUNDED=$T/bounded-navette
printf '#!/bin/sh\nexec perl -e %s 150 "%s" "$@"\n' \
	"'alarm shift; exec @ARGV or die'" "$REAL_NAVETTE" >"$BOUNDED"
chmod +x "$BOUNDED"

# log_whole FILE: the log's lines are "line 0 ..." to "line N ..." with no
# gap, and it holds at least MIN bytes (prints what is wrong)
log_whole() {
	python3 - "$1" "$2" <<'PY' 2>&1
import re, sys
path, least = sys.argv[1], int(sys.argv[2])
data = open(path, "rb").read()
# (the last line may be cut where the disk filled)
lines = [l for l in data.split(b"\n")[:-1] if l.startswith(b"line ")]
nums = [int(m.group(1)) if m else -1 for m in
        (re.fullmatch(rb"line (\d+) of a log long enough to fill the disk", l)
         for l in lines)]
if len(data) < least:
    print("%d bytes, fewer than %d" % (len(data), least))
elif nums != list(range(len(nums))):
    print("lines missing or cut in the middle")
PY
}

NAVETTE=$BOUNDED nv_in "$R" run recipes/big.lua --wait
check_rc "the job that fills the disk fails (exit 1)" 1
check_match "it says where it stopped" "$OUT" '^failed at [a-z_]+: '
check_match "and why: the full disk" "$OUT$ERR" 'No space left on device|disk of NAVETTE_HOME was full'
check_contains "and what to check" "$OUT$ERR" "free space"
ID=$(submitted_id)
# the log in the job's folder is what the job could write, whole: never
# emptied or shortened by the rewrite that masks it once more
check_eq "the job folder's log is whole (lines 0..N, over 1 MB)" \
	"$(log_whole "$NAVETTE_HOME/jobs/$ID/log" 1000000)" ""
# (the final state was recorded in the room navette keeps aside: without
# it the queue could not take it, and the wait followed the job forever)
check_contains "the reserve made room for the final state" \
	"$(cat "$NAVETTE_HOME/agent.log")" "navette's reserve freed to record the final state"

# the disk stays full: the next run is refused, naming the cause
dd if=/dev/zero of="$MNT/filler" bs=4096 count=1024 2>/dev/null
nv_in "$R" run recipes/big.lua
check_ne "a run on a full disk fails" "$RC" 0
check_contains "naming the home" "$ERR" "NAVETTE_HOME"
check_contains "and that it may be full" "$ERR" "not full"
nv audit verify
check_rc "the audit chain verifies while the disk is full" 0

rm -f "$MNT/filler"
nv jobs --json
check_rc "the job database reads once space is freed" 0
check_eq "it holds the one job, failed" \
	"$(printf '%s' "$OUT" | json '[j["id"] + " " + j["state"] for j in d]')" \
	"[\"$ID failed\"]"
nv audit verify
check_rc "the audit chain verifies once space is freed" 0
check_contains "and lists the submission and the refusal" "$OUT" "intact"

# ---- a log cut by a full disk, then the disk freed before the job ends
# exit 0: the job fails, saying so, and its published log says truncated
# (it once reported succeeded, with 0.66 of 2.5 MB of log, truncated:
# false)
MNT2=$T/disk2
mkdir -p "$MNT2"
if ! mount -t tmpfs -o size=3m tmpfs "$MNT2"; then
	fail "a second tmpfs mounts"
	finish
fi
trap 'st=$?; umount "$MNT2" 2>/dev/null || umount -l "$MNT2" 2>/dev/null
	_unmount; (exit "$st"); _cleanup' EXIT
export NAVETTE_HOME=$MNT2/home
R2=$(new_repo freed)
cat >"$R2/navette.lua" <<LUA
return { name = "freed", default_profile = "here", profiles = {
  here = { backend = "local", storage = "file://$MNT2/store/",
           require_pushed = false } } }
LUA
put_file "$R2" recipes/freed.lua <<'LUA'
local navette = require "navette"
-- 2 MB held while about 2.5 MB of log is written, then let go
navette.job { name = "freed", command = { "sh", "-c", [[
dd if=/dev/zero of="$NAVETTE_OUTPUTS/filler" bs=1024 count=2048 2>/dev/null
i=0
while [ $i -lt 50000 ]; do echo "line $i of a log long enough to fill the disk"; i=$((i+1)); done
rm -f "$NAVETTE_OUTPUTS/filler"
echo done >"$NAVETTE_OUTPUTS/out.txt"]] } }
LUA
commit_all "$R2" >/dev/null
NAVETTE=$BOUNDED nv_in "$R2" run recipes/freed.lua --wait
check_rc "a job whose log was cut fails, though it exited 0 (exit 1)" 1
check_contains "it says the log could not be written whole" "$OUT" \
	"the log could not be written whole"
check_contains "naming the disk" "$OUT" "the disk of NAVETTE_HOME was full"
ID2=$(submitted_id)
check_eq "the job folder's log is whole up to where it was cut" \
	"$(log_whole "$NAVETTE_HOME/jobs/$ID2/log" 100000)" ""
nv status "$ID2" --json
REC2=$(printf '%s' "$OUT" | json 'd["record_url"]')
LOG2=$(printf '%s' "$OUT" | json 'd["log_url"]')
check_eq "the run record says the published log is truncated" \
	"$(json 'd["log"]["truncated"]' <"${REC2#file://}")" true
check_eq "and the published log is the kept one, not shortened" \
	"$(sha256 "${LOG2#file://}")" "$(sha256 "$NAVETTE_HOME/jobs/$ID2/log")"
finish
