#!/usr/bin/env bash
# Images are made and checked for the platform the profile's nodes run
# (linux/amd64 when the profile does not say), never for this machine's:
# against the registries of the ctest fixture "registry", a job on an
# arm64 image and a code layer on an arm64 base are refused before
# anything is submitted or pushed, naming both platforms; a profile whose
# nodes are arm64 takes them; a malformed platform is refused.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status
. "$(dirname "$0")/../image_lib.sh"

ARM_DIGEST=$(make_base "$PLAIN" "base/$RUN_ID:arm" arm64)
check_match "an arm64 base is pushed" "$ARM_DIGEST" '^sha256:[0-9a-f]{64}$'

R=$(new_repo imgplat)
cat >"$R/navette.lua" <<EOF
return {
  name = "imgplat",
  profiles = {
    arm = { platform = "linux/arm64", require_pushed = false },
  },
}
EOF
put_file "$R" job.lua <<EOF
local navette = require "navette"
navette.job {
  name = "on-arm",
  image = "$PLAIN/base/$RUN_ID:arm",
  command = { "/bin/busybox", "true" },
}
EOF
put_file "$R" layer.lua <<EOF
local navette = require "navette"
local img = navette.image.code_layer {
  base = "$PLAIN/base/$RUN_ID:arm",
  to = "$PLAIN/team/$RUN_ID-layer",
}
print("pushed " .. img.reference)
EOF
commit_all "$R" >/dev/null

# ---- the default profile: amd64 nodes ----------------------------------------

nv_in "$R" run job.lua
check_rc "a job on an arm64 image is refused for amd64 nodes (3)" 3
check_contains "the refusal names the image's platform" "$ERR" \
	"is linux/arm64"
check_contains "and the nodes'" "$ERR" "not linux/amd64"
check_contains "and what would happen" "$ERR" "exec format error"
check_eq "nothing was submitted" "$(printf '%s' "$OUT" | grep -c submitted)" 0

nv_in "$R" run layer.lua
check_rc "a code layer on an arm64 base is refused for amd64 nodes" 3
check_contains "the refusal names the base's platform" "$ERR" \
	"is linux/arm64"
check_eq "nothing was pushed" \
	"$(skopeo_digest "$PLAIN/team/$RUN_ID-layer:latest" >/dev/null 2>&1 &&
		echo present || echo absent)" absent

# ---- a profile whose nodes are arm64 -----------------------------------------

nv_in "$R" plan job.lua --profile arm
check_rc "the arm64 image is taken for arm64 nodes" 0
check_no_match "no platform refusal" "$ERR" "exec format error"

nv_in "$R" run layer.lua --profile arm
check_rc "the code layer on the arm64 base is pushed for arm64 nodes" 0
LAYER=$(printf '%s\n' "$OUT" | sed -n 's/^pushed //p')
check_eq "the pushed image is linux/arm64" \
	"$(skopeo inspect --tls-verify=false --config \
		"docker://$LAYER" 2>&1 | json 'd["architecture"]' 2>&1)" arm64

# ---- a malformed platform ------------------------------------------------------

cat >"$R/navette.lua" <<EOF
return { name = "imgplat", profiles = { bad = { platform = "arm64" } } }
EOF
nv_in "$R" plan job.lua --profile bad
check_ne "a platform without its OS is refused" "$RC" 0
check_contains "the message says how to write it" "$ERR" \
	"platform must be OS/ARCH"

finish
