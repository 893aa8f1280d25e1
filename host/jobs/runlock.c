/* The submitting process's lock (see runlock.h). A lock file is made
 * under a temporary name, locked, then renamed into place, so that a
 * sweep of stale locks never takes a file whose process has not locked it
 * yet. */
#include "jobs/runlock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "core/fsutil.h"
#include "core/hex.h"

#define RUNLOCK_PATH_MAX 4200
#define RUNLOCK_HOMES    4   /* homes one process submits to */
#define SWEEP_MAX        256 /* stale lock files looked at per sweep */

typedef struct held_lock {
	char path[RUNLOCK_PATH_MAX];
	char home[RUNLOCK_PATH_MAX];
	int fd;
} held_lock;

static char token[NV_RUNLOCK_TOKEN_LEN + 1];
static held_lock held[RUNLOCK_HOMES];
static int held_count;
static pid_t owner; /* a forked child that exits leaves the files alone */

static void runlock_release(void)
{
	if (getpid() != owner)
		return;
	for (int i = 0; i < held_count; i++) {
		(void)unlink(held[i].path);
		close(held[i].fd);
	}
	held_count = 0;
}

static int lock_path(char *out, size_t cap, const char *home, const char *t,
		     const char *suffix)
{
	return nv_pathf(out, cap, "%s/runs/%s%s", home, t, suffix);
}

/* Whether the lock file at path is held by no process; a missing file is
 * held by none. */
static int path_unheld(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	int unheld;

	if (fd < 0)
		return errno == ENOENT;
	unheld = flock(fd, LOCK_EX | LOCK_NB) == 0;
	close(fd);
	return unheld;
}

/* Removes the lock files of ended processes (killed runs leave theirs). */
static void sweep(const char *home)
{
	char dir[RUNLOCK_PATH_MAX], path[RUNLOCK_PATH_MAX];
	struct dirent *e;
	DIR *d;
	int seen = 0;

	if (nv_pathf(dir, sizeof(dir), "%s/runs", home) || !(d = opendir(dir)))
		return;
	while ((e = readdir(d)) && seen < SWEEP_MAX) {
		size_t n = strlen(e->d_name);
		if (n != NV_RUNLOCK_TOKEN_LEN + 5 ||
		    strcmp(e->d_name + NV_RUNLOCK_TOKEN_LEN, ".lock") != 0)
			continue;
		seen++;
		if (nv_pathf(path, sizeof(path), "%s/%s", dir, e->d_name) ==
			    0 &&
		    strncmp(e->d_name, token, NV_RUNLOCK_TOKEN_LEN) != 0 &&
		    path_unheld(path))
			(void)unlink(path);
	}
	closedir(d);
}

int nv_runlock_token(const char *home, char out[NV_RUNLOCK_TOKEN_LEN + 1],
		     nv_err *err)
{
	char dir[RUNLOCK_PATH_MAX], temp[RUNLOCK_PATH_MAX];
	held_lock *h;
	int fd;

	if (!token[0]) {
		if (nv_random_hex(token, NV_RUNLOCK_TOKEN_LEN / 2, err))
			return err->code;
		owner = getpid();
		atexit(runlock_release);
	}
	memcpy(out, token, sizeof(token));
	for (int i = 0; i < held_count; i++)
		if (strcmp(held[i].home, home) == 0)
			return 0;
	if (held_count == RUNLOCK_HOMES)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "one process submits to %d navette homes "
				  "at most",
				  RUNLOCK_HOMES);
	h = &held[held_count];
	if (nv_pathf(h->home, sizeof(h->home), "%s", home) ||
	    nv_pathf(dir, sizeof(dir), "%s/runs", home) ||
	    lock_path(h->path, sizeof(h->path), home, token, ".lock") ||
	    lock_path(temp, sizeof(temp), home, token, ".new"))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "navette home path too long: %s", home);
	if (nv_mkdir_p(dir, 0700, err))
		return err->code;
	fd = open(temp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
		  0600);
	if (fd < 0)
		return nv_err_set_errno(err, NV_EIO, errno,
					"check that NAVETTE_HOME is writable "
					"and not full",
					"cannot create %s", temp);
	if (flock(fd, LOCK_EX | LOCK_NB) != 0 || rename(temp, h->path) != 0) {
		int e = errno;
		(void)unlink(temp);
		close(fd);
		return nv_err_set_errno(
			err, NV_EIO, e, "check that NAVETTE_HOME is writable",
			"cannot take the submission lock %s", h->path);
	}
	h->fd = fd;
	held_count++;
	sweep(home);
	return 0;
}

int nv_runlock_gone(const char *home, const char *t)
{
	char path[RUNLOCK_PATH_MAX];

	if (!nv_hex_is_lower(t, NV_RUNLOCK_TOKEN_LEN))
		return 1;
	if (strcmp(t, token) == 0)
		return 0;
	if (lock_path(path, sizeof(path), home, t, ".lock"))
		return 0;
	return path_unheld(path);
}
