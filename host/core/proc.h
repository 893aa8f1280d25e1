/* Processes as navette sees them. Running a program and waiting for
 * it: one way for every program navette runs to its end (builders,
 * credential commands, the Keychain's `security`, the service manager, a
 * sandbox's `--version`, and ssh). An argv, never a shell; bytes for its
 * stdin; its stdout and stderr kept up to a cap each (what is over is
 * counted, not kept); a time limit after which it (or its process group)
 * is killed and reaped; an environment and a working folder. One poll
 * loop feeds stdin and drains both outputs at once, so neither side ever
 * waits on a full pipe. The long-lived processes (the agent, a job's
 * launcher) are not run here: they outlive the call. For them: telling a
 * process from a later one that was given the same pid, and whether it
 * (or its group) still lives. And keeping other processes of the same
 * user out of this one. No Lua. */
#ifndef NV_PROC_H
#define NV_PROC_H

#include <stddef.h>
#include <sys/types.h>

#include "core/nv_err.h"

/* Where one of the program's outputs goes. */
typedef enum nv_proc_to {
	NV_PROC_NULL = 0,  /* /dev/null */
	NV_PROC_CAPTURE,   /* into the stream's buffer, up to its cap */
	NV_PROC_INHERIT,   /* ours */
	NV_PROC_TO_STDERR, /* stdout only: onto our stderr */
	NV_PROC_MERGE      /* stderr only: into stdout, in order (one pipe) */
} nv_proc_to;

typedef struct nv_proc_stream {
	nv_proc_to to;
	/* NV_PROC_CAPTURE: the caller's buffer of cap bytes, which keeps at
	 * most cap - 1 of them and a NUL after them (cap 0: none kept). It
	 * may hold a secret: no copy of what was read is left elsewhere. */
	char *buf;
	size_t cap;
	int echo; /* NV_PROC_CAPTURE: also copied to our stderr as it comes */
} nv_proc_stream;

typedef struct nv_proc_opts {
	const char *const *argv; /* argv[0] names the program */
	/* the file to run; NULL: argv[0]. With no '/', looked up in PATH
	 * only when search_path is set. */
	const char *program;
	int search_path;
	char *const *envp; /* "NAME=value" each; NULL: ours */
	const char *cwd;   /* its working folder; NULL: ours */
	/* its stdin: these bytes, then end of file (input_len 0: at once);
	 * input NULL: /dev/null. A program that stops reading early is not
	 * an error (res->input_written tells how far it read). */
	const void *input;
	size_t input_len;
	nv_proc_stream out; /* its stdout */
	nv_proc_stream err; /* its stderr */
	/* > 0: past this many seconds it is killed (SIGKILL) and reaped,
	 * even when it closed its outputs and lingers; <= 0: no limit */
	double timeout_s;
	/* its own process group, which the timeout kills as a whole (a
	 * child it left holding a pipe too); else only the process is
	 * killed, and it shares our group (a terminal's Ctrl-C reaches it) */
	int own_group;
	/* output over a cap kills it at once (res->over_cap) */
	int stop_at_cap;
} nv_proc_opts;

typedef struct nv_proc_result {
	pid_t pid;
	int exited;      /* it exited, with exit_status */
	int exit_status; /* -1 unless exited */
	int signal;      /* the signal that ended it, 0 when it exited */
	int timed_out;   /* killed for the time limit */
	int over_cap;    /* killed for output over a cap (stop_at_cap) */
	size_t out_len, out_dropped; /* stdout kept, and counted over cap */
	size_t err_len, err_dropped; /* stderr kept, and counted over cap */
	size_t input_written;        /* bytes of input it was given */
} nv_proc_result;

/* Runs the program to its end. 0 once it ended, whatever its status (a
 * time limit or cap included: see res); NV_ENOTFOUND when the program is
 * not there (ENOENT), another negative NV_E* code when it could not be
 * started or waited for; the message names argv[0] and the cause
 * ("cannot start NAME: ..."), and *start_errno (may be NULL) gets the
 * errno of a failed start (0 otherwise). Process-wide state is left as
 * it was (signal mask, SIGPIPE): a program that closed its stdin early
 * does not kill us. */
int nv_proc_run(const nv_proc_opts *opts, nv_proc_result *res, int *start_errno,
		nv_err *err);

/* Its status as a shell says it: the exit status, 128 + the signal, or
 * -1 when it did not end. */
int nv_proc_status(const nv_proc_result *res);

/* Keeps other processes of this user out of this one: no core dump, no
 * debugger attaching, and (Linux) /proc/PID/environ, /proc/PID/mem and
 * the like readable by no one but root. For the processes that hold a
 * credential or outlive a job of the same user (the agent, the CLI). A
 * program this process executes gets the usual rights back: give it a
 * minimal environment. Returns 0, or -1 where the system refused. */
int nv_proc_deny_inspection(void);

/* When pid started, as text that only compares equal for the same
 * process (the pid alone can be reused). 0, or -1 when the process is
 * gone or this system cannot tell (then out is ""). */
int nv_proc_start_time(pid_t pid, char *out, size_t cap);

/* 1 while a process of group pgid lives, 0 once none does. A process
 * that ended and waits to be reaped (a zombie: its parent, often init
 * after the group leader died, has not collected it yet) does not count;
 * where the system cannot say which those are, any process counts. */
int nv_proc_group_alive(pid_t pgid);

/* 1 while process pid lives (one of another user too), 0 once it is gone
 * or ended and waits to be reaped (a zombie: an orphan whose init does
 * not reap it stays one). Where the system cannot tell zombies, any
 * process counts. */
int nv_proc_alive(pid_t pid);

#endif
