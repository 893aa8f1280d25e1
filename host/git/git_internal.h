/* What git.c shares with the other files of the git primitive (export.c):
 * the repository handle and the error and commit helpers over libgit2.
 * Not for outside host/git. */
#ifndef NV_GIT_INTERNAL_H
#define NV_GIT_INTERNAL_H

#include <fcntl.h>
#include <limits.h>

#include <git2.h>

#include "core/nv_err.h"
#include "git/git.h"

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif
#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

struct nv_git_repo {
	git_repository *repo;
	char *workdir;
};

/* Sets err with our message followed by libgit2's last one, then clears
 * libgit2's slot so a stale message is never appended to a later error.
 * Returns code. */
int nv_git_failf(nv_err *err, int code, const char *hint, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 4, 5)))
#endif
	;

/* The commit of a full hex id in repo (the caller frees it); a short or
 * unknown id: NV_EINVAL / NV_ENOTFOUND with a hint. */
int nv_git_lookup_commit(git_commit **out, git_repository *repo,
			 const char *oid_hex, nv_err *err);

/* The tree of that commit (the caller frees it; *out NULL on error). */
int nv_git_lookup_tree(git_tree **out, git_repository *repo,
		       const char *oid_hex, nv_err *err);

#endif
