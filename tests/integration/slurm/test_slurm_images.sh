#!/usr/bin/env bash
# The catalogue's base image (recipes/images) on a Slurm profile, against
# the registry, Slurm and S3 fixtures. images/test_image_catalogue.sh (run
# before this one by ctest: fixture "catalogue_image") built it on the
# local backend and wrote its pointer and digest to the registry stack's
# catalogue-image.env. A team repository names the same pointer
# (images.catalogue) on a Slurm profile:
#   up to date the same package list builds nothing, and the check runs in
#              the same digest on a node;
#   in use     the video recipe's jobs run in the image the profile points
#              to on the cluster, with the source's frames in the output
#              and the node's fingerprint in the record.
# Needs REGISTRY_STACK_ENV, SLURM_STACK_ENV and S3_STACK_ENV (set by ctest).
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status
. "$(dirname "$0")/../image_lib.sh"

for tool in debootstrap podman skopeo ffprobe; do
	command -v "$tool" >/dev/null || { skip "the catalogue image" "no $tool: vendor/bootstrap test installs it"; finish; }
done
if [ "$(id -u)" != 0 ]; then
	skip "the catalogue image" "debootstrap runs as root only"
	finish
fi
if [ ! -r "$(catalogue_image_env)" ]; then
	check_eq "test_image_catalogue built the catalogue image first (ctest runs it before this test; see its output)" \
		"no $(catalogue_image_env)" "its file"
	finish
fi
. "$(catalogue_image_env)"
REPO=$CATALOGUE_REPO DIGEST=$CATALOGUE_DIGEST PYV=$CATALOGUE_PYTHON
TAG=$CATALOGUE_TAG
use_slurm_stack images
nv storage mb "s3://$BUCKET" "${EP[@]}"
check_rc "the bucket is created" 0

# (the local profile too, as the team's project has it: navette lock reads
# the default one)
if ! catalogue_team "$REPO" "    [\"local\"] = { backend = \"local\", storage = \"file://$T/store\",
                  images = { catalogue = \"$REPO:bookworm\" } },
    hpc = {
      backend = \"slurm\", storage = \"s3://$BUCKET/\", require_pushed = false,
      s3 = { endpoint = \"$S3_ENDPOINT\", region = \"$S3_REGION\" },
      slurm = { endpoint = \"$SLURMRESTD_URL\", user = \"$SLURM_USER\",
                credential = \"jwtkey\", partition = \"$SLURM_PARTITION\",
                working_directory = \"$WD\" },
      max_token_lifespan = \"1h\",
      images = { catalogue = \"$REPO:bookworm\" },
    },"; then
	check_eq "the team repository is made and locked" "failed" "made"
	finish
fi
check_eq "the pointer still names the image test_image_catalogue built" \
	"$(skopeo_digest "$REPO:bookworm")" "$DIGEST"

# ---- up to date: the Slurm profile builds nothing -------------------------------
SECONDS=0
nv_in "$U" run base.lua --profile hpc --wait
check_rc "the same list on the Slurm profile: checked on a node" 0
echo "images: up to date, check on Slurm: ${SECONDS}s"
check_false "nothing was built again" grep -q 'Base system installed' <<<"$ERR"
check_eq "the registry's tag is the same image" "$(skopeo_digest "$REPO:$TAG")" "$DIGEST"
CHECK=$(sub_id image-check)
REC=$(s3cat "team/$CHECK/navette-run.json")
check_eq "the check ran in the same digest on the cluster" \
	"$(printf '%s' "$REC" | json '[d["image"], d["state"], d["profile"]]')" \
	"[\"$REPO@$DIGEST\", \"succeeded\", \"hpc\"]"
check_eq "its packages are the same" \
	"$(s3cat "team/$CHECK/packages.tsv" | cut -f1 | tr '\n' ' ')" "ffmpeg python3 "

# ---- the video recipe in the image the profile names -----------------------------
SECONDS=0
nv_in "$U" run video.lua --profile hpc --wait
check_rc "video in the catalogue image, Slurm" 0
echo "images: video in the image, Slurm: ${SECONDS}s"
JOIN=$(sub_id encode-join)
SRC=$(sub_id encode-source)
check_eq "its jobs ran in the pointer's image on a node" \
	"$(s3cat "team/$JOIN/navette-run.json" | json 'd["image"]')" "$REPO@$DIGEST"
check_eq "... and its record holds the node's fingerprint" \
	"$(s3cat "team/$JOIN/navette-run.json" | json '[d["node"]["runtime"]["name"], d["node"]["interpreter"]["version"], d["node"]["cpu"]["cores"] > 0]')" \
	"[\"podman\", \"$PYV\", true]"
s3get "team/$JOIN" "$T/video" output.mp4 report.json thumbnails.png hls/master.m3u8
s3get "team/$SRC" "$T/video" source.mp4
check_video "$T/video" "$T/video/source.mp4"

finish
