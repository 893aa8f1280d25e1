#!/usr/bin/env bash
# Jobs in images on the local backend, against the registries of the ctest
# fixture "registry" and podman: a recipe pushes a code layer of its own
# commit (navette.image.code_layer) and a job runs in it by digest, seeing
# the commit's files where the layer put them; a job on a base image given
# by tag runs in it with the workspace and inputs read-only and the outputs
# writable, and its run record shows the digest it was pinned to, not the
# tag; an image missing from its registry and a machine without a container
# runtime are refused before submission.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status
. "$(dirname "$0")/../image_lib.sh"

if ! command -v podman >/dev/null 2>&1; then
	echo "FAIL: podman is not installed (see vendor/packages.txt)" >&2
	exit 1
fi

BASE_REPO=base/$RUN_ID
PUSHED=$(make_base "$PLAIN" "$BASE_REPO:1")
check_match "a base image is pushed to the plain registry" "$PUSHED" \
	'^sha256:[0-9a-f]{64}$'
BASE_DIGEST=$(skopeo_digest "$PLAIN/$BASE_REPO:1")
check_eq "skopeo sees the base pushed" "$BASE_DIGEST" "$PUSHED"
if ! podman run --rm "$PLAIN/$BASE_REPO:1" /bin/busybox true \
	>"$T/podman.log" 2>&1; then
	echo "FAIL: podman cannot run containers here: $(tail -5 "$T/podman.log")" >&2
	exit 1
fi

R=$(new_repo imgjobs)
put_file "$R" hello.txt <<'EOF'
hello from the commit
EOF
put_file "$R" data.txt <<'EOF'
an input
EOF
put_file "$R" layer.lua <<EOF
local navette = require "navette"
local img = navette.image.code_layer {
  base = "$PLAIN/$BASE_REPO:1",
  to = "$PLAIN/team/$RUN_ID",
  into = "/srv/app",
}
navette.job {
  name = "in-layer",
  image = img,
  command = { "/bin/busybox", "sh", "-c",
    "/bin/busybox pwd > \$NAVETTE_OUTPUTS/pwd.txt; /bin/busybox cat hello.txt > \$NAVETTE_OUTPUTS/hello.txt; echo \$NAVETTE_WORKSPACE > \$NAVETTE_OUTPUTS/ws.txt" },
  success = { outputs = { "hello.txt" } },
}
EOF
put_file "$R" tagged.lua <<EOF
local navette = require "navette"
local data = navette.storage.put("inputs/data.txt", "data.txt")
navette.job {
  name = "on-base",
  image = "$PLAIN/$BASE_REPO:1",
  inputs = { d = data.url },
  env = { GREETING = "it's me" },
  command = { "/bin/busybox", "sh", "-c", [[
cat "\$NAVETTE_INPUTS/d" > "\$NAVETTE_OUTPUTS/copy.txt"
cat hello.txt > "\$NAVETTE_OUTPUTS/hello.txt"
if /bin/busybox touch "\$NAVETTE_INPUTS/x" 2>/dev/null; then echo inputs-rw; else echo inputs-ro; fi > "\$NAVETTE_OUTPUTS/modes.txt"
if /bin/busybox touch "\$NAVETTE_WORKSPACE/x" 2>/dev/null; then echo workspace-rw; else echo workspace-ro; fi >> "\$NAVETTE_OUTPUTS/modes.txt"
echo "\$GREETING" > "\$NAVETTE_OUTPUTS/env.txt"
/bin/busybox ls /usr/bin/git 2>/dev/null || echo no-host-tools >> "\$NAVETTE_OUTPUTS/modes.txt"
]] },
}
EOF
put_file "$R" missing.lua <<EOF
local navette = require "navette"
navette.job {
  name = "missing",
  image = "$PLAIN/$BASE_REPO@sha256:$(printf '0%.0s' $(seq 64))",
  command = { "true" },
}
EOF
HEAD=$(commit_all "$R")

# ---- a code layer of the job's own commit -----------------------------------

nv_in "$R" run layer.lua --wait
check_rc "the job in its code layer succeeds" 0
ID=$(submitted_id)
D=$(store_dir imgjobs "$ID")
check_eq "it ran where the layer put the tree" "$(cat "$D/pwd.txt" 2>&1)" /srv/app
check_eq "and saw the commit's file there" "$(cat "$D/hello.txt" 2>&1)" \
	"hello from the commit"
check_eq "NAVETTE_WORKSPACE says where the code is" "$(cat "$D/ws.txt" 2>&1)" \
	/srv/app
REC_IMAGE=$(json 'd["image"]' <"$D/navette-run.json" 2>&1)
check_match "the record names the image by digest" "$REC_IMAGE" \
	"^$PLAIN/team/$RUN_ID@sha256:[0-9a-f]{64}\$"
check_eq "the digest is the one the registry serves" \
	"${REC_IMAGE##*@}" "$(skopeo_digest "$REC_IMAGE")"
verify_image "the job's image" "$REC_IMAGE"
nv status "$ID" --json
check_eq "status shows the pinned image" \
	"$(printf '%s' "$OUT" | json 'd["image"]')" "$REC_IMAGE"

# ---- a base given by tag -------------------------------------------------------

nv_in "$R" run tagged.lua --wait
check_rc "the job on a tagged base succeeds" 0
ID=$(submitted_id)
D=$(store_dir imgjobs "$ID")
check_eq "the record pins the tag to its digest" \
	"$(json 'd["image"]' <"$D/navette-run.json" 2>&1)" \
	"$PLAIN/$BASE_REPO@$BASE_DIGEST"
check_eq "the record keeps the tag asked for" \
	"$(json 'd["image_requested"]' <"$D/navette-run.json" 2>&1)" \
	"$PLAIN/$BASE_REPO:1"
check_eq "the input is readable in the container" \
	"$(cat "$D/copy.txt" 2>&1)" "an input"
check_eq "the workspace is the commit's" "$(cat "$D/hello.txt" 2>&1)" \
	"hello from the commit"
check_eq "inputs and workspace are read-only, and nothing of the host" \
	"$(cat "$D/modes.txt" 2>&1 | tr '\n' ' ')" \
	"inputs-ro workspace-ro no-host-tools "
check_eq "the declared environment reaches the container" \
	"$(cat "$D/env.txt" 2>&1)" "it's me"

# ---- refusals before submission -----------------------------------------------

nv_in "$R" run missing.lua
check_rc "an image missing from its registry is refused (3)" 3
check_contains "the refusal says it is not in its registry" "$ERR" \
	"is not in its registry"
check_eq "nothing was submitted" "$(printf '%s' "$OUT" | grep -c submitted)" 0

# no podman, no docker on PATH: a job with an image is refused, not run on
# the host
mkdir -p "$T/bin"
for tool in git sh env cat; do
	ln -sf "$(command -v $tool)" "$T/bin/$tool"
done
(cd "$R" && PATH=$T/bin "$NAVETTE" run tagged.lua >"$T/out" 2>"$T/err")
RC=$?
check_eq "without a container runtime: refused (3)" "$RC" 3
check_contains "the refusal names what to install" "$(cat "$T/err")" \
	"no container runtime"

finish
