#!/usr/bin/env bash
# The fault proxy of the S3 tests (tests/data/s3/fault_proxy.py) in front
# of slurmrestd and of a registry: every operation (Slurm submit, status,
# cancel; image resolve, inspect, push-code) under a reset answer, a
# truncated answer, a 503 and a stall ends with success or with an error
# naming the service and what to check, and nothing is half-published: no
# row holds a Slurm id that Slurm does not have, no job is shown cancelled
# or ended by a failed call, no manifest is in the registry without its
# blobs; a Slurm submission whose answer was lost is found by the next run
# (no duplicate). Prints the matrix service x operation x fault.
# Needs S3_STACK_ENV, SLURM_STACK_ENV and REGISTRY_STACK_ENV (ctest).
set -eu -o pipefail
. "$(dirname "$0")/../integration/lib.sh"
set +e # each check reports its own failure; finish sets the status
set -o pipefail

for v in SLURM_STACK_ENV S3_STACK_ENV REGISTRY_STACK_ENV; do
	if [ ! -r "${!v:-}" ]; then
		echo "FAIL: $v is not set to a readable file (ctest sets it)" >&2
		exit 1
	fi
done
. "$SLURM_STACK_ENV"
. "$S3_STACK_ENV"
. "$REGISTRY_STACK_ENV"
export SLURM_CONF
export AWS_ACCESS_KEY_ID=$S3_ACCESS_KEY
export AWS_SECRET_ACCESS_KEY=$S3_SECRET_KEY
unset AWS_SESSION_TOKEN AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 AWS_PROFILE
export AWS_REGION=$S3_REGION
# a stall is given up after 3 s here (20 s for slurmrestd, 60 s for a
# registry otherwise)
export NAVETTE_HTTP_STALL_TIMEOUT=3
PROXY_PY=$NAVETTE_SOURCE/tests/data/s3/fault_proxy.py
{ read -r SP; read -r RP; } < <(free_ports 2)
BUCKET=nv-netfaults-$$-$RANDOM
WD=$T/slurm-wd
mkdir -p "$WD"
chmod 755 "$T" "$WD"
nv storage mb "s3://$BUCKET" --endpoint "$S3_ENDPOINT"
check_rc "the bucket is created" 0

R=$T/repo
mkdir -p "$R/recipes"
cat >"$R/navette.lua" <<NAVETTE_LUA
return {
  name = "netfaults",
  default_profile = "viaproxy",
  credentials = {
    jwtkey = { kind = "hs256", source = "file", path = "$SLURM_JWT_KEY" },
  },
  profiles = {
    viaproxy = {
      backend = "slurm", require_pushed = false,
      storage = "s3://$BUCKET/hpc/",
      s3 = { endpoint = "$S3_ENDPOINT", region = "$S3_REGION" },
      slurm = { endpoint = "http://127.0.0.1:$SP", user = "$SLURM_USER",
                credential = "jwtkey", partition = "$SLURM_PARTITION",
                working_directory = "$WD" },
      max_token_lifespan = "1h",
    },
  },
}
NAVETTE_LUA
put_file "$R" recipes/one.lua <<'RECIPE'
local navette = require "navette"
navette.job { name = "one", command = { "true" } }
RECIPE
put_file "$R" recipes/slow.lua <<'RECIPE'
local navette = require "navette"
navette.job { name = "slow", command = { "sleep", "8" } }
RECIPE
put_file "$R" recipes/long.lua <<'RECIPE'
local navette = require "navette"
navette.job { name = "long", command = { "sleep", "120" } }
RECIPE
git -C "$R" init -q
commit_all "$R" base >/dev/null

# ---- the proxy --------------------------------------------------------------

PROXY_PID=
proxy() { # UPSTREAM PORT FRACTION [ARGS...]: (re)starts the proxy
	local up=$1 port=$2 fraction=$3 i=0
	shift 3
	proxy_stop
	python3 "$PROXY_PY" "$up" 7 "$fraction" --port "$port" --lifetime 600 \
		--reopen \
		"$@" >"$T/proxy.port" 2>>"$T/proxy.log" &
	PROXY_PID=$!
	while [ ! -s "$T/proxy.port" ] && [ "$i" -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}
proxy_stop() {
	if [ -n "$PROXY_PID" ]; then
		kill "$PROXY_PID" 2>/dev/null
		wait "$PROXY_PID" 2>/dev/null
		PROXY_PID=
	fi
	: >"$T/proxy.port"
}
trap 'proxy_stop; _cleanup' EXIT
fault_args() { # FAULT -> the proxy's arguments for it
	case $1 in
	reset) echo "--direction down --min-bytes 1 --max-bytes 2" ;;
	truncated) echo "--direction down --min-bytes 60 --max-bytes 61" ;;
	503) echo "--answer 503" ;;
	stall) echo "--delay 30" ;;
	esac
}
FAULTS="reset truncated 503 stall"
MATRIX=()
# outcome SERVICE OP FAULT: checks the last nv call ended well (success,
# or an error naming SERVICE_WORD with a hint) and records it
outcome() {
	local service=$1 op=$2 fault=$3 word=$4 first
	first=$(printf '%s\n' "$ERR" | grep -m1 '^error:' | cut -c1-90)
	if [ "$RC" -eq 0 ]; then
		MATRIX+=("$service|$op|$fault|exit 0: $(printf '%s\n' "$OUT" |
			grep -m1 -o 'cannot reach [^:]*: .*' | cut -c1-70)")
		pass "$service $op under $fault: succeeded"
		return
	fi
	MATRIX+=("$service|$op|$fault|exit $RC: ${first#error: }")
	check_contains "$service $op under $fault: the error names $word" \
		"$ERR" "$word"
	check_contains "$service $op under $fault: and what to check" \
		"$ERR" "check"
}

# ---- slurmrestd ---------------------------------------------------------------

ROWS() { # COMMIT: "id state remote_id" of the rows of that commit
	python3 - "$NAVETTE_HOME/jobs.db" "$1" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=30)
for i, state, remote, spec in db.execute(
        "SELECT id, state, remote_id, spec FROM jobs ORDER BY created"):
    if json.loads(spec).get("commit") == sys.argv[2]:
        print(i, state, remote or "-")
PY
}
slurm_named() { # NAME -> "job_id state" of Slurm's jobs of that name
	scontrol -o show jobs 2>/dev/null |
		sed -n "s/^JobId=\([0-9]*\) JobName=$1 .* JobState=\([A-Z_]*\) .*/\1 \2/p"
}
UP=127.0.0.1:${SLURMRESTD_URL##*:}

for fault in $FAULTS; do
	# submit: the answer to the submit request is what fails
	git -C "$R" commit -q --allow-empty -m "submit $fault"
	commit=$(git -C "$R" rev-parse HEAD)
	# shellcheck disable=SC2046
	proxy "$UP" "$SP" 1.0 --match 'POST /slurm/[^ ]*/job/submit' \
		$(fault_args "$fault")
	nv_in "$R" run recipes/one.lua
	outcome slurmrestd submit "$fault" slurmrestd
	# no row claims a Slurm id that Slurm does not have
	while read -r id state remote; do
		if [ "$remote" != - ]; then
			check_match "submit/$fault: row $id's Slurm id is Slurm's" \
				"$(slurm_named "$id")" "^$remote "
		fi
	done < <(ROWS "$commit")
	# the service back, a failed run run again: one job, never two
	proxy "$UP" "$SP" 0.0
	if [ "$RC" -ne 0 ]; then
		nv_in "$R" run recipes/one.lua
		check_rc "submit/$fault: the re-run succeeds" 0
	fi
	n=0
	while read -r id state remote; do
		n=$((n + $(slurm_named "$id" | wc -l)))
	done < <(ROWS "$commit")
	check_eq "submit/$fault: Slurm holds one job of the submission" "$n" 1

	# status: a job submitted cleanly, then its status read through the
	# fault; the failed read changes nothing
	git -C "$R" commit -q --allow-empty -m "status $fault"
	proxy "$UP" "$SP" 0.0
	nv_in "$R" run recipes/slow.lua
	check_rc "status/$fault: the job is submitted" 0
	id=$(submitted_id)
	# shellcheck disable=SC2046
	proxy "$UP" "$SP" 1.0 --match 'GET /slurm/[^ ]*/job/[0-9]' \
		$(fault_args "$fault")
	nv status "$id"
	outcome slurmrestd status "$fault" slurmrestd
	if [ "$RC" -eq 0 ]; then
		check_contains "status/$fault: it says Slurm could not be reached" \
			"$OUT" "cannot reach Slurm"
	fi
	nv status "$id" --json
	check_match "status/$fault: a failed look is not an end" \
		"$(printf '%s' "$OUT" | json 'd["state"]')" '^(queued|running)$'
	proxy "$UP" "$SP" 0.0
	wait_state "$id" succeeded 90
	check_eq "status/$fault: the job succeeds all the same" "$STATE" succeeded

	# cancel: refused by the fault, the job runs on and says so
	git -C "$R" commit -q --allow-empty -m "cancel $fault"
	nv_in "$R" run recipes/long.lua
	check_rc "cancel/$fault: the job is submitted" 0
	id=$(submitted_id)
	wait_state "$id" running 60
	# shellcheck disable=SC2046
	proxy "$UP" "$SP" 1.0 --match 'DELETE /slurm/' $(fault_args "$fault")
	nv cancel "$id" --no-wait
	outcome slurmrestd cancel "$fault" slurmrestd
	proxy "$UP" "$SP" 0.0
	slurm_state=$(slurm_named "$id" | awk '{print $2}')
	if [ "$slurm_state" = RUNNING ] || [ "$slurm_state" = PENDING ]; then
		check_ne "cancel/$fault: not shown cancelled while Slurm runs it" \
			"$(job_state "$id")" cancelled
	fi
	nv cancel "$id"
	check_rc "cancel/$fault: cancelled once slurmrestd answers" 0
done

# ---- the registry -------------------------------------------------------------

# a base image: one small layer, pushed to the plain registry with curl
python3 - "$T/base" <<'PY'
import gzip, hashlib, io, json, os, sys, tarfile
out = sys.argv[1]
os.makedirs(out)
raw = io.BytesIO()
with tarfile.open(fileobj=raw, mode="w") as tar:
    data = b"hello\n"
    info = tarfile.TarInfo("etc/hello")
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))
layer = gzip.compress(raw.getvalue(), mtime=0)
diff = "sha256:" + hashlib.sha256(raw.getvalue()).hexdigest()
config = json.dumps({"architecture": "amd64", "os": "linux",
                     "config": {}, "rootfs": {"type": "layers",
                                              "diff_ids": [diff]}}).encode()
def blob(b):
    d = "sha256:" + hashlib.sha256(b).hexdigest()
    open(os.path.join(out, d[7:]), "wb").write(b)
    return d
manifest = {"schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "digest": blob(config), "size": len(config)},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                        "digest": blob(layer), "size": len(layer)}]}
open(os.path.join(out, "manifest.json"), "w").write(json.dumps(manifest))
PY
REPO=nvfault$$/base
for f in "$T"/base/*; do
	case $f in */manifest.json) continue ;; esac
	loc=$(curl -sSf -X POST -D - -o /dev/null "http://$REGISTRY_PLAIN/v2/$REPO/blobs/uploads/" |
		tr -d '\r' | sed -n 's/^[Ll]ocation: //p')
	case $loc in http*) ;; *) loc=http://$REGISTRY_PLAIN$loc ;; esac
	sep='?'
	case $loc in *\?*) sep='&' ;; esac
	curl -sSf -X PUT -H 'Content-Type: application/octet-stream' \
		--data-binary "@$f" "$loc${sep}digest=sha256:$(basename "$f")" >/dev/null
done
curl -sSf -X PUT -H 'Content-Type: application/vnd.oci.image.manifest.v1+json' \
	--data-binary "@$T/base/manifest.json" \
	"http://$REGISTRY_PLAIN/v2/$REPO/manifests/1" >/dev/null
check_true "the base image is in the registry" test $? -eq 0

# every manifest of REPO in the registry has its blobs
complete() { # REPO -> "ok" or what is missing
	python3 - "$REGISTRY_PLAIN" "$1" <<'PY'
import json, sys, urllib.request, urllib.error
reg, repo = sys.argv[1], sys.argv[2]
def get(path, method="GET"):
    req = urllib.request.Request("http://%s/v2/%s/%s" % (reg, repo, path),
        method=method, headers={"Accept":
        "application/vnd.oci.image.manifest.v1+json,"
        "application/vnd.docker.distribution.manifest.v2+json"})
    return urllib.request.urlopen(req, timeout=10)
try:
    tags = json.load(get("tags/list")).get("tags") or []
except urllib.error.HTTPError as e:
    tags = []
missing = []
for t in tags:
    m = json.load(get("manifests/" + t))
    for d in [m["config"]["digest"]] + [l["digest"] for l in m["layers"]]:
        try:
            get("blobs/" + d, "HEAD")
        except urllib.error.HTTPError:
            missing.append(t + ":" + d[:19])
print("ok" if not missing else "missing " + " ".join(missing))
PY
}

VIA=127.0.0.1:$RP
for fault in $FAULTS; do
	for op in resolve inspect; do
		# shellcheck disable=SC2046
		proxy "$REGISTRY_PLAIN" "$RP" 1.0 --match '^(GET|HEAD) /v2/.' \
			$(fault_args "$fault")
		nv image "$op" "$VIA/$REPO:1"
		outcome registry "$op" "$fault" "$VIA"
	done
	for stage in blobs manifest; do
		case $stage in
		blobs) match='^(POST|PATCH|PUT) /v2/[^ ]*/blobs/uploads' ;;
		manifest) match='^PUT /v2/[^ ]*/manifests/' ;;
		esac
		git -C "$R" commit -q --allow-empty -m "push $fault $stage"
		# shellcheck disable=SC2046
		proxy "$REGISTRY_PLAIN" "$RP" 1.0 --match "$match" \
			$(fault_args "$fault")
		nv image push-code --base "$REGISTRY_PLAIN/$REPO:1" \
			--to "$VIA/nvfault$$/code" --repo "$R"
		outcome registry "push-code ($stage)" "$fault" "$VIA"
		check_eq "push-code ($stage) under $fault: no manifest without its blobs" \
			"$(complete "nvfault$$/code")" ok
	done
done
proxy "$REGISTRY_PLAIN" "$RP" 0.0
nv image push-code --base "$REGISTRY_PLAIN/$REPO:1" --to "$VIA/nvfault$$/code" \
	--repo "$R"
check_rc "push-code succeeds once the registry answers" 0
check_eq "and the pushed image is whole" "$(complete "nvfault$$/code")" ok
proxy_stop

printf '\n%-11s %-22s %-10s %s\n' service operation fault outcome
for row in "${MATRIX[@]}"; do
	IFS='|' read -r s o f r <<<"$row"
	printf '%-11s %-22s %-10s %s\n' "$s" "$o" "$f" "$r"
done
echo
finish
