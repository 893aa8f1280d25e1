# Helpers of the image integration tests (images/test_image_*.sh, and the
# tests of slurm/ that use images), sourced after lib.sh. They read the
# registries of the ctest fixture "registry" from REGISTRY_STACK_ENV, keep
# buildah's, podman's and skopeo's state under $T (never the user's), build
# base images locally (FROM scratch + a static busybox, with buildah), and
# check every image with skopeo, the independent reader.

: "${REGISTRY_STACK_ENV:?set REGISTRY_STACK_ENV to the registry.env of tests/stack/registry-start.sh}"
if [ ! -r "$REGISTRY_STACK_ENV" ]; then
	echo "FAIL: no registry stack: cannot read $REGISTRY_STACK_ENV" >&2
	exit 1
fi
. "$REGISTRY_STACK_ENV"
PLAIN=$REGISTRY_PLAIN
BASIC=$REGISTRY_BASIC
TOKEN=$REGISTRY_TOKEN
# a name no other test file uses (the registries outlive each file)
RUN_ID=$(basename "$0" .sh | tr '_' '-')-$$-$RANDOM

# buildah, podman and skopeo: state under $T, vfs storage, loopback
# registries without TLS, runc (crun cannot start containers here)
mkdir -p "$T/containers"
cat >"$T/containers/storage.conf" <<EOF
[storage]
driver = "vfs"
graphroot = "$T/containers/storage"
runroot = "$T/containers/run"
EOF
cat >"$T/containers/registries.conf" <<EOF
[[registry]]
location = "$PLAIN"
insecure = true
[[registry]]
location = "$BASIC"
insecure = true
[[registry]]
location = "$TOKEN"
insecure = true
EOF
cat >"$T/containers/containers.conf" <<'EOF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
EOF
export CONTAINERS_STORAGE_CONF=$T/containers/storage.conf
export CONTAINERS_REGISTRIES_CONF=$T/containers/registries.conf
export CONTAINERS_CONF=$T/containers/containers.conf
export REGISTRY_AUTH_FILE=$T/containers/auth.json
echo '{"auths": {}}' >"$REGISTRY_AUTH_FILE"
export XDG_RUNTIME_DIR=$T/containers/xdg
mkdir -p "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"

for tool in buildah skopeo busybox python3 curl; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "FAIL: $tool is not installed (see vendor/packages.txt)" >&2
		exit 1
	fi
done

# make_base REGISTRY REPO:TAG [ARCH]: a base image (busybox at /bin) built
# by buildah for linux/ARCH (default amd64) and pushed; prints its digest.
make_base() {
	local reg=$1 name=$2 arch=${3:-amd64} dir
	dir=$T/base-$arch
	mkdir -p "$dir"
	cp "$(command -v busybox)" "$dir/busybox"
	printf 'FROM scratch\nCOPY busybox /bin/busybox\nCMD ["/bin/busybox", "sh"]\n' \
		>"$dir/Containerfile"
	buildah bud --isolation chroot --platform "linux/$arch" -q \
		-t "localhost/nv-base-$arch" -f "$dir/Containerfile" "$dir" \
		>"$T/buildah.log" 2>&1 || {
		cat "$T/buildah.log" >&2
		return 1
	}
	buildah push --tls-verify=false --digestfile "$dir/digest" \
		"localhost/nv-base-$arch" "docker://$reg/$name" \
		>>"$T/buildah.log" 2>&1 || {
		cat "$T/buildah.log" >&2
		return 1
	}
	cat "$dir/digest"
}

# skopeo_digest REF [SKOPEO ARGS]: the digest skopeo sees for REF.
skopeo_digest() {
	local ref=$1
	shift
	skopeo inspect --tls-verify=false "$@" "docker://$ref" 2>"$T/skopeo.err" |
		json 'd["Digest"]'
}

# verify_image WHAT REF [USER:PASSWORD]: skopeo inspects REF, copies it
# with --preserve-digests into an oci: layout, and every blob's sha256 is
# its name, every uncompressed layer's sha256 the config's diff_id.
VERIFY_N=0
verify_image() {
	local what=$1 ref=$2 dir out
	local -a inspect_creds=() copy_creds=()
	if [ -n "${3:-}" ]; then
		inspect_creds=(--creds "$3")
		copy_creds=(--src-creds "$3")
	fi
	VERIFY_N=$((VERIFY_N + 1))
	dir=$T/oci-$VERIFY_N
	if ! skopeo inspect --tls-verify=false "${inspect_creds[@]}" "docker://$ref" \
		>"$T/inspect.json" 2>"$T/skopeo.err"; then
		LAST_CMD=
		fail "$what: skopeo inspect $ref ($(cat "$T/skopeo.err"))"
		return
	fi
	if ! skopeo copy --all --preserve-digests --src-tls-verify=false "${copy_creds[@]}" \
		"docker://$ref" "oci:$dir:t" >"$T/skopeo.log" 2>&1; then
		LAST_CMD=
		fail "$what: skopeo copy $ref ($(tail -3 "$T/skopeo.log"))"
		return
	fi
	out=$(python3 - "$dir" <<'EOF'
import gzip, hashlib, json, os, sys
d = sys.argv[1]
blobs = os.path.join(d, "blobs", "sha256")
def blob(h):
    with open(os.path.join(blobs, h), "rb") as f:
        return f.read()
bad = []
for name in os.listdir(blobs):
    if hashlib.sha256(blob(name)).hexdigest() != name:
        bad.append("blob " + name + " does not hash to its name")
index = json.load(open(os.path.join(d, "index.json")))
def check_manifest(digest):
    m = json.loads(blob(digest.split(":")[1]))
    if "manifests" in m:
        for e in m["manifests"]:
            check_manifest(e["digest"])
        return
    cfg = json.loads(blob(m["config"]["digest"].split(":")[1]))
    ids = cfg["rootfs"]["diff_ids"]
    if len(ids) != len(m["layers"]):
        bad.append("%d diff_ids for %d layers" % (len(ids), len(m["layers"])))
    for layer, want in zip(m["layers"], ids):
        data = blob(layer["digest"].split(":")[1])
        if layer["size"] != len(data):
            bad.append("size of " + layer["digest"])
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        if "sha256:" + hashlib.sha256(data).hexdigest() != want:
            bad.append("layer " + layer["digest"] + " is not diff_id " + want)
for e in index["manifests"]:
    check_manifest(e["digest"])
print("ok" if not bad else "; ".join(bad))
EOF
)
	if [ "$out" = ok ]; then
		pass "$what: skopeo inspects it, copies it with its digests, blobs and diff_ids check"
	else
		LAST_CMD=
		fail "$what: $out"
	fi
}

# count_log LOGFILE ERE: lines of a registry's log matching ERE (the access
# log lines: "METHOD /v2/... HTTP/1.1" STATUS).
count_log() {
	grep -Ec -- "$2" "$1" 2>/dev/null || true
}

# docker_login REGISTRY USER PASSWORD: a ~/.docker/config.json entry.
docker_login() {
	mkdir -p "$HOME/.docker"
	python3 - "$HOME/.docker/config.json" "$1" "$2" "$3" <<'EOF'
import base64, json, os, sys
path, reg, user, pw = sys.argv[1:]
try:
    doc = json.load(open(path))
except Exception:
    doc = {}
doc.setdefault("auths", {})[reg] = {
    "auth": base64.b64encode((user + ":" + pw).encode()).decode()}
with open(path, "w") as f:
    json.dump(doc, f)
os.chmod(path, 0o600)
EOF
}

# ---- the catalogue's base image, shared by two tests ----------------------------
# images/test_image_catalogue.sh builds it (on the local backend, with no
# turn on the Slurm cluster) and writes what it made to
# $(catalogue_image_env); slurm/test_slurm_images.sh, which ctest runs
# after it (fixture "catalogue_image"), checks that a Slurm profile naming
# the same pointer builds nothing and runs in the same digest.
catalogue_image_env() { printf '%s/catalogue-image.env\n' "$(dirname "$REGISTRY_STACK_ENV")"; }

# the tag: "bookworm-" and the hash of what the image is made of (the
# video family's packages: the reduced list of CI)
CATALOGUE_HASH=$(printf 'navette debootstrap 1\nsuite bookworm\nvariant minbase\nplatform linux/amd64\npackage ffmpeg\npackage python3\n' |
	shasum -a 256 | cut -c1-64)
CATALOGUE_TAG=bookworm-${CATALOGUE_HASH:0:12}

# catalogue_team REPO PROFILES: a team repository using a copy of the
# catalogue as a library (navette.use), with PROFILES (Lua table fields)
# in its project file, each naming REPO:bookworm as images.catalogue, and
# the recipes both tests run, locked and committed. Sets U (its folder)
# and C (the catalogue's copy).
catalogue_team() {
	local repo=$1 profiles=$2 c u use_lib
	c=$(catalogue_repo catalogue) || return 1
	u=$(NO_PROJECT_FILE=1 new_repo team) || return 1
	local creds=""
	[ -z "${SLURM_JWT_KEY:-}" ] || creds="  credentials = {
    jwtkey = { kind = \"hs256\", source = \"file\", path = \"$SLURM_JWT_KEY\" },
  },"
	cat >"$u/navette.lua" <<EOF2
return {
  name = "team",
$creds
  profiles = {
$profiles
  },
}
EOF2
	use_lib="local lib = navette.use { git = \"file://$c\", ref = \"catalogue-v1\", module = \"recipes.catalogue\" }"
	put_file "$u" base.lua <<EOF2
local navette = require "navette"
$use_lib
local img = lib.images.base { families = { "video" } }
lib.images.check { image = img, families = { "video" } }
EOF2
	put_file "$u" video.lua <<EOF2
local navette = require "navette"
$use_lib
lib.video.encode { parts = 2 }
EOF2
	put_file "$u" badpackage.lua <<EOF2
local navette = require "navette"
$use_lib
lib.images.base { packages = { "python3", "navette-no-such-package" } }
EOF2
	put_file "$u" lacking.lua <<EOF2
local navette = require "navette"
$use_lib
lib.images.check { name = "lacking", image = "$repo:bookworm",
                   packages = { "python3", "sox" } }
EOF2
	put_file "$u" full.lua <<EOF2
local navette = require "navette"
$use_lib
lib.images.check { image = lib.images.base {} }
EOF2
	commit_all "$u" >/dev/null || return 1
	nv_in "$u" lock base.lua video.lua badpackage.lua lacking.lua full.lua
	[ "$RC" = 0 ] || { printf 'navette lock failed: %s\n' "$ERR" >&2; return 1; }
	commit_all "$u" >/dev/null || return 1
	U=$u C=$c
}
