/* The library cache (see cache.h): naming, fetching under a lock, and
 * resolving a library's ref to a commit with its kind. */
#include "git/cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include <git2.h>
#include <openssl/evp.h>

#include "core/fsutil.h"

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

#define CACHE_PATH_MAX 4096

int nv_git_cache_name(char name[NV_GIT_CACHE_NAME_LEN + 1], const char *url,
		      nv_err *err)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;

	name[0] = '\0';
	if (!url || !url[0] || strlen(url) > NV_GIT_CACHE_URL_MAX)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "a library URL is 1 to %d bytes",
				  NV_GIT_CACHE_URL_MAX);
	if (!EVP_Digest(url, strlen(url), md, &len, EVP_sha256(), NULL))
		return nv_err_set(err, NV_EIO, NULL, "sha256 failed");
	for (size_t i = 0; i < NV_GIT_CACHE_NAME_LEN / 2; i++) {
		name[2 * i] = hex[md[i] >> 4];
		name[2 * i + 1] = hex[md[i] & 15];
	}
	name[NV_GIT_CACHE_NAME_LEN] = '\0';
	return 0;
}

/* Takes the writers' lock DIR.lock (waits for it); *fd_out holds it. */
static int lock_cache(int *fd_out, const char *dir, nv_err *err)
{
	char path[CACHE_PATH_MAX];
	int fd, rc;

	*fd_out = -1;
	if (nv_pathf(path, sizeof(path), "%s.lock", dir) < 0)
		return nv_err_set(err, NV_EINVAL, NULL, "cache path too long");
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return nv_err_set_errno(err, NV_EIO, errno, NULL,
					"cannot open '%s'", path);
	while ((rc = flock(fd, LOCK_EX)) < 0 && errno == EINTR)
		;
	if (rc < 0) {
		rc = nv_err_set_errno(err, NV_EIO, errno, NULL,
				      "cannot lock '%s'", path);
		close(fd);
		return rc;
	}
	*fd_out = fd;
	return 0;
}

static int stop_when_too_big(const git_indexer_progress *stats, void *payload)
{
	(void)payload;
	return stats->received_bytes > NV_GIT_CACHE_MAX_BYTES ? -1 : 0;
}

/* The nv code of a failed fetch. */
static int fetch_code(int grc)
{
	const git_error *ge = git_error_last();

	if (grc == GIT_ENOTFOUND)
		return NV_ENOTFOUND;
	if (grc == GIT_EAUTH || grc == GIT_ECERTIFICATE)
		return NV_EREFUSED;
	/* the local transport says "could not find repository" as a plain
	 * error: a path that is no repository does not exist for us */
	if (ge && ge->message && strstr(ge->message, "could not find"))
		return NV_ENOTFOUND;
	return NV_EBACKEND;
}

static int fetch_into(const char *dir, const char *url, nv_err *err)
{
	static char heads[] = "+refs/heads/*:refs/heads/*";
	static char tags[] = "+refs/tags/*:refs/tags/*";
	char *specs[] = {heads, tags};
	git_strarray refspecs = {specs, 2};
	git_fetch_options opts;
	git_repository *repo = NULL;
	git_remote *remote = NULL;
	char msg[NV_ERR_MESSAGE_MAX];
	int grc, rc = 0;

	grc = git_repository_open_bare(&repo, dir);
	if (grc < 0)
		return nv_git_fail(err, NV_EIO,
				   "remove the folder: the next "
				   "fetch makes it again",
				   "the library cache is not a repository");
	git_fetch_options_init(&opts, GIT_FETCH_OPTIONS_VERSION);
	opts.prune = GIT_FETCH_PRUNE;
	opts.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE;
	opts.callbacks.transfer_progress = stop_when_too_big;
	grc = git_remote_create_anonymous(&remote, repo, url);
	if (grc >= 0)
		grc = git_remote_fetch(remote, &refspecs, &opts, "navette");
	if (grc < 0) {
		snprintf(msg, sizeof(msg), "cannot fetch %.300s%s", url,
			 grc == GIT_EUSER ? " (more than 2 GiB)" : "");
		rc = nv_git_fail(err, fetch_code(grc),
				 "check the URL and that it is reachable", msg);
	}
	git_remote_free(remote);
	git_repository_free(repo);
	return rc;
}

/* Makes the bare repository dir by a first fetch under a temporary name,
 * renamed once complete: dir is never a half-made or empty cache (which
 * would read as a library fetched once). */
static int create_cache(const char *dir, const char *url, nv_err *err)
{
	char tmp[CACHE_PATH_MAX], rnd[17];
	git_repository *repo = NULL;
	nv_err ignored;
	int rc;

	rc = nv_random_hex(rnd, 8, err);
	if (rc)
		return rc;
	if (nv_pathf(tmp, sizeof(tmp), "%s.tmp-%s", dir, rnd) < 0)
		return nv_err_set(err, NV_EINVAL, NULL, "cache path too long");
	if (git_repository_init(&repo, tmp, 1) < 0)
		return nv_git_fail(err, NV_EIO, NULL,
				   "cannot create the library cache");
	git_repository_free(repo);
	rc = fetch_into(tmp, url, err);
	if (!rc && rename(tmp, dir) < 0)
		rc = nv_err_set_errno(err, NV_EIO, errno, NULL,
				      "cannot rename '%s'", tmp);
	if (rc)
		nv_remove_tree(tmp, &ignored);
	return rc;
}

int nv_git_cache_fetch(const char *dir, const char *url, nv_err *err)
{
	char parent[CACHE_PATH_MAX];
	char *slash;
	int fd, rc;

	if (!url || !url[0] || strlen(url) > NV_GIT_CACHE_URL_MAX)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "a library URL is 1 to %d bytes",
				  NV_GIT_CACHE_URL_MAX);
	if (url[0] == '/' && access(url, F_OK) < 0)
		return nv_err_set_errno(err, NV_ENOTFOUND, errno,
					"check the library's path",
					"no repository at %.300s", url);
	if (nv_pathf(parent, sizeof(parent), "%s", dir) < 0)
		return nv_err_set(err, NV_EINVAL, NULL, "cache path too long");
	slash = strrchr(parent, '/');
	if (slash && slash != parent) {
		*slash = '\0';
		rc = nv_mkdir_p(parent, 0700, err);
		if (rc)
			return rc;
	}
	if (git_libgit2_init() < 0)
		return nv_git_fail(err, NV_EBACKEND, NULL,
				   "cannot initialise libgit2");
	rc = lock_cache(&fd, dir, err);
	if (!rc)
		rc = access(dir, F_OK) == 0 ? fetch_into(dir, url, err)
					    : create_cache(dir, url, err);
	if (fd >= 0)
		close(fd); /* releases the lock */
	git_libgit2_shutdown();
	return rc;
}

/* The commit refs/<space>/<ref> points to (peeled), if it exists. */
static int lookup_ref(git_repository *repo, const char *space, const char *ref,
		      git_oid *out)
{
	char name[NV_GIT_CACHE_REF_MAX + 16];
	git_reference *r = NULL;
	git_object *obj = NULL;
	int found = 0;

	if (nv_pathf(name, sizeof(name), "refs/%s/%s", space, ref) < 0)
		return 0;
	if (git_reference_lookup(&r, repo, name) == 0 &&
	    git_reference_peel(&obj, r, GIT_OBJECT_COMMIT) == 0) {
		git_oid_cpy(out, git_object_id(obj));
		found = 1;
	}
	git_object_free(obj);
	git_reference_free(r);
	git_error_clear();
	return found;
}

static int is_full_hex(const char *s)
{
	size_t n = strspn(s, "0123456789abcdef");

	return n == NV_GIT_OID_HEX_LEN && s[n] == '\0';
}

int nv_git_cache_resolve(const nv_git_repo *repo, const char *ref,
			 char oid_hex[NV_GIT_OID_HEX_LEN + 1],
			 const char **kind, nv_err *err)
{
	git_repository *r = nv_git_libgit2(repo);
	git_commit *c = NULL;
	git_oid oid;

	oid_hex[0] = '\0';
	*kind = NULL;
	if (!ref || !ref[0] || strlen(ref) > NV_GIT_CACHE_REF_MAX)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "a library ref is 1 to %d bytes",
				  NV_GIT_CACHE_REF_MAX);
	if (lookup_ref(r, "tags", ref, &oid))
		*kind = "tag";
	else if (lookup_ref(r, "heads", ref, &oid))
		*kind = "branch";
	else if (is_full_hex(ref) && git_oid_fromstr(&oid, ref) == 0 &&
		 git_commit_lookup(&c, r, &oid) == 0)
		*kind = "commit";
	git_commit_free(c);
	git_error_clear();
	if (!*kind)
		return nv_err_set(err, NV_ENOTFOUND,
				  "check the tag, branch or commit id in the "
				  "library's repository (git ls-remote URL)",
				  "'%.200s' is no tag, branch or commit of "
				  "the library",
				  ref);
	git_oid_tostr(oid_hex, NV_GIT_OID_HEX_LEN + 1, &oid);
	return 0;
}
