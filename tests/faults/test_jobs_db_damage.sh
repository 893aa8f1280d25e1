#!/usr/bin/env bash
# Damage to jobs.db is named, with the recovery steps, by every command
# (issue 27, F5), and a lost jobs.db is never taken for an empty queue
# (F6). Page by page, every page of a real jobs.db is overwritten with
# random bytes, one at a time, and `jobs`, `status`, `logs` and `run` are
# each run against it: each either answers as on the intact file, or
# names the damage with the recovery hint; never a wrong answer, and
# never a run that exits 0 into a damaged file.
set -eu -o pipefail
. "$(dirname "$0")/../integration/lib.sh"
set +e

R=$(new_repo dmg)
cat >"$R/navette.lua" <<LUA
return { name = "dmg", default_profile = "here", profiles = {
  here = { backend = "local", storage = "file://$T/store/",
           require_pushed = false } } }
LUA
put_file "$R" recipes/many.lua <<'LUA'
local navette = require "navette"
for i = 1, 8 do
  navette.job { name = "job" .. i, command = { "sh", "-c",
    "echo log of job " .. i .. "; echo " .. i .. " >\"$NAVETTE_OUTPUTS/n.txt\"" } }
end
LUA
put_file "$R" recipes/one.lua <<'LUA'
local navette = require "navette"
navette.job { name = "one", command = { "true" } }
LUA
commit_all "$R" >/dev/null

agent_gone() {
	local pid
	if ! lock_is_free "$NAVETTE_HOME/agent.lock"; then
		pid=$(tr -cd '0-9' <"$NAVETTE_HOME/agent.lock" | head -c 12)
		[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
		wait_for 10 lock_is_free "$NAVETTE_HOME/agent.lock"
	fi
	return 0
}
db_ok() {
	python3 - "$NAVETTE_HOME/jobs.db" <<'PY'
import sqlite3, sys
try:
    c = sqlite3.connect(sys.argv[1])
    ok = c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
except sqlite3.Error:
    ok = False
sys.exit(0 if ok else 1)
PY
}

nv_in "$R" run recipes/many.lua --wait
check_rc "eight jobs run" 0
ID=$(printf '%s\n' "$OUT" | sed -n 's/^job job3 submitted: \([^ ]*\)$/\1/p')
check_ne "the id of one of them" "$ID" ""
agent_gone
# every write in the main file (the last connection's close checkpoints)
python3 -c 'import sqlite3,sys; c = sqlite3.connect(sys.argv[1]); c.execute("PRAGMA wal_checkpoint(TRUNCATE)"); c.close()' \
	"$NAVETTE_HOME/jobs.db"
check_absent "no write-ahead log left" "$NAVETTE_HOME/jobs.db-wal"
PRISTINE=$T/pristine
cp -R "$NAVETTE_HOME" "$PRISTINE"
restore() {
	agent_gone
	rm -rf "$NAVETTE_HOME"
	cp -R "$PRISTINE" "$NAVETTE_HOME"
}
# (a read changes nothing but the database: only it is put back)
restore_db() {
	rm -f "$NAVETTE_HOME/jobs.db-wal" "$NAVETTE_HOME/jobs.db-shm"
	cp "$PRISTINE/jobs.db" "$NAVETTE_HOME/jobs.db"
}

# what each read says on the intact file
nv jobs --json
REF_JOBS=$OUT
nv status "$ID" --json
REF_STATUS=$OUT
nv logs "$ID"
REF_LOGS=$OUT
check_eq "the intact file: logs reads" "$REF_LOGS" "log of job 3"

# ---- F5: every page, one at a time
PAGES=$(python3 -c 'import os,sys; print(os.path.getsize(sys.argv[1]) // 4096)' \
	"$PRISTINE/jobs.db")
tries=0 named=0 held=0 wrong=0
for p in $(seq 0 $((PAGES - 1))); do
	for cmd in jobs status logs run; do
		restore_db
		python3 - "$NAVETTE_HOME/jobs.db" "$p" <<'PY'
import random, sys
path, page = sys.argv[1], int(sys.argv[2])
with open(path, "r+b") as f:
    f.seek(page * 4096)
    f.write(random.Random(page).randbytes(4096))
PY
		case $cmd in
		jobs) nv jobs --json; ref=$REF_JOBS ;;
		status) nv status "$ID" --json; ref=$REF_STATUS ;;
		logs) nv logs "$ID"; ref=$REF_LOGS ;;
		run) nv_in "$R" run recipes/one.lua; ref= ;;
		esac
		tries=$((tries + 1))
		# (grep reads a here-string: under pipefail, a printf cut off by
		# grep -q would read as no match)
		if grep -q "jobs.db is damaged" <<<"$ERR" &&
			grep -q "jobs.db.damaged" <<<"$ERR"; then
			named=$((named + 1))
		elif [ "$RC" = 0 ] && { [ "$cmd" = run ] && agent_gone && db_ok ||
			[ "$cmd" != run ] && [ "$OUT" = "$ref" ]; }; then
			held=$((held + 1))
		else
			wrong=$((wrong + 1))
			fail "page $p, $cmd: neither the intact answer nor the damage named"
		fi
		# (a run adds a job, and its folder: the whole home put back)
		if [ "$cmd" = run ] && [ "$RC" = 0 ]; then restore; fi
	done
done
agent_gone
check_eq "every damaged page: the intact answer or the damage named" "$wrong" 0
check_true "some damage was named" [ "$named" -gt 0 ]
echo "figures: $PAGES pages, $tries tries (each page x jobs, status, logs, run): $named named the damage, $held held (answered as on the intact file), $wrong wrong"

# ---- F6: a lost jobs.db is not an empty queue
lost() {
	local what=$1
	for cmd in "jobs" "status $ID" "logs $ID"; do
		# shellcheck disable=SC2086
		nv $cmd
		check_rc "$what: $cmd exits 4" 4
		check_contains "$what: $cmd says the jobs were lost" "$ERR" \
			"$NAVETTE_HOME/jobs holds 8 job folders"
		check_contains "$what: $cmd says how to recover" "$ERR" "jobs.lost"
	done
	nv_in "$R" run recipes/one.lua
	check_rc "$what: run exits 4" 4
	check_contains "$what: run says the jobs were lost" "$ERR" "not an empty queue"
}
restore
rm -f "$NAVETTE_HOME/jobs.db"
lost "jobs.db deleted"
restore
: >"$NAVETTE_HOME/jobs.db"
lost "jobs.db emptied"
# the jobs in the write-ahead log alone (never checkpointed), then the
# log emptied
restore
python3 - "$NAVETTE_HOME/jobs.db" <<'PY'
import os, sqlite3, sys
path = sys.argv[1]
os.rename(path, path + ".full")
c = sqlite3.connect(path, isolation_level=None)
c.execute("PRAGMA journal_mode=WAL")
c.execute("ATTACH ? AS full", (path + ".full",))
for (sql,) in c.execute("SELECT sql FROM full.sqlite_master WHERE sql IS NOT NULL"
                          " ORDER BY type = 'index'").fetchall():
    c.execute(sql)
c.execute("PRAGMA wal_autocheckpoint=0")
c.execute("BEGIN")
c.execute("INSERT INTO jobs SELECT * FROM full.jobs")
c.execute("INSERT INTO phases SELECT * FROM full.phases")
c.execute("COMMIT")
c.execute("DETACH full")
os.remove(path + ".full")
os._exit(0)  # no close: the jobs stay in the write-ahead log
PY
check_true "the jobs are in the write-ahead log" [ -s "$NAVETTE_HOME/jobs.db-wal" ]
: >"$NAVETTE_HOME/jobs.db-wal"
rm -f "$NAVETTE_HOME/jobs.db-shm"
lost "the write-ahead log emptied"
# the recovery steps the hint gives
mv "$NAVETTE_HOME/jobs" "$NAVETTE_HOME/jobs.lost"
nv jobs
check_rc "the folders moved aside: an empty queue" 0
agent_gone
finish
