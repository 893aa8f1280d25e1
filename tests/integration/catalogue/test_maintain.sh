# navette maintain: a project whose navette.lua lists a maintenance recipe
# of two tasks (one writing an object into a file:// store, one failing).
# --once runs both, the state shows the last run and the next due time, a
# second --once right after runs nothing; time is moved by editing
# tasks.db's next_due (python3's sqlite3, so that navette holds no switch
# that changes its clock): slots missed while "asleep" run once, the
# failing task is retried at its next slot, not before; a changed schedule
# counts from when the last run ended (one that outlasted its interval is
# not due again at once). --plan does
# nothing; every run is an audit line; a second maintain while one runs
# is refused (exit 3); a task is bounded in time like a recipe; the
# foreground loop stops on Ctrl-C; --install/--uninstall write and remove
# a systemd user service and timer (checked with systemd-analyze verify)
# and a launchd plist (checked with plistlib), with stand-in systemctl and
# launchctl so that nothing is enabled on this machine.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

REPO=$(NO_PROJECT_FILE=1 new_repo maint)
STORE=$T/store
mkdir -p "$STORE"
put_file "$REPO" navette.lua <<EOF
return {
  name = "maint",
  profiles = { ["local"] = { storage = "file://$STORE" } },
  maintenance = { "recipes/maintenance/tasks.lua" },
}
EOF
put_file "$REPO" recipes/maintenance/tasks.lua <<'EOF'
local navette = require "navette"
navette.task {
  name = "note", schedule = "every 6h",
  run = function(ctx)
    navette.storage.put_string("notes/note.txt", "slot " .. ctx.slot
      .. " missed " .. ctx.missed .. " last " .. tostring(ctx.last_result))
    return "wrote notes/note.txt"
  end,
}
navette.task {
  name = "broken", schedule = "daily 03:00",
  run = function(ctx)
    error("the server said no")
  end,
}
EOF
put_file "$REPO" recipes/slow.lua <<'EOF'
local navette = require "navette"
navette.task { name = "spin", schedule = "every 6h", run = function(ctx)
  local t0 = os.time()
  while os.time() < t0 + 3 do end
  return "spun"
end }
EOF
put_file "$REPO" recipes/loop.lua <<'EOF'
local navette = require "navette"
navette.task { name = "tick", schedule = "every 1m", run = function(ctx)
  navette.storage.put_string("loop/tick.txt", ctx.slot)
end }
EOF
put_file "$REPO" recipes/bad.lua <<'EOF'
local navette = require "navette"

navette.task { name = "x", schedule = "every 6", run = function() end }
EOF
commit_all "$REPO" >/dev/null

DB=$NAVETTE_HOME/tasks.db
# state NAME EXPR: EXPR (python, over d: the task's --list --json entry)
state() {
	(cd "$REPO" && "$NAVETTE" maintain --list --json 2>/dev/null) |
		json "[t for t in d['tasks'] if t['name'] == '$1'][0]$2" 2>&1
}
# due_in_past NAME SECONDS: the task's next due time SECONDS ago
due_in_past() {
	python3 - "$DB" "$1" "$2" <<'PY'
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1])
n = db.execute("UPDATE tasks SET next_due = ? WHERE name = ?",
               (time.time() - float(sys.argv[3]), sys.argv[2])).rowcount
db.commit()
sys.exit(0 if n == 1 else 1)
PY
}
# seconds_until ISO: seconds from now to an ISO-8601 UTC time
seconds_until() {
	python3 -c '
import datetime, sys, time
t = datetime.datetime.strptime(sys.argv[1], "%Y-%m-%dT%H:%M:%S.%fZ")
print(int(t.replace(tzinfo=datetime.timezone.utc).timestamp() - time.time()))' "$1"
}
audit_count() {
	"$NAVETTE" audit show 2>/dev/null | grep -c " task.run .* $1 " || true
}

# ---- before any run -----------------------------------------------------------

nv_in "$REPO" maintain --list
check_rc "--list before any run exits 0" 0
check_match "--list shows each task and its schedule" "$OUT" \
	'^note +every 6h +- +- +now +recipes/maintenance/tasks.lua'
check_match "... the failing one too" "$OUT" '^broken +daily 03:00 '
check_absent "--list writes no state" "$DB"

# ---- the first --once runs both -------------------------------------------------

nv_in "$REPO" maintain --once
check_rc "--once with a failing task exits 1" 1
check_match "--once ran note" "$OUT" '^task note \(recipes/maintenance/tasks.lua\): ok'
check_match "... and reported broken's failure" "$OUT" '^task broken .*: failed'
check_contains "... with its message and line" "$OUT" \
	"recipes/maintenance/tasks.lua:13: the server said no"
check_eq "note wrote its object into the store" \
	"$(sed 's/slot [^ ]* /slot S /' "$STORE/notes/note.txt" 2>&1)" \
	"slot S missed 1 last nil"
NOTE_SHA=$(sha256 "$STORE/notes/note.txt")
check_eq "the state: note ok, 1 run" "$(state note '["result"]')/$(state note '["runs"]')" "ok/1"
check_eq "the state: broken failed, 1 failure" \
	"$(state broken '["result"]')/$(state broken '["failures"]')" "failed/1"
check_contains "the state keeps broken's message" "$(state broken '["message"]')" \
	"the server said no"
check_ne "the state has note's last run" "$(state note '["last_run"]')" null
left=$(seconds_until "$(state note '["next_due"]')")
check_true "note is next due in about 6 h ($left s)" \
	test "$left" -gt 21000 -a "$left" -le 21600
left=$(seconds_until "$(state broken '["next_due"]')")
check_true "broken is retried at its next slot, within a day ($left s)" \
	test "$left" -gt 0 -a "$left" -le 86400
check_eq "tasks.db is WAL, like jobs.db" \
	"$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("PRAGMA journal_mode").fetchone()[0])' "$DB")" wal
check_eq "the audit log has a task.run line per run (ok)" "$(audit_count ok)" 1
check_eq "... and (failed)" "$(audit_count failed)" 1
check_match "... naming the recipe and the task" "$("$NAVETTE" audit show 2>&1)" \
	'task\.run +failed +recipes/maintenance/tasks\.lua:broken'

# ---- right after: nothing is due -------------------------------------------------

nv_in "$REPO" maintain --once
check_rc "a second --once right after exits 0" 0
check_match "... and runs nothing" "$OUT" '^nothing due \(2 tasks\)$'
check_eq "... the object is unchanged" "$(sha256 "$STORE/notes/note.txt")" "$NOTE_SHA"
check_eq "... note still ran once" "$(state note '["runs"]')" 1
check_eq "... the failed task is not retried at once" "$(state broken '["failures"]')" 1

# ---- time moved: 20 h asleep -> one run for the latest of 4 slots ---------------

due_in_past note 72000
nv_in "$REPO" maintain --once --json
check_rc "after 20 h asleep, --once exits 0 (broken not due yet)" 0
check_eq "--json: note ran, broken did not" \
	"$(printf '%s' "$OUT" | json '[(t["name"], t["ran"]) for t in d["tasks"]]')" \
	'[["note", true], ["broken", false]]'
check_eq "--json: the 4 missed slots were caught up by one run" \
	"$(printf '%s' "$OUT" | json '[t["missed"] for t in d["tasks"] if t["ran"]]')" '[4]'
check_eq "note ran once more, not four times" "$(state note '["runs"]')" 2
check_match "the object says so" "$(cat "$STORE/notes/note.txt")" \
	'^slot [^ ]+ missed 4 last ok$'
left=$(seconds_until "$(state note '["next_due"]')")
check_true "... and note is next due at its next slot, within 6 h ($left s)" \
	test "$left" -gt 0 -a "$left" -le 21600
nv_in "$REPO" maintain --once
check_match "then nothing is due again" "$OUT" '^nothing due'

# ---- a run that outlasted its interval, then the schedule changed ------------
# note's last run, as the state says: for the slot 7 h ago, and it took
# 6 h 54 min (every 6h); its schedule in the state is another one, so the
# next due time is computed again: from when that run ended, the next slot
# is 5 h away, not the one an hour ago that fell during the run
task_row() { # NAME [SQL SET...]: prints or sets the row's timing columns
	python3 - "$DB" "$@" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
cols = "schedule, last_run, last_slot, duration, next_due"
if len(sys.argv) == 3:
    print(repr(db.execute("SELECT " + cols + " FROM tasks WHERE name = ?",
                          (sys.argv[2],)).fetchone()))
else:
    v = eval(sys.argv[3])
    n = db.execute("UPDATE tasks SET schedule = ?, last_run = ?, "
                   "last_slot = ?, duration = ?, next_due = ? WHERE name = ?",
                   tuple(v) + (sys.argv[2],)).rowcount
    db.commit()
    sys.exit(0 if n == 1 else 1)
PY
}
NOTE_ROW=$(task_row note)
RUNS=$(state note '["runs"]')
check_true "note's state: a run of 6 h 54 min for the slot 7 h ago, another schedule" \
	task_row note "$(python3 -c 'import time; n = time.time(); print(repr(("every 5h", n - 25200, n - 25200, 24840.0, n + 3600)))')"
left=$(seconds_until "$(state note '["next_due"]')")
check_true "note is next due at the first slot after the run ended, in about 5 h ($left s)" \
	test "$left" -gt 17000 -a "$left" -le 18000
nv_in "$REPO" maintain --once
check_no_match "--once does not run it again at once" "$OUT" '^task note'
check_eq "... its runs are unchanged" "$(state note '["runs"]')" "$RUNS"
check_true "note's state as it was" task_row note "$NOTE_ROW"

# ---- the failing task at its next slot: retried, reported again ----------------

due_in_past broken 60
nv_in "$REPO" maintain --once
check_rc "broken retried at its slot: exit 1 again" 1
check_match "... reported" "$OUT" '^task broken .*: failed'
check_no_match "... note was not due" "$OUT" '^task note'
check_eq "... its failures count 2" "$(state broken '["failures"]')" 2
check_eq "the audit log: 2 ok, 2 failed task.run lines" \
	"$(audit_count ok)/$(audit_count failed)" "2/2"

# ---- --plan does nothing ----------------------------------------------------------

due_in_past note 60
before_state=$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT name, runs, next_due, last_run FROM tasks ORDER BY name").fetchall())' "$DB")
before_store=$(cd "$STORE" && find . -type f | LC_ALL=C sort | xargs shasum -a 256)
before_audit=$("$NAVETTE" audit show 2>/dev/null | wc -l)
nv_in "$REPO" maintain --plan
check_rc "--plan exits 0" 0
check_match "--plan says what note would do" "$OUT" 'storage put: file://.*/notes/note\.txt'
check_contains "... and that nothing was done" "$OUT" "nothing was done"
check_eq "--plan left the store unchanged" \
	"$(cd "$STORE" && find . -type f | LC_ALL=C sort | xargs shasum -a 256)" "$before_store"
check_eq "--plan wrote no state" \
	"$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT name, runs, next_due, last_run FROM tasks ORDER BY name").fetchall())' "$DB")" \
	"$before_state"
check_eq "--plan wrote no audit line" "$("$NAVETTE" audit show 2>/dev/null | wc -l)" "$before_audit"
nv_in "$REPO" maintain --plan --json
check_eq "--plan --json: the action recorded" \
	"$(printf '%s' "$OUT" | json '[[a["primitive"], a["action"]] for t in d["tasks"] if t["ran"] for a in t["actions"]]')" \
	'[["storage", "put"]]'
nv_in "$REPO" maintain --once
check_match "note, still due after --plan, runs" "$OUT" '^task note .*: ok'

# ---- recipes: given on the command line, refused when not committed --------------

nv_in "$REPO" maintain --once recipes/bad.lua
check_rc "a malformed schedule is a recipe error (exit 2)" 2
check_match "... naming the line and the key" "$ERR" \
	'bad\.lua:3: navette\.task: .schedule. = "every 6": .*needs a unit'
put_file "$REPO" recipes/new.lua <<'EOF'
local navette = require "navette"
navette.task { name = "n", schedule = "every 1h", run = function() end }
EOF
nv_in "$REPO" maintain --once recipes/new.lua
check_rc "a recipe the commit lacks is refused (exit 3)" 3
check_contains "... saying why" "$ERR" "not all in commit"
rm -f "$REPO/recipes/new.lua"
nv_in "$T" maintain --once
check_rc "no recipe and no project file: a usage error" 2

# ---- one maintain at a time ------------------------------------------------------

(cd "$REPO" && exec "$NAVETTE" maintain --once recipes/slow.lua) \
	>"$T/slow.out" 2>&1 &
SLOW=$!
held() { [ -e "$NAVETTE_HOME/maintain.lock" ] && ! lock_is_free "$NAVETTE_HOME/maintain.lock"; }
if wait_for 20 held; then
	nv_in "$REPO" maintain --once
	check_rc "a second maintain while one runs is refused (exit 3)" 3
	check_contains "... naming the one that runs" "$ERR" \
		"another \`navette maintain\` (pid $SLOW) is running"
	nv_in "$REPO" maintain --list
	check_rc "--list still reads the state meanwhile" 0
else
	fail "the slow maintain took the lock ($(cat "$T/slow.out"))"
fi
wait "$SLOW"
check_eq "the first one went on and succeeded" "$?" 0
check_contains "... running the slow task" "$(cat "$T/slow.out")" "spun"
check_true "the lock is free again" lock_is_free "$NAVETTE_HOME/maintain.lock"

# ---- a task is bounded in time like a recipe ---------------------------------------

due_in_past spin 60
NAVETTE_RECIPE_TIMEOUT=1 nv_in "$REPO" maintain --once recipes/slow.lua
check_rc "a task past the recipe time bound fails (exit 1)" 1
check_match "... said so" "$OUT" 'task spin .*: failed'
check_eq "... and recorded failed" "$(cd "$REPO" && "$NAVETTE" maintain --list \
	--json recipes/slow.lua | json '[t["result"] for t in d["tasks"]]')" '["failed"]'

# ---- the foreground loop ------------------------------------------------------------

(cd "$REPO" && exec "$NAVETTE" maintain recipes/loop.lua) >"$T/loop.out" 2>&1 &
LOOP=$!
if wait_for 20 test -f "$STORE/loop/tick.txt"; then
	pass "without --once, maintain runs what is due and stays"
else
	fail "without --once, maintain runs what is due ($(cat "$T/loop.out"))"
fi
kill -0 "$LOOP" 2>/dev/null
check_eq "... still running" "$?" 0
kill -INT "$LOOP"
wait "$LOOP"
check_eq "Ctrl-C stops it (exit 130)" "$?" 130
check_true "... and frees the lock" lock_is_free "$NAVETTE_HOME/maintain.lock"

# ---- --install / --uninstall: systemd (stand-in systemctl) --------------------------

NAVETTE_REAL=$(cd "$(dirname "$NAVETTE")" && pwd -P)/$(basename "$NAVETTE")
mkdir -p "$T/bin"
cat >"$T/bin/systemctl" <<EOF
#!/bin/sh
echo "\$*" >>"$T/systemctl.log"
[ -f "$T/systemctl.works" ] && exit 0
echo "Failed to connect to bus: No medium found" >&2
exit 1
EOF
cat >"$T/bin/launchctl" <<EOF
#!/bin/sh
echo "\$*" >>"$T/launchctl.log"
exit 0
EOF
chmod +x "$T/bin/systemctl" "$T/bin/launchctl"
export PATH="$T/bin:$PATH"
UNITS=$XDG_CONFIG_HOME/systemd/user
# a checkout's unit: the project's name and 8 hex digits of the sha256 of
# its folder's real path (another clone of "maint" gets other units)
KEY=maint-$(printf '%s' "$(cd "$REPO" && pwd -P)" | shasum -a 256 | cut -c1-8)
SERVICE=$UNITS/navette-maintain-$KEY.service
TIMER=$UNITS/navette-maintain-$KEY.timer

NAVETTE_SERVICE_MANAGER=systemd nv_in "$REPO" maintain --install
check_rc "--install (systemd) exits 0" 0
check_file "... wrote the service" "$SERVICE"
check_file "... and the timer" "$TIMER"
check_contains "systemctl --user unusable: it says how to enable it" "$OUT" \
	"systemctl --user enable --now navette-maintain-$KEY.timer"
check_contains "... having tried" "$(cat "$T/systemctl.log" 2>&1)" "--user daemon-reload"
check_eq "the service: a oneshot maintain --once of the project" \
	"$(grep -E '^(Type|WorkingDirectory|Environment|ExecStart)=' "$SERVICE")" \
	"Type=oneshot
WorkingDirectory=$REPO
Environment=\"NAVETTE_HOME=$NAVETTE_HOME\"
ExecStart=\"$NAVETTE_REAL\" \"maintain\" \"--once\""
check_eq "the timer: the daily slot, the shortest interval, persistent" \
	"$(grep -E '^(OnCalendar|OnActiveSec|OnUnitActiveSec|Persistent|Unit)=' "$TIMER")" \
	"OnCalendar=*-*-* 03:00:00
OnCalendar=*-*-* *:00:00
OnActiveSec=1min
OnUnitActiveSec=6h
Persistent=true
Unit=navette-maintain-$KEY.service"
if command -v systemd-analyze >/dev/null 2>&1; then
	verify=$(cd "$UNITS" && systemd-analyze verify --man=no \
		navette-maintain-$KEY.service navette-maintain-$KEY.timer 2>&1)
	check_eq "systemd-analyze verify: the units are clean" "$?:$verify" "0:"
	sed -n 's/^OnCalendar=//p' "$TIMER" >"$T/calendars"
	while read -r spec; do
		systemd-analyze calendar "$spec" >/dev/null 2>&1
		check_eq "systemd-analyze calendar: '$spec' parses" "$?" 0
	done <"$T/calendars"
	# (the check can fail: a unit it refuses is reported)
	sed 's/^Type=oneshot/Type=oneshot-please/' "$SERVICE" >"$T/broken.service"
	bad=$(cd "$T" && systemd-analyze verify --man=no broken.service 2>&1)
	check_contains "... and it reports a unit it refuses" "$bad" "service type"
else
	skip "systemd-analyze verify" "systemd-analyze is not installed"
fi

touch "$T/systemctl.works"
: >"$T/systemctl.log"
NAVETTE_SERVICE_MANAGER=systemd nv_in "$REPO" maintain --install
check_match "with systemctl --user working, --install enables the timer" "$OUT" \
	"^loaded: systemd user timer navette-maintain-$KEY\\.timer"
check_eq "... through daemon-reload and enable --now" "$(cat "$T/systemctl.log")" \
	"--user daemon-reload
--user enable --now navette-maintain-$KEY.timer"
: >"$T/systemctl.log"
NAVETTE_SERVICE_MANAGER=systemd nv_in "$REPO" maintain --uninstall
check_rc "--uninstall (systemd) exits 0" 0
check_absent "... removed the service" "$SERVICE"
check_absent "... and the timer" "$TIMER"
check_contains "... after disabling it" "$(cat "$T/systemctl.log")" \
	"--user disable --now navette-maintain-$KEY.timer"
check_eq "... and nothing else in that folder was touched" "$(ls -A "$UNITS")" ""
printf '[Service]\nExecStart=/bin/true\n' >"$SERVICE"
NAVETTE_SERVICE_MANAGER=systemd nv_in "$REPO" maintain --install
check_rc "--install refuses to replace a unit it did not write (exit 3)" 3
NAVETTE_SERVICE_MANAGER=systemd nv_in "$REPO" maintain --uninstall
check_rc "--uninstall leaves a unit it did not write (exit 3)" 3
check_file "... in place" "$SERVICE"
rm -f "$SERVICE"

# ---- --install / --uninstall: launchd (the macOS file, checked here) -------------

PLIST=$HOME/Library/LaunchAgents/org.navette.maintain.$KEY.plist
NAVETTE_SERVICE_MANAGER=launchd nv_in "$REPO" maintain --install
check_rc "--install (launchd) exits 0" 0
check_file "... wrote the agent's plist" "$PLIST"
check_eq "the plist: its keys and values (plistlib)" "$(python3 - "$PLIST" <<'PY'
import plistlib, sys
p = plistlib.load(open(sys.argv[1], "rb"))
print(sorted(p))
print(p["Label"])
print(p["ProgramArguments"][1:])
print(p["ProgramArguments"][0])
print(p["WorkingDirectory"])
print(p["EnvironmentVariables"])
print(p["StartCalendarInterval"], p["StartInterval"], p["RunAtLoad"])
print(p["StandardOutPath"] == p["StandardErrorPath"], p["StandardOutPath"])
PY
)" "['EnvironmentVariables', 'Label', 'ProgramArguments', 'RunAtLoad', 'StandardErrorPath', 'StandardOutPath', 'StartCalendarInterval', 'StartInterval', 'WorkingDirectory']
org.navette.maintain.$KEY
['maintain', '--once']
$NAVETTE_REAL
$REPO
{'NAVETTE_HOME': '$NAVETTE_HOME'}
[{'Hour': 3, 'Minute': 0}] 21600 True
True $NAVETTE_HOME/maintain.log"
check_contains "... loaded with launchctl bootstrap gui/UID" "$(cat "$T/launchctl.log")" \
	"bootstrap gui/$(id -u) $PLIST"
NAVETTE_SERVICE_MANAGER=launchd nv_in "$REPO" maintain --uninstall
check_rc "--uninstall (launchd) exits 0" 0
check_absent "... removed the plist" "$PLIST"
check_contains "... after booting it out" "$(cat "$T/launchctl.log")" \
	"bootout gui/$(id -u)/org.navette.maintain.$KEY"
NAVETTE_SERVICE_MANAGER=launchd nv_in "$REPO" maintain --uninstall
check_match "a second --uninstall has nothing to remove" "$OUT" '^nothing to remove'
check_eq "install and uninstall are audited" \
	"$("$NAVETTE" audit show 2>/dev/null | grep -c ' maintain\.\(un\)\{0,1\}install ')" 5

# ---- the project file acted on is the commit's -----------------------------------
# (it names the endpoints and the credentials' paths the bodies act on; a
# branch checked out to read it, or an edit, must not be run unattended)
cp "$REPO/navette.lua" "$T/navette.lua.committed"
printf '%s\n' '-- an edit not committed' >>"$REPO/navette.lua"
due_in_past note 60
nv_in "$REPO" maintain --once
check_rc "maintain --once with the project file edited: refused (exit 3)" 3
check_match "it names the file and says why" "$ERR" \
	"the project file $REPO/navette.lua is not as committed"
check_match "and what to do" "$ERR" "commit it"
cp "$T/navette.lua.committed" "$REPO/navette.lua"
nv_in "$REPO" maintain --once
check_rc "as committed again, it runs" 0

# ---- another checkout of the same project has its own state and units -------
CLONE=$T/clone-of-maint
git clone -q "$REPO" "$CLONE"
# a clone is a checkout of its own: its user trusts it there first
git clone -q "$REPO" "$T/clone-untrusted"
nv_in "$T/clone-untrusted" maintain --once
check_rc "a clone not trusted yet: its tasks fail" 1
check_match "the task says to trust the clone" "$OUT" "navette trust"
"$NAVETTE" trust "$CLONE" >/dev/null
nv_in "$REPO" maintain --once --task note
check_rc "(the first checkout's note runs now)" 0
nv_in "$CLONE" maintain --once
check_match "a clone's tasks are due there though the first checkout ran them" \
	"$OUT" "^task note .*: ok"
CLONE_KEY=maint-$(printf '%s' "$(cd "$CLONE" && pwd -P)" | shasum -a 256 | cut -c1-8)
check_eq "its --json names the project and its own checkout" \
	"$(cd "$CLONE" && "$NAVETTE" maintain --list --json 2>/dev/null |
		json "sorted(set((t['project'], t['checkout']) for t in d['tasks']))")" \
	"[[\"maint\", \"$CLONE_KEY\"]]"
check_ne "another key than the first checkout's" "$CLONE_KEY" "$KEY"
NAVETTE_SERVICE_MANAGER=systemd nv_in "$CLONE" maintain --install
check_file "--install in the clone writes its own unit" \
	"$UNITS/navette-maintain-$CLONE_KEY.timer"
NAVETTE_SERVICE_MANAGER=systemd nv_in "$CLONE" maintain --uninstall
check_absent "and --uninstall there removes it" \
	"$UNITS/navette-maintain-$CLONE_KEY.timer"
nv_in "$REPO" maintain --once --task nope
check_rc "--task with an unknown name: usage (exit 2)" 2
check_match "listing the tasks" "$ERR" "tasks: note, broken"
nv_in "$REPO" maintain --task note
check_rc "--task without --once or --plan: usage (exit 2)" 2

# ---- navette's own clone lists the catalogue's tasks -------------------------

nv_in "$NAVETTE_SOURCE" maintain --list
check_rc "maintain --list in navette's own clone: exits 0" 0
for task in archive-logs rebuild-image retest-after-update rotate-storage-key; do
	check_match "maintain --list in navette's clone: $task" "$OUT" "^$task "
done

finish
