/* Processes as navette sees them: keeping other processes of the same
 * user out of this one, and telling a process from a later one that was
 * given the same pid. No Lua. */
#ifndef NV_PROCESS_H
#define NV_PROCESS_H

#include <stddef.h>
#include <sys/types.h>

/* Keeps other processes of this user out of this one: no core dump, no
 * debugger attaching, and (Linux) /proc/PID/environ, /proc/PID/mem and
 * the like readable by no one but root. For the processes that hold a
 * credential or outlive a job of the same user (the agent, the CLI). A
 * program this process executes gets the usual rights back: give it a
 * minimal environment. Returns 0, or -1 where the system refused. */
int nv_process_deny_inspection(void);

/* When pid started, as text that only compares equal for the same
 * process (the pid alone can be reused). 0, or -1 when the process is
 * gone or this system cannot tell (then out is ""). */
int nv_process_start_time(pid_t pid, char *out, size_t cap);

/* 1 while a process of group pgid lives, 0 once none does. A process
 * that ended and waits to be reaped (a zombie: its parent, often init
 * after the group leader died, has not collected it yet) does not count;
 * where the system cannot say which those are, any process counts. */
int nv_process_group_alive(pid_t pgid);

/* 1 while process pid lives (one of another user too), 0 once it is gone
 * or ended and waits to be reaped (a zombie: an orphan whose init does
 * not reap it stays one). Where the system cannot tell zombies, any
 * process counts. */
int nv_process_alive(pid_t pid);

#endif
