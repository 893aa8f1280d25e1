#!/usr/bin/env bash
# Other jobs' outputs as inputs on the local backend with an s3:// store
# (the radosgw of the ctest fixture "s3"): the agent runs the node
# launcher, which reads each producer's run record and checks the output
# against the sha256 listed there, through presigned GETs made at
# submission. A sweep's three outputs reach a fan-in job; one changed in
# the store after its record fails the job that takes it, at data_ready,
# naming the sha256, the producer and the output. plan reads s3:// objects
# (storage.read), as reading has no side effect.
# Needs S3_STACK_ENV (the stack's users.env), set by ctest.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

use_s3_stack flow
nv storage mb "s3://$BUCKET" "${EP[@]}"
check_rc "the test bucket is created" 0

R=$T/repo
mkdir -p "$R/recipes"
cat >"$R/navette.lua" <<EOF
return { name = "flow", default_profile = "s3",
  profiles = { s3 = { backend = "local", storage = "s3://$BUCKET/",
    require_pushed = false,
    s3 = { endpoint = "$S3_ENDPOINT", region = "$S3_REGION" } } } }
EOF
put_file "$R" recipes/flow.lua <<'EOF'
local navette = require "navette"
local parts = navette.sweep { job = { name = "part", success = { outputs = { "p.txt" } },
  command = { "sh", "-c", 'echo "n=$NAVETTE_PARAM_N" > "$NAVETTE_OUTPUTS/p.txt"' } },
  matrix = { n = { 1, 2, 3 } } }
navette.job { name = "gather", inputs = { parts = navette.outputs(parts, "p.txt") },
  command = { "sh", "-c", 'cat "$NAVETTE_INPUTS"/parts/* > "$NAVETTE_OUTPUTS/all.txt"' },
  success = { outputs = { "all.txt" } } }
EOF
put_file "$R" recipes/tamper.lua <<'EOF'
local navette = require "navette"
local make = navette.job { name = "make", success = { outputs = { "out.txt" } },
  command = { "sh", "-c", 'printf original > "$NAVETTE_OUTPUTS/out.txt"' } }
local hold = navette.job { name = "hold", after = { make }, command = { "sleep", "8" } }
navette.job { name = "use", after = { hold }, inputs = { model = make:output("out.txt") },
  command = { "sh", "-c", 'cat "$NAVETTE_INPUTS/model"' } }
EOF
git -C "$R" init -q
commit_all "$R" >/dev/null


nv_in "$R" run recipes/flow.lua --wait
check_rc "a sweep and its fan-in on an s3:// store succeed" 0
G=$(sub_id gather)
check_eq "the fan-in read the three outputs, in order" \
	"$(s3cat "flow/$G/all.txt" | tr '\n' ' ')" "n=1 n=2 n=3 "
WANT=
for n in 1 2 3; do
	id=$(sub_id "part\\[n=$n\\]")
	WANT="$WANT parts/$n=$(s3cat "flow/$id/navette-run.json" | json '[o["sha256"] for o in d["outputs"]][0]')"
done
check_eq "its record lists them with the sha256 their producers' records list" \
	" $(s3cat "flow/$G/navette-run.json" | json '" ".join(i["name"] + "=" + i["sha256"] for i in d["inputs"])')" \
	"$WANT"

nv_in "$R" run recipes/tamper.lua
check_rc "producer, holder and consumer are submitted" 0
M=$(sub_id make)
U=$(sub_id use)
check_state "the producer succeeds" "$M" succeeded 60
RECORDED=$(s3cat "flow/$M/navette-run.json" | json '[o["sha256"] for o in d["outputs"]][0]')
printf 'Original' >"$T/forged"
nv storage cp "$T/forged" "s3://$BUCKET/flow/$M/out.txt" "${EP[@]}"
check_rc "the output is overwritten in the store (same size)" 0
check_state "the consumer fails" "$U" failed 60
check_eq "at data_ready, naming the sha256, the producer and the output" \
	"$(st "$U" 'd["failure"]["phase"] + ": " + d["failure"]["reason"]')" \
	"data_ready: input 'model' has sha256 $(sha256 "$T/forged"), job $M's run record lists output 'out.txt' with $RECORDED"

# ---- plan reads the store: reading is no side effect ---------------------------
printf 'read in plan\n' >"$T/peek.txt"
nv storage cp "$T/peek.txt" "s3://$BUCKET/peek/x.txt" "${EP[@]}"
put_file "$R" recipes/peek.lua <<EOF
local navette = require "navette"
print("key: " .. navette.storage.read("peek/x.txt"))
print("url: " .. navette.storage.read("s3://$BUCKET/peek/x.txt"))
EOF
commit_all "$R" >/dev/null
tmp_count() { ls "$NAVETTE_HOME/tmp" 2>/dev/null | grep -c '^s3-'; }
BEFORE=$(tmp_count)
nv_in "$R" plan recipes/peek.lua
check_rc "plan of a recipe that reads s3:// objects" 0
check_match "it read them by key" "$OUT" "^key: read in plan$"
check_match "and by URL" "$OUT" "^url: read in plan$"
check_eq "and left no temporary file" "$(tmp_count)" "$BEFORE"
put_file "$R" recipes/peek_small.lua <<'EOF'
local navette = require "navette"
print(navette.storage.read("peek/x.txt", 3))
EOF
commit_all "$R" >/dev/null
nv_in "$R" plan recipes/peek_small.lua
check_rc "a read over its bound: refused" 3
check_contains "... with the sizes, asked before any download" "$ERR" "is 13 bytes, more than 3"
check_eq "... and no temporary file" "$(tmp_count)" "$BEFORE"

finish
