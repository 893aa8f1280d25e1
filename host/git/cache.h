/* The cache of shared recipe libraries (navette.use): one bare repository
 * per remote URL, in a folder the caller gives ($NAVETTE_HOME/libraries),
 * named by the sha256 of the URL and filled by fetching the remote's
 * branches and tags. What a library serves is named by a commit id, so
 * the cache is content-addressed: a fetch adds objects and moves refs,
 * never changes a commit, and a commit fetched once is served with no
 * network. Writers (creation and fetch) hold an flock(2) lock on
 * DIR.lock, so two navette processes fetching one library take turns;
 * readers take none (libgit2 publishes packs and refs by rename); the
 * lock's holder removes what a killed fetch left. No credentials are
 * offered: anonymous https:// (no url.X.insteadOf rewrite) or a local
 * folder (fetched as the file:// URL of its real path) only. Pure C, no Lua;
 * git_lua.c is the binding. */
#ifndef NV_GIT_CACHE_H
#define NV_GIT_CACHE_H

#include "git/git.h"

/* Hex characters of a cache folder's name. */
#define NV_GIT_CACHE_NAME_LEN 40
/* A fetch that would receive more than this is stopped (a hostile or
 * mistaken remote fills no disk). */
#define NV_GIT_CACHE_MAX_BYTES ((unsigned long long)2 << 30)
/* The longest URL and ref accepted. */
#define NV_GIT_CACHE_URL_MAX 2048
#define NV_GIT_CACHE_REF_MAX 200

/* The folder name of url's cache: the first NV_GIT_CACHE_NAME_LEN hex
 * characters of sha256(url). The caller normalises url first. */
int nv_git_cache_name(char name[NV_GIT_CACHE_NAME_LEN + 1], const char *url,
		      nv_err *err);

/* Fetches every branch and tag of url (an https:// URL or the absolute
 * path of a folder, else NV_EINVAL / NV_ENOTFOUND) into the bare
 * repository dir (created when absent: made as DIR.tmp-RANDOM, then
 * renamed), pruning the refs the remote no longer has; objects are kept.
 * Holds the lock on DIR.lock throughout (waits for another process's
 * fetch) and first removes the DIR.tmp-* folders and pack_git2_* files a
 * killed fetch left. A remote that
 * does not exist: NV_ENOTFOUND; refused (authentication, certificate):
 * NV_EREFUSED; any other failure (unreachable): NV_EBACKEND. */
int nv_git_cache_fetch(const char *dir, const char *url, nv_err *err);

/* Hexadecimal names at least this long (and shorter than a full id) look
 * like abbreviated commit ids: refused as refs. */
#define NV_GIT_CACHE_HEX_MIN 4

/* Resolves ref in a cache opened with nv_git_open_bare(): a full commit
 * id (40 hex) is that commit, looked up as an object (never a tag or
 * branch of that name); a name of 4 to 39 hex digits is refused as
 * ambiguous (NV_EINVAL); else the tag refs/tags/REF (peeled to its
 * commit), else the branch refs/heads/REF. *kind receives "tag",
 * "branch" or "commit" (static strings). Not there: NV_ENOTFOUND. */
int nv_git_cache_resolve(const nv_git_repo *repo, const char *ref,
			 char oid_hex[NV_GIT_OID_HEX_LEN + 1],
			 const char **kind, nv_err *err);

/* 0 when the cache holds the commit id (40 hex, looked up as an object,
 * never through a ref), NV_ENOTFOUND when not, NV_EINVAL for no id. */
int nv_git_cache_has_commit(const nv_git_repo *repo, const char *id,
			    nv_err *err);

#endif
