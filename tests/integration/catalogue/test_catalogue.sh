#!/usr/bin/env bash
# The recipe catalogue on the local backend (recipes/*), each recipe run
# from a copy of this repository's catalogue, its real outputs checked:
#   training   the 2x3 sweep of recipes/training/sweep.lua and its fan-in
#              (best.json names the run with the best test accuracy, above
#              0.9; the same seed gives the same accuracy); run again, its
#              7 jobs reused and none submitted, in under 2 s; a corrupt data
#              file fails the runs at `running` with the recipe's hint, and
#              the fan-in is cancelled, naming a run;
#   audio      recipes/audio/episode.lua: three chapters rendered, each
#              measured here within 0.2 LU of -16 LUFS, with a linear gain;
#              then episode.opus and episode.mp3, each measured here (ffmpeg's
#              ebur128) within 1 LU of -16 LUFS, with three chapter marks
#              at the chapters' first samples to the millisecond (ffprobe),
#              the chapters' duration and 2 s, and the bitrate the report
#              gives, as measured here (check_audio in ../lib.sh);
#   video      recipes/video/encode.lua: the demo source in four segments
#              joined without re-encoding: output.mp4 has the source's
#              frames and duration (counted here), an HLS ladder of two
#              renditions and a thumbnail sheet;
#   vision     recipes/vision/faces.lua: five skimage images over two
#              shards, a face found on the astronaut, a contact sheet of
#              five PNG thumbnails; an image that is no image fails its
#              shard at running with the hint;
#   library    a second repository brings the catalogue with navette.use
#              (by tag, module recipes.catalogue) and runs
#              lib.training.sweep with its own parameters, from the
#              library's commit; lib.audio.episode with a script that has
#              no chapter fails its chapter jobs at running with the hint,
#              and lib.video.encode with a source that is no video fails
#              its segments likewise.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

catalogue_python torch sklearn cv2 skimage
for tool in espeak-ng ffmpeg ffprobe sox; do
	command -v "$tool" >/dev/null || { skip "the catalogue's jobs" "no $tool: vendor/bootstrap test installs it"; finish; }
done
C=$(catalogue_repo catalogue)

# ---- training ------------------------------------------------------------------
nv_in "$C" plan recipes/training/sweep.lua
check_rc "training: plan exits 0" 0
check_match "training: plan shows the graph" "$OUT" \
	'^  train\[lr=0\.05,seed=1\] -> train-best  \(metrics\.json as runs/1\)$'
check_match "training: plan uploads the digits set" "$OUT" \
	'storage put: .*datasets/digits\.csv\.gz <- /.*/sklearn/datasets/data/digits\.csv\.gz$'
SECONDS=0
nv_in "$C" run recipes/training/sweep.lua --wait
echo "training on the local backend: ${SECONDS}s"
check_rc "training: run --wait exits 0" 0
BEST=$(printf '%s\n' "$OUT" | sed -n 's/^job train-best submitted: //p')
B=$(store_dir navette "$BEST")
b() { json "$1" <"$B/best.json" 2>&1; }
check_eq "training: best.json lists the six runs" "$(b 'len(d["runs"])')" 6
check_eq "training: ... and names the most accurate" \
	"$(b 'd["best"]["job"] == max(d["runs"], key=lambda r: r["test_accuracy"])["job"]')" true
check_eq "training: its test accuracy is above 0.9" "$(b 'd["best"]["test_accuracy"] > 0.9')" true
ACC=$(b 'd["best"]["test_accuracy"]')
echo "training: best $(b 'd["best"]["job"]') test accuracy $ACC"
FIRST=$(printf '%s\n' "$OUT" | sed -n 's/^job train\[lr=0\.05,seed=1\] submitted: //p')
F=$(store_dir navette "$FIRST")
check_file "training: a run publishes model.pt" "$F/model.pt"
check_eq "training: its metrics list a loss per epoch" \
	"$(json 'len(d["loss"])' <"$F/metrics.json" 2>&1)" 8
check_eq "training: the checkpoint of every epoch was written" \
	"$(json 'len(d["checkpoints"]["written"]) >= 1' <"$F/navette-run.json" 2>&1)" true
check_eq "training: the data came in as an input, by sha256" \
	"$(json 'd["inputs"][0]["sha256"]' <"$F/navette-run.json" 2>&1)" \
	"$(sha256 "$(json 'd["inputs"][0]["url"][7:]' <"$F/navette-run.json")")"
SEED1=$(json 'd["test_accuracy"]' <"$F/metrics.json" 2>&1)
# the same sweep again, nothing changed: its 7 jobs reused, none submitted
# (lua/navette/reuse), in under 2 s on the local backend
AGAIN_START=$(perl -MTime::HiRes=time -e 'printf "%.3f", time')
nv_in "$C" run recipes/training/sweep.lua
AGAIN_S=$(perl -MTime::HiRes=time -e 'printf "%.2f", time - $ARGV[0]' "$AGAIN_START")
echo "training again, nothing changed, on the local backend: ${AGAIN_S}s," 	"$(printf '%s\n' "$OUT" | grep -c '^job .* submitted: ') submitted," 	"$(printf '%s\n' "$OUT" | grep -c '^reused  ') reused"
check_rc "training again: exit 0" 0
check_eq "training again: nothing is submitted" \
	"$(printf '%s\n' "$OUT" | grep -c '^job .* submitted: ')" 0
check_eq "training again: the 7 jobs are reused" \
	"$(printf '%s\n' "$OUT" | grep -c '^reused  ')" 7
check_match "training again: the fan-in from the first run's" "$OUT" \
	"^reused  train-best  from $BEST\$"
check_eq "training again: in under 2 s" \
	"$(perl -e 'print $ARGV[0] < 2 ? "yes" : "no: $ARGV[0] s"' "$AGAIN_S")" yes

# ---- audio ---------------------------------------------------------------------
SECONDS=0
nv_in "$C" run recipes/audio/episode.lua --wait
echo "audio on the local backend: ${SECONDS}s"
check_rc "audio: run --wait exits 0" 0
EP=$(store_dir navette "$(printf '%s\n' "$OUT" | sed -n 's/^job chapter-episode submitted: //p')")
CHAPTERS=()
for n in 1 2 3; do
	CHAPTERS+=("$(store_dir navette "$(printf '%s\n' "$OUT" | sed -n "s/^job chapter\\[chapter=$n\\] submitted: //p")")")
done
check_audio "$EP" "${CHAPTERS[@]}"

# ---- video ---------------------------------------------------------------------
SECONDS=0
nv_in "$C" run recipes/video/encode.lua --wait
echo "video on the local backend: ${SECONDS}s"
check_rc "video: run --wait exits 0" 0
check_video "$(store_dir navette "$(printf '%s\n' "$OUT" | sed -n 's/^job encode-join submitted: //p')")" \
	"$(store_dir navette "$(printf '%s\n' "$OUT" | sed -n 's/^job encode-source submitted: //p')")/source.mp4"

# ---- vision --------------------------------------------------------------------
SECONDS=0
nv_in "$C" run recipes/vision/faces.lua --wait
echo "vision on the local backend: ${SECONDS}s"
check_rc "vision: run --wait exits 0" 0
check_vision "$(store_dir navette "$(printf '%s\n' "$OUT" | sed -n 's/^job faces-merge submitted: //p')")"
put_file "$C" recipes/vision/broken.lua <<'EOF2'
local navette = require "navette"
local vision = require "lib"
vision.pipeline { name = "broken", shards = 1, code = "HEAD",
  images = { { name = "noise", object = navette.storage.put_string(
    "inputs/noise.png", "PNG? no: just text\n") } } }
EOF2
commit_all "$C" >/dev/null
nv_in "$C" run recipes/vision/broken.lua --wait
check_rc "vision, not an image: run --wait exits 1" 1
NOISE=$(printf '%s\n' "$OUT" | sed -n 's/^job broken\[shard=1\] submitted: //p')
check_failed "vision, not an image" "$NOISE" failed running "an image OpenCV cannot read" \
	'^vision: FAILED: image-1 \(noise\) is not an image OpenCV reads'

# ---- the catalogue as a library of another repository -----------------------
U=$(new_repo user)
cat >"$U/navette.lua" <<EOF2
return {
  name = "user",
  datasets = { gone = "/nowhere/gone.csv", digits = { "/nowhere/digits.csv.gz",
    "$(python3 -c 'import sklearn, os; print(os.path.dirname(sklearn.__file__))')/datasets/data/digits.csv.gz" } },
}
EOF2
put_file "$U" train.lua <<EOF2
local navette = require "navette"
local lib = navette.use { git = "file://$C", ref = "catalogue-v1",
                          module = "recipes.catalogue" }
lib.training.sweep { name = "mine", lr = { 0.05 }, seed = { 1, 7 } }
EOF2
put_file "$U" nochapters.lua <<EOF2
local navette = require "navette"
local lib = navette.use { git = "file://$C", ref = "catalogue-v1",
                          module = "recipes.catalogue" }
lib.audio.episode { name = "talk", chapters = 2,
  script = navette.storage.put_string("inputs/talk.txt", "Just a paragraph, with no chapter heading at all.\n") }
EOF2
put_file "$U" novideo.lua <<EOF2
local navette = require "navette"
local lib = navette.use { git = "file://$C", ref = "catalogue-v1",
                          module = "recipes.catalogue" }
lib.video.encode { name = "clip", parts = 2,
  source = navette.storage.put_string("inputs/clip.mp4", "this is not a video\n") }
EOF2
put_file "$U" nodata.lua <<'EOF2'
local navette = require "navette"
navette.storage.put("datasets/x", { dataset = "digitz" })
EOF2
put_file "$U" nofile.lua <<'EOF2'
local navette = require "navette"
navette.storage.put("datasets/x", { dataset = "gone" })
EOF2
commit_all "$U" >/dev/null
nv_in "$U" lock train.lua nochapters.lua novideo.lua
check_rc "library: navette lock exits 0" 0
commit_all "$U" >/dev/null
nv_in "$U" plan nodata.lua
check_rc "a dataset the project file does not declare: exit 2" 2
check_contains "... named, with the closest one" "$ERR" "dataset 'digitz' is not declared in the project file (did you mean 'digits'?)"
nv_in "$U" plan nofile.lua
check_rc "a dataset none of whose paths exists here: exit 3" 3
check_contains "... named, with its paths" "$ERR" "dataset 'gone': none of its paths is a file navette uploads on this machine (/nowhere/gone.csv)"
nv_in "$U" run train.lua --wait
check_rc "library: run --wait exits 0" 0
LB=$(printf '%s\n' "$OUT" | sed -n 's/^job mine-best submitted: //p')
LD=$(store_dir user "$LB")
check_eq "library: its own parameters (two runs of lr 0.05)" \
	"$(json '[(r["job"], r["lr"]) for r in d["runs"]]' <"$LD/best.json" 2>&1)" \
	'[["mine[lr=0.05,seed=1]", 0.05], ["mine[lr=0.05,seed=7]", 0.05]]'
check_eq "library: the jobs ran the library's commit" \
	"$(json 'd["commit"]' <"$LD/navette-run.json" 2>&1)" "$(git -C "$C" rev-parse catalogue-v1)"
check_eq "library: ... and the record lists the library" \
	"$(json 'd["libraries"][0]["ref"]' <"$LD/navette-run.json" 2>&1)" catalogue-v1
check_eq "library: the same commit, data and seed: the same accuracy" \
	"$(json '[r["test_accuracy"] for r in d["runs"] if r["seed"] == 1][0]' <"$LD/best.json" 2>&1)" \
	"$SEED1"

nv_in "$U" run nochapters.lua --wait
check_rc "audio, no chapter: run --wait exits 1" 1
TALK=$(printf '%s\n' "$OUT" | sed -n 's/^job talk\[chapter=1\] submitted: //p')
check_failed "audio, no chapter" "$TALK" failed running "'# Title' chapter lines" \
	'^audio: FAILED: .* text before the first chapter heading'

nv_in "$U" run novideo.lua --wait
check_rc "video, not a video: run --wait exits 1" 1
CLIP=$(printf '%s\n' "$OUT" | sed -n 's/^job clip\[part=1\] submitted: //p')
check_failed "video, not a video" "$CLIP" failed running "not a video ffprobe reads" \
	'^video: FAILED: source\.mp4 is not a video ffprobe reads'

# ---- a corrupt data file fails at running, with the recipe's hint ------------
head -c 3000 "$(python3 -c 'import sklearn, os; print(os.path.dirname(sklearn.__file__))')/datasets/data/digits.csv.gz" >"$T/corrupt.csv.gz"
cat >"$U/navette.lua" <<EOF2
return { name = "user", datasets = { digits = "$T/corrupt.csv.gz" } }
EOF2
commit_all "$U" >/dev/null
nv_in "$U" run train.lua --wait
check_rc "corrupt data: run --wait exits 1" 1
RUN1=$(printf '%s\n' "$OUT" | sed -n 's/^job mine\[lr=0\.05,seed=1\] submitted: //p')
BEST2=$(printf '%s\n' "$OUT" | sed -n 's/^job mine-best submitted: //p')
check_failed "corrupt data" "$RUN1" failed running "not scikit-learn's digits.csv.gz" \
	'^train: FAILED: .* is not a gzip-compressed CSV file'
check_failed "corrupt data, the fan-in" "$BEST2" cancelled accepted ""
check_contains "corrupt data: the fan-in names a run it needed" \
	"$("$NAVETTE" status "$BEST2" --json | json 'd["failure"]["reason"]')" "mine[lr=0.05,seed="
finish
