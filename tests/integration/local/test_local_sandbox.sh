#!/usr/bin/env bash
# A job on the local backend sees nothing of the laptop it was not given
# (issue 26, finding M7): not the user's ~/.navette, ~/.ssh, not the rest
# of NAVETTE_HOME (staged/, another job's folder, jobs.db), not the
# agent's /proc/PID/environ, not /tmp; it cannot write there either. Its
# environment is the documented one, whatever PATH started the agent.
# `navette agent status` and `stop` say and do what the README says.
#
# Run as root and, when root, again as a user the test creates.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

if [ "$(uname -s)" != Linux ]; then
	skip "the local sandbox" "bwrap is Linux's (macOS: sandbox-exec, no Mac in CI)"
	finish
fi
if ! command -v bwrap >/dev/null 2>&1; then
	fail "bwrap is installed (vendor/packages.txt, group build: bubblewrap)"
	finish
fi

SBX_USER=navette-sbx
ASPY=
if [ "$(id -u)" = 0 ]; then
	cat >"$T/as_user.py" <<'EOF'
import os, pwd, sys
u = pwd.getpwnam(sys.argv[1])
os.setgroups([])
os.setgid(u.pw_gid)
os.setuid(u.pw_uid)
os.execvp(sys.argv[2], sys.argv[2:])
EOF
	if ! id "$SBX_USER" >/dev/null 2>&1; then
		useradd -M -s /bin/sh "$SBX_USER" >/dev/null 2>&1 ||
			fail "useradd $SBX_USER"
	fi
fi

# as WHO COMMAND...: COMMAND as root (self) or as the test's user
as() {
	local who=$1
	shift
	if [ "$who" = self ]; then
		"$@"
	else
		python3 "$T/as_user.py" "$SBX_USER" "$@"
	fi
}

# The probe: every path it is given, read and written; the processes it
# sees; its environment.
PROBE='import json, os, sys
report = {"env": dict(os.environ), "read": {}, "write": {}, "procs": []}
for p in sys.argv[1:]:
    try:
        with open(p, "rb") as f:
            f.read(16)
        report["read"][p] = "read"
    except OSError as e:
        report["read"][p] = e.strerror
    try:
        with open(p, "ab") as f:
            f.write(b"x")
        report["write"][p] = "wrote"
    except OSError as e:
        report["write"][p] = e.strerror
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            report["procs"].append(open("/proc/%s/cmdline" % pid, "rb").read().replace(b"\0", b" ").decode())
        except OSError:
            pass
report["python"] = sys.executable
report["capeff"] = [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff:")][0]
out = os.environ["NAVETTE_OUTPUTS"]
with open(os.path.join(out, "report.json"), "w") as f:
    json.dump(report, f)
print("probed")
'

# scenario WHO: the whole story as root (self) or as the test's user.
scenario() {
	local who=$1 W H NH R agent_pid id rep
	W=$(mktemp -d "${TMPDIR:-/tmp}/navette-sbx.XXXXXX")
	W=$(cd "$W" && pwd -P)
	[ -n "$W" ] || return 1
	chmod 755 "$W"
	H=$W/home
	NH=$W/navette-home
	R=$W/repo
	mkdir -p "$H/.navette" "$H/.ssh" "$NH/staged" "$NH/team" \
		"$NH/jobs/other-job-0000" "$R"
	# what the job must not reach
	echo '{"secret_access_key":"PLANTED-NAVETTE"}' >"$H/.navette/x.json"
	echo 'PLANTED-SSH' >"$H/.ssh/id_ed25519"
	echo 'PLANTED-STAGED' >"$NH/staged/upload.bin"
	echo 'PLANTED-TEAM' >"$NH/team/keys.json"
	echo 'PLANTED-OTHER' >"$NH/jobs/other-job-0000/log"
	local marker=/tmp/navette-sbx-marker.$$.$who
	echo 'PLANTED-TMP' >"$marker"
	# a pyenv-like PATH in front, with a python3 that is not the system's
	mkdir -p "$W/fake-pyenv/bin"
	printf '#!/bin/sh\necho FAKE-PYENV-PYTHON >&2\nexit 97\n' \
		>"$W/fake-pyenv/bin/python3"
	chmod 755 "$W/fake-pyenv/bin/python3"
	cp "$T/home/.gitconfig" "$H/.gitconfig"
	git -C "$R" init -q
	printf 'return { name = "sbx" }\n' >"$R/navette.lua"
	printf '%s' "$PROBE" >"$R/probe.py"
	chmod -R a+rX "$W/fake-pyenv"
	[ "$who" = self ] || chown -R "$SBX_USER" "$W"
	chmod 644 "$marker"

	local env_of="env HOME=$H NAVETTE_HOME=$NH GIT_CONFIG_GLOBAL=$H/.gitconfig XDG_CONFIG_HOME=$H/.config NAVETTE_AGENT_IDLE=120 PATH=$W/fake-pyenv/bin:$PATH"
	# the agent, started first so that the job is told its pid
	(as "$who" $env_of "$NAVETTE" agent >"$W/agent.out" 2>&1 &)
	agent_pid=
	got_pid() {
		agent_pid=$(tr -dc 0-9 2>/dev/null <"$NH/agent.lock")
		[ -n "$agent_pid" ] && kill -0 "$agent_pid" 2>/dev/null
	}
	wait_for 20 got_pid ||
		fail "$who: the agent starts ($(cat "$W/agent.out"))"

	cat >"$R/probe.lua" <<EOF
local navette = require "navette"
navette.job {
  name = "probe",
  command = { "python3", "probe.py",
    "$H/.navette/x.json", "$NH/staged/upload.bin", "$H/.ssh/id_ed25519",
    "$NH/jobs/other-job-0000/log", "$NH/jobs.db", "$NH/team/keys.json",
    "/proc/$agent_pid/environ", "$marker",
    "../../../staged/upload.bin", "../../other-job-0000/log" },
  success = { outputs = { "report.json" } },
}
EOF
	(cd "$R" && as "$who" $env_of git add -A &&
		as "$who" $env_of git commit -qm probe) >/dev/null 2>&1
	OUT=$(cd "$R" && as "$who" $env_of "$NAVETTE" run probe.lua --wait 2>&1)
	RC=$?
	LAST_CMD="($who) navette run probe.lua --wait"
	check_rc "$who: the probe job runs and succeeds" 0
	id=$(submitted_id)
	rep=$(cat "$NH/store/sbx/$id/report.json" 2>/dev/null)
	OUT=$rep LAST_CMD="($who) cat report.json"
	check_contains "$who: the probe reported" "$rep" '"read"'
	for p in "$H/.navette/x.json" "$NH/staged/upload.bin" \
		"$H/.ssh/id_ed25519" "$NH/jobs/other-job-0000/log" \
		"$NH/jobs.db" "$NH/team/keys.json" "/proc/$agent_pid/environ" \
		"$marker" ../../../staged/upload.bin ../../other-job-0000/log; do
		check_eq "$who: the job cannot read $p" \
			"$(printf '%s' "$rep" | json "d['read']['$p']")" \
			"No such file or directory"
	done
	# a write lands in the sandbox's own empty folders, never here
	check_eq "$who: the planted files are as they were" \
		"$(cat "$H/.navette/x.json" "$H/.ssh/id_ed25519" \
			"$NH/staged/upload.bin" "$NH/team/keys.json" \
			"$NH/jobs/other-job-0000/log" "$marker" | tr '\n' ' ')" \
		'{"secret_access_key":"PLANTED-NAVETTE"} PLANTED-SSH PLANTED-STAGED PLANTED-TEAM PLANTED-OTHER PLANTED-TMP '
	check_eq "$who: the job wrote no file here" \
		"$(find "$H" "$NH" -newer "$R/probe.lua" -type f \
			! -path "$NH/jobs/*" ! -path "$NH/store/*" \
			! -path "$NH/audit/*" ! -name audit.anchor \
			! -path "$NH/runs/*" ! -name 'jobs.db*' \
			! -name 'agent.*' ! -name .navette-reserve \
			! -path "$H/.config/*" 2>/dev/null)" ""
	check_eq "$who: the job sees no process of the agent" \
		"$(printf '%s' "$rep" | json "[p for p in d['procs'] if ' agent' in p]")" \
		"[]"
	check_eq "$who: the job holds no capability (root cannot mount)" \
		"$(printf '%s' "$rep" | json "d['capeff']")" 0000000000000000
	check_eq "$who: the job's PATH is the documented one, not the agent's" \
		"$(printf '%s' "$rep" | json "d['env']['PATH']")" \
		/usr/local/bin:/usr/bin:/bin
	check_eq "$who: PYTHONUNBUFFERED=1" \
		"$(printf '%s' "$rep" | json "d['env']['PYTHONUNBUFFERED']")" 1
	check_eq "$who: HOME is the job folder's home/" \
		"$(printf '%s' "$rep" | json "d['env']['HOME']")" "$NH/jobs/$id/home"
	check_eq "$who: TMPDIR is the private /tmp" \
		"$(printf '%s' "$rep" | json "d['env']['TMPDIR']")" /tmp

	# ---- agent status and stop -------------------------------------------
	OUT=$(as "$who" $env_of "$NAVETTE" agent status --json 2>&1)
	RC=$? LAST_CMD="($who) navette agent status --json"
	check_rc "$who: agent status exits 0" 0
	check_eq "$who: agent status: running, its pid, bwrap" \
		"$(printf '%s' "$OUT" | json "[d['running'], d['pid'], d['sandbox'].split()[0], d['jobs_running'], d['jobs_queued'], d['since'][:2]]")" \
		"[true, $agent_pid, \"bubblewrap\", 0, 0, \"20\"]"
	cat >"$R/sleep.lua" <<'EOF'
local navette = require "navette"
-- (it runs until the test lets it go: a loaded machine cannot end it
-- between the test seeing it run and asking the agent to stop)
navette.job { name = "nap", command = { "sh", "-c",
  "w=0; while [ ! -e \"$HOME/go\" ] && [ $w -lt 600 ]; do sleep 0.2; w=$((w + 1)); done; echo slept" } }
EOF
	(cd "$R" && as "$who" $env_of git add -A &&
		as "$who" $env_of git commit -qm nap) >/dev/null 2>&1
	OUT=$(cd "$R" && as "$who" $env_of "$NAVETTE" run sleep.lua 2>&1)
	id=$(submitted_id)
	nap_running() {
		[ "$(as "$who" $env_of "$NAVETTE" status "$id" --json 2>/dev/null |
			json 'd["state"]')" = running ]
	}
	wait_for 20 nap_running || fail "$who: the nap job runs"
	OUT=$(as "$who" $env_of "$NAVETTE" agent stop 2>&1)
	RC=$? LAST_CMD="($who) navette agent stop (a job runs)"
	check_rc "$who: agent stop is refused while a job runs" 3
	check_contains "$who: ... saying so" "$OUT" "1 job(s) running"
	check_true "$who: ... and the agent still runs" kill -0 "$agent_pid"
	OUT=$(as "$who" $env_of "$NAVETTE" agent stop --force 2>&1)
	RC=$? LAST_CMD="($who) navette agent stop --force"
	check_rc "$who: agent stop --force exits 0" 0
	check_eq "$who: ... names the agent it stopped" "$OUT" \
		"agent $agent_pid stopped"
	check_true "$who: ... which let go of its lock" \
		lock_is_free "$NH/agent.lock"
	check_contains "$who: ... and said why in its log" \
		"$(cat "$W/agent.out")" "stopped on request"
	: >"$NH/jobs/$id/home/go"
	nap_done() {
		[ "$(as "$who" $env_of "$NAVETTE" status "$id" --json 2>/dev/null |
			json 'd["state"]')" = succeeded ]
	}
	check_true "$who: the running job went on; the next agent adopted it" \
		wait_for 30 nap_done
	OUT=$(as "$who" $env_of "$NAVETTE" agent stop 2>&1)
	RC=$? LAST_CMD="($who) navette agent stop"
	check_rc "$who: agent stop with no job exits 0" 0
	OUT=$(as "$who" $env_of "$NAVETTE" agent stop 2>&1)
	RC=$? LAST_CMD="($who) navette agent stop (none runs)"
	check_rc "$who: agent stop when none runs exits 0" 0
	check_contains "$who: ... and says so" "$OUT" "no agent runs"
	OUT=$(as "$who" $env_of "$NAVETTE" agent status 2>&1)
	check_contains "$who: agent status: not running" "$OUT" \
		"agent: not running"

	wait_for 20 lock_is_free "$NH/agent.lock"
	rm -rf "$W" "$marker"
}

scenario self
if [ "$(id -u)" = 0 ]; then
	scenario "$SBX_USER"
else
	skip "the scenario as another user" "skipped: not root"
fi

# ---- the environment of a job, without the sandbox -------------------------
# NAVETTE_LOCAL_SANDBOX=off: the fake python3 of a pyenv-like PATH is
# reachable, and still not the one the job runs.
R=$(new_repo envjob)
mkdir -p "$T/fake-pyenv/bin"
printf '#!/bin/sh\necho FAKE-PYENV-PYTHON\nexit 97\n' >"$T/fake-pyenv/bin/python3"
chmod 755 "$T/fake-pyenv/bin/python3"
put_file "$R" job.lua <<'EOF'
local navette = require "navette"
navette.job { name = "env", command = { "python3", "-c",
  "import os, sys; print('PATH=' + os.environ['PATH']); print('PU=' + os.environ.get('PYTHONUNBUFFERED', '')); print('PY=' + sys.executable)" } }
EOF
commit_all "$R" >/dev/null
OUT=$(cd "$R" && NAVETTE_LOCAL_SANDBOX=off PATH=$T/fake-pyenv/bin:$PATH \
	"$NAVETTE" run job.lua --wait 2>&1)
RC=$? LAST_CMD="NAVETTE_LOCAL_SANDBOX=off PATH=fake-pyenv:... navette run job.lua --wait"
check_rc "no sandbox, pyenv PATH: the job succeeds (the system's python3)" 0
ID=$(submitted_id)
nv logs "$ID"
check_contains "... with the documented PATH" "$OUT" \
	"PATH=/usr/local/bin:/usr/bin:/bin"
check_contains "... and PYTHONUNBUFFERED=1" "$OUT" "PU=1"
check_no_match "... never the pyenv python3" "$OUT" "FAKE-PYENV"
nv agent status
check_contains "agent status: the sandbox is off" "$OUT" \
	"sandbox: off (NAVETTE_LOCAL_SANDBOX=off)"
nv agent stop

# ---- the profile's ["local"].path ------------------------------------------
printf 'return { name = "envjob", profiles = { ["local"] = { ["local"] = { path = { "/usr/bin", "/bin" } } } } }\n' \
	>"$R/navette.lua"
commit_all "$R" >/dev/null
nv_in "$R" run job.lua --wait
check_rc "local.path: the job succeeds" 0
ID=$(submitted_id)
nv logs "$ID"
check_contains "local.path: the job's PATH is the profile's" "$OUT" \
	"PATH=/usr/bin:/bin"
printf 'return { name = "envjob", profiles = { ["local"] = { ["local"] = { path = { "bin" } } } } }\n' \
	>"$R/navette.lua"
commit_all "$R" >/dev/null
nv_in "$R" plan job.lua
check_rc "local.path: a relative folder is refused" 2
check_contains "... naming the entry" "$ERR" "path entry 1 (bin)"

# ---- no bwrap, or one that cannot start: the job fails before running -----
printf 'return { name = "envjob" }\n' >"$R/navette.lua"
commit_all "$R" >/dev/null
nv agent stop
# (--no-reuse: the tree is the first one's again, and its job would be
# reused)
OUT=$(cd "$R" && NAVETTE_BWRAP=/nonexistent/bwrap "$NAVETTE" run job.lua --wait --no-reuse 2>&1)
RC=$? LAST_CMD="NAVETTE_BWRAP=/nonexistent/bwrap navette run job.lua --wait --no-reuse"
check_rc "no bwrap: the job fails" 1
ID=$(submitted_id)
nv status "$ID" --json
check_eq "no bwrap: it failed before running (image_ready), naming the package" \
	"$(printf '%s' "$OUT" | json "[d['failure']['phase'], 'apt-get install bubblewrap' in d['failure']['hint'], d['exit_code']]")" \
	'["image_ready", true, null]'
nv agent stop
cat >"$T/broken-bwrap" <<'EOF'
#!/bin/sh
[ "${1:-}" = --version ] && { echo "bubblewrap 0.0-test"; exit 0; }
echo "bwrap: No permissions to create new namespace" >&2
exit 1
EOF
chmod 755 "$T/broken-bwrap"
OUT=$(cd "$R" && NAVETTE_BWRAP=$T/broken-bwrap "$NAVETTE" run job.lua --wait --no-reuse 2>&1)
RC=$? LAST_CMD="NAVETTE_BWRAP=broken-bwrap navette run job.lua --wait --no-reuse"
check_rc "a bwrap that cannot start: the job fails" 1
ID=$(submitted_id)
nv status "$ID" --json
check_contains "... with bwrap's own words" \
	"$(printf '%s' "$OUT" | json "d['failure']['reason']")" \
	"sandbox did not start: bwrap: No permissions"
nv agent stop

# ---- usage -------------------------------------------------------------------
nv agent bogus
check_rc "agent bogus: a usage error" 2
nv agent status --force
check_rc "agent status --force: a usage error" 2
nv agent stop --help
check_rc "agent stop --help exits 0" 0
check_contains "... and documents --force" "$OUT" "--force"
HELP=$OUT
nv help agent
check_eq "agent --help is the help of \`navette help agent\`" "$HELP" "$OUT"

finish
