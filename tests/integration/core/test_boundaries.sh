# The C boundaries a recipe's values cross (issue 11): bytes that C would
# cut short or that JSON cannot carry are refused at validation, naming the
# key and the byte offset, by plan --json and run alike, and whatever JSON
# navette writes parses; numbers C cannot hold are refused, not converted;
# a job id that is not one navette makes never becomes a folder; a damaged
# jobs.db says how to recover.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

no_job_submitted() {
	local list
	list=$("$NAVETTE" jobs --json 2>&1)
	check_eq "$1: nothing submitted" \
		"$(printf '%s' "$list" | json 'len(d)' 2>&1)" 0
}

# parses FILE_OR_TEXT WHAT: python3's json takes it (strict: no NaN)
parses() {
	if printf '%s' "$2" | python3 -c '
import json, sys
def no_const(c): raise ValueError("non-JSON constant " + c)
json.loads(sys.stdin.buffer.read().decode("utf-8"), parse_constant=no_const)
' 2>/dev/null; then
		pass "$1: valid JSON"
	else
		fail "$1: not valid JSON"
	fi
}

R=$(new_repo bytes)
# Each recipe holds one bad byte in one place (Lua escapes in the source,
# so the files themselves are plain text).
put_file "$R" nul_arg.lua <<'EOF'
require("navette").job { name = "nul-arg", command = { "echo", "ab\0cd" } }
EOF
put_file "$R" ff_arg.lua <<'EOF'
require("navette").job { name = "ff-arg", command = { "echo", "abc\xff" } }
EOF
put_file "$R" nul_env.lua <<'EOF'
require("navette").job { name = "nul-env", command = { "true" },
                         env = { GREETING = "x\0y" } }
EOF
put_file "$R" ff_env.lua <<'EOF'
require("navette").job { name = "ff-env", command = { "true" },
                         env = { GREETING = "\xc3\x28" } }
EOF
put_file "$R" ff_output.lua <<'EOF'
require("navette").job { name = "ff-output", command = { "true" },
                         success = { outputs = { "r\xe9sultat.txt" } } }
EOF
put_file "$R" surrogate_arg.lua <<'EOF'
require("navette").job { name = "surrogate", command = { "echo", "\xed\xa0\x80" } }
EOF
put_file "$R" utf8_ok.lua <<'EOF'
require("navette").job { name = "utf8-ok",
                         command = { "sh", "-c", "printf '%s' \"$1\" > \"$NAVETTE_OUTPUTS/out.txt\"", "x", "héllo ✓ 日本" },
                         env = { GREETING = "grüß" },
                         success = { outputs = { "out.txt" } } }
EOF
put_file "$R" huge_log.lua <<'EOF'
require("navette").job { name = "huge-log", command = { "true" },
                         logs = { max_bytes = 2^63 } }
EOF
put_file "$R" e300_log.lua <<'EOF'
require("navette").job { name = "e300-log", command = { "true" },
                         logs = { max_bytes = 1e300 } }
EOF
put_file "$R" neg_log.lua <<'EOF'
require("navette").job { name = "neg-log", command = { "true" },
                         logs = { max_bytes = -1 } }
EOF
put_file "$R" nan_cpus.lua <<'EOF'
require("navette").job { name = "nan-cpus", command = { "true" },
                         resources = { cpus = 0/0 } }
EOF
put_file "$R" huge_time.lua <<'EOF'
require("navette").job { name = "huge-time", command = { "true" },
                         resources = { time_limit = math.huge } }
EOF
put_file "$R" huge_mem.lua <<'EOF'
require("navette").job { name = "huge-mem", command = { "true" },
                         resources = { memory = 2^63 } }
EOF
put_file "$R" ff_file.lua <<'EOF'
require("navette").job { name = "ff-file",
                         command = { "sh", "-c", "printf x > \"$NAVETTE_OUTPUTS/ok.txt\"; mkdir -p \"$NAVETTE_OUTPUTS/d\"; printf x > \"$NAVETTE_OUTPUTS/d/$(printf 'r\\351sum\\351.txt')\"" } }
EOF
commit_all "$R" >/dev/null

# ---- bytes: recipe, key and offset in the refusal, for plan and run
for c in "nul_arg|command\\[2\\]' holds a NUL byte at byte offset 2" \
	"ff_arg|command\\[2\\]' holds bytes that are not UTF-8 text \\(0xff at byte offset 3\\)" \
	"nul_env|env\\.GREETING' holds a NUL byte at byte offset 1" \
	"ff_env|env\\.GREETING' holds bytes that are not UTF-8 text \\(0xc3 at byte offset 0\\)" \
	"ff_output|outputs\\[1\\]' holds bytes that are not UTF-8 text \\(0xe9 at byte offset 1\\)" \
	"surrogate_arg|command\\[2\\]' holds bytes that are not UTF-8"; do
	recipe=${c%%|*}
	want=${c#*|}
	nv_in "$R" plan "$recipe.lua" --json
	check_rc "$recipe: plan --json exits 2" 2
	check_match "$recipe: plan names the key and the offset" "$ERR" "$want"
	check_contains "$recipe: plan names the recipe" "$ERR" "$recipe.lua"
	if [ -n "$OUT" ]; then parses "$recipe: plan --json stdout" "$OUT"; fi
	nv_in "$R" run "$recipe.lua"
	check_rc "$recipe: run exits 2" 2
	check_match "$recipe: run names the key and the offset" "$ERR" "$want"
	no_job_submitted "$recipe"
done
check_absent "refused runs made no store" "$NAVETTE_HOME/store"

# ---- numbers C cannot hold: refused at validation, naming the field
for c in "huge_log|logs\\.max_bytes" "e300_log|logs\\.max_bytes" \
	"neg_log|logs\\.max_bytes" "nan_cpus|resources\\.cpus" \
	"huge_time|resources\\.time_limit" "huge_mem|resources\\.memory"; do
	recipe=${c%%|*}
	want=${c#*|}
	nv_in "$R" plan "$recipe.lua" --json
	check_rc "$recipe: plan --json exits 2" 2
	check_match "$recipe: plan names the field" "$ERR" "$want"
	nv_in "$R" run "$recipe.lua"
	check_rc "$recipe: run exits 2" 2
	check_match "$recipe: run names the field" "$ERR" "$want"
	check_no_match "$recipe: no C-level message" "$ERR" \
		'no integer representation|runner\.lua|job\.lua'
	no_job_submitted "$recipe"
done

# ---- UTF-8 text passes, and every JSON navette writes parses
nv_in "$R" plan utf8_ok.lua --json
check_rc "utf8_ok: plan --json exits 0" 0
parses "utf8_ok: plan --json" "$OUT"
check_eq "utf8_ok: the argument is kept as text" \
	"$(printf '%s' "$OUT" | json 'd["jobs"][0]["command"][4]')" \
	"héllo ✓ 日本"
nv_in "$R" run utf8_ok.lua --wait --json
check_rc "utf8_ok: run --wait exits 0" 0
parses "utf8_ok: run --json" "$OUT"
ID=$(printf '%s' "$OUT" | json 'd[0]["id"]' 2>/dev/null)
D=$NAVETTE_HOME/store/bytes/$ID
check_file "utf8_ok: navette-run.json published" "$D/navette-run.json"
parses "utf8_ok: navette-run.json" "$(cat "$D/navette-run.json" 2>/dev/null)"
check_eq "utf8_ok: the output holds the argument" \
	"$(cat "$D/out.txt" 2>/dev/null)" "héllo ✓ 日本"
nv status "$ID" --json
parses "utf8_ok: status --json" "$OUT"
nv jobs --json
parses "jobs --json" "$OUT"

# a spec that reached the queue around validation (an older navette, a
# hand-written row) with numbers C cannot hold: the agent runs the job and
# publishes its log, never converting them (UBSan's float-cast-overflow
# would stop it otherwise)
python3 - "$NAVETTE_HOME/jobs.db" "$ID" <<'EOF'
import json, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
spec = json.loads(c.execute("SELECT spec FROM jobs WHERE id=?",
                            (sys.argv[2],)).fetchone()[0])
for n, big in enumerate((2.0 ** 63, 1e300, -1e300)):
    s = dict(spec)
    s["id"] = "bytes-20000101-000000-0000000-big%03d" % n
    s["outputs"] = dict(s["outputs"])
    s["outputs"]["prefix"] = "bytes/%s/" % s["id"]
    s["outputs"]["url"] = s["outputs"]["url"].replace(sys.argv[2], s["id"])
    s["logs"] = dict(s.get("logs") or {}, max_bytes=big)
    s["resources"] = dict(s.get("resources") or {}, time_limit=1e300)
    c.execute("INSERT INTO jobs(id, project, profile, name, spec, state,"
              " phase, created, updated, backend) VALUES(?, 'bytes',"
              " 'local', 'big', ?, 'queued', 'submitted', 1, 1, 'local')",
              (s["id"], json.dumps(s)))
c.commit()
EOF
for n in 000 001 002; do
	nv watch "bytes-20000101-000000-0000000-big$n"
	check_rc "spec with huge numbers ($n): the job succeeds" 0
	check_file "spec with huge numbers ($n): its log is published" \
		"$NAVETTE_HOME/store/bytes/bytes-20000101-000000-0000000-big$n/navette.log"
done

# a job that writes an output whose name is not UTF-8 (Latin-1 here): it
# fails at publication naming it, and its record and status stay JSON
# (APFS refuses such names itself)
if ! (: >"$T/$(printf 'r\351')") 2>/dev/null; then
	skip "an output name that is not UTF-8" \
		"this file system refuses such names"
else
nv_in "$R" run ff_file.lua --wait --json
check_rc "ff_file: run --wait exits 1" 1
parses "ff_file: run --json" "$OUT"
FID=$(printf '%s' "$OUT" | json 'd[0]["id"]' 2>/dev/null)
check_eq "ff_file: failed at outputs_published" \
	"$(printf '%s' "$OUT" | json 'd[0]["failure"]["phase"]')" outputs_published
check_contains "ff_file: the reason names the file, escaped" \
	"$(printf '%s' "$OUT" | json 'd[0]["failure"]["reason"]')" \
	"output name 'd/r\\xe9sum\\xe9.txt' is not UTF-8 text (byte 0xe9 at offset 1)"
parses "ff_file: navette-run.json" \
	"$(cat "$NAVETTE_HOME/store/bytes/$FID/navette-run.json" 2>/dev/null)"
check_absent "ff_file: no output published" \
	"$NAVETTE_HOME/store/bytes/$FID/ok.txt"
nv status "$FID" --json
parses "ff_file: status --json" "$OUT"
fi

# ---- a job id that is not one navette makes never becomes a folder:
# rows written around navette (by hand, another program) are failed by
# the queue and never run by the agent (the agent that the commands above
# started is stopped first: it would fail the rows before they are counted)
bounded 20 "$NAVETTE" agent stop --force >/dev/null 2>&1
python3 - "$NAVETTE_HOME/jobs.db" <<'EOF'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
sql = ("INSERT INTO jobs(id, project, profile, name, spec, state, phase,"
       " created, updated, backend) VALUES(?, 'bytes', 'local', 'evil', ?,"
       " 'queued', 'submitted', 1, 1, 'local')")
spec = '{"id": "x", "command": ["touch", "ran"], "commit": "c", "project": "bytes"}'
for bad in ("../../escaped-dir", "/tmp/abs-id",
            "-rf", "a\nb", "caf\u00e9-1", "x" * 80):
    c.execute(sql, (bad, spec))
c.commit()
EOF
check_eq "bad ids written into the queue" \
	"$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from jobs where state=\"queued\"").fetchone()[0])' "$NAVETTE_HOME/jobs.db")" 6
NAVETTE_AGENT_IDLE=1 "$NAVETTE" agent >"$T/agent.out" 2>&1 &
AGENT=$!
i=0
while kill -0 "$AGENT" 2>/dev/null && [ "$i" -lt 300 ]; do
	sleep 0.1
	i=$((i + 1))
done
kill "$AGENT" 2>/dev/null
wait "$AGENT" 2>/dev/null
check_eq "every bad-id row failed, none run" \
	"$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from jobs where name=\"evil\" and state=\"failed\" and failure_phase=\"accepted\"").fetchone()[0])' "$NAVETTE_HOME/jobs.db")" 6
check_absent "no folder outside NAVETTE_HOME/jobs" "$T/escaped-dir"
check_absent "no job folder for a bad id" "$NAVETTE_HOME/jobs/-rf"
check_eq "nothing ran" "$(find "$T" -name ran | wc -l | tr -d ' ')" 0
nv status ../../escaped-dir
check_rc "status of a bad id: exit 2" 2
check_contains "status of a bad id names it" "$ERR" "'../../escaped-dir'"

# ---- a damaged jobs.db: what to check and do, exit 4 (local I/O)
rm -f "$NAVETTE_HOME/jobs.db-wal" "$NAVETTE_HOME/jobs.db-shm"
python3 -c 'import sys; open(sys.argv[1], "wb").write(b"\x5a\xa5garbage" * 1024)' \
	"$NAVETTE_HOME/jobs.db"
for cmd in "status $ID" "jobs" "watch $ID"; do
	# shellcheck disable=SC2086
	nv $cmd
	check_rc "damaged jobs.db: $cmd exits 4" 4
	check_contains "damaged jobs.db: $cmd names the file" "$ERR" \
		"$NAVETTE_HOME/jobs.db is damaged"
	check_contains "damaged jobs.db: $cmd says how to recover" "$ERR" \
		"jobs.db.damaged"
	check_contains "damaged jobs.db: $cmd says what is kept" "$ERR" \
		"navette-run.json"
	check_no_match "damaged jobs.db: $cmd, no Lua error" "$ERR" \
		'\.lua:[0-9]+:|traceback'
done
mv "$NAVETTE_HOME/jobs.db" "$NAVETTE_HOME/jobs.db.damaged"
# (the database alone moved aside: its jobs' folders say jobs were lost)
nv jobs
check_rc "the database alone moved aside: jobs exits 4" 4
check_contains "and names the jobs' folders" "$ERR" "$NAVETTE_HOME/jobs holds"
mv "$NAVETTE_HOME/jobs" "$NAVETTE_HOME/jobs.damaged"
nv jobs
check_rc "moved aside: jobs exits 0" 0
check_match "moved aside: an empty job database" "$OUT" '^no jobs yet$'
check_file "moved aside: the run record stays" "$D/navette-run.json"

# ---- a drawn id that is taken: the job gets another, with its own prefix
# navette's own code (`navette test --host`) replaces the id drawing so that
# the second job of a run draws the id the first one just took; the runner
# must draw again and rebuild everything that follows from the id.
I=$(new_repo idtaken)
put_file "$I" two.lua <<'EOF'
local navette = require "navette"
navette.job { name = "first", command = { "true" } }
navette.job { name = "second", command = { "true" } }
EOF
put_file "$I" collide_test.lua <<'EOF'
local job = require "navette.job"
local runner = require "navette.runner"
local draw, calls = job.new_id, 0
test.test("the second job draws a taken id", function()
  job.new_id = function(project)
    calls = calls + 1
    -- checking pass: calls 1, 2; real pass: 3 (first), 4 (second, taken)
    if calls <= 4 then return project .. "-3m0000-abcde" end
    return draw(project)
  end
  local ok, err = pcall(runner.run, "two.lua", {})
  job.new_id = draw
  test.ok(ok, tostring(err and (err.message or err)))
  test.eq(calls, 5)
end)
EOF
commit_all "$I" >/dev/null
nv_in "$I" test --host collide_test.lua
check_rc "a taken id: the run goes through" 0
nv jobs --json
check_eq "a taken id: two jobs with two ids" \
	"$(printf '%s' "$OUT" | json "len(set(j['id'] for j in d if j['name'] in ('first', 'second')))" 2>&1)" 2
for name in first second; do
	id=$(printf '%s' "$OUT" | json "[j['id'] for j in d if j['name'] == '$name'][0]" 2>&1)
	check_state "a taken id: job $name ends" "$id" \
		'succeeded|failed|cancelled' 60
	check_eq "a taken id: job $name publishes its record under its own id" \
		"$(json "d['id']" <"$(store_dir idtaken "$id")/navette-run.json" 2>&1)" "$id"
done

finish
