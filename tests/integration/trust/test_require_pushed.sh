# require_pushed end to end, with no server: a profile other than `local`
# (local backend, a file:// store) runs only commits on its remote, a bare
# repository of the test. An unpushed commit is refused (exit 3) before
# anything happens: no job row, nothing in the store, and the audit log
# holds the refusal alone. require_pushed = false lets it through; once
# pushed and fetched, the commit runs.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

STORE=$T/shared-store
R=$(NO_PROJECT_FILE=1 new_repo pushed)
cat >"$R/navette.lua" <<EOF
return {
  name = "pushed",
  default_profile = "shared",
  profiles = {
    shared = { backend = "local", storage = "file://$STORE",
               remote = "origin" },
    loose = { backend = "local", storage = "file://$STORE",
              require_pushed = false },
  },
}
EOF
put_file "$R" job.lua <<'EOF'
local navette = require "navette"
navette.job { name = "pushed", command = { "sh", "-c", "echo ran > \"$NAVETTE_OUTPUTS/ran.txt\"" },
              success = { outputs = { "ran.txt" } } }
EOF
git init -q --bare "$T/origin.git"
git -C "$R" remote add origin "$T/origin.git"
FIRST=$(commit_all "$R" first)
git -C "$R" push -q origin HEAD:main
git -C "$R" fetch -q origin

# the objects of the store, apart from the audit log's mirror (_audit/)
# and the store's own bookkeeping (.navette-store/)
store_objects() {
	[ -d "$STORE" ] || return 0
	(cd "$STORE" && find . -type f ! -path './_audit/*' \
		! -path './.navette-store/*' | LC_ALL=C sort)
}
audit_actions() {
	"$NAVETTE" audit show --json | json '[e["action"] + ":" + e["result"] for e in d]'
}
job_count() {
	"$NAVETTE" jobs --json | json 'len(d)'
}

# ---- a commit that is not on the remote -------------------------------------

printf 'second\n' | put_file "$R" notes.txt
SECOND=$(commit_all "$R" second)
nv_in "$R" run job.lua --wait
check_rc "an unpushed commit is refused (exit 3)" 3
check_contains "the refusal names the commit" "$ERR" "${SECOND:0:12}"
check_contains "the refusal says it is not on the remote" "$ERR" \
	"is not on the remote"
check_contains "the hint says to push" "$ERR" "git push"
check_eq "refused: no job row" "$(job_count)" 0
check_eq "refused: nothing in the store" "$(store_objects)" ""
check_eq "refused: the audit log holds the refusal alone" "$(audit_actions)" \
	'["policy.refuse:refused"]'
nv audit show --json
check_eq "the refusal names the profile" \
	"$(printf '%s' "$OUT" | json 'd[0]["profile"]')" shared
nv audit verify
check_rc "the audit log verifies after the refusal" 0

# plan is refused the same way: nothing would be submitted
nv_in "$R" plan job.lua
check_rc "plan of an unpushed commit: exit 3" 3

# ---- require_pushed = false ----------------------------------------------------

nv_in "$R" run job.lua --profile loose --wait
check_rc "require_pushed = false runs the unpushed commit" 0
LOOSE_ID=$(submitted_id)
check_ne "it was submitted" "$LOOSE_ID" ""
check_eq "its record names the unpushed commit" \
	"$("$NAVETTE" status "$LOOSE_ID" --json | json 'd["commit"]')" "$SECOND"
check_file "its output is in the store" \
	"$STORE/pushed/$LOOSE_ID/ran.txt"

# ---- pushed and fetched: it runs ---------------------------------------------------

git -C "$R" push -q origin HEAD:main
git -C "$R" fetch -q origin
nv_in "$R" run job.lua --wait
check_rc "once pushed and fetched, the commit runs" 0
PUSHED_ID=$(submitted_id)
check_eq "the job runs the pushed commit" \
	"$("$NAVETTE" status "$PUSHED_ID" --json | json 'd["commit"]')" "$SECOND"
check_file "its output is in the store" "$STORE/pushed/$PUSHED_ID/ran.txt"
check_eq "two jobs in all" "$(job_count)" 2

# an older commit of the remote's history runs too (code = FIRST)
put_file "$R" old.lua <<EOF
local navette = require "navette"
navette.job { name = "old", code = "$FIRST", command = { "true" } }
EOF
commit_all "$R" old >/dev/null
git -C "$R" push -q origin HEAD:main
git -C "$R" fetch -q origin
nv_in "$R" run old.lua --wait
check_rc "a pushed ancestor commit runs" 0

finish
