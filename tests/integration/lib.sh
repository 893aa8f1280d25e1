# Shared helpers of navette's integration tests. A test sits in the folder
# of its area (tests/integration/AREA/test_*.sh) and sources it first:
#
#   . "$(dirname "$0")/../lib.sh"
#
# Needs NAVETTE (the navette binary) and NAVETTE_SOURCE (the repository
# root); ctest sets both. Every test file gets a fresh NAVETTE_HOME, an
# isolated git configuration and HOME, and a cleanup that waits for the
# agent to let go of the home before removing it. A pipeline fails when any
# of its commands fails (pipefail): a listing that failed never reads as an
# empty one. A check that cannot run here calls skip (exit 77: ctest's
# SKIP_RETURN_CODE, so it counts as skipped, never as passed).
#
# A script sources it right after its `set -eu -o pipefail` (so that a
# lib.sh that cannot be read stops it) and may then `set +e`, its checks
# reporting their own failures. Every folder a script writes under is its
# own temporary folder $T, or a variable it passes to need_dir first:
# tests/integration/core/test_script_guards.sh holds every test script to
# this.
set -u
set -o pipefail

# need_dir NAME...: refuses to go on (exit 2, saying which variable and
# what it holds) unless each variable NAME holds a folder this test may
# write under: set and not empty, absolute, not /, no '..', and inside the
# test's own temporary folder $T or a build folder (one with a
# CMakeCache.txt: the ctest fixtures' stacks live there). An empty
# variable is what made a script run by hand write into / (issue 27).
need_dir() {
	local name value root
	for name in "$@"; do
		value=${!name-}
		case $value in
		'') _refuse "$name is empty or unset: it names the folder this test writes under" ;;
		/) _refuse "$name is /: it names the folder this test writes under" ;;
		/*) ;;
		*) _refuse "$name='$value' is not an absolute path" ;;
		esac
		case /$value/ in
		*/../*) _refuse "$name='$value' holds '..'" ;;
		esac
		case $value/ in
		"${T:-/nonexistent/}"/*) continue ;;
		esac
		root=$value
		while [ "$root" != / ] && [ -n "$root" ]; do
			[ -f "$root/CMakeCache.txt" ] && continue 2
			root=$(dirname "$root")
		done
		_refuse "$name='$value' is outside this test's temporary folder (${T:-none yet}) and any build folder"
	done
}
_refuse() {
	echo "$(basename "$0"): refusing to run: $1 (run it through ctest," \
		"or set NAVETTE and NAVETTE_SOURCE as tests/integration/lib.sh says)" >&2
	exit 2
}

[ -n "${NAVETTE:-}" ] || _refuse "NAVETTE is empty or unset: set it to the navette binary"
[ -n "${NAVETTE_SOURCE:-}" ] || _refuse "NAVETTE_SOURCE is empty or unset: set it to the repository root"
case $NAVETTE in /*) ;; *) NAVETTE=$PWD/$NAVETTE ;; esac
export NAVETTE NAVETTE_SOURCE

if [ ! -x "$NAVETTE" ]; then
	echo "FAIL: NAVETTE=$NAVETTE is not an executable" >&2
	exit 1
fi

# (mktemp and cd failing leave T empty: need_dir refuses that)
_tmp=$(cd "${TMPDIR:-/tmp}" && pwd -P) || _tmp=
case $_tmp in / | //) _refuse "TMPDIR is /: the tests' temporary folders go in a folder of their own" ;; esac
T=$(mktemp -d "${_tmp:-/nonexistent}/navette-it.XXXXXX") || T=
T=$(cd "${T:-/nonexistent}" 2>/dev/null && pwd -P) || T=
case $T in
"$_tmp"/navette-it.*) ;;
*) _refuse "no temporary folder could be made in TMPDIR=${TMPDIR:-/tmp}" ;;
esac
need_dir T
NAVETTE_HOME=$T/navette-home
mkdir -p "$NAVETTE_HOME" "$T/home"
export NAVETTE_HOME
export NAVETTE_AGENT_IDLE=2
export NO_COLOR=1
unset NAVETTE_DEBUG NAVETTE_BIN NAVETTE_LUA_PATH CLICOLOR_FORCE FORCE_COLOR

# git (and libgit2) see only our configuration, whoever runs the test.
export HOME=$T/home
export GIT_CONFIG_NOSYSTEM=1
export GIT_CONFIG_GLOBAL=$T/home/.gitconfig
export XDG_CONFIG_HOME=$T/home/.config
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_CEILING_DIRECTORIES
cat >"$GIT_CONFIG_GLOBAL" <<'EOF'
[user]
	name = t
	email = t@t
[init]
	defaultBranch = main
[safe]
	directory = *
[commit]
	gpgsign = false
EOF

PASSED=0
FAILED=0
SKIPPED=0
TEST_NAME=$(basename "$0" .sh)
# What the last nv call printed and returned.
OUT=
ERR=
RC=

_cleanup() {
	local status=$? i=0
	# Let the agent finish and release the home (bounded).
	if [ -e "$NAVETTE_HOME/agent.lock" ]; then
		while ! lock_is_free "$NAVETTE_HOME/agent.lock"; do
			i=$((i + 1))
			if [ "$i" -gt 200 ]; then
				echo "warning: the agent still holds" \
				     "$NAVETTE_HOME/agent.lock after 20 s" >&2
				break
			fi
			sleep 0.1
		done
	fi
	if [ -n "${NAVETTE_KEEP_TEST_DIR:-}" ]; then
		echo "kept $T" >&2
	else
		rm -rf "$T"
	fi
	exit "$status"
}
trap _cleanup EXIT

# ---- running navette ------------------------------------------------------

# bounded SECONDS COMMAND...: COMMAND, killed by SIGALRM after SECONDS
# (status 142): a hang fails the check that waits for it instead of
# holding the test until ctest's timeout. perl's alarm outlives its exec
# (macOS has perl; timeout(1) is GNU's).
bounded() {
	local seconds=$1
	shift
	perl -e 'alarm shift; exec @ARGV or die "bounded: cannot run $ARGV[0]: $!\n"' \
		"$seconds" "$@"
}

# NV_TIME_LIMIT: when set (seconds), every nv and nv_in call is bounded
# by it; one killed for it has RC 142 and says so in ERR.
NV_TIME_LIMIT=${NV_TIME_LIMIT:-}
_navette() {
	if [ -n "$NV_TIME_LIMIT" ]; then
		bounded "$NV_TIME_LIMIT" "$NAVETTE" "$@"
	else
		"$NAVETTE" "$@"
	fi
}
_nv_killed() {
	if [ -n "$NV_TIME_LIMIT" ] && [ "$RC" = 142 ]; then
		ERR="$ERR
(killed after NV_TIME_LIMIT=$NV_TIME_LIMIT s: it did not end)"
	fi
}

# nv ARGS...: runs navette, keeps stdout in OUT, stderr in ERR, status in RC.
nv() {
	local o=$T/.out e=$T/.err
	# (set -e safe: a failing navette is what the test looks at)
	_navette "$@" >"$o" 2>"$e" && RC=0 || RC=$?
	OUT=$(cat "$o")
	ERR=$(cat "$e")
	_nv_killed
	LAST_CMD="navette $*"
	return 0
}

# nv_in DIR ARGS...: nv from DIR.
nv_in() {
	local dir=$1
	shift
	local o=$T/.out e=$T/.err
	(cd "$dir" && _navette "$@") >"$o" 2>"$e" && RC=0 || RC=$?
	OUT=$(cat "$o")
	ERR=$(cat "$e")
	_nv_killed
	LAST_CMD="(in $dir) navette $*"
	return 0
}

# stop_local_jobs: cancels every job of this home not ended yet and stops
# its agent (--force), each bounded: a test that ends early (a failed
# wait, a mutant that hangs) leaves no agent or job running. For an EXIT
# trap, before _cleanup.
stop_local_jobs() {
	local id
	[ -d "$NAVETTE_HOME" ] || return 0
	for id in $(bounded 20 "$NAVETTE" jobs --json 2>/dev/null | json \
		'" ".join(j["id"] for j in d if j["state"] not in ("succeeded", "failed", "cancelled"))' \
		2>/dev/null); do
		bounded 20 "$NAVETTE" cancel "$id" --no-wait >/dev/null 2>&1
	done
	bounded 20 "$NAVETTE" agent stop --force >/dev/null 2>&1
	return 0
}
LAST_CMD=

# ---- assertions -------------------------------------------------------------

_show_last() {
	[ -n "$LAST_CMD" ] || return 0
	{
		echo "  last command: $LAST_CMD (exit $RC)"
		echo "  --- stdout"
		printf '%s\n' "$OUT" | sed 's/^/  | /'
		echo "  --- stderr"
		printf '%s\n' "$ERR" | sed 's/^/  | /'
	} >&2
}

pass() {
	PASSED=$((PASSED + 1))
	echo "ok: $1"
}

# (each failure is also a line of $T/.failures, so that one found in a
# subshell, such as a helper inside $(...), still fails the script)
fail() {
	FAILED=$((FAILED + 1))
	printf '%s\n' "$1" | head -1 >>"$T/.failures"
	echo "FAIL: $1" >&2
	_show_last
}

# skip WHAT WHY: a check that cannot run here; said on stdout and counted.
# A script with a skip ends with status 77 (skipped) unless a check failed.
skip() {
	SKIPPED=$((SKIPPED + 1))
	echo "SKIP: $1 ($2)"
}

# check_eq WHAT GOT EXPECTED
check_eq() {
	if [ "$2" = "$3" ]; then
		pass "$1"
	else
		fail "$1 (got '$2', expected '$3')"
	fi
}

# check_ne WHAT GOT UNEXPECTED
check_ne() {
	if [ "$2" != "$3" ]; then
		pass "$1"
	else
		fail "$1 (got '$2', expected anything else)"
	fi
}

# check_rc WHAT EXPECTED: the status of the last nv call.
check_rc() {
	if [ "$RC" = "$2" ]; then
		pass "$1"
	else
		fail "$1 (got exit status $RC, expected $2)"
	fi
}

# check_match WHAT TEXT ERE: TEXT holds a line matching the extended regex.
# (grep reads a here-string: grep -q quitting early must not fail a pipe.)
check_match() {
	if grep -Eq -- "$3" <<<"$2"; then
		pass "$1"
	else
		fail "$1 (got no line matching /$3/ in: $(printf '%s' "$2" |
			head -c 600))"
	fi
}

# check_no_match WHAT TEXT ERE
check_no_match() {
	if grep -Eq -- "$3" <<<"$2"; then
		fail "$1 (got a line matching /$3/, expected none: $(
			printf '%s\n' "$2" | grep -E -- "$3" | head -3))"
	else
		pass "$1"
	fi
}

# check_contains WHAT TEXT FIXED_STRING
check_contains() {
	case $2 in
	*"$3"*) pass "$1" ;;
	*) fail "$1 (got '$(printf '%s' "$2" | head -c 600)', expected it to \
contain '$3')" ;;
	esac
}

# check_file WHAT PATH: PATH is a regular file.
check_file() {
	if [ -f "$2" ]; then
		pass "$1"
	else
		fail "$1 (got no file at $2, expected one)"
	fi
}

# check_absent WHAT PATH: nothing at PATH.
check_absent() {
	if [ -e "$2" ] || [ -L "$2" ]; then
		fail "$1 (got something at $2, expected nothing: $(ls -la "$2" 2>&1 |
			head -5))"
	else
		pass "$1"
	fi
}

# check_true WHAT COMMAND...: COMMAND succeeds.
check_true() {
	local what=$1
	shift
	if "$@"; then
		pass "$what"
	else
		fail "$what (got a failing '$*', expected success)"
	fi
}

# check_false WHAT COMMAND...: COMMAND fails (its output is not shown).
check_false() {
	local what=$1
	shift
	if "$@" >/dev/null 2>&1; then
		fail "$what (got a succeeding '$*', expected a failure)"
	else
		pass "$what"
	fi
}

# finish: prints the counts; the script's status says whether all passed
# (0), a check failed or none ran (1), or some were skipped (77).
finish() {
	if [ -f "$T/.failures" ]; then
		FAILED=$(wc -l <"$T/.failures" | tr -d ' ')
	fi
	echo "$TEST_NAME: $PASSED passed, $FAILED failed, $SKIPPED skipped"
	if [ "$FAILED" -gt 0 ]; then
		exit 1
	fi
	if [ "$SKIPPED" -gt 0 ]; then
		exit 77
	fi
	if [ "$PASSED" -eq 0 ]; then
		exit 1
	fi
	exit 0
}

# ---- JSON -----------------------------------------------------------------

# json EXPR: evaluates the Python expression EXPR with `d` bound to the JSON
# document read from stdin; prints str() of the result ("null" for None,
# "true"/"false" for booleans, JSON for lists and objects). Fails on
# malformed JSON or a failing expression.
json() {
	python3 -c '
import json, sys
try:
    d = json.load(sys.stdin)
    v = eval(sys.argv[1], {"d": d, "json": json, "re": __import__("re")})
except Exception as e:
    print("<json: %s: %s>" % (type(e).__name__, e))
    sys.exit(1)
if v is None: print("null")
elif isinstance(v, bool): print("true" if v else "false")
elif isinstance(v, (list, dict)): print(json.dumps(v, sort_keys=True))
else: print(v)
' "$1"
}

# ---- repositories -----------------------------------------------------------

# new_repo NAME: creates an empty git repository $T/NAME (with a navette.lua
# naming the project NAME-proj unless NO_PROJECT_FILE=1) and prints its path.
new_repo() {
	local dir=$T/$1
	mkdir -p "$dir"
	git -C "$dir" init -q || return 1
	if [ -z "${NO_PROJECT_FILE:-}" ]; then
		printf 'return { name = "%s" }\n' "$1" >"$dir/navette.lua"
	fi
	printf '%s\n' "$dir"
}

# commit_all REPO [MESSAGE]: commits everything in REPO; prints HEAD. The
# test's user then trusts the project file it committed (navette trust), as
# the author of a project does, unless NO_TRUST=1 (the trust tests).
commit_all() {
	git -C "$1" add -A &&
		git -C "$1" -c user.name=t -c user.email=t@t commit -q \
			--no-verify -m "${2:-test}" >/dev/null || return 1
	if [ -z "${NO_TRUST:-}" ] && [ -f "$1/navette.lua" ]; then
		"$NAVETTE" trust "$1" >/dev/null || return 1
	fi
	git -C "$1" rev-parse HEAD
}

# put_file REPO PATH: writes stdin into REPO/PATH.
put_file() {
	mkdir -p "$(dirname "$1/$2")"
	cat >"$1/$2"
}

# sha256 FILE (shasum: perl's, on macOS and Debian alike)
sha256() {
	shasum -a 256 "$1" | cut -d' ' -f1
}

# ---- processes and locks (what macOS has too: no flock(1), no setsid) -------

# lock_is_free PATH: no process holds a flock(2) lock on PATH (a missing
# file is free). Takes a non-blocking exclusive lock for an instant (perl).
lock_is_free() {
	perl -MFcntl=:flock -e '
		open(my $f, "<", $ARGV[0]) or exit 0;
		exit(flock($f, LOCK_EX | LOCK_NB) ? 0 : 1);' "$1" 2>/dev/null
}

# exec_in_new_session COMMAND...: replaces the calling (sub)shell with
# COMMAND, leader of a new session and process group, as setsid(1) would.
# A process that already leads its group forks first (setsid needs that).
exec_in_new_session() {
	exec python3 -c '
import os, sys
try:
    os.setsid()
except OSError:
    if os.fork():
        os._exit(0)
    os.setsid()
os.execvp(sys.argv[1], sys.argv[1:])' "$@"
}

# ---- jobs -------------------------------------------------------------------

# submitted_id: the job id printed by the last `navette run` (OUT).
submitted_id() {
	printf '%s\n' "$OUT" | sed -n 's/^job .* submitted: \([^ ]*\)$/\1/p' |
		head -1
}

# job_state ID: prints the state from `navette status ID --json` (or "?").
# (status exits 1 for a failed or cancelled job: its output is what counts)
job_state() {
	local doc state
	doc=$("$NAVETTE" status "$1" --json 2>/dev/null)
	if state=$(printf '%s' "$doc" | json 'd["state"]' 2>/dev/null); then
		printf '%s\n' "$state"
	else
		echo "?"
	fi
}

# wait_state JOB STATE_REGEX TIMEOUT: polls `navette status JOB --json`
# until the state matches ^(STATE_REGEX)$; returns 1 after TIMEOUT seconds.
# Leaves the last state seen in STATE.
STATE=
wait_state() {
	local id=$1 want=$2 deadline=$(($(date +%s) + $3))
	if [ -z "$id" ]; then
		STATE="(no job id)"
		return 1
	fi
	while :; do
		STATE=$(job_state "$id")
		if grep -Eqx -- "$want" <<<"$STATE"; then
			return 0
		fi
		if [ "$(date +%s)" -ge "$deadline" ]; then
			return 1
		fi
		sleep 0.2
	done
}

# check_state WHAT JOB STATE_REGEX TIMEOUT
check_state() {
	if wait_state "$2" "$3" "$4"; then
		pass "$1"
	else
		LAST_CMD=
		fail "$1 (got state '$STATE' after $4 s, expected /$3/)"
		"$NAVETTE" status "$2" 2>&1 | sed 's/^/  | /' >&2
	fi
}

# wait_for TIMEOUT COMMAND...: polls COMMAND until it succeeds.
wait_for() {
	local deadline=$(($(date +%s) + $1))
	shift
	while ! "$@"; do
		[ "$(date +%s)" -lt "$deadline" ] || return 1
		sleep 0.2
	done
}

# start_delay_proxy PORT LOG DELAY [ARGS...]: tests/data/slurm/delay_proxy.py
# in front of the Slurm stack's slurmrestd on PORT, its submissions answered
# DELAY seconds late, logging to LOG; its pid in DELAY_PROXY_PID. Exits the
# test when it does not listen within 10 s (the port taken?).
start_delay_proxy() {
	local port=$1 log=$2 delay=$3
	shift 3
	: >"$log"
	python3 "$NAVETTE_SOURCE/tests/data/slurm/delay_proxy.py" \
		--listen "$port" --target "${SLURMRESTD_URL#http://}" \
		--delay-submit "$delay" --log "$log" "$@" &
	DELAY_PROXY_PID=$!
	if ! wait_for 10 grep -q listening "$log"; then
		echo "$(basename "$0"): error: the delay proxy did not start on" \
			"port $port (is it taken?)" >&2
		kill "$DELAY_PROXY_PID" 2>/dev/null
		exit 1
	fi
}

# start_fake_s3: tests/integration/fake_s3.py on a free loopback port,
# stopped when the test ends; its URL in EP, made-up AWS_* keys exported.
start_fake_s3() {
	python3 "$NAVETTE_SOURCE/tests/integration/fake_s3.py" "$T/s3.port" &
	S3_PID=$!
	trap 'st=$?; kill "$S3_PID" 2>/dev/null; (exit "$st"); _cleanup' EXIT
	port_written() { [ -s "$T/s3.port" ]; }
	check_true "the fake S3 service starts" wait_for 20 port_written
	EP=http://127.0.0.1:$(cat "$T/s3.port")
	export AWS_ACCESS_KEY_ID=AKIDFAKEFAKEFAKE AWS_SECRET_ACCESS_KEY=fake
}

# free_ports N: N loopback TCP ports that nothing listens on now, one per
# line (the system hands them out; a port drawn at random may belong to a
# server of the stacks, which then answers a test's client).
free_ports() {
	python3 - "$1" <<'PY'
import socket, sys
held = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    held.append(s)
    print(s.getsockname()[1])
for s in held:
    s.close()
PY
}

# store_dir PROJECT ID: the folder of a job's outputs in the default store.
store_dir() {
	printf '%s/store/%s/%s\n' "$NAVETTE_HOME" "$1" "$2"
}

# ---- the storage and Slurm stacks (ctest's fixtures "s3" and "slurm") ----

# use_s3_stack NAME: the S3 stack's settings and keys in the environment
# (S3_STACK_ENV, set by ctest), EP (the --endpoint flag) and BUCKET, a
# bucket name for this test (not made yet). Exits without the fixture.
use_s3_stack() {
	if [ ! -r "${S3_STACK_ENV:-}" ]; then
		echo "FAIL: S3_STACK_ENV is not set to a readable file (ctest sets it)" >&2
		exit 1
	fi
	. "$S3_STACK_ENV"
	export AWS_ACCESS_KEY_ID=$S3_ACCESS_KEY
	export AWS_SECRET_ACCESS_KEY=$S3_SECRET_KEY
	unset AWS_SESSION_TOKEN AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 AWS_PROFILE
	export AWS_REGION=$S3_REGION
	EP=(--endpoint "$S3_ENDPOINT")
	BUCKET=nv-$1-$$-$RANDOM
}

# use_slurm_stack NAME: use_s3_stack NAME, and the Slurm stack's settings
# (SLURM_STACK_ENV) exported, SLURM_STACK_DIR, WD (a working folder the
# cluster's user reaches), logs shipped every second.
use_slurm_stack() {
	if [ ! -r "${SLURM_STACK_ENV:-}" ]; then
		echo "FAIL: SLURM_STACK_ENV is not set to a readable file (ctest sets it)" >&2
		exit 1
	fi
	use_s3_stack "$1"
	. "$SLURM_STACK_ENV"
	export SLURM_CONF
	export NAVETTE_LOG_INTERVAL=1
	SLURM_STACK_DIR=${SLURM_STACK_DIR:-$(dirname "$SLURM_STACK_ENV")}
	WD=$T/slurm-wd
	mkdir -p "$WD"
	chmod 755 "$T" "$WD"
}

# s3cat KEY: an object of BUCKET on stdout (nothing, and status 1, when
# it cannot be read)
s3cat() {
	rm -f "$T/got"
	"$NAVETTE" storage cp "s3://$BUCKET/$1" "$T/got" "${EP[@]}" >/dev/null 2>&1 &&
		cat "$T/got"
}

# s3get PREFIX DIR NAME...: objects PREFIX/NAME of BUCKET into DIR/NAME
# (a name may hold folders); one that cannot be read is left missing
s3get() {
	local prefix=$1 dir=$2 name
	shift 2
	for name in "$@"; do
		mkdir -p "$(dirname "$dir/$name")"
		s3cat "$prefix/$name" >/dev/null && cp "$T/got" "$dir/$name"
	done
}

# st ID EXPR: EXPR (python, over d) of the job's `status --json`
st() { "$NAVETTE" status "$1" --json 2>/dev/null | json "$2" 2>&1; }

# sub_id NAME_RE: the id `run` printed for the job named NAME_RE (in OUT)
sub_id() { printf '%s\n' "$OUT" | sed -n "s/^job $1 submitted: \(.*\)$/\1/p"; }

# ---- the recipe catalogue ------------------------------------------------------

# catalogue_python MODULE...: puts first in PATH a python3 that imports the
# modules (the first python3 of PATH, else the system's /usr/bin/python3,
# where Debian's packages are), so that the jobs the local agent starts
# find it; skips the test (exit 0 after finish) when none does.
catalogue_python() {
	local py imports="import $(printf '%s,' "$@" | sed 's/,$//')"
	for py in "$(command -v python3)" /usr/bin/python3; do
		if [ -x "$py" ] && "$py" -c "$imports" 2>/dev/null; then
			mkdir -p "$T/python-bin"
			ln -sf "$py" "$T/python-bin/python3"
			export PATH="$T/python-bin:$PATH"
			return 0
		fi
	done
	skip "the catalogue's jobs" "no python3 imports $*: vendor/bootstrap test installs them"
	finish
}

# catalogue_repo NAME: a repository holding a copy of this repository's
# catalogue (navette.lua, recipes/catalogue.lua and every recipe family's
# folder), committed and tagged catalogue-v1; prints its folder.
catalogue_repo() {
	local dir
	dir=$(NO_PROJECT_FILE=1 new_repo "$1") || return 1
	mkdir -p "$dir/recipes"
	cp "$NAVETTE_SOURCE/navette.lua" "$dir/"
	cp "$NAVETTE_SOURCE/recipes/catalogue.lua" "$NAVETTE_SOURCE/recipes/steps.py" \
		"$dir/recipes/"
	local family
	for family in training audio video vision images; do
		[ -d "$NAVETTE_SOURCE/recipes/$family" ] &&
			cp -R "$NAVETTE_SOURCE/recipes/$family" "$dir/recipes/"
	done
	commit_all "$dir" >/dev/null || return 1
	git -C "$dir" tag catalogue-v1 || return 1
	printf '%s\n' "$dir"
}

# check_audio DIR [CHAPTER_DIR...]: the audio recipe's outputs in DIR (a
# job's prefix, on disk): each episode within 1 LU of -16 LUFS integrated,
# as ffmpeg's ebur128 measures it here, as long as its chapters and the
# bed's 2 s after them, with three chapter marks that ffprobe reads here at
# the chapters' first samples to the millisecond (both containers keep
# milliseconds) and with their titles, and the bitrate report.json gives
# (Opus within 10% of 64 kb/s, MP3 within 2% of 128); report.json says the
# same figures, and both loudnorm passes stayed linear. With the chapter
# jobs' prefixes, each chapter.wav is measured here too: its samples are
# the report's, and it is within 0.2 LU of -16 LUFS.
check_audio() {
	local dir=$1 f i d want got n k=0
	shift
	want=$(json 'sum(c["duration"] for c in d["chapters"])' <"$dir/report.json" 2>&1)
	for f in episode.opus episode.mp3; do
		i=$(ffmpeg -hide_banner -nostats -i "$dir/$f" -af ebur128 -f null - 2>&1 |
			sed -n '/Summary:/,$p' | sed -n 's/^ *I: *\(-*[0-9.]*\) LUFS$/\1/p' | head -n 1)
		echo "audio: $f integrated $i LUFS (measured here)"
		check_true "audio: $f is within 1 LU of -16 LUFS ($i)" \
			python3 -c "import sys; sys.exit(0 if abs(float('${i:-nan}') + 16) <= 1 else 1)"
		n=$(ffprobe -v error -show_chapters -of json "$dir/$f" | json 'len(d["chapters"])')
		check_eq "audio: $f has three chapter marks" "$n" 3
		got=$(ffprobe -v error -show_chapters -of json "$dir/$f" | python3 -c '
import json, sys
marks = json.load(sys.stdin)["chapters"]
with open(sys.argv[1]) as f:
    chapters = json.load(f)["chapters"]
# where each chapter starts in the episode: its first sample (48 kHz),
# in whole milliseconds as the containers keep it
start, wrong = 0, []
for k, (m, c) in enumerate(zip(marks, chapters), 1):
    want = round(start * 1000 / 48000) / 1000
    if abs(float(m["start_time"]) - want) > 0.001 + 1e-6:
        wrong.append("chapter %d starts at %s s, not %.3f" % (k, m["start_time"], want))
    if k > 1 and abs(float(marks[k - 2]["end_time"]) - want) > 0.001 + 1e-6:
        wrong.append("chapter %d ends at %s s, not %.3f" % (k - 1, marks[k - 2]["end_time"], want))
    if m.get("tags", {}).get("title") != c["title"]:
        wrong.append("chapter %d is titled %r" % (k, m.get("tags", {}).get("title")))
    start += c["samples"]
print("; ".join(wrong) or "exact")
' "$dir/report.json" 2>&1)
		check_eq "audio: $f's chapter marks are at the chapters' first samples, to the ms" "$got" exact
		d=$(ffprobe -v error -show_entries format=duration -of json "$dir/$f" | json 'float(d["format"]["duration"])')
		check_true "audio: $f lasts its chapters and 2 s ($d s, chapters $want s)" \
			python3 -c "import sys; sys.exit(0 if abs($d - $want - 2) < 0.5 else 1)"
		got=$(ffprobe -v error -show_entries format=bit_rate -of json "$dir/$f" | json 'round(int(d["format"]["bit_rate"]) / 1000, 1)')
		echo "audio: $f $got kb/s (measured here)"
		check_eq "audio: $f's bitrate in the report is the one measured here" \
			"$(json "d['files']['$f']['bit_rate_kbps']" <"$dir/report.json" 2>&1)" "$got"
		check_true "audio: $f's bitrate is what the README says ($got kb/s)" \
			python3 -c "import sys; b, r = $got, {'episode.opus': 64, 'episode.mp3': 128}['$f']; sys.exit(0 if abs(b - r) <= r * (0.1 if r == 64 else 0.02) else 1)"
	done
	check_eq "audio: the report agrees" \
		"$(json 'all(abs(f["integrated_lufs"] + 16) <= 1 for f in d["files"].values())' <"$dir/report.json" 2>&1)" true
	check_eq "audio: loudnorm applied a linear gain to each chapter and to the mix" \
		"$(json '[c["normalization"] for c in d["chapters"]] + [d["mix"]["normalization"]]' <"$dir/report.json" 2>&1)" \
		'["linear", "linear", "linear", "linear"]'
	for f in "$@"; do
		k=$((k + 1))
		n=$(ffprobe -v error -show_entries stream=duration_ts -of json "$f/chapter.wav" | json 'd["streams"][0]["duration_ts"]')
		check_eq "audio: chapter $k's samples, counted here, are the report's" \
			"$n" "$(json "d['chapters'][$k - 1]['samples']" <"$dir/report.json" 2>&1)"
		i=$(ffmpeg -hide_banner -nostats -i "$f/chapter.wav" -af ebur128 -f null - 2>&1 |
			sed -n '/Summary:/,$p' | sed -n 's/^ *I: *\(-*[0-9.]*\) LUFS$/\1/p' | head -n 1)
		echo "audio: chapter $k integrated $i LUFS (measured here)"
		check_true "audio: chapter $k is within 0.2 LU of -16 LUFS ($i)" \
			python3 -c "import sys; sys.exit(0 if abs(float('${i:-nan}') + 16) <= 0.2 + 1e-9 else 1)"
	done
}

# check_video DIR: the video recipe's outputs in DIR (the join's prefix,
# on disk) and SOURCE, the source video: output.mp4 has the source's
# frames and duration as ffprobe counts them here, and H.264 copied from
# the segments; the HLS master lists two renditions; the sheet is a PNG.
check_video() {
	local dir=$1 src=$2 sf of sd od
	sf=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$src")
	of=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$dir/output.mp4")
	sd=$(ffprobe -v error -show_entries format=duration -of csv=p=0 "$src")
	od=$(ffprobe -v error -show_entries format=duration -of csv=p=0 "$dir/output.mp4")
	echo "video: source $sf frames ${sd}s, output $of frames ${od}s (counted here)"
	check_match "video: the source has frames" "$sf" '^[1-9][0-9]*$'
	check_eq "video: the output has the source's frame count" "$of" "$sf"
	check_true "video: ... and its duration ($od s, source $sd s)" \
		python3 -c "import sys; sys.exit(0 if abs(${od:-0} - ${sd:-99}) < 0.05 else 1)"
	check_eq "video: the output is H.264" \
		"$(ffprobe -v error -select_streams v:0 -show_entries stream=codec_name -of csv=p=0 "$dir/output.mp4")" h264
	check_eq "video: the HLS ladder has two renditions" \
		"$(grep -c '^#EXT-X-STREAM-INF' "$dir/hls/master.m3u8" 2>&1)" 2
	check_eq "video: the thumbnail sheet is a PNG" \
		"$(head -c 8 "$dir/thumbnails.png" | od -An -tx1 | tr -d ' \n')" 89504e470d0a1a0a
	check_eq "video: the report agrees" \
		"$(json 'd["output"]["frames"] == d["source"]["frames"]' <"$dir/report.json" 2>&1)" true
}

# check_vision DIR: the vision recipe's outputs in DIR (the merge's
# prefix, on disk): every image in report.json with its features, at
# least one face on the astronaut, and a PNG thumbnail per image in the
# contact sheet (decoded here).
check_vision() {
	local r=$1/report.json
	check_eq "vision: the report covers the five images" \
		"$(json 'sorted(d["images"])' <"$r" 2>&1)" \
		'["astronaut", "camera", "chelsea", "coffee", "coins"]'
	check_eq "vision: at least one face on the astronaut" \
		"$(json 'len(d["images"]["astronaut"]["faces"]) >= 1' <"$r" 2>&1)" true
	check_eq "vision: each image has its features" \
		"$(json 'all(i["features"]["width"] > 0 and 0 <= i["features"]["edge_density"] <= 1 for i in d["images"].values())' <"$r" 2>&1)" true
	echo "vision: faces $(json '{n: len(i["faces"]) for n, i in d["images"].items()}' <"$r" 2>&1)"
	check_eq "vision: the contact sheet embeds a PNG per image" \
		"$(python3 -c '
import base64, re, sys
html = open(sys.argv[1]).read()
pngs = re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", html)
print(sum(base64.b64decode(p)[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs))' "$1/contact-sheet.html" 2>&1)" 5
}

# check_failed WHAT ID STATE PHASE HINT [LOG_ERE]: job ID ended STATE at
# PHASE (status --json), its hint holds HINT and, when given, its log has
# a line matching LOG_ERE.
check_failed() {
	local got
	got=$("$NAVETTE" status "$2" --json 2>&1)
	check_eq "$1: $3 at $4" \
		"$(printf '%s' "$got" | json '[d["state"], d["failure"]["phase"]]')" "[\"$3\", \"$4\"]"
	check_contains "$1: ... with the recipe's hint" \
		"$(printf '%s' "$got" | json 'd["failure"]["hint"]')" "$5"
	[ -z "${6:-}" ] || check_match "$1: the log says why" "$("$NAVETTE" logs "$2" 2>&1)" "$6"
}
