#!/usr/bin/env bash
# `navette portability`: the five rules for changing nodes, judged on
# evidence, on the local backend (with an S3 store) and on Slurm, against
# the S3, registry and Slurm fixtures. One recipe passes every rule; one
# breaks each rule (rule 1 three ways: a commit not pushed, an image not
# in its registry, an input not in the store); each job runs once first,
# so that its run record is the evidence. Then --to PROFILE (a file://
# target) and --to NODE, and `navette migrate` letting a portable job
# move without --force.
# Needs SLURM_STACK_ENV, S3_STACK_ENV and REGISTRY_STACK_ENV (set by ctest).
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status
. "$(dirname "$0")/../image_lib.sh"

command -v podman >/dev/null || { skip "portability" "no podman: vendor/bootstrap test installs it"; finish; }
use_slurm_stack portability
nv storage mb "s3://$BUCKET" "${EP[@]}"
check_rc "the bucket is created" 0

BASE=$PLAIN/$RUN_ID/base
make_base "$PLAIN" "$RUN_ID/base:1" >/dev/null
check_match "the base image is pushed" "$(skopeo_digest "$BASE:1")" '^sha256:'

# the cluster's key as a user keeps it: a file of their own, in their home
mkdir -p "$HOME/.navette"
cp "$SLURM_JWT_KEY" "$HOME/.navette/slurm.key"
chmod 600 "$HOME/.navette/slurm.key"

git init -q --bare "$T/origin.git"
R=$(NO_PROJECT_FILE=1 new_repo team)
git -C "$R" remote add origin "$T/origin.git"
cat >"$R/navette.lua" <<EOF
return {
  name = "team",
  credentials = {
    jwtkey = { kind = "hs256", source = "file", path = "~/.navette/slurm.key" },
  },
  profiles = {
    ["local"] = { backend = "local", storage = "s3://$BUCKET/laptop/",
                  credentials = { "jwtkey" },
                  s3 = { endpoint = "$S3_ENDPOINT", region = "$S3_REGION" } },
    disk = { backend = "local", storage = "file://$T/disk-store" },
    hpc = {
      backend = "slurm", storage = "s3://$BUCKET/hpc/",
      s3 = { endpoint = "$S3_ENDPOINT", region = "$S3_REGION" },
      slurm = { endpoint = "$SLURMRESTD_URL", user = "$SLURM_USER",
                credential = "jwtkey", partition = "$SLURM_PARTITION",
                working_directory = "$WD" },
      max_token_lifespan = "1h",
    },
  },
}
EOF
# job NAME IMAGE SCRIPT [MORE FIELDS]: a recipe's job in the base image
# (IMAGE "host": none), its input uploaded, its output out.txt
job() {
	local image= more=${4:-}
	[ "$2" = host ] || image="image = \"$BASE:1\","
	[ -n "$more" ] || more='success = { outputs = { "out.txt" } },'
	cat <<EOF
local navette = require "navette"
local data = navette.storage.put_string("inputs/data.txt", "the data\n")
navette.job {
  name = "$1", $image
  inputs = { d = data.url },
  command = { ${3} },
  resources = { cpus = 1, time_limit = "5m" },
  $more
}
EOF
}
BB='"/bin/busybox", "sh", "-c"'
COPY='"/bin/busybox cp \"$NAVETTE_INPUTS/d\" \"$NAVETTE_OUTPUTS/out.txt\""'
job pass image "$BB, $COPY" >"$R/pass.lua"
# 2: the node's own python3, as installed there
job rule2 host '"python3", "-c", "import os, shutil; shutil.copy(os.environ[\"NAVETTE_INPUTS\"] + \"/d\", os.environ[\"NAVETTE_OUTPUTS\"] + \"/out.txt\")"' >"$R/rule2.lua"
# 3: the result stays on the node's disk, nothing is published
job rule3 image "$BB, \"/bin/busybox cp \\\"\$NAVETTE_INPUTS/d\\\" /tmp/portability-result.txt\"" \
	'success = { outputs = {} },' >"$R/rule3.lua"
# 4: the command reads a key of the node (there or not)
job rule4 image "$BB, \"/bin/busybox cat /etc/ceph/ceph.client.admin.keyring 2>/dev/null; /bin/busybox cp \\\"\$NAVETTE_INPUTS/d\\\" \\\"\$NAVETTE_OUTPUTS/out.txt\\\"\"" >"$R/rule4.lua"
# 5: the log stays on the node
job rule5 image "$BB, $COPY" \
	'success = { outputs = { "out.txt" } }, logs = { publish = false },' >"$R/rule5.lua"
# 1: the pass job, its image not in the registry / its input not in the store
job pass image "$BB, $COPY" | sed "s|$BASE:1|$PLAIN/$RUN_ID/absent:1|" >"$R/rule1-image.lua"
job pass image "$BB, $COPY" |
	sed 's|^local data = .*$|local data = { url = navette.context().profile == "hpc" and "s3://'"$BUCKET"'/hpc/absent.txt" or "s3://'"$BUCKET"'/laptop/absent.txt" }|' \
	>"$R/rule1-data.lua"
commit_all "$R" >/dev/null
git -C "$R" push -q origin HEAD:main 2>/dev/null
check_rc "the commit is pushed" 0

# rules PROFILE RECIPE [ARGS]: `portability --json` (OUT, RC); S: the
# five statuses ("holds holds fails holds holds")
rules() {
	local profile=$1 recipe=$2
	shift 2
	nv_in "$R" portability "$recipe" --profile "$profile" --json "$@"
	S=$(printf '%s' "$OUT" | json '" ".join(r["status"] for r in d["rules"])')
}
evidence() { # RULE: the evidence of rule RULE in the last --json, one per line
	printf '%s' "$OUT" | json '"\n".join(d["rules"]['"$1"' - 1]["evidence"])'
}

for P in local hpc; do
	# each job runs once: its record is the evidence of rules 2, 3 and 5
	for r in pass rule2 rule3 rule4 rule5; do
		nv_in "$R" run "$r.lua" --profile "$P" --wait
		check_rc "$P: $r runs and succeeds" 0
	done

	rules "$P" pass.lua
	check_eq "$P: pass.lua holds every rule" "$S" "holds holds holds holds holds"
	check_rc "$P: pass.lua: exit 0" 0
	check_eq "$P: the verdict" "$(printf '%s' "$OUT" | json 'd["verdict"]')" "automated move allowed"
	check_match "$P: rule 1 shows the commit on the remote" "$(evidence 1)" \
		"^job pass: commit [0-9a-f]{12} is on the remote"
	check_match "$P: rule 1 shows the image's digest in its registry" "$(evidence 1)" \
		"^job pass: image $BASE@sha256:[0-9a-f]{64} is in its registry"
	check_match "$P: rule 1 shows the input in the store with its sha256" "$(evidence 1)" \
		"^job pass: input d is s3://$BUCKET/.*inputs/data.txt \\(sha256 [0-9a-f]{12}"
	check_match "$P: rule 3 shows the last run's published output" "$(evidence 3)" \
		"^job pass: its last run team-.* published 1 output\\(s\\) with sha256 under s3://$BUCKET/"
	check_match "$P: rule 5 shows the shipped log" "$(evidence 5)" \
		"^job pass: its last run team-.* shipped its log to s3://$BUCKET/.*/navette.log \\([0-9]+ bytes\\)"
	check_match "$P: rule 4 shows the credential tied to no machine" "$(evidence 4)" \
		"credential jwtkey \\(hs256, file\\) is tied to no machine"

	rules "$P" rule2.lua
	check_eq "$P: rule2.lua breaks rule 2 only" "$S" "holds fails holds holds holds"
	check_rc "$P: rule2.lua: exit 1" 1
	check_match "$P: the evidence is the node and its python3 from the last record" \
		"$(evidence 2)" "^job rule2 runs on the node's own environment \\(no image\\): its last run team-.* used node [^,]+, python3 Python 3\\.[0-9]+\\.[0-9]+"
	check_match "$P: the action: rebuild an image first" \
		"$(printf '%s' "$OUT" | json 'd["actions"][0]["action"]')" "^rebuild an image first"

	rules "$P" rule3.lua
	check_eq "$P: rule3.lua breaks rule 3 only" "$S" "holds holds fails holds holds"
	check_match "$P: the evidence: the last run published no outputs" "$(evidence 3)" \
		"^job rule3: its last run team-.* published no outputs: what it made stayed on the node"
	check_match "$P: the action: publish outputs first" \
		"$(printf '%s' "$OUT" | json 'd["actions"][0]["action"]')" "^publish outputs to object storage first"

	rules "$P" rule4.lua
	check_eq "$P: rule4.lua breaks rule 4 only" "$S" "holds holds holds fails holds"
	check_match "$P: the evidence: the node's key the command reads" "$(evidence 4)" \
		"^job rule4 reads a Ceph keyring on the node: /etc/ceph/ceph.client.admin.keyring"
	check_match "$P: the action: a service role first" \
		"$(printf '%s' "$OUT" | json 'd["actions"][0]["action"]')" "^move the rights to a service role first"

	rules "$P" rule5.lua
	check_eq "$P: rule5.lua breaks rule 5 only" "$S" "holds holds holds holds fails"
	check_match "$P: the evidence: the log kept on the node" "$(evidence 5)" \
		"job rule5 keeps its log on the node \\(logs.publish = false\\)"
	check_match "$P: the action: centralise logs first" \
		"$(printf '%s' "$OUT" | json 'd["actions"][0]["action"]')" "^centralise logs first"

	rules "$P" rule1-image.lua
	check_eq "$P: an image not in its registry breaks rule 1 only" "$S" "fails holds holds holds holds"
	check_match "$P: the evidence names the image" "$(evidence 1)" \
		"cannot resolve the image $PLAIN/$RUN_ID/absent:1 to a digest"
	rules "$P" rule1-data.lua
	check_eq "$P: an input not in the store breaks rule 1 only" "$S" "fails holds holds holds holds"
	check_match "$P: the evidence names the input" "$(evidence 1)" \
		"input 'd' is not in storage: s3://$BUCKET/.*absent.txt"
done

# the text form: each rule, its evidence, the verdict
nv_in "$R" portability rule2.lua --profile hpc
check_rc "the text form: exit 1" 1
check_match "it prints each rule with its status" "$OUT" '^ 2\. no hand-installed dependency +FAILS$'
check_match "the action under it" "$OUT" '^      -> rebuild an image first'
check_match "and the actions at the end" "$OUT" '^verdict: not yet; first:$'
nv_in "$R" portability pass.lua --profile hpc
check_match "a portable recipe: the verdict" "$OUT" '^verdict: automated move allowed$'

# a commit not on the remote breaks rule 1 (the jobs' records still hold)
echo "-- a change" >>"$R/pass.lua"
commit_all "$R" >/dev/null
rules hpc pass.lua
check_eq "a commit not pushed breaks rule 1 only" "$S" "fails holds holds holds holds"
check_match "the evidence: the commit is not on the remote" "$(evidence 1)" \
	"commit [0-9a-f]{12} is not on the remote \\(as of the last fetch\\)"
git -C "$R" push -q origin HEAD:main 2>/dev/null
rules hpc pass.lua
check_eq "pushed, it holds again" "$S" "holds holds holds holds holds"

# --to PROFILE: rules 1 and 4 judged under the target, the records of the
# profile the jobs ran on
rules local pass.lua --to hpc
check_eq "--to hpc from local: every rule holds" "$S" "holds holds holds holds holds"
rules hpc pass.lua --to disk
check_eq "--to a file:// profile: its store breaks 1, 3 and 5" "$S" "fails holds fails holds fails"
check_match "the evidence names the target's store" "$(evidence 3)" \
	"the store is file://$T/disk-store, a folder of one machine"
# --to NODE: the node is named, the verdict the same
rules hpc rule2.lua --to gpu-b
check_eq "--to gpu-b: the same verdict" "$S" "holds fails holds holds holds"
nv_in "$R" portability pass.lua --profile local --to gpu-b
check_rc "--to NODE on a backend without nodes is a usage error" 2
check_match "it says why" "$ERR" "has no nodes to name"
nv_in "$R" portability pass.lua --profile nosuch
check_rc "an unknown profile: exit 2" 2

# migrate lets a portable job move without --force, and refuses the others
nv_in "$R" run pass.lua --profile hpc --wait
PASS_ID=$(submitted_id)
nv_in "$R" migrate "$PASS_ID" --to gpu-b
check_rc "migrate of a portable job: allowed, and the comparison holds" 0
check_match "the outputs compared" "$OUT" '^  out.txt .* sha256 equal'
check_no_match "no --force was needed" "$ERR" 'over the portability rules'
nv_in "$R" run rule5.lua --profile hpc --wait
R5_ID=$(submitted_id)
nv_in "$R" migrate "$R5_ID" --to gpu-b
check_rc "migrate of a job keeping its log on the node: refused (exit 3)" 3
check_match "the refusal names rule 5 and its action" "$ERR" \
	'rule 5 \(logs centralised\) fails:'
check_eq "the refusal is audited" \
	"$(grep -c 'migrate to gpu-b: portability rules 5 fail' "$NAVETTE_HOME/audit/audit.jsonl")" 1
finish
