#!/usr/bin/env bash
# `navette image resolve|inspect|exists` and navette.image in recipes,
# against the registries of the ctest fixture "registry": exit codes and
# messages (a malformed reference names its bad part, a missing image is
# 1 for exists and 2 otherwise, a refusal 3 with the registry's words and
# no secret), credentials from ~/.docker/config.json and from navette.lua
# (basic on htpasswd, Bearer tokens from the token service, a reader that
# may not push), and plan mode: `navette plan` of a recipe that pushes a
# code layer records it and pushes nothing; `navette run` pushes it.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status
. "$(dirname "$0")/../image_lib.sh"

BASE_DIGEST=$(make_base "$PLAIN" "base/$RUN_ID:1") || {
	echo "FAIL: cannot build the base image with buildah" >&2
	exit 1
}
BASE=$PLAIN/base/$RUN_ID

# ---- references ------------------------------------------------------------
nv image resolve "$PLAIN/Team/App:1"
check_rc "an uppercase repository is a usage error" 2
check_contains "the error names the bad part" "$ERR" "'Team' must be lowercase"
nv image resolve "$PLAIN/app@sha256:1234"
check_rc "a short digest is a usage error" 2
check_contains "the error names the digest" "$ERR" "digest 'sha256:1234'"
nv image resolve
check_rc "no reference is a usage error" 2

# ---- plain registry ----------------------------------------------------------
nv image exists "$BASE:1"
check_rc "exists: 0 when there" 0
check_eq "exists prints the digest" "$OUT" "$BASE_DIGEST"
nv image exists "$BASE:nope"
check_rc "exists: 1 when not" 1
nv image resolve "$BASE:nope"
check_rc "resolve of a missing tag: 2" 2
check_contains "with the registry's code" "$ERR" "MANIFEST_UNKNOWN"
nv image resolve "$BASE@$BASE_DIGEST"
check_eq "a reference by digest resolves to itself" "$OUT" "$BASE@$BASE_DIGEST"
nv image inspect "$BASE:1"
check_rc "inspect succeeds" 0
check_match "inspect shows the platform" "$OUT" '^platform +linux/amd64$'
check_match "inspect lists the layer" "$OUT" '^  sha256:[0-9a-f]{64} '
nv image resolve "$BASE:1" --json
check_eq "--json gives the digest" "$(printf '%s' "$OUT" | json 'd["digest"]')" "$BASE_DIGEST"
nv image resolve "127.0.0.1:1/x:1"
check_rc "an unreachable registry: 4" 4

# ---- basic auth: docker config, then none --------------------------------------
skopeo copy --src-tls-verify=false --dest-tls-verify=false \
	--dest-creds "$REGISTRY_BASIC_USER:$REGISTRY_BASIC_PASSWORD" \
	"docker://$BASE:1" "docker://$BASIC/base/$RUN_ID:1" >/dev/null 2>&1 ||
	fail "skopeo could not copy the base to the basic registry"
nv image resolve "$BASIC/base/$RUN_ID:1"
check_rc "the basic registry refuses an anonymous resolve (exit 3)" 3
check_contains "the refusal says HTTP 401" "$ERR" "HTTP 401"
check_contains "and what to check" "$ERR" "credential"
docker_login "$BASIC" "$REGISTRY_BASIC_USER" "wrong-$REGISTRY_BASIC_PASSWORD"
nv image resolve "$BASIC/base/$RUN_ID:1"
check_rc "a wrong password in the docker config is refused (exit 3)" 3
check_no_match "the wrong password is not printed" "$OUT$ERR" "wrong-$REGISTRY_BASIC_PASSWORD"
docker_login "$BASIC" "$REGISTRY_BASIC_USER" "$REGISTRY_BASIC_PASSWORD"
nv image resolve "$BASIC/base/$RUN_ID:1"
check_eq "with the docker config's login it resolves" "$OUT" "$BASIC/base/$RUN_ID@$BASE_DIGEST"
nv image resolve "$BASIC/base/$RUN_ID:1" --docker-config "$T/none.json"
check_rc "--docker-config elsewhere: anonymous again (exit 3)" 3
rm -f "$HOME/.docker/config.json"

# ---- token auth, credentials from navette.lua ---------------------------------
R=$(new_repo cli)
cat >"$R/navette.lua" <<EOF
return {
  name = "cli",
  credentials = {
    pusher = { kind = "basic", source = "env", host = "$TOKEN",
               env = { user = "NV_PUSH_USER", password = "NV_PUSH_PASSWORD" } },
    reader = { kind = "basic", source = "env",
               env = { user = "NV_READ_USER", password = "NV_READ_PASSWORD" } },
  },
}
EOF
printf 'code\n' | put_file "$R" main.txt
C1=$(commit_all "$R" first)
export NV_PUSH_USER=$REGISTRY_TOKEN_USER NV_PUSH_PASSWORD=$REGISTRY_TOKEN_PASSWORD
export NV_READ_USER=$REGISTRY_TOKEN_READER NV_READ_PASSWORD=$REGISTRY_TOKEN_READER_PASSWORD
nv_in "$R" image push-code --base "$BASE:1" --to "$TOKEN/team/$RUN_ID"
check_rc "push-code with the credential bound to the token registry" 0
check_match "it prints REPO@sha256" "$OUT" "^$TOKEN/team/$RUN_ID@sha256:[0-9a-f]{64}$"
PUSHED=$OUT
nv_in "$R" image resolve "$TOKEN/team/$RUN_ID:${C1:0:12}"
check_eq "resolve through Bearer tokens" "$OUT" "$PUSHED"
nv_in "$R" image push-code --base "$BASE:1" --to "$TOKEN/team/$RUN_ID-r" --credential reader
check_rc "a pull-only credential cannot push (exit 3)" 3
check_contains "the refusal says the scope was insufficient" "$ERR" "insufficient_scope"
check_no_match "no password printed" "$OUT$ERR" "$REGISTRY_TOKEN_READER_PASSWORD"
nv_in "$R" image resolve "$TOKEN/team/$RUN_ID:${C1:0:12}" --credential nosuch
check_rc "an unknown credential name is a usage error" 2
check_contains "it says so" "$ERR" "no credential named 'nosuch'"
TOKENS=$(curl -sf "$REGISTRY_ISSUER/_log")
check_match "the token service saw the pusher ask for pull,push" "$TOKENS" \
	"^$REGISTRY_TOKEN_USER repository:team/$RUN_ID:pull,push"

# ---- progress: on a terminal only -------------------------------------------
nv_in "$R" image push-code --base "$BASE:1" --to "$PLAIN/team/$RUN_ID-pipe"
check_rc "push-code on a pipe" 0
check_no_match "no progress bar on a pipe" "$ERR" "upload"
if command -v script >/dev/null 2>&1 && script -qec true /dev/null >/dev/null 2>&1; then
	TTY_OUT=$(cd "$R" && script -qec "$(printf '%q ' "$NAVETTE" image push-code \
		--base "$BASE:1" --to "$PLAIN/team/$RUN_ID-tty")" /dev/null)
	check_match "a progress bar for the layer's upload on a terminal" "$TTY_OUT" \
		'upload [0-9a-f]{12} #+ 100% '
	check_match "and the pushed reference" "$TTY_OUT" "$PLAIN/team/$RUN_ID-tty@sha256:"
else
	skip "a progress bar on a terminal" \
		"no script(1) that takes -qec (util-linux's)"
fi

# ---- recipes: plan records, run pushes ------------------------------------
mkdir -p "$R/recipes"
cat >"$R/recipes/push.lua" <<EOF
local navette = require "navette"
local img = navette.image.code_layer {
  base = "$BASE:1",
  to = "$PLAIN/team/$RUN_ID-recipe",
  into = "/srv/app",
}
local digest = navette.image.resolve("$BASE:1")
assert(digest == "$BASE_DIGEST", "resolve in a recipe")
if not img.planned then
  local prefix = "$PLAIN/team/$RUN_ID-recipe@sha256:"
  assert(img.reference:sub(1, #prefix) == prefix and #img.reference == #prefix + 64,
         "a pinned reference")
  assert(navette.image.exists(img.reference), "it exists")
end
EOF
C2=$(commit_all "$R" recipe)
nv_in "$R" plan recipes/push.lua --json
check_rc "plan of a recipe with a code layer" 0
check_match "the plan records the push" "$OUT" '"push-code"'
check_eq "plan pushed nothing" \
	"$(skopeo inspect --tls-verify=false "docker://$PLAIN/team/$RUN_ID-recipe:${C2:0:12}" >/dev/null 2>&1 && echo pushed || echo absent)" absent
nv_in "$R" run recipes/push.lua
check_rc "run of the recipe" 0
check_eq "run pushed the code layer under the commit's tag" \
	"$(skopeo inspect --tls-verify=false "docker://$PLAIN/team/$RUN_ID-recipe:${C2:0:12}" | json 'd["Labels"]["org.opencontainers.image.revision"]')" "$C2"
check_eq "into the folder the recipe asked for" \
	"$(skopeo inspect --tls-verify=false --config "docker://$PLAIN/team/$RUN_ID-recipe:${C2:0:12}" | json 'd["config"]["WorkingDir"]')" /srv/app
nv audit show --json
check_contains "the push is in the audit log" "$OUT" "image.push"

finish
