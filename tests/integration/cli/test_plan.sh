# `navette plan` shows a summary of each job (command, where, commit,
# image, inputs, env as written, outputs), the launcher with --launcher,
# and the storage put it would do, and does nothing: no store, no job, no
# agent. Its job ids are placeholders (run draws its own); a dirty tree is
# planned as HEAD, said at the top, and still refused by run.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

R=$T/repo
mkdir -p "$R/recipes"
cp "$NAVETTE_SOURCE/navette.lua" "$R/"
cp "$NAVETTE_SOURCE/recipes/first-job.lua" "$R/recipes/"
cp -R "$NAVETTE_SOURCE/recipes/first-job" "$R/recipes/"
git -C "$R" init -q
HEAD=$(commit_all "$R")

nv_in "$R" plan recipes/first-job.lua
check_rc "plan exits 0" 0
check_no_match "plan's summary holds no launcher" "$OUT" '#!/bin/sh'
check_contains "plan prints the command" "$OUT" \
	'  command  sh recipes/first-job/run.sh'
check_contains "plan says where the job runs" "$OUT" \
	'  where    profile local · backend local'
check_contains "plan shows the env value as written" "$OUT" \
	'  env      GREETING_NAME=greeting'
check_no_match "plan hides no plain env value" "$OUT" '<hidden>'
check_match "plan shows the input" "$OUT" \
	'  input    greeting <- file://.*/inputs/first-job/greeting\.txt'
check_match "plan shows the outputs' prefix and declared names" "$OUT" \
	'  outputs  file://.*/<id of first-job>/ \(result\.txt\)'
check_contains "plan says the ids are drawn at submission" "$OUT" \
	'job ids are drawn when `navette run` submits: <id of NAME> stands for each'
check_no_match "plan shows no drawn job id" "$OUT" \
	'-[0-9]{8}-[0-9]{6}-[0-9a-f]{7}-[0-9a-z]+'
check_no_match "plan of a clean tree says nothing of changes" "$OUT" \
	'uncommitted'
check_match "plan prints the storage put of the input" "$OUT" \
	'storage.*put.*inputs/first-job/greeting\.txt'
check_contains "plan names the commit" "$OUT" "$HEAD"
check_match "plan says nothing was done" "$OUT" 'nothing was done'
check_absent "plan created no store" "$NAVETTE_HOME/store"
check_absent "plan started no agent" "$NAVETTE_HOME/agent.log"

nv_in "$R" plan recipes/first-job.lua --launcher
check_rc "plan --launcher exits 0" 0
check_contains "plan --launcher prints the launcher's shebang" "$OUT" \
	'    | #!/bin/sh'
check_contains "plan --launcher: the launcher exports the env value" "$OUT" \
	"GREETING_NAME='greeting'; export GREETING_NAME"
check_contains "plan --launcher: the launcher's id is the placeholder" "$OUT" \
	"NAVETTE_JOB_ID='<id of first-job>'"
check_contains "plan --launcher keeps the summary" "$OUT" \
	'  command  sh recipes/first-job/run.sh'

nv_in "$R" plan recipes/first-job.lua --json
check_rc "plan --json exits 0" 0
p() { printf '%s' "$OUT" | json "$1" 2>&1; }
check_eq "plan --json: jobs[0].env as written" \
	"$(p 'd["jobs"][0]["env"]["GREETING_NAME"]')" greeting
check_eq "plan --json: jobs[0].id is the placeholder" \
	"$(p 'd["jobs"][0]["id"]')" "<id of first-job>"
check_eq "plan --json: a clean working tree" \
	"$(p 'd["working_tree"]["clean"]')" true
check_eq "plan --json: one job" "$(p 'len(d["jobs"])')" 1
check_eq "plan --json: jobs[0].name" "$(p 'd["jobs"][0]["name"]')" first-job
check_eq "plan --json: jobs[0].commit" "$(p 'd["jobs"][0]["commit"]')" "$HEAD"
check_eq "plan --json: jobs[0].launcher is a sh script" \
	"$(p 'd["jobs"][0]["launcher"].startswith("#!/bin/sh")')" true
check_eq "plan --json: the launcher runs the command" \
	"$(p '"recipes/first-job/run.sh" in d["jobs"][0]["launcher"]')" true
check_eq "plan --json: a storage put is planned" \
	"$(p 'any(a["primitive"] == "storage" and a["action"] == "put" and "greeting.txt" in a["detail"] for a in d["actions"])')" \
	true
check_eq "plan --json: a job submit is planned" \
	"$(p 'any(a["primitive"] == "jobs" and a["action"] == "submit" for a in d["actions"])')" \
	true

check_absent "plan --json created no store" "$NAVETTE_HOME/store"
nv jobs --json
check_rc "jobs --json exits 0" 0
check_eq "no job was submitted" "$(printf '%s' "$OUT" | json 'd' 2>&1)" "[]"
check_absent "still no agent" "$NAVETTE_HOME/agent.log"
check_eq "the repository is untouched" \
	"$(git -C "$R" status --porcelain --untracked-files=all)" ""

# The training sweep: a summary of its seven jobs, not 1,200 lines of
# launchers; its env shown as written.
mkdir -p "$R/recipes/training"
cp "$NAVETTE_SOURCE"/recipes/training/*.lua "$R/recipes/training/"
commit_all "$R" >/dev/null
nv_in "$R" plan recipes/training/sweep.lua
check_rc "plan of the training sweep exits 0" 0
n=$(printf '%s\n' "$OUT" | wc -l | tr -d ' ')
check_true "the sweep's plan is short ($n lines, under 150)" [ "$n" -lt 150 ]
check_eq "the sweep's plan: a block per job" \
	"$(printf '%s\n' "$OUT" | grep -c '^job train')" 7
check_eq "the sweep's plan: each run's env as written" \
	"$(printf '%s\n' "$OUT" | grep -c '^  env      TRAIN_EPOCHS=8$')" 6
check_contains "the sweep's plan: a run's parameters" "$OUT" \
	'  params   lr=0.01 seed=2'
check_contains "the sweep's plan: the fan-in's inputs by job name" "$OUT" \
	'  input    runs/1 <- output metrics.json of train[lr=0.05,seed=1]'
nv_in "$R" plan recipes/training/sweep.lua --launcher
check_eq "--launcher shows the sweep's seven launchers" \
	"$(printf '%s\n' "$OUT" | grep -c '    | #!/bin/sh')" 7

# A recipe's plain env value is shown, whatever its name (a value that
# looks like a secret is refused before any plan).
put_file "$R" recipes/env.lua <<'EOF'
local navette = require "navette"
navette.job { name = "env", command = { "true" },
              env = { EPOCHS = "3", API_TOKEN_NAME = "hub", MODE = 2 } }
EOF
commit_all "$R" >/dev/null
nv_in "$R" plan recipes/env.lua
check_rc "plan of a job with env exits 0" 0
check_contains "plain env: EPOCHS=3" "$OUT" '  env      EPOCHS=3'
check_contains "plain env under a secret-like name: shown" "$OUT" \
	'  env      API_TOKEN_NAME=hub'
check_contains "a number in env: shown as text" "$OUT" '  env      MODE=2'
check_no_match "no <hidden> for plain values" "$OUT" '<hidden>'

# A dirty tree: plan shows HEAD and says so at the top (exit 0); run
# still refuses it.
HEAD=$(git -C "$R" rev-parse HEAD)
printf '\n-- edited\n' >>"$R/recipes/first-job.lua"
printf 'scratch\n' >"$R/notes.txt"
nv_in "$R" plan recipes/first-job.lua
check_rc "plan of a dirty tree exits 0" 0
check_eq "plan of a dirty tree is labelled at the top" \
	"$(printf '%s\n' "$OUT" | sed -n 2p)" \
	"working tree has uncommitted changes: plan shows HEAD $HEAD; \`navette run\` refuses it until you commit"
check_contains "plan of a dirty tree lists the modified file" "$OUT" \
	'  modified: recipes/first-job.lua'
check_contains "plan of a dirty tree lists the untracked file" "$OUT" \
	'  untracked: notes.txt'
check_contains "plan of a dirty tree: the job runs HEAD" "$OUT" \
	"  commit   $HEAD"
nv_in "$R" plan recipes/first-job.lua --json
check_rc "plan --json of a dirty tree exits 0" 0
check_eq "plan --json of a dirty tree: its changes" \
	"$(p 'sorted(d["working_tree"]["changes"])')" \
	'["modified: recipes/first-job.lua", "untracked: notes.txt"]'
nv_in "$R" run recipes/first-job.lua
check_rc "run of the dirty tree: refused (exit 3)" 3
check_contains "run of the dirty tree says why" "$ERR" 'is not clean'
check_absent "the refused run submitted nothing" "$NAVETTE_HOME/agent.log"
# a recipe not committed at all: read from the folder, and said so
git -C "$R" checkout -q recipes/first-job.lua
rm "$R/notes.txt"
cp "$R/recipes/env.lua" "$R/recipes/new.lua"
nv_in "$R" plan recipes/new.lua
check_rc "plan of an untracked recipe exits 0" 0
check_contains "plan of an untracked recipe says it is not in HEAD" "$OUT" \
	'recipe code not in HEAD, read from the folder: recipes/new.lua'
nv_in "$R" run recipes/new.lua
check_rc "run of an untracked recipe: refused (exit 3)" 3
rm "$R/recipes/new.lua"

# Where a job runs: on a Slurm profile, the node each job is sent to (the
# profile's nodes taken in turn) and the partition; its credentials by
# name. The plan sends nothing (the endpoints are a closed port).
S=$T/hpc
mkdir -p "$S"
git -C "$S" init -q
put_file "$S" navette.lua <<'EOF'
return {
  name = "hpc",
  credentials = { jwt = { kind = "hs256", source = "env",
                          env = { key = "NAVETTE_TEST_NO_SUCH_VARIABLE" } } },
  profiles = {
    hpc = { backend = "slurm", require_pushed = false,
            storage = "s3://bucket/root/",
            s3 = { endpoint = "http://127.0.0.1:9", region = "us-east-1" },
            slurm = { endpoint = "http://127.0.0.1:9", user = "u",
                      credential = "jwt", partition = "gpu",
                      nodes = { "n1", "n2" } } },
  },
}
EOF
put_file "$S" sweep.lua <<'EOF'
local navette = require "navette"
navette.sweep { job = { name = "part", command = { "true" } },
                matrix = { lr = { 1, 2 } } }
EOF
commit_all "$S" >/dev/null
# (a plan signs the transfer URLs offline, with the store's key)
AWS_ACCESS_KEY_ID=AKIDPLANTESTKEY00000 AWS_SECRET_ACCESS_KEY=plan-test-secret \
	nv_in "$S" plan sweep.lua --profile hpc
check_rc "plan on a Slurm profile exits 0" 0
check_contains "the first job: its node and partition" "$OUT" \
	'  where    profile hpc · backend slurm · node n1 · partition gpu'
check_contains "the second job: the next node" "$OUT" \
	'  where    profile hpc · backend slurm · node n2 · partition gpu'
check_contains "the credentials it would use, by name" "$OUT" \
	'credentials aws (storage), jwt (slurm)'

# A missing file to upload and a missing input URL are both a missing
# input: refused, exit 3 (README, "Exit codes"), by plan and run alike.
put_file "$R" recipes/noput.lua <<'EOF'
local navette = require "navette"
local data = navette.storage.put("inputs/absent.txt", "absent.txt")
navette.job { name = "noput", command = { "true" }, inputs = { data = data.url } }
EOF
put_file "$R" recipes/nourl.lua <<'EOF'
local navette = require "navette"
navette.job { name = "nourl", command = { "true" },
              inputs = { data = navette.storage.url("inputs/absent.txt") } }
EOF
commit_all "$R" >/dev/null
for verb in plan run; do
	nv_in "$R" $verb recipes/noput.lua
	check_rc "$verb: a storage.put file that is missing: exit 3" 3
	check_contains "$verb: ... named" "$ERR" \
		"navette.storage.put: 'absent.txt' is not a file of the repository (it is missing"
	nv_in "$R" $verb recipes/nourl.lua
	check_rc "$verb: an input URL that is missing: exit 3" 3
	check_contains "$verb: ... named" "$ERR" "input 'data' is not in storage"
done

# Plan of a failing recipe is the same error as run.
put_file "$R" recipes/bad.lua <<'EOF'
local navette = require "navette"
navette.job { name = "bad" }
EOF
commit_all "$R" >/dev/null
nv_in "$R" plan recipes/bad.lua
check_rc "plan of a malformed recipe exits 2" 2
check_match "plan of a malformed recipe locates it" "$ERR" 'bad\.lua:2:'

finish
