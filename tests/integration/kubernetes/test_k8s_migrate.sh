#!/usr/bin/env bash
# A job moved between a Kubernetes profile and a Slurm profile of one
# project on one store (navette migrate JOB --to NODE --profile P), both
# ways, against the real control plane and the Slurm stack: the job runs
# in an image (busybox and its programs) by digest, as a pod run by
# kubelet.py --host on Kubernetes, and in podman on a Slurm node. migrate
# judges the portability rules first, submits the same definition through
# the other profile, waits for both and compares their run records (the
# output's sha256, both nodes). `navette portability` judges the recipe
# on the Kubernetes profile like any other.
# Needs NAVETTE, K8S_STACK_ENV, SLURM_STACK_ENV, S3_STACK_ENV and
# REGISTRY_STACK_ENV (set by ctest).
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status
. "$(dirname "$0")/k8s_lib.sh"
. "$(dirname "$0")/../image_lib.sh"

for tool in podman buildah; do
	command -v "$tool" >/dev/null || { skip "jobs in images on Slurm" "no $tool: vendor/bootstrap test installs it"; finish; }
done
use_slurm_stack k8smigrate
k8s_namespace navette-t-migrate
nv storage mb "s3://$BUCKET" "${EP[@]}"
check_rc "the bucket is created" 0

# an image with sh: busybox and its programs
img=$T/sh-image
busybox_root "$img/root"
printf 'FROM scratch\nCOPY root/ /\n' >"$img/Containerfile"
IMAGE=$PLAIN/$RUN_ID/sh:1
if buildah bud --isolation chroot -q -t localhost/nv-k8s-sh -f "$img/Containerfile" "$img" >"$T/buildah.log" 2>&1 &&
	buildah push --tls-verify=false localhost/nv-k8s-sh "docker://$IMAGE" >>"$T/buildah.log" 2>&1; then
	pass "the image with sh is built and pushed"
else
	fail "the image with sh is built and pushed" "$(cat "$T/buildah.log")"
	finish
fi

kubelet_start host
k8s_user_kubeconfig

git init -q --bare "$T/origin.git"
R=$(NO_PROJECT_FILE=1 new_repo mig)
git -C "$R" remote add origin "$T/origin.git"
cat >"$R/navette.lua" <<EOF
return {
  name = "mig",
  credentials = {
    jwtkey = { kind = "hs256", source = "file", path = "$SLURM_JWT_KEY" },
  },
  profiles = {
    cluster = {
      backend = "kubernetes", storage = "s3://$BUCKET/",
      s3 = { endpoint = "$S3_ENDPOINT", region = "$S3_REGION" },
      kubernetes = { namespace = "$NS" },
    },
    hpc = {
      backend = "slurm", storage = "s3://$BUCKET/",
      s3 = { endpoint = "$S3_ENDPOINT", region = "$S3_REGION" },
      slurm = { endpoint = "$SLURMRESTD_URL", user = "$SLURM_USER",
                credential = "jwtkey", partition = "$SLURM_PARTITION",
                working_directory = "$WD" },
      max_token_lifespan = "1h",
    },
  },
  default_profile = "cluster",
}
EOF
# deterministic: the same output wherever it runs
cat >"$R/det.lua" <<EOF
local navette = require "navette"
navette.job {
  name = "det", image = "$IMAGE",
  command = { "sh", "-c", "echo 42 > \"\$NAVETTE_OUTPUTS/answer.txt\"" },
  success = { outputs = { "answer.txt" } },
}
EOF
commit_all "$R" >/dev/null
git -C "$R" push -q origin HEAD:main 2>/dev/null
nv_in "$R" trust
check_rc "the project is trusted" 0

# ---- on Kubernetes first ---------------------------------------------------------
nv_in "$R" run det.lua --wait
check_rc "the job succeeds on Kubernetes" 0
K=$(printf '%s\n' "$OUT" | sed -n 's/^job det submitted: \(.*\)$/\1/p')
check_eq "its backend" "$(st "$K" 'd["backend"]')" kubernetes
check_eq "its output" "$(s3cat "mig/$K/answer.txt")" 42

nv_in "$R" portability det.lua --profile cluster
check_rc "portability on the Kubernetes profile: every rule holds" 0
check_contains "judged on the job's last run on the cluster" "$OUT" "$K"

# ---- Kubernetes -> Slurm ------------------------------------------------------------
nv_in "$R" migrate "$K" --to gpu-a --profile hpc
check_rc "migrate to the Slurm profile: the comparison holds (exit 0)" 0
S=$(printf '%s\n' "$OUT" | sed -n 's/.* submitted again on gpu-a through profile hpc: \(.*\)$/\1/p')
check_match "it printed the new job" "$S" '^mig-'
check_eq "the new job ran on Slurm" "$(st "$S" 'd["backend"]')" slurm
check_match "on gpu-a" "$(st "$S" 'd["slurm"]["nodes"]')" '^gpu-a$'
check_eq "in podman, from the image by digest" \
	"$(s3cat "mig/$S/navette-run.json" | json 'd["node"]["runtime"]["name"]')" podman
check_eq "the same output" "$(s3cat "mig/$S/answer.txt")" 42
check_match "the comparison names the Kubernetes node" "$OUT" "comparison of $K \\(on kwok-gpu-[ab]\\)"
check_contains "and gpu-a" "$OUT" "and $S (on gpu-a)"
check_match "the output's sha256 is equal" "$OUT" 'answer\.txt +[0-9a-f]{12}… +[0-9a-f]{12}… +sha256 equal'
check_contains "the move holds" "$OUT" "the change of node holds"

# ---- Slurm -> Kubernetes ------------------------------------------------------------
# (the Slurm profile reads its key from a file of this machine: rule 4
# refuses the move until --force, as for any profile)
nv_in "$R" migrate "$S" --to kwok-gpu-b --profile cluster
check_rc "back to Kubernetes: refused by the rules first (exit 3)" 3
check_contains "naming the key file of this machine" "$ERR" "credential jwtkey: its source is the file $SLURM_JWT_KEY"
nv_in "$R" migrate "$S" --to kwok-gpu-b --profile cluster --force
check_rc "migrate --force to the Kubernetes profile: the comparison holds (exit 0)" 0
B=$(printf '%s\n' "$OUT" | sed -n 's/.* submitted again on kwok-gpu-b through profile cluster: \(.*\)$/\1/p')
check_eq "the new job ran on Kubernetes" "$(st "$B" 'd["backend"]')" kubernetes
check_eq "on the node asked for" "$(kc -n "$NS" get pods -l "navette/job=$B" -o 'jsonpath={.items[0].spec.nodeName}')" kwok-gpu-b
check_eq "the same output" "$(s3cat "mig/$B/answer.txt")" 42
check_contains "the comparison names the Kubernetes node" "$OUT" "and $B (on kwok-gpu-b)"
check_eq "the audit log holds both moves" \
	"$(grep -c '"detail":"migrate of [^"]* through profile \(hpc\|cluster\)"' "$NAVETTE_HOME/audit/audit.jsonl")" 2

kubelet_stop
finish
