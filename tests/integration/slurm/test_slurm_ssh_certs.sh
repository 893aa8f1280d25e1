#!/usr/bin/env bash
# Certificates that expire, on the slurm_ssh backend (fixtures "slurm",
# "sshd", "s3"): the login node accepts only certificates that its user CA
# (SSHD_CA) signed for SSHD_PRINCIPAL. Checks: `creds check` shows an
# ssh-cert's key id, serial, principals and validity, and flags an expired
# one (exit 1); an expired certificate with no signer is refused before
# any connection (sshd logs none), saying when it expired and what to run;
# with a signer (a command signing with SSHD_CA) the run gets a fresh
# certificate, logs in with it and the job succeeds; a key and certificate
# from a command source are written 0600 only around the ssh calls (none
# left in the runtime folder); a job log holding the key and the
# certificate is redacted; a project file holding a certificate is
# refused by the secret scan.
# Needs SLURM_STACK_ENV, SSHD_STACK_ENV and S3_STACK_ENV (set by ctest).
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

if [ ! -r "${SSHD_STACK_ENV:-}" ]; then
	echo "FAIL: SSHD_STACK_ENV is not set to a readable file (ctest sets it)" >&2
	exit 1
fi
for tool in ssh ssh-keygen ssh-keyscan python3; do
	command -v "$tool" >/dev/null 2>&1 || {
		skip "certificates on the login node" "$tool is not installed"
		finish
	}
done
use_slurm_stack sshcerts
# a login refused is retried by run --wait: a broken renewal fails here
NV_TIME_LIMIT=60
unset SSH_AUTH_SOCK SSH_AGENT_PID
. "$SSHD_STACK_ENV"
export XDG_RUNTIME_DIR=/tmp/nvcrt-$$
mkdir -m 700 "$XDG_RUNTIME_DIR"
RUNDIR=$XDG_RUNTIME_DIR/navette
trap 'st=$?; rm -rf "$XDG_RUNTIME_DIR"; (exit $st); _cleanup' EXIT

nv storage mb "s3://$BUCKET" "${EP[@]}"
check_rc "the bucket is created" 0

# the member's key, its certificate expired long ago
K=$T/keys
mkdir -p "$K"
ssh-keygen -q -t ed25519 -N '' -C member -f "$K/id"
ssh-keygen -q -s "$SSHD_CA" -I member-old -n "$SSHD_PRINCIPAL" -z 11 \
	-V 20200101:20200102 "$K/id.pub"
# a second key whose key and valid certificate a command prints
ssh-keygen -q -t ed25519 -N '' -C cmd -f "$K/cmd"
ssh-keygen -q -s "$SSHD_CA" -I member-cmd -n "$SSHD_PRINCIPAL" -z 12 \
	-V -5m:+1h "$K/cmd.pub"
python3 - "$K/cmd" "$K/cmd-cert.pub" >"$K/cmd.json" <<'EOF'
import json, sys
print(json.dumps({"Version": 1, "Key": open(sys.argv[1]).read(),
                  "Certificate": open(sys.argv[2]).read().strip()}))
EOF
chmod 600 "$K/cmd.json"
# the signer: the public key on stdin (and in NAVETTE_SSH_PUBKEY), the
# credential JSON with "Certificate" on stdout; counts its calls
cat >"$T/sign.sh" <<EOF
#!/bin/sh
set -eu
d=\$(mktemp -d)
cat >"\$d/k.pub"
[ "\$(cat "\$d/k.pub")" = "\$NAVETTE_SSH_PUBKEY" ] || exit 9
ssh-keygen -q -s "$SSHD_CA" -I member-renewed -n "$SSHD_PRINCIPAL" -z 21 \\
	-V -5m:+1h "\$d/k.pub"
echo signed >>"$T/signed"
printf '{"Version":1,"Certificate":"%s"}\n' "\$(cat "\$d/k-cert.pub")"
rm -rf "\$d"
EOF
chmod 755 "$T/sign.sh"
# the team's CA key as a credential of this user's (the signer = { ca })
cp "$SSHD_CA" "$K/team_ca"
chmod 600 "$K/team_ca"

SWD=$T/ssh-wd
mkdir -p "$SWD"
chmod 1777 "$SWD"

R=$T/repo
mkdir -p "$R/recipes"
profile() { # NAME CREDENTIAL [MORE [PROFILE_MORE]]
	cat <<EOF
    $1 = {
      backend = "slurm_ssh", ${4:-}
      storage = "s3://$BUCKET/",
      s3 = { endpoint = "$S3_ENDPOINT", region = "$S3_REGION" },
      slurm_ssh = {
        ssh = { host = "$SSHD_HOST", port = $SSHD_PORT, user = "$SSHD_USER",
                host_key = "$SSHD_FINGERPRINT" },
        credential = "$2", ${3:-}
        partition = "$SLURM_PARTITION", working_directory = "$SWD",
      },
    },
EOF
}
cat >"$R/navette.lua" <<EOF
return {
  name = "certs",
  default_profile = "expired",
  credentials = {
    loginkey = { kind = "ssh-cert", source = "file", path = "$K/id" },
    teamca = { kind = "pem", source = "file", path = "$K/team_ca" },
    cmdkey = { kind = "ssh-cert", source = "command",
               command = { "cat", "$K/cmd.json" } },
  },
  profiles = {
$(profile expired loginkey)
$(profile renew loginkey "signer = { command = { \"$T/sign.sh\" } },")
$(profile cmd cmdkey)
$(profile viaca loginkey "signer = { ca = \"teamca\", key_id = \"member-ca\",
                  principals = { \"$SSHD_PRINCIPAL\" }, lifetime = \"30m\" }," \
	'credentials = { "teamca" },')
  },
}
EOF
put_file "$R" recipes/hello.lua <<'EOF'
local navette = require "navette"
navette.job { name = "hello", command = { "sh", "-c", "echo hello from the node" } }
EOF
put_file "$R" recipes/leak.lua <<EOF
local navette = require "navette"
navette.job { name = "leak", command = { "sh", "-c",
  "cat $K/cmd; cat $K/cmd-cert.pub; echo cert=\$(cut -d' ' -f2 $K/cmd-cert.pub)" } }
EOF
# the job (the login node's user) reads the key: navette reads cmd.json
chmod 644 "$K/cmd" "$K/cmd-cert.pub"
chmod 755 "$K"
git -C "$R" init -q
commit_all "$R" >/dev/null
git init -q --bare "$T/origin.git"
git -C "$R" remote add origin "$T/origin.git"
git -C "$R" push -q origin HEAD:main 2>/dev/null
git -C "$R" fetch -q origin

connections() { grep -c '^Connection from ' "$SSHD_LOG"; }
B64_OLD=$(cut -d' ' -f2 "$K/id-cert.pub")
B64_CMD=$(cut -d' ' -f2 "$K/cmd-cert.pub")

# fixed strings, never in TEXT
lacks() { # WHAT TEXT FIXED
	if grep -qF -- "$3" <<<"$2"; then fail "$1 (it holds '$3')"; else pass "$1"; fi
}

# ---- creds check ----------------------------------------------------------------

nv_in "$R" creds check loginkey
check_rc "creds check of an expired certificate exits 1" 1
check_contains "it shows the key id, serial and principals" "$OUT" \
	"loginkey: certificate key id \"member-old\", serial 11, principals $SSHD_PRINCIPAL"
check_match "and the validity, expired" "$OUT" \
	'valid from 2020-01-01T00:00:00.000Z to 2020-01-02T00:00:00.000Z \(expired [0-9]+d ago\)'
check_match "its status is expired" "$OUT" '^loginkey +ssh-cert +file .* expired'
lacks "never the certificate itself" "$OUT$ERR" "$B64_OLD"
nv_in "$R" creds check cmdkey --profile cmd
check_rc "creds check of a valid certificate from a command exits 0" 0
check_match "it shows the time left" "$OUT" '\((59|60)m left\)'

# ---- an expired certificate, no signer: refused before connecting ------------------

c0=$(connections)
nv_in "$R" run recipes/hello.lua --profile expired
check_rc "an expired certificate with no signer is refused (exit 3)" 3
check_contains "it says when it expired" "$ERR" \
	'(key id "member-old", serial 11) expired at 2020-01-02T00:00:00.000Z'
check_contains "and that nothing was sent" "$ERR" 'nothing was sent'
check_contains "and what to run" "$ERR" 'navette creds check loginkey'
check_eq "no connection was made (sshd's log)" "$(connections)" "$c0"

# ---- with a signer: a fresh certificate, the job succeeds ------------------------

nv_in "$R" run recipes/hello.lua --profile renew --wait
check_rc "with a signer the run goes on (run --wait exits 0)" 0
check_match "the job succeeded" "$OUT" '^ *succeeded\b'
check_eq "the signer ran once" "$(wc -l <"$T/signed" | tr -d ' ')" 1
check_contains "sshd accepted the renewed certificate" "$(cat "$SSHD_LOG")" \
	'Accepted certificate ID "member-renewed" (serial 21)'
check_eq "no key or certificate left in the runtime folder" \
	"$(find "$RUNDIR" -name 'id-*' 2>/dev/null | wc -l | tr -d ' ')" 0
check_eq "the key file beside the user's is untouched (still expired)" \
	"$(cut -d' ' -f2 "$K/id-cert.pub")" "$B64_OLD"

# ---- a signer holding the team's CA: ssh-keygen -s in a 0700 folder ----------

nv_in "$R" run recipes/hello.lua --profile viaca
check_rc "with the CA as signer the job is submitted" 0
check_match "sshd accepted a certificate the CA signed for member-ca" \
	"$(cat "$SSHD_LOG")" 'Accepted certificate ID "member-ca" \(serial [0-9]+\)'
check_eq "no signing folder or CA key left in the runtime folder" \
	"$(find "$RUNDIR" \( -name 'sign-*' -o -name 'id-*' \) 2>/dev/null | wc -l | tr -d ' ')" 0

# ---- a command source: written only around ssh's calls; redacted logs ---------

nv_in "$R" run recipes/leak.lua --profile cmd --wait
check_rc "a key and certificate from a command: run --wait exits 0" 0
check_contains "sshd accepted the command's certificate" "$(cat "$SSHD_LOG")" \
	'Accepted certificate ID "member-cmd" (serial 12)'
check_eq "nothing left in the runtime folder" \
	"$(find "$RUNDIR" -name 'id-*' 2>/dev/null | wc -l | tr -d ' ')" 0
L=$(sub_id leak)
nv_in "$R" logs "$L"
check_rc "logs of the job exits 0" 0
check_contains "the job's log is there" "$OUT" 'cert='
lacks "the certificate is masked in the job's log" "$OUT" "$B64_CMD"
lacks "so is the private key" "$OUT" "$(sed -n 2p "$K/cmd")"
check_match "each says it was masked" "$OUT" 'cert=<redacted:'

# ---- the secret scan: a certificate in the project is refused ----------------

cp "$K/cmd-cert.pub" "$R/login-cert.pub"
commit_all "$R" >/dev/null
nv_in "$R" run recipes/hello.lua --profile cmd
check_ne "a project holding a certificate is refused" "$RC" 0
check_contains "by the secret scan, naming the file" "$ERR$OUT" 'login-cert.pub'
check_contains "and the rule" "$ERR$OUT" 'ssh-certificate'

finish
