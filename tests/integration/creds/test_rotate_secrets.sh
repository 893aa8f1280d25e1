#!/usr/bin/env bash
# Rotating a registry's htpasswd password and a Slurm JWT key (issue 15,
# rotate-keys' tasks rotate-registry-password and rotate-slurm-key) against
# a registry and a Slurm cluster of this test's own (tests/stack, on free
# ports: the shared fixtures' secrets are not changed under other tests).
# For each: `navette maintain --plan --task` stages nothing; `--once`
# stages a new secret (NAVETTE_HOME/staged/HASH-NAME, 0600), leaves the
# credential and the server as they were, prints the operator's steps and
# fails; a second run before the steps keeps the same staged secret; the
# steps applied here (the htpasswd line put in the registry's file; the
# key installed and slurmctld restarted), the next run stores the new
# secret, the server accepts it (curl, a JWT made by python) and refuses
# the old one, the staged file is gone, the audit log has creds.stage and
# creds.store, and no new secret is in any output or the audit log.
# The Slurm half runs as root only (the cluster's daemons do). Run by
# hand without its variables (NAVETTE, NAVETTE_SOURCE, a temporary folder)
# it refuses to start (exit 2) before it writes anything.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

for tool in docker-registry htpasswd curl; do
	if ! command -v "$tool" >/dev/null; then
		skip "rotations" "$tool is not installed (vendor/packages.txt, group test)"
		finish
	fi
done
chmod 755 "$T"
STACK=$NAVETTE_SOURCE/tests/stack
REG=$T/registry
SLURM=$T/slurm
need_dir REG SLURM
stop_stacks() {
	[ -d "$REG/run" ] && bash "$STACK/registry-stop.sh" "$REG" >/dev/null 2>&1
	[ -d "$SLURM/run" ] && bash "$STACK/slurm-stop.sh" "$SLURM" >/dev/null 2>&1
	return 0
}
trap 'st=$?; stop_stacks; (exit $st); _cleanup' EXIT

read -r P1 P2 P3 P4 <<<"$(free_ports 4 | tr '\n' ' ')"
if ! REGISTRY_PORT=$P1 REGISTRY_BASIC_PORT=$P2 REGISTRY_TOKEN_PORT=$P3 \
	REGISTRY_ISSUER_PORT=$P4 bash "$STACK/registry-start.sh" "$REG" >"$T/registry-start.log" 2>&1; then
	fail "a registry of this test starts: $(tail -5 "$T/registry-start.log")"
	finish
fi
. "$REG/registry.env"
HAVE_SLURM=
if [ "$(id -u)" -eq 0 ] && command -v slurmctld >/dev/null; then
	read -r S1 S2 S3 S4 <<<"$(free_ports 4 | tr '\n' ' ')"
	if SLURM_PORT=$S1 SLURMD_PORT_A=$S2 SLURMD_PORT_B=$S3 SLURMRESTD_PORT=$S4 \
		bash "$STACK/slurm-start.sh" "$SLURM" >"$T/slurm-start.log" 2>&1; then
		HAVE_SLURM=1
		. "$SLURM/slurm.env"
		export SLURM_CONF
	else
		fail "a Slurm cluster of this test starts: $(tail -5 "$T/slurm-start.log")"
	fi
else
	skip "the Slurm key's rotation" "the test cluster runs as root, with Slurm installed"
fi

# the credentials' files, in the folder navette keeps for project rot's
# credentials (creds.store writes only there)
CRED_DIR=$HOME/.navette/rot
need_dir CRED_DIR
mkdir -p "$CRED_DIR"
chmod 700 "$CRED_DIR"
printf '%s:%s\n' "$REGISTRY_BASIC_USER" "$REGISTRY_BASIC_PASSWORD" >"$CRED_DIR/registry-svc"
if [ -n "$HAVE_SLURM" ]; then
	cp "$SLURM_JWT_KEY" "$CRED_DIR/slurm-key"
	cp "$SLURM_JWT_KEY" "$T/old-slurm.key"
	SLURM_URL=$SLURMRESTD_URL
else
	head -c 32 /dev/urandom >"$CRED_DIR/slurm-key"
	SLURM_URL=http://127.0.0.1:9
fi
chmod 600 "$CRED_DIR/registry-svc" "$CRED_DIR/slurm-key"

R=$(new_repo rot)
need_dir R
cat >"$R/navette.lua" <<EOF
return {
  name = "rot",
  default_profile = "hpc",
  credentials = {
    ["registry-svc"] = { kind = "basic", source = "file",
                         path = "$CRED_DIR/registry-svc",
                         host = "$REGISTRY_BASIC" },
    ["slurm-key"] = { kind = "hs256", source = "file",
                      path = "$CRED_DIR/slurm-key" },
  },
  profiles = {
    hpc = { backend = "slurm", storage = "s3://rot-unused/",
            credentials = { "registry-svc" },
            s3 = { endpoint = "http://127.0.0.1:9" },
            slurm = { endpoint = "$SLURM_URL", user = "root",
                      credential = "slurm-key", partition = "debug" } },
  },
  maintenance = { "recipes/maintenance/rotate-keys.lua" },
}
EOF
mkdir -p "$R/recipes/maintenance"
cp "$NAVETTE_SOURCE/recipes/maintenance/rotate-keys.lua" "$R/recipes/maintenance/"
commit_all "$R" >/dev/null

maintain() { nv_in "$R" maintain "$@"; }
STAGED=$NAVETTE_HOME/staged
# staged NAME: the path of the value staged for credential NAME (kept per
# checkout and declaration: staged/HASH-NAME), or a path that is not there
staged() {
	local f
	for f in "$STAGED"/*-"$1"; do
		[ -e "$f" ] && { printf '%s\n' "$f"; return 0; }
	done
	printf '%s\n' "$STAGED/none-$1"
}
AUDIT=$NAVETTE_HOME/audit/audit.jsonl
mode() { python3 -c 'import os,sys; print(oct(os.stat(sys.argv[1]).st_mode & 0o777))' "$1"; }
# http_code USER:PASSWORD: the basic registry's answer to GET /v2/
http_code() { curl -s -o /dev/null -w '%{http_code}' -u "$1" "http://$REGISTRY_BASIC/v2/"; }
# absent WHAT SECRET FILE...: SECRET is in none of the files
absent() {
	local what=$1 secret=$2 f
	shift 2
	for f in "$@"; do
		if [ -f "$f" ] && grep -qF -- "$secret" "$f"; then
			fail "$what (the secret is in $f)"
			return
		fi
	done
	pass "$what"
}

# ---- the registry's password -------------------------------------------------
OLD_PW=$REGISTRY_BASIC_PASSWORD
maintain --plan --task rotate-registry-password
check_rc "maintain --plan --task runs one task in plan mode" 0
check_match "the plan says what it would do" "$OUT" "would stage a new password of registry-svc"
check_absent "the plan stages nothing" "$(staged registry-svc)"

maintain --once --task rotate-registry-password
check_rc "the first run stages a password and fails, waiting for the operator" 1
check_match "it prints the htpasswd line to put in" "$OUT" '^ +navette:\$2y\$10\$[./A-Za-z0-9]{53}$'
check_match "and the step that finishes it" "$OUT" "maintain --once --task rotate-registry-password"
check_file "the new password is staged" "$(staged registry-svc)"
check_eq "the staged file is 0600" "$(mode "$(staged registry-svc)")" 0o600
check_eq "the credential still holds the old password" \
	"$(cut -d: -f2- "$CRED_DIR/registry-svc")" "$OLD_PW"
check_eq "the registry still accepts the old password" "$(http_code "navette:$OLD_PW")" 200
NEW_PW=$(cut -d: -f2- "$(staged registry-svc)")
check_match "the staged password is 32 characters of [A-Za-z0-9]" "$NEW_PW" '^[A-Za-z0-9]{32}$'
check_no_match "the run's output never shows it" "$OUT$ERR" "$NEW_PW"
LINE=$(printf '%s\n' "$OUT" | grep -Eo 'navette:\$2y\$[^ ]+$')
STAGED_SUM=$(sha256 "$(staged registry-svc)")

maintain --once --task rotate-registry-password
check_rc "a run before the operator's steps fails again" 1
check_eq "with the same staged password" "$(sha256 "$(staged registry-svc)")" "$STAGED_SUM"

# the operator's step: the line replaces navette's in the htpasswd file
printf '%s\n' "$LINE" >"$REG/htpasswd.new" && mv "$REG/htpasswd.new" "$REG/htpasswd"
check_eq "the registry accepts the staged password from the printed line" \
	"$(http_code "navette:$NEW_PW")" 200
check_eq "and refuses the old one" "$(http_code "navette:$OLD_PW")" 401
maintain --once --task rotate-registry-password
check_rc "the next run finishes the rotation" 0
check_match "it says so" "$OUT" "new password is stored in registry-svc; the server refuses the old one"
check_eq "the credential holds the new password" \
	"$(cut -d: -f2- "$CRED_DIR/registry-svc")" "$NEW_PW"
check_eq "the credential's file is 0600" "$(mode "$CRED_DIR/registry-svc")" 0o600
check_absent "the staged file is gone" "$(staged registry-svc)"
check_match "the audit log has creds.stage" "$(cat "$AUDIT")" '"action":"creds.stage","target":"[^"]*staged/[0-9a-f]{16}-registry-svc"'
check_match "and creds.store" "$(cat "$AUDIT")" '"action":"creds.store","target":"[^"]*/registry-svc"'
absent "the new password is in no output or audit line" "$NEW_PW" "$AUDIT" "$T/.out" "$T/.err"

# a second rotation from the new password converges the same way
maintain --once --task rotate-registry-password
check_rc "a second rotation stages another password" 1
NEXT_PW=$(cut -d: -f2- "$(staged registry-svc)")
check_ne "another password" "$NEXT_PW" "$NEW_PW"
printf '%s\n' "$OUT" | grep -Eo 'navette:\$2y\$[^ ]+$' >"$REG/htpasswd.new" && mv "$REG/htpasswd.new" "$REG/htpasswd"
maintain --once --task rotate-registry-password
check_rc "and stores it once the registry holds it" 0
check_eq "the registry refuses the first rotation's password now" "$(http_code "navette:$NEW_PW")" 401

# a registry that cannot be reached proves nothing: the run fails, nothing
# moves
maintain --once --task rotate-registry-password
check_rc "(a third rotation staged)" 1
bash "$STACK/registry-stop.sh" "$REG" >/dev/null 2>&1
THIRD_SUM=$(sha256 "$(staged registry-svc)")
maintain --once --task rotate-registry-password
check_rc "with the registry down the run fails" 1
check_match "saying it cannot reach it" "$OUT$ERR" "cannot reach"
check_eq "the staged password stays" "$(sha256 "$(staged registry-svc)")" "$THIRD_SUM"
check_eq "the credential is unchanged" "$(cut -d: -f2- "$CRED_DIR/registry-svc")" "$NEXT_PW"

# ---- the Slurm key -------------------------------------------------------------
if [ -n "$HAVE_SLURM" ]; then
	# slurm_code KEYFILE: slurmrestd's answer to a job listing with a
	# token signed by KEYFILE (python's hmac, not navette)
	slurm_code() {
		local token
		token=$(python3 - "$1" <<'PY'
import base64, hashlib, hmac, json, sys, time
key = open(sys.argv[1], "rb").read()
b = lambda x: base64.urlsafe_b64encode(x).rstrip(b"=")
now = int(time.time())
head = b(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
body = b(json.dumps({"iat": now, "exp": now + 120, "sun": "root"}).encode())
sig = b(hmac.new(key, head + b"." + body, hashlib.sha256).digest())
print((head + b"." + body + b"." + sig).decode())
PY
)
		curl -s -o /dev/null -w '%{http_code}' -H "X-SLURM-USER-NAME: root" \
			-H "X-SLURM-USER-TOKEN: $token" \
			"$SLURMRESTD_URL/slurm/$SLURM_API_VERSION/jobs"
	}
	check_eq "the cluster accepts the old key" "$(slurm_code "$T/old-slurm.key")" 200
	maintain --plan --task rotate-slurm-key
	check_rc "maintain --plan stages no key" 0
	check_absent "(nothing staged)" "$(staged slurm-key)"
	maintain --once --task rotate-slurm-key
	check_rc "the first run stages a key and fails, waiting for the operator" 1
	check_match "it names the key file to install" "$OUT" "install -m 600 -o SLURMUSER $STAGED/[0-9a-f]{16}-slurm-key"
	check_contains "and the restart of slurmctld" "$OUT" "restart slurmctld"
	check_eq "the staged key is 32 bytes" "$(wc -c <"$(staged slurm-key)" | tr -d ' ')" 32
	check_eq "the staged key is 0600" "$(mode "$(staged slurm-key)")" 0o600
	check_true "the credential still holds the old key" cmp -s "$CRED_DIR/slurm-key" "$T/old-slurm.key"
	check_eq "the cluster refuses the staged key yet" "$(slurm_code "$(staged slurm-key)")" 500
	cp "$(staged slurm-key)" "$T/new-slurm.key"
	maintain --once --task rotate-slurm-key
	check_rc "a run before the steps fails again" 1
	check_true "with the same staged key" cmp -s "$(staged slurm-key)" "$T/new-slurm.key"

	# the operator's steps: the key installed (a new file, as install(1)
	# makes), slurmctld restarted
	install -m 600 "$(staged slurm-key)" "$SLURM_JWT_KEY.new" && mv "$SLURM_JWT_KEY.new" "$SLURM_JWT_KEY"
	check_true "slurmctld restarts" bash "$STACK/slurm-node.sh" "$SLURM" restart slurmctld
	maintain --once --task rotate-slurm-key
	check_rc "the next run finishes the rotation" 0
	check_match "it says so" "$OUT" "new key is stored in slurm-key; the server refuses the old one"
	check_true "the credential holds the new key" cmp -s "$CRED_DIR/slurm-key" "$T/new-slurm.key"
	check_absent "the staged key is gone" "$(staged slurm-key)"
	check_eq "the cluster accepts the new key" "$(slurm_code "$CRED_DIR/slurm-key")" 200
	check_eq "and refuses the old one" "$(slurm_code "$T/old-slurm.key")" 500
	check_match "the audit log has the key's creds.store" "$(cat "$AUDIT")" '"action":"creds.store","target":"[^"]*/slurm-key"'
	nv_in "$R" jobs --profile hpc
	check_rc "navette reaches the cluster with the stored key" 0
fi

# ---- a credential file outside navette's folders is not written --------------
printf 'other:secret\n' >"$T/elsewhere"
cat >"$R/navette.lua" <<EOF
return {
  name = "rot",
  default_profile = "hpc",
  credentials = {
    ["registry-svc"] = { kind = "basic", source = "file", path = "$T/elsewhere",
                         host = "$REGISTRY_BASIC" },
  },
  profiles = { hpc = { storage = "file://$T/store",
                       credentials = { "registry-svc" } } },
}
EOF
put_file "$R" recipes/store.lua <<'EOF'
local navette = require "navette"
navette.task { name = "store", schedule = "every 1d", run = function()
  local new = navette.creds.generate { kind = "basic", user = "navette" }
  navette.creds.store("registry-svc", new)
end }
EOF
commit_all "$R" >/dev/null
maintain --once recipes/store.lua
check_rc "storing a basic credential outside navette's folders fails the task" 1
check_match "saying why" "$OUT" "outside the folders navette keeps for project rot"
check_eq "the file is untouched" "$(cat "$T/elsewhere")" "other:secret"
finish
