#!/usr/bin/env bash
# tests/bench/image_bench.sh [MiB] — code-layer benchmark: a git tree of MiB
# MiB (default 200: half text, half random bytes, in files of 64 KiB to
# 4 MiB), on a throwaway registry started here (tests/stack).
#
# Not a test (nothing registers it with add_test): it prints numbers and
# fails only when a step fails. It measures, best of 3 where it repeats:
#  1. pack+hash: the commit's tree as the tar stream and its sha256 (the
#     diff_id), by build/tests/bench/archive_bench, against `shasum -a 256` of
#     the same bytes (the tar, in the page cache); target >= 80% of its
#     speed. The same with deterministic gzip and both hashes, and the
#     whole `navette image pack` (secret scan included), are shown too,
#     and zstd -3 of the same tar (size, time, unpacking) beside gzip.
#  2. push: `navette image push-code` of the tree to a new repository
#     against `skopeo copy` of the same image (from an oci: layout) to
#     another new repository.
#     The push compared with skopeo scans the whole tree (the clean
#     verdicts of the first push dropped); a push of a changed commit (one
#     file more) then shows the scan reading only that file.
#  3. a second push of the unchanged commit: the blob bytes it sends
#     (navette's count and the registry's access log); target 0.
#
# Environment (all optional):
#   NAVETTE        the navette binary (build/navette)
#   ARCHIVE_BENCH  build/tests/bench/archive_bench
#   REGISTRY_PORT  first of 4 ports for the stack (25000, away from the
#                  tests' fixture)
#   BENCH_TMP      where the work folder goes (/tmp); removed on exit
set -eu -o pipefail
. "$(dirname "$0")/../need_dir_lib.sh"

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
ROOT=$(cd "$HERE/../.." && pwd -P)
MIB=${1:-200}
case $MIB in *[!0-9]* | 0) echo "usage: $0 [MiB]" >&2; exit 2 ;; esac
NAVETTE=${NAVETTE:-$ROOT/build/navette}
ARCHIVE_BENCH=${ARCHIVE_BENCH:-$ROOT/build/tests/bench/archive_bench}
PORT=${REGISTRY_PORT:-25000}

say() { printf 'image_bench: %s\n' "$*" >&2; }
die() {
	say "error: $*"
	exit 1
}
[ -x "$NAVETTE" ] || die "$NAVETTE not found (cmake --build build)"
[ -x "$ARCHIVE_BENCH" ] || die "$ARCHIVE_BENCH not found (cmake --build build --target archive_bench)"
for t in skopeo git python3 shasum; do
	command -v "$t" >/dev/null || die "$t is not installed"
done

W=$(mktemp -d "${BENCH_TMP:-/tmp}/navette-image-bench.XXXXXX")
NEED_DIR_ROOT=${BENCH_TMP:-}
need_dir W
cleanup() {
	bash "$ROOT/tests/stack/registry-stop.sh" "$W/stack" >/dev/null 2>&1 || true
	rm -rf "$W"
}
trap cleanup EXIT
export HOME=$W/home GIT_CONFIG_NOSYSTEM=1 NO_COLOR=1
export NAVETTE_HOME=$W/navette-home
mkdir -p "$HOME" "$NAVETTE_HOME"
git config --global user.name bench
git config --global user.email bench@bench
git config --global init.defaultBranch main

# seconds of wall time of a command (its output discarded)
timed() {
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null 2>&1 || die "failed: $*"
	t1=$(date +%s%N)
	echo "scale=3; ($t1 - $t0) / 1000000000" | bc -l 2>/dev/null ||
		python3 -c "print(round(($t1 - $t0) / 1e9, 3))"
}
best_of_3() {
	local a b c
	a=$(timed "$@")
	b=$(timed "$@")
	c=$(timed "$@")
	python3 -c "print(min($a, $b, $c))"
}
ratio() { python3 -c "print('%.2f' % ($1 / $2))"; }
mbps() { python3 -c "print('%.1f' % ($1 / $2 / 1e6))"; }

# ---- the tree ------------------------------------------------------------
say "making a ${MIB} MiB tree"
R=$W/repo
mkdir -p "$R"
git -C "$R" init -q
python3 - "$R" "$MIB" <<'EOF'
import os, random, sys
root, mib = sys.argv[1], int(sys.argv[2])
rnd = random.Random(42)
words = ("import def return class self value data model train loss "
         "batch epoch tensor layer config path file open read write "
         "print range len list dict for while if else").split()
total, target, i = 0, mib * 1048576, 0
while total < target:
    size = rnd.choice([65536, 262144, 1048576, 4194304])
    size = min(size, target - total)
    d = os.path.join(root, "src" if i % 2 == 0 else "data", "d%02d" % (i % 37))
    os.makedirs(d, exist_ok=True)
    p = os.path.join(d, "f%05d%s" % (i, ".py" if i % 2 == 0 else ".bin"))
    with open(p, "wb") as f:
        if i % 2 == 0:  # text: compressible, like code
            out, n = [], 0
            while n < size:
                line = " ".join(rnd.choice(words) for _ in range(10)) + \
                       " = %d\n" % rnd.randrange(10**6)
                out.append(line)
                n += len(line)
            f.write("".join(out).encode()[:size])
        else:  # random bytes: weights, media
            f.write(os.urandom(size))
    total += size
    i += 1
print(i, "files")
EOF
git -C "$R" add -A
git -C "$R" commit -qm bench
COMMIT=$(git -C "$R" rev-parse HEAD)
say "commit $COMMIT ($(git -C "$R" count-objects -vH | sed -n 's/^size: //p') loose)"

# ---- 1. pack+hash ------------------------------------------------------------
say "pack+hash"
"$ARCHIVE_BENCH" "$R" "$COMMIT" "$W/layer.tar" >"$W/archive.txt"
cat "$W/archive.txt"
TAR_BYTES=$(wc -c <"$W/layer.tar" | tr -d ' ')
NV_TAR_S=$(sed -n 's/^tar+sha256 .* \([0-9.]*\) s, .*/\1/p' "$W/archive.txt")
NV_GZ_S=$(sed -n 's/^tar+gzip+2x sha256 .* \([0-9.]*\) s, .*/\1/p' "$W/archive.txt")
cat "$W/layer.tar" >/dev/null # into the page cache
SHA_S=$(best_of_3 shasum -a 256 "$W/layer.tar")
PACK_S=$(best_of_3 "$NAVETTE" image pack --repo "$R" --output "$W/layer.tar.gz")
GZ_BYTES=$(wc -c <"$W/layer.tar.gz" | tr -d ' ')
# zstd for comparison (a tar+zstd layer is not made by navette): the same
# tar at level 3 on 2 threads, its size, and what a node pays to unpack
# each (one thread, as runtimes do)
ZSTD_LINE="zstd: not installed"
if command -v zstd >/dev/null 2>&1; then
	ZSTD_S=$(best_of_3 zstd -q -f -3 -T2 "$W/layer.tar" -o "$W/layer.tar.zst")
	ZSTD_BYTES=$(wc -c <"$W/layer.tar.zst" | tr -d ' ')
	ZSTD_D_S=$(best_of_3 zstd -q -d -c "$W/layer.tar.zst")
	GZIP_D_S=$(best_of_3 gzip -d -c "$W/layer.tar.gz")
	ZSTD_LINE="zstd -3 -T2 of the tar: $ZSTD_S s, $ZSTD_BYTES B (gzip layer $GZ_BYTES B); unpack: zstd -d $ZSTD_D_S s, gzip -d $GZIP_D_S s"
fi
# the same with the objects packed (git gc), as in a clone
git -C "$R" gc -q
NV_TAR_PACKED_S=$("$ARCHIVE_BENCH" "$R" "$COMMIT" | sed -n 's/^tar+sha256 .* \([0-9.]*\) s, .*/\1/p')

# ---- the registry ----------------------------------------------------------
say "starting a registry on port $PORT"
REGISTRY_PORT=$PORT REGISTRY_BASIC_PORT=$((PORT + 1)) \
	REGISTRY_TOKEN_PORT=$((PORT + 2)) REGISTRY_ISSUER_PORT=$((PORT + 3)) \
	bash "$ROOT/tests/stack/registry-start.sh" "$W/stack" >/dev/null ||
	die "cannot start the registry stack"
REG=127.0.0.1:$PORT
LOG=$W/stack/plain.log
# a small base (one layer of 1 KiB), pushed as an OCI layout by skopeo
python3 - "$W/base" <<'EOF'
import gzip, hashlib, io, json, os, sys, tarfile
d = sys.argv[1]
os.makedirs(os.path.join(d, "blobs", "sha256"))
def put(data):
    h = hashlib.sha256(data).hexdigest()
    open(os.path.join(d, "blobs", "sha256", h), "wb").write(data)
    return "sha256:" + h, len(data)
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w") as t:
    info = tarfile.TarInfo("etc/base.txt"); payload = b"base\n" * 200
    info.size = len(payload); t.addfile(info, io.BytesIO(payload))
raw = buf.getvalue()
layer, lsize = put(gzip.compress(raw, mtime=0))
cfg, csize = put(json.dumps({"architecture": "amd64", "os": "linux",
    "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(raw).hexdigest()]},
    "config": {}}).encode())
man, msize = put(json.dumps({"schemaVersion": 2,
    "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cfg, "size": csize},
    "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": layer, "size": lsize}]}).encode())
json.dump({"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
    "digest": man, "size": msize, "annotations": {"org.opencontainers.image.ref.name": "1"}}]},
    open(os.path.join(d, "index.json"), "w"))
open(os.path.join(d, "oci-layout"), "w").write('{"imageLayoutVersion": "1.0.0"}')
EOF
skopeo copy --dest-tls-verify=false "oci:$W/base:1" "docker://$REG/bench/base:1" >/dev/null ||
	die "skopeo could not push the base"

# ---- 2. push --------------------------------------------------------------
say "push"
t0=$(date +%s%N)
"$NAVETTE" image push-code --base "$REG/bench/base:1" --to "$REG/bench/navette" \
	--repo "$R" --json >"$W/push1.json" || die "push-code failed"
t1=$(date +%s%N)
PUSH_S=$(python3 -c "print(round(($t1 - $t0) / 1e9, 3))")
REF=$(python3 -c "import json; print(json.load(open('$W/push1.json'))['tagged'])")
LAYER_BYTES=$(python3 -c "import json; print(json.load(open('$W/push1.json'))['layer_size'])")
skopeo copy --src-tls-verify=false "docker://$REF" "oci:$W/image:t" >/dev/null ||
	die "skopeo could not read the image back"
# to the other registry (basic auth): nothing there to mount from
. "$W/stack/registry.env"
SKOPEO_S=$(timed skopeo copy --dest-tls-verify=false \
	--dest-creds "$REGISTRY_BASIC_USER:$REGISTRY_BASIC_PASSWORD" \
	"oci:$W/image:t" "docker://$REGISTRY_BASIC/bench/skopeo:t")
# skopeo doing navette's work: compressing the same tar (an oci: layout
# whose layer is the uncompressed stream) while it pushes
python3 - "$W/rawimage" "$W/layer.tar" "$W/base" <<'PYEOF'
import hashlib, json, os, shutil, sys
d, tar, base = sys.argv[1:]
blobs = os.path.join(d, "blobs", "sha256")
os.makedirs(blobs)
def put_bytes(data):
    h = hashlib.sha256(data).hexdigest()
    open(os.path.join(blobs, h), "wb").write(data)
    return "sha256:" + h, len(data)
h = hashlib.sha256()
with open(tar, "rb") as f:
    for chunk in iter(lambda: f.read(1 << 20), b""):
        h.update(chunk)
shutil.copy(tar, os.path.join(blobs, h.hexdigest()))
layer, lsize = "sha256:" + h.hexdigest(), os.path.getsize(tar)
cfg, csize = put_bytes(json.dumps({"architecture": "amd64", "os": "linux",
    "rootfs": {"type": "layers", "diff_ids": [layer]}, "config": {}}).encode())
man, msize = put_bytes(json.dumps({"schemaVersion": 2,
    "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cfg, "size": csize},
    "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer, "size": lsize}]}).encode())
json.dump({"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
    "digest": man, "size": msize, "annotations": {"org.opencontainers.image.ref.name": "t"}}]},
    open(os.path.join(d, "index.json"), "w"))
open(os.path.join(d, "oci-layout"), "w").write('{"imageLayoutVersion": "1.0.0"}')
PYEOF
SKOPEO_GZ_S=$(timed skopeo copy --dest-tls-verify=false --dest-compress \
	--dest-compress-format gzip \
	--dest-creds "$REGISTRY_BASIC_USER:$REGISTRY_BASIC_PASSWORD" \
	"oci:$W/rawimage:t" "docker://$REGISTRY_BASIC/bench/skopeo-gz:t")
# and navette's upload alone: the same layer to that registry, packed
# already (a warm cache skips nothing there: the blob is absent, so it is
# packed again; the time is pack + upload)
docker_cfg=$HOME/.docker/config.json
mkdir -p "$HOME/.docker"
python3 -c "import base64,json; print(json.dumps({'auths': {'$REGISTRY_BASIC': {'auth': base64.b64encode(b'$REGISTRY_BASIC_USER:$REGISTRY_BASIC_PASSWORD').decode()}}}))" >"$docker_cfg"
# the scan's clean verdicts of the first push are dropped: this push, the
# one compared with skopeo, reads the whole tree as a first push does
rm -f -- "$NAVETTE_HOME/cache/layers/scan-verdicts"
t0=$(date +%s%N)
"$NAVETTE" image push-code --base "$REG/bench/base:1" --to "$REGISTRY_BASIC/bench/navette" \
	--repo "$R" --json >"$W/push-basic.json" || die "push-code to the basic registry failed"
t1=$(date +%s%N)
PUSH_BASIC_S=$(python3 -c "print(round(($t1 - $t0) / 1e9, 3))")
BASIC_READ=$(python3 -c "import json; print(json.load(open('$W/push-basic.json'))['scan_files_read'])")

# a changed commit (one file more) to that registry: its layer is new, and
# the scan reads only the new file (the others have clean verdicts now)
printf 'changed %s\n' "$(date +%s%N)" >"$R/changed.txt"
git -C "$R" add changed.txt
git -C "$R" commit -qm changed
t0=$(date +%s%N)
"$NAVETTE" image push-code --base "$REG/bench/base:1" --to "$REGISTRY_BASIC/bench/navette" \
	--repo "$R" --json >"$W/push-changed.json" || die "push-code of the changed commit failed"
t1=$(date +%s%N)
PUSH_CHANGED_S=$(python3 -c "print(round(($t1 - $t0) / 1e9, 3))")
CHANGED_SCAN=$(python3 -c "import json; d=json.load(open('$W/push-changed.json')); print('%d read, %d skipped' % (d['scan_files_read'], d['scan_files_cached']))")
git -C "$R" reset -q --hard "$COMMIT"

# ---- 3. a second push --------------------------------------------------------
before=$(grep -Ec '"(POST|PATCH|PUT) /v2/bench/navette/blobs/uploads' "$LOG" || true)
t0=$(date +%s%N)
"$NAVETTE" image push-code --base "$REG/bench/base:1" --to "$REG/bench/navette" \
	--repo "$R" --json >"$W/push2.json" || die "second push-code failed"
t1=$(date +%s%N)
PUSH2_S=$(python3 -c "print(round(($t1 - $t0) / 1e9, 3))")
after=$(grep -Ec '"(POST|PATCH|PUT) /v2/bench/navette/blobs/uploads' "$LOG" || true)
SECOND_BYTES=$(python3 -c "import json; print(json.load(open('$W/push2.json'))['bytes_uploaded'])")
SAME=$(python3 -c "import json; a=json.load(open('$W/push1.json')); b=json.load(open('$W/push2.json')); print('yes' if a['digest']==b['digest'] else 'NO')")

# ---- report ----------------------------------------------------------------
pct=$(python3 -c "print('%.0f' % (100 * $SHA_S / $NV_TAR_S))")
verdict=$(python3 -c "print('ok' if $SHA_S / $NV_TAR_S >= 0.8 else 'MISS')")
cat <<EOF

image_bench: ${MIB} MiB tree, tar stream $TAR_BYTES B, gzip layer $LAYER_BYTES B
  pack+hash (tar + sha256, loose objects)   $NV_TAR_S s   $(mbps "$TAR_BYTES" "$NV_TAR_S") MB/s
  pack+hash (tar + sha256, packed objects)  $NV_TAR_PACKED_S s   $(mbps "$TAR_BYTES" "$NV_TAR_PACKED_S") MB/s
  shasum -a 256 of the same bytes               $SHA_S s   $(mbps "$TAR_BYTES" "$SHA_S") MB/s
    navette at ${pct}% of shasum's speed (target >= 80%): $verdict
  tar + gzip + both sha256                  $NV_GZ_S s   $(mbps "$TAR_BYTES" "$NV_GZ_S") MB/s
  navette image pack (scan + gzip layer)    $PACK_S s
  $ZSTD_LINE
  push: navette image push-code (all)       $PUSH_S s   (scan, pack, gzip, upload; same registry as the base)
  push: navette to the other registry       $PUSH_BASIC_S s   (also copies the base across; the scan read $BASIC_READ files)
  push: a changed commit, that registry     $PUSH_CHANGED_S s   (one file more: a new layer; scan: $CHANGED_SCAN)
  push: skopeo copy of the same image       $SKOPEO_S s   (blobs already compressed, from an oci: layout)
    skopeo time / navette time: $(ratio "$SKOPEO_S" "$PUSH_BASIC_S") (both to the basic-auth registry)
  push: skopeo copy compressing the tar     $SKOPEO_GZ_S s   (the same work as navette but the scan)
    skopeo time / navette time: $(ratio "$SKOPEO_GZ_S" "$PUSH_BASIC_S")
  second push of the unchanged commit       $PUSH2_S s, $SECOND_BYTES blob bytes sent (target 0), $((after - before)) upload requests in the registry log, same digest: $SAME
EOF
