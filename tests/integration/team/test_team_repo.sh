#!/usr/bin/env bash
# A team policy kept in a repository of its own (issue 16): navette.lua's
# team = { git, ref, file } names it; `navette lock` (no recipe needed)
# pins its commit in navette.lock ([team "URL"]) after reading the policy
# there; team show, team apply --plan and a run's identity read the policy
# at that commit. Refused: a repository not in the lock, a lock not
# committed, a moved tag (both commits named), a policy that does not
# evaluate (nothing written), a project with both a team.lua and a team
# repository. With the remote gone the cache serves the locked commit;
# plan and apply --plan use no network. A team whose admin role has no
# active holder (all revoked) is changed by none: apply and revoke are
# refused to every member (the fail-open bug of 8d41cd3). No service is
# needed.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

# ---- the team's repository ------------------------------------------------
TR=$(NO_PROJECT_FILE=1 new_repo policy) || exit 1
policy() { # MEMBERS...: the policy file with these members (alice bob carol)
	printf 'return {\n  name = "vision",\n  members = {\n'
	for m in "$@"; do
		printf '    %s = { name = "%s", email = "%s@example.com", roles = { "developer" } },\n' "$m" "$m" "$m"
	done
	printf '  },\n  roles = { developer = { "submit", "read-logs", quota = { gpus_per_job = 1 } } },\n}\n'
}
policy alice bob | put_file "$TR" teams/vision.lua
C1=$(commit_all "$TR") || exit 1
git -C "$TR" tag v1 || exit 1

P=$(new_repo vision) || exit 1
cat >"$P/navette.lua" <<EOF
return {
  name = "vision",
  team = { git = "file://$TR", ref = "v1", file = "teams/vision.lua" },
}
EOF
put_file "$P" hello.lua <<'EOF'
local navette = require "navette"
navette.job { name = "hello", command = { "sh", "-c", "echo hello" } }
EOF
commit_all "$P" >/dev/null || exit 1
git -C "$P" config user.email alice@example.com

# ---- not locked yet -------------------------------------------------------
nv_in "$P" team show
check_rc "team show, the repository not in navette.lock: refused (exit 3)" 3
check_contains "it names the repository and its ref" "$ERR" \
	"team repository file://$TR (ref v1) is not in navette.lock"
check_contains "and says what to run" "$ERR" "run \`navette lock\` and commit navette.lock"
nv_in "$P" run hello.lua
check_rc "a run of a project whose team is not locked: refused" 3
check_contains "saying why" "$ERR" "is not in navette.lock"
nv_in "$P" lock --check
check_rc "lock --check: the team repository is not pinned (exit 3)" 3

# ---- navette lock pins it -------------------------------------------------
nv_in "$P" lock
check_rc "navette lock, no recipe: pins the team repository" 0
check_contains "it prints the pin" "$OUT" "team vision: file://$TR  v1  $C1  (added)"
check_eq "navette.lock: the team's section, its file pinned too" \
	"$(grep -A3 '^\[team' "$P/navette.lock")" \
	"$(printf '[team "file://%s"]\nref = v1\ncommit = %s\nfile = teams/vision.lua' "$TR" "$C1")"
nv_in "$P" team show
check_rc "team show with the lock not committed: refused" 3
check_contains "saying to commit it" "$ERR" "navette.lock is not in commit HEAD"
commit_all "$P" >/dev/null
nv_in "$P" lock --check
check_rc "lock --check once locked" 0
check_contains "it says so" "$OUT" "pins every library the recipes use and the team repository"
nv_in "$P" team show
check_rc "team show reads the policy at the locked commit" 0
check_contains "naming where it comes from" "$OUT" \
	"team vision (file://$TR@${C1:0:12}:teams/vision.lua, ref v1)"
check_match "its members" "$OUT" "alice +alice@example.com +developer"
check_eq "show --json gives the pin" \
	"$(cd "$P" && "$NAVETTE" team show --json 2>/dev/null | json 'd["source"]["commit"]')" "$C1"

# ---- a run carries the member the locked policy names ------------------------
nv_in "$P" run hello.lua --wait
check_rc "alice's run" 0
JOB=$(printf '%s\n' "$OUT" | sed -n 's/^job hello submitted: \(.*\)$/\1/p')
check_match "its record names alice, from the team repository's policy" \
	"$(json 'd["submitted_by"]' <"$(store_dir vision "$JOB")/navette-run.json")" \
	"^alice <alice@example.com> [^ ]+@[^ ]+$"

# ---- the tag moves --------------------------------------------------------
policy alice bob carol | put_file "$TR" teams/vision.lua
C2=$(commit_all "$TR") || exit 1
git -C "$TR" tag -f v1 >/dev/null 2>&1 || exit 1
nv_in "$P" team show
check_rc "the tag moved: team show refused (exit 3)" 3
check_contains "naming both commits" "$ERR" \
	"ref v1 now points to commit $C2, but navette.lock pins commit $C1 (the tag moved)"
check_contains "and what to do" "$ERR" "ask the team repository's maintainers why"
nv_in "$P" run hello.lua
check_rc "a run is refused too" 3
nv_in "$P" lock --check
check_rc "lock --check sees the move" 3
nv_in "$P" plan hello.lua
check_rc "plan uses no network: the locked commit from the cache" 0
nv_in "$P" team apply --plan
check_rc "team apply --plan reads the cache too" 0
check_contains "and says there is nothing to do (no service named)" "$OUT" "no changes"

nv_in "$P" lock
check_rc "navette lock takes the new commit" 0
check_contains "saying what it was" "$OUT" "team vision: file://$TR  v1  $C2  (was v1 ${C1:0:12})"
commit_all "$P" >/dev/null
nv_in "$P" team show
check_rc "team show after the new lock is committed" 0
check_match "lists carol" "$OUT" "carol +carol@example.com"

nv_in "$P" lock hello.lua
check_rc "navette lock RECIPE in a project with a team repository" 0
check_contains "pins the team too (unchanged)" "$OUT" "team vision: file://$TR  v1  $C2  (unchanged)"
check_eq "the lock still has the team's section" "$(grep -c '^\[team' "$P/navette.lock")" 1

# ---- a broken policy is never pinned ----------------------------------------
printf 'return { name = "vision", members = {}, roles = { x = { "sudo" } } }\n' |
	put_file "$TR" teams/vision.lua
commit_all "$TR" >/dev/null
git -C "$TR" tag v2
cp "$P/navette.lock" "$T/lock.before"
python3 - "$P/navette.lua" <<'PYEOF'
import sys
p = sys.argv[1]
s = open(p).read().replace('ref = "v1"', 'ref = "v2"')
open(p, "w").write(s)
PYEOF
nv_in "$P" lock
check_rc "navette lock of a policy that does not validate: refused" 2
check_match "naming the file at its commit" "$ERR" \
	"file://$TR@[0-9a-f]{12}:teams/vision.lua: role 'x': unknown right 'sudo'"
check_eq "navette.lock is unchanged" "$(cat "$P/navette.lock")" "$(cat "$T/lock.before")"
git -C "$P" checkout -q navette.lua

# ---- another file of the pinned commit is not the pinned policy ---------------
policy alice | put_file "$TR" teams/other.lua
python3 - "$P/navette.lua" <<'PYEOF'
import sys
p = sys.argv[1]
s = open(p).read().replace('teams/vision.lua', 'teams/other.lua')
open(p, "w").write(s)
PYEOF
nv_in "$P" team show
check_rc "navette.lua naming another file than the lock pins: refused" 3
check_contains "saying which" "$ERR" "navette.lock pins its file teams/vision.lua, navette.lua names teams/other.lua"
git -C "$P" checkout -q navette.lua
rm -f "$TR/teams/other.lua"

# ---- the remote is gone: the cache serves ----------------------------------
mv "$TR" "$T/policy.gone"
nv_in "$P" team show
check_rc "remote gone: team show from the cache" 0
check_contains "with a warning" "$ERR" "warning: team repository file://$TR is unreachable"
check_match "the locked policy" "$OUT" "carol +carol@example.com"
mv "$T/policy.gone" "$TR"

# ---- mistakes in navette.lua ------------------------------------------------
policy alice | put_file "$P" team.lua
nv_in "$P" team show
check_rc "a team.lua beside a team repository: refused" 2
check_contains "naming both" "$ERR" "navette.lua names a team repository (team = { git = file://$TR }), and the project has its own team.lua"
rm -f "$P/team.lua"
Q=$(new_repo other) || exit 1
for bad in 'team = { git = "git@host:team/policy", ref = "v1" }|looks like an ssh address' \
	'team = { git = "file:///x", ref = "v1", file = "../x.lua" }|team.file must be' \
	'team = { git = "file:///x", ref = "v1", branch = "main" }|team: unknown key .branch.' \
	'team = "file:///x"|team must be a table'; do
	printf 'return { name = "other", %s }\n' "${bad%%|*}" >"$Q/navette.lua"
	nv_in "$Q" team show
	check_rc "navette.lua ${bad%%|*}: refused" 2
	check_match "... saying ${bad##*|}" "$ERR" "${bad##*|}"
	check_no_match "... as navette.lua's team, not navette.use" "$ERR" "navette.use"
done
printf 'return { name = "other" }\n' >"$Q/navette.lua"
nv_in "$Q" lock
check_rc "navette lock with no recipe and no team repository: usage" 2
check_contains "saying what it expects" "$ERR" "names no team repository to pin"

# ---- an admin role whose every holder is revoked: no one changes it ---------
# (the check holds whenever a role grants admin: with no active admin,
# apply and revoke are refused to all, never opened to all)
A=$(new_repo admins) || exit 1
cat >"$A/team.lua" <<'EOF'
return {
  name = "vision",
  members = {
    alice = { name = "alice", email = "alice@example.com", roles = { "developer" } },
    bob = { name = "bob", email = "bob@example.com", roles = { "developer", "lead" },
            revoked = true },
  },
  roles = { developer = { "submit", "read-logs" }, lead = { "admin" } },
}
EOF
commit_all "$A" >/dev/null || exit 1
for who in alice bob; do
	git -C "$A" config user.email "$who@example.com"
	nv_in "$A" team apply
	check_rc "team apply as $who, the only admin revoked: refused (exit 3)" 3
	check_contains "... saying no admin is active" "$ERR" \
		"team apply: only an admin of team vision (none active: give a member admin in a reviewed team.lua)"
	nv_in "$A" team revoke alice
	check_rc "team revoke as $who: refused (exit 3)" 3
	check_contains "... saying so" "$ERR" "team revoke: only an admin of team vision (none active"
done
nv_in "$A" team apply --plan
check_rc "apply --plan stays open to all" 0

finish
