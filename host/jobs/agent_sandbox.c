/* What a job that runs on the host (not in an image) is started in, and
 * with which environment (agent.c starts it). The launcher runs inside a
 * sandbox that shows it the system's programs and libraries read-only and
 * its own job folder read-write, and nothing of the user's files: on
 * Linux bubblewrap (`bwrap`, run, never reimplemented) builds that view
 * in new mount, pid and ipc namespaces; on macOS `sandbox-exec` denies
 * reads and writes under $HOME and NAVETTE_HOME but the job's folder.
 * Without one the job is refused, unless the agent was started with
 * NAVETTE_LOCAL_SANDBOX=off (the user's environment: a recipe or the
 * project file cannot set it). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <dirent.h>

#include "core/fsutil.h"
#include "core/proc.h"
#include "jobs/agent.h"
#include "jobs/agent_internal.h"
#include "jobs/secrets.h"

#define STRV_ARENA       (256 * 1024)
#define STRV_MAX         512
#define VERSION_WAIT_MS  2000
#define DEFAULT_JOB_PATH "/usr/local/bin:/usr/bin:/bin"
#define LOCAL_PATH_MAX   4096

/* ---- a bounded list of strings ----------------------------------------- */

void agent_strv_free(agent_strv *v)
{
	free(v->items);
	free(v->arena);
	memset(v, 0, sizeof(*v));
}

static int strv_init(agent_strv *v)
{
	memset(v, 0, sizeof(*v));
	v->items = calloc(STRV_MAX, sizeof(char *));
	v->arena = malloc(STRV_ARENA);
	if (!v->items || !v->arena) {
		agent_strv_free(v);
		return -1;
	}
	return 0;
}

__attribute__((format(printf, 2, 3))) static void strv_pushf(agent_strv *v,
							     const char *fmt,
							     ...)
{
	va_list ap;
	int n;

	if (v->overflow || v->count + 1 >= STRV_MAX) {
		v->overflow = 1;
		return;
	}
	va_start(ap, fmt);
	n = vsnprintf(v->arena + v->used, STRV_ARENA - v->used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= STRV_ARENA - v->used) {
		v->overflow = 1;
		return;
	}
	v->items[v->count++] = v->arena + v->used;
	v->items[v->count] = NULL;
	v->used += (size_t)n + 1;
}

static void strv_push(agent_strv *v, const char *s)
{
	strv_pushf(v, "%s", s);
}

/* ---- which sandbox ----------------------------------------------------- */

static int executable(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	       access(path, X_OK) == 0;
}

/* `program --version`'s first line into out ("" when it says nothing
 * within VERSION_WAIT_MS). */
static void program_version(const char *program, char *out, size_t cap)
{
	const char *argv[] = {program, "--version", NULL};
	nv_proc_opts o = {0};
	nv_proc_result r;
	nv_err err;

	o.argv = argv;
	o.out = (nv_proc_stream){NV_PROC_CAPTURE, out, cap, 0};
	o.timeout_s = VERSION_WAIT_MS / 1000.0;
	o.stop_at_cap = 1; /* the first line is in */
	if (nv_proc_run(&o, &r, NULL, &err) != 0)
		out[0] = '\0';
	out[strcspn(out, "\r\n")] = '\0';
}

void agent_sandbox_detect(agent_sandbox *sb)
{
	const char *setting = getenv("NAVETTE_LOCAL_SANDBOX");

	memset(sb, 0, sizeof(*sb));
	if (setting && strcmp(setting, "off") == 0) {
		sb->kind = SANDBOX_OFF;
		return;
	}
	if (setting && *setting && strcmp(setting, "on") != 0)
		agent_log("NAVETTE_LOCAL_SANDBOX=%.40s is neither on nor off: "
			  "the sandbox stays on",
			  setting);
#if defined(__APPLE__)
	if (executable("/usr/bin/sandbox-exec")) {
		sb->kind = SANDBOX_SEATBELT;
		nv_pathf(sb->program, sizeof(sb->program),
			 "/usr/bin/sandbox-exec");
		nv_pathf(sb->version, sizeof(sb->version), "sandbox-exec");
	}
#elif defined(__linux__)
	/* NAVETTE_BWRAP names one (another build, a test's stand-in): that
	 * one or none */
	const char *named = getenv("NAVETTE_BWRAP");
	if (named && *named) {
		if (named[0] == '/' && executable(named)) {
			sb->kind = SANDBOX_BWRAP;
			nv_pathf(sb->program, sizeof(sb->program), "%s", named);
			program_version(sb->program, sb->version,
					sizeof(sb->version));
		}
		return;
	}
	/* the system's first; then the agent's PATH (a bwrap built by hand) */
	static const char *const fixed[] = {
		"/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap", NULL};
	for (const char *const *f = fixed; *f && !sb->kind; f++)
		if (executable(*f)) {
			sb->kind = SANDBOX_BWRAP;
			nv_pathf(sb->program, sizeof(sb->program), "%s", *f);
		}
	const char *path = getenv("PATH");
	while (!sb->kind && path && *path) {
		size_t len = strcspn(path, ":");
		char candidate[PATH_CAP];
		if (len > 0 && path[0] == '/' &&
		    nv_pathf(candidate, sizeof(candidate), "%.*s/bwrap",
			     (int)len, path) == 0 &&
		    executable(candidate)) {
			sb->kind = SANDBOX_BWRAP;
			nv_pathf(sb->program, sizeof(sb->program), "%s",
				 candidate);
		}
		path += len;
		if (*path == ':')
			path++;
	}
	if (sb->kind == SANDBOX_BWRAP)
		program_version(sb->program, sb->version, sizeof(sb->version));
#endif
}

const char *agent_sandbox_describe(const agent_sandbox *sb)
{
	switch (sb->kind) {
	case SANDBOX_OFF: return "off (NAVETTE_LOCAL_SANDBOX=off)";
	case SANDBOX_BWRAP:
	case SANDBOX_SEATBELT:
		return sb->version[0] ? sb->version : sb->program;
	default: return "none";
	}
}

/* ---- the job's environment --------------------------------------------- */

/* spec.local.path (the profile's ["local"].path, joined by the local
 * backend), when every entry is an absolute folder; else the default. */
static const char *job_path(const cJSON *spec)
{
	const cJSON *settings = ofield(spec, "local");
	const char *path = settings ? sfield(settings, "path") : NULL;

	if (!path || !*path || strlen(path) > LOCAL_PATH_MAX)
		return DEFAULT_JOB_PATH;
	for (const char *p = path; *p;) {
		if (*p != '/')
			return DEFAULT_JOB_PATH;
		p += strcspn(p, ":");
		if (*p == ':')
			p++;
	}
	if (strpbrk(path, "\n\r") || strstr(path, "::"))
		return DEFAULT_JOB_PATH;
	return path;
}

int agent_job_env(const job *j, const char *exe, agent_strv *env)
{
	static const char *const kept[] = {
		"USER", "LOGNAME", "LANG", "TZ", "NAVETTE_LOG_INTERVAL", NULL};

	if (strv_init(env) != 0)
		return -1;
	strv_pushf(env, "PATH=%s", job_path(j->spec));
	strv_pushf(env, "HOME=%s/home", j->dir);
	strv_push(env, "TMPDIR=/tmp");
	strv_push(env, "PYTHONUNBUFFERED=1");
	for (const char *const *k = kept; *k; k++) {
		const char *v = getenv(*k);
		if (v)
			strv_pushf(env, "%s=%s", *k, v);
	}
	strv_pushf(env, "NAVETTE_JOB_DIR=%s", j->dir);
	if (exe && *exe)
		strv_pushf(env, "NAVETTE_REDACT=%s", exe);
	strv_pushf(env, "NAVETTE_REDACT_FINGERPRINTS=%s/fingerprints", j->dir);
	if (agent_secrets_dir(j))
		strv_pushf(env, "NAVETTE_SECRETS=%s", agent_secrets_dir(j));
	return env->overflow ? -1 : 0;
}

/* ---- the job's secrets --------------------------------------------------- */

const char *agent_secrets_dir(const job *j)
{
	const cJSON *list = j->spec ? ofield(j->spec, "secrets") : NULL;
	const char *dir = j->spec ? sfield(j->spec, "secrets_dir") : NULL;

	if (!cJSON_IsArray(list) || !list->child || !dir ||
	    !nv_job_secrets_dir_ok(dir, j->id))
		return NULL;
	return dir;
}

int agent_secrets_check(const job *j, nv_err *err)
{
	const cJSON *list = j->spec ? ofield(j->spec, "secrets") : NULL;
	const char *dir = agent_secrets_dir(j);
	const cJSON *item;
	char path[PATH_CAP];
	struct stat st;

	if (!cJSON_IsArray(list) || !list->child)
		return 0;
	if (j->container)
		return nv_err_set(err, NV_EREFUSED,
				  "run it on the host (no image), or on Slurm",
				  "the local backend gives secrets to jobs on "
				  "the host only, not in an image yet");
	if (!dir)
		return nv_err_set(err, NV_EINVAL,
				  "submit again with this version of navette",
				  "the job's spec names no secrets folder");
	cJSON_ArrayForEach(item, list)
	{
		const char *name = sfield(item, "name");
		if (!name || nv_pathf(path, sizeof(path), "%s/%s", dir, name) ||
		    lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
			return nv_err_set(
				err, NV_ENOTFOUND,
				"run the recipe again: `navette run` writes "
				"the secrets when it submits (a restart "
				"empties the tmpfs that holds them)",
				"the job's secret %s is gone from %s (was "
				"the machine restarted since it was "
				"submitted?); the job did not run",
				name ? name : "?", dir);
	}
	return 0;
}

void agent_secrets_remove(const job *j)
{
	const char *dir = agent_secrets_dir(j);
	nv_err err;

	if (dir && nv_job_secrets_remove(dir, j->id, &err) != 0)
		agent_log("job %s: cannot remove its secrets: %s", j->id,
			  err.message);
}

/* ---- the command ------------------------------------------------------- */

#if defined(__linux__)
/* The top-level folders of the system a job needs to run programs: each
 * is bound read-only, or recreated as the same symlink (merged /usr). */
static const char *const system_folders[] = {
	"/usr",   "/bin",    "/sbin", "/lib", "/lib32",
	"/lib64", "/libx32", "/etc",  "/opt", NULL};

/* The devices of GPUs, beside bwrap's minimal /dev. */
static void bind_gpus(agent_strv *v)
{
	DIR *d = opendir("/dev");
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)))
		if (strncmp(e->d_name, "nvidia", 6) == 0 ||
		    strcmp(e->d_name, "dri") == 0 ||
		    strcmp(e->d_name, "kfd") == 0) {
			strv_push(v, "--dev-bind");
			strv_pushf(v, "/dev/%s", e->d_name);
			strv_pushf(v, "/dev/%s", e->d_name);
		}
	closedir(d);
}

static void bwrap_command(const agent_sandbox *sb, const char *home,
			  const job *j, const char *launcher, const char *exe,
			  agent_strv *v)
{
	char real[PATH_CAP], target[PATH_CAP];
	const char *user_home = getenv("HOME");
	struct stat st;

	strv_push(v, sb->program);
	/* its own pid namespace (the agent's /proc/PID is not there), ipc;
	 * no setsid: cancel signals the launcher's process group */
	strv_push(v, "--unshare-pid");
	strv_push(v, "--unshare-ipc");
	strv_push(v, "--unshare-cgroup-try");
	/* root keeps no capability (no mount, no mknod of a disk) */
	strv_push(v, "--cap-drop");
	strv_push(v, "ALL");
	for (const char *const *f = system_folders; *f; f++) {
		if (lstat(*f, &st) != 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			ssize_t n = readlink(*f, target, sizeof(target) - 1);
			if (n <= 0)
				continue;
			target[n] = '\0';
			strv_push(v, "--symlink");
			strv_push(v, target);
			strv_push(v, *f);
		} else if (S_ISDIR(st.st_mode)) {
			strv_push(v, "--ro-bind");
			strv_push(v, *f);
			strv_push(v, *f);
		}
	}
	/* CPU and GPU topology, and a resolver behind /etc/resolv.conf */
	strv_push(v, "--ro-bind-try");
	strv_push(v, "/sys");
	strv_push(v, "/sys");
	strv_push(v, "--ro-bind-try");
	strv_push(v, "/run/systemd/resolve");
	strv_push(v, "/run/systemd/resolve");
	strv_push(v, "--proc");
	strv_push(v, "/proc");
	strv_push(v, "--dev");
	strv_push(v, "/dev");
	bind_gpus(v);
	strv_push(v, "--tmpfs");
	strv_push(v, "/tmp");
	/* empty over the user's home and NAVETTE_HOME, wherever they are
	 * (under /opt, say); then the job's own folder inside them */
	if (user_home && user_home[0] == '/' && strcmp(user_home, "/") != 0) {
		strv_push(v, "--tmpfs");
		strv_push(v, user_home);
	}
	strv_push(v, "--tmpfs");
	strv_push(v, home);
	strv_push(v, "--bind");
	strv_push(v, realpath(j->dir, real) ? real : j->dir);
	strv_push(v, j->dir);
	/* its secrets, read-only, at their own path ($NAVETTE_SECRETS) */
	if (agent_secrets_dir(j)) {
		strv_push(v, "--ro-bind");
		strv_push(v, realpath(agent_secrets_dir(j), real)
				     ? real
				     : agent_secrets_dir(j));
		strv_push(v, agent_secrets_dir(j));
	}
	if (exe && *exe) {
		/* the log's redactor (redact-stream) is navette itself, and
		 * the shared libnavette it loads when that is not a system
		 * one (a host program's build, under /tmp or $HOME) */
		strv_push(v, "--ro-bind");
		strv_push(v, realpath(exe, real) ? real : exe);
		strv_push(v, exe);
		if (nv_agent_library(target, real, sizeof(real)) == 0) {
			strv_push(v, "--ro-bind");
			strv_push(v, real);
			strv_push(v, target);
		}
	}
	strv_push(v, "--chdir");
	strv_push(v, j->dir);
	strv_push(v, "--");
	strv_push(v, "/bin/sh");
	strv_push(v, launcher);
}
#endif

#if defined(__APPLE__)
/* Seatbelt: the last rule that matches wins. Everything else (network,
 * the system's files) stays allowed, as for any program of the user. */
static const char seatbelt_profile[] =
	"(version 1)\n"
	"(allow default)\n"
	"(deny file-read* file-write* (subpath (param \"USER_HOME\")) "
	"(subpath (param \"NAVETTE_HOME\")))\n"
	"(allow file-read* file-write* (subpath (param \"JOB_DIR\")))\n"
	"(allow file-read* (literal (param \"PROGRAM\")))\n"
	"(allow file-read* (literal (param \"LIBRARY\")))\n"
	"(allow file-read* (subpath (param \"SECRETS_DIR\")))\n"
	"(deny process-info* (target others))\n";

static void seatbelt_command(const agent_sandbox *sb, const char *home,
			     const job *j, const char *launcher,
			     const char *exe, agent_strv *v)
{
	char real[PATH_CAP];
	const char *user_home = getenv("HOME");

	strv_push(v, sb->program);
	strv_pushf(v, "-DUSER_HOME=%s",
		   user_home && realpath(user_home, real) ? real
							  : "/var/empty");
	strv_pushf(v, "-DNAVETTE_HOME=%s", realpath(home, real) ? real : home);
	strv_pushf(v, "-DJOB_DIR=%s", realpath(j->dir, real) ? real : j->dir);
	strv_pushf(v, "-DPROGRAM=%s",
		   exe && realpath(exe, real) ? real : "/var/empty");
	char loaded[PATH_CAP];
	strv_pushf(v, "-DLIBRARY=%s",
		   nv_agent_library(loaded, real, sizeof(real)) == 0
			   ? real
			   : "/var/empty");
	strv_pushf(v, "-DSECRETS_DIR=%s",
		   agent_secrets_dir(j) && realpath(agent_secrets_dir(j), real)
			   ? real
			   : "/var/empty");
	strv_push(v, "-p");
	strv_push(v, seatbelt_profile);
	strv_push(v, "/bin/sh");
	strv_push(v, launcher);
}
#endif

int agent_sandbox_command(const agent_sandbox *sb, const char *home,
			  const job *j, const char *launcher, const char *exe,
			  agent_strv *argv, nv_err *err)
{
	if (strv_init(argv) != 0)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	switch (sb->kind) {
	case SANDBOX_OFF:
		strv_push(argv, "/bin/sh");
		strv_push(argv, launcher);
		break;
#if defined(__linux__)
	case SANDBOX_BWRAP:
		bwrap_command(sb, home, j, launcher, exe, argv);
		break;
#endif
#if defined(__APPLE__)
	case SANDBOX_SEATBELT:
		seatbelt_command(sb, home, j, launcher, exe, argv);
		break;
#endif
	default: agent_strv_free(argv);
#if defined(__APPLE__)
		return nv_err_set(
			err, NV_EREFUSED,
			"this macOS lacks /usr/bin/sandbox-exec; to run local "
			"jobs without a sandbox, start the agent with "
			"NAVETTE_LOCAL_SANDBOX=off (navette agent stop, then "
			"NAVETTE_LOCAL_SANDBOX=off navette run ...)",
			"a job on the host runs in a sandbox, and none was "
			"found");
#else
		return nv_err_set(
			err, NV_EREFUSED,
			"install bubblewrap (apt-get install bubblewrap; dnf "
			"install bubblewrap), then `navette agent stop` so "
			"that "
			"the next agent finds it; or, knowing that the job "
			"then "
			"reads all your files, start the agent with "
			"NAVETTE_LOCAL_SANDBOX=off",
			"a job on the host runs in a sandbox, and bwrap "
			"(bubblewrap) was not found");
#endif
	}
	if (argv->overflow) {
		agent_strv_free(argv);
		return nv_err_set(err, NV_EINVAL, "check NAVETTE_HOME's path",
				  "the sandbox's command is too long");
	}
	return 0;
}

int agent_sandbox_failure(const job *j, char *out, size_t cap)
{
	char path[PATH_CAP];
	char text[512];
	ssize_t n;
	int fd;

	agent_job_path(j, AGENT_SANDBOX_LOG, path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	text[n] = '\0';
	text[strcspn(text, "\r\n")] = '\0';
	nv_pathf(out, cap, "%s", text);
	return out[0] != '\0';
}
