#!/usr/bin/env bash
# A full disk under NAVETTE_HOME (and the local store on it): a small
# tmpfs, mounted for the test (root only; otherwise the test says it is
# skipped). A job whose log fills the disk fails with a clear reason at the
# phase it reached; a run on an already full disk is refused with what to
# check; the job database and the audit chain stay intact (`navette jobs`,
# `navette audit verify`) and work again once space is freed.
. "$(dirname "$0")/../integration/lib.sh"
set -o pipefail

MNT=$T/disk
mkdir -p "$MNT"
if [ "$(id -u)" != 0 ] || ! mount -t tmpfs -o size=3m tmpfs "$MNT" 2>/dev/null; then
	skip "disk-full checks" "a full disk needs a small tmpfs, which only root can mount here"
	finish
fi
_unmount() { umount "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null; }
trap '_unmount; _cleanup' EXIT
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

nv_in "$R" run recipes/big.lua --wait
check_rc "the job that fills the disk fails (exit 1)" 1
check_match "it says where it stopped" "$OUT" '^failed at [a-z_]+: '
check_match "and why: the full disk" "$OUT$ERR" 'No space left on device|disk of NAVETTE_HOME was full'
check_contains "and what to check" "$OUT$ERR" "free space"
ID=$(submitted_id)
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
finish
