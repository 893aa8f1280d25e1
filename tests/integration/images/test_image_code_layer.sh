#!/usr/bin/env bash
# `navette image push-code` against the real registries of the ctest
# fixture "registry": a base given by tag is resolved to its digest; the
# image skopeo reads back is valid (blobs, diff_ids); the same commit gives
# the same digest on two registries and from a clone elsewhere; a second
# push sends no blob (counted in the registry's access log); a planted
# secret or a symlink leaving the tree refuses the push before anything is
# sent; an index base is resolved to the platform asked for; podman runs
# the image and sees the repository's files at the commit.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status
. "$(dirname "$0")/../image_lib.sh"

BASE_TAG=$PLAIN/base/$RUN_ID:1
BASE_DIGEST=$(make_base "$PLAIN" "base/$RUN_ID:1") || {
	echo "FAIL: cannot build the base image with buildah" >&2
	exit 1
}
check_match "buildah made a base image" "$BASE_DIGEST" '^sha256:[0-9a-f]{64}$'

# ---- the repository -------------------------------------------------------
R=$(new_repo app)
git -C "$R" remote add origin https://git.example.com/team/app.git
printf 'hello from the commit\n' | put_file "$R" README
printf '#!/bin/sh\necho run\n' | put_file "$R" bin/run.sh
chmod 755 "$R/bin/run.sh"
printf 'deep\n' | put_file "$R" src/pkg/deep.txt
ln -s src/pkg/deep.txt "$R/link-inside"
printf '{"lockfileVersion": 3}\n' | put_file "$R" package-lock.json
C1=$(commit_all "$R" first)
TAG1=${C1:0:12}

# ---- resolve ----------------------------------------------------------------
nv image resolve "$BASE_TAG"
check_rc "resolve succeeds" 0
check_eq "resolve prints the base by digest" "$OUT" "$PLAIN/base/$RUN_ID@$BASE_DIGEST"
check_eq "skopeo agrees on the base digest" "$(skopeo_digest "$BASE_TAG")" "$BASE_DIGEST"

# ---- push-code -------------------------------------------------------------
TO=$PLAIN/team/$RUN_ID
nv image push-code --base "$BASE_TAG" --to "$TO" --repo "$R" --json
check_rc "push-code succeeds" 0
DIGEST=$(printf '%s' "$OUT" | json 'd["digest"]')
check_eq "the reference is REPO@digest" "$(printf '%s' "$OUT" | json 'd["reference"]')" "$TO@$DIGEST"
check_eq "the base given by tag was pinned by its digest" \
	"$(printf '%s' "$OUT" | json 'd["base_digest"]')" "$BASE_DIGEST"
check_eq "the tag comes from the commit" "$(printf '%s' "$OUT" | json 'd["tag"]')" "$TAG1"
check_eq "skopeo sees the tag at that digest" "$(skopeo_digest "$TO:$TAG1")" "$DIGEST"
check_eq "the first push uploads the layer and the config" \
	"$(printf '%s' "$OUT" | json 'd["blobs_uploaded"]')" 2
check_eq "the base layer is mounted, not sent" \
	"$(printf '%s' "$OUT" | json 'd["blobs_mounted"]')" 1
verify_image "the code layer image" "$TO:$TAG1"
LABELS=$(skopeo inspect --tls-verify=false "docker://$TO:$TAG1" | json 'd["Labels"]')
check_eq "revision label = the commit" \
	"$(printf '%s' "$LABELS" | json 'd["org.opencontainers.image.revision"]')" "$C1"
check_eq "source label = the remote URL" \
	"$(printf '%s' "$LABELS" | json 'd["org.opencontainers.image.source"]')" \
	"https://git.example.com/team/app.git"
check_eq "created label = the commit time" \
	"$(printf '%s' "$LABELS" | json 'd["org.opencontainers.image.created"]')" \
	"$(TZ=UTC git -C "$R" log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ)"
check_eq "lock-file hash label" \
	"$(printf '%s' "$LABELS" | json 'd["io.navette.lockfile.sha256"]')" \
	"$(printf '%s' "$OUT" | json 'd["lockfile_hash"]')"

nv image inspect "$TO:$TAG1" --json
check_rc "inspect succeeds" 0
check_eq "inspect: two layers" "$(printf '%s' "$OUT" | json 'len(d["layers"])')" 2
check_eq "inspect: the working folder is /workspace" \
	"$(printf '%s' "$OUT" | json 'd["config"]["config"]["WorkingDir"]')" /workspace
LAST_DIFF_ID=$(printf '%s' "$OUT" | json 'd["config"]["rootfs"]["diff_ids"][-1]')
nv image pack --repo "$R" --output "$T/layer.tar.gz" --json
check_rc "pack succeeds" 0
check_eq "inspect: diff_ids end with the layer's" "$LAST_DIFF_ID" \
	"$(printf '%s' "$OUT" | json 'd["diff_id"]')"
check_eq "pack: the layer's digest is the file's sha256" \
	"sha256:$(sha256 "$T/layer.tar.gz")" "$(printf '%s' "$OUT" | json 'd["layer_digest"]')"
check_eq "pack: diff_id is the uncompressed tar's sha256" \
	"sha256:$(gzip -dc "$T/layer.tar.gz" | shasum -a 256 | cut -d' ' -f1)" \
	"$(printf '%s' "$OUT" | json 'd["diff_id"]')"
check_match "the layer holds the tree under workspace/ with git's modes" \
	"$(tar -tvzf "$T/layer.tar.gz")" '^-rwxr-xr-x 0/0 .* workspace/bin/run\.sh$'

# ---- a second push sends no blob -------------------------------------------
LOG=$REGISTRY_LOG_PLAIN
uploads_before=$(count_log "$LOG" "\"(PUT|PATCH|POST) /v2/team/$RUN_ID/blobs/uploads")
check_ne "the registry's log shows the first push's uploads" "$uploads_before" 0
nv image push-code --base "$BASE_TAG" --to "$TO" --repo "$R" --json
check_rc "the second push succeeds" 0
check_eq "the second push gives the same digest" "$(printf '%s' "$OUT" | json 'd["digest"]')" "$DIGEST"
check_eq "the second push sends 0 blob bytes" "$(printf '%s' "$OUT" | json 'd["bytes_uploaded"]')" 0
check_eq "the second push finds the 3 blobs present" "$(printf '%s' "$OUT" | json 'd["blobs_present"]')" 3
uploads_after=$(count_log "$LOG" "\"(PUT|PATCH|POST) /v2/team/$RUN_ID/blobs/uploads")
check_eq "the registry's log shows no upload request in the second push" \
	"$uploads_after" "$uploads_before"
check_ne "the first push sent the layer in chunks while packing it" \
	"$(count_log "$LOG" "\"PATCH /v2/team/$RUN_ID/blobs/uploads")" 0
VERDICTS=$NAVETTE_HOME/cache/layers/scan-verdicts
check_eq "the scan kept the clean verdicts of the commit's 5 files" \
	"$(($(wc -l <"$VERDICTS") - 1))" 5

# ---- another registry, with docker-login credentials: same digest -----------
docker_login "$BASIC" "$REGISTRY_BASIC_USER" "$REGISTRY_BASIC_PASSWORD"
nv image push-code --base "$BASE_TAG" --to "$BASIC/team/$RUN_ID" --repo "$R" --json
check_rc "push-code to the basic-auth registry (base copied across)" 0
check_eq "the same commit on the same base: the same digest there" \
	"$(printf '%s' "$OUT" | json 'd["digest"]')" "$DIGEST"
check_eq "the base layer was copied from the other registry" \
	"$(printf '%s' "$OUT" | json 'd["blobs_copied"]')" 1
check_no_match "no password in what is printed" "$OUT$ERR" "$REGISTRY_BASIC_PASSWORD"
verify_image "the copy on the basic registry" "$BASIC/team/$RUN_ID:$TAG1" \
	"$REGISTRY_BASIC_USER:$REGISTRY_BASIC_PASSWORD"
rm -f "$HOME/.docker/config.json"
nv image push-code --base "$BASE_TAG" --to "$BASIC/team/$RUN_ID" --repo "$R"
check_rc "without a credential the basic registry refuses (exit 3)" 3
check_contains "the refusal says HTTP 401" "$ERR" "HTTP 401"

# ---- the token registry, with a credential declared in navette.lua ---------
cat >"$R/navette.lua" <<EOF
return {
  name = "app",
  credentials = {
    registry = { kind = "basic", source = "env", host = "$TOKEN",
                 env = { user = "NV_REG_USER", password = "NV_REG_PASSWORD" } },
  },
}
EOF
C2=$(commit_all "$R" "project file")
export NV_REG_USER=$REGISTRY_TOKEN_USER NV_REG_PASSWORD=$REGISTRY_TOKEN_PASSWORD
nv image push-code --base "$BASE_TAG" --to "$TOKEN/team/$RUN_ID" --repo "$R" --json
check_rc "push-code to the token registry with the declared credential" 0
check_eq "a commit changing one file (navette.lua): one more clean verdict" \
	"$(($(wc -l <"$VERDICTS") - 1))" 6
check_eq "its scan read the one changed file" "$(printf '%s' "$OUT" | json 'd["scan_files_read"]')" 1
check_eq "and skipped the 4 it had found clean" "$(printf '%s' "$OUT" | json 'd["scan_files_cached"]')" 4
TDIGEST=$(printf '%s' "$OUT" | json 'd["digest"]')
check_eq "its tag is the new commit's" "$(printf '%s' "$OUT" | json 'd["tag"]')" "${C2:0:12}"
verify_image "the image on the token registry" "$TOKEN/team/$RUN_ID:${C2:0:12}" \
	"$REGISTRY_TOKEN_USER:$REGISTRY_TOKEN_PASSWORD"
check_no_match "no password in what is printed" "$OUT$ERR" "$NV_REG_PASSWORD"
unset NV_REG_USER NV_REG_PASSWORD

# ---- from a clone elsewhere: the same digest ---------------------------------
git clone -q --no-local "$R" "$T/clone"
git -C "$T/clone" remote set-url origin https://git.example.com/team/app.git
git -C "$T/clone" checkout -q "$C1"
nv image push-code --base "$BASE_TAG" --to "$PLAIN/team/$RUN_ID-clone" --repo "$T/clone" --commit "$C1" --json
check_rc "push-code from a clone" 0
check_eq "a clone of the same commit gives the same digest" \
	"$(printf '%s' "$OUT" | json 'd["digest"]')" "$DIGEST"

# ---- refusals before anything is sent ----------------------------------------
git -C "$R" checkout -q main
# an AWS-shaped key pair drawn now, so that this file holds none
planted_id="AKIA$(LC_ALL=C tr -dc 'A-Z0-9' </dev/urandom | head -c 16)"
planted_secret=$(LC_ALL=C tr -dc 'A-Za-z0-9' </dev/urandom | head -c 40)
printf 'aws_access_key_id = %s\naws_secret_access_key = %s\n' \
	"$planted_id" "$planted_secret" | put_file "$R" config/credentials
C3=$(commit_all "$R" "planted secret")
uploads_before=$(count_log "$LOG" "\"(PUT|PATCH|POST) /v2/team/$RUN_ID/blobs/uploads")
nv image push-code --base "$BASE_TAG" --to "$TO" --repo "$R"
check_rc "a tree with a planted secret is refused (exit 3)" 3
check_eq "no byte of it went to the registry, not even in an upload session" \
	"$(count_log "$LOG" "\"(PUT|PATCH|POST) /v2/team/$RUN_ID/blobs/uploads")" "$uploads_before"
check_eq "the blob with the secret got no clean verdict" \
	"$(($(wc -l <"$VERDICTS") - 1))" 6
check_contains "the refusal names the file" "$ERR" "config/credentials"
check_no_match "the refusal does not print the secret" "$ERR" "$planted_secret"
check_eq "nothing was pushed for that commit" \
	"$(skopeo inspect --tls-verify=false "docker://$TO:${C3:0:12}" >/dev/null 2>&1 && echo pushed || echo absent)" absent

git -C "$R" rm -q config/credentials
ln -s ../../etc/passwd "$R/evil"
C4=$(commit_all "$R" "escaping link")
nv image push-code --base "$BASE_TAG" --to "$TO" --repo "$R"
check_rc "a symlink pointing outside the tree is refused (exit 3)" 3
check_contains "the refusal names the link" "$ERR" "'evil'"
check_contains "the refusal says why" "$ERR" "outside the tree"
check_eq "nothing was pushed for that commit" \
	"$(skopeo inspect --tls-verify=false "docker://$TO:${C4:0:12}" >/dev/null 2>&1 && echo pushed || echo absent)" absent

nv image push-code --base "$BASE_TAG" --to "$TO@$BASE_DIGEST" --repo "$R"
check_rc "a target with a digest is a usage error" 2
nv image push-code --base "$PLAIN/base/$RUN_ID:missing" --to "$TO" --repo "$R" --commit "$C1"
check_rc "a missing base is an error" 2
check_contains "it names the missing manifest" "$ERR" "MANIFEST_UNKNOWN"

# ---- an index base, resolved to the platform asked for -----------------------
ARM=$(make_base "$PLAIN" "base/$RUN_ID:arm64" arm64)
if buildah manifest create "localhost/nv-index-$RUN_ID" >/dev/null 2>&1 &&
	buildah manifest add "localhost/nv-index-$RUN_ID" "docker://$PLAIN/base/$RUN_ID:1" --tls-verify=false >/dev/null 2>&1 &&
	buildah manifest add "localhost/nv-index-$RUN_ID" "docker://$PLAIN/base/$RUN_ID:arm64" --tls-verify=false >/dev/null 2>&1 &&
	buildah manifest push --all --tls-verify=false "localhost/nv-index-$RUN_ID" "docker://$PLAIN/base/$RUN_ID:multi" >/dev/null 2>&1; then
	nv image resolve "$PLAIN/base/$RUN_ID:multi"
	check_eq "an index resolves to linux/amd64 by default" "$OUT" "$PLAIN/base/$RUN_ID@$BASE_DIGEST"
	nv image resolve "$PLAIN/base/$RUN_ID:multi" --platform linux/arm64
	check_eq "an index resolves to the platform asked for" "$OUT" "$PLAIN/base/$RUN_ID@$ARM"
	nv image resolve "$PLAIN/base/$RUN_ID:multi" --platform linux/riscv64
	check_rc "a platform the index lacks is an error" 2
	check_contains "it lists the platforms there are" "$ERR" "linux/arm64"
	nv image push-code --base "$PLAIN/base/$RUN_ID:multi" --platform linux/arm64 \
		--to "$PLAIN/team/$RUN_ID-arm" --repo "$R" --commit "$C1" --json
	check_rc "push-code on the arm64 entry of an index" 0
	check_eq "its base is the arm64 image" "$(printf '%s' "$OUT" | json 'd["base_digest"]')" "$ARM"
	check_eq "skopeo sees an arm64 image" \
		"$(skopeo inspect --tls-verify=false --override-arch arm64 "docker://$PLAIN/team/$RUN_ID-arm:$TAG1" | json 'd["Architecture"]')" arm64
else
	fail "buildah could not make an index for the platform test"
fi

# ---- podman runs the image and sees the commit's files ----------------------
if command -v podman >/dev/null 2>&1 &&
	podman run --rm "$BASE_TAG" /bin/busybox true >"$T/podman.log" 2>&1; then
	RUN_OUT=$(podman run --rm "$TO@$DIGEST" /bin/busybox sh -c \
		'pwd; cat README; test -x bin/run.sh && echo exec-ok; /bin/busybox readlink link-inside; cat link-inside' 2>"$T/podman.err")
	check_eq "podman runs the code layer image by digest, in the commit's tree" \
		"$RUN_OUT" "$(printf '/workspace\nhello from the commit\nexec-ok\nsrc/pkg/deep.txt\ndeep')"
else
	skip "podman runs the code layer image" \
		"podman cannot run containers here: $(tail -3 "$T/podman.log" 2>/dev/null)"
fi

finish
