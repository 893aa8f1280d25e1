# ---- the fixed part of a node launcher (host/jobs/launcher_node.sh) ----
# The job's values and transfer functions are defined above by navette. This
# part runs on the node with only sh, curl, tar/gzip and a sha256 tool: it
# downloads the code and the inputs through presigned GET URLs (read-only by
# construction), checks their sizes and sha256, runs the command with its
# log captured (and shipped in chunks while it runs), checks the success
# condition, and publishes the outputs, the log, a status object and the run
# record under the job's own prefix through a POST policy that allows no
# other key. It never holds a storage key. (In the source file, a word
# between two '@' stands for a name of the job record, host/jobs/record.h:
# a phase, a state, an object; it is filled in when navette generates the
# launcher.)
#
# What depends on the scheduler comes from spec.launch, which the
# backend's prepare sets (lua/navette/backends/init.lua), written above
# by navette (host/jobs/launcher_launch.c) as:
#   nv_launch_scheduler        its name in messages ("Slurm")
#   nv_launch_restarts         the job's restarts so far, from 0 (the value
#                              of launch.attempt, e.g. SLURM_RESTART_COUNT)
#   nv_launch_node             the node's name (launch.node), else hostname
#   nv_launch_job              the job's reference (launch.job, e.g.
#                              SLURM_JOB_ID), the last word of the commands
#   nv_launch_requeue          asks the scheduler to run the job again
#   nv_launch_time_left        prints the seconds the job has left
#   nv_launch_timed_out        succeeds when the scheduler stopped the job
#                              at its time limit
#   nv_launch_requeue_needs    what a requeue needs, for a failed one's hint
# A command's nv_launch_*_program is its program, empty when the spec
# gives none. An array's task index (launch.array_index) is read by the
# case above; a launcher that its container started (launch.in_container)
# pulls and starts no image. Without spec.launch the job is one plain
# run: attempt 1, no requeue, the time limit counted from the start.

# A backend may give the job a folder (the local agent does); otherwise the
# launcher makes its own and removes it at the end (everything that counts
# is published by then), unless NAVETTE_KEEP_WORKSPACE is set.
nv_own_dir=
if [ -z "${NAVETTE_JOB_DIR:-}" ]; then
	nv_own_dir=1
	NAVETTE_JOB_DIR="${TMPDIR:-/tmp}/navette-$NAVETTE_JOB_ID"
	# (what an earlier attempt of a requeued job left on this node)
	if [ -d "$NAVETTE_JOB_DIR" ]; then
		chmod -R u+w "$NAVETTE_JOB_DIR" 2>/dev/null
		rm -rf "$NAVETTE_JOB_DIR"
	fi
fi
NAVETTE_WORKSPACE="$NAVETTE_JOB_DIR/workspace"
NAVETTE_INPUTS="$NAVETTE_JOB_DIR/inputs"
NAVETTE_OUTPUTS="$NAVETTE_JOB_DIR/outputs"
NAVETTE_LOG="$NAVETTE_JOB_DIR/log"
NAVETTE_STATUS="$NAVETTE_JOB_DIR/status"
export NAVETTE_JOB_ID NAVETTE_COMMIT NAVETTE_PROJECT NAVETTE_WORKSPACE \
	NAVETTE_INPUTS NAVETTE_OUTPUTS
nv_work="$NAVETTE_JOB_DIR/.navette"
mkdir -p "$NAVETTE_JOB_DIR" "$nv_work" || exit 125
: >>"$NAVETTE_STATUS"

nv_state=@STATE_SUCCEEDED@
nv_fphase=
nv_freason=
nv_fhint=
nv_exit=null
nv_phases=
nv_inputs=
nv_outputs=
nv_stopped=
nv_shipper=
nv_cmd=
nv_source=
nv_kind=
nv_requeued=
nv_alarm=

# ---- small tools --------------------------------------------------------

nv_now() {
	nv_t=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ 2>/dev/null)
	case $nv_t in
	*N* | "") date -u +%Y-%m-%dT%H:%M:%SZ ;;
	*) printf '%s\n' "$nv_t" ;;
	esac
}

# A JSON string of $1: backslashes and quotes escaped, control bytes dropped.
nv_json() {
	printf '"%s"' "$(printf '%s' "$1" | tr -d '\000-\037' |
		sed 's/\\/\\\\/g; s/"/\\"/g')"
}

# A name as a message shows it: bytes that are not printable ASCII as '?',
# so that a reason stays text and the run record valid JSON.
nv_shown() {
	printf '%s' "$1" | LC_ALL=C tr -c '[:print:]' '?'
}

nv_sha256() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum <"$1" | cut -d' ' -f1
	elif command -v shasum >/dev/null 2>&1; then
		shasum -a 256 <"$1" | cut -d' ' -f1
	elif command -v openssl >/dev/null 2>&1; then
		openssl dgst -sha256 -r <"$1" | cut -d' ' -f1
	else
		return 1
	fi
}

nv_md5() {
	if command -v md5sum >/dev/null 2>&1; then
		md5sum <"$1" | cut -d' ' -f1
	elif command -v md5 >/dev/null 2>&1; then
		md5 -q <"$1"
	elif command -v openssl >/dev/null 2>&1; then
		openssl dgst -md5 -r <"$1" | cut -d' ' -f1
	fi
}

nv_size() { wc -c <"$1" | tr -d ' '; }

# The first failure is kept: phase, reason, what to check.
nv_fail() {
	[ "$nv_state" = @STATE_SUCCEEDED@ ] || return 0
	nv_state=@STATE_FAILED@
	nv_fphase=$1
	nv_freason=$2
	nv_fhint=$3
}

# The S3 error code and message of a saved answer body, if any.
nv_s3_error() {
	nv_code=$(tr -d '\r\n' <"$1" 2>/dev/null |
		sed -n 's/.*<Code>\([^<]*\)<\/Code>.*/\1/p')
	nv_msg=$(tr -d '\r\n' <"$1" 2>/dev/null |
		sed -n 's/.*<Message>\([^<]*\)<\/Message>.*/\1/p')
	printf '%s%s' "${nv_code:-no S3 error code}" "${nv_msg:+: $nv_msg}"
}

# GET a presigned URL into a file; 0 when the whole body arrived.
nv_get() {
	nv_http=$(curl -sS --retry 5 --retry-connrefused --connect-timeout 20 \
		--speed-limit 1 --speed-time 120 -o "$2" -w '%{http_code}' \
		"$1" 2>"$nv_work/curl.err") || nv_http=000
	[ "$nv_http" = 200 ]
}

# Why nv_get failed, for a failure reason.
nv_get_error() {
	case $nv_http in
	000) printf 'no answer (%s)' "$(tr -d '\n' <"$nv_work/curl.err" |
		cut -c1-200)" ;;
	*) printf 'HTTP %s, %s' "$nv_http" "$(nv_s3_error "$1")" ;;
	esac
}

NV_HINT_URL="a presigned URL lasts the job's time limit plus the profile's \
url_margin: if it expired (AccessDenied), submit the job again; otherwise \
check that the object still exists"

# Uploads a file under the job's prefix (post_object is the form navette
# signed); checks the answer and, when an md5 tool exists, that the ETag
# the server computed is the file's MD5. $1 name below the prefix, $2 file.
nv_publish() {
	nv_sum=$(nv_sha256 "$2") || nv_sum=
	rm -f "$nv_work/post.body" "$nv_work/post.head"
	nv_http=$(post_object "$NAVETTE_PREFIX$1" "$2" "$nv_sum" \
		2>"$nv_work/curl.err") || nv_http=000
	case $nv_http in
	200 | 201 | 204) ;;
	*)
		nv_perr=$(nv_get_error "$nv_work/post.body")
		return 1
		;;
	esac
	nv_md=$(nv_md5 "$2")
	nv_etag=$(tr -d '\r' <"$nv_work/post.head" 2>/dev/null |
		sed -n 's/^[Ee][Tt][Aa][Gg]: *"\{0,1\}\([0-9a-fA-F]*\)"\{0,1\}.*/\1/p' |
		tail -n 1)
	if [ -n "$nv_md" ] && [ -n "$nv_etag" ] && [ "$nv_md" != "$nv_etag" ]; then
		nv_perr="the server stored other bytes (ETag $nv_etag, MD5 $nv_md)"
		return 1
	fi
	return 0
}

# ---- phases and the status object -----------------------------------------

nv_report() {
	nv_at=$(nv_now)
	printf '%s\n' "$1" >>"$NAVETTE_STATUS"
	nv_phases="$nv_phases${nv_phases:+,}{\"phase\":\"$1\",\"at\":\"$nv_at\"}"
	printf '%s %s\n' "$1" "$nv_at" >>"$nv_work/phases"
	# best effort: the run record at the end is what counts
	nv_publish @OBJECT_STATUS@ "$nv_work/phases" || :
}

# ---- log shipping ---------------------------------------------------------

nv_log_sent=0
nv_log_chunk=0
nv_ship_chunk() {
	[ "$nv_log_sent" -lt "$NAVETTE_LOG_MAX" ] || return 0
	nv_len=$(nv_size "$NAVETTE_LOG")
	[ "$nv_len" -gt "$nv_log_sent" ] || return 0
	tail -c +$((nv_log_sent + 1)) "$NAVETTE_LOG" >"$nv_work/chunk"
	nv_clen=$(nv_size "$nv_work/chunk")
	nv_log_chunk=$((nv_log_chunk + 1))
	if nv_publish "@OBJECT_LOG_CHUNKS@/$(printf '%0@LOG_CHUNK_DIGITS@d' "$nv_log_chunk")" \
		"$nv_work/chunk"; then
		nv_log_sent=$((nv_log_sent + nv_clen))
	else
		nv_log_chunk=$((nv_log_chunk - 1))
	fi
}

# Stops the shipper (if it runs) and ships what it had not.
nv_stop_shipper() {
	[ -n "$nv_shipper" ] || return 0
	kill -TERM "$nv_shipper" 2>/dev/null
	wait "$nv_shipper" 2>/dev/null
	nv_shipper=
	if [ -f "$nv_work/shipped" ]; then
		read -r nv_log_sent nv_log_chunk <"$nv_work/shipped"
	fi
	nv_ship_chunk
}

# In the background while the command runs. A TERM ends it between two
# chunks, never in the middle of one, so the parent knows what was sent.
nv_shipper_loop() {
	nv_quit=
	nv_sleep=
	trap 'nv_quit=1; [ -n "$nv_sleep" ] && kill "$nv_sleep" 2>/dev/null' TERM
	while [ -z "$nv_quit" ]; do
		sleep "$NAVETTE_LOG_INTERVAL" &
		nv_sleep=$!
		wait "$nv_sleep"
		nv_sleep=
		[ -n "$nv_quit" ] && break
		nv_ship_chunk
		printf '%s %s\n' "$nv_log_sent" "$nv_log_chunk" >"$nv_work/shipped"
		nv_checkpoint_save due
		if [ -n "$nv_alarm" ] && [ "$(date +%s)" -ge "$nv_alarm" ]; then
			nv_alarm=
			kill -USR1 $$ 2>/dev/null
		fi
	done
}

# ---- stopping -------------------------------------------------------------

NV_HINT_TIMEOUT="raise resources.time_limit, or save checkpoints and retry \
on timeout (retries = { on = { \"timeout\" } })"

# Whether a SIGTERM came because the job reached its time limit, as the
# scheduler sees the job (nv_launch_timed_out: on Slurm, scontrol asks
# slurmctld).
nv_sched_timed_out() {
	[ -n "$nv_launch_job" ] && [ -n "$nv_launch_timed_out_program" ] &&
		command -v "$nv_launch_timed_out_program" >/dev/null 2>&1 ||
		return 1
	nv_launch_timed_out "$nv_launch_job" >/dev/null 2>&1 </dev/null
}

# When navette stops the command before the job's time limit (a job with
# a checkpoint, or that retries on timeout: NAVETTE_WARN_BEFORE seconds
# before it), in seconds since the epoch; nothing when it does not. The
# scheduler says how long the job has left (nv_launch_time_left); when it
# does not, the limit (NAVETTE_TIME_LIMIT) counts from the launcher's
# start. (Slurm's own warning signal, for one, reaches only job steps,
# never the batch script, through slurmrestd: this launcher keeps the time
# itself.)
nv_started=$(date +%s)
nv_deadline() {
	[ -n "${NAVETTE_WARN_BEFORE:-}" ] || return 0
	nv_now_s=$(date +%s)
	nv_left=
	if [ -n "$nv_launch_job" ] && [ -n "$nv_launch_time_left_program" ] &&
		command -v "$nv_launch_time_left_program" >/dev/null 2>&1; then
		nv_left=$(nv_launch_time_left "$nv_launch_job" 2>/dev/null </dev/null)
		# a whole number of seconds, or nothing
		case $nv_left in '' | - | *[!0-9-]* | ?*-*) nv_left= ;; esac
	fi
	if [ -z "$nv_left" ] && [ -n "${NAVETTE_TIME_LIMIT:-}" ]; then
		nv_left=$((NAVETTE_TIME_LIMIT - (nv_now_s - nv_started)))
	fi
	[ -n "$nv_left" ] && printf '%s' $((nv_now_s + nv_left - NAVETTE_WARN_BEFORE))
}

# The time limit is near (the log shipper's alarm): the command gets a
# SIGTERM, to save its checkpoint and end. It goes to the launcher's
# process group (kill 0), as a backend's stop does: the command's own
# processes, not only the subshell that waits for them (this launcher's
# TERM trap then sees it stopped, and the shipper ends).
nv_on_time_limit() {
	[ -n "$nv_stopped" ] && return
	[ -n "$nv_cmd" ] || return
	nv_stopped=1
	nv_kind=timeout
	nv_fail @PHASE_RUNNING@ "the job reached its time limit (navette stopped \
the command ${NAVETTE_WARN_BEFORE}s before it, so that it could save a checkpoint)" \
		"$NV_HINT_TIMEOUT"
	kill -TERM 0 2>/dev/null || kill -TERM "$nv_cmd" 2>/dev/null
}
trap nv_on_time_limit USR1

nv_on_signal() {
	# (the scheduler stopping an attempt this launcher requeued: it is over)
	[ -n "$nv_requeued" ] && exit 0
	[ -n "$nv_cmd" ] && kill -TERM "$nv_cmd" 2>/dev/null
	[ -n "$nv_stopped" ] && return
	nv_stopped=1
	nv_why=$(cat "$NAVETTE_JOB_DIR/stop-reason" 2>/dev/null)
	if [ -z "$nv_why" ] && nv_sched_timed_out; then
		nv_kind=timeout
		nv_fail @PHASE_RUNNING@ "the job reached its time limit \
($nv_launch_scheduler stopped it)" "$NV_HINT_TIMEOUT"
		return
	fi
	nv_fail @PHASE_RUNNING@ "${nv_why:-the job was stopped by a signal (cancelled, \
time limit, or the node shut down)}" "see navette status for the backend's \
reason; the log shows how far the command got"
	case $nv_why in cancelled*) nv_state=@STATE_CANCELLED@ ;; esac
}
trap nv_on_signal TERM INT HUP

# ---- checkpoints and attempts -----------------------------------------------
# A job with a checkpoint (NAVETTE_CHECKPOINT_GET, a presigned GET of its
# archive) finds the latest one in $NAVETTE_CHECKPOINT before its command
# starts; the folder is saved as one archive, @OBJECT_CHECKPOINT@/
# @CHECKPOINT_ARCHIVE@ under the job's prefix (through the POST policy, so
# one upload replaces it whole), every NAVETTE_CHECKPOINT_EVERY seconds by
# the log shipper and once more when the command has ended.
#
# Retries. The scheduler counts its requeues of the job (nv_launch_restarts;
# Slurm's SLURM_RESTART_COUNT): each is an attempt, and one past
# retries.max (NAVETTE_RETRY_MAX) does not run. The scheduler requeues the
# job itself when its node fails or it is preempted; for the failures it
# would not retry, named in NAVETTE_RETRY_ON ("timeout", "exit:N"), this
# launcher asks it to requeue the job (nv_launch_requeue; on Slurm,
# scontrol requeue), so that one failure is retried once, by one of the
# two, and nothing waits for the laptop. An attempt that ends so appends
# its line to @OBJECT_CHECKPOINT@/@ATTEMPTS@ (the next attempt reads it
# through NAVETTE_ATTEMPTS_GET), so that the record of the last one lists
# why each ended. The state lives in files
# of $nv_work, which the shipper (a subshell) shares.
nv_attempt=$((${nv_launch_restarts:-0} + 1))
nv_ckpt_restored=null
nv_ckpt_ran=

nv_checkpoint_restore() {
	[ -n "${NAVETTE_CHECKPOINT_GET:-}" ] || return 0
	NAVETTE_CHECKPOINT="$NAVETTE_JOB_DIR/checkpoint"
	export NAVETTE_CHECKPOINT
	rm -rf "$NAVETTE_CHECKPOINT" && mkdir -p "$NAVETTE_CHECKPOINT" || {
		nv_fail @PHASE_DATA_READY@ "cannot create $NAVETTE_CHECKPOINT" \
			"check the node's disk and the job directory's rights"
		return
	}
	date +%s >"$nv_work/ckpt.at"
	if nv_get "$NAVETTE_CHECKPOINT_GET" "$nv_work/ckpt.tar"; then
		if ! tar -xf "$nv_work/ckpt.tar" -C "$NAVETTE_CHECKPOINT"; then
			nv_fail @PHASE_DATA_READY@ "cannot unpack the checkpoint" \
				"check the node's tar and free disk space"
			return
		fi
		nv_sha256 "$nv_work/ckpt.tar" >"$nv_work/ckpt.sum"
		nv_ckpt_restored="{\"attempt\":$nv_attempt,\"bytes\":\
$(nv_size "$nv_work/ckpt.tar"),\"sha256\":\"$(cat "$nv_work/ckpt.sum")\"}"
	elif [ "$nv_http" != 404 ]; then
		nv_fail @PHASE_DATA_READY@ "cannot download the checkpoint: \
$(nv_get_error "$nv_work/ckpt.tar")" "$NV_HINT_URL"
	fi
	rm -f "$nv_work/ckpt.tar"
}

# Saves the folder if it changed; with "due", only once the interval has
# passed since the last save.
nv_checkpoint_save() {
	[ -n "${NAVETTE_CHECKPOINT_GET:-}" ] && [ -n "$nv_ckpt_ran" ] || return 0
	nv_ck_now=$(date +%s)
	if [ "$1" = due ] && [ $((nv_ck_now - $(cat "$nv_work/ckpt.at"))) -lt \
		"$NAVETTE_CHECKPOINT_EVERY" ]; then
		return 0
	fi
	printf '%s\n' "$nv_ck_now" >"$nv_work/ckpt.at"
	(cd "$NAVETTE_CHECKPOINT" && tar -cf "$nv_work/ckpt.new" .) || return 0
	nv_ck_sum=$(nv_sha256 "$nv_work/ckpt.new")
	[ "$nv_ck_sum" = "$(cat "$nv_work/ckpt.sum" 2>/dev/null)" ] && return 0
	if nv_publish "@OBJECT_CHECKPOINT@/@CHECKPOINT_ARCHIVE@" "$nv_work/ckpt.new"; then
		printf '%s\n' "$nv_ck_sum" >"$nv_work/ckpt.sum"
		printf '{"attempt":%s,"written_at":"%s","bytes":%s,"sha256":"%s"}\n' \
			"$nv_attempt" "$(nv_now)" "$(nv_size "$nv_work/ckpt.new")" \
			"$nv_ck_sum" >>"$nv_work/ckpt.written"
	fi
	rm -f "$nv_work/ckpt.new"
}

# Why an attempt that left no line ended (the scheduler requeued it
# itself).
NV_REQUEUED="$nv_launch_scheduler requeued the job (its node failed, or it \
was preempted)"

# The lines of the attempts list that this launcher writes (nv_step_retry),
# and no other shape: what the next attempt puts in its record stays JSON.
NV_ATTEMPT_LINE='^[{]"attempt":[1-9][0-9]{0,3},"state":"failed","failure":"(timeout|exit:[0-9]{1,3})","reason":"([^"\\]|\\["\\])*","node":"([^"\\]|\\["\\])*","ended":"[0-9TZ:.-]{1,40}","log_chunks":[0-9]{1,6}[}]$'

# The attempts before this one that a launcher listed (none on the first).
nv_attempts_load() {
	: >"$nv_work/attempts"
	[ "$nv_attempt" -gt 1 ] && [ -n "${NAVETTE_ATTEMPTS_GET:-}" ] || return 0
	if nv_get "$NAVETTE_ATTEMPTS_GET" "$nv_work/attempts.got"; then
		head -c 262144 "$nv_work/attempts.got" |
			LC_ALL=C grep -E "$NV_ATTEMPT_LINE" >"$nv_work/attempts"
	fi
	rm -f "$nv_work/attempts.got"
	# the log's chunks go on from where the attempts before left them
	nv_log_chunk=$(tail -n 1 "$nv_work/attempts" |
		sed -n 's/.*"log_chunks":\([0-9]*\)}$/\1/p')
	nv_log_chunk=${nv_log_chunk:-0}
}

# The line of attempt $1 in the list, or nothing.
nv_attempt_line() {
	grep -F "{\"attempt\":$1,\"" "$nv_work/attempts" 2>/dev/null | head -n 1
}

# One past retries.max: the attempt does not run.
nv_step_attempt() {
	[ -n "${NAVETTE_RETRY_MAX:-}" ] || return 0
	nv_attempts_load
	[ "$nv_attempt" -gt $((NAVETTE_RETRY_MAX + 1)) ] || return 0
	nv_fail @PHASE_ACCEPTED@ "$nv_launch_scheduler requeued the job \
$((nv_attempt - 1)) times; retries.max is $NAVETTE_RETRY_MAX" "see why its attempts ended \
(navette logs ID), then run the recipe again"
}

# Before the command of a later attempt: why the earlier ones ended, in
# the log.
nv_attempts_note() {
	[ "$nv_attempt" -gt 1 ] || return 0
	nv_k=1
	while [ "$nv_k" -lt "$nv_attempt" ]; do
		nv_l=$(nv_attempt_line "$nv_k")
		if [ -n "$nv_l" ]; then
			nv_why="$(printf '%s\n' "$nv_l" |
				sed 's/.*"failure":"\([^"]*\)".*/\1/'): $(printf '%s\n' \
				"$nv_l" | sed 's/.*"reason":"\(.*\)","node":.*/\1/')"
		else
			nv_why=$NV_REQUEUED
		fi
		printf 'navette: attempt %s ended (%s)\n' "$nv_k" "$nv_why"
		nv_k=$((nv_k + 1))
	done
	printf 'navette: attempt %s of %s starts on %s\n' "$nv_attempt" \
		"$((NAVETTE_RETRY_MAX + 1))" "${nv_launch_node:-$(hostname)}"
}

# The failure this attempt ended with, if the job retries it itself
# (NAVETTE_RETRY_ON) and has an attempt left: ends the attempt (its log,
# its checkpoint, its line in the attempts list), asks the scheduler to
# requeue the job, and waits to be stopped. Returns when the scheduler
# would not, or when the backend gave no way to ask it (no spec.launch).
nv_step_retry() {
	[ -n "$nv_kind" ] && [ -n "${NAVETTE_RETRY_MAX:-}" ] || return 0
	# (a launcher run outside its scheduler: not its job to requeue)
	[ -z "$nv_launch_requeue_program" ] || [ -n "$nv_launch_job" ] ||
		return 0
	[ -z "$nv_launch_requeue_exit" ] || [ -n "$nv_launch_job$nv_launch_node" ] ||
		return 0
	case " ${NAVETTE_RETRY_ON:-} " in *" $nv_kind "*) ;; *) return 0 ;; esac
	if [ "$nv_attempt" -gt "$NAVETTE_RETRY_MAX" ]; then
		nv_freason="$nv_freason; attempt $nv_attempt of \
$((NAVETTE_RETRY_MAX + 1)), no retry left"
		return 0
	fi
	if [ -z "$nv_launch_requeue_program" ] && [ -z "$nv_launch_requeue_exit" ]; then
		nv_freason="$nv_freason; it was not retried: the launcher has no \
way to requeue the job (its backend gave none)"
		nv_fhint="retries of $nv_kind need $nv_launch_requeue_needs"
		return 0
	fi
	nv_stop_shipper
	nv_checkpoint_save now
	printf '{"attempt":%s,"state":"failed","failure":"%s","reason":%s,"node":%s,"ended":"%s","log_chunks":%s}\n' \
		"$nv_attempt" "$nv_kind" "$(nv_json "$nv_freason")" \
		"$(nv_json "${nv_launch_node:-$(hostname)}")" "$(nv_now)" \
		"$nv_log_chunk" >>"$nv_work/attempts"
	nv_publish "@OBJECT_CHECKPOINT@/@ATTEMPTS@" "$nv_work/attempts" || :
	if [ -n "$nv_launch_requeue_exit" ]; then
		# the scheduler runs the job again on this exit code
		nv_secrets_close
		exit "$nv_launch_requeue_exit"
	fi
	if ! command -v "$nv_launch_requeue_program" >/dev/null 2>&1; then
		nv_rq_err="the node has no $nv_launch_requeue_program"
	else
		nv_requeued=1
		if nv_rq_err=$(nv_launch_requeue "$nv_launch_job" 2>&1 </dev/null); then
			# the scheduler stops this attempt now (nv_on_signal exits)
			nv_t=0
			while [ "$nv_t" -lt 300 ]; do
				sleep 1
				nv_t=$((nv_t + 1))
			done
			exit 0
		fi
		nv_requeued=
	fi
	nv_freason="$nv_freason; its retry failed: $nv_launch_scheduler did not \
requeue the job ($(printf '%s' "$nv_rq_err" | tr -d '\n' | cut -c1-200))"
	nv_fhint="retries of $nv_kind need $nv_launch_requeue_needs: check them"
}

# The record's attempts and checkpoints (when the job has them), as
# fields to append to its head.
nv_attempts_json() {
	if [ -n "${NAVETTE_RETRY_MAX:-}" ]; then
		printf ',"attempt":%s,"attempts":[' "$nv_attempt"
		nv_k=1
		while [ "$nv_k" -lt "$nv_attempt" ]; do
			nv_l=$(nv_attempt_line "$nv_k")
			if [ -n "$nv_l" ]; then
				printf '%s,' "${nv_l%,\"log_chunks\":*}}"
			else
				printf '{"attempt":%s,"state":"failed","failure":"requeued","reason":%s},' \
					"$nv_k" "$(nv_json "$NV_REQUEUED")"
			fi
			nv_k=$((nv_k + 1))
		done
		printf '{"attempt":%s,"state":"%s","node":%s,"ended":"%s"}]' \
			"$nv_attempt" "$nv_state" "$(nv_json "${nv_launch_node:-$(hostname)}")" \
			"$(nv_now)"
	fi
	if [ -n "${NAVETTE_CHECKPOINT_GET:-}" ]; then
		printf ',"checkpoints":{"every":%s,"restored":%s,"written":[%s]}' \
			"$NAVETTE_CHECKPOINT_EVERY" "$nv_ckpt_restored" \
			"$(paste -sd, "$nv_work/ckpt.written" 2>/dev/null)"
	fi
}

# ---- secrets --------------------------------------------------------------

# The job's secrets (navette_secrets, above, calls fetch_secret for each):
# a folder of its own on a tmpfs where the node has /dev/shm, else in the
# job's folder; each object fetched once through its presigned GET,
# deleted through its presigned DELETE, decrypted with openssl under the
# password of this launcher (through the environment of openssl alone,
# never its command line) into a file of mode 0400. The folder is removed
# once the command has ended.
nv_secrets_dir=
nv_secret_names=
nv_secrets_open() {
	if ! command -v openssl >/dev/null 2>&1; then
		nv_fail @PHASE_DATA_READY@ "the node has no openssl, which decrypts \
the job's secrets" "install openssl on the node (Debian: apt-get install \
openssl), or run the job without secrets"
		return 1
	fi
	nv_sbase=$nv_work
	[ -d /dev/shm ] && [ -w /dev/shm ] && nv_sbase=/dev/shm
	nv_secrets_dir=$(umask 077 && mktemp -d "$nv_sbase/navette-secrets.XXXXXX") ||
		nv_secrets_dir=
	if [ -z "$nv_secrets_dir" ]; then
		nv_fail @PHASE_DATA_READY@ "cannot create the secrets' folder in \
$nv_sbase" "check the node's /dev/shm and disk"
		return 1
	fi
	chmod 700 "$nv_secrets_dir"
	NAVETTE_SECRETS=$nv_secrets_dir
	export NAVETTE_SECRETS
}

# fetch_secret NAME GET DELETE PASSWORD
fetch_secret() {
	nv_sobj="$nv_work/secret.obj"
	if ! nv_get "$2" "$nv_sobj"; then
		nv_fail @PHASE_DATA_READY@ "cannot download secret $1: \
$(nv_get_error "$nv_sobj")" "$NV_HINT_URL"
		rm -f "$nv_sobj"
		return 1
	fi
	# fetched once: the object goes now (navette status deletes it if not)
	curl -sS --retry 3 --connect-timeout 20 -X DELETE -o /dev/null "$3" \
		2>/dev/null || :
	if ! (umask 377 && NV_SECRET_PASS=$4 openssl enc -d -aes-256-ctr \
		-pbkdf2 -md sha256 -iter 10000 -pass env:NV_SECRET_PASS \
		-in "$nv_sobj" -out "$NAVETTE_SECRETS/$1") 2>"$nv_work/openssl.err"; then
		nv_fail @PHASE_DATA_READY@ "cannot decrypt secret $1 ($(tr -d '\n' \
<"$nv_work/openssl.err" | cut -c1-200))" "openssl 1.1.1 or later decrypts \
it (enc -pbkdf2); check the node's openssl version"
		rm -f "$nv_sobj"
		return 1
	fi
	rm -f "$nv_sobj"
	chmod 400 "$NAVETTE_SECRETS/$1"
	nv_secret_names="$nv_secret_names $1"
}

nv_secrets_close() {
	[ -n "$nv_secrets_dir" ] || return 0
	chmod -R u+w "$nv_secrets_dir" 2>/dev/null
	rm -rf "$nv_secrets_dir"
	nv_secrets_dir=
}

# The log filter of a node without navette's redactor: each secret's value
# (each line of its file of 8 bytes or more, the password of a user:pass,
# the values of an s3 key's JSON) replaced by <redacted:NAME>. The values
# are read from the files by awk, never passed on a command line.
nv_redact_secrets() {
	awk -v dir="$NAVETTE_SECRETS" -v names="$nv_secret_names" '
function add(v, label) {
	if (length(v) >= 8) { k++; val[k] = v; lab[k] = label }
}
BEGIN {
	k = 0
	n = split(names, nm, " ")
	for (i = 1; i <= n; i++) {
		f = dir "/" nm[i]
		while ((getline v < f) > 0) {
			add(v, nm[i])
			c = index(v, ":")
			if (c > 0) add(substr(v, c + 1), nm[i])
			rest = v
			while (match(rest, /":"[^"]*"/)) {
				add(substr(rest, RSTART + 3, RLENGTH - 4), nm[i])
				rest = substr(rest, RSTART + RLENGTH)
			}
		}
		close(f)
	}
}
{
	line = $0
	for (j = 1; j <= k; j++) {
		out = ""
		while ((p = index(line, val[j])) > 0) {
			out = out substr(line, 1, p - 1) "<redacted:" lab[j] ">"
			line = substr(line, p + length(val[j]))
		}
		line = out line
	}
	print line
	fflush()
}'
}

# ---- steps ----------------------------------------------------------------

nv_step_data() {
	if ! command -v curl >/dev/null 2>&1; then
		nv_fail @PHASE_DATA_READY@ "the node has no curl" \
			"install curl on the node (the launcher needs sh and curl)"
		return
	fi
	if ! nv_sha256 /dev/null >/dev/null; then
		nv_fail @PHASE_DATA_READY@ "the node has no sha256 tool" \
			"install coreutils (sha256sum), shasum or openssl"
		return
	fi
	mkdir -p "$NAVETTE_WORKSPACE" "$NAVETTE_INPUTS" "$NAVETTE_OUTPUTS" ||
		{
			nv_fail @PHASE_DATA_READY@ "cannot create $NAVETTE_JOB_DIR" \
				"check the node's disk and the job directory's rights"
			return
		}
	navette_code
	[ "$nv_state" = @STATE_SUCCEEDED@ ] || return
	navette_inputs
	navette_output_inputs
	chmod -R a-w "$NAVETTE_INPUTS" 2>/dev/null
}

# fetch_code URL SHA256 SIZE: the commit's tree as a tar.gz
fetch_code() {
	if ! nv_get "$1" "$nv_work/code.tar.gz"; then
		nv_fail @PHASE_DATA_READY@ "cannot download the code archive: \
$(nv_get_error "$nv_work/code.tar.gz")" "$NV_HINT_URL"
		return
	fi
	if [ "$(nv_sha256 "$nv_work/code.tar.gz")" != "$2" ]; then
		nv_fail @PHASE_DATA_READY@ "the code archive does not have the sha256 \
recorded at submission" "the object under _code/ was changed: submit again"
		return
	fi
	if ! tar -xzf "$nv_work/code.tar.gz" -C "$NAVETTE_WORKSPACE"; then
		nv_fail @PHASE_DATA_READY@ "cannot unpack the code archive" \
			"check the node's tar, gzip and free disk space"
	fi
	rm -f "$nv_work/code.tar.gz"
}

# fetch_input NAME URL PRESIGNED SHA256 SIZE
fetch_input() {
	[ "$nv_state" = @STATE_SUCCEEDED@ ] || return
	nv_dest="$NAVETTE_INPUTS/$1"
	if ! nv_get "$3" "$nv_dest.part"; then
		nv_fail @PHASE_DATA_READY@ "cannot download input '$1' ($2): \
$(nv_get_error "$nv_dest.part")" "$NV_HINT_URL"
		rm -f "$nv_dest.part"
		return
	fi
	nv_got_size=$(nv_size "$nv_dest.part")
	nv_got_sha=$(nv_sha256 "$nv_dest.part")
	if [ "$nv_got_size" != "$5" ]; then
		nv_fail @PHASE_DATA_READY@ "input '$1' is $nv_got_size bytes, \
${nv_source:-the job was submitted with} $5" "the object changed after \
${nv_source:+it was published, or }submission: submit the job${nv_source:+s} again"
	elif [ -n "$4" ] && [ "$nv_got_sha" != "$4" ]; then
		nv_fail @PHASE_DATA_READY@ "input '$1' has sha256 $nv_got_sha, \
${nv_source:-the job was submitted with} $4" "the object changed after \
${nv_source:+it was published, or }submission: submit the job${nv_source:+s} again"
	fi
	if [ "$nv_state" != @STATE_SUCCEEDED@ ]; then
		rm -f "$nv_dest.part"
		return
	fi
	mv "$nv_dest.part" "$nv_dest" && chmod 0444 "$nv_dest"
	nv_inputs="$nv_inputs${nv_inputs:+,}{\"name\":$(nv_json "$1"),\"url\":\
$(nv_json "$2"),\"size\":$nv_got_size,\"sha256\":\"$nv_got_sha\"}"
}

# nv_record_output RECORD NAME: "SIZE SHA256" of output NAME as the run
# record (written by a launcher: one flat object per output, in the order
# name, key, url, size, sha256) lists it; nothing when it lists none.
nv_record_output() {
	tr -d '\n' <"$1" | awk -v want="{\"name\":$(nv_json "$2")," '{
		at = index($0, "\"outputs\":[")
		if (!at) exit
		rest = substr($0, at)
		at = index(rest, want)
		if (!at) exit
		one = substr(rest, at)
		one = substr(one, 1, index(one, "}"))
		if (!match(one, /"size":[0-9]+/)) exit
		size = substr(one, RSTART + 7, RLENGTH - 7)
		if (!match(one, /"sha256":"[0-9a-f]+"/)) exit
		print size " " substr(one, RSTART + 10, RLENGTH - 11)
	}'
}

# fetch_output NAME URL PRESIGNED RECORD_PRESIGNED PRODUCER OUTPUT: another
# job's output, which must be the bytes that job's run record lists
fetch_output() {
	[ "$nv_state" = @STATE_SUCCEEDED@ ] || return
	case $1 in */*) mkdir -p "$NAVETTE_INPUTS/${1%/*}" ;; esac
	if ! nv_get "$4" "$nv_work/producer.json"; then
		nv_fail @PHASE_DATA_READY@ "input '$1': the run record of job $5 \
cannot be read ($(nv_get_error "$nv_work/producer.json"))" \
			"see that job's outcome (navette status $5)"
		return
	fi
	nv_listed=$(nv_record_output "$nv_work/producer.json" "$6")
	if [ -z "$nv_listed" ]; then
		nv_fail @PHASE_DATA_READY@ "input '$1': job $5 published no output \
'$(nv_shown "$6")'" "that job must write it under \$NAVETTE_OUTPUTS \
(success.outputs makes its absence a failure of that job)"
		return
	fi
	nv_source="job $5's run record lists output '$(nv_shown "$6")' with"
	fetch_input "$1" "$2" "$3" "${nv_listed#* }" "${nv_listed% *}"
	nv_source=
}

nv_step_run() {
	if ! cd "$NAVETTE_WORKSPACE"; then
		nv_fail @PHASE_RUNNING@ "cannot enter the workspace" "check the node's disk"
		return
	fi
	nv_report @PHASE_RUNNING@
	nv_attempts_note >>"$NAVETTE_LOG"
	nv_report @PHASE_LOGS_VISIBLE@
	# a signal that came during a report: never start the command then
	[ "$nv_state" = @STATE_SUCCEEDED@ ] || return
	nv_ckpt_ran=1
	nv_alarm=$(nv_deadline)
	nv_shipper_loop &
	nv_shipper=$!
	# the command in the background, so a signal reaches nv_on_signal now
	if [ -n "${NAVETTE_REDACT:-}" ]; then
		{ run_command 2>&1 | "$NAVETTE_REDACT" redact-stream >>"$NAVETTE_LOG"; } &
	elif [ -n "$nv_secret_names" ]; then
		{ run_command 2>&1 | nv_redact_secrets >>"$NAVETTE_LOG"; } &
	else
		run_command >>"$NAVETTE_LOG" 2>&1 &
	fi
	nv_cmd=$!
	wait "$nv_cmd"
	# wait returns early when a trapped signal arrives: wait again
	while kill -0 "$nv_cmd" 2>/dev/null; do wait "$nv_cmd"; done
	nv_cmd=
	nv_secrets_close
	nv_code=$(sed -n 's/^exit //p' "$NAVETTE_STATUS" | tail -n 1)
	[ -n "$nv_code" ] && nv_exit=$nv_code
	[ -n "$nv_stopped" ] && return
	if [ -z "$nv_code" ]; then
		nv_fail @PHASE_RUNNING@ "the command ended without an exit status" \
			"check the node's memory (OOM killer) and the log"
		return
	fi
	case " $NAVETTE_EXIT_CODES " in
	*" $nv_code "*) ;;
	*)
		nv_fail @PHASE_RUNNING@ "the command exited with status $nv_code" \
			"${NAVETTE_FAILURE_HINT:-read the log (navette logs ID): check the \
parameters, the data and the dependencies}"
		nv_kind=exit:$nv_code
		;;
	esac
	navette_failure_patterns
	navette_required_outputs
}

# check_pattern TEXT: the log must not hold it
check_pattern() {
	if grep -F -q -e "$1" "$NAVETTE_LOG" 2>/dev/null; then
		nv_fail @PHASE_RUNNING@ "the log matched the failure pattern '$1'" \
			"${NAVETTE_FAILURE_HINT:-read the log (navette logs ID)}"
	fi
}

# check_required NAME: the command must have written it
check_required() {
	if [ ! -f "$NAVETTE_OUTPUTS/$1" ] || [ -h "$NAVETTE_OUTPUTS/$1" ]; then
		nv_fail @PHASE_OUTPUTS_PUBLISHED@ "required output '$1' is missing" \
			"the command must write it into \$NAVETTE_OUTPUTS; check the \
publication path"
	fi
}

# nv_reserved_name PATH: prints the job object (NAVETTE_RESERVED, lower
# case) that PATH's first segment is in any case, trailing dots and spaces
# ignored (a case-insensitive volume or share takes one for the other);
# fails when none. Only ASCII letters are folded here; the names are ASCII.
nv_reserved_name() {
	nv_first=$(printf '%s' "${1%%/*}" | LC_ALL=C tr '[:upper:]' '[:lower:]')
	nv_first=${nv_first%"${nv_first##*[!. ]}"}
	for nv_r in $NAVETTE_RESERVED; do
		if [ "$nv_first" = "$nv_r" ]; then
			printf '%s' "$nv_r"
			return 0
		fi
	done
	return 1
}

nv_step_publish() {
	cd "$NAVETTE_OUTPUTS" || {
		nv_fail @PHASE_OUTPUTS_PUBLISHED@ "cannot read the outputs folder" \
			"check the node's disk"
		return
	}
	nv_bad=$(find . ! -type f ! -type d | head -n 1)
	if [ -n "$nv_bad" ]; then
		nv_fail @PHASE_OUTPUTS_PUBLISHED@ "output '$(nv_shown "${nv_bad#./}")' is not a plain file" \
			"write plain files into \$NAVETTE_OUTPUTS (no links, no devices)"
		return
	fi
	find . -type f | LC_ALL=C sort >"$nv_work/outputs"
	nv_total=0
	while IFS= read -r nv_name; do
		nv_name=${nv_name#./}
		if nv_reserved=$(nv_reserved_name "$nv_name"); then
			nv_fail @PHASE_OUTPUTS_PUBLISHED@ "output '$(nv_shown "$nv_name")' has a reserved name \
(navette's '$nv_reserved', in any case)" \
				"rename the output: @OBJECT_LOG@, @OBJECT_RUN_RECORD@, \
@OBJECT_STATUS@ and @OBJECT_LOG_CHUNKS@/ are navette's, in any case"
			return
		fi
		case $nv_name in
		*'"'* | *'\'* | -* | *[![:print:]]*)
			nv_fail @PHASE_OUTPUTS_PUBLISHED@ "output name '$(nv_shown "$nv_name")' cannot be \
published" "use names without quotes, backslashes or control characters"
			return
			;;
		esac
		if [ ! -f "$nv_name" ]; then
			nv_fail @PHASE_OUTPUTS_PUBLISHED@ "output '$nv_name' cannot be read" \
				"use names without newlines"
			return
		fi
		nv_osize=$(nv_size "$nv_name")
		if [ "$nv_osize" -gt "$NAVETTE_OUTPUT_MAX" ]; then
			nv_fail @PHASE_OUTPUTS_PUBLISHED@ "output '$nv_name' is $nv_osize bytes, \
more than the profile's max_output_bytes ($NAVETTE_OUTPUT_MAX)" \
				"split the output, or raise max_output_bytes (at most 5GiB)"
			return
		fi
		if ! nv_publish "$nv_name" "$nv_name"; then
			nv_fail @PHASE_OUTPUTS_PUBLISHED@ "cannot publish '$nv_name': $nv_perr" \
				"check the profile's storage and that the job's POST policy \
has not expired (time limit plus url_margin)"
			return
		fi
		nv_outputs="$nv_outputs${nv_outputs:+,}{\"name\":$(nv_json "$nv_name"),\
\"key\":$(nv_json "$NAVETTE_PREFIX$nv_name"),\"url\":$(nv_json \
"$NAVETTE_OUTPUT_URL$nv_name"),\"size\":$nv_osize,\"sha256\":\"$nv_sum\"}"
	done <"$nv_work/outputs"
	nv_report @PHASE_OUTPUTS_PUBLISHED@
}

# The log (its end, when over logs.max_bytes), then the run record.
nv_step_record() {
	cd "$NAVETTE_JOB_DIR" || return
	nv_stop_shipper
	nv_checkpoint_save now # (what the command left, the shipper stopped)
	: >>"$NAVETTE_LOG"
	nv_lsize=$(nv_size "$NAVETTE_LOG")
	nv_trunc=false
	if [ "$nv_lsize" -gt "$NAVETTE_LOG_MAX" ]; then
		{
			printf '[navette: log truncated to its last %s bytes]\n' \
				"$NAVETTE_LOG_MAX"
			tail -c "$NAVETTE_LOG_MAX" "$NAVETTE_LOG"
		} >"$nv_work/log.published"
		nv_trunc=true
	else
		cp "$NAVETTE_LOG" "$nv_work/log.published"
	fi
	nv_logjson=null
	if [ "$NAVETTE_LOG_PUBLISH" = 1 ]; then
		if nv_publish @OBJECT_LOG@ "$nv_work/log.published"; then
			nv_logjson="{\"url\":$(nv_json "${NAVETTE_OUTPUT_URL}@OBJECT_LOG@"),\
\"key\":$(nv_json "${NAVETTE_PREFIX}@OBJECT_LOG@"),\"bytes\":\
$(nv_size "$nv_work/log.published"),\"truncated\":$nv_trunc,\"chunks\":\
$nv_log_chunk}"
		else
			nv_fail @PHASE_OUTPUTS_PUBLISHED@ "cannot publish the log: $nv_perr" \
				"check the profile's storage and the POST policy's expiry"
		fi
	fi
	[ "$nv_state" = @STATE_SUCCEEDED@ ] || nv_outputs=
	nv_report "$nv_state"
	if [ "$nv_state" = @STATE_SUCCEEDED@ ]; then
		nv_failure=null
	else
		nv_failure="{\"phase\":$(nv_json "$nv_fphase"),\"reason\":\
$(nv_json "$nv_freason"),\"hint\":$(nv_json "$nv_fhint")}"
	fi
	NAVETTE_RECORD_HEAD="$NAVETTE_RECORD_HEAD$(nv_attempts_json)"
	nv_node=null
	if [ -s "$NAVETTE_JOB_DIR/fingerprint.json" ]; then
		nv_node=$(cat "$NAVETTE_JOB_DIR/fingerprint.json")
	fi
	printf '%s,"inputs":[%s],"phases":[%s],"state":"%s","exit_code":%s,"outputs":[%s],"failure":%s,"log":%s,"node":%s,"finished_at":"%s"}\n' \
		"$NAVETTE_RECORD_HEAD" "$nv_inputs" "$nv_phases" "$nv_state" \
		"$nv_exit" "$nv_outputs" "$nv_failure" "$nv_logjson" "$nv_node" \
		"$(nv_now)" \
		>"$NAVETTE_JOB_DIR/@OBJECT_RUN_RECORD@"
	if ! nv_publish @OBJECT_RUN_RECORD@ "$NAVETTE_JOB_DIR/@OBJECT_RUN_RECORD@"; then
		printf 'record-failed %s\n' "$nv_perr" >>"$NAVETTE_STATUS"
	fi
	printf 'final %s\n' "$nv_state" >>"$NAVETTE_STATUS"
}

# ---- the job --------------------------------------------------------------

nv_report @PHASE_ACCEPTED@
nv_step_attempt
if [ "$nv_state" != @STATE_SUCCEEDED@ ]; then
	:
elif navette_image; then
	nv_report @PHASE_IMAGE_READY@
else
	nv_fail @PHASE_IMAGE_READY@ "$nv_image_error" "check the image reference, and \
that this node can reach its registry (network, credentials)"
fi
navette_fingerprint
[ "$nv_state" = @STATE_SUCCEEDED@ ] && nv_step_data
[ "$nv_state" = @STATE_SUCCEEDED@ ] && nv_checkpoint_restore
[ "$nv_state" = @STATE_SUCCEEDED@ ] && navette_secrets
if [ "$nv_state" = @STATE_SUCCEEDED@ ]; then
	nv_report @PHASE_DATA_READY@
	nv_step_run
fi
[ "$nv_state" = @STATE_SUCCEEDED@ ] && nv_step_publish
[ "$nv_state" = @STATE_FAILED@ ] && nv_step_retry
nv_secrets_close
nv_step_record
if [ -n "$nv_own_dir" ] && [ -z "${NAVETTE_KEEP_WORKSPACE:-}" ]; then
	cd / && chmod -R u+w "$NAVETTE_JOB_DIR" 2>/dev/null
	rm -rf "$NAVETTE_JOB_DIR"
fi
[ "$nv_state" = @STATE_SUCCEEDED@ ] && exit 0
case $nv_exit in
null | 0) exit 1 ;;
*) exit "$nv_exit" ;;
esac
