#!/usr/bin/env bash
# tests/stack/slurm-start.sh DIR — starts a throwaway Slurm 22.05 cluster for
# the tests: its own munged (own key and socket under DIR), slurmctld, two
# compute nodes gpu-a and gpu-b (two slurmd on this host, each with one fake
# GPU) and slurmrestd with rest_auth/jwt, all bound to 127.0.0.1 and
# configured by DIR/slurm.conf through SLURM_CONF (never /etc). DIR must be
# missing or empty; state, spool and logs stay under it. Linux only, as root
# (Debian: slurmctld, slurmd, slurmrestd, slurm-client, munge; see
# vendor/packages.txt).
#
# The daemons run in the background in their own process groups; their PIDs
# are in DIR/run/*.pid and tests/stack/slurm-stop.sh DIR stops them.
# tests/stack/slurm-node.sh DIR kill|start NODE kills or restarts one node's
# slurmd (node failure tests). On success DIR/slurm.env holds, as shell
# assignments: SLURM_CONF, SLURMRESTD_URL, SLURM_JWT_KEY (the HS256 key
# file), SLURM_USER (the user jobs run as), SLURM_NODES, SLURM_PARTITION and
# SLURM_API_VERSION. On failure it prints the end of the logs, stops what it
# started (DIR is kept for inspection) and exits non-zero.
#
# SLURM_ACCOUNTING=1 adds accounting, so that Slurm itself enforces
# associations and QOS limits (GrpTRES=gres/gpu=N, MaxJobsPerUser...): a
# private MariaDB (datadir DIR/db, socket DIR/run/mysqld.sock, 127.0.0.1
# only; never /etc/mysql) and slurmdbd (DIR/slurmdbd.conf, 0600, beside
# slurm.conf: slurmdbd reads it from SLURM_CONF's folder) start after munged,
# the cluster is added with `sacctmgr -i add cluster` (which makes account
# root and root's association), then slurmctld starts with
# AccountingStorageType=accounting_storage/slurmdbd and
# AccountingStorageEnforce=associations,limits,qos,safe, and slurmrestd also
# serves the slurmdb API (dbv0.0.38). slurm.env then also holds
# SLURM_ACCOUNTING=1, SLURMDBD_PORT and SLURM_CLUSTER (the cluster's name
# for sacctmgr). Debian: mariadb-server and slurmdbd (vendor/packages.txt).
#
# Environment (all optional):
#   SLURM_PORT         slurmctld port (6817); the others follow it
#   SLURMD_PORT_A      slurmd of gpu-a (SLURM_PORT+1)
#   SLURMD_PORT_B      slurmd of gpu-b (SLURM_PORT+2)
#   SLURMRESTD_PORT    slurmrestd (SLURM_PORT+3)
#   SLURM_ACCOUNTING   1: slurmdbd and MariaDB as above (default: none)
#   SLURMDBD_PORT      slurmdbd, with SLURM_ACCOUNTING=1 (SLURM_PORT+4)
#   SLURM_DB_PORT      MariaDB, with SLURM_ACCOUNTING=1 (SLURM_PORT+5)
#   SLURMD_TIMEOUT     seconds before a silent node is declared down (10)
#   SLURM_START_TIMEOUT  seconds before giving up (60)
set -eu -o pipefail
. "$(dirname "$0")/../need_dir_lib.sh"

if [ $# -ne 1 ] || [ -z "$1" ]; then
	echo "usage: $0 DIR" >&2
	exit 2
fi
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
DIR=$(realpath -m "$1")
need_dir DIR

CTLD_PORT=${SLURM_PORT:-6817}
PORT_A=${SLURMD_PORT_A:-$((CTLD_PORT + 1))}
PORT_B=${SLURMD_PORT_B:-$((CTLD_PORT + 2))}
REST_PORT=${SLURMRESTD_PORT:-$((CTLD_PORT + 3))}
ACCOUNTING=
[ "${SLURM_ACCOUNTING:-0}" = 1 ] && ACCOUNTING=1
DBD_PORT=${SLURMDBD_PORT:-$((CTLD_PORT + 4))}
DB_PORT=${SLURM_DB_PORT:-$((CTLD_PORT + 5))}
CLUSTER=navettetest
NODE_TIMEOUT=${SLURMD_TIMEOUT:-10}
LIMIT=${SLURM_START_TIMEOUT:-60}
# The only version whose plugin works without slurmdbd in 22.05 (the
# default set also loads the accounting one, which is fatal without it).
API=v0.0.38
REST_URL=http://127.0.0.1:$REST_PORT
# slurmrestd's plugins: with slurmdbd, the slurmdb API's too.
PLUGINS=$API
[ -z "$ACCOUNTING" ] || PLUGINS=$API,db$API

started_ns=$(date +%s%N)
deadline=$(($(date +%s) + LIMIT))

say() { printf 'slurm-start: %s\n' "$*"; }

for tool in munged munge unmunge slurmctld slurmd slurmrestd scontrol sinfo \
	sbatch curl realpath setsid; do
	command -v "$tool" >/dev/null 2>&1 || {
		say "error: $tool not found (install the Slurm stack rows of vendor/packages.txt)" >&2
		exit 1
	}
done
if [ -n "$ACCOUNTING" ]; then
	for tool in mariadbd mariadb-install-db mariadb-admin mariadb slurmdbd \
		sacctmgr; do
		command -v "$tool" >/dev/null 2>&1 || {
			say "error: $tool not found (SLURM_ACCOUNTING=1 needs mariadb-server and slurmdbd: vendor/packages.txt)" >&2
			exit 1
		}
	done
fi
if [ "$(id -u)" -ne 0 ]; then
	say "error: the test cluster runs its daemons as root (SlurmUser=root)" >&2
	exit 1
fi
if [ -n "$(ls -A "$DIR" 2>/dev/null)" ]; then
	say "error: $DIR is not empty (run tests/stack/slurm-stop.sh and remove it)" >&2
	exit 1
fi

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
PORTS="$CTLD_PORT $PORT_A $PORT_B $REST_PORT"
[ -z "$ACCOUNTING" ] || PORTS="$PORTS $DBD_PORT $DB_PORT"
for p in $PORTS; do
	if port_busy "$p"; then
		say "error: port $p on 127.0.0.1 is in use (set SLURM_PORT to move the stack)" >&2
		exit 1
	fi
done

mkdir -p "$DIR"/{run,log,state,munge}
# slurmrestd runs as nobody: it must read the config and reach munge.
chmod 755 "$DIR" "$DIR/run" "$DIR/munge"
chmod 700 "$DIR/state"

on_exit() {
	local status=$?
	[ "$status" -ne 0 ] || return 0
	say "error: the Slurm stack did not start (status $status); last logs:" >&2
	local f
	for f in "$DIR"/log/*; do
		[ -f "$f" ] || continue
		echo "---- $f" >&2
		tail -n 25 "$f" >&2
	done
	bash "$HERE/slurm-stop.sh" "$DIR" >&2 || true
	exit "$status"
}
trap on_exit EXIT

now_left() { [ "$(date +%s)" -lt "$deadline" ]; }

# wait_until WHAT DAEMON COMMAND...: polls COMMAND until it succeeds, the
# deadline passes or DAEMON (a name given to spawn) has exited.
wait_until() {
	local what=$1 daemon=$2
	shift 2
	until "$@" >/dev/null 2>&1; do
		if ! kill -0 "$(cat "$DIR/run/$daemon.pid")" 2>/dev/null; then
			say "error: $daemon exited while waiting for $what" >&2
			return 1
		fi
		if ! now_left; then
			say "error: timed out after ${LIMIT}s waiting for $what" >&2
			return 1
		fi
		sleep 0.3
	done
}

# Keys: munge's (1 KiB) and the JWT signing key (32 bytes), both 0600.
umask 077
head -c 1024 /dev/urandom >"$DIR/munge/munge.key"
head -c 32 /dev/urandom >"$DIR/jwt_hs256.key"
umask 022

CONF=$DIR/slurm.conf
ACCT_CONF="AccountingStorageType=accounting_storage/none"
if [ -n "$ACCOUNTING" ]; then
	# AccountingStoragePass names the munge socket of slurmdbd's traffic
	# (else sacctmgr and slurmctld use /run/munge's).
	ACCT_CONF="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
AccountingStoragePass=$DIR/munge/munge.sock
AccountingStorageEnforce=associations,limits,qos,safe
AccountingStorageTRES=gres/gpu"
fi
cat >"$CONF" <<EOF
# Generated by tests/stack/slurm-start.sh: a throwaway test cluster.
ClusterName=$CLUSTER
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
# cred_expire also delays the restart of a requeued job (default 120 s).
AuthInfo=socket=$DIR/munge/munge.sock,cred_expire=10
CredType=cred/munge
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key=$DIR/jwt_hs256.key
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
$ACCT_CONF
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/backfill
# A requeued job becomes eligible when its begin time passes, and only a
# scheduling pass starts it then (the backfill one: 30 s by default).
SchedulerParameters=bf_interval=2
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# Without it a job takes its node's whole memory: one job per node.
DefMemPerCPU=100
GresTypes=gpu
SlurmctldPort=$CTLD_PORT
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool-%n
SlurmdPidFile=$DIR/run/slurmd-%n.daemonpid
SlurmctldPidFile=$DIR/run/slurmctld.daemonpid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
ReturnToService=2
# Node failure tests want a dead slurmd noticed quickly.
SlurmdTimeout=$NODE_TIMEOUT
MessageTimeout=5
JobRequeue=1
MinJobAge=600
MaxJobCount=20000
NodeName=gpu-a NodeHostname=localhost NodeAddr=127.0.0.1 Port=$PORT_A CPUs=2 RealMemory=2000 Gres=gpu:1 State=UNKNOWN
NodeName=gpu-b NodeHostname=localhost NodeAddr=127.0.0.1 Port=$PORT_B CPUs=2 RealMemory=2000 Gres=gpu:1 State=UNKNOWN
PartitionName=debug Nodes=gpu-a,gpu-b Default=YES MaxTime=INFINITE State=UP
# What a site sets up for podman on its nodes (jobs in images): here runc
# (crun cannot start containers on hybrid cgroups) and limits a container
# may set on this machine; slurmstepd reads the task's environment from it.
TaskProlog=$DIR/task-prolog.sh
EOF
mkdir -p "$DIR/containers"
cat >"$DIR/containers/containers.conf" <<'EOF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
EOF
printf '#!/bin/sh\necho "export CONTAINERS_CONF=%s/containers/containers.conf"\n' \
	"$DIR" >"$DIR/task-prolog.sh"
chmod 755 "$DIR/task-prolog.sh"
# One fake GPU per node (its device is /dev/null): enough to schedule
# --gpus; nothing here uses a real GPU.
cat >"$DIR/gres.conf" <<EOF
NodeName=gpu-a Name=gpu File=/dev/null
NodeName=gpu-b Name=gpu File=/dev/null
EOF
mkdir -p "$DIR/spool-gpu-a" "$DIR/spool-gpu-b"
export SLURM_CONF=$CONF

# spawn NAME COMMAND...: runs a daemon in the background in its own process
# group (setsid), records its PID and the command that started it.
spawn() {
	local name=$1
	shift
	printf '%q ' "$@" >"$DIR/run/$name.cmd"
	setsid "$@" >>"$DIR/log/$name.out" 2>&1 </dev/null &
	echo $! >"$DIR/run/$name.pid"
}

spawn munged munged -F -f --socket="$DIR/munge/munge.sock" \
	--key-file="$DIR/munge/munge.key" --pid-file="$DIR/run/munged.daemonpid" \
	--log-file="$DIR/log/munged.log" --seed-file="$DIR/munge/munged.seed"
munge_ok() {
	munge -S "$DIR/munge/munge.sock" -n | unmunge -S "$DIR/munge/munge.sock"
}
wait_until "munged" munged munge_ok

if [ -n "$ACCOUNTING" ]; then
	# MariaDB of our own: --no-defaults first (else /etc/mysql is read);
	# Unix root is its root over the socket, slurmdbd comes in by TCP as
	# 'slurm'@'127.0.0.1' (--skip-name-resolve).
	DB_SOCK=$DIR/run/mysqld.sock
	DB_PASS=$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')
	mariadb-install-db --no-defaults --datadir="$DIR/db" --user=root \
		--skip-test-db --skip-name-resolve \
		>"$DIR/log/mariadb-install-db.log" 2>&1
	spawn mariadbd mariadbd --no-defaults --datadir="$DIR/db" \
		--socket="$DB_SOCK" --port="$DB_PORT" --bind-address=127.0.0.1 \
		--pid-file="$DIR/run/mariadbd.daemonpid" \
		--log-error="$DIR/log/mariadbd.err" --user=root --skip-name-resolve \
		--innodb-buffer-pool-size=256M --innodb-log-file-size=64M \
		--innodb-lock-wait-timeout=900
	wait_until "mariadbd" mariadbd \
		mariadb-admin --no-defaults --socket="$DB_SOCK" ping
	mariadb --no-defaults --socket="$DB_SOCK" -u root -e \
		"CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
		 GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
	# slurmdbd has no -f: it reads slurmdbd.conf beside $SLURM_CONF, and
	# refuses one that group or others can read.
	umask 077
	cat >"$DIR/slurmdbd.conf" <<EOF
# Generated by tests/stack/slurm-start.sh (SLURM_ACCOUNTING=1).
AuthType=auth/munge
AuthInfo=socket=$DIR/munge/munge.sock
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key=$DIR/jwt_hs256.key
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
DebugLevel=info
LogFile=$DIR/log/slurmdbd.log
PidFile=$DIR/run/slurmdbd.daemonpid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=$DB_PASS
StorageLoc=slurm_acct_db
EOF
	umask 022
	# (its command line names no DIR: slurm-stop.sh knows it by the
	# SLURM_CONF of its environment)
	spawn slurmdbd env SLURM_CONF="$CONF" slurmdbd -D
	dbd_ok() {
		port_busy "$DBD_PORT" && timeout 10 sacctmgr -n show cluster
	}
	wait_until "slurmdbd" slurmdbd dbd_ok
	timeout 20 sacctmgr -i add cluster "$CLUSTER" >>"$DIR/log/sacctmgr.log" 2>&1
fi

spawn slurmctld slurmctld -D -f "$CONF"
wait_until "slurmctld" slurmctld scontrol ping

spawn slurmd-gpu-a slurmd -D -f "$CONF" -N gpu-a
spawn slurmd-gpu-b slurmd -D -f "$CONF" -N gpu-b
nodes_idle() {
	[ "$(sinfo -h -N -t idle -o '%N' | sort -u | tr '\n' ' ')" = "gpu-a gpu-b " ]
}
wait_until "gpu-a and gpu-b to be idle" slurmd-gpu-b nodes_idle

# slurmrestd refuses to run as root; SLURM_JWT=daemon makes it talk to
# slurmctld with each client's token.
spawn slurmrestd env SLURM_JWT=daemon SLURM_CONF="$CONF" slurmrestd \
	-f "$CONF" -s "$PLUGINS" -a rest_auth/jwt -u nobody -g nogroup \
	"127.0.0.1:$REST_PORT"
token=$(scontrol token username=root lifespan=60 | sed -n 's/^SLURM_JWT=//p')
rest_ok() {
	curl -sf -o /dev/null --max-time 5 -H "X-SLURM-USER-NAME: root" \
		-H "X-SLURM-USER-TOKEN: $token" "$REST_URL/slurm/$API/ping"
}
wait_until "slurmrestd to answer a ping" slurmrestd rest_ok

cat >"$DIR/slurm.env.tmp" <<EOF
SLURM_CONF=$CONF
SLURMRESTD_URL=$REST_URL
SLURM_JWT_KEY=$DIR/jwt_hs256.key
SLURM_USER=root
SLURM_NODES=gpu-a,gpu-b
SLURM_PARTITION=debug
SLURM_API_VERSION=$API
EOF
if [ -n "$ACCOUNTING" ]; then
	cat >>"$DIR/slurm.env.tmp" <<EOF
SLURM_ACCOUNTING=1
SLURMDBD_PORT=$DBD_PORT
SLURM_CLUSTER=$CLUSTER
EOF
fi
mv "$DIR/slurm.env.tmp" "$DIR/slurm.env"

ms=$((($(date +%s%N) - started_ns) / 1000000))
say "up in $((ms / 1000)).$(printf '%03d' $((ms % 1000))) s: $REST_URL (dir $DIR, pids $(cat "$DIR"/run/*.pid | tr '\n' ' ' | sed 's/ $//'))"
