# navette.sweep on the local backend: a 2x3 matrix less one excluded
# combination, plus one included, runs as six jobs; each job sees its
# parameters as NAVETTE_PARAM_* and its run record carries them; the
# names say the parameters; `plan` shows the jobs; a malformed sweep is a
# recipe error naming the key, with nothing submitted.
. "$(dirname "$0")/lib.sh"

R=$(new_repo sweep)
put_file "$R" sweep.lua <<'EOF2'
local navette = require "navette"
navette.sweep {
  job = {
    name = "train",
    command = { "sh", "-c",
      'printf "%s %s\\n" "$NAVETTE_PARAM_LR" "$NAVETTE_PARAM_SEED" '
      .. '> "$NAVETTE_OUTPUTS/params.txt"' },
    success = { outputs = { "params.txt" } },
  },
  matrix = { lr = { 0.1, 0.01 }, seed = { 1, 2, 3 } },
  exclude = { { lr = 0.01, seed = 3 } },
  include = { { lr = 0.5, seed = 7 } },
}
EOF2
put_file "$R" bad.lua <<'EOF2'
local navette = require "navette"
navette.sweep {
  job = { name = "train", command = { "true" } },
  matrix = { lr = { 0.1 } },
  exclude = { { seeds = 1 } },
}
EOF2
commit_all "$R" >/dev/null

nv_in "$R" plan sweep.lua
check_rc "plan of the sweep: exit 0" 0
check_contains "plan names a job by its parameters" "$OUT" \
	"train[lr=0.01,seed=2]"
check_eq "plan shows six jobs" \
	"$(printf '%s\n' "$OUT" | grep -c '^job train\[')" 6

nv_in "$R" run bad.lua
check_rc "a malformed sweep: exit 2 (recipe error)" 2
check_contains "the error names the key" "$ERR" "'seeds' is not a key"
check_contains "the error names the recipe line" "$ERR" "bad.lua:2"
check_eq "nothing was submitted" "$("$NAVETTE" jobs --json | json 'len(d)')" 0

nv_in "$R" run sweep.lua --wait
check_rc "the sweep runs: exit 0" 0
LIST=$("$NAVETTE" jobs --json)
check_eq "six jobs" "$(printf '%s' "$LIST" | json 'len(d)')" 6
check_eq "their names" \
	"$(printf '%s' "$LIST" | json '" ".join(sorted(j["name"] for j in d))')" \
	"train[lr=0.01,seed=1] train[lr=0.01,seed=2] train[lr=0.1,seed=1] train[lr=0.1,seed=2] train[lr=0.1,seed=3] train[lr=0.5,seed=7]"
for row in "0.01 2" "0.5 7" "0.1 3"; do
	set -- $row
	ID=$(printf '%s' "$LIST" | json "[j['id'] for j in d if j['name'] == 'train[lr=$1,seed=$2]'][0]")
	check_eq "train[lr=$1,seed=$2] succeeded" "$(job_state "$ID")" succeeded
	check_eq "train[lr=$1,seed=$2] saw its parameters" \
		"$(cat "$(store_dir sweep "$ID")/params.txt" 2>&1)" "$1 $2"
	check_eq "train[lr=$1,seed=$2]: its run record has them" \
		"$(json 'd["params"]["lr"] + " " + d["params"]["seed"]' \
			<"$(store_dir sweep "$ID")/navette-run.json")" "$1 $2"
done

finish
