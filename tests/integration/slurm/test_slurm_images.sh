#!/usr/bin/env bash
# The catalogue's base image (recipes/images) on both backends, against the
# registry, Slurm and S3 fixtures. A team repository uses the catalogue as
# a library (navette.use) with a profile per backend, each naming the
# catalogue's image (images.catalogue, a pointer tag in the registry):
#   plan       shows the debootstrap build under the tag of the package
#              list's hash, and builds nothing;
#   build      lib.images.base with the video family's packages (python3,
#              ffmpeg: the reduced list of CI; recipes/images/base.lua
#              builds every family's) is built by debootstrap and buildah,
#              pushed, the pointer moved to it, and checked by a job in it
#              on the local backend (podman);
#   up to date the same list on the Slurm profile builds nothing, and the
#              check runs in the same digest on a node;
#   in use     the video recipe's jobs run in the image the profile points
#              to, on both backends, with the source's frames in the output;
#   failures   an unknown package fails the build and pushes nothing (the
#              pointer stays), a package the image lacks fails the check
#              at running with the recipe's hint.
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
use_slurm_stack images
nv storage mb "s3://$BUCKET" "${EP[@]}"
check_rc "the bucket is created" 0

C=$(catalogue_repo catalogue)
REPO=$PLAIN/$RUN_ID/catalogue
U=$(NO_PROJECT_FILE=1 new_repo team)
cat >"$U/navette.lua" <<EOF2
return {
  name = "team",
  credentials = {
    jwtkey = { kind = "hs256", source = "file", path = "$SLURM_JWT_KEY" },
  },
  profiles = {
    ["local"] = { backend = "local", storage = "file://$T/store",
                  images = { catalogue = "$REPO:bookworm" } },
    hpc = {
      backend = "slurm", storage = "s3://$BUCKET/", require_pushed = false,
      s3 = { endpoint = "$S3_ENDPOINT", region = "$S3_REGION" },
      slurm = { endpoint = "$SLURMRESTD_URL", user = "$SLURM_USER",
                credential = "jwtkey", partition = "$SLURM_PARTITION",
                working_directory = "$WD" },
      max_token_lifespan = "1h",
      images = { catalogue = "$REPO:bookworm" },
    },
  },
}
EOF2
use_lib="local lib = navette.use { git = \"file://$C\", ref = \"catalogue-v1\", module = \"recipes.catalogue\" }"
put_file "$U" base.lua <<EOF2
local navette = require "navette"
$use_lib
local img = lib.images.base { families = { "video" } }
lib.images.check { image = img, families = { "video" } }
EOF2
put_file "$U" video.lua <<EOF2
local navette = require "navette"
$use_lib
lib.video.encode { parts = 2 }
EOF2
put_file "$U" badpackage.lua <<EOF2
local navette = require "navette"
$use_lib
lib.images.base { packages = { "python3", "navette-no-such-package" } }
EOF2
put_file "$U" lacking.lua <<EOF2
local navette = require "navette"
$use_lib
lib.images.check { name = "lacking", image = "$REPO:bookworm",
                   packages = { "python3", "sox" } }
EOF2
put_file "$U" full.lua <<EOF2
local navette = require "navette"
$use_lib
lib.images.check { image = lib.images.base {} }
EOF2
commit_all "$U" >/dev/null
nv_in "$U" lock base.lua video.lua badpackage.lua lacking.lua full.lua
check_rc "navette lock exits 0" 0
commit_all "$U" >/dev/null

# the tag: "bookworm-" and the hash of what the image is made of
HASH=$(printf 'navette debootstrap 1\nsuite bookworm\nvariant minbase\nplatform linux/amd64\npackage ffmpeg\npackage python3\n' |
	shasum -a 256 | cut -c1-64)
TAG=bookworm-${HASH:0:12}

# ---- plan: nothing built ----------------------------------------------------
nv_in "$U" plan base.lua
check_rc "plan exits 0" 0
check_match "plan shows the build under the package list's tag" "$OUT" \
	"image debootstrap: $REPO:$TAG\$"
check_match "plan shows the check job in it" "$OUT" "image +$REPO:$TAG"
check_false "plan pushed nothing" skopeo inspect --tls-verify=false "docker://$REPO:$TAG"

# ---- build, and the check on the local backend ---------------------------------
SECONDS=0
nv_in "$U" run base.lua --wait
check_rc "the image is built and checked on the local backend" 0
echo "images: build and check on the local backend: ${SECONDS}s"
DIGEST=$(skopeo_digest "$REPO:$TAG")
check_match "the registry has the list's tag" "$DIGEST" '^sha256:[0-9a-f]{64}$'
check_eq "the pointer the profile names is moved to it" \
	"$(skopeo_digest "$REPO:bookworm")" "$DIGEST"
LABELS=$(skopeo inspect --tls-verify=false "docker://$REPO:$TAG")
check_eq "its labels carry the list and its hash" \
	"$(printf '%s' "$LABELS" | json '[d["Labels"]["io.navette.packages"], d["Labels"]["io.navette.packages.sha256"], d["Architecture"], d["Os"]]')" \
	"[\"ffmpeg,python3\", \"$HASH\", \"amd64\", \"linux\"]"
echo "images: $(skopeo inspect --raw --tls-verify=false "docker://$REPO:$TAG" | json 'sum(l["size"] for l in d["layers"])') bytes compressed"
CHECK=$(printf '%s\n' "$OUT" | sed -n 's/^job image-check submitted: //p')
D=$T/store/team/$CHECK
check_eq "the check ran in the image, by digest" \
	"$(json 'd["image"]' <"$D/navette-run.json" 2>&1)" "$REPO@$DIGEST"
check_eq "every package is installed in it" \
	"$(cut -f1 "$D/packages.tsv" | tr '\n' ' ')" "ffmpeg python3 "
check_contains "it is Debian 12" "$(cat "$D/os-release")" 'VERSION_CODENAME=bookworm'
check_match "ffmpeg answers in it" "$(cat "$D/tools.txt")" '^ffmpeg: ffmpeg version '

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
nv_in "$U" run video.lua --wait
check_rc "video in the catalogue image, local backend" 0
echo "images: video in the image, local: ${SECONDS}s"
JOIN=$(sub_id encode-join)
SRC=$(sub_id encode-source)
check_eq "its jobs ran in the pointer's image" \
	"$(json 'd["image"]' <"$T/store/team/$JOIN/navette-run.json" 2>&1)" "$REPO@$DIGEST"
check_video "$T/store/team/$JOIN" "$T/store/team/$SRC/source.mp4"
# the node's fingerprint: the runtime, and the interpreter asked in the image
PYV=$(podman run --rm "$REPO@$DIGEST" python3 --version 2>&1)
check_eq "the join's record holds the node: podman, and python3 as the image has it" \
	"$(json '[d["node"]["runtime"]["name"], d["node"]["interpreter"]["name"], d["node"]["interpreter"]["version"], d["node"]["kernel"] != None]' <"$T/store/team/$JOIN/navette-run.json" 2>&1)" \
	"[\"podman\", \"python3\", \"$PYV\", true]"
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

# ---- failures ----------------------------------------------------------------------
nv_in "$U" run badpackage.lua
check_rc "an unknown package fails the build" 1
check_contains "... naming debootstrap's failure" "$ERR" 'debootstrap failed'
check_eq "... and the pointer is where it was" "$(skopeo_digest "$REPO:bookworm")" "$DIGEST"
nv_in "$U" run lacking.lua --wait
check_rc "a check asking for a package the image lacks fails" 1
check_failed "the check" "$(sub_id lacking)" failed running \
	"the image lacks a package" 'image-check: FAILED: not installed in the image: sox'

# ---- the whole list: planned under its own tag, not built here ----------------
FULL=$(printf 'navette debootstrap 1\nsuite bookworm\nvariant minbase\nplatform linux/amd64\n%s\n' \
	"$(printf 'package %s\n' espeak-ng ffmpeg opencv-data python3 python3-numpy python3-opencv python3-skimage python3-sklearn python3-torch sox)" |
	shasum -a 256 | cut -c1-12)
nv_in "$U" plan full.lua
check_rc "the whole list: plan exits 0" 0
check_match "... and shows its build under the whole list's tag" "$OUT" \
	"image debootstrap: $REPO:bookworm-$FULL\$"
check_false "... without building it" skopeo inspect --tls-verify=false "docker://$REPO:bookworm-$FULL"
# the catalogue's own project file names no catalogue image
nv_in "$C" plan recipes/images/base.lua
check_rc "recipes/images/base.lua with no catalogue image in the profile: refused" 2
check_contains "... saying what to add" "$ERR" 'images = { catalogue = '

finish
