#!/usr/bin/env bash
# The catalogue's base image (recipes/images) on the local backend, against
# the registry fixture. A team repository uses the catalogue as a library
# (navette.use), its profile naming the catalogue's image
# (images.catalogue, a pointer tag in the registry):
#   plan       shows the debootstrap build under the tag of the package
#              list's hash, and builds nothing;
#   build      lib.images.base with the video family's packages (python3,
#              ffmpeg: the reduced list of CI; recipes/images/base.lua
#              builds every family's) is built by debootstrap and buildah,
#              pushed, the pointer moved to it, and checked by a job in it
#              (podman);
#   in use     the video recipe's jobs run in the image the profile points
#              to, with the source's frames in the output;
#   failures   an unknown package fails the build and pushes nothing (the
#              pointer stays), a package the image lacks fails the check
#              at running with the recipe's hint.
# What it built is written to the registry stack's catalogue-image.env for
# slurm/test_slurm_images.sh (the same image on a Slurm profile), which
# ctest runs after this one (fixture "catalogue_image").
# Needs REGISTRY_STACK_ENV (set by ctest).
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status
. "$(dirname "$0")/../image_lib.sh"

rm -f "$(catalogue_image_env)"
for tool in debootstrap podman skopeo ffprobe; do
	command -v "$tool" >/dev/null || { skip "the catalogue image" "no $tool: vendor/bootstrap test installs it"; finish; }
done
if [ "$(id -u)" != 0 ]; then
	skip "the catalogue image" "debootstrap runs as root only"
	finish
fi

REPO=$PLAIN/$RUN_ID/catalogue
if ! catalogue_team "$REPO" "    [\"local\"] = { backend = \"local\", storage = \"file://$T/store\",
                  images = { catalogue = \"$REPO:bookworm\" } },"; then
	check_eq "the team repository is made and locked" "failed" "made"
	finish
fi
HASH=$CATALOGUE_HASH TAG=$CATALOGUE_TAG

# ---- plan: nothing built ----------------------------------------------------
nv_in "$U" plan base.lua
check_rc "plan exits 0" 0
check_match "plan shows the build under the package list's tag" "$OUT" \
	"image debootstrap: $REPO:$TAG\$"
check_match "plan shows the check job in it" "$OUT" "image +$REPO:$TAG"
check_false "plan pushed nothing" skopeo inspect --tls-verify=false "docker://$REPO:$TAG"

# ---- build, and the check ------------------------------------------------------
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

# ---- for test_slurm_images: what was built ---------------------------------------
if [ ! -f "$T/.failures" ]; then
	printf 'CATALOGUE_REPO=%s\nCATALOGUE_DIGEST=%s\nCATALOGUE_PYTHON=%q\n' \
		"$REPO" "$DIGEST" "$PYV" >"$(catalogue_image_env)"
fi

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
