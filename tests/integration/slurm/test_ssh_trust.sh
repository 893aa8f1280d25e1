#!/usr/bin/env bash
# First contact with a login node: `navette ssh trust PROFILE` against the
# real sshd of the test stack (fixture "sshd", alone). Checks: a project
# not trusted on this machine is refused before any connection; --yes
# without --expect is refused; a wrong --expect is refused with both
# fingerprints and nothing written; the right one pins the key in
# navette.lua (that profile only) and in navette's known_hosts file for the
# profile, with no login and no command on the node; the pin then carries
# a connection (OpenSSH with StrictHostKeyChecking=yes and the file
# navette wrote, as navette's own connections use it);
# a pin that is not the host's key is refused with both fingerprints,
# nothing written, nothing run; a project file whose shape navette cannot
# edit safely is left as it is, the line to add printed; on a terminal,
# answering yes pins the key and answering no writes nothing.
# Needs SSHD_STACK_ENV (set by ctest).
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status
HERE=$(cd "$(dirname "$0")" && pwd)

if [ ! -r "${SSHD_STACK_ENV:-}" ]; then
	echo "FAIL: SSHD_STACK_ENV is not set to a readable file (ctest sets it)" >&2
	exit 1
fi
for tool in ssh ssh-keygen; do
	command -v "$tool" >/dev/null 2>&1 || {
		skip "first contact with the login node" "$tool is not installed (openssh-client)"
		finish
	}
done
unset SSH_AUTH_SOCK SSH_AGENT_PID
. "$SSHD_STACK_ENV"
export XDG_RUNTIME_DIR=/tmp/nvtrust-$$
mkdir -m 700 "$XDG_RUNTIME_DIR"
trap 'st=$?; rm -rf "$XDG_RUNTIME_DIR"; (exit $st); _cleanup' EXIT

mkdir -p "$T/keys"
ssh-keygen -q -t ed25519 -N '' -C member -f "$T/keys/id"
ssh-keygen -q -s "$SSHD_CA" -I "member-$$" -n "$SSHD_PRINCIPAL" -V -5m:+1h \
	"$T/keys/id.pub"
ssh-keygen -q -t ed25519 -N '' -f "$T/keys/other"
OTHER_FP=$(ssh-keygen -lf "$T/keys/other.pub" | cut -d' ' -f2)

R=$T/repo
mkdir -p "$R"
git -C "$R" init -q
profile() { # NAME [HOST_KEY FIELD]
	cat <<EOF
    $1 = {
      backend = "slurm_ssh", storage = "s3://trust-b/",
      s3 = { endpoint = "http://127.0.0.1:9" },
      slurm_ssh = {
        ssh = { host = "$SSHD_HOST", port = $SSHD_PORT,
                user = "$SSHD_USER", ${2:-} },
        credential = "loginkey", certificate = "$T/keys/id-cert.pub",
      },
    },
EOF
}
cat >"$R/navette.lua" <<EOF
-- the login node's table written once, used by profile "shared"
local node = { host = "$SSHD_HOST", port = $SSHD_PORT, user = "$SSHD_USER" }
return {
  name = "hpc",
  credentials = {
    loginkey = { kind = "pem", source = "file", path = "$T/keys/id" },
  },
  profiles = {
$(profile fresh)
$(profile otherkey "host_key = \"$OTHER_FP\",")
$(profile asked)
$(profile declined)
    shared = {
      backend = "slurm_ssh", storage = "s3://trust-b/",
      s3 = { endpoint = "http://127.0.0.1:9" },
      slurm_ssh = { ssh = node, credential = "loginkey" },
    },
  },
}
EOF
NO_TRUST=1 commit_all "$R" >/dev/null

connections() { grep -c '^Connection from ' "$SSHD_LOG"; }
logins() { grep -c 'Accepted ' "$SSHD_LOG"; }
commands() { grep -c 'Starting session' "$SSHD_LOG"; }
sum() { shasum -a 256 "$R/navette.lua" | cut -d' ' -f1; }
KH=$NAVETTE_HOME/ssh
# the host_key field of profile NAME as the project file says it
pin_of() {
	(cd "$R" && "$NAVETTE" trust --show --json) |
		json "[l for l in d['bindings'].split('\n') if l.startswith('profiles.$1.slurm_ssh.ssh.host_key')]"
}

# ---- refusals before anything is sent ------------------------------------

c0=$(connections)
nv_in "$R" ssh trust fresh --yes --expect "$SSHD_FINGERPRINT"
check_rc "a project not trusted here is refused (exit 3)" 3
check_contains "it says the project is not trusted" "$ERR" "is not trusted on this machine"
check_contains "and to trust it first" "$ERR" "navette trust"
check_eq "no connection was made" "$(connections)" "$c0"
"$NAVETTE" trust "$R" >/dev/null

nv_in "$R" ssh trust fresh --yes
check_rc "--yes without --expect is refused (exit 2)" 2
check_contains "it asks for --expect" "$ERR" "--yes needs --expect"
check_eq "no connection was made for it" "$(connections)" "$c0"

nv_in "$R" ssh trust nosuch
check_rc "a profile that is not a slurm_ssh one is refused (exit 2)" 2
check_contains "it lists the slurm_ssh profiles" "$ERR" "asked, declined, fresh, otherkey, shared"

# ---- a wrong --expect ----------------------------------------------------

s0=$(sum) l0=$(logins) m0=$(commands)
nv_in "$R" ssh trust fresh --yes --expect "$OTHER_FP"
check_rc "an --expect that is not the host's key is refused (exit 3)" 3
check_contains "it gives the expected fingerprint" "$ERR" "expected $OTHER_FP"
check_contains "and the host's" "$ERR" "the host shows ssh-ed25519 $SSHD_FINGERPRINT"
check_contains "and says nothing was written" "$ERR" "nothing was written"
check_eq "navette.lua is unchanged" "$(sum)" "$s0"
check_absent "no known_hosts file was written" "$KH/fresh.known_hosts"
check_eq "the probe logged in nowhere" "$(logins)" "$l0"
check_eq "and ran nothing" "$(commands)" "$m0"

# ---- the right one -------------------------------------------------------

c0=$(connections)
nv_in "$R" ssh trust fresh --yes --expect "$SSHD_FINGERPRINT"
check_rc "the right --expect pins the key (exit 0)" 0
check_contains "it shows the key's type and fingerprint" "$OUT" \
	"shows its ssh-ed25519 host key:
  $SSHD_FINGERPRINT"
check_contains "and how to check it out of band" "$OUT" \
	"ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub"
check_eq "one connection" "$(connections)" "$((c0 + 1))"
check_eq "no login" "$(logins)" "$l0"
check_eq "no command" "$(commands)" "$m0"
check_contains "navette.lua pins it in profile fresh" "$(pin_of fresh)" \
	"profiles.fresh.slurm_ssh.ssh.host_key = \\\"$SSHD_FINGERPRINT\\\""
check_eq "and in no other profile" "$(pin_of asked)$(pin_of declined)" "[][]"
check_eq "the edit is one line's" \
	"$(git -C "$R" diff --numstat | awk '{print $1 " " $2 " " $3}')" "1 1 navette.lua"
check_eq "the user's trust follows the pin" \
	"$(cd "$R" && "$NAVETTE" trust --show --json | json 'd["state"]')" trusted
check_eq "navette's known_hosts for the profile holds the host's key" \
	"$(cut -d' ' -f2,3 "$KH/fresh.known_hosts")" "$(cut -d' ' -f2,3 "$SSHD_KNOWN_HOSTS")"
check_eq "for the host and port, alone" \
	"$(wc -l <"$KH/fresh.known_hosts" | tr -d ' '):$(cut -d' ' -f1 "$KH/fresh.known_hosts")" \
	"1:[$SSHD_HOST]:$SSHD_PORT"

# ---- the pin carries a connection ---------------------------------------

check_true "plain ssh with navette's known_hosts file logs in" \
	bounded 30 ssh -F none -T -o BatchMode=yes -o StrictHostKeyChecking=yes \
	-o GlobalKnownHostsFile=/dev/null -o "UserKnownHostsFile=$KH/fresh.known_hosts" \
	-o IdentitiesOnly=yes -i "$T/keys/id" -o "CertificateFile=$T/keys/id-cert.pub" \
	-p "$SSHD_PORT" -l "$SSHD_USER" -- "$SSHD_HOST" true
s0=$(sum)
nv_in "$R" ssh trust fresh
check_rc "trusting a pinned key again says so (exit 0)" 0
check_contains "it is already pinned" "$OUT" "already pinned in profile 'fresh'"
check_eq "navette.lua is unchanged by it" "$(sum)" "$s0"

# ---- a pin that is not the host's key ------------------------------------

s0=$(sum) l0=$(logins) m0=$(commands)
nv_in "$R" ssh trust otherkey
check_rc "a pin that differs from the host's key is refused (exit 3)" 3
check_contains "it gives both fingerprints" "$ERR" \
	"pinned $OTHER_FP, the host shows ssh-ed25519 $SSHD_FINGERPRINT"
check_eq "navette.lua is unchanged" "$(sum)" "$s0"
check_absent "no known_hosts file for it" "$KH/otherkey.known_hosts"
check_eq "no login" "$(logins)" "$l0"
check_eq "nothing was sent (no session)" "$(commands)" "$m0"

# ---- a shape navette does not edit ---------------------------------------

nv_in "$R" ssh trust shared --yes --expect "$SSHD_FINGERPRINT"
check_rc "a project file navette cannot edit safely is refused (exit 3)" 3
check_contains "it prints the line to add" "$ERR" "host_key = \"$SSHD_FINGERPRINT\","
check_eq "navette.lua is unchanged" "$(sum)" "$s0"
check_absent "no known_hosts file for it" "$KH/shared.known_hosts"

# ---- on a terminal ------------------------------------------------------

nv_in "$R" ssh trust asked
check_rc "without a terminal or --yes: refused (exit 3)" 3
check_contains "it says how to pin from a script" "$ERR" "--yes --expect $SSHD_FINGERPRINT"
check_eq "navette.lua is unchanged" "$(sum)" "$s0"

on_tty() { # ANSWER ARGS...: navette on a terminal, answering ANSWER
	local answer=$1
	shift
	OUT=$(cd "$R" && python3 "$HERE/../pty_run.py" --timeout 40 \
		--answer-after "[y/N]" "$answer" -- "$NAVETTE" "$@")
	RC=$?
	ERR=
	LAST_CMD="(on a terminal) navette $*"
}
on_tty n ssh trust declined
check_rc "answering no: exit 1" 1
check_contains "it asks" "$OUT" "pin this key for profile 'declined'"
check_contains "and writes nothing" "$OUT" "nothing was written"
check_eq "navette.lua is unchanged" "$(sum)" "$s0"
check_absent "no known_hosts file" "$KH/declined.known_hosts"

on_tty y ssh trust asked
check_rc "answering yes: exit 0" 0
check_contains "it shows the fingerprint before asking" "$OUT" "$SSHD_FINGERPRINT"
check_contains "navette.lua pins it in profile asked" "$(pin_of asked)" \
	"profiles.asked.slurm_ssh.ssh.host_key = \\\"$SSHD_FINGERPRINT\\\""
check_eq "declined still has none" "$(pin_of declined)" "[]"
check_file "and navette's known_hosts for it" "$KH/asked.known_hosts"

finish
