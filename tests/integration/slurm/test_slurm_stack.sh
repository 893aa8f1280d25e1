#!/usr/bin/env bash
# The Slurm test cluster (tests/stack/slurm-start.sh, the ctest fixture
# "slurm") is a real one: two compute nodes that run batch jobs, and
# slurmrestd behind JWT authentication. Talks to it with Slurm's own tools
# and curl only, so that the Slurm backend's tests can trust what it says.
# Needs SLURM_STACK_ENV (the stack's slurm.env), set by ctest.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

: "${SLURM_STACK_ENV:?set SLURM_STACK_ENV to the slurm.env of tests/stack/slurm-start.sh}"
if [ ! -r "$SLURM_STACK_ENV" ]; then
	echo "FAIL: no Slurm stack: cannot read $SLURM_STACK_ENV" >&2
	exit 1
fi
. "$SLURM_STACK_ENV"
export SLURM_CONF

check_eq "both nodes are up" \
	"$(sinfo -h -N -o '%N' | sort -u | tr '\n' ' ')" "gpu-a gpu-b "

# run_on NODE: sbatch a job pinned to NODE, wait (bounded) for its end, and
# print "STATE NODE OUTPUT".
run_on() {
	local id state i
	id=$(sbatch --parsable -w "$1" -o "$T/out-%j.txt" -D "$T" \
		--wrap 'echo "ran on $SLURMD_NODENAME"') || return 1
	for i in $(seq 1 100); do
		state=$(scontrol -o show job "$id" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
		case $state in COMPLETED | FAILED | CANCELLED | NODE_FAIL | TIMEOUT) break ;; esac
		sleep 0.3
	done
	printf '%s %s %s\n' "$state" \
		"$(scontrol -o show job "$id" | sed -n 's/.* NodeList=\([^ ]*\).*/\1/p')" \
		"$(cat "$T/out-$id.txt" 2>/dev/null)"
}
check_eq "sbatch -w gpu-a runs on gpu-a" "$(run_on gpu-a)" \
	"COMPLETED gpu-a ran on gpu-a"
check_eq "sbatch -w gpu-b runs on gpu-b" "$(run_on gpu-b)" \
	"COMPLETED gpu-b ran on gpu-b"

# rest USER TOKEN PATH: the HTTP status of a GET, the body in $T/body.
rest() {
	curl -s --max-time 20 -o "$T/body" -w '%{http_code}' \
		${1:+-H "X-SLURM-USER-NAME: $1"} ${2:+-H "X-SLURM-USER-TOKEN: $2"} \
		"$SLURMRESTD_URL$3"
}
token=$(scontrol token username="$SLURM_USER" lifespan=120 | sed -n 's/^SLURM_JWT=//p')
check_eq "scontrol token issues a token" "$([ -n "$token" ] && echo yes)" yes
check_eq "a ping with a token from scontrol" \
	"$(rest "$SLURM_USER" "$token" "/slurm/$SLURM_API_VERSION/ping")" 200
check_contains "the ping names the primary controller" "$(cat "$T/body")" primary
check_eq "no headers: 401" "$(rest "" "" "/slurm/$SLURM_API_VERSION/ping")" 401
check_eq "a forged token: refused (500, as slurmrestd 22.05 says it)" \
	"$(rest "$SLURM_USER" "e30.e30.AAAA" "/slurm/$SLURM_API_VERSION/ping")" 500

# An HS256 token made here with the cluster's key (iat, exp, sun) works.
b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }
now=$(date +%s)
hdr=$(printf '{"alg":"HS256","typ":"JWT"}' | b64url)
claims=$(printf '{"iat":%d,"exp":%d,"sun":"%s"}' "$now" $((now + 60)) "$SLURM_USER" | b64url)
sig=$(printf '%s.%s' "$hdr" "$claims" |
	openssl dgst -sha256 -mac HMAC -macopt "hexkey:$(od -An -tx1 -v "$SLURM_JWT_KEY" | tr -d ' \n')" -binary | b64url)
check_eq "an HS256 token signed with the cluster's key" \
	"$(rest "$SLURM_USER" "$hdr.$claims.$sig" "/slurm/$SLURM_API_VERSION/jobs")" 200

finish
