# navette doctor: the checks of this machine, against small loopback HTTP
# servers (python3) whose Date header is right or 10 minutes off (a skewed
# clock, seen as an endpoint's would be), credentials that load, are
# unsafe, missing or old, a git identity present or not; the text and the
# --json forms and the exit status (1 when a check failed). No stack.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

# ---- servers: HEAD and GET answered with a Date OFFSET seconds off -------

# serve_date OFFSET PORT_FILE: a server on a free loopback port (written
# to PORT_FILE once it listens); prints nothing, runs in the background.
serve_date() {
	python3 - "$1" "$2" <<'PY' &
import email.utils, http.server, os, sys, time
offset = float(sys.argv[1])

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, fmt, *args):
        pass
    # send_response adds Date from this
    def date_time_string(self, timestamp=None):
        return email.utils.formatdate(time.time() + offset, usegmt=True)
    def answer(self):
        self.send_response(403)
        self.send_header("Content-Length", "0")
        self.end_headers()
    do_HEAD = answer
    do_GET = answer

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(sys.argv[2] + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
server.serve_forever()
PY
	SERVER_PIDS="$SERVER_PIDS $!"
}
SERVER_PIDS=
trap 'st=$?; for p in $SERVER_PIDS; do kill "$p" 2>/dev/null; done;
	(exit "$st"); _cleanup' EXIT

serve_date 600 "$T/skewed.port"
serve_date 0 "$T/right.port"
ports_written() { [ -s "$T/skewed.port" ] && [ -s "$T/right.port" ]; }
check_true "the two Date servers start" wait_for 20 ports_written
SKEWED=http://127.0.0.1:$(cat "$T/skewed.port")
RIGHT=http://127.0.0.1:$(cat "$T/right.port")
# a port nothing listens on
CLOSED=$(free_ports 1)

# doctor_json DIR ARGS...: `navette doctor ARGS --json` from DIR; its
# document read once (python3 starts slowly) into DOC_OK (ok, profile) and
# ROWS, one check a line: NAME, STATUS, DETAIL, HINT separated by tabs.
doctor_json() {
	local dir=$1
	shift
	nv_in "$dir" doctor "$@" --json
	ROWS=$(printf '%s' "$OUT" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print("ok=%s profile=%s" % (json.dumps(d["ok"]), d["profile"]))
for c in d["checks"]:
    assert sorted(c) == ["detail", "hint", "name", "status"], c
    print("\t".join(" ".join(str(v).split()) if v is not None else "null"
                    for v in [c["name"], c["status"], c["detail"], c["hint"]]))
' 2>&1)
	DOC_OK=$(printf '%s\n' "$ROWS" | head -1)
}
# field_of NAME_PREFIX N: field N (2 status, 3 detail, 4 hint) of the first
# check whose name starts with NAME_PREFIX
field_of() {
	printf '%s\n' "$ROWS" | awk -F'\t' -v p="$1" -v n="$2" \
		'NR > 1 && index($1, p) == 1 { print $n; exit }'
}
status_of() { field_of "$1" 2; }

# random_hex: 32 hex digits
random_hex() { od -An -tx1 -N16 /dev/urandom | LC_ALL=C tr -d ' \n'; }

# ---- a project with a good endpoint and a good credential -----------------

P=$T/proj
mkdir -p "$P"
printf 'tok-%s\n' "$(random_hex)" \
	>"$T/home/api.token"
chmod 600 "$T/home/api.token"
cat >"$P/navette.lua" <<EOF
return {
  name = "doc",
  credentials = {
    api = { kind = "bearer", source = "file", path = "~/api.token" },
  },
  profiles = {
    good = { storage = "s3://bkt/", require_pushed = false,
             s3 = { endpoint = "$RIGHT", credential = "store" },
             credentials = { "api", store = { kind = "s3", source = "env" } } },
    skewed = { storage = "s3://bkt/", require_pushed = false,
               s3 = { endpoint = "$SKEWED", credential = "store" },
               credentials = { store = { kind = "s3", source = "env" } } },
    unsafe = { credentials = { "api", leaky = { kind = "bearer", source = "file",
                                         path = "$T/leaky.token" } } },
    missing = { credentials = { gone = { kind = "bearer", source = "env",
                                          env = { token = "DOCTOR_NO_SUCH_TOKEN" } } } },
    old = { max_credential_age = "1d",
            credentials = { aged = { kind = "bearer", source = "file",
                                      path = "$T/aged.token" } } },
    aws = { storage = "s3://bkt/", require_pushed = false,
            s3 = { endpoint = "$RIGHT" } },
    closed = { endpoints = { ["https://127.0.0.1:$CLOSED"] = {} } },
    plain = { endpoints = { ["http://192.0.2.1:80"] = {} } },
  },
}
EOF
export AWS_ACCESS_KEY_ID=AKIDDOCTORTESTKEY0 AWS_SECRET_ACCESS_KEY=doctor-test-secret-0
unset DOCTOR_NO_SUCH_TOKEN

# (the test's user trusts the project it wrote: doctor loads its credentials)
"$NAVETTE" trust "$P" >/dev/null
nv_in "$P" doctor --profile good
check_rc "good profile: exit 0" 0
check_match "good profile: the endpoint answers over loopback http" "$OUT" \
	"^ok +endpoint $RIGHT \(s3 store\): HTTP 403 in [0-9.]+ s, plain http"
check_match "good profile: the clock agrees" "$OUT" \
	"^ok +clock vs $RIGHT: (same time as this machine \(within 1 s\)|$RIGHT's clock is 1 s (ahead of|behind))"
check_match "good profile: the file credential loads" "$OUT" \
	'^ok +credential api: bearer from file'
check_match "good profile: the s3 credential loads" "$OUT" \
	'^ok +credential store: s3 from env'
check_match "good profile: git identity from the test's global config" \
	"$OUT" '^ok +git identity: t <t@t>$'
check_match "good profile: a summary line" "$OUT" '^[0-9]+ ok, 0 warnings, 0 failed'
N_TEXT=$(printf '%s\n' "$OUT" | grep -cE '^(ok|warn|fail|skip) ')
check_no_match "good profile: no secret printed" "$OUT$ERR" \
	"doctor-test-secret-0|$(cut -c1-20 "$T/home/api.token")"

doctor_json "$P" --profile good
check_rc "good profile --json: exit 0" 0
check_eq "good profile --json: ok, the profile; each check has name, status, detail, hint" \
	"$DOC_OK" "ok=true profile=good"
check_eq "good profile --json: as many checks as lines of text" \
	"$(printf '%s\n' "$ROWS" | tail -n +2 | wc -l | tr -d ' ')" "$N_TEXT"
check_eq "good profile --json: the clock check is ok" "$(status_of "clock vs $RIGHT")" ok

# ---- the skewed clock -----------------------------------------------------

nv_in "$P" doctor --profile skewed
check_rc "skewed clock: exit 1" 1
check_match "skewed clock: fail naming the endpoint and the skew in seconds" \
	"$OUT" "^fail +clock vs $SKEWED: $SKEWED's clock is (599|600|601) s ahead of this machine's"
check_match "skewed clock: says SigV4 refuses 15 min off" "$OUT" \
	'SigV4 refuses a request 15 min off'
check_match "skewed clock: what to do" "$OUT" '^      check: .*(timedatectl|sntp)'
check_match "skewed clock: the endpoint itself is reachable" "$OUT" \
	"^ok +endpoint $SKEWED"
check_match "skewed clock: the summary counts the failure" "$OUT" ', 1 failed'

doctor_json "$P" --profile skewed
check_rc "skewed clock --json: exit 1" 1
check_eq "skewed clock --json: ok is false" "$DOC_OK" "ok=false profile=skewed"
check_eq "skewed clock --json: the clock check failed" \
	"$(status_of "clock vs $SKEWED")" fail
check_match "skewed clock --json: detail names the skew" \
	"$(field_of "clock vs $SKEWED" 3)" '(599|600|601) s ahead'
check_ne "skewed clock --json: a hint" "$(field_of "clock vs $SKEWED" 4)" null
check_eq "skewed clock --json: only that check failed" \
	"$(printf '%s\n' "$ROWS" | awk -F'\t' '$2 == "fail" { print $1 }')" \
	"clock vs $SKEWED"

# ---- credentials: unsafe, missing, old --------------------------------------

printf 'leaky-%s\n' "$(random_hex)" \
	>"$T/leaky.token"
chmod 644 "$T/leaky.token"
doctor_json "$P" --profile unsafe
check_rc "credential file mode 0644: exit 1" 1
check_eq "credential file mode 0644: fail" "$(status_of "credential leaky")" fail
check_match "credential file mode 0644: says others may read it" \
	"$(field_of "credential leaky" 3)" 'readable by group'
check_match "credential file mode 0644: the hint is chmod 600" \
	"$(field_of "credential leaky" 4)" 'chmod 600'
check_eq "credential file mode 0644: the shared credential still ok" \
	"$(status_of "credential api")" ok

nv_in "$P" doctor --profile missing
check_rc "missing env credential: exit 1" 1
check_match "missing env credential: fail naming the variable" "$OUT" \
	'^fail +credential gone: .*DOCTOR_NO_SUCH_TOKEN'

printf 'aged-%s\n' "$(random_hex)" \
	>"$T/aged.token"
chmod 600 "$T/aged.token"
# three days old (the file's time is its age)
perl -e 'my $t = time - 3 * 86400; utime $t, $t, $ARGV[0] or die' "$T/aged.token"
doctor_json "$P" --profile old
check_rc "credential older than max_credential_age: a warning, exit 0" 0
check_eq "credential older than max_credential_age: warn" \
	"$(status_of "credential aged")" warn
check_match "credential older than max_credential_age: its age and the maximum" \
	"$(field_of "credential aged" 3)" 'age 3d: older than the profile.s maximum age of 86400 s'
touch "$T/aged.token"
doctor_json "$P" --profile old
check_eq "a fresh credential under max_credential_age: ok" \
	"$(status_of "credential aged")" ok

# an s3 store with no declared credential: the AWS_* variables
doctor_json "$P" --profile aws
check_rc "the AWS_* variables of an s3 store: exit 0" 0
check_eq "the AWS_* variables of an s3 store: checked" \
	"$(status_of "credential aws (the s3 store's AWS_* variables)")" ok
unset AWS_ACCESS_KEY_ID
doctor_json "$P" --profile aws
check_rc "the AWS_* variables unset: exit 1" 1
check_match "the AWS_* variables unset: fail naming the variable" \
	"$(field_of "credential aws" 3)" 'AWS_ACCESS_KEY_ID is not set'
export AWS_ACCESS_KEY_ID=AKIDDOCTORTESTKEY0

# ---- endpoints that do not answer or are refused ----------------------------

doctor_json "$P" --profile closed
check_rc "an endpoint nothing listens on: exit 1" 1
check_eq "an endpoint nothing listens on: fail" \
	"$(status_of "endpoint https://127.0.0.1:$CLOSED")" fail
check_ne "an endpoint nothing listens on: the error's message" \
	"$(field_of "endpoint https://127.0.0.1:$CLOSED" 3)" ""
check_eq "an endpoint nothing listens on: its clock is skipped" \
	"$(status_of "clock vs https://127.0.0.1:$CLOSED")" skip

doctor_json "$P" --profile plain
check_rc "plain http off loopback: exit 1" 1
check_match "plain http off loopback: refused with the reason" \
	"$(field_of "endpoint http://192.0.2.1:80" 3)" 'loopback'

# ---- git identity missing -------------------------------------------------

: >"$T/empty.gitconfig"
GIT_CONFIG_GLOBAL=$T/empty.gitconfig doctor_json "$P" --profile good
check_rc "no git identity: a warning, exit 0" 0
check_eq "no git identity: warn" "$(status_of "git identity")" warn
check_match "no git identity: the hint sets it" \
	"$(field_of "git identity" 4)" 'git config --global user.email'
check_match "no git identity: names what is unset" \
	"$(field_of "git identity" 3)" '^user.name and user.email not set'
# an identity given by an [include] of the global file
printf '[user]\n\temail = inc@example.com\n\tname = Inc\n' >"$T/home/id.inc"
printf '[include]\n\tpath = id.inc\n' >"$T/inc.gitconfig"
cp "$T/home/id.inc" "$T/id.inc"
GIT_CONFIG_GLOBAL=$T/inc.gitconfig doctor_json "$P" --profile good
check_match "git identity through [include]: ok" \
	"$(field_of "git identity" 3)" '^Inc <inc@example.com>$'

# ---- outside any project, and usage ------------------------------------------

mkdir -p "$T/bare"
doctor_json "$T/bare"
check_rc "no navette.lua: exit 0" 0
check_match "no navette.lua: the local profile" \
	"$(field_of project 3)" 'no navette.lua.*profile local'
check_eq "no navette.lua: no endpoint to check" "$(status_of endpoints)" skip
check_eq "keychain: skipped off macOS, checked on it" "$(status_of keychain)" \
	"$( [ "$(uname)" = Darwin ] && echo ok || echo skip)"
check_match "disk space: free bytes under NAVETTE_HOME" \
	"$(field_of "disk space" 3)" "[0-9.]+ [KMGT]?i?B free under $NAVETTE_HOME"
check_eq "agent: not running (starts on demand)" "$(field_of agent 3)" \
	"not running (starts on demand)"

nv_in "$P" doctor --profile nosuch
check_rc "unknown profile: exit 2" 2
check_contains "unknown profile: names it" "$ERR" "unknown profile 'nosuch'"
nv_in "$P" doctor extra
check_rc "an argument: exit 2" 2
nv doctor --help
check_rc "doctor --help: exit 0" 0
check_match "doctor --help: usage" "$OUT" '^usage: navette doctor'

# a broken project file is a failed check, the others still run
mkdir -p "$T/broken"
printf 'return { nmae = "x" }\n' >"$T/broken/navette.lua"
doctor_json "$T/broken"
check_rc "broken navette.lua: exit 1" 1
check_eq "broken navette.lua: the project check fails" "$(status_of project)" fail
check_eq "broken navette.lua: the disk is still checked" \
	"$(status_of "disk space")" ok

finish
