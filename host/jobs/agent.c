/* The local agent (see agent.h). One loop, polling every 100 ms: it claims
 * queued jobs, runs each job's launcher in its own process group, follows
 * the phases the launcher writes to its status file, enforces the time
 * limit and cancels, and finalizes each job: success condition, atomic
 * publication of outputs under the job's prefix, log, run record. The
 * exit status is read from the status file, not from waitpid, so an agent
 * restarted while jobs run can adopt them. */
#include "jobs/agent.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
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
#include "core/process.h"
#include "core/utf8.h"
#include "creds/redact.h"
#include "git/git.h"
#include "jobs/launcher.h"
#include "jobs/queue.h"
#include "storage/filestore.h"

#define AGENT_SLOTS_DEFAULT 4
#define AGENT_IDLE_DEFAULT  30.0
#define AGENT_POLL_NS       100000000L
#define KILL_GRACE_S        5.0
/* a remote launcher publishes its log and record after a TERM */
#define KILL_GRACE_REMOTE_S 30.0
#define STATUS_MAX          65536
#define RECORD_MAX          ((size_t)4 * 1024 * 1024)
#define LOG_MAX_DEFAULT     ((long long)64 * 1024 * 1024)
#define PATH_CAP            4200

enum kill_reason { KILL_NONE, KILL_CANCEL, KILL_TIMEOUT };

typedef struct job {
	char id[65];
	char dir[PATH_CAP];
	cJSON *spec;
	pid_t pid;
	char start_time[32]; /* the launcher's (process.h); "" unknown */
	int own_child;       /* started by this agent: reaped with waitpid */
	int reaped;
	double started;
	double time_limit; /* 0: none */
	enum kill_reason killed;
	double kill_sent;
	int term_sent, kill9_sent;
	long status_read; /* bytes of the status file already handled */
	int have_exit;
	int exit_code;
	/* S3 storage: the launcher fetches, publishes and writes the run
	 * record itself (the agent holds no storage key) */
	int remote;
	int final_seen;
	int container;          /* runs in an image, through a runtime */
	char image_failed[512]; /* why the launcher could not pull it */
	struct job *next;
} job;

typedef struct agent {
	char home[PATH_CAP];
	nv_queue *queue;
	job *jobs;
	int running;
	int slots;
} agent;

static void agent_log(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/* The agent's own log passes the redactor like every other sink. */
static void agent_log(const char *fmt, ...)
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

/* The agent program (agent_program.c); the launcher's redact-stream is
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
	"NAVETTE_LAZY_TRACE", "NAVETTE_FAULT", "NAVETTE_AGENT_READY_FD", NULL};

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

static const char *sfield(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const cJSON *ofield(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

static void phase(agent *a, job *j, const char *name)
{
	nv_err err;
	if (nv_queue_phase(a->queue, j->id, name, nv_now(), &err) != 0)
		agent_log("job %s: cannot record phase %s: %s", j->id, name,
			  err.message);
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
	j->remote = j->spec && cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(
				       j->spec, "transfer"));
	j->container =
		j->spec && cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(
				   j->spec, "container"));
	return j;
}

static void job_free(job *j)
{
	if (!j)
		return;
	cJSON_Delete(j->spec);
	free(j);
}

static void job_path(const job *j, const char *name, char *out, size_t cap)
{
	nv_pathf(out, cap, "%s/%s", j->dir, name);
}

/* ---- finalizing: success condition, publication, run record ----------- */

typedef struct outcome {
	const char *state; /* succeeded / failed / cancelled */
	const char *phase; /* where it failed */
	char reason[1024];
	char hint[512];
	int disk_full; /* NAVETTE_HOME's disk was full when the job ended */
} outcome;

/* A job that failed on a disk that is now (nearly) full says so: its log
 * or outputs were cut short there, whatever the command's own error. */
static int disk_nearly_full(const char *dir)
{
	struct statvfs st;

	return statvfs(dir, &st) == 0 &&
	       (unsigned long long)st.f_bavail * st.f_frsize < 256 * 1024;
}

static void disk_full_note(const job *j, outcome *o)
{
	size_t n;

	if (strcmp(o->state, "failed") != 0 ||
	    !(o->disk_full || disk_nearly_full(j->dir)))
		return;
	n = strlen(o->reason);
	if (!strstr(o->reason, "No space left") && n < sizeof(o->reason))
		snprintf(o->reason + n, sizeof(o->reason) - n,
			 " (the disk of NAVETTE_HOME was full)");
	snprintf(o->hint, sizeof(o->hint),
		 "free space on the disk of NAVETTE_HOME (%.300s), then run "
		 "the job again",
		 j->dir);
}

/* The last phase of a timeline names how it ended: succeeded, failed or
 * cancelled (what `status` and `watch` show last). */
static const char *final_phase(const outcome *o)
{
	if (strcmp(o->state, "succeeded") == 0)
		return "succeeded";
	return strcmp(o->state, "cancelled") == 0 ? "cancelled" : "failed";
}

static void fail(outcome *o, const char *state, const char *ph,
		 const char *hint, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static void fail(outcome *o, const char *state, const char *ph,
		 const char *hint, const char *fmt, ...)
{
	va_list ap;

	if (strcmp(o->state, "succeeded") != 0)
		return; /* keep the first failure */
	o->state = state;
	o->phase = ph;
	va_start(ap, fmt);
	vsnprintf(o->reason, sizeof(o->reason), fmt, ap);
	va_end(ap);
	snprintf(o->hint, sizeof(o->hint), "%s", hint ? hint : "");
}

static int exit_code_ok(const cJSON *spec, int code)
{
	const cJSON *success = ofield(spec, "success");
	const cJSON *codes = success ? ofield(success, "exit_codes") : NULL;
	const cJSON *c;

	if (!cJSON_IsArray(codes) || cJSON_GetArraySize(codes) == 0)
		return code == 0;
	cJSON_ArrayForEach(c,
			   codes) if (cJSON_IsNumber(c) &&
				      c->valuedouble == (double)code) return 1;
	return 0;
}

/* Collects the regular files under dir (relative paths, sorted by the
 * walk). A symlink or special file among outputs is refused: what is
 * published must be what the job wrote. */
typedef struct file_list {
	char **paths;
	size_t count, cap;
	char bad[1024];
} file_list;

static int list_add(file_list *l, const char *rel)
{
	if (l->count == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		char **p = realloc(l->paths, cap * sizeof(char *));
		if (!p)
			return -1;
		l->paths = p;
		l->cap = cap;
	}
	l->paths[l->count] = strdup(rel);
	if (!l->paths[l->count])
		return -1;
	l->count++;
	return 0;
}

static void list_free(file_list *l)
{
	for (size_t i = 0; i < l->count; i++)
		free(l->paths[i]);
	free(l->paths);
	memset(l, 0, sizeof(*l));
}

static int walk_outputs(const char *root, const char *rel, file_list *l,
			int depth)
{
	char path[PATH_CAP];
	DIR *d;
	struct dirent *e;

	if (depth > 64) {
		snprintf(l->bad, sizeof(l->bad), "%s: folders nested too deep",
			 rel);
		return -1;
	}
	nv_pathf(path, sizeof(path), "%s%s%s", root, rel[0] ? "/" : "", rel);
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char child[PATH_CAP], full[PATH_CAP];
		struct stat st;
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		/* a name that is not UTF-8 would make the run record invalid
		 * JSON (and no store shows it the same way twice) */
		size_t bad_at =
			nv_utf8_invalid_at(e->d_name, strlen(e->d_name));
		if (bad_at != NV_UTF8_VALID) {
			char shown[400];
			nv_utf8_show(shown, sizeof(shown), e->d_name,
				     strlen(e->d_name));
			snprintf(l->bad, sizeof(l->bad),
				 "output name '%s%s%s' is not UTF-8 text (byte "
				 "0x%02x at offset %zu): name outputs in UTF-8",
				 rel, rel[0] ? "/" : "", shown,
				 (unsigned char)e->d_name[bad_at], bad_at);
			closedir(d);
			return -1;
		}
		nv_pathf(child, sizeof(child), "%s%s%s", rel, rel[0] ? "/" : "",
			 e->d_name);
		nv_pathf(full, sizeof(full), "%s/%s", root, child);
		if (lstat(full, &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			if (walk_outputs(root, child, l, depth + 1) != 0) {
				closedir(d);
				return -1;
			}
		} else if (S_ISREG(st.st_mode)) {
			if (list_add(l, child) != 0) {
				closedir(d);
				return -1;
			}
		} else {
			snprintf(l->bad, sizeof(l->bad),
				 "%.900s is not a regular file (symlinks and "
				 "special files are not published)",
				 child);
			closedir(d);
			return -1;
		}
	}
	closedir(d);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int log_has(const char *logpath, const char *needle)
{
	char *data;
	size_t len;
	nv_err err;
	int found;

	if (!needle[0])
		return 0;
	if (nv_read_file(&data, &len, logpath, (size_t)LOG_MAX_DEFAULT * 4,
			 &err) != 0)
		return 0;
	found = strstr(data, needle) != NULL;
	free(data);
	return found;
}

static nv_filestore *open_output_store(const cJSON *spec, nv_err *err)
{
	const cJSON *outputs = ofield(spec, "outputs");
	const char *root = outputs ? sfield(outputs, "store") : NULL;
	nv_filestore *store = NULL;
	char path[PATH_CAP];

	if (!root) {
		nv_err_set(err, NV_EINVAL, NULL,
			   "job spec has no output store");
		return NULL;
	}
	if (nv_filestore_path_from_url(path, sizeof(path), root, err) != 0)
		return NULL;
	if (nv_filestore_open(&store, path, 1, err) != 0)
		return NULL;
	return store;
}

/* The log was masked as it was written, by a stream; once the job is over
 * it is passed once more, whole, through a redactor holding the
 * submitter's fingerprints, and replaced atomically: whatever a stream's
 * cut points let through does not stay on disk or get published. */
static void write_fd(const char *buf, size_t len, void *payload)
{
	FILE *f = payload;
	fwrite(buf, 1, len, f);
}

static int reredact_log(const cJSON *spec, const char *logpath, nv_err *err)
{
	char tmp[PATH_CAP];
	char buf[65536];
	FILE *in, *out;
	nv_redactor *r;
	nv_redact_stream *s;
	const char *fp = sfield(spec, "redact_fingerprints");
	int rc = 0;

	if (nv_pathf(tmp, sizeof(tmp), "%s.redacting", logpath) != 0)
		return nv_err_set(err, NV_EIO, NULL, "log path too long");
	in = fopen(logpath, "rb");
	if (!in)
		return 0; /* no log: nothing to mask */
	out = fopen(tmp, "wb");
	r = nv_redactor_new();
	if (!out || !r) {
		if (out)
			fclose(out);
		fclose(in);
		nv_redactor_free(r);
		return nv_err_set(err, NV_EIO, NULL, "cannot rewrite the log");
	}
	if (fp)
		nv_redact_add_fingerprints(r, fp, strlen(fp), err);
	s = nv_redact_stream_new(r, write_fd, out);
	if (!s) {
		rc = nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	} else {
		size_t n;
		while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
			nv_redact_stream_write(s, buf, n);
		nv_redact_stream_flush(s);
		nv_redact_stream_free(s);
	}
	fclose(in);
	if (fflush(out) != 0 || fsync(fileno(out)) != 0)
		rc = nv_err_set(err, NV_EIO, NULL, "cannot write the log");
	fclose(out);
	nv_redactor_free(r);
	if (rc == 0 && rename(tmp, logpath) != 0)
		rc = nv_err_set_errno(err, NV_EIO, errno, NULL,
				      "cannot replace the log");
	if (rc)
		unlink(tmp);
	return rc;
}

/* Publishes the (capped) log and returns its size. */
static int publish_log(nv_filestore *store, const char *prefix,
		       const char *logpath, long long max_bytes,
		       cJSON *record_log, nv_err *err)
{
	char key[NV_FILESTORE_KEY_MAX + 64];
	char *data = NULL;
	size_t len = 0;
	struct stat st;
	int truncated = 0;
	int rc;

	nv_pathf(key, sizeof(key), "%snavette.log", prefix);
	if (stat(logpath, &st) == 0 && st.st_size > max_bytes) {
		/* Keep the end of the log: that is where failures are. */
		FILE *f = fopen(logpath, "rb");
		data = malloc((size_t)max_bytes + 128);
		if (!f || !data) {
			if (f)
				fclose(f);
			free(data);
			return nv_err_set(err, NV_ENOMEM, NULL,
					  "cannot read the log");
		}
		len = (size_t)snprintf(data, 128,
				       "[navette: log truncated to its last "
				       "%lld bytes]\n",
				       max_bytes);
		fseeko(f, st.st_size - max_bytes, SEEK_SET);
		len += fread(data + len, 1, (size_t)max_bytes, f);
		fclose(f);
		truncated = 1;
		rc = nv_filestore_put_bytes(store, key, data, len, NULL, err);
		free(data);
	} else if (stat(logpath, &st) == 0) {
		rc = nv_filestore_put_file(store, key, logpath, NULL, err);
		len = (size_t)st.st_size;
	} else {
		rc = nv_filestore_put_bytes(store, key, "", 0, NULL, err);
	}
	if (rc == 0) {
		char url[NV_FILESTORE_PATH_MAX + 64];
		if (nv_filestore_url(url, sizeof(url), store, key, err) == 0)
			cJSON_AddStringToObject(record_log, "url", url);
		cJSON_AddStringToObject(record_log, "key", key);
		cJSON_AddNumberToObject(record_log, "bytes", (double)len);
		cJSON_AddBoolToObject(record_log, "truncated", truncated);
	}
	return rc;
}

/* The phase named by a launcher's record, as one of the agent's own
 * strings (an outcome keeps the pointer; the record is freed). */
static const char *known_phase(const char *name)
{
	static const char *const phases[] = {
		"accepted",     "image_ready",       "data_ready", "running",
		"logs_visible", "outputs_published", NULL};
	for (const char *const *p = phases; name && *p; p++)
		if (strcmp(name, *p) == 0)
			return *p;
	return "running";
}

/* A remote job's end: what its launcher published, read from the run
 * record it left in the job folder. The agent's own outcome (a cancel, the
 * time limit, a launcher that died) comes first. */
static void finalize_remote(agent *a, job *j, outcome *o)
{
	const cJSON *outputs = ofield(j->spec, "outputs");
	const char *prefix_url = outputs ? sfield(outputs, "url") : NULL;
	char path[PATH_CAP], record_url[NV_FILESTORE_PATH_MAX + 64] = "";
	char *text = NULL;
	size_t len = 0;
	cJSON *record = NULL;
	nv_err err;

	job_path(j, "navette-run.json", path, sizeof(path));
	if (j->final_seen &&
	    nv_read_file(&text, &len, path, RECORD_MAX, &err) == 0)
		record = cJSON_Parse(text);
	free(text);
	if (record) {
		const char *state = sfield(record, "state");
		const cJSON *f = ofield(record, "failure");
		const cJSON *code = ofield(record, "exit_code");
		/* (a cast of a double outside int's range is undefined) */
		if (cJSON_IsNumber(code) && !j->have_exit &&
		    code->valuedouble >= INT_MIN &&
		    code->valuedouble <= INT_MAX) {
			j->have_exit = 1;
			j->exit_code = (int)code->valuedouble;
		}
		if (state && strcmp(state, "succeeded") != 0)
			fail(o,
			     strcmp(state, "cancelled") == 0 ? "cancelled"
							     : "failed",
			     known_phase(cJSON_IsObject(f) ? sfield(f, "phase")
							   : NULL),
			     cJSON_IsObject(f) ? sfield(f, "hint") : NULL, "%s",
			     cJSON_IsObject(f) && sfield(f, "reason")
				     ? sfield(f, "reason")
				     : "the launcher reported a failure");
		if (prefix_url)
			nv_pathf(record_url, sizeof(record_url),
				 "%snavette-run.json", prefix_url);
	} else {
		fail(o, "failed", "outputs_published",
		     "read the log (navette logs ID); the node could not "
		     "publish its run record",
		     "the launcher left no run record");
	}
	/* phases the queue has not seen yet (the order is the queue's) */
	phase(a, j, final_phase(o));
	cJSON_Delete(record);
	job_path(j, "log", path, sizeof(path));
	if (reredact_log(j->spec, path, &err) != 0)
		agent_log("job %s: %s", j->id, err.message);
	disk_full_note(j, o);
	if (nv_queue_finish(a->queue, j->id, o->state,
			    j->have_exit ? j->exit_code : -1001,
			    strcmp(o->state, "succeeded") ? o->phase : NULL,
			    strcmp(o->state, "succeeded") ? o->reason : NULL,
			    strcmp(o->state, "succeeded") ? o->hint : NULL,
			    record_url[0] ? record_url : NULL, &err) != 0)
		agent_log("job %s: cannot record the final state: %s", j->id,
			  err.message);
	static const char *const scratch[] = {"workspace", "inputs", "outputs",
					      ".navette", NULL};
	for (const char *const *sc = scratch; *sc; sc++) {
		job_path(j, *sc, path, sizeof(path));
		if (getenv("NAVETTE_KEEP_WORKSPACE") == NULL) {
			/* the launcher leaves inputs read-only */
			chmod(path, 0755);
			nv_remove_tree(path, &err);
		}
	}
	agent_log("job %s: %s%s%s (remote launcher)", j->id, o->state,
		  strcmp(o->state, "succeeded") ? " at " : "",
		  strcmp(o->state, "succeeded") ? o->phase : "");
}

static void finalize(agent *a, job *j, outcome *o)
{
	const cJSON *spec = j->spec;
	const cJSON *outputs = spec ? ofield(spec, "outputs") : NULL;
	const char *prefix = outputs ? sfield(outputs, "prefix") : NULL;
	char outdir[PATH_CAP], logpath[PATH_CAP];
	nv_filestore *store = NULL;
	file_list files = {0};
	cJSON *record = cJSON_CreateObject();
	cJSON *published = cJSON_AddArrayToObject(record, "outputs");
	cJSON *record_log = cJSON_CreateObject();
	char record_url[NV_FILESTORE_PATH_MAX + 64] = "";
	nv_err err;
	size_t npublished = 0;

	if (j->remote) {
		cJSON_Delete(record);
		cJSON_Delete(record_log);
		finalize_remote(a, j, o);
		return;
	}
	job_path(j, "outputs", outdir, sizeof(outdir));
	job_path(j, "log", logpath, sizeof(logpath));
	if (!prefix)
		prefix = "";

	/* The success condition, when the command ran. */
	if (strcmp(o->state, "succeeded") == 0) {
		const cJSON *success = ofield(spec, "success");
		const cJSON *failure = ofield(spec, "failure_condition");
		const cJSON *req = success ? ofield(success, "outputs") : NULL;
		const cJSON *pats =
			failure ? ofield(failure, "log_patterns") : NULL;
		const char *fhint = failure ? sfield(failure, "hint") : NULL;
		const cJSON *it;

		if (!exit_code_ok(spec, j->exit_code))
			fail(o, "failed", "running",
			     fhint ? fhint
				   : "read the log (navette logs ID): check "
				     "the parameters, the data and the "
				     "dependencies",
			     "the command exited with status %d", j->exit_code);
		cJSON_ArrayForEach(it, pats)
		{
			if (cJSON_IsString(it) &&
			    log_has(logpath, it->valuestring))
				fail(o, "failed", "running",
				     fhint ? fhint
					   : "read the log (navette logs ID)",
				     "the log matched the failure pattern "
				     "'%s'",
				     it->valuestring);
		}
		cJSON_ArrayForEach(it, req)
		{
			char p[PATH_CAP];
			struct stat st;
			if (!cJSON_IsString(it))
				continue;
			nv_pathf(p, sizeof(p), "%s/%s", outdir,
				 it->valuestring);
			if (lstat(p, &st) != 0 || !S_ISREG(st.st_mode))
				fail(o, "failed", "outputs_published",
				     "the command must write it into "
				     "$NAVETTE_OUTPUTS; check the publication "
				     "path",
				     "required output '%s' is missing",
				     it->valuestring);
		}
	}

	store = spec ? open_output_store(spec, &err) : NULL;
	if (!store) {
		fail(o, "failed", "outputs_published",
		     "check the profile's storage and its rights",
		     "cannot open the output store: %s",
		     spec ? err.message : "unreadable job spec");
	}

	/* Outputs are published only for a job that met its condition; a
	 * partial publication is rolled back. */
	if (store && strcmp(o->state, "succeeded") == 0) {
		if (walk_outputs(outdir, "", &files, 0) != 0) {
			fail(o, "failed", "outputs_published",
			     "write plain files into $NAVETTE_OUTPUTS", "%s",
			     files.bad[0] ? files.bad : "out of memory");
		} else {
			if (files.count > 1) /* paths is NULL when empty */
				qsort(files.paths, files.count, sizeof(char *),
				      cmp_str);
		}
		for (size_t i = 0;
		     strcmp(o->state, "succeeded") == 0 && i < files.count;
		     i++) {
			char key[NV_FILESTORE_KEY_MAX + 64];
			char src[PATH_CAP];
			nv_object_info info;
			nv_pathf(key, sizeof(key), "%s%s", prefix,
				 files.paths[i]);
			nv_pathf(src, sizeof(src), "%s/%s", outdir,
				 files.paths[i]);
			/* in any case: a folding volume (APFS) would let the
			 * log overwrite an output named Navette.log */
			const char *taken =
				nv_launcher_output_reserved(files.paths[i]);
			if (taken) {
				fail(o, "failed", "outputs_published",
				     "rename the output: navette.log, "
				     "navette-run.json, navette-status and "
				     "navette-log/ are navette's, in any case",
				     "output '%s' has a reserved name "
				     "(navette's '%s', in any case)",
				     files.paths[i], taken);
				break;
			}
			if (nv_filestore_put_file(store, key, src, &info,
						  &err) != 0) {
				fail(o, "failed", "outputs_published",
				     err.hint[0] ? err.hint
						 : "check the store's rights "
						   "and free space",
				     "cannot publish '%s': %s", files.paths[i],
				     err.message);
				break;
			}
			npublished++;
			cJSON *entry = cJSON_CreateObject();
			char url[NV_FILESTORE_PATH_MAX + 64];
			cJSON_AddStringToObject(entry, "name", files.paths[i]);
			cJSON_AddStringToObject(entry, "key", key);
			if (nv_filestore_url(url, sizeof(url), store, key,
					     &err) == 0)
				cJSON_AddStringToObject(entry, "url", url);
			cJSON_AddNumberToObject(entry, "size",
						(double)info.size);
			cJSON_AddStringToObject(entry, "sha256", info.sha256);
			cJSON_AddItemToArray(published, entry);
		}
		if (strcmp(o->state, "succeeded") != 0) {
			for (size_t i = 0; i < npublished; i++) {
				char key[NV_FILESTORE_KEY_MAX + 64];
				nv_pathf(key, sizeof(key), "%s%s", prefix,
					 files.paths[i]);
				nv_filestore_delete(store, key, &err);
			}
			cJSON_Delete(
				cJSON_DetachItemFromObject(record, "outputs"));
			cJSON_AddArrayToObject(record, "outputs");
		} else {
			phase(a, j, "outputs_published");
		}
	}
	list_free(&files);

	/* The log and the run record, whatever the outcome. */
	if (spec && reredact_log(spec, logpath, &err) != 0)
		agent_log("job %s: %s", j->id, err.message);
	if (store) {
		const cJSON *logs = ofield(spec, "logs");
		const cJSON *maxb = logs ? ofield(logs, "max_bytes") : NULL;
		long long max_bytes = LOG_MAX_DEFAULT;
		/* validated already; a cast of a double outside long long's
		 * range would be undefined, so larger ones mean 2^53 */
		if (cJSON_IsNumber(maxb) && maxb->valuedouble >= 1)
			max_bytes = maxb->valuedouble < 9007199254740992.0
					    ? (long long)maxb->valuedouble
					    : 9007199254740992LL;
		if (publish_log(store, prefix, logpath, max_bytes, record_log,
				&err) != 0)
			fail(o, "failed", "outputs_published",
			     "check the store's rights and free space",
			     "cannot publish the log: %s", err.message);
	}
	phase(a, j, final_phase(o));

	/* Build the record from the spec and the queue's phase timeline. */
	{
		const char *const *copied = nv_launcher_record_fields;
		char *json = NULL;
		cJSON *row = NULL;
		cJSON_AddNumberToObject(record, "navette_run_record", 1);
		for (const char *const *k = copied; spec && *k; k++) {
			const cJSON *v = ofield(spec, *k);
			if (v)
				cJSON_AddItemToObject(record, *k,
						      cJSON_Duplicate(v, 1));
		}
		if (nv_queue_get_json(a->queue, j->id, &json, &err) == 0 &&
		    (row = cJSON_Parse(json)) != NULL) {
			cJSON *ph = cJSON_DetachItemFromObject(row, "phases");
			if (ph)
				cJSON_AddItemToObject(record, "phases", ph);
		}
		free(json);
		cJSON_Delete(row);
		cJSON_AddStringToObject(record, "state", o->state);
		if (j->have_exit)
			cJSON_AddNumberToObject(record, "exit_code",
						j->exit_code);
		else
			cJSON_AddNullToObject(record, "exit_code");
		if (strcmp(o->state, "succeeded") != 0) {
			cJSON *f = cJSON_AddObjectToObject(record, "failure");
			cJSON_AddStringToObject(f, "phase", o->phase);
			cJSON_AddStringToObject(f, "reason", o->reason);
			cJSON_AddStringToObject(f, "hint", o->hint);
		} else {
			cJSON_AddNullToObject(record, "failure");
		}
		cJSON_AddItemToObject(record, "log", record_log);
		record_log = NULL;
		if (store) {
			char key[NV_FILESTORE_KEY_MAX + 64];
			char *raw = cJSON_Print(record);
			char *text = NULL;
			nv_buf clean;
			nv_buf_init(&clean, RECORD_MAX * 2);
			/* shapes, and the submitter's secrets through
			 * their fingerprints, in a redactor of this job */
			nv_redactor *r = nv_redactor_new();
			const char *fp = sfield(spec, "redact_fingerprints");
			if (r && fp)
				nv_redact_add_fingerprints(r, fp, strlen(fp),
							   &err);
			if (r && raw &&
			    nv_redact_buffer(r, raw, strlen(raw), &clean) ==
				    0 &&
			    clean.data)
				text = strdup(clean.data);
			nv_redactor_free(r);
			nv_buf_free(&clean);
			free(raw);
			nv_pathf(key, sizeof(key), "%snavette-run.json",
				 prefix);
			if (text && strlen(text) < RECORD_MAX &&
			    nv_filestore_put_bytes(store, key, text,
						   strlen(text), NULL,
						   &err) == 0)
				nv_filestore_url(record_url, sizeof(record_url),
						 store, key, &err);
			else
				agent_log("job %s: cannot publish the run "
					  "record: %s",
					  j->id, err.message);
			free(text);
		}
	}
	cJSON_Delete(record_log);
	cJSON_Delete(record);
	nv_filestore_free(store);

	disk_full_note(j, o);
	if (nv_queue_finish(a->queue, j->id, o->state,
			    j->have_exit ? j->exit_code : -1001,
			    strcmp(o->state, "succeeded") ? o->phase : NULL,
			    strcmp(o->state, "succeeded") ? o->reason : NULL,
			    strcmp(o->state, "succeeded") ? o->hint : NULL,
			    record_url[0] ? record_url : NULL, &err) != 0)
		agent_log("job %s: cannot record the final state: %s", j->id,
			  err.message);
	/* Workspace, inputs and outputs are copies: free the disk; the log
	 * and status stay for `navette logs`. */
	static const char *const scratch[] = {"workspace", "inputs", "outputs",
					      NULL};
	for (const char *const *s = scratch; *s; s++) {
		char p[PATH_CAP];
		job_path(j, *s, p, sizeof(p));
		if (getenv("NAVETTE_KEEP_WORKSPACE") == NULL)
			nv_remove_tree(p, &err);
	}
	agent_log("job %s: %s%s%s", j->id, o->state,
		  strcmp(o->state, "succeeded") ? " at " : "",
		  strcmp(o->state, "succeeded") ? o->phase : "");
}

/* ---- preparing and starting a job -------------------------------------- */

static int stage_inputs(const job *j, nv_err *err)
{
	const cJSON *inputs = ofield(j->spec, "inputs");
	const cJSON *in;
	char dir[PATH_CAP];

	job_path(j, "inputs", dir, sizeof(dir));
	if (nv_mkdir_p(dir, 0755, err) != 0)
		return err->code;
	cJSON_ArrayForEach(in, inputs)
	{
		const char *name = sfield(in, "name");
		const char *url = sfield(in, "url");
		const char *want = sfield(in, "sha256");
		char root[NV_FILESTORE_PATH_MAX], key[NV_FILESTORE_KEY_MAX + 1];
		char dest[PATH_CAP];
		nv_filestore *store = NULL;
		nv_object_info info;
		int rc;

		if (!name || !url || strchr(name, '/') || name[0] == '.')
			return nv_err_set(err, NV_EINVAL, NULL,
					  "bad input entry in the job spec");
		if (strncmp(url, "file://", 7) != 0)
			return nv_err_set(err, NV_EREFUSED,
					  "the local backend reads file:// "
					  "inputs; use a profile with S3 "
					  "storage for s3:// inputs",
					  "input '%s': unsupported URL %s",
					  name, url);
		if ((rc = nv_filestore_find(root, sizeof(root), key,
					    sizeof(key), url, err)) != 0)
			return rc;
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
	chmod(dir, 0555);
	return 0;
}

static int prepare(agent *a, job *j, outcome *o)
{
	const char *image, *repo, *commit;
	char path[PATH_CAP];
	nv_git_repo *r = NULL;
	nv_err err;

	if (!j->spec || !(commit = sfield(j->spec, "commit")) ||
	    !(repo = sfield(j->spec, "repository_path"))) {
		fail(o, "failed", "accepted",
		     "submit again with this version of navette",
		     "the job spec is unreadable or incomplete");
		return -1;
	}
	if (nv_remove_tree(j->dir, &err) != 0 ||
	    nv_mkdir_p(j->dir, 0700, &err) != 0) {
		fail(o, "failed", "accepted", "check NAVETTE_HOME",
		     "cannot create the job folder: %s", err.message);
		return -1;
	}
	phase(a, j, "accepted");

	image = sfield(j->spec, "image");
	if (image && strcmp(image, "host") != 0 && !j->container) {
		fail(o, "failed", "image_ready",
		     "submit again with this version of navette, which runs "
		     "images through podman or docker",
		     "the job declares the image %s but no container runtime",
		     image);
		return -1;
	}
	/* with a container, the launcher pulls the image and says so */
	if (!j->container)
		phase(a, j, "image_ready");

	if (j->remote) {
		/* the launcher fetches code and inputs itself */
		const char *fp = sfield(j->spec, "redact_fingerprints");
		job_path(j, "fingerprints", path, sizeof(path));
		if (fp && nv_write_file_atomic(path, fp, strlen(fp), 0600,
					       &err) != 0) {
			fail(o, "failed", "data_ready", "check NAVETTE_HOME",
			     "%s", err.message);
			return -1;
		}
		return 0;
	}
	job_path(j, "workspace", path, sizeof(path));
	if (nv_git_open(&r, repo, &err) != 0 ||
	    nv_git_export(r, commit, path, NULL, &err) != 0) {
		nv_git_free(r);
		fail(o, "failed", "data_ready",
		     err.hint[0] ? err.hint
				 : "check that the commit is still in the "
				   "repository",
		     "cannot export commit %.12s: %s", commit, err.message);
		return -1;
	}
	nv_git_free(r);
	if (stage_inputs(j, &err) != 0) {
		fail(o, "failed", "data_ready",
		     err.hint[0] ? err.hint : "check the input's URL",
		     "cannot stage inputs: %s", err.message);
		return -1;
	}
	/* The submitter's secrets as salted fingerprints, for the log
	 * filter (never the values). */
	const char *fp = sfield(j->spec, "redact_fingerprints");
	job_path(j, "fingerprints", path, sizeof(path));
	if (fp && nv_write_file_atomic(path, fp, strlen(fp), 0600, &err) != 0) {
		fail(o, "failed", "data_ready", "check NAVETTE_HOME", "%s",
		     err.message);
		return -1;
	}
	job_path(j, "outputs", path, sizeof(path));
	if (nv_mkdir_p(path, 0755, &err) != 0) {
		fail(o, "failed", "data_ready", "check NAVETTE_HOME", "%s",
		     err.message);
		return -1;
	}
	if (!j->container) /* reported by the launcher after its pull */
		phase(a, j, "data_ready");
	return 0;
}

/* The launcher's pid and start time, kept in the job folder, so that an
 * agent adopting the job after this one died tells the launcher from a
 * later process given the same pid. */
static void launcher_identity_write(job *j)
{
	char path[PATH_CAP], text[64];
	nv_err err;

	if (nv_process_start_time(j->pid, j->start_time,
				  sizeof(j->start_time)) != 0)
		return;
	snprintf(text, sizeof(text), "%ld %s\n", (long)j->pid, j->start_time);
	job_path(j, "launcher.pid", path, sizeof(path));
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
	job_path(j, "launcher.pid", path, sizeof(path));
	if (nv_read_file(&text, &len, path, 64, &err) != 0)
		return;
	if (sscanf(text, "%ld %31s", &pid, start) == 2 && pid == (long)j->pid)
		nv_pathf(j->start_time, sizeof(j->start_time), "%s", start);
	free(text);
}

static int start(agent *a, job *j, outcome *o)
{
	nv_buf script;
	char path[PATH_CAP];
	nv_err err;
	const cJSON *res = ofield(j->spec, "resources");
	const cJSON *tl = res ? ofield(res, "time_limit") : NULL;

	nv_buf_init(&script, NV_LAUNCHER_MAX);
	if (nv_launcher_script(j->spec, &script, &err) != 0) {
		nv_buf_free(&script);
		fail(o, "failed", "accepted", err.hint, "%s", err.message);
		return -1;
	}
	job_path(j, "launcher.sh", path, sizeof(path));
	int rc =
		nv_write_file_atomic(path, script.data, script.len, 0700, &err);
	nv_buf_free(&script);
	if (rc) {
		fail(o, "failed", "data_ready", "check NAVETTE_HOME", "%s",
		     err.message);
		return -1;
	}
	j->time_limit = cJSON_IsNumber(tl) ? tl->valuedouble : 0;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		fail(o, "failed", "running", "the machine is out of processes",
		     "cannot start the launcher: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		/* The launcher gets its own process group (cancel kills the
		 * whole group) and a small, known environment. */
		const char *const *keep = launcher_env_names;
		char *envp[24];
		int n = 0;
		static char store[16][PATH_CAP];
		setpgid(0, 0);
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
		    nv_pathf(redact, sizeof(redact), "NAVETTE_REDACT=%s",
			     exe) == 0)
			envp[n++] = redact;
		static char fingerprints[PATH_CAP + 40];
		if (nv_pathf(fingerprints, sizeof(fingerprints),
			     "NAVETTE_REDACT_FINGERPRINTS=%s/fingerprints",
			     j->dir) == 0)
			envp[n++] = fingerprints;
		envp[n] = NULL;
		int devnull = open("/dev/null", O_RDWR);
		if (devnull >= 0) {
			dup2(devnull, 0);
			dup2(devnull, 1);
			dup2(devnull, 2);
		}
		execle("/bin/sh", "sh", path, (char *)NULL, envp);
		_exit(127);
	}
	setpgid(pid, pid);
	j->pid = pid;
	j->own_child = 1;
	j->started = nv_monotonic();
	launcher_identity_write(j);
	if (nv_queue_set_pid(a->queue, j->id, (long)pid, &err) != 0)
		agent_log("job %s: %s", j->id, err.message);
	agent_log("job %s: launcher started, pid %ld", j->id, (long)pid);
	return 0;
}

/* ---- following running jobs -------------------------------------------- */

/* Reads new lines of the status file: phases, then "exit N". */
static void read_status(agent *a, job *j)
{
	char path[PATH_CAP];
	char buf[4096];
	FILE *f;

	job_path(j, "status", path, sizeof(path));
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
		} else if (strcmp(buf, "running") == 0 ||
			   strcmp(buf, "logs_visible") == 0) {
			phase(a, j, buf);
		} else if (strcmp(buf, "image_ready") == 0 ||
			   strcmp(buf, "data_ready") == 0 ||
			   (j->remote &&
			    strcmp(buf, "outputs_published") == 0)) {
			phase(a, j, buf);
		} else if (strncmp(buf, "image_failed ", 13) == 0) {
			/* cut to what the slot holds */
			snprintf(j->image_failed, sizeof(j->image_failed),
				 "%.500s", buf + 13);
		} else if (j->remote && strncmp(buf, "final ", 6) == 0) {
			j->final_seen = 1;
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
		return j->reaped && (kill(-j->pid, 0) != 0 && errno == ESRCH);
	}
	/* Adopted: the launcher's pid may name a later process by now. While
	 * any process of its group lives, the system gives that pid to no
	 * other, so a later process means the whole group ended. */
	char now[32];
	if (kill(j->pid, 0) == 0 || errno != ESRCH) {
		return j->start_time[0] &&
		       nv_process_start_time(j->pid, now, sizeof(now)) == 0 &&
		       strcmp(now, j->start_time) != 0;
	}
	return kill(-j->pid, 0) != 0 && errno == ESRCH;
}

static void signal_group(job *j, int sig)
{
	if (j->pid > 0 && kill(-j->pid, sig) != 0)
		kill(j->pid, sig);
}

/* What a remote launcher puts in its record when stopped (it cannot tell a
 * cancel from a time limit by the signal alone). */
static void stop_reason(job *j, const char *why)
{
	char path[PATH_CAP];
	nv_err err;

	job_path(j, "stop-reason", path, sizeof(path));
	if (j->remote &&
	    nv_write_file_atomic(path, why, strlen(why), 0600, &err) != 0)
		agent_log("job %s: %s", j->id, err.message);
}

static void follow(agent *a, job *j, int *done)
{
	int requested = 0;
	nv_err err;

	*done = 0;
	read_status(a, j);
	if (!j->killed &&
	    nv_queue_cancel_requested(a->queue, j->id, &requested, &err) == 0 &&
	    requested) {
		j->killed = KILL_CANCEL;
		j->kill_sent = nv_monotonic();
		stop_reason(j, "cancelled while running");
		signal_group(j, SIGTERM);
		agent_log("job %s: cancel requested, SIGTERM sent", j->id);
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
		    (j->remote ? KILL_GRACE_REMOTE_S : KILL_GRACE_S)) {
		j->kill9_sent = 1;
		signal_group(j, SIGKILL);
	}
	if (!process_gone(j))
		return;
	read_status(a, j);

	outcome o = {.state = "succeeded", .phase = ""};
	o.disk_full = disk_nearly_full(j->dir);
	if (j->killed == KILL_CANCEL) {
		fail(&o, "cancelled", "running",
		     "submit it again with navette run",
		     "cancelled while running");
	} else if (j->killed == KILL_TIMEOUT) {
		fail(&o, "failed", "running",
		     "raise resources.time_limit, or make the command faster",
		     "the time limit of %.0f s was reached", j->time_limit);
	} else if (j->image_failed[0]) {
		fail(&o, "failed", "image_ready",
		     "check the image reference and that this machine can "
		     "reach its registry (network, credentials)",
		     "%s", j->image_failed);
	} else if (!j->have_exit && !j->own_child &&
		   !(j->remote && j->final_seen)) {
		/* adopted: the agent that started it died, and the launcher
		 * ended without a word (killed with it, or the machine
		 * restarted) */
		fail(&o, "failed", "running",
		     "the job's processes were stopped while no agent watched "
		     "them; submit the job again with navette run",
		     "the agent that ran the job stopped, and the job's "
		     "launcher ended without reporting an exit status");
	} else if (!j->have_exit && !(j->remote && j->final_seen)) {
		/* (a remote launcher that ended says why in its record) */
		fail(&o, "failed", "running",
		     "the process was killed from outside navette; check the "
		     "machine's memory (OOM killer) and the log",
		     "the launcher stopped without reporting an exit status");
	}
	finalize(a, j, &o);
	*done = 1;
}

/* ---- the loop ---------------------------------------------------------- */

static void adopt(const char *id, const char *spec, long pid, void *payload)
{
	agent *a = payload;
	job *j = job_new(a->home, id, spec);

	if (!j)
		return;
	j->pid = (pid_t)pid;
	j->own_child = 0;
	j->started = nv_monotonic();
	launcher_identity_read(j);
	if (pid <= 0) {
		/* Claimed but never started: the agent died while preparing.*/
		outcome o = {.state = "succeeded", .phase = ""};
		fail(&o, "failed", "accepted", "submit the job again",
		     "the agent stopped before the job started");
		finalize(a, j, &o);
		job_free(j);
		return;
	}
	j->next = a->jobs;
	a->jobs = j;
	a->running++;
	agent_log("job %s: adopted (pid %ld)", id, pid);
}

static void take_jobs(agent *a)
{
	while (a->running < a->slots) {
		char *id = NULL, *spec = NULL;
		nv_err err;
		if (nv_queue_claim(a->queue, &id, &spec, &err) != 0) {
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
		outcome o = {.state = "succeeded", .phase = ""};
		agent_log("job %s: accepted", j->id);
		if (prepare(a, j, &o) != 0 || start(a, j, &o) != 0) {
			finalize(a, j, &o);
			job_free(j);
			continue;
		}
		j->next = a->jobs;
		a->jobs = j;
		a->running++;
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
	if (nv_queue_active(a->queue, &queued, &running, &err) != 0)
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
	if (nv_queue_open(&a.queue, home, err) != 0) {
		close(lockfd);
		return err->code;
	}
	lock_write_pid(lockfd);
	signal(SIGPIPE, SIG_IGN);
	agent_log("agent started for %s", home);
	if (nv_process_deny_inspection() != 0)
		agent_log("cannot keep other processes out of the agent: %s",
			  strerror(errno));
	/* The jobs a previous agent left: each is adopted or ended before
	 * the starter hears "ready", so a read that started this agent
	 * shows where they are now. */
	nv_queue_each_running(a.queue, adopt, &a, err);
	follow_all(&a);
	agent_ready();

	idle_since = nv_monotonic();
	for (;;) {
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
	agent_log("agent idle, stopping");
	nv_queue_close(a.queue);
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
