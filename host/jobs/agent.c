/* The local agent (see agent.h). One loop, polling every 100 ms: it claims
 * queued jobs, runs each job's launcher in its own process group, follows
 * the phases the launcher writes to its status file, enforces the time
 * limit and cancels, and finalizes each job: success condition, atomic
 * publication of outputs under the job's prefix, log, run record. The
 * exit status is read from the status file, not from waitpid, so an agent
 * restarted while jobs run can adopt them. */
#include "jobs/agent.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef __APPLE__
#include <mach-o/dyld.h>
#endif

#include <cjson/cJSON.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/fsutil.h"
#include "core/jobid.h"
#include "core/output.h"
#include "core/proc.h"
#include "git/git.h"
#include "jobs/agent_internal.h"
#include "jobs/launcher.h"

#define AGENT_SLOTS_DEFAULT 4
#define AGENT_IDLE_DEFAULT  30.0
#define AGENT_POLL_NS       100000000L
#define KILL_GRACE_S        5.0
/* a launcher that transfers publishes its log and record after a TERM */
#define KILL_GRACE_TRANSFER_S 30.0
#define STATUS_MAX            65536

/* The agent's own log passes the redactor like every other sink. */
void agent_log(const char *fmt, ...)
{
	char ts[32];
	char line[2048];
	va_list ap;

	nv_iso8601(nv_now(), ts);
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	nv_out_printf(NV_OUT_STDERR, "%s agent[%ld] %s\n", ts, (long)getpid(),
		      line);
}

/* ---- the lock ---------------------------------------------------------- */

static int lock_open(const char *home)
{
	char path[PATH_CAP];
	nv_pathf(path, sizeof(path), "%s/agent.lock", home);
	return open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
}

int nv_agent_alive(const char *home)
{
	int fd = lock_open(home);
	int alive;

	if (fd < 0)
		return 0;
	alive = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
	close(fd); /* releases the lock if we took it */
	return alive;
}

/* The agent program (core/agent_program.c); the launcher's redact-stream is
 * the same program. */
static int executable_path(char *out, size_t cap)
{
	nv_err err;
	return nv_agent_program(out, cap, &err) == 0 ? 0 : -1;
}

/* ---- the agent's environment ------------------------------------------- */

/* What a launcher gets of the agent's environment (and a container
 * runtime of the launcher's), beside navette's variables: nothing of the
 * shell that started the agent leaks into the job. */
static const char *const launcher_env_names[] = {
	"PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "LANG", "TZ",
	"NAVETTE_LOG_INTERVAL",
	/* what a container runtime reads of its own */
	"CONTAINERS_CONF", "CONTAINERS_STORAGE_CONF",
	"CONTAINERS_REGISTRIES_CONF", "XDG_RUNTIME_DIR", "DOCKER_HOST",
	"DOCKER_CONFIG", NULL};

/* What the agent keeps of the environment of whoever started it: what it
 * hands its launchers, and what finding its program and libraries, git
 * and its own settings need, by name. Nothing else (a storage key, a
 * token) reaches the agent, whose jobs run as the same user for as long
 * as it lives. */
static const char *const agent_env_names[] = {
	"LC_ALL", "LC_CTYPE", "LC_COLLATE", "LC_MESSAGES", "LC_MONETARY",
	"LC_NUMERIC", "LC_TIME", "LC_ADDRESS", "LC_IDENTIFICATION",
	"LC_MEASUREMENT", "LC_NAME", "LC_PAPER", "LC_TELEPHONE",
	/* the program's libraries, as the CLI that started it found them */
	"LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH", "DYLD_FALLBACK_LIBRARY_PATH",
	"ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS", "LLVM_PROFILE_FILE",
	/* git's configuration (safe.directory) */
	"XDG_CONFIG_HOME", "XDG_DATA_HOME", "GIT_CONFIG_GLOBAL",
	"GIT_CONFIG_NOSYSTEM",
	/* navette's own settings */
	"NAVETTE_HOME", "NAVETTE_AGENT_IDLE", "NAVETTE_AGENT_SLOTS",
	"NAVETTE_KEEP_WORKSPACE", "NAVETTE_BIN", "NAVETTE_LOCAL_RUNTIME_IN_VM",
	"NAVETTE_LUA_PATH", "NAVETTE_FS_CASE_INSENSITIVE", "NAVETTE_DEBUG",
	"NAVETTE_LAZY_TRACE", "NAVETTE_FAULT", "NAVETTE_AGENT_READY_FD",
	"NAVETTE_LOCAL_SANDBOX", "NAVETTE_BWRAP", NULL};

/* entries of both lists, and room */
#define AGENT_ENV_MAX 72

extern char **environ;

static int env_name_in(const char *const *names, const char *entry)
{
	const char *eq = strchr(entry, '=');
	size_t len = eq ? (size_t)(eq - entry) : strlen(entry);

	for (const char *const *n = names; *n; n++)
		if (strlen(*n) == len && strncmp(entry, *n, len) == 0)
			return 1;
	return 0;
}

static int agent_env_allowed(const char *entry)
{
	return env_name_in(agent_env_names, entry) ||
	       env_name_in(launcher_env_names, entry);
}

/* envp: the allowed entries of this process's environment (pointers into
 * it), but NAVETTE_HOME and the ready pipe, which extra gives (NULL
 * ended). cap entries at most, the NULL included. */
static void agent_env_build(char **envp, size_t cap, char *const *extra)
{
	size_t n = 0;

	for (char *const *e = extra; e && *e && n + 1 < cap; e++)
		envp[n++] = *e;
	for (char **e = environ; e && *e && n + 1 < cap; e++) {
		if (!agent_env_allowed(*e) ||
		    strncmp(*e, "NAVETTE_HOME=", 13) == 0 ||
		    strncmp(*e, "NAVETTE_AGENT_READY_FD=", 23) == 0)
			continue;
		envp[n++] = *e;
	}
	envp[n] = NULL;
}

static int agent_env_is_minimal(void)
{
	for (char **e = environ; e && *e; e++)
		if (!agent_env_allowed(*e))
			return 0;
	return 1;
}

/* ---- starting the agent ------------------------------------------------ */

#define AGENT_READY_ENV       "NAVETTE_AGENT_READY_FD"
#define AGENT_READY_TIMEOUT_S 10.0
#define AGENT_LOG_TAIL        4096

/* Called by the agent once it holds the lock: tells the process that
 * started it (the pipe named by NAVETTE_AGENT_READY_FD), then lets go of
 * the pipe so that no job inherits it. */
static void agent_ready(void)
{
	const char *env = getenv(AGENT_READY_ENV);
	int fd = env ? atoi(env) : -1;
	struct stat st;

	/* only the pipe nv_agent_ensure handed over, never another file */
	if (fd > 2 && fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) {
		ssize_t n = write(fd, "ok\n", 3);
		(void)n;
		close(fd);
	}
	unsetenv(AGENT_READY_ENV);
}

/* The last non-empty line the agent wrote to its log after offset. */
static void log_last_line(const char *path, off_t offset, char *out, size_t cap)
{
	char buf[AGENT_LOG_TAIL + 1];
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = 0;

	out[0] = '\0';
	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && st.st_size > offset) {
		off_t from = st.st_size - offset > AGENT_LOG_TAIL
				     ? st.st_size - AGENT_LOG_TAIL
				     : offset;
		n = pread(fd, buf, AGENT_LOG_TAIL, from);
	}
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	char *line = strrchr(buf, '\n');
	nv_pathf(out, cap, "%s", line ? line + 1 : buf);
}

/* Waits until the agent says it holds the lock, its program could not be
 * executed, or it exited without a word. Returns 0 (running, or still
 * starting after the timeout) or an error naming the cause. */
static int agent_wait_ready(int fd, const char *home, const char *exe,
			    const char *logpath, off_t log_start, nv_err *err)
{
	char said[64];
	size_t len = 0;
	double deadline = nv_deadline_after(AGENT_READY_TIMEOUT_S);

	for (;;) {
		struct pollfd p = {fd, POLLIN, 0};
		double left = deadline - nv_monotonic();
		if (left <= 0)
			return 0; /* slow to start: the next check sees it */
		int r = poll(&p, 1, (int)(left * 1000) + 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return 0;
		ssize_t n = read(fd, said + len, sizeof(said) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n > 0) {
			len += (size_t)n;
			said[len] = '\0';
			if (strstr(said, "ok\n"))
				return 0;
			if (len < sizeof(said) - 1)
				continue;
		}
		break; /* end of file: the program exited */
	}
	said[len] = '\0';
	int exec_errno = 0;
	if (sscanf(said, "exec %d", &exec_errno) == 1)
		return nv_err_set(err, NV_EBACKEND,
				  "install navette, set NAVETTE_BIN, or give "
				  "the runtime an agent_program (navette.h)",
				  "cannot start the agent: cannot execute %s: "
				  "%s",
				  exe, strerror(exec_errno));
	if (nv_agent_alive(home))
		return 0; /* another agent won the lock: it runs the jobs */
	char line[512];
	log_last_line(logpath, log_start, line, sizeof(line));
	return nv_err_set(err, NV_EBACKEND,
			  "the agent runs as `PROGRAM agent`: a host program "
			  "must answer it through navette_agent_main(), or "
			  "name an installed navette (agent_program, "
			  "NAVETTE_BIN); the job stays queued until an agent "
			  "starts",
			  "the agent did not start: `%s agent` exited (%s: "
			  "%s)",
			  exe, logpath, line[0] ? line : "nothing logged");
}

int nv_agent_ensure(const char *home, int *started, nv_err *err)
{
	char exe[PATH_CAP];
	char logpath[PATH_CAP];
	struct stat st;
	off_t log_start = 0;
	int ready[2];
	pid_t pid;
	int status;

	*started = 0;
	if (nv_mkdir_p(home, 0700, err) != 0)
		return err->code;
	if (nv_agent_alive(home))
		return 0;
	if (nv_agent_program(exe, sizeof(exe), err) != 0)
		return err->code;
	nv_pathf(logpath, sizeof(logpath), "%s/agent.log", home);
	if (stat(logpath, &st) == 0)
		log_start = st.st_size;
	if (pipe(ready) != 0)
		return nv_err_set_errno(err, NV_EBACKEND, errno, NULL,
					"cannot start the agent");
	/* both ends close on exec; the agent's end is kept open by hand,
	 * above stdio (which the child replaces) */
	for (int i = 0; i < 2; i++) {
		int fd = fcntl(ready[i], F_DUPFD_CLOEXEC, 3);
		close(ready[i]);
		ready[i] = fd;
	}
	if (ready[0] < 0 || ready[1] < 0) {
		if (ready[0] >= 0)
			close(ready[0]);
		if (ready[1] >= 0)
			close(ready[1]);
		return nv_err_set_errno(err, NV_EBACKEND, errno, NULL,
					"cannot start the agent");
	}
	/* built before the fork: the child only executes */
	char fdtext[40], hometext[PATH_CAP + 16];
	char *envp[AGENT_ENV_MAX];
	snprintf(fdtext, sizeof(fdtext), AGENT_READY_ENV "=%d", ready[1]);
	if (nv_pathf(hometext, sizeof(hometext), "NAVETTE_HOME=%s", home) !=
	    0) {
		close(ready[0]);
		close(ready[1]);
		return nv_err_set(err, NV_EINVAL, NULL, "home path too long");
	}
	char *extra[] = {fdtext, hometext, NULL};
	agent_env_build(envp, AGENT_ENV_MAX, extra);
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(ready[0]);
		close(ready[1]);
		return nv_err_set_errno(err, NV_EBACKEND, errno, NULL,
					"cannot start the agent");
	}
	if (pid == 0) {
		/* First child: a new session, then a grandchild so the agent
		 * is reparented to init and never a zombie of the CLI. */
		close(ready[0]);
		setsid();
		if (fork() != 0)
			_exit(0);
		int devnull = open("/dev/null", O_RDONLY);
		int logfd = open(logpath, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (devnull >= 0)
			dup2(devnull, STDIN_FILENO);
		if (logfd >= 0) {
			dup2(logfd, STDOUT_FILENO);
			dup2(logfd, STDERR_FILENO);
		}
		fcntl(ready[1], F_SETFD, 0);
		execle(exe, exe, "agent", "--quiet-if-running", (char *)NULL,
		       envp);
		char said[32];
		int n = snprintf(said, sizeof(said), "exec %d\n", errno);
		if (n > 0) {
			ssize_t w = write(ready[1], said, (size_t)n);
			(void)w;
		}
		_exit(127);
	}
	close(ready[1]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	int rc = agent_wait_ready(ready[0], home, exe, logpath, log_start, err);
	close(ready[0]);
	if (rc)
		return rc;
	*started = 1;
	return 0;
}

/* ---- helpers ----------------------------------------------------------- */

/* A phase of the timeline, by name, into the queue. */
static void queue_phase(agent *a, const job *j, const char *name)
{
	nv_err err;

	if (nv_jobdb_phase(a->queue, j->id, name, nv_now(), &err) != 0)
		agent_log("job %s: cannot record phase %s: %s", j->id, name,
			  err.message);
}

void agent_phase(agent *a, job *j, nv_record_phase phase)
{
	queue_phase(a, j, nv_record_phase_name(phase));
}

void agent_phase_end(agent *a, job *j, nv_record_state state)
{
	queue_phase(a, j, nv_record_state_name(state));
}

static job *job_new(const char *home, const char *id, const char *spec_json)
{
	job *j;
	nv_err err;

	/* the id becomes a folder that is wiped and reused: never one
	 * outside NAVETTE_HOME/jobs (the queue fails such rows itself) */
	if (nv_job_id_check(id, &err)) {
		agent_log("job not run: %s", err.message);
		return NULL;
	}
	j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	nv_pathf(j->id, sizeof(j->id), "%s", id);
	nv_pathf(j->dir, sizeof(j->dir), "%s/jobs/%s", home, id);
	j->spec = cJSON_Parse(spec_json ? spec_json : "");
	j->exit_code = -1;
	j->transfer =
		j->spec && cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(
				   j->spec, "transfer"));
	j->container =
		j->spec && cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(
				   j->spec, "container"));
	j->attempt = 1;
	j->attempts = cJSON_CreateArray();
	j->ckpt_restored = cJSON_CreateArray();
	j->ckpt_written = cJSON_CreateArray();
	agent_checkpoint_init(j);
	return j;
}

static void job_free(job *j)
{
	if (!j)
		return;
	cJSON_Delete(j->spec);
	cJSON_Delete(j->attempts);
	cJSON_Delete(j->ckpt_files);
	cJSON_Delete(j->ckpt_restored);
	cJSON_Delete(j->ckpt_written);
	free(j);
}

void agent_job_path(const job *j, const char *name, char *out, size_t cap)
{
	nv_pathf(out, cap, "%s/%s", j->dir, name);
}

/* ---- preparing and starting a job -------------------------------------- */

/* The sha256 that the run record at record_url (a job that ran before
 * this one) lists for its output `output`, into want (65 bytes). */
static int producer_sha256(const char *input, const char *from,
			   const char *record_url, const char *output,
			   char *want, nv_err *err)
{
	char root[NV_FILESTORE_PATH_MAX], key[NV_FILESTORE_KEY_MAX + 1];
	nv_filestore *store = NULL;
	nv_object_info info;
	char *text = NULL;
	size_t len = 0;
	cJSON *rec = NULL;
	const cJSON *o;
	int rc;

	if ((rc = nv_filestore_find(root, sizeof(root), key, sizeof(key),
				    record_url, err)) != 0 ||
	    (rc = nv_filestore_open(&store, root, 0, err)) != 0)
		return rc;
	rc = nv_filestore_read(store, key, NV_RECORD_MAX, &text, &len, &info,
			       err);
	nv_filestore_free(store);
	if (rc) {
		char why[sizeof(err->message)];
		snprintf(why, sizeof(why), "%s", err->message);
		return nv_err_set(err, NV_EREFUSED,
				  "see that job's outcome (navette status)",
				  "input '%s': the run record of job %s cannot "
				  "be read (%s)",
				  input, from, why);
	}
	rec = cJSON_ParseWithLength(text, len);
	free(text);
	rc = nv_err_set(err, NV_EREFUSED,
			"that job must write it under $NAVETTE_OUTPUTS "
			"(success.outputs makes its absence a failure of "
			"that job)",
			"input '%s': job %s published no output '%s'", input,
			from, output);
	cJSON_ArrayForEach(o, ofield(rec, "outputs"))
	{
		const char *name = sfield(o, "name");
		const char *sha = sfield(o, "sha256");
		if (name && sha && strcmp(name, output) == 0 &&
		    strlen(sha) == 64) {
			memcpy(want, sha, 65);
			rc = 0;
			break;
		}
	}
	cJSON_Delete(rec);
	return rc;
}

/* An input's name: NAME, or NAME/K for one of a list (navette.outputs),
 * each part of letters, digits, '.', '_' and '-', not starting with '.'. */
static int input_name_ok(const char *name)
{
	int parts = 1;
	const char *start = name;

	for (const char *c = name;; c++) {
		if (*c == '/' || *c == '\0') {
			if (c == start || *start == '.')
				return 0;
			if (*c == '\0')
				return 1;
			if (++parts > 2)
				return 0;
			start = c + 1;
		} else if (!isalnum((unsigned char)*c) && *c != '.' &&
			   *c != '_' && *c != '-') {
			return 0;
		}
	}
}

/* Makes the folders of listed inputs read-only, as the inputs folder. */
static void seal_input_folders(const cJSON *inputs, const char *dir)
{
	const cJSON *in;

	cJSON_ArrayForEach(in, inputs)
	{
		const char *name = sfield(in, "name");
		const char *slash = name ? strchr(name, '/') : NULL;
		char sub[PATH_CAP];

		if (!slash)
			continue;
		nv_pathf(sub, sizeof(sub), "%s/%.*s", dir, (int)(slash - name),
			 name);
		chmod(sub, 0555);
	}
}

static int stage_inputs(const job *j, nv_err *err)
{
	const cJSON *inputs = ofield(j->spec, "inputs");
	const cJSON *in;
	char dir[PATH_CAP];

	agent_job_path(j, "inputs", dir, sizeof(dir));
	if (nv_mkdir_p(dir, 0755, err) != 0)
		return err->code;
	cJSON_ArrayForEach(in, inputs)
	{
		const char *name = sfield(in, "name");
		const char *url = sfield(in, "url");
		const char *want = sfield(in, "sha256");
		const char *from = sfield(in, "from");
		char produced[65];
		char root[NV_FILESTORE_PATH_MAX], key[NV_FILESTORE_KEY_MAX + 1];
		char dest[PATH_CAP];
		nv_filestore *store = NULL;
		nv_object_info info;
		int rc;

		if (!name || !url || !input_name_ok(name))
			return nv_err_set(err, NV_EINVAL, NULL,
					  "bad input entry in the job spec");
		if (strncmp(url, "file://", 7) != 0)
			return nv_err_set(err, NV_EREFUSED,
					  "the local backend reads file:// "
					  "inputs; use a profile with S3 "
					  "storage for s3:// inputs",
					  "input '%s': unsupported URL %s",
					  name, url);
		if (from) {
			/* an output of a job that ran before: exactly the
			 * bytes its record lists */
			const char *record = sfield(in, "record");
			const char *output = sfield(in, "output");
			if (!record || !output ||
			    strncmp(record, "file://", 7) != 0)
				return nv_err_set(err, NV_EINVAL, NULL,
						  "bad input entry in the job "
						  "spec");
			if ((rc = producer_sha256(name, from, record, output,
						  produced, err)) != 0)
				return rc;
			want = produced;
		}
		if ((rc = nv_filestore_find(root, sizeof(root), key,
					    sizeof(key), url, err)) != 0)
			return rc;
		if (strchr(name, '/')) {
			/* one of a list (NAME/K): its folder first */
			char sub[PATH_CAP];
			nv_pathf(sub, sizeof(sub), "%s/%.*s", dir,
				 (int)(strchr(name, '/') - name), name);
			if (nv_mkdir_p(sub, 0755, err) != 0)
				return err->code;
		}
		if ((rc = nv_filestore_open(&store, root, 0, err)) != 0)
			return rc;
		nv_pathf(dest, sizeof(dest), "%s/%s", dir, name);
		rc = nv_filestore_get_file(store, key, dest, &info, err);
		nv_filestore_free(store);
		if (rc)
			return rc;
		if (want && strcmp(want, info.sha256) != 0)
			return nv_err_set(
				err, NV_EREFUSED,
				"the object changed after submission; "
				"submit the job again",
				"input '%s' has sha256 %s, the job was "
				"submitted with %s",
				name, info.sha256, want);
		chmod(dest, 0444);
	}
	seal_input_folders(inputs, dir);
	chmod(dir, 0555);
	return 0;
}

static int prepare(agent *a, job *j, nv_record_outcome *o)
{
	const char *image, *repo, *commit;
	char path[PATH_CAP];
	nv_git_repo *r = NULL;
	nv_err err;

	if (!j->spec || !(commit = sfield(j->spec, "commit")) ||
	    !(repo = sfield(j->spec, "repository_path"))) {
		nv_record_fail(o, NV_STATE_FAILED, NV_PHASE_ACCEPTED,
			       "submit again with this version of navette",
			       "the job spec is unreadable or incomplete");
		return -1;
	}
	/* (a later attempt's folder was emptied, its log kept) */
	if ((j->attempt == 1 && nv_remove_tree(j->dir, &err) != 0) ||
	    nv_mkdir_p(j->dir, 0700, &err) != 0) {
		nv_record_fail(o, NV_STATE_FAILED, NV_PHASE_ACCEPTED,
			       "check NAVETTE_HOME",
			       "cannot create the job folder: %s", err.message);
		return -1;
	}
	agent_phase(a, j, NV_PHASE_ACCEPTED);

	image = sfield(j->spec, "image");
	if (image && strcmp(image, "host") != 0 && !j->container) {
		nv_record_fail(
			o, NV_STATE_FAILED, NV_PHASE_IMAGE_READY,
			"submit again with this version of navette, which runs "
			"images through podman or docker",
			"the job declares the image %s but no container "
			"runtime",
			image);
		return -1;
	}
	/* a job on the host runs in a sandbox, or not at all */
	if (!j->container && a->sandbox.kind == SANDBOX_NONE) {
		agent_strv none;
		if (agent_sandbox_command(&a->sandbox, a->home, j, "", NULL,
					  &none, &err) != 0) {
			nv_record_fail(o, NV_STATE_FAILED, NV_PHASE_IMAGE_READY,
				       err.hint, "%s", err.message);
			return -1;
		}
		agent_strv_free(&none);
	}
	/* with a container, the launcher pulls the image and says so */
	if (!j->container)
		agent_phase(a, j, NV_PHASE_IMAGE_READY);

	if (j->transfer) {
		/* the launcher fetches code and inputs itself */
		const char *fp = sfield(j->spec, "redact_fingerprints");
		agent_job_path(j, "fingerprints", path, sizeof(path));
		if (fp && nv_write_file_atomic(path, fp, strlen(fp), 0600,
					       &err) != 0) {
			nv_record_fail(o, NV_STATE_FAILED, NV_PHASE_DATA_READY,
				       "check NAVETTE_HOME", "%s", err.message);
			return -1;
		}
		return 0;
	}
	agent_job_path(j, "workspace", path, sizeof(path));
	/* (a library's code: its cache, a bare repository) */
	if ((cJSON_IsTrue(ofield(j->spec, "repository_bare"))
		     ? nv_git_open_bare(&r, repo, &err)
		     : nv_git_open(&r, repo, &err)) != 0 ||
	    nv_git_export(r, commit, path, NULL, &err) != 0) {
		nv_git_free(r);
		nv_record_fail(
			o, NV_STATE_FAILED, NV_PHASE_DATA_READY,
			err.hint[0] ? err.hint
				    : "check that the commit is still in the "
				      "repository",
			"cannot export commit %.12s: %s", commit, err.message);
		return -1;
	}
	nv_git_free(r);
	if (stage_inputs(j, &err) != 0) {
		nv_record_fail(o, NV_STATE_FAILED, NV_PHASE_DATA_READY,
			       err.hint[0] ? err.hint : "check the input's URL",
			       "cannot stage inputs: %s", err.message);
		return -1;
	}
	/* The submitter's secrets as salted fingerprints, for the log
	 * filter (never the values). */
	const char *fp = sfield(j->spec, "redact_fingerprints");
	agent_job_path(j, "fingerprints", path, sizeof(path));
	if (fp && nv_write_file_atomic(path, fp, strlen(fp), 0600, &err) != 0) {
		nv_record_fail(o, NV_STATE_FAILED, NV_PHASE_DATA_READY,
			       "check NAVETTE_HOME", "%s", err.message);
		return -1;
	}
	agent_job_path(j, "outputs", path, sizeof(path));
	if (nv_mkdir_p(path, 0755, &err) != 0) {
		nv_record_fail(o, NV_STATE_FAILED, NV_PHASE_DATA_READY,
			       "check NAVETTE_HOME", "%s", err.message);
		return -1;
	}
	if (agent_checkpoint_restore(j, &err) != 0) {
		nv_record_fail(o, NV_STATE_FAILED, NV_PHASE_DATA_READY,
			       err.hint[0] ? err.hint
					   : "check the output store: the "
					     "job's " NV_RECORD_CHECKPOINT
					     "/ folder there",
			       "cannot restore the checkpoint: %s",
			       err.message);
		return -1;
	}
	if (!j->container) /* reported by the launcher after its pull */
		agent_phase(a, j, NV_PHASE_DATA_READY);
	return 0;
}

/* The launcher's pid and start time, kept in the job folder, so that an
 * agent adopting the job after this one died tells the launcher from a
 * later process given the same pid. */
static void launcher_identity_write(job *j)
{
	char path[PATH_CAP], text[64];
	nv_err err;

	if (nv_proc_start_time(j->pid, j->start_time, sizeof(j->start_time)) !=
	    0)
		return;
	snprintf(text, sizeof(text), "%ld %s\n", (long)j->pid, j->start_time);
	agent_job_path(j, "launcher.pid", path, sizeof(path));
	if (nv_write_file_atomic(path, text, strlen(text), 0600, &err) != 0)
		agent_log("job %s: %s", j->id, err.message);
}

static void launcher_identity_read(job *j)
{
	char path[PATH_CAP], start[32];
	char *text = NULL;
	size_t len;
	long pid = 0;
	nv_err err;

	j->start_time[0] = '\0';
	agent_job_path(j, "launcher.pid", path, sizeof(path));
	if (nv_read_file(&text, &len, path, 64, &err) != 0)
		return;
	if (sscanf(text, "%ld %31s", &pid, start) == 2 && pid == (long)j->pid)
		nv_pathf(j->start_time, sizeof(j->start_time), "%s", start);
	free(text);
}

/* The job's launcher into path: the one rendered when the job was
 * submitted (spec.launcher), or, for a job queued without one, rendered
 * here from the spec. */
static int write_launcher(const job *j, const char *path, nv_record_outcome *o)
{
	const char *given = sfield(j->spec, "launcher");
	nv_buf script;
	nv_err err;
	int rc;

	if (given && given[0]) {
		rc = nv_write_file_atomic(path, given, strlen(given), 0700,
					  &err);
	} else {
		nv_buf_init(&script, NV_LAUNCHER_MAX);
		if (nv_launcher_script(j->spec, &script, &err) != 0) {
			nv_buf_free(&script);
			nv_record_fail(o, NV_STATE_FAILED, NV_PHASE_ACCEPTED,
				       err.hint, "%s", err.message);
			return -1;
		}
		rc = nv_write_file_atomic(path, script.data, script.len, 0700,
					  &err);
		nv_buf_free(&script);
	}
	if (rc) {
		nv_record_fail(o, NV_STATE_FAILED, NV_PHASE_DATA_READY,
			       "check NAVETTE_HOME", "%s", err.message);
		return -1;
	}
	return 0;
}

/* In the child: the launcher gets its own process group (cancel kills the
 * whole group) and a small, known environment. A job in an image: the
 * launcher drives the container runtime with what the agent has of
 * launcher_env_names. A job on the host: argv (its sandbox) and envp
 * (agent_job_env), built before the fork; bwrap's complaints go to the
 * job folder's sandbox.log. */
__attribute__((noreturn)) static void launcher_exec(const job *j,
						    const char *path,
						    char *const *argv,
						    char *const *host_envp)
{
	const char *const *keep = launcher_env_names;
	char *envp[24];
	int n = 0;
	static char store[16][PATH_CAP];

	setpgid(0, 0);
	int devnull = open("/dev/null", O_RDWR);
	if (devnull >= 0) {
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
	}
	if (argv) {
		char log[PATH_CAP];
		agent_job_path(j, AGENT_SANDBOX_LOG, log, sizeof(log));
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
			      0600);
		if (fd >= 0)
			dup2(fd, 2);
		execve(argv[0], argv, host_envp);
		_exit(127);
	}
	for (int i = 0; keep[i] && n < 16; i++) {
		const char *v = getenv(keep[i]);
		if (!v && strcmp(keep[i], "PATH") == 0)
			v = "/usr/local/bin:/usr/bin:/bin";
		if (!v)
			continue;
		nv_pathf(store[n], PATH_CAP, "%s=%s", keep[i], v);
		envp[n] = store[n];
		n++;
	}
	static char jobdir[PATH_CAP + 32];
	nv_pathf(jobdir, sizeof(jobdir), "NAVETTE_JOB_DIR=%s", j->dir);
	envp[n++] = jobdir;
	static char exe[PATH_CAP], redact[PATH_CAP + 32];
	if (executable_path(exe, sizeof(exe)) == 0 &&
	    nv_pathf(redact, sizeof(redact), "NAVETTE_REDACT=%s", exe) == 0)
		envp[n++] = redact;
	static char fingerprints[PATH_CAP + 40];
	if (nv_pathf(fingerprints, sizeof(fingerprints),
		     "NAVETTE_REDACT_FINGERPRINTS=%s/fingerprints",
		     j->dir) == 0)
		envp[n++] = fingerprints;
	envp[n] = NULL;
	execle("/bin/sh", "sh", path, (char *)NULL, envp);
	_exit(127);
}

/* A host job's sandboxed command and environment into argv and env; o
 * says why not. */
static int host_command(agent *a, job *j, const char *path, agent_strv *argv,
			agent_strv *env, nv_record_outcome *o)
{
	char exe[PATH_CAP], home[PATH_CAP];
	nv_err err;

	if (executable_path(exe, sizeof(exe)) != 0)
		exe[0] = '\0';
	agent_job_path(j, "home", home, sizeof(home));
	if (nv_mkdir_p(home, 0700, &err) != 0) {
		nv_record_fail(o, NV_STATE_FAILED, NV_PHASE_RUNNING,
			       "check NAVETTE_HOME", "%s", err.message);
		return -1;
	}
	if (agent_sandbox_command(&a->sandbox, a->home, j, path, exe, argv,
				  &err) != 0) {
		nv_record_fail(o, NV_STATE_FAILED, NV_PHASE_RUNNING, err.hint,
			       "%s", err.message);
		return -1;
	}
	if (agent_job_env(j, exe, env) != 0) {
		agent_strv_free(argv);
		agent_strv_free(env);
		nv_record_fail(o, NV_STATE_FAILED, NV_PHASE_RUNNING,
			       "check NAVETTE_HOME's path",
			       "the job's environment is too large");
		return -1;
	}
	return 0;
}

static int start(agent *a, job *j, nv_record_outcome *o)
{
	char path[PATH_CAP];
	nv_err err;
	const cJSON *res = ofield(j->spec, "resources");
	const cJSON *tl = res ? ofield(res, "time_limit") : NULL;
	agent_strv argv = {0}, env = {0};

	/* a job whose secrets are gone does not run without them */
	if (agent_secrets_check(j, &err) != 0) {
		nv_record_fail(o, NV_STATE_FAILED, NV_PHASE_DATA_READY,
			       err.hint, "%s", err.message);
		return -1;
	}
	agent_job_path(j, "launcher.sh", path, sizeof(path));
	if (write_launcher(j, path, o) != 0)
		return -1;
	if (!j->container && host_command(a, j, path, &argv, &env, o) != 0)
		return -1;
	j->time_limit = cJSON_IsNumber(tl) ? tl->valuedouble : 0;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		agent_strv_free(&argv);
		agent_strv_free(&env);
		nv_record_fail(o, NV_STATE_FAILED, NV_PHASE_RUNNING,
			       "the machine is out of processes",
			       "cannot start the launcher: %s",
			       strerror(errno));
		return -1;
	}
	if (pid == 0)
		launcher_exec(j, path, argv.items, env.items);
	agent_strv_free(&argv);
	agent_strv_free(&env);
	setpgid(pid, pid);
	j->pid = pid;
	j->own_child = 1;
	j->started = nv_monotonic();
	j->attempt_started = nv_now();
	j->ckpt_saved = j->started;
	launcher_identity_write(j);
	if (nv_jobdb_set_pid(a->queue, j->id, (long)pid, &err) != 0)
		agent_log("job %s: %s", j->id, err.message);
	agent_log("job %s: launcher started, pid %ld%s", j->id, (long)pid,
		  j->container                     ? ""
		  : a->sandbox.kind == SANDBOX_OFF ? " (no sandbox)"
						   : " (sandboxed)");
	return 0;
}

/* ---- following running jobs -------------------------------------------- */

/* Reads new lines of the status file: phases, then "exit N". */
static void read_status(agent *a, job *j)
{
	char path[PATH_CAP];
	char buf[4096];
	nv_record_phase ph;
	FILE *f;

	agent_job_path(j, "status", path, sizeof(path));
	f = fopen(path, "r");
	if (!f)
		return;
	if (fseek(f, j->status_read, SEEK_SET) != 0) {
		fclose(f);
		return;
	}
	while (j->status_read < STATUS_MAX && fgets(buf, sizeof(buf), f)) {
		size_t len = strlen(buf);
		if (len == 0 || buf[len - 1] != '\n')
			break; /* a line still being written */
		j->status_read += (long)len;
		buf[len - 1] = '\0';
		if (strncmp(buf, "exit ", 5) == 0) {
			j->have_exit = 1;
			j->exit_code = atoi(buf + 5);
		} else if (nv_record_phase_find(buf, &ph) == 0) {
			/* the agent says the others itself (accepted), or
			 * after publishing (outputs_published) */
			if (ph == NV_PHASE_IMAGE_READY ||
			    ph == NV_PHASE_DATA_READY ||
			    ph == NV_PHASE_RUNNING ||
			    ph == NV_PHASE_LOGS_VISIBLE ||
			    (j->transfer && ph == NV_PHASE_OUTPUTS_PUBLISHED))
				agent_phase(a, j, ph);
		} else if (strncmp(buf, "image_failed ", 13) == 0) {
			/* cut to what the slot holds */
			snprintf(j->image_failed, sizeof(j->image_failed),
				 "%.500s", buf + 13);
		} else if (strncmp(buf, "log_cut ", 8) == 0) {
			snprintf(j->log_cut, sizeof(j->log_cut), "%.200s",
				 buf + 8);
		} else if (j->transfer && strncmp(buf, "final ", 6) == 0) {
			j->final_seen = 1;
		}
	}
	fclose(f);
}

/* The exit status from the launcher's own file (status.code, written
 * whole once the command ended): a status file cut or emptied while the
 * job ran loses its "exit N" line, not the status. An older launcher
 * writes none: the status file's line stands. */
static void read_exit_code(job *j)
{
	char path[PATH_CAP], buf[32], *end;
	FILE *f;
	long code;

	agent_job_path(j, "status.code", path, sizeof(path));
	f = fopen(path, "r");
	if (!f)
		return;
	if (fgets(buf, sizeof(buf), f)) {
		code = strtol(buf, &end, 10);
		if (end != buf && *end == '\n' && code >= 0 && code <= 255) {
			j->have_exit = 1;
			j->exit_code = (int)code;
		}
	}
	fclose(f);
}

static int process_gone(job *j)
{
	if (j->own_child) {
		int status;
		if (!j->reaped) {
			pid_t r = waitpid(j->pid, &status, WNOHANG);
			if (r == j->pid || (r < 0 && errno == ECHILD))
				j->reaped = 1;
		}
		/* The group may outlive the launcher: wait for it too. */
		return j->reaped && !nv_proc_group_alive(j->pid);
	}
	/* Adopted: the launcher's pid may name a later process by now. While
	 * any process of its group lives, the system gives that pid to no
	 * other, so a later process means the whole group ended. */
	char now[32];
	if (j->start_time[0] &&
	    nv_proc_start_time(j->pid, now, sizeof(now)) == 0 &&
	    strcmp(now, j->start_time) != 0)
		return 1;
	/* the launcher leads its group: a zombie launcher (killed, not yet
	 * reaped by init) with no live process left has ended */
	return !nv_proc_group_alive(j->pid);
}

static void signal_group(job *j, int sig)
{
	if (j->pid > 0 && kill(-j->pid, sig) != 0)
		kill(j->pid, sig);
}

/* What a node launcher puts in its record when stopped (it cannot tell a
 * cancel from a time limit by the signal alone). */
static void stop_reason(job *j, const char *why)
{
	char path[PATH_CAP];
	nv_err err;

	agent_job_path(j, "stop-reason", path, sizeof(path));
	if (j->transfer &&
	    nv_write_file_atomic(path, why, strlen(why), 0600, &err) != 0)
		agent_log("job %s: %s", j->id, err.message);
}

/* The next attempt of j, in an emptied folder; o says why it could not
 * start. */
static int retry(agent *a, job *j, nv_record_outcome *o)
{
	nv_err err;

	nv_record_outcome_init(o);
	j->pid = 0;
	j->own_child = j->reaped = 0;
	j->killed = KILL_NONE;
	j->term_sent = j->kill9_sent = 0;
	j->status_read = 0;
	j->have_exit = 0;
	j->exit_code = -1;
	j->final_seen = j->disk_full = 0;
	j->image_failed[0] = '\0';
	j->log_cut[0] = '\0';
	if (agent_retry_clear(j, &err) != 0) {
		nv_record_fail(o, NV_STATE_FAILED, NV_PHASE_ACCEPTED,
			       "check NAVETTE_HOME",
			       "cannot empty the job folder for attempt %d: %s",
			       j->attempt, err.message);
		return -1;
	}
	return prepare(a, j, o) != 0 || start(a, j, o) != 0 ? -1 : 0;
}

static void follow(agent *a, job *j, int *done)
{
	int requested = 0;
	nv_err err;

	*done = 0;
	read_status(a, j);
	/* (a cancel while a time limit stops the job is a cancel too: the
	 * job ends cancelled, and a cancel is never retried) */
	if ((!j->killed || j->killed == KILL_TIMEOUT) &&
	    nv_jobdb_cancel_requested(a->queue, j->id, &requested, &err) == 0 &&
	    requested) {
		int stopping = j->killed != KILL_NONE;

		j->killed = KILL_CANCEL;
		stop_reason(j, "cancelled while running");
		if (!stopping) {
			j->kill_sent = nv_monotonic();
			signal_group(j, SIGTERM);
		}
		agent_log("job %s: cancel requested, %s", j->id,
			  stopping ? "while its time limit stops it"
				   : "SIGTERM sent");
	}
	if (!j->killed && j->time_limit > 0 &&
	    nv_monotonic() - j->started > j->time_limit) {
		j->killed = KILL_TIMEOUT;
		j->kill_sent = nv_monotonic();
		{
			char why[128];
			snprintf(why, sizeof(why),
				 "the time limit of %.0f s was reached",
				 j->time_limit);
			stop_reason(j, why);
		}
		signal_group(j, SIGTERM);
		agent_log("job %s: time limit reached, SIGTERM sent", j->id);
	}
	if (j->killed && !j->kill9_sent &&
	    nv_monotonic() - j->kill_sent >
		    (j->transfer ? KILL_GRACE_TRANSFER_S : KILL_GRACE_S)) {
		j->kill9_sent = 1;
		signal_group(j, SIGKILL);
	}
	if (!process_gone(j)) {
		agent_checkpoint_tick(j, 0);
		return;
	}
	read_status(a, j);
	read_exit_code(j);
	agent_checkpoint_tick(j, 1); /* what the command left */

	nv_record_outcome o;
	char why[512];
	nv_record_outcome_init(&o);
	j->disk_full = agent_disk_nearly_full(j->dir);
	if (j->killed == KILL_CANCEL) {
		nv_record_fail(&o, NV_STATE_CANCELLED, NV_PHASE_RUNNING,
			       "submit it again with navette run",
			       "cancelled while running");
	} else if (j->killed == KILL_TIMEOUT) {
		nv_record_fail(&o, NV_STATE_FAILED, NV_PHASE_RUNNING,
			       "raise resources.time_limit, or make the "
			       "command faster",
			       "the time limit of %.0f s was reached",
			       j->time_limit);
	} else if (j->image_failed[0]) {
		nv_record_fail(
			&o, NV_STATE_FAILED, NV_PHASE_IMAGE_READY,
			"check the image reference and that this machine can "
			"reach its registry (network, credentials)",
			"%s", j->image_failed);
	} else if (!j->have_exit && !j->own_child &&
		   !(j->transfer && j->final_seen)) {
		/* adopted: the agent that started it died, and the launcher
		 * ended without a word (killed with it, or the machine
		 * restarted) */
		nv_record_fail(
			&o, NV_STATE_FAILED, NV_PHASE_RUNNING,
			"the job's processes were stopped while no agent "
			"watched "
			"them; submit the job again with navette run",
			"the agent that ran the job stopped, and the job's "
			"launcher ended without reporting an exit status");
	} else if (!j->have_exit && !(j->transfer && j->final_seen) &&
		   !j->container && j->status_read == 0 &&
		   agent_sandbox_failure(j, why, sizeof(why))) {
		nv_record_fail(&o, NV_STATE_FAILED, NV_PHASE_RUNNING,
			       "bwrap needs user namespaces: check sysctl "
			       "user.max_user_namespaces (and, on Ubuntu, "
			       "kernel.apparmor_restrict_unprivileged_userns); "
			       "NAVETTE_LOCAL_SANDBOX=off in the agent's "
			       "environment runs jobs without a sandbox",
			       "the job's sandbox did not start: %s", why);
	} else if (!j->have_exit && !(j->transfer && j->final_seen)) {
		/* (a node launcher that ended says why in its record) */
		nv_record_fail(&o, NV_STATE_FAILED, NV_PHASE_RUNNING,
			       "the process was killed from outside navette; "
			       "check the "
			       "machine's memory (OOM killer) and the log",
			       "the launcher stopped without reporting an exit "
			       "status");
	}
	if (agent_retry_wanted(a, j, &o) && retry(a, j, &o) == 0)
		return; /* the next attempt runs */
	agent_finalize(a, j, &o);
	*done = 1;
}

/* ---- the loop ---------------------------------------------------------- */

/* A job the agent holds: ended before it ran (finalized and freed), or
 * running (watched by the loop until it ends). */
static void job_ended_early(agent *a, job *j, nv_record_outcome *o)
{
	agent_finalize(a, j, o);
	job_free(j);
}

static void job_running(agent *a, job *j)
{
	j->next = a->jobs;
	a->jobs = j;
	a->running++;
}

static void adopt(const char *id, const char *spec, long pid, void *payload)
{
	agent *a = payload;
	job *j = job_new(a->home, id, spec);

	if (!j)
		return;
	j->pid = (pid_t)pid;
	j->own_child = 0;
	j->started = nv_monotonic();
	j->ckpt_saved = j->started;
	/* (when it started, the agent that died knew) */
	j->attempt_started = nv_now();
	launcher_identity_read(j);
	agent_attempts_load(j);
	if (pid <= 0) {
		/* Claimed but never started: the agent died while preparing.*/
		nv_record_outcome o;
		nv_record_outcome_init(&o);
		nv_record_fail(&o, NV_STATE_FAILED, NV_PHASE_ACCEPTED,
			       "submit the job again",
			       "the agent stopped before the job started");
		job_ended_early(a, j, &o);
		return;
	}
	job_running(a, j);
	agent_log("job %s: adopted (pid %ld)", id, pid);
}

static void take_jobs(agent *a)
{
	while (a->running < a->slots) {
		char *id = NULL, *spec = NULL;
		nv_err err;
		if (nv_jobdb_claim(a->queue, &id, &spec, &err) != 0) {
			agent_log("cannot read the queue: %s", err.message);
			return;
		}
		if (!id)
			return;
		job *j = job_new(a->home, id, spec);
		free(id);
		free(spec);
		if (!j)
			return;
		nv_record_outcome o;
		nv_record_outcome_init(&o);
		agent_log("job %s: accepted", j->id);
		if (prepare(a, j, &o) != 0 || start(a, j, &o) != 0) {
			job_ended_early(a, j, &o);
			continue;
		}
		job_running(a, j);
	}
}

static void follow_all(agent *a)
{
	job **pp = &a->jobs;

	while (*pp) {
		job *j = *pp;
		int done;
		follow(a, j, &done);
		if (done) {
			*pp = j->next;
			job_free(j);
			a->running--;
		} else {
			pp = &j->next;
		}
	}
}

static int work_waiting(agent *a)
{
	int queued = 0, running = 0;
	nv_err err;
	if (nv_jobdb_active(a->queue, &queued, &running, &err) != 0)
		return 1;
	return queued > 0;
}

/* The lock file holds the agent's pid, for people and tests; the lock,
 * not the pid, says whether the agent lives (a pid can be reused). */
static void lock_write_pid(int lockfd)
{
	char text[32];
	int n = snprintf(text, sizeof(text), "%ld\n", (long)getpid());

	if (ftruncate(lockfd, 0) != 0 ||
	    pwrite(lockfd, text, (size_t)n, 0) != (ssize_t)n)
		agent_log("cannot write the pid into agent.lock: %s",
			  strerror(errno));
}

/* `navette agent stop` sends SIGTERM: the loop ends at its next turn,
 * the jobs it runs go on (the next agent adopts them). */
static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* HOME/agent.json: who runs and with which sandbox, for `navette agent
 * status` (the lock says whether it still runs). */
static void info_write(const agent *a, const char *started)
{
	char path[PATH_CAP];
	nv_err err;
	cJSON *o = cJSON_CreateObject();
	char *text;

	if (!o)
		return;
	cJSON_AddNumberToObject(o, "pid", (double)getpid());
	cJSON_AddStringToObject(o, "started", started);
	cJSON_AddStringToObject(o, "sandbox",
				agent_sandbox_describe(&a->sandbox));
	text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	nv_pathf(path, sizeof(path), "%s/" NV_AGENT_INFO_FILE, a->home);
	if (text &&
	    nv_write_file_atomic(path, text, strlen(text), 0600, &err) != 0)
		agent_log("%s", err.message);
	cJSON_free(text);
}

int nv_agent_run(const char *home, nv_err *err)
{
	agent a;
	int lockfd;
	double idle_limit = AGENT_IDLE_DEFAULT, idle_since;
	const char *env;
	struct timespec tick = {0, AGENT_POLL_NS};

	memset(&a, 0, sizeof(a));
	nv_pathf(a.home, sizeof(a.home), "%s", home);
	a.slots = AGENT_SLOTS_DEFAULT;
	if ((env = getenv("NAVETTE_AGENT_IDLE")) && atof(env) > 0)
		idle_limit = atof(env);
	if ((env = getenv("NAVETTE_AGENT_SLOTS")) && atoi(env) > 0)
		a.slots = atoi(env);
	if (nv_mkdir_p(home, 0700, err) != 0)
		return err->code;
	lockfd = lock_open(home);
	if (lockfd < 0)
		return nv_err_set_errno(err, NV_EIO, errno,
					"check NAVETTE_HOME",
					"cannot open the agent lock");
	if (flock(lockfd, LOCK_EX | LOCK_NB) != 0) {
		close(lockfd);
		return nv_err_set(err, NV_EREFUSED, NULL,
				  "another agent is running for %s", home);
	}
	if (nv_jobdb_open(&a.queue, home, err) != 0) {
		close(lockfd);
		return err->code;
	}
	lock_write_pid(lockfd);
	signal(SIGPIPE, SIG_IGN);
	{
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_stop;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGTERM, &sa, NULL);
	}
	agent_log("agent started for %s", home);
	agent_sandbox_detect(&a.sandbox);
	agent_log("jobs on the host run in a sandbox: %s%s",
		  agent_sandbox_describe(&a.sandbox),
		  a.sandbox.kind == SANDBOX_NONE
			  ? " (install bubblewrap: they are refused)"
			  : "");
	{
		char started[32];
		nv_iso8601(nv_now(), started);
		info_write(&a, started);
	}
	agent_reserve_make(&a);
	if (nv_proc_deny_inspection() != 0)
		agent_log("cannot keep other processes out of the agent: %s",
			  strerror(errno));
	/* The jobs a previous agent left: each is adopted or ended before
	 * the starter hears "ready", so a read that started this agent
	 * shows where they are now. */
	nv_jobdb_each_running(a.queue, adopt, &a, err);
	follow_all(&a);
	agent_ready();

	idle_since = nv_monotonic();
	while (!stop_requested) {
		follow_all(&a);
		take_jobs(&a);
		if (a.running > 0) {
			idle_since = nv_monotonic();
		} else if (nv_monotonic() - idle_since > idle_limit) {
			/* Release, then look once more: a submitter that saw
			 * the lock held did not start another agent. */
			flock(lockfd, LOCK_UN);
			if (!work_waiting(&a) ||
			    flock(lockfd, LOCK_EX | LOCK_NB) != 0)
				break;
			idle_since = nv_monotonic();
		}
		nanosleep(&tick, NULL);
	}
	if (stop_requested)
		agent_log("agent stopped on request (navette agent stop), %d "
			  "job(s) left running for the next agent",
			  a.running);
	else
		agent_log("agent idle, stopping");
	{
		char path[PATH_CAP];
		nv_pathf(path, sizeof(path), "%s/" NV_AGENT_INFO_FILE, home);
		unlink(path);
	}
	while (a.jobs) {
		job *next = a.jobs->next;
		job_free(a.jobs);
		a.jobs = next;
	}
	nv_jobdb_close(a.queue);
	close(lockfd);
	return 0;
}

/* agent.h: the `navette agent` command (navette_agent_main). */
#include "core/output.h"
#include "navette.h"

/* An agent started by hand (`navette agent` in a shell) starts again with
 * the minimal environment nv_agent_ensure gives: the exec also drops the
 * memory that held the rest. Where it cannot, the rest is only unset. */
static void agent_restart_minimal(const char *home, int quiet_if_running)
{
	char exe[PATH_CAP], hometext[PATH_CAP + 16];
	char *envp[AGENT_ENV_MAX], *extra[] = {hometext, NULL};
	char name[256];

	if (agent_env_is_minimal())
		return;
	if (executable_path(exe, sizeof(exe)) == 0 &&
	    nv_pathf(hometext, sizeof(hometext), "NAVETTE_HOME=%s", home) ==
		    0) {
		agent_env_build(envp, AGENT_ENV_MAX, extra);
		fflush(NULL);
		execve(exe,
		       (char *[]){exe, "agent",
				  quiet_if_running ? "--quiet-if-running"
						   : NULL,
				  NULL},
		       envp);
	}
	for (char **e = environ; e && *e;) {
		const char *eq = strchr(*e, '=');
		size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
		if (agent_env_allowed(*e) || len == 0 || len >= sizeof(name)) {
			e++;
			continue;
		}
		memcpy(name, *e, len);
		name[len] = '\0';
		/* removed: environ shifted, *e is the next entry */
		if (unsetenv(name) != 0 ||
		    (*e && strncmp(*e, name, len) == 0 && (*e)[len] == '='))
			e++;
	}
}

int navette_agent(const char *home, int quiet_if_running)
{
	nv_err err;
	int rc;

	agent_restart_minimal(home, quiet_if_running);
	rc = nv_agent_run(home, &err);

	if (rc == NV_EREFUSED) {
		if (!quiet_if_running)
			nv_out_printf(NV_OUT_STDERR, "navette agent: %s\n",
				      err.message);
		return quiet_if_running ? NAVETTE_OK : NAVETTE_REFUSED;
	}
	if (rc) {
		nv_out_printf(NV_OUT_STDERR, "navette agent: %s\n",
			      err.message);
		return nv_err_exit_status(rc);
	}
	return NAVETTE_OK;
}
