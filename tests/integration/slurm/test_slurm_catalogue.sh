#!/usr/bin/env bash
# The recipe catalogue on the two-node Slurm cluster (fixtures "slurm" and
# "s3"), unchanged from the local backend: each recipe run from a copy of
# this repository's catalogue under a Slurm profile, its real outputs
# checked.
#   training   the 2x3 sweep of recipes/training/sweep.lua and its fan-in
#              on the nodes (best.json above 0.9), the data uploaded to S3
#              and read by sha256; a run's accuracy is the one train.py
#              gives on this machine for the same data and seed; run again
#              from the same clone, then from another clone and another
#              NAVETTE_HOME on the same store: its 7 jobs reused, none
#              submitted;
#   audio      recipes/audio/episode.lua on the nodes: episode.opus and
#              episode.mp3 within 1 LU of -16 LUFS (measured here), three
#              chapter marks each at the chapters' first samples to the
#              millisecond, the bitrates the report gives (check_audio);
#   video      recipes/video/encode.lua on the nodes: output.mp4 with the
#              source's frames and duration, the HLS ladder, the sheet;
#   vision     recipes/vision/faces.lua on the nodes: the five images'
#              report, a face on the astronaut, the contact sheet.
# Needs SLURM_STACK_ENV and S3_STACK_ENV (set by ctest).
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

catalogue_python torch sklearn cv2 skimage
for tool in ffmpeg ffprobe; do
	command -v "$tool" >/dev/null || { skip "the catalogue's jobs" "no $tool: vendor/bootstrap test installs it"; finish; }
done
use_slurm_stack catalogue
nv storage mb "s3://$BUCKET" "${EP[@]}"
check_rc "the bucket is created" 0

C=$(catalogue_repo catalogue)
# the catalogue's project file, with a Slurm profile as the default
DIGITS=$(python3 -c 'import sklearn, os; print(os.path.dirname(sklearn.__file__))')/datasets/data/digits.csv.gz
cat >"$C/navette.lua" <<EOF2
return {
  name = "catalogue",
  default_profile = "hpc",
  datasets = { digits = "$DIGITS",
$(sed -n '/^    \["skimage-/p; /^    haarcascade_frontalface_default =/,/\.xml",$/p' "$NAVETTE_SOURCE/navette.lua") },
  credentials = {
    jwtkey = { kind = "hs256", source = "file", path = "$SLURM_JWT_KEY" },
  },
  profiles = {
    hpc = {
      backend = "slurm", storage = "s3://$BUCKET/", require_pushed = false,
      s3 = { endpoint = "$S3_ENDPOINT", region = "$S3_REGION" },
      slurm = { endpoint = "$SLURMRESTD_URL", user = "$SLURM_USER",
                credential = "jwtkey", partition = "$SLURM_PARTITION",
                working_directory = "$WD" },
      max_token_lifespan = "1h",
    },
  },
}
EOF2
commit_all "$C" >/dev/null

# ---- training ------------------------------------------------------------------
SECONDS=0
nv_in "$C" run recipes/training/sweep.lua --wait
check_rc "training: run --wait exits 0 on Slurm" 0
echo "training on Slurm: ${SECONDS}s"
BEST=$(sub_id 'train-best')
REC=$(s3cat "catalogue/$BEST/navette-run.json")
check_eq "training: the fan-in ran on a node" \
	"$(printf '%s' "$REC" | json 'd["state"]')" succeeded
B=$(s3cat "catalogue/$BEST/best.json")
check_eq "training: best.json lists the six runs" "$(printf '%s' "$B" | json 'len(d["runs"])')" 6
check_eq "training: its best test accuracy is above 0.9" \
	"$(printf '%s' "$B" | json 'd["best"]["test_accuracy"] > 0.9')" true
echo "training: best $(printf '%s' "$B" | json 'd["best"]["job"]') test accuracy $(printf '%s' "$B" | json 'd["best"]["test_accuracy"]')"
FIRST=$(sub_id 'train\[lr=0\.05,seed=1\]')
FREC=$(s3cat "catalogue/$FIRST/navette-run.json")
check_eq "training: the data came from S3, checked by sha256" \
	"$(printf '%s' "$FREC" | json '[d["inputs"][0]["url"].startswith("s3://"), d["inputs"][0]["sha256"]]')" \
	"[true, \"$(sha256 "$DIGITS")\"]"
check_match "training: it ran on a node of the cluster" \
	"$(printf '%s' "$FREC" | json 'd["attempts"][-1]["node"]')" '^gpu-[ab]$'
# the same data and seed on this machine, outside navette
mkdir -p "$T/in" "$T/out"
cp "$DIGITS" "$T/in/digits.csv.gz"
NAVETTE_INPUTS=$T/in NAVETTE_OUTPUTS=$T/out NAVETTE_PARAM_LR=0.05 \
	NAVETTE_PARAM_SEED=1 python3 "$C/recipes/training/train.py" >/dev/null
check_eq "training: the same commit, data and seed: the same accuracy" \
	"$(s3cat "catalogue/$FIRST/metrics.json" | json 'd["test_accuracy"]')" \
	"$(json 'd["test_accuracy"]' <"$T/out/metrics.json")"

# the same sweep again: its 7 jobs reused, none submitted (the index and
# the outputs in S3); then from a second clone and a second NAVETTE_HOME
# on the same s3:// store: reused too
again() {
	local start secs
	start=$(perl -MTime::HiRes=time -e 'printf "%.3f", time')
	nv_in "$1" run recipes/training/sweep.lua
	secs=$(perl -MTime::HiRes=time -e 'printf "%.2f", time - $ARGV[0]' "$start")
	echo "training again on Slurm ($2): ${secs}s," \
		"$(printf '%s\n' "$OUT" | grep -c '^job .* submitted: ') submitted," \
		"$(printf '%s\n' "$OUT" | grep -c '^reused  ') reused"
	check_rc "training again ($2): exit 0" 0
	check_eq "training again ($2): nothing is submitted" \
		"$(printf '%s\n' "$OUT" | grep -c '^job .* submitted: ')" 0
	check_eq "training again ($2): the 7 jobs are reused" \
		"$(printf '%s\n' "$OUT" | grep -c '^reused  ')" 7
	check_match "training again ($2): the fan-in from the first run's" "$OUT" \
		"^reused  train-best  from $BEST\$"
}
again "$C" "the same clone"
C2=$T/catalogue-clone
git clone -q "$C" "$C2"
HOME1=$NAVETTE_HOME
export NAVETTE_HOME=$T/home-two
mkdir -p "$NAVETTE_HOME"
"$NAVETTE" trust "$C2" >/dev/null
again "$C2" "another clone and NAVETTE_HOME"
export NAVETTE_HOME=$HOME1

# ---- audio ---------------------------------------------------------------------
SECONDS=0
nv_in "$C" run recipes/audio/episode.lua --wait
check_rc "audio: run --wait exits 0 on Slurm" 0
echo "audio on Slurm: ${SECONDS}s"
EPI=$(sub_id 'chapter-episode')
s3get "catalogue/$EPI" "$T/episode" episode.opus episode.mp3 report.json
check_audio "$T/episode"

# ---- video ---------------------------------------------------------------------
SECONDS=0
nv_in "$C" run recipes/video/encode.lua --wait
check_rc "video: run --wait exits 0 on Slurm" 0
echo "video on Slurm: ${SECONDS}s"
JOIN=$(sub_id 'encode-join')
SRC=$(sub_id 'encode-source')
s3get "catalogue/$JOIN" "$T/video" output.mp4 report.json thumbnails.png hls/master.m3u8
s3get "catalogue/$SRC" "$T/video" source.mp4
check_video "$T/video" "$T/video/source.mp4"
check_eq "video: its segments ran on both nodes" \
	"$(for p in 1 2 3 4; do s3cat "catalogue/$(sub_id "encode\[part=$p\]")/segment.json" | json 'd["node"]'; done | sort -u | wc -l | tr -d ' ')" 2

# ---- vision --------------------------------------------------------------------
SECONDS=0
nv_in "$C" run recipes/vision/faces.lua --wait
check_rc "vision: run --wait exits 0 on Slurm" 0
echo "vision on Slurm: ${SECONDS}s"
MERGE=$(sub_id 'faces-merge')
s3get "catalogue/$MERGE" "$T/vision" report.json contact-sheet.html
check_vision "$T/vision"

finish
