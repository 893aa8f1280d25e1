#!/usr/bin/env bash
# The temp files a publication leaves in a file:// store when it is killed
# (issue 27, F9) are removed by the next publication to that store, once
# stale: untouched for an hour and no live process of the pid in their
# name. A live publisher's temp file, and a fresh one, stay.
set -eu -o pipefail
. "$(dirname "$0")/../integration/lib.sh"
set +e

R=$(new_repo tmps)
STORE=$T/store
TMPDIR_STORE=$STORE/.navette-store/tmp
cat >"$R/navette.lua" <<LUA
return { name = "tmps", default_profile = "here", profiles = {
  here = { backend = "local", storage = "file://$STORE/",
           require_pushed = false } } }
LUA
put_file "$R" recipes/big.lua <<'LUA'
local navette = require "navette"
-- 400 MB of output: its publication takes long enough to be killed in
-- (reuse = false: each try publishes it anew)
navette.job { name = "big", reuse = false, command = { "sh", "-c",
  "dd if=/dev/zero of=\"$NAVETTE_OUTPUTS/big.bin\" bs=1048576 count=400 2>/dev/null" } }
LUA
commit_all "$R" >/dev/null

TRIES=${NAVETTE_FAULT_ITERATIONS:-3}
left=0 removed=0
for i in $(seq 1 "$TRIES"); do
	nv_in "$R" run recipes/big.lua
	ID=$(submitted_id)
	# the agent, killed as soon as its temp file of the output shows
	if ! wait_for 60 sh -c "ls '$TMPDIR_STORE' 2>/dev/null | grep -q '^put\.'"; then
		fail "try $i: the publication's temp file never showed"
		continue
	fi
	PID=$(tr -cd '0-9' <"$NAVETTE_HOME/agent.lock" | head -c 12)
	kill -9 "$PID"
	wait_for 10 lock_is_free "$NAVETTE_HOME/agent.lock"
	KILLED=$(ls "$TMPDIR_STORE" | grep '^put\.' || true)
	[ -n "$KILLED" ] && left=$((left + 1))
	# made stale (an hour and a minute old); beside it, a live publisher's
	# (this shell's pid) as old, and a fresh one of a gone pid
	python3 - "$TMPDIR_STORE" "$$" <<'PY'
import os, sys, time
d, live = sys.argv[1], sys.argv[2]
old = time.time() - 3660
for n in os.listdir(d):
    if n.startswith("put."):
        os.utime(os.path.join(d, n), (old, old))
for name, when in (("put.%s.1.1" % live, old), ("put.999999.1.1", None)):
    p = os.path.join(d, name)
    open(p, "wb").write(b"x" * 1000)
    if when:
        os.utime(p, (when, when))
PY
	# the next read restarts the agent, which publishes again
	check_state "try $i: the job ends after the kill" "$ID" succeeded 120
	for n in $KILLED; do
		if [ -e "$TMPDIR_STORE/$n" ]; then
			fail "try $i: the killed publication's temp file $n stays"
		else
			removed=$((removed + 1))
		fi
	done
	check_file "try $i: a live publisher's temp file stays" \
		"$TMPDIR_STORE/put.$$.1.1"
	check_file "try $i: a fresh temp file stays" "$TMPDIR_STORE/put.999999.1.1"
	rm -f "$TMPDIR_STORE/put.$$.1.1" "$TMPDIR_STORE/put.999999.1.1"
	nv status "$ID" --json
	check_eq "try $i: the output is whole" \
		"$(printf '%s' "$OUT" | json 'd["outputs"][0]["size"]')" 419430400
done
check_eq "every kill left a temp file, and each was removed" \
	"$left $removed" "$TRIES $TRIES"
echo "figures: $TRIES kills during publication, $left left a temp file, $removed removed by the next publication"
finish
