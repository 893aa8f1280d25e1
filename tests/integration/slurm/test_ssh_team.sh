#!/usr/bin/env bash
# A team's SSH identities on the cluster's login node (issue 30; the sshd
# fixture alone, tests/stack/sshd-start.sh): team.lua's services.ssh, kept
# by the slurm_ssh backend's team service (the contract's team_services,
# no module of the team layer of its own). `navette team apply` gives alice
# and bob each a key and a certificate of their own, signed by the stack's
# user CA, for a principal of their own (navette-MEMBER) and the key id
# TEAM/MEMBER, handed over 0600; it writes what the admin installs (the
# TrustedUserCAKeys, AuthorizedPrincipalsFile and RevokedKeys lines, the
# CA's public key, the principals file of the login account); --plan makes
# nothing, a second apply says "no changes". Installed (the test plays the
# admin), both log in with plain ssh. `navette team revoke bob` adds bob's
# key id to the KRL sshd reads (SSHD_KRL) and proves it: ssh-keygen -Q says
# REVOKED and a login with his certificate is refused. Then bob's login is
# refused (sshd: "revoked by file") while alice still logs in, and the next
# apply drops bob's principal (another admin's apply signs him nothing:
# the KRL says he is revoked); `team apply --readmit bob` signs a new key of
# his under the next key id (TEAM/bob.2: the KRL only grows), and he logs
# in again. Needs SSHD_STACK_ENV (ctest's fixture).
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

if [ ! -r "${SSHD_STACK_ENV:-}" ]; then
	echo "FAIL: SSHD_STACK_ENV is not set to a readable file (ctest sets it)" >&2
	exit 1
fi
for tool in ssh ssh-keygen; do
	command -v "$tool" >/dev/null 2>&1 || {
		skip "a team on the login node" "$tool is not installed (openssh-client)"
		finish
	}
done
unset SSH_AUTH_SOCK SSH_AGENT_PID
. "$SSHD_STACK_ENV"
started=$(date +%s)

# The login account's principals file, as the stack made it: the admin's
# install appends the team's lines; the file is restored at the end (the
# fixture serves other tests).
PRINCIPALS=$(dirname "$SSHD_CA")/principals/$SSHD_USER
if [ ! -f "$PRINCIPALS" ]; then
	fail "the stack's principals file $PRINCIPALS exists"
	finish
fi
cp "$PRINCIPALS" "$T/principals.orig"
restore() {
	cp "$T/principals.orig" "$PRINCIPALS.nv$$" && mv "$PRINCIPALS.nv$$" "$PRINCIPALS"
}
trap 'st=$?; restore; (exit $st); _cleanup' EXIT

# a team name of this run's own: the fixture's KRL outlives a test
TEAM=vision$$
HANDOFF=$NAVETTE_HOME/team/$TEAM
FILES=$T/login-node
R=$(new_repo team)
cat >"$R/navette.lua" <<EOF
return {
  name = "team", default_profile = "login",
  credentials = {
    teamca = { kind = "pem", source = "file", path = "$SSHD_CA" },
    loginkey = { kind = "pem", source = "file", path = "$T/admin-key" },
  },
  profiles = {
    login = {
      backend = "slurm_ssh", storage = "s3://unused/",
      credentials = { "teamca" },
      s3 = { endpoint = "http://127.0.0.1:9", region = "us-east-1" },
      slurm_ssh = {
        ssh = { host = "$SSHD_HOST", port = $SSHD_PORT, user = "$SSHD_USER",
                host_key = "$SSHD_FINGERPRINT" },
        credential = "loginkey",
      },
    },
  },
}
EOF
cat >"$R/team.lua" <<EOF
return {
  name = "$TEAM",
  members = {
    alice = { name = "Alice", email = "alice@example.com", roles = { "dev" } },
    bob = { name = "Bob", email = "bob@example.com", roles = { "dev" } },
    carol = { name = "Carol", email = "carol@example.com", roles = { "viewer" } },
  },
  roles = { dev = { "submit", "read-logs" }, viewer = { "read-logs" } },
  services = {
    ssh = { profile = "login", ca = "teamca", krl = "$SSHD_KRL",
            account = "$SSHD_USER", lifespan = "1h", files = "$FILES" },
  },
}
EOF
commit_all "$R" >/dev/null || {
	fail "the project is committed"
	finish
}

# login MEMBER: `true` on the login node with the member's handed-over key
# and certificate, plain OpenSSH, the stack's host key pinned
login() {
	bounded 30 ssh -F none -o BatchMode=yes -o StrictHostKeyChecking=yes \
		-o UserKnownHostsFile="$SSHD_KNOWN_HOSTS" -o IdentitiesOnly=yes \
		-o IdentityAgent=none -o ConnectTimeout=10 -o ControlPath=none \
		-i "$HANDOFF/$1.ssh-key" -o CertificateFile="$HANDOFF/$1.ssh-key-cert.pub" \
		-p "$SSHD_PORT" "$SSHD_USER@$SSHD_HOST" true 2>"$T/login.err"
}
cert() { ssh-keygen -L -f "$HANDOFF/$1.ssh-key-cert.pub" 2>&1; }

# ---- apply -----------------------------------------------------------------

nv_in "$R" team apply --plan
check_rc "team apply --plan" 0
check_match "the plan signs alice's certificate, principal and key id her own" "$OUT" \
	"^  \+ ssh: certificate for alice \(principal navette-alice, key id $TEAM/alice, valid 3600 s\)$"
check_match "... and bob's" "$OUT" "^  \+ ssh: certificate for bob \(principal navette-bob"
check_no_match "... and none for carol, who may not submit" "$OUT" "certificate for carol"
check_absent "the plan made no key" "$HANDOFF/alice.ssh-key"
check_absent "... and wrote no file for the login node" "$FILES"

nv_in "$R" team apply
check_rc "team apply" 0
for m in alice bob; do
	check_file "$m's key is handed over" "$HANDOFF/$m.ssh-key"
	check_eq "... 0600" "$(perl -e 'printf "%o", (stat shift)[2] & 0777' "$HANDOFF/$m.ssh-key")" 600
	check_match "$m's certificate has the key id $TEAM/$m" "$(cert $m)" "Key ID: \"$TEAM/$m\""
	check_match "... the principal navette-$m alone" "$(cert $m | sed -n '/Principals:/,/Critical/p' | tr -s ' \n' ' ')" \
		"^ *Principals: navette-$m Critical"
	check_contains "... is signed by the stack's CA" "$(cert $m)" \
		"Signing CA: ED25519 $(ssh-keygen -lf "$SSHD_CA.pub" | cut -d' ' -f2) "
	check_match "... and has no forwarding extension" "$(cert $m)" "Extensions: \(none\)"
done
check_absent "carol gets no key" "$HANDOFF/carol.ssh-key"
check_eq "the principals file of the login account lists alice's and bob's" \
	"$(cat "$FILES/principals/$SSHD_USER")" "navette-alice
navette-bob"
check_eq "the CA's public key is the stack's" "$(cut -d' ' -f1,2 "$FILES/user_ca.pub")" \
	"$(cut -d' ' -f1,2 "$SSHD_CA.pub")"
check_match "sshd_config's lines: TrustedUserCAKeys" "$(cat "$FILES/sshd_config")" \
	"^TrustedUserCAKeys /etc/ssh/navette-$TEAM/user_ca.pub$"
check_match "... AuthorizedPrincipalsFile per account" "$(cat "$FILES/sshd_config")" \
	"^AuthorizedPrincipalsFile /etc/ssh/navette-$TEAM/principals/%u$"
check_match "... RevokedKeys" "$(cat "$FILES/sshd_config")" \
	"^RevokedKeys /etc/ssh/navette-$TEAM/revoked.krl$"
check_match "apply says where the KRL comes from" "$OUT" "the KRL $SSHD_KRL as /etc/ssh/navette-$TEAM/revoked.krl"

nv_in "$R" team apply
check_rc "a second apply" 0
check_match "... says no changes" "$OUT" "^team $TEAM: no changes"

# ---- the admin installs; both log in ------------------------------------------

cat "$FILES/principals/$SSHD_USER" >>"$PRINCIPALS"
login alice
check_eq "alice logs in with her certificate" "$?" 0
login bob
check_eq "bob logs in with his" "$?" 0
check_match "sshd accepted bob's certificate by his key id" "$(cat "$SSHD_LOG")" \
	"Accepted certificate ID \"$TEAM/bob\""

# ---- revoke bob ------------------------------------------------------------------

nv_in "$R" team revoke bob
check_rc "team revoke bob" 0
check_match "it added bob's key id to the KRL" "$OUT" \
	"ssh: bob's key ids $TEAM/bob and key added to the KRL $SSHD_KRL"
check_match "its proof: the KRL revokes his certificate and the login node refuses it" "$OUT" \
	"ssh +certificate bob +refused: REVOKED in the KRL; login as $SSHD_USER refused"
check_eq "ssh-keygen -Q: bob's certificate is revoked" \
	"$(ssh-keygen -Q -f "$SSHD_KRL" "$HANDOFF/bob.ssh-key-cert.pub" | sed 's/.*: //')" REVOKED
check_eq "... alice's is not" \
	"$(ssh-keygen -Q -f "$SSHD_KRL" "$HANDOFF/alice.ssh-key-cert.pub" | sed 's/.*: //')" ok
bob_fp=$(ssh-keygen -lf "$HANDOFF/bob.ssh-key.pub" | cut -d' ' -f2)
bob_revoked() { grep -cF "ED25519-CERT $bob_fp revoked by file $SSHD_KRL" "$SSHD_LOG"; }
after_proof=$(bob_revoked)
check_true "the proof tried his certificate on the login node: sshd refused it, revoked by file" \
	[ "$after_proof" -ge 1 ]
login bob
check_eq "bob's login is refused" "$?" 255
check_match "... Permission denied" "$(cat "$T/login.err")" "Permission denied"
check_eq "sshd refused bob's certificate: revoked by file" "$(bob_revoked)" $((after_proof + 1))
login alice
check_eq "alice still logs in" "$?" 0

nv_in "$R" team apply
check_rc "apply after the revocation" 0
check_eq "... drops bob's principal from the account's file" \
	"$(cat "$FILES/principals/$SSHD_USER")" "navette-alice"
check_no_match "... and signs nothing for bob" "$OUT" "certificate for bob"

# another admin, whose machine did not revoke bob and whose team.lua does
# not say so yet: the KRL does, and apply signs him nothing
mkdir -p "$T/other-admin"
NAVETTE_HOME=$T/other-admin nv_in "$R" team apply --plan
check_rc "another admin's plan" 0
check_match "... says bob's key id is revoked in the KRL: nothing signed for him" "$OUT" \
	"^  ! ssh: bob's key id $TEAM/bob is revoked in the KRL $SSHD_KRL: no certificate signed"
check_no_match "... and plans no certificate for him" "$OUT" "certificate for bob"

# ---- readmit bob ---------------------------------------------------------------

old_bob_fp=$bob_fp
nv_in "$R" team apply --readmit bob
check_rc "team apply --readmit bob" 0
check_match "it signs bob's next certificate under the key id $TEAM/bob.2" "$OUT" \
	"^  ~ ssh: certificate for bob \(principal navette-bob, key id $TEAM/bob\.2, "
check_ne "... for a new key (the KRL holds his old one)" \
	"$(ssh-keygen -lf "$HANDOFF/bob.ssh-key.pub" | cut -d' ' -f2)" "$old_bob_fp"
check_eq "... and gives his principal back" \
	"$(cat "$FILES/principals/$SSHD_USER")" "navette-alice
navette-bob"
login bob
check_eq "bob logs in again" "$?" 0

elapsed=$(($(date +%s) - started))
check_true "the test took under 60 s ($elapsed s)" [ "$elapsed" -lt 60 ]
finish
