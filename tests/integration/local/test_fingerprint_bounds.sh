#!/usr/bin/env bash
# The node's fingerprint (host/jobs/launcher_fingerprint.sh, compiled into
# every launcher) is bounded in time: a nvidia-smi that hangs, or an
# image's interpreter that never answers, is killed at its limit
# (NV_FP_LIMIT seconds, NV_FP_IMAGE_LIMIT for the image's) and left behind, and the fingerprint is written without it (gpus [],
# interpreter version null, nothing cached for the image). With a limit
# of 2 s and both hanging, it ends about 2 + 2 s after the same
# fingerprint without them (measured here), under sh and bash. The probes
# need no GNU timeout: PATH holds only a folder of the tools the
# fingerprint uses, without one.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"

FP=$NAVETTE_SOURCE/host/jobs/launcher_fingerprint.sh
[ -r "$FP" ] || { echo "FAIL: no $FP" >&2; exit 1; }
LIMIT=2
# the tools a fingerprint uses, and nothing else (no timeout)
TOOLS=$T/tools
mkdir -p "$TOOLS" "$T/hung" "$T/jobs/job"
for tool in sh bash uname sed head tr cut cat rm mktemp sleep getconf \
	dirname basename mv printf; do
	p=$(command -v "$tool") || continue
	case $p in /*) ln -s "$p" "$TOOLS/$tool" ;; esac
done
check_false "the probes' PATH has no timeout" test -e "$TOOLS/timeout"
# a nvidia-smi that never answers
cat >"$T/hung/nvidia-smi" <<'EOF'
#!/bin/sh
exec sleep 30
EOF
chmod +x "$T/hung/nvidia-smi"

# fingerprint SHELL PATH IMAGE: runs navette_fingerprint under SHELL; the
# seconds it took in SECONDS_TAKEN
fingerprint() {
	local start end
	rm -f "$T/jobs/job/fingerprint.json"
	start=$(python3 -c 'import time; print(time.time())')
	env -i PATH="$2" NAVETTE_JOB_DIR="$T/jobs/job" NV_FP_LIMIT=$LIMIT \
		NV_FP_IMAGE_LIMIT=$LIMIT NAVETTE_INTERPRETER=python3 NAVETTE_RUNTIME=podman \
		NAVETTE_IMAGE="$3" TMPDIR="$T" \
		"$1" -c '. "$1"
# the image'"'"'s interpreter never answers either
navette_in_image() { exec sleep 30; }
navette_fingerprint' sh "$FP" </dev/null >/dev/null 2>&1 || true
	end=$(python3 -c 'import time; print(time.time())')
	SECONDS_TAKEN=$(python3 -c "print(round($end - $start, 2))")
}
IMAGE=registry.example/x@sha256:$(printf '%064d' 7)
for shell in sh bash; do
	SH=$(command -v "$shell") || { skip "$shell" "not installed"; continue; }
	# (the baseline: no nvidia-smi, no image to ask)
	fingerprint "$SH" "$TOOLS" ""
	BASE=$SECONDS_TAKEN
	fingerprint "$SH" "$T/hung:$TOOLS" "$IMAGE"
	HUNG=$SECONDS_TAKEN
	echo "$shell: fingerprint $BASE s, with nvidia-smi and the interpreter hung $HUNG s (limit $LIMIT s each)"
	# (3 s of slack for a loaded machine, against 30 s each unbounded)
	check_true "$shell: a hung nvidia-smi and interpreter cost about 2 x $LIMIT s more ($BASE -> $HUNG s)" \
		python3 -c "import sys; sys.exit(0 if $HUNG - $BASE <= 2 * $LIMIT + 3 else 1)"
	check_true "$shell: ... and each was waited for, up to its limit ($HUNG s)" \
		python3 -c "import sys; sys.exit(0 if $HUNG >= 2 * $LIMIT - 0.5 else 1)"
	F=$T/jobs/job/fingerprint.json
	check_file "$shell: the fingerprint is written" "$F"
	check_eq "$shell: no GPU from the hung nvidia-smi, no CUDA" \
		"$(json '[d["gpus"], d["cuda"]]' <"$F")" '[[], null]'
	check_eq "$shell: the interpreter's version is unknown" \
		"$(json 'd["interpreter"]' <"$F")" '{"name": "python3", "version": null}'
	check_eq "$shell: nothing is kept for the image" \
		"$(find "$T/jobs" -name '.navette-interpreter-*' | wc -l | tr -d ' ')" 0
	check_eq "$shell: no temporary file is left" \
		"$(find "$T" -maxdepth 1 -name 'navette-fp.*' | wc -l | tr -d ' ')" 0
	# an interpreter that answers: its version is kept per image digest
	# and interpreter, under a name of the interpreter's safe characters
	rm -f "$T/jobs/.navette-interpreter-"*
	env -i PATH="$TOOLS" NAVETTE_JOB_DIR="$T/jobs/job" NV_FP_LIMIT=$LIMIT \
		NAVETTE_INTERPRETER=/opt/py/python3.11 NAVETTE_RUNTIME=podman \
		NAVETTE_IMAGE="$IMAGE" TMPDIR="$T" \
		"$SH" -c '. "$1"
navette_in_image() { echo "Python 3.11.2"; }
navette_fingerprint' sh "$FP" </dev/null >/dev/null 2>&1 || true
	check_eq "$shell: the answer is kept for the image and that interpreter" \
		"$(cat "$T/jobs/.navette-interpreter-$(printf '%064d' 7)-python3.11" 2>/dev/null)" \
		"Python 3.11.2"
	rm -f "$T/jobs/.navette-interpreter-"*
	# the image's answer has its own, longer limit (a container start on
	# a busy node): one that takes 2 s is waited for past a 1 s probe
	# limit, and kept
	env -i PATH="$TOOLS" NAVETTE_JOB_DIR="$T/jobs/job" NV_FP_LIMIT=1 \
		NV_FP_IMAGE_LIMIT=6 NAVETTE_INTERPRETER=python3 \
		NAVETTE_RUNTIME=podman NAVETTE_IMAGE="$IMAGE" TMPDIR="$T" \
		"$SH" -c '. "$1"
navette_in_image() { sleep 2; echo "Python 3.11.2"; }
navette_fingerprint' sh "$FP" </dev/null >/dev/null 2>&1 || true
	check_eq "$shell: a slow container start is waited for, up to the image's own limit" \
		"$(json 'd["interpreter"]["version"]' <"$T/jobs/job/fingerprint.json")" "Python 3.11.2"
	rm -f "$T/jobs/.navette-interpreter-"*
done
finish
