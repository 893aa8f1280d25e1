#!/usr/bin/env bash
# `navette image build` with the installed external builders (buildah,
# and podman where it is installed) against the registries of the ctest
# fixture "registry": the Containerfile of the commit (not of the working
# folder) is built, tagged from the commit and the lock-file hash, pushed;
# the digest printed is the one the registry serves (checked by skopeo);
# a secret in the commit refuses the build; a missing builder is an error
# naming what to install.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status
. "$(dirname "$0")/../image_lib.sh"

BASE_DIGEST=$(make_base "$PLAIN" "base/$RUN_ID:1") || {
	echo "FAIL: cannot build the base image with buildah" >&2
	exit 1
}

R=$(new_repo built)
printf 'FROM %s\nCOPY message.txt /message.txt\nCMD ["/bin/busybox", "cat", "/message.txt"]\n' \
	"$PLAIN/base/$RUN_ID@$BASE_DIGEST" | put_file "$R" Containerfile
printf 'built from the commit\n' | put_file "$R" message.txt
printf 'flask==3.0.0\n' | put_file "$R" requirements.txt
C1=$(commit_all "$R" first)
# the working folder differs from the commit: the build must not see it
printf 'an uncommitted edit\n' >"$R/message.txt"
LOCK=$(nv image pack --repo "$R" --output "$T/l.tgz" --json; printf '%s' "$OUT" | json 'd["lockfile_hash"]')

SR=(--storage-root "$T/containers/storage" --run-root "$T/containers/run")
nv image build --to "$PLAIN/team/$RUN_ID" --repo "$R" --builder buildah "${SR[@]}" --json
check_rc "buildah builds and pushes" 0
DIGEST=$(printf '%s' "$OUT" | json 'd["digest"]')
TAG=$(printf '%s' "$OUT" | json 'd["tag"]')
check_eq "the tag is the commit and the lock-file hash" "$TAG" "${C1:0:12}-${LOCK:0:8}"
check_eq "the reference pins the digest" "$(printf '%s' "$OUT" | json 'd["reference"]')" \
	"$PLAIN/team/$RUN_ID@$DIGEST"
check_eq "the digest recorded is the one the registry serves" \
	"$(skopeo_digest "$PLAIN/team/$RUN_ID:$TAG")" "$DIGEST"
verify_image "the buildah image" "$PLAIN/team/$RUN_ID:$TAG"
check_eq "it carries the revision label" \
	"$(skopeo inspect --tls-verify=false "docker://$PLAIN/team/$RUN_ID:$TAG" |
		json 'd["Labels"]["org.opencontainers.image.revision"]')" "$C1"
skopeo copy --src-tls-verify=false "docker://$PLAIN/team/$RUN_ID:$TAG" \
	"oci:$T/built:t" >/dev/null 2>&1
check_eq "the image holds the committed file, not the working folder's" \
	"$(python3 - "$T/built" <<'EOF'
import io, json, os, sys, tarfile
d = sys.argv[1]
b = lambda h: open(os.path.join(d, "blobs", "sha256", h.split(":")[1]), "rb").read()
idx = json.load(open(os.path.join(d, "index.json")))
m = json.loads(b(idx["manifests"][0]["digest"]))
for layer in m["layers"]:
    t = tarfile.open(fileobj=io.BytesIO(b(layer["digest"])))
    for e in t.getmembers():
        if e.name.lstrip("./") == "message.txt":
            print(t.extractfile(e).read().decode().strip())
EOF
)" "built from the commit"

# podman, where installed, builds the same way (vfs, chroot isolation)
if command -v podman >/dev/null 2>&1; then
	nv image build --to "$PLAIN/team/$RUN_ID-podman:v1" --repo "$R" --builder podman "${SR[@]}" --json
	check_rc "podman builds and pushes" 0
	check_eq "an explicit tag is kept" "$(printf '%s' "$OUT" | json 'd["tag"]')" v1
	check_eq "podman's digest is the one the registry serves" \
		"$(skopeo_digest "$PLAIN/team/$RUN_ID-podman:v1")" "$(printf '%s' "$OUT" | json 'd["digest"]')"
else
	skip "podman builds and pushes" \
		"podman is not installed (vendor/packages.txt, group test)"
fi

# a secret in the commit: refused before any build (a throwaway key made
# now, so that this file holds none)
openssl genpkey -algorithm ed25519 2>/dev/null | put_file "$R" deploy_key
grep -q PRIVATE "$R/deploy_key" || fail "openssl made no key"
git -C "$R" checkout -q message.txt
C2=$(commit_all "$R" "a key")
nv image build --to "$PLAIN/team/$RUN_ID" --repo "$R" --builder buildah "${SR[@]}"
check_rc "a commit with a private key is not built (exit 3)" 3
check_contains "the refusal names the file" "$ERR" "deploy_key"

# missing builders
if ! command -v docker >/dev/null 2>&1; then
	nv image build --to "$PLAIN/team/$RUN_ID" --repo "$R" --builder docker
	check_rc "a builder that is not installed is refused (exit 3)" 3
	check_contains "the error names the builder" "$ERR" "builder 'docker' is not installed"
	check_contains "and says what to install" "$ERR" "install"
fi
mkdir -p "$T/emptybin"
ln -sf "$(command -v git)" "$T/emptybin/git"
PATH=$T/emptybin "$NAVETTE" image build --to "$PLAIN/team/$RUN_ID" --repo "$R" \
	>"$T/nobuilder.out" 2>"$T/nobuilder.err"
RC=$? OUT=$(cat "$T/nobuilder.out") ERR=$(cat "$T/nobuilder.err")
LAST_CMD="PATH=(no builder) navette image build"
check_rc "no builder at all is refused (exit 3)" 3
check_contains "the error says which to install" "$ERR" "install buildah or podman"
nv image build --to "$PLAIN/team/$RUN_ID" --repo "$R" --builder kaniko
check_rc "an unknown builder is a usage error" 2

finish
