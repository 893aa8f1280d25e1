#!/usr/bin/env bash
# The Slurm cluster's login node (tests/stack/sshd-start.sh, the ctest
# fixture "sshd", in front of the fixture "slurm") is a real one, talked to
# with OpenSSH's own client only, as the Slurm-through-SSH backend will: a
# key and a certificate signed by the stack's user CA for its principal, the
# host key pinned (StrictHostKeyChecking=yes), BatchMode. Checks the job
# cycle through it (sbatch --parsable with the script on stdin, squeue
# --json, sacct, scancel) with the job's output file, that a certificate
# revoked in the KRL is refused while another still logs in, that five
# commands over a ControlMaster make one TCP connection (sshd's "Connection
# from" lines), and that agent, remote and local forwarding are all refused.
# Needs SSHD_STACK_ENV and SLURM_STACK_ENV (the stacks' env files), set by
# ctest.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

for v in SSHD_STACK_ENV SLURM_STACK_ENV; do
	if [ ! -r "${!v:-}" ]; then
		echo "FAIL: $v is not set to a readable file (ctest sets it)" >&2
		exit 1
	fi
done
for tool in ssh ssh-keygen ssh-agent ssh-add; do
	command -v "$tool" >/dev/null 2>&1 || {
		skip "the login node" "$tool is not installed (openssh-client)"
		finish
	}
done
# no agent but the one the forwarding check starts
unset SLURM_CONF SSH_AUTH_SOCK SSH_AGENT_PID
. "$SLURM_STACK_ENV"
STACK_SLURM_CONF=$SLURM_CONF
unset SLURM_CONF # the commands below must get it from the login node
. "$SSHD_STACK_ENV"

# The job writes as the test user: $T lets it through, jobs/ is its own.
chmod 755 "$T"
JOBS=$T/jobs
mkdir -p "$JOBS" "$T/cm" "$T/keys"
chmod 1777 "$JOBS"
chmod 700 "$T/cm"

# key NAME ID SERIAL: a key and its certificate (-V +10m) for the stack's
# principal. Revoking a certificate of serial 0 revokes its key ID, so each
# gets an ID of its own.
key() {
	ssh-keygen -q -t ed25519 -N '' -C "$1" -f "$T/keys/$1" &&
		ssh-keygen -q -s "$SSHD_CA" -I "$2" -z "$3" -n "$SSHD_PRINCIPAL" \
			-V +10m "$T/keys/$1.pub"
}
key user "member-$$@$TEST_NAME" 1
key revoked "revoked-$$@$TEST_NAME" 2

# login KEY [SSH OPTION...] -- COMMAND: COMMAND on the login node, as a
# backend runs it (bounded: a hang fails the check)
login() {
	local name=$1 opts=()
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	shift
	bounded 60 ssh -F none -o BatchMode=yes -o StrictHostKeyChecking=yes \
		-o UserKnownHostsFile="$SSHD_KNOWN_HOSTS" -o IdentitiesOnly=yes \
		-o ConnectTimeout=10 \
		-i "$T/keys/$name" -o CertificateFile="$T/keys/$name-cert.pub" \
		${opts[@]+"${opts[@]}"} -p "$SSHD_PORT" "$SSHD_USER@$SSHD_HOST" "$@"
}
connections() { grep -c 'Connection from ' "$SSHD_LOG"; }

AGENT_PID=
CM_OPTS=(-o ControlMaster=auto -o "ControlPath=$T/cm/%C" -o ControlPersist=30)
stop_clients() {
	[ -z "$AGENT_PID" ] || kill "$AGENT_PID" 2>/dev/null
	login user "${CM_OPTS[@]}" -O exit -- >/dev/null 2>&1
	return 0
}
trap 'st=$?; stop_clients; (exit $st); _cleanup' EXIT

# ---- the session --------------------------------------------------------
check_eq "the host key pinned in known_hosts is the stack's" \
	"$(ssh-keygen -lf "$SSHD_KNOWN_HOSTS" | cut -d' ' -f2)" "$SSHD_FINGERPRINT"
check_eq "a certificate for the principal logs in as the test user" \
	"$(login user -- id -un 2>&1)" "$SSHD_USER"
check_eq "the session has the cluster's SLURM_CONF (sshd's SetEnv)" \
	"$(login user -- 'printf %s "$SLURM_CONF"' 2>&1)" "$STACK_SLURM_CONF"

# ---- the job cycle --------------------------------------------------------
# wait_job ID STATES SECONDS: until squeue (through ssh) shows one of the
# STATES (a regex) for ID; leaves the last state seen in GOT
GOT=
wait_job() {
	local deadline=$(($(date +%s) + $3))
	while :; do
		GOT=$(login user -- squeue -h --states=all -j "$1" -o %T 2>&1)
		grep -Eqx -- "$2" <<<"$GOT" && return 0
		[ "$(date +%s)" -lt "$deadline" ] || return 1
		sleep 0.5
	done
}
id=$(login user -- sbatch --parsable -D "$JOBS" -o "$JOBS/out-%j.txt" 2>"$T/sbatch.err" <<'EOF'
#!/bin/sh
echo "ran as $(id -un) on $SLURMD_NODENAME in $(pwd)"
EOF
)
check_match "sbatch --parsable (script on stdin) prints the job id" \
	"$id $(cat "$T/sbatch.err")" '^[0-9]+ $'
if wait_job "$id" COMPLETED 60; then
	pass "the job reaches COMPLETED"
else
	fail "the job reaches COMPLETED (got '$GOT')"
fi
check_match "its output file: run as the test user, in its folder" \
	"$(cat "$JOBS/out-$id.txt" 2>&1)" \
	"^ran as $SSHD_USER on gpu-[ab] in $JOBS\$"
login user -- squeue --json >"$T/squeue.json" 2>"$T/squeue.err"
check_eq "squeue --json: the job, COMPLETED, of the test user" \
	"$(json "' '.join(j['job_state'] + '/' + j['user_name'] for j in d['jobs'] if j['job_id'] == $id)" <"$T/squeue.json" 2>&1)" \
	"COMPLETED/$SSHD_USER"
# sacct needs accounting (SLURM_ACCOUNTING=1 clusters); without it, Slurm
# says so and the backend reads squeue (MinJobAge keeps ended jobs there)
sacct_out=$(login user -- sacct --json -j "$id" 2>&1)
if [ "${SLURM_ACCOUNTING:-}" = 1 ]; then
	check_eq "sacct --json: the job is COMPLETED" \
		"$(json "' '.join(j['state']['current'] for j in d['jobs'] if j['job_id'] == $id)" <<<"$sacct_out" 2>&1)" \
		COMPLETED
else
	check_contains "sacct without accounting: Slurm says it is disabled" \
		"$sacct_out" "accounting storage is disabled"
fi

id=$(printf '#!/bin/sh\nsleep 300\n' |
	login user -- sbatch --parsable -D "$JOBS" -o /dev/null 2>&1)
if wait_job "$id" RUNNING 60; then
	pass "a long job runs"
else
	fail "a long job runs (got '$GOT' for '$id')"
fi
check_eq "scancel through ssh" "$(login user -- scancel "$id" 2>&1; echo "rc=$?")" rc=0
if wait_job "$id" CANCELLED 60; then
	pass "the cancelled job is CANCELLED"
else
	fail "the cancelled job is CANCELLED (got '$GOT')"
fi

# ---- a revoked certificate -------------------------------------------------
check_eq "a second certificate logs in" "$(login revoked -- echo in 2>&1)" in
ssh-keygen -q -k -u -f "$SSHD_KRL" "$T/keys/revoked-cert.pub" 2>"$T/krl.err"
check_eq "ssh-keygen -k -u adds it to the KRL" "$? $(cat "$T/krl.err")" "0 "
out=$(login revoked -- echo in 2>&1)
check_eq "once in the KRL, it is refused (ssh exits 255)" "$?" 255
check_contains "... with 'Permission denied'" "$out" "Permission denied (publickey)"
check_match "sshd logs it as revoked by the KRL" "$(cat "$SSHD_LOG")" \
	"Authentication key ED25519-CERT .* revoked by file $SSHD_KRL"
check_eq "the other certificate still logs in" "$(login user -- echo in 2>&1)" in

# ---- connections -------------------------------------------------------------
# (the fixture's tests take turns: no one else connects meanwhile)
n0=$(connections)
for i in 1 2 3 4 5; do login user -- true; done
check_eq "without a ControlMaster, five commands open five connections" \
	"$(($(connections) - n0))" 5
n0=$(connections)
got=
for i in 1 2 3 4 5; do
	got="$got$(login user "${CM_OPTS[@]}" -- squeue -h -j 1 -o %i 2>/dev/null; echo "$?") "
done
check_eq "five commands over a ControlMaster all run" "$got" "0 0 0 0 0 "
check_eq "... over one TCP connection" "$(($(connections) - n0))" 1
# (ssh ends that line with CR LF)
check_eq "the master stops on -O exit" \
	"$(login user "${CM_OPTS[@]}" -O exit -- 2>&1 | tr -d '\r')" "Exit request sent."

# ---- no forwarding -------------------------------------------------------------
eval "$(ssh-agent -a "$T/agent.sock" -s)" >/dev/null
AGENT_PID=${SSH_AGENT_PID:-}
ssh-add -q "$T/keys/user" 2>/dev/null
check_ne "a local agent holds the key (what -A would forward)" \
	"$(ssh-add -l 2>/dev/null | grep -c ED25519)" 0
check_eq "ssh -A: the session gets no agent socket" \
	"$(login user -A -- 'echo "${SSH_AUTH_SOCK:-none}"' 2>&1)" none
unset SSH_AUTH_SOCK
out=$(login user -o ExitOnForwardFailure=yes -R 0:127.0.0.1:"$SSHD_PORT" -- echo ran 2>&1)
check_eq "ssh -R: refused, the command does not run (ssh exits 255)" "$?" 255
check_contains "... 'remote port forwarding failed'" "$out" "remote port forwarding failed"
lport=$(free_ports 1)
login user -L "127.0.0.1:$lport:127.0.0.1:$SSHD_PORT" -- sleep 5 \
	>"$T/l.out" 2>&1 &
lpid=$!
# what comes back through the tunnel: sshd's banner if it were open
through=
for i in $(seq 1 30); do
	through=$(python3 - "$lport" <<'PY' 2>/dev/null
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3)
try:
    print(repr(s.recv(100)))
except OSError as e:
    print("error", e)
PY
) && break
	sleep 0.2
done
wait "$lpid"
check_eq "ssh -L: nothing comes back through the tunnel" "$through" "b''"
check_match "sshd logs the local forward as refused" "$(cat "$SSHD_LOG")" \
	"refused local port forward: originator 127\\.0\\.0\\.1 port [0-9]+, target 127\\.0\\.0\\.1 port $SSHD_PORT"
check_contains "... and the client hears 'administratively prohibited'" \
	"$(cat "$T/l.out")" "administratively prohibited"

finish
