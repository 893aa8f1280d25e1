/* The library cache (see cache.h): naming, fetching under a lock, and
 * resolving a library's ref to a commit with its kind. */
#include "git/cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <git2.h>
#include <openssl/evp.h>

#include "core/fsutil.h"
#include "core/hex.h"

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
	git_remote_create_options ropts;
	git_repository *repo = NULL;
	git_remote *remote = NULL;
	const char *asked;
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
	/* An anonymous remote that no url.X.insteadOf of the user's git
	 * configuration rewrites (an https URL made ssh would connect with
	 * the user's keys to a host the library's URL did not name). */
	git_remote_create_options_init(&ropts,
				       GIT_REMOTE_CREATE_OPTIONS_VERSION);
	ropts.repository = repo;
	ropts.flags = GIT_REMOTE_CREATE_SKIP_INSTEADOF |
		      GIT_REMOTE_CREATE_SKIP_DEFAULT_FETCHSPEC;
	grc = git_remote_create_with_opts(&remote, url, &ropts);
	if (grc >= 0) {
		asked = git_remote_url(remote);
		if (!asked || strcmp(asked, url) != 0) {
			rc = nv_err_set(err, NV_EREFUSED,
					"check url.*.insteadOf in your git "
					"configuration",
					"the remote of %.300s would fetch "
					"from %.300s",
					url, asked ? asked : "(none)");
			goto out;
		}
		grc = git_remote_fetch(remote, &refspecs, &opts, "navette");
	}
	if (grc < 0) {
		snprintf(msg, sizeof(msg), "cannot fetch %.300s%s", url,
			 grc == GIT_EUSER ? " (more than 2 GiB)" : "");
		rc = nv_git_fail(err, fetch_code(grc),
				 "check the URL and that it is reachable", msg);
	}
out:
	git_remote_free(remote);
	git_repository_free(repo);
	return rc;
}

/* Removes what a fetch of dir killed midway left (its writer held the
 * lock we hold now, so nothing of it is in use): the folders
 * DIR.tmp-RANDOM of a first fetch and libgit2's pack_git2_* temporary
 * files in DIR/objects/pack. Best effort: a failure leaves litter only. */
static void remove_stale(const char *dir)
{
	char parent[CACHE_PATH_MAX], prefix[CACHE_PATH_MAX],
		path[CACHE_PATH_MAX];
	const char *base, *slash = strrchr(dir, '/');
	struct dirent *de;
	size_t plen;
	nv_err ignored;
	DIR *d;

	if (!slash || slash == dir)
		return;
	base = slash + 1;
	if (nv_pathf(parent, sizeof(parent), "%.*s", (int)(slash - dir), dir) <
		    0 ||
	    nv_pathf(prefix, sizeof(prefix), "%s.tmp-", base) < 0)
		return;
	plen = strlen(prefix);
	d = opendir(parent);
	while (d && (de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, prefix, plen) != 0 ||
		    strlen(de->d_name + plen) != 16 ||
		    strspn(de->d_name + plen, "0123456789abcdef") != 16)
			continue;
		if (nv_pathf(path, sizeof(path), "%s/%s", parent, de->d_name) >=
		    0)
			nv_remove_tree(path, &ignored);
	}
	if (d)
		closedir(d);
	if (nv_pathf(parent, sizeof(parent), "%s/objects/pack", dir) < 0)
		return;
	d = opendir(parent);
	while (d && (de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "pack_git2_", 10) != 0)
			continue;
		if (nv_pathf(path, sizeof(path), "%s/%s", parent, de->d_name) >=
		    0)
			unlink(path);
	}
	if (d)
		closedir(d);
}

/* Where to fetch from, in buf: an https:// URL as it is, or an existing
 * folder (an absolute path) as the file:// URL of its real path. Nothing
 * else: a path such as "u@host:x" would make libgit2 speak ssh. */
static int fetch_url(char *buf, size_t cap, const char *url, nv_err *err)
{
	char real[PATH_MAX];
	struct stat st;
	size_t n = 0;

	if (strncmp(url, "https://", 8) == 0) {
		if (nv_pathf(buf, cap, "%s", url) < 0)
			return nv_err_set(err, NV_EINVAL, NULL,
					  "the library URL is too long");
		return 0;
	}
	if (url[0] != '/')
		return nv_err_set(err, NV_EINVAL,
				  "use an https:// URL or the path of a "
				  "folder",
				  "a library is fetched from https:// or a "
				  "local folder, not %.300s",
				  url);
	if (stat(url, &st) < 0)
		return nv_err_set_errno(err, NV_ENOTFOUND, errno,
					"check the library's path",
					"no repository at %.300s", url);
	if (!S_ISDIR(st.st_mode))
		return nv_err_set(err, NV_ENOTFOUND, "check the library's path",
				  "no repository at %.300s (not a folder)",
				  url);
	if (!realpath(url, real))
		return nv_err_set_errno(err, NV_ENOTFOUND, errno,
					"check the library's path",
					"no repository at %.300s", url);
	if (cap < 8)
		return nv_err_set(err, NV_EINVAL, NULL, "buffer too small");
	memcpy(buf, "file://", 7);
	n = 7;
	for (const char *p = real; *p; p++) {
		unsigned char ch = (unsigned char)*p;
		int plain = (ch >= 'a' && ch <= 'z') ||
			    (ch >= 'A' && ch <= 'Z') ||
			    (ch >= '0' && ch <= '9') || strchr("/._-~", ch);

		if (n + 4 > cap)
			return nv_err_set(err, NV_EINVAL, NULL,
					  "the library path is too long");
		if (plain) {
			buf[n++] = (char)ch;
		} else {
			nv_hex_percent(buf + n, ch);
			n += 3;
		}
	}
	buf[n] = '\0';
	return 0;
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
	char parent[CACHE_PATH_MAX], from[CACHE_PATH_MAX + 16];
	char *slash;
	int fd, rc;

	if (!url || !url[0] || strlen(url) > NV_GIT_CACHE_URL_MAX)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "a library URL is 1 to %d bytes",
				  NV_GIT_CACHE_URL_MAX);
	rc = fetch_url(from, sizeof(from), url, err);
	if (rc)
		return rc;
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
	if (!rc) {
		remove_stale(dir);
		rc = access(dir, F_OK) == 0 ? fetch_into(dir, from, err)
					    : create_cache(dir, from, err);
	}
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

/* The length of s when it is all hexadecimal digits (either case), else 0. */
static size_t hex_len(const char *s)
{
	size_t n = strspn(s, "0123456789abcdefABCDEF");

	return s[n] == '\0' ? n : 0;
}

int nv_git_cache_has_commit(const nv_git_repo *repo, const char *id,
			    nv_err *err)
{
	git_repository *r = nv_git_libgit2(repo);
	git_commit *c = NULL;
	git_oid oid;
	int found;

	if (!id || hex_len(id) != NV_GIT_OID_HEX_LEN)
		return nv_err_set(err, NV_EINVAL,
				  "give the full 40-character commit id",
				  "'%.60s' is not a commit id", id ? id : "");
	found = git_oid_fromstr(&oid, id) == 0 &&
		git_commit_lookup(&c, r, &oid) == 0;
	git_commit_free(c);
	git_error_clear();
	if (!found)
		return nv_err_set(err, NV_ENOTFOUND, NULL,
				  "commit %s is not in the library's cache",
				  id);
	return 0;
}

int nv_git_cache_resolve(const nv_git_repo *repo, const char *ref,
			 char oid_hex[NV_GIT_OID_HEX_LEN + 1],
			 const char **kind, nv_err *err)
{
	git_oid oid;
	size_t n;
	int rc;

	oid_hex[0] = '\0';
	*kind = NULL;
	if (!ref || !ref[0] || strlen(ref) > NV_GIT_CACHE_REF_MAX)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "a library ref is 1 to %d bytes",
				  NV_GIT_CACHE_REF_MAX);
	n = hex_len(ref);
	if (n == NV_GIT_OID_HEX_LEN) {
		/* a commit id names that object: never a tag or branch
		 * named like it (which would point anywhere) */
		rc = nv_git_cache_has_commit(repo, ref, err);
		if (rc == NV_ENOTFOUND)
			return nv_err_set(err, NV_ENOTFOUND,
					  "check the commit id in the "
					  "library's repository (git log)",
					  "commit %.40s is not in the library",
					  ref);
		if (rc)
			return rc;
		for (size_t i = 0; i < n; i++)
			oid_hex[i] = (char)(ref[i] >= 'A' && ref[i] <= 'F'
						    ? ref[i] - 'A' + 'a'
						    : ref[i]);
		oid_hex[n] = '\0';
		*kind = "commit";
		return 0;
	}
	if (n >= NV_GIT_CACHE_HEX_MIN)
		return nv_err_set(
			err, NV_EINVAL,
			"name the full 40-character commit id, or "
			"a tag whose name is not hexadecimal",
			"'%.40s' looks like an abbreviated commit id: "
			"ambiguous with a tag or branch of that name",
			ref);
	if (lookup_ref(nv_git_libgit2(repo), "tags", ref, &oid))
		*kind = "tag";
	else if (lookup_ref(nv_git_libgit2(repo), "heads", ref, &oid))
		*kind = "branch";
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
