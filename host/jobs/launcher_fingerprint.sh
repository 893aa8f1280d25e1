# The node's fingerprint (compiled into every launcher, local and node):
# what the machine that ran the job was, written as one JSON object to
# $NAVETTE_JOB_DIR/fingerprint.json, which the run record carries as
# "node". Only sh and the tools each system has; a probe that is missing
# or fails leaves its field null, and no probe runs longer than
# NV_FP_LIMIT seconds (NV_FP_IMAGE_LIMIT for the question asked in the
# job's image): a probe writes into a file, never a pipe, and is
# killed at the limit and left behind, not waited for (a broken GPU
# driver can make nvidia-smi hang, even through a SIGKILL). Only sh's
# own kill and wait, and sleep: no GNU timeout.
#   host (the node as its scheduler names it: launch.node, else uname -n),
#   os, kernel, arch, cpu {model, cores}
#   runtime {name, version}      the container runtime (jobs in images)
#   gpus [{name, driver}], cuda  from nvidia-smi, when the node has it
#   interpreter {name, version}  when the command starts with one
#                                (NAVETTE_INTERPRETER: python3, node...),
#                                asked in the image for a job in one

NV_FP_LIMIT=${NV_FP_LIMIT:-10}
# Asking the job's image starts a container: on a busy node that alone
# takes longer than a probe is given, so it has a limit of its own (the
# answer is kept per image, so this is paid once per image and node).
NV_FP_IMAGE_LIMIT=${NV_FP_IMAGE_LIMIT:-60}

# nv_fp_str TEXT: TEXT as a JSON string, or null when empty (control
# characters dropped, at most 200 bytes).
nv_fp_str() {
	if [ -z "$1" ]; then
		printf 'null'
		return
	fi
	printf '"%s"' "$(printf '%s' "$1" | LC_ALL=C tr -d '\000-\037\177' |
		cut -c1-200 | sed 's/\\/\\\\/g; s/"/\\"/g')"
}

# nv_fp_bounded OUT STREAMS CMD...: CMD's output into the file OUT (its
# errors too when STREAMS is "both"), CMD killed (and not waited for)
# after NV_FP_LIMIT seconds: its status, or 124 when it timed out.
nv_fp_bounded() {
	nv_fp_out_file=$1
	if [ "$2" = both ]; then
		shift 2
		"$@" >"$nv_fp_out_file" 2>&1 </dev/null &
	else
		shift 2
		"$@" >"$nv_fp_out_file" 2>/dev/null </dev/null &
	fi
	nv_fp_pid=$!
	# the clock: a sleep of the limit (killed, not left behind, when the
	# probe ends first); the probe is looked at in short steps meanwhile
	sleep "$NV_FP_LIMIT" >/dev/null 2>&1 </dev/null &
	nv_fp_clock=$!
	nv_fp_step=0.02
	while kill -0 "$nv_fp_pid" 2>/dev/null; do
		if ! kill -0 "$nv_fp_clock" 2>/dev/null; then
			kill -KILL "$nv_fp_pid" 2>/dev/null
			return 124
		fi
		sleep "$nv_fp_step" 2>/dev/null || sleep 1 # (whole seconds only)
		nv_fp_step=0.1
	done
	kill "$nv_fp_clock" 2>/dev/null
	wait "$nv_fp_pid"
}

# nv_fp_capture STREAMS CMD...: what CMD prints on stdout (STREAMS
# "out") or on either stream ("both"), bounded in time; fails as
# nv_fp_bounded does.
nv_fp_capture() {
	nv_fp_tmp=$(mktemp "${TMPDIR:-/tmp}/navette-fp.XXXXXX") || return 1
	nv_fp_rc=0
	nv_fp_bounded "$nv_fp_tmp" "$@" || nv_fp_rc=$?
	cat "$nv_fp_tmp" 2>/dev/null
	rm -f "$nv_fp_tmp"
	return "$nv_fp_rc"
}

# nv_fp_all CMD...: CMD's output (its errors dropped), bounded in time;
# fails when CMD is missing or timed out.
nv_fp_all() {
	command -v "$1" >/dev/null 2>&1 || return 1
	nv_fp_rc=0
	nv_fp_text=$(nv_fp_capture out "$@") || nv_fp_rc=$?
	printf '%s\n' "$nv_fp_text"
	[ "$nv_fp_rc" -ne 124 ]
}

# nv_fp_run CMD...: the first line CMD prints, on either stream.
nv_fp_run() {
	command -v "$1" >/dev/null 2>&1 || return 1
	nv_fp_capture both "$@" | head -n 1
}

# nv_fp_in_image: the interpreter's version as the job's image has it.
# Asking starts a container, so the answer is kept beside the job folders,
# per image digest and interpreter (an image never changes under its
# digest): a node asks once per image, not once per job.
nv_fp_in_image() {
	nv_fp_cache=
	case $NAVETTE_IMAGE in
	*@sha256:*)
		nv_fp_cache="$(dirname "$NAVETTE_JOB_DIR")/.navette-interpreter-\
${NAVETTE_IMAGE##*@sha256:}-$(basename "$NAVETTE_INTERPRETER" |
			LC_ALL=C tr -c 'A-Za-z0-9._\n-' '_')"
		if [ -s "$nv_fp_cache" ]; then
			head -n 1 "$nv_fp_cache"
			return
		fi
		;;
	esac
	nv_fp_ok=
	nv_fp_out=$(NV_FP_LIMIT=$NV_FP_IMAGE_LIMIT &&
		nv_fp_capture both navette_in_image "$NAVETTE_INTERPRETER" \
			--version) && nv_fp_ok=1
	nv_fp_v=$(printf '%s\n' "$nv_fp_out" | head -n 1)
	printf '%s\n' "$nv_fp_v"
	# an answer the image gave, never a failure to ask
	if [ -n "$nv_fp_cache" ] && [ -n "$nv_fp_ok" ] && [ -n "$nv_fp_v" ] &&
		printf '%s\n' "$nv_fp_v" >"$nv_fp_cache.$$" 2>/dev/null; then
		mv -f "$nv_fp_cache.$$" "$nv_fp_cache" 2>/dev/null
	fi
}

navette_fingerprint() {
	nv_fp_os= nv_fp_cpu= nv_fp_cores= nv_fp_rt= nv_fp_gpus= nv_fp_cuda=
	nv_fp_interp=null
	case $(uname -s) in
	Darwin)
		nv_fp_os="macOS $(nv_fp_run sw_vers -productVersion)"
		nv_fp_cpu=$(nv_fp_run sysctl -n machdep.cpu.brand_string)
		nv_fp_cores=$(nv_fp_run sysctl -n hw.ncpu)
		;;
	*)
		if [ -r /etc/os-release ]; then
			nv_fp_os=$(sed -n 's/^PRETTY_NAME=//p' /etc/os-release |
				head -n 1 | tr -d '"')
		fi
		nv_fp_cpu=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' \
			/proc/cpuinfo 2>/dev/null | head -n 1)
		nv_fp_cores=$(nv_fp_run getconf _NPROCESSORS_ONLN)
		;;
	esac
	case $nv_fp_cores in '' | *[!0-9]*) nv_fp_cores=null ;; esac
	if [ -n "${NAVETTE_RUNTIME:-}" ]; then
		nv_fp_rt="{\"name\":$(nv_fp_str "$NAVETTE_RUNTIME"),\"version\":\
$(nv_fp_str "$(nv_fp_run "$NAVETTE_RUNTIME" --version)")}"
	fi
	# (a nvidia-smi that hung once is not asked again)
	if nv_fp_smi=$(nv_fp_all nvidia-smi); then
		nv_fp_cuda=$(printf '%s\n' "$nv_fp_smi" |
			sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -n 1)
		nv_fp_gpus=$(nv_fp_all nvidia-smi --query-gpu=name,driver_version \
			--format=csv,noheader | head -n 16 |
			while IFS=, read -r nv_n nv_d; do
				printf '{"name":%s,"driver":%s},' \
					"$(nv_fp_str "$nv_n")" \
					"$(nv_fp_str "$(printf '%s' "$nv_d" | tr -d ' ')")"
			done)
	fi
	if [ -n "${NAVETTE_INTERPRETER:-}" ]; then
		if [ -n "${NAVETTE_RUNTIME:-}" ] && [ -n "${NAVETTE_IMAGE:-}" ]; then
			nv_fp_v=$(nv_fp_in_image)
		else
			nv_fp_v=$(nv_fp_run "$NAVETTE_INTERPRETER" --version)
		fi
		nv_fp_interp="{\"name\":$(nv_fp_str "$NAVETTE_INTERPRETER"),\
\"version\":$(nv_fp_str "$nv_fp_v")}"
	fi
	printf '{"host":%s,"os":%s,"kernel":%s,"arch":%s,"cpu":{"model":%s,"cores":%s},"runtime":%s,"gpus":[%s],"cuda":%s,"interpreter":%s}\n' \
		"$(nv_fp_str "${nv_launch_node:-$(uname -n)}")" "$(nv_fp_str "$nv_fp_os")" \
		"$(nv_fp_str "$(uname -sr)")" "$(nv_fp_str "$(uname -m)")" \
		"$(nv_fp_str "$nv_fp_cpu")" "$nv_fp_cores" "${nv_fp_rt:-null}" \
		"${nv_fp_gpus%,}" "$(nv_fp_str "$nv_fp_cuda")" "$nv_fp_interp" \
		>"$NAVETTE_JOB_DIR/fingerprint.json" 2>/dev/null
}
