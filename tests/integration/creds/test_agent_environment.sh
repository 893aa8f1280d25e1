# A job cannot see the credentials of the shell that started navette: not
# in its own environment, not in the agent's, not in the `run --wait` that
# waits for it (issue 11: a job read /proc/<agent>/environ and printed the
# storage key letter-spaced, past the value masking).
#
# A job runs as the user who submitted it. As root, every process can read
# every other's environment, so the scenario runs as the user nobody: the
# job and the processes it probes then share a user, as on a laptop.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

# ---- who runs the scenario ------------------------------------------------
ASPY=
W=$T
if [ "$(id -u)" = 0 ]; then
	NOBODY_UID=$(id -u nobody 2>/dev/null)
	NOBODY_GID=$(id -g nobody 2>/dev/null)
	if [ -z "$NOBODY_UID" ]; then
		skip "the probe as a user other than root" "no user nobody"
		finish
	fi
	# $T is private to root: the scenario gets a folder nobody can use
	W=$(mktemp -d "${TMPDIR:-/tmp}/navette-agentenv.XXXXXX")
	W=$(cd "$W" && pwd -P)
	chmod 755 "$W"
	cat >"$T/as_user.py" <<'EOF'
import os, sys
os.setgroups([])
os.setgid(int(sys.argv[2]))
os.setuid(int(sys.argv[1]))
os.execvp(sys.argv[3], sys.argv[3:])
EOF
	ASPY=$T/as_user.py
fi
# exec_as_user COMMAND...: replaces the (sub)shell with COMMAND, run as
# the scenario's user (its pid stays the one $! gave)
exec_as_user() {
	if [ -n "$ASPY" ]; then
		exec python3 "$ASPY" "$NOBODY_UID" "$NOBODY_GID" "$@"
	fi
	exec "$@"
}

export HOME=$W/home
export GIT_CONFIG_GLOBAL=$HOME/.gitconfig
export XDG_CONFIG_HOME=$HOME/.config
mkdir -p "$HOME"
cp "$T/home/.gitconfig" "$GIT_CONFIG_GLOBAL"
export NAVETTE_HOME=$W/navette-home
mkdir -p "$NAVETTE_HOME"

R=$W/agentenv
mkdir -p "$R"
git -C "$R" init -q
printf 'return { name = "agentenv" }\n' >"$R/navette.lua"
# The probe: the job's own environment, and for each process the test
# names (agent, waiter), whether its environment and memory can be read,
# the names seen, and the raw bytes letter-spaced as the attack printed
# them.
put_file "$R" probe.py <<'EOF'
import json, os, platform, subprocess, sys, time

out = os.environ["NAVETTE_OUTPUTS"]
# (in the job's own HOME: the only folder of the laptop a job sees is its
# own, issue 26)
pids_file = os.path.join(os.environ["HOME"], os.environ["PROBE_PIDS"])
deadline = time.time() + 60
while not os.path.exists(pids_file) and time.time() < deadline:
    time.sleep(0.1)
report = {"uid": os.getuid(), "env": dict(os.environ), "processes": {}}
spaced = []
for item in open(pids_file).read().split():
    label, pid = item.split(":")
    r = {"pid": int(pid), "environ_readable": False, "mem_readable": False,
         "names": []}
    data = b""
    if os.path.exists("/proc/self/environ"):
        try:
            with open("/proc/%s/environ" % pid, "rb") as f:
                data = f.read()
            r["environ_readable"] = True
        except OSError as e:
            r["environ_error"] = e.strerror
        try:
            with open("/proc/%s/mem" % pid, "rb") as f:
                f.read(1)
            r["mem_readable"] = True
        except OSError as e:
            r["mem_error"] = e.strerror
        entries = data.split(b"\0")
    else:
        # macOS: ps shows the environment after the command (-E)
        p = subprocess.run(["ps", "-E", "-ww", "-o", "command=", "-p", pid],
                           capture_output=True)
        data = p.stdout
        r["environ_readable"] = b"NAVETTE_HOME=" in data
        entries = data.split()
    r["names"] = sorted({e.split(b"=", 1)[0].decode("utf-8", "replace")
                         for e in entries if b"=" in e})
    spaced.append(" ".join(data.decode("utf-8", "replace")))
    report["processes"][label] = r
with open(os.path.join(out, "report.json"), "w") as f:
    json.dump(report, f)
with open(os.path.join(out, "spaced.txt"), "w") as f:
    f.write("\n".join(spaced))
print("probed", sorted(report["processes"]))
EOF
put_file "$R" probe.lua <<EOF
local navette = require "navette"
navette.job {
  name = "probe",
  command = { "python3", "probe.py" },
  env = { PROBE_PIDS = "probe-pids" },
  success = { outputs = { "report.json", "spaced.txt" } },
}
EOF
commit_all "$R" >/dev/null
[ -z "$ASPY" ] || chown -R "$NOBODY_UID:$NOBODY_GID" "$W"

# ---- the shell that starts it all holds credentials -----------------------
# Each made-up value is joined from two pieces, so that no file of the
# repository holds a whole one (navette's own secret scan reads this tree).
SECRET_AWS=wJalrXU"tnFEMIK7MDENG""bPxRfiCYagentenvSECRET1"
SECRET_GH=ghp_"AgentEnvProbe0123456789abcdefghijklmn"
SECRET_SESSION=FwoGZXIvYXdzEAgentEnv"SessionToken0123456789"
SECRET_DB=agentenv-db-"Passw0rd-1234"
SECRET_NV=agentenv-registry-"Passw0rd-5678"
export AWS_ACCESS_KEY_ID=AKIA"AGENTENVPROBE123"
export AWS_SECRET_ACCESS_KEY=$SECRET_AWS
export AWS_SESSION_TOKEN=$SECRET_SESSION
export GITHUB_TOKEN=$SECRET_GH
export GH_TOKEN=$SECRET_GH
export DATABASE_PASSWORD=$SECRET_DB
export NAVETTE_REGISTRY_PASSWORD=$SECRET_NV
SECRETS="$SECRET_AWS $SECRET_GH $SECRET_SESSION $SECRET_DB $SECRET_NV"
CRED_NAMES='AWS_|SECRET|TOKEN|PASSW|_KEY|CREDENTIAL'

(cd "$R" && exec_as_user "$NAVETTE" run probe.lua --wait) >"$T/run.out" 2>&1 &
WAITER=$!

# the agent's pid: agent.lock holds it once the agent has the lock
agent_pid() {
	AGENT=$(tr -dc 0-9 2>/dev/null <"$NAVETTE_HOME/agent.lock")
	[ -n "$AGENT" ] && kill -0 "$AGENT" 2>/dev/null
}
AGENT=
if wait_for 30 agent_pid; then
	pass "agent.lock names the running agent"
else
	fail "agent.lock names the running agent (got '$AGENT'; $(cat "$T/run.out"))"
fi
# the job's HOME: its folder's home/, once the agent made it
job_home() {
	JOB_HOME=$(ls -d "$NAVETTE_HOME"/jobs/*/home 2>/dev/null | head -1)
	[ -n "$JOB_HOME" ]
}
JOB_HOME=
wait_for 30 job_home || fail "the job's home/ is made ($(cat "$T/run.out"))"
PIDS=$JOB_HOME/probe-pids
printf 'agent:%s waiter:%s\n' "$AGENT" "$WAITER" >"$PIDS.tmp"
chmod 644 "$PIDS.tmp"
mv "$PIDS.tmp" "$PIDS"

# as root, the agent's environment can be read here: it must be minimal
if [ "$(id -u)" = 0 ] && [ -r "/proc/$AGENT/environ" ]; then
	AGENT_ENV=$(tr '\0' '\n' <"/proc/$AGENT/environ" | cut -d= -f1)
	OUT=$AGENT_ENV ERR= LAST_CMD="cat /proc/$AGENT/environ"
	check_no_match "the agent's environment has no credential-shaped name" \
		"$AGENT_ENV" "$CRED_NAMES"
	check_contains "the agent's environment has its home" "$AGENT_ENV" \
		NAVETTE_HOME
fi

wait "$WAITER"
RC=$?
OUT=$(cat "$T/run.out") ERR= LAST_CMD="navette run probe.lua --wait"
check_rc "the probe job runs and succeeds" 0
ID=$(sed -n 's/^job .* submitted: \([^ ]*\)$/\1/p' "$T/run.out" | head -1)
D=$NAVETTE_HOME/store/agentenv/$ID
REPORT=$(cat "$D/report.json" 2>/dev/null)
check_contains "the probe reported" "$REPORT" '"processes"'
OUT=$REPORT LAST_CMD="cat report.json"

# ---- the job's own environment: what it declared and navette's ------------
JOB_NAMES=$(printf '%s' "$REPORT" | json '"\n".join(sorted(d["env"]))')
check_no_match "the job's environment has no credential-shaped name" \
	"$JOB_NAMES" "$CRED_NAMES"
check_match "the job's environment has what it declared" "$JOB_NAMES" \
	'^PROBE_PIDS$'
check_eq "the job's environment is its spec's and navette's" \
	"$(printf '%s\n' "$JOB_NAMES" | grep -Ev '^(NAVETTE_[A-Z_]+|PROBE_PIDS|PATH|HOME|USER|LOGNAME|TMPDIR|PYTHONUNBUFFERED|LANG|TZ|PWD|OLDPWD|SHLVL|_|XDG_RUNTIME_DIR|CONTAINERS_[A-Z_]+|DOCKER_HOST|DOCKER_CONFIG|LC_CTYPE)$' |
		tr '\n' ' ')" ""

# ---- the agent and the waiting CLI, as the job sees them -------------------
for who in agent waiter; do
	readable=$(printf '%s' "$REPORT" |
		json "d['processes']['$who']['environ_readable']")
	names=$(printf '%s' "$REPORT" |
		json "'\n'.join(d['processes']['$who']['names'])")
	if [ "$(uname -s)" = Linux ]; then
		check_eq "the job cannot read the $who's /proc/PID/environ" \
			"$readable" false
		check_eq "the job cannot read the $who's /proc/PID/mem" \
			"$(printf '%s' "$REPORT" |
				json "d['processes']['$who']['mem_readable']")" false
	elif [ "$who" = agent ]; then
		check_no_match "the agent's environment, as the job sees it, \
has no credential-shaped name" "$names" "$CRED_NAMES"
	else
		skip "the waiting CLI's environment hidden from the job" \
			"this system shows a process's environment to its user"
	fi
done

# ---- no secret value anywhere, even spelled with blanks between letters ---
ALL="$(cat "$D"/report.json "$D"/spaced.txt "$D"/navette.log 2>/dev/null)"
SQUEEZED=$(printf '%s' "$ALL" | tr -d ' \n\t')
for s in $SECRETS; do
	case $ALL$SQUEEZED in
	*"$s"*) fail "no secret value reached the job (found ${s%????????}...)" ;;
	*) pass "the job never saw ${s%????????}..." ;;
	esac
done

# ---- `navette agent` started by hand from that shell -----------------------
# It starts again with the minimal environment (and is not dumpable).
FG_HOME=$W/fg-home
mkdir -p "$FG_HOME"
[ -z "$ASPY" ] || chown "$NOBODY_UID:$NOBODY_GID" "$FG_HOME"
(export NAVETTE_HOME=$FG_HOME && exec_as_user "$NAVETTE" agent) >"$T/fg.out" 2>&1 &
FG=$!
fg_started() { [ -n "$(tr -dc 0-9 2>/dev/null <"$FG_HOME/agent.lock")" ]; }
if wait_for 20 fg_started; then
	check_eq "the hand-started agent kept its pid across its restart" \
		"$(tr -dc 0-9 <"$FG_HOME/agent.lock")" "$FG"
	if [ "$(id -u)" = 0 ] && [ -r "/proc/$FG/environ" ]; then
		FG_ENV=$(tr '\0' '\n' <"/proc/$FG/environ")
		OUT=$FG_ENV LAST_CMD="cat /proc/$FG/environ"
		check_no_match "the hand-started agent has no credential-shaped \
name" "$(printf '%s\n' "$FG_ENV" | cut -d= -f1)" "$CRED_NAMES"
		check_no_match "the hand-started agent holds no secret value" \
			"$FG_ENV" "$(printf '%s' "$SECRETS" | tr ' ' '|')"
	elif [ "$(uname -s)" = Linux ]; then
		check_true "the hand-started agent's environment is unreadable" \
			sh -c "! cat /proc/$FG/environ >/dev/null 2>&1"
	else
		skip "the hand-started agent's environment" \
			"this system has no /proc to read it from"
	fi
else
	fail "the hand-started agent takes its lock ($(cat "$T/fg.out"))"
fi
wait "$FG"
check_eq "the hand-started agent stops when idle, exit 0" "$?" 0

if [ "$W" != "$T" ]; then
	wait_for 20 lock_is_free "$NAVETTE_HOME/agent.lock"
	rm -rf "$W"
fi
finish
