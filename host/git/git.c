/* The git primitive in pure C: open, resolve, status, remote presence,
 * export and lock-file fingerprint over libgit2 (see git.h for the
 * contract). libgit2's error codes are translated into nv_err codes here so
 * that callers never see a git_error. The export writes only through folder
 * descriptors it created itself, which is what keeps a hostile tree (a
 * symlink followed by a path through it) from writing outside dest_dir. */
#include "git/git.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <git2.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "core/buf.h"
#include "core/fsname.h"

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

static const char HINT_NOT_A_REPO[] =
	"run git init / the recipe must live in a git repository";
static const char HINT_UNKNOWN_REF[] =
	"check the branch, tag or commit name (git log --oneline, git tag)";
static const char HINT_FULL_OID[] =
	"pass a full 40-character commit id (resolve the ref first)";

/* libgit2 code -> nv code, for the cases that callers act upon. */
static int map_git_code(int gcode)
{
	switch (gcode) {
	case GIT_ENOTFOUND: return NV_ENOTFOUND;
	case GIT_EAMBIGUOUS:
	case GIT_EINVALIDSPEC: return NV_EINVAL;
	case GIT_EOWNER:
	case GIT_EUNBORNBRANCH:
	case GIT_EBAREREPO: return NV_EREFUSED;
	default: return NV_EIO;
	}
}

/* Sets err with our message followed by libgit2's last one, then clears
 * libgit2's slot so a stale message is never appended to a later error. */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static int
git_fail(nv_err *err, int code, const char *hint, const char *fmt, ...)
{
	char msg[NV_ERR_MESSAGE_MAX];
	const git_error *ge = git_error_last();
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (ge && ge->message && ge->message[0])
		nv_err_set(err, code, hint, "%s: %s", msg, ge->message);
	else
		nv_err_set(err, code, hint, "%s", msg);
	git_error_clear();
	return code;
}

/* Copies src into dst[cap], cutting before a UTF-8 lead byte when it must
 * cut, so that a truncated name or summary is still valid text. */
static void copy_bounded_utf8(char *dst, size_t cap, const char *src)
{
	size_t n;

	if (!src)
		src = "";
	n = strlen(src);
	if (n >= cap) {
		n = cap - 1;
		while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80)
			n--;
	}
	memcpy(dst, src, n);
	dst[n] = '\0';
}

static int parse_oid(git_oid *out, const char *hex, nv_err *err)
{
	size_t i;

	if (!hex)
		return nv_err_set(err, NV_EINVAL, HINT_FULL_OID,
				  "missing commit id");
	for (i = 0; i < NV_GIT_OID_HEX_LEN; i++) {
		char c = hex[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
		      (c >= 'A' && c <= 'F')))
			break;
	}
	if (i != NV_GIT_OID_HEX_LEN || hex[i] != '\0')
		return nv_err_set(err, NV_EINVAL, HINT_FULL_OID,
				  "'%.80s' is not a full commit id", hex);
	if (git_oid_fromstr(out, hex) < 0)
		return git_fail(err, NV_EINVAL, HINT_FULL_OID,
				"'%s' is not a commit id", hex);
	return 0;
}

static int lookup_commit(git_commit **out, git_repository *repo,
			 const char *oid_hex, nv_err *err)
{
	git_oid oid;
	int rc;

	rc = parse_oid(&oid, oid_hex, err);
	if (rc)
		return rc;
	rc = git_commit_lookup(out, repo, &oid);
	if (rc < 0)
		return git_fail(err, map_git_code(rc), HINT_UNKNOWN_REF,
				"commit %s not found in this repository",
				oid_hex);
	return 0;
}

/* What the configuration says about one remote. We read remote.<name>.*
 * keys ourselves rather than calling git_remote_lookup/git_remote_list:
 * those match config keys with regular expressions, and the PCRE backend of
 * libgit2 1.5 leaks on every non-matching key (libgit2 PR #6382). A side
 * effect: url.<base>.insteadOf rewriting is not applied, so the URL is the
 * one the user configured. */
struct remote_scan {
	const char *want;
	int exists;
	int has_url;
	int url_too_long;
	char url[4096];
	char known[256]; /* configured names, for "unknown remote" messages */
	size_t known_used;
};

static int scan_remotes(git_repository *repo, struct remote_scan *rs,
			nv_err *err)
{
	git_config *cfg = NULL;
	git_config_iterator *it = NULL;
	git_config_entry *e;
	int rc;

	if (git_repository_config_snapshot(&cfg, repo) < 0)
		return git_fail(err, NV_EIO, "check .git/config",
				"cannot read the repository configuration");
	if (git_config_iterator_new(&it, cfg) < 0) {
		git_config_free(cfg);
		return git_fail(err, NV_EIO, "check .git/config",
				"cannot read the repository configuration");
	}
	while ((rc = git_config_next(&e, it)) == 0) {
		const char *sub, *last;
		size_t len;

		/* remote.<name>.<key>: the name may itself hold dots. */
		if (strncmp(e->name, "remote.", 7) != 0)
			continue;
		sub = e->name + 7;
		last = strrchr(sub, '.');
		if (!last || last == sub)
			continue;
		len = (size_t)(last - sub);
		if (strcmp(last, ".url") == 0 &&
		    rs->known_used < sizeof(rs->known)) {
			int n = snprintf(rs->known + rs->known_used,
					 sizeof(rs->known) - rs->known_used,
					 "%s%.*s", rs->known_used ? ", " : "",
					 (int)len, sub);
			if (n > 0)
				rs->known_used += (size_t)n;
		}
		if (!rs->want || strlen(rs->want) != len ||
		    strncmp(sub, rs->want, len) != 0)
			continue;
		rs->exists = 1;
		if (strcmp(last, ".url") == 0 && e->value) {
			/* Last one wins, as in git. */
			rs->has_url = 1;
			rs->url_too_long = strlen(e->value) >= sizeof(rs->url);
			if (!rs->url_too_long)
				snprintf(rs->url, sizeof(rs->url), "%s",
					 e->value);
		}
	}
	git_config_iterator_free(it);
	git_config_free(cfg);
	if (rc != GIT_ITEROVER)
		return git_fail(err, NV_EIO, "check .git/config",
				"cannot read the repository configuration");
	git_error_clear();
	if (rs->known_used >= sizeof(rs->known))
		rs->known[sizeof(rs->known) - 1] = '\0';
	if (!rs->exists)
		return nv_err_set(err, NV_ENOTFOUND,
				  "check the remote name (git remote -v)",
				  "no remote named '%.100s' (configured: %s)",
				  rs->want, rs->known[0] ? rs->known : "none");
	return 0;
}

int nv_git_open(nv_git_repo **out, const char *path, nv_err *err)
{
	char start[PATH_MAX];
	git_repository *repo = NULL;
	nv_git_repo *r = NULL;
	const char *wd;
	struct stat st;
	size_t len;
	int rc;

	*out = NULL;
	if (!path || !path[0])
		return nv_err_set(err, NV_EINVAL, NULL,
				  "empty repository path");
	if (strlen(path) >= sizeof(start))
		return nv_err_set(err, NV_EINVAL, NULL, "path too long");
	if (stat(path, &st) < 0)
		return nv_err_set_errno(err, NV_ENOTFOUND, errno,
					HINT_NOT_A_REPO, "cannot open '%s'",
					path);
	snprintf(start, sizeof(start), "%s", path);
	if (!S_ISDIR(st.st_mode)) {
		/* Discovery starts from the folder holding the file. */
		char *slash = strrchr(start, '/');
		if (!slash)
			snprintf(start, sizeof(start), ".");
		else if (slash == start)
			start[1] = '\0';
		else
			*slash = '\0';
	}

	if (git_libgit2_init() < 0)
		return git_fail(err, NV_EBACKEND, NULL,
				"cannot initialise libgit2");
	rc = git_repository_open_ext(&repo, start, 0, NULL);
	if (rc == GIT_ENOTFOUND) {
		git_error_clear();
		rc = nv_err_set(err, NV_ENOTFOUND, HINT_NOT_A_REPO,
				"'%s' is not inside a git repository", path);
		goto fail;
	}
	if (rc == GIT_EOWNER) {
		rc = git_fail(
			err, NV_EREFUSED,
			"the repository belongs to another user; add it to "
			"safe.directory if you trust it",
			"refusing to open the repository of '%s'", path);
		goto fail;
	}
	if (rc < 0) {
		rc = git_fail(err, map_git_code(rc), HINT_NOT_A_REPO,
			      "cannot open the repository of '%s'", path);
		goto fail;
	}
	wd = git_repository_workdir(repo);
	if (git_repository_is_bare(repo) || !wd) {
		rc = nv_err_set(
			err, NV_EREFUSED,
			"use a clone with a working tree (git clone without "
			"--bare)",
			"the repository of '%s' is bare", path);
		goto fail;
	}

	r = calloc(1, sizeof(*r));
	if (r)
		r->workdir = strdup(wd);
	if (!r || !r->workdir) {
		rc = nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
		goto fail;
	}
	len = strlen(r->workdir);
	while (len > 1 && r->workdir[len - 1] == '/')
		r->workdir[--len] = '\0';
	r->repo = repo;
	*out = r;
	return 0;

fail:
	if (r)
		free(r->workdir);
	free(r);
	git_repository_free(repo);
	git_libgit2_shutdown();
	return rc;
}

int nv_git_open_bare(nv_git_repo **out, const char *gitdir, nv_err *err)
{
	git_repository *repo = NULL;
	nv_git_repo *r = NULL;
	int rc;

	*out = NULL;
	if (!gitdir || !gitdir[0])
		return nv_err_set(err, NV_EINVAL, NULL,
				  "empty repository path");
	if (git_libgit2_init() < 0)
		return git_fail(err, NV_EBACKEND, NULL,
				"cannot initialise libgit2");
	rc = git_repository_open_ext(
		&repo, gitdir,
		GIT_REPOSITORY_OPEN_NO_SEARCH | GIT_REPOSITORY_OPEN_BARE, NULL);
	if (rc < 0) {
		rc = git_fail(err, map_git_code(rc), NULL,
			      "cannot open the repository '%s'", gitdir);
		goto fail;
	}
	r = calloc(1, sizeof(*r));
	if (r)
		r->workdir = strdup(gitdir);
	if (!r || !r->workdir) {
		rc = nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
		goto fail;
	}
	r->repo = repo;
	*out = r;
	return 0;

fail:
	if (r)
		free(r->workdir);
	free(r);
	git_repository_free(repo);
	git_libgit2_shutdown();
	return rc;
}

int nv_git_fail(nv_err *err, int code, const char *hint, const char *message)
{
	return git_fail(err, code, hint, "%s", message);
}

void nv_git_free(nv_git_repo *repo)
{
	if (!repo)
		return;
	git_repository_free(repo->repo);
	free(repo->workdir);
	free(repo);
	git_libgit2_shutdown();
}

struct git_repository *nv_git_libgit2(const nv_git_repo *repo)
{
	return repo->repo;
}

const char *nv_git_workdir(const nv_git_repo *repo)
{
	return repo->workdir;
}

int nv_git_resolve(const nv_git_repo *repo, const char *ref,
		   char oid_hex[NV_GIT_OID_HEX_LEN + 1], nv_err *err)
{
	git_object *obj = NULL, *commit = NULL;
	int rc;

	oid_hex[0] = '\0';
	if (!ref || !ref[0])
		return nv_err_set(err, NV_EINVAL, HINT_UNKNOWN_REF,
				  "empty ref");
	/* HEAD, HEAD~1, HEAD^{tree}... all fail alike on an unborn HEAD
	 * (strchr also matches the terminating NUL, i.e. plain "HEAD"). */
	if (strncmp(ref, "HEAD", 4) == 0 && strchr("~^@:", ref[4]) &&
	    git_repository_head_unborn(repo->repo) == 1)
		return nv_err_set(err, NV_EREFUSED,
				  "commit first (git add, git commit)",
				  "the repository has no commit yet; commit "
				  "first");
	git_error_clear();
	rc = git_revparse_single(&obj, repo->repo, ref);
	if (rc == GIT_EAMBIGUOUS)
		return git_fail(err, NV_EINVAL,
				"give more characters of the commit id",
				"'%.100s' matches several objects", ref);
	if (rc < 0)
		return git_fail(err,
				rc == GIT_ENOTFOUND || rc == GIT_EINVALIDSPEC
					? NV_ENOTFOUND
					: map_git_code(rc),
				HINT_UNKNOWN_REF, "unknown ref '%.100s'", ref);
	rc = git_object_peel(&commit, obj, GIT_OBJECT_COMMIT);
	git_object_free(obj);
	if (rc < 0)
		return git_fail(err, NV_EINVAL, HINT_UNKNOWN_REF,
				"'%.100s' does not name a commit", ref);
	git_oid_tostr(oid_hex, NV_GIT_OID_HEX_LEN + 1, git_object_id(commit));
	git_object_free(commit);
	return 0;
}

int nv_git_path_state(const nv_git_repo *repo, const char *rel,
		      enum nv_git_path_state *state, nv_err *err)
{
	git_index *index = NULL;
	char folder[4096];
	int ignored = 0, rc;
	size_t pos;

	*state = NV_GIT_PATH_UNTRACKED;
	if (!rel || !rel[0] || rel[0] == '/')
		return nv_err_set(err, NV_EINVAL, NULL,
				  "a path relative to the repository's root "
				  "is needed");
	git_error_clear();
	rc = git_repository_index(&index, repo->repo);
	if (rc < 0)
		return git_fail(err, NV_EIO, NULL,
				"cannot read the index of %s", repo->workdir);
	/* the file itself, or a folder holding tracked files */
	if (git_index_get_bypath(index, rel, 0))
		*state = NV_GIT_PATH_TRACKED;
	else if (snprintf(folder, sizeof(folder), "%s/", rel) <
			 (int)sizeof(folder) &&
		 git_index_find_prefix(&pos, index, folder) == 0)
		*state = NV_GIT_PATH_TRACKED;
	git_error_clear();
	git_index_free(index);
	if (*state == NV_GIT_PATH_TRACKED)
		return 0;
	rc = git_ignore_path_is_ignored(&ignored, repo->repo, rel);
	if (rc < 0)
		return git_fail(err, NV_EIO, NULL,
				"cannot read the ignore rules of %s",
				repo->workdir);
	if (ignored)
		*state = NV_GIT_PATH_IGNORED;
	return 0;
}

int nv_git_commit_info(const nv_git_repo *repo, const char *oid_hex,
		       nv_git_commit *info, nv_err *err)
{
	const git_signature *committer, *author;
	git_commit *c = NULL;
	int rc;

	memset(info, 0, sizeof(*info));
	rc = lookup_commit(&c, repo->repo, oid_hex, err);
	if (rc)
		return rc;
	git_oid_tostr(info->id, sizeof(info->id), git_commit_id(c));
	memcpy(info->short_id, info->id, NV_GIT_SHORT_ID_LEN);
	info->short_id[NV_GIT_SHORT_ID_LEN] = '\0';
	committer = git_commit_committer(c);
	author = git_commit_author(c);
	info->time = (int64_t)committer->when.time;
	info->tz_offset_min = committer->when.offset;
	copy_bounded_utf8(info->summary, sizeof(info->summary),
			  git_commit_summary(c));
	copy_bounded_utf8(info->author_name, sizeof(info->author_name),
			  author->name);
	copy_bounded_utf8(info->author_email, sizeof(info->author_email),
			  author->email);
	git_error_clear(); /* git_commit_summary may fail harmlessly */
	git_commit_free(c);
	return 0;
}

/* One kind per entry: the one that most needs the user's attention. */
static const char *status_kind(unsigned int s)
{
	if (s & GIT_STATUS_CONFLICTED)
		return "conflicted";
	if (s & (GIT_STATUS_WT_DELETED | GIT_STATUS_INDEX_DELETED))
		return "deleted";
	if (s & (GIT_STATUS_WT_RENAMED | GIT_STATUS_INDEX_RENAMED))
		return "renamed";
	if (s & (GIT_STATUS_WT_TYPECHANGE | GIT_STATUS_INDEX_TYPECHANGE))
		return "typechange";
	if (s & GIT_STATUS_WT_MODIFIED)
		return "modified";
	if (s & (GIT_STATUS_INDEX_NEW | GIT_STATUS_INDEX_MODIFIED))
		return "staged";
	if (s & GIT_STATUS_WT_NEW)
		return "untracked";
	return NULL; /* current, ignored, unreadable */
}

int nv_git_status(const nv_git_repo *repo, nv_git_status_cb cb, void *payload,
		  size_t *count, nv_err *err)
{
	git_status_options opts;
	git_status_list *list = NULL;
	size_t i, n, reported = 0;
	int rc = 0;

	if (count)
		*count = 0;
	git_status_options_init(&opts, GIT_STATUS_OPTIONS_VERSION);
	opts.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
	/* No INCLUDE_IGNORED: ignored files are never dirt. */
	opts.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED |
		     GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS |
		     GIT_STATUS_OPT_RENAMES_HEAD_TO_INDEX |
		     GIT_STATUS_OPT_SORT_CASE_SENSITIVELY;
	if (git_status_list_new(&list, repo->repo, &opts) < 0)
		return git_fail(err, NV_EIO,
				"check the repository (git status)",
				"cannot read the status of %s", repo->workdir);
	n = git_status_list_entrycount(list);
	for (i = 0; i < n; i++) {
		const git_status_entry *e = git_status_byindex(list, i);
		const char *kind = e ? status_kind(e->status) : NULL;
		const char *path = NULL;

		if (!kind)
			continue;
		if (e->index_to_workdir)
			path = e->index_to_workdir->new_file.path;
		else if (e->head_to_index)
			path = e->head_to_index->new_file.path;
		if (!path)
			continue;
		reported++;
		if (cb) {
			rc = cb(path, kind, payload);
			if (rc) {
				nv_err_set(err, rc < 0 ? rc : NV_EFAILED, NULL,
					   "status walk stopped by the caller");
				break;
			}
		}
	}
	git_status_list_free(list);
	if (count)
		*count = reported;
	return rc;
}

int nv_git_on_remote(const nv_git_repo *repo, const char *remote,
		     const char *oid_hex, int *present, nv_err *err)
{
	char prefix[256];
	git_reference_iterator *it = NULL;
	git_reference *ref = NULL;
	git_commit *c = NULL;
	git_oid oid;
	size_t plen;
	int rc;

	*present = 0;
	rc = lookup_commit(&c, repo->repo, oid_hex, err);
	if (rc)
		return rc;
	oid = *git_commit_id(c);
	git_commit_free(c);
	if (remote) {
		struct remote_scan rs = {.want = remote};

		rc = scan_remotes(repo->repo, &rs, err);
		OPENSSL_cleanse(rs.url, sizeof(rs.url));
		if (rc)
			return rc;
		if (snprintf(prefix, sizeof(prefix), "refs/remotes/%s/",
			     remote) >= (int)sizeof(prefix))
			return nv_err_set(err, NV_EINVAL, NULL,
					  "remote name too long");
	} else {
		snprintf(prefix, sizeof(prefix), "refs/remotes/");
	}
	plen = strlen(prefix);

	if (git_reference_iterator_new(&it, repo->repo) < 0)
		return git_fail(err, NV_EIO, NULL, "cannot list references");
	while (!*present && (rc = git_reference_next(&ref, it)) == 0) {
		git_object *tip = NULL;

		/* Symbolic refs (origin/HEAD) point at refs seen anyway. */
		if (strncmp(git_reference_name(ref), prefix, plen) == 0 &&
		    git_reference_type(ref) == GIT_REFERENCE_DIRECT &&
		    git_reference_peel(&tip, ref, GIT_OBJECT_COMMIT) == 0) {
			const git_oid *t = git_object_id(tip);
			/* A ref whose history is missing (shallow fetch)
			 * cannot vouch for the commit: treat it as absent. */
			if (git_oid_equal(t, &oid) ||
			    git_graph_descendant_of(repo->repo, t, &oid) == 1)
				*present = 1;
			git_object_free(tip);
		}
		git_reference_free(ref);
		ref = NULL;
	}
	git_reference_iterator_free(it);
	if (rc < 0 && rc != GIT_ITEROVER && !*present)
		return git_fail(err, NV_EIO, NULL, "cannot list references");
	git_error_clear();
	return 0;
}

void nv_git_url_strip_userinfo(char *url)
{
	char *auth, *end, *at = NULL, *q;

	auth = strstr(url, "://");
	if (!auth)
		return; /* scp-like or a path: no password can hide there */
	auth += 3;
	end = auth + strcspn(auth, "/?#");
	for (q = auth; q < end; q++)
		if (*q == '@')
			at = q;
	if (at)
		memmove(auth, at + 1, strlen(at + 1) + 1);
}

/* Adds the file at path to cfg at level when it exists (an include of it
 * is followed by libgit2, a conditional one against repo). */
static int config_add(git_config *cfg, const char *path,
		      git_config_level_t level, const git_repository *repo)
{
	int rc;

	if (!path || !path[0])
		return 0;
	rc = git_config_add_file_ondisk(cfg, path, level, repo, 0);
	return rc == GIT_ENOTFOUND ? 0 : rc;
}

int nv_git_config_string(const nv_git_repo *repo, const char *name, char *buf,
			 size_t cap, nv_err *err)
{
	git_config *cfg = NULL;
	git_buf value = GIT_BUF_INIT, path = GIT_BUF_INIT;
	const char *global = getenv("GIT_CONFIG_GLOBAL");
	const char *nosystem = getenv("GIT_CONFIG_NOSYSTEM");
	int rc = 0, grc = 0;

	if (cap)
		buf[0] = '\0';
	/* libgit2 set up for this call (its search paths are freed by the
	 * matching shutdown), as every entry point here does */
	if (git_libgit2_init() < 0)
		return nv_err_set(err, NV_EIO, NULL, "cannot start libgit2");
	if (git_config_new(&cfg) < 0) {
		rc = git_fail(err, NV_ENOMEM, NULL,
			      "cannot read the git configuration");
		git_libgit2_shutdown();
		return rc;
	}
	/* The files git reads, in its order, with its variables: system
	 * (unless GIT_CONFIG_NOSYSTEM), XDG, global (GIT_CONFIG_GLOBAL or
	 * ~/.gitconfig), the repository's. */
	if (!(nosystem && nosystem[0] && strcmp(nosystem, "0") != 0 &&
	      strcmp(nosystem, "false") != 0) &&
	    git_config_find_system(&path) == 0)
		grc = config_add(cfg, path.ptr, GIT_CONFIG_LEVEL_SYSTEM, NULL);
	git_buf_dispose(&path);
	if (!grc && git_config_find_xdg(&path) == 0)
		grc = config_add(cfg, path.ptr, GIT_CONFIG_LEVEL_XDG, NULL);
	git_buf_dispose(&path);
	if (!grc && global && global[0])
		grc = config_add(cfg, global, GIT_CONFIG_LEVEL_GLOBAL, NULL);
	else if (!grc && git_config_find_global(&path) == 0)
		grc = config_add(cfg, path.ptr, GIT_CONFIG_LEVEL_GLOBAL, NULL);
	git_buf_dispose(&path);
	if (!grc && repo) {
		char local[4096];

		if (snprintf(local, sizeof(local), "%sconfig",
			     git_repository_path(repo->repo)) <
		    (int)sizeof(local))
			grc = config_add(cfg, local, GIT_CONFIG_LEVEL_LOCAL,
					 repo->repo);
	}
	if (grc < 0) {
		rc = git_fail(err, NV_EIO, NULL,
			      "cannot read the git configuration");
		goto out;
	}
	grc = git_config_get_string_buf(&value, cfg, name);
	if (grc == GIT_ENOTFOUND) {
		rc = nv_err_set(err, NV_ENOTFOUND, NULL, "%s is not set", name);
		goto out;
	}
	if (grc < 0) {
		rc = git_fail(err, NV_EIO, NULL, "cannot read %s", name);
		goto out;
	}
	if (value.size >= cap) {
		rc = nv_err_set(err, NV_ENOMEM, NULL,
				"%s is longer than %zu bytes", name,
				cap ? cap - 1 : 0);
		goto out;
	}
	memcpy(buf, value.ptr, value.size + 1);
out:
	git_buf_dispose(&value);
	git_config_free(cfg);
	git_libgit2_shutdown();
	return rc;
}

int nv_git_remote_url(const nv_git_repo *repo, const char *name, char *buf,
		      size_t cap, nv_err *err)
{
	struct remote_scan rs = {0};
	size_t len;
	int rc;

	if (cap)
		buf[0] = '\0';
	rs.want = name ? name : "origin";
	rc = scan_remotes(repo->repo, &rs, err);
	if (rc)
		goto out;
	if (!rs.has_url) {
		rc = nv_err_set(err, NV_ENOTFOUND,
				"set one with git remote set-url",
				"remote '%s' has no URL", rs.want);
		goto out;
	}
	nv_git_url_strip_userinfo(rs.url);
	len = strlen(rs.url);
	if (rs.url_too_long || len >= cap) {
		rc = nv_err_set(err, NV_ENOMEM, NULL,
				"URL of remote '%s' longer than %zu bytes",
				rs.want, cap ? cap - 1 : 0);
		goto out;
	}
	memcpy(buf, rs.url, len + 1);
out:
	OPENSSL_cleanse(rs.url, sizeof(rs.url)); /* may hold a password */
	return rc;
}

/* ---- export ---- */

struct export_ctx {
	git_repository *repo;
	git_odb *odb;
	nv_git_export_stats st;
	nv_err *err;
	/* relative path of the current folder (messages only: writes are
	 * openat-relative), and a symlink's target */
	char path[NV_GIT_EXPORT_PATH_MAX];
	size_t path_len;
	char target[NV_GIT_EXPORT_PATH_MAX];
};

static const char HINT_UNSAFE[] =
	"the commit holds a path that could escape the export folder; "
	"fix the tree or export another commit";

/* Whether a volume could take name for .git: in any case, with trailing
 * dots or blanks (SMB shares drop them), or with code points HFS+ ignores
 * (git's list: U+200C..U+200F, U+202A..U+202E, U+206A..U+206F, U+FEFF). */
static int git_name_is_dotgit(const char *name)
{
	const unsigned char *p = (const unsigned char *)name;
	char kept[64];
	size_t n = 0;

	while (*p) {
		if ((p[0] == 0xe2 && p[1] == 0x80 &&
		     ((p[2] >= 0x8c && p[2] <= 0x8f) ||
		      (p[2] >= 0xaa && p[2] <= 0xae))) ||
		    (p[0] == 0xe2 && p[1] == 0x81 && p[2] >= 0xaa &&
		     p[2] <= 0xaf) ||
		    (p[0] == 0xef && p[1] == 0xbb && p[2] == 0xbf)) {
			p += 3;
			continue;
		}
		if (n == sizeof(kept))
			return 0; /* far longer than .git and its dots */
		kept[n++] = (char)*p++;
	}
	return nv_fsname_is_reserved(kept, n, ".git");
}

/* A tree entry name must stay a single component inside its folder. */
int nv_git_entry_name_ok(const char *name)
{
	if (!name[0] || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return 0;
	if (strchr(name, '/'))
		return 0;
	/* Case-insensitive filesystems (macOS) see .GIT as .git, SMB shares
	 * drop trailing dots and blanks (.git.), and HFS+ ignores some
	 * invisible code points (.g\u200cit), as git itself refuses. */
	if (git_name_is_dotgit(name))
		return 0;
	return 1;
}

static int export_io_fail(struct export_ctx *x, int errnum, const char *what,
			  const char *name)
{
	return nv_err_set_errno(x->err, NV_EIO, errnum,
				"check the destination's space and rights",
				"export: cannot %s '%s%s'", what, x->path,
				name);
}

static int write_all(int fd, const char *data, size_t len)
{
	while (len > 0) {
		ssize_t w = write(fd, data, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		data += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Streams a loose object in bounded memory; packed objects (which libgit2
 * cannot stream) are read whole. */
static int export_blob_content(struct export_ctx *x, int fd, const git_oid *id,
			       const char *name)
{
	git_odb_stream *stream = NULL;
	git_object_t type;
	git_blob *blob = NULL;
	size_t len = 0, total = 0;
	char buf[32768];

	if (git_odb_open_rstream(&stream, &len, &type, x->odb, id) == 0) {
		int n = 0;

		if (type != GIT_OBJECT_BLOB) {
			git_odb_stream_free(stream);
			return nv_err_set(x->err, NV_EIO, NULL,
					  "export: '%s%s' is not a blob",
					  x->path, name);
		}
		while ((n = git_odb_stream_read(stream, buf, sizeof(buf))) >
		       0) {
			if (write_all(fd, buf, (size_t)n) < 0) {
				int e = errno;
				git_odb_stream_free(stream);
				return export_io_fail(x, e, "write", name);
			}
			total += (size_t)n;
		}
		git_odb_stream_free(stream);
		if (n < 0 || total != len)
			return git_fail(x->err, NV_EIO, NULL,
					"export: cannot read blob of '%s%s'",
					x->path, name);
		x->st.bytes += total;
		return 0;
	}
	git_error_clear();
	if (git_blob_lookup(&blob, x->repo, id) < 0)
		return git_fail(x->err, NV_EIO, NULL,
				"export: cannot read blob of '%s%s'", x->path,
				name);
	len = (size_t)git_blob_rawsize(blob);
	if (write_all(fd, git_blob_rawcontent(blob), len) < 0) {
		int e = errno;
		git_blob_free(blob);
		return export_io_fail(x, e, "write", name);
	}
	git_blob_free(blob);
	x->st.bytes += len;
	return 0;
}

static int export_file(struct export_ctx *x, int dirfd, const char *name,
		       const git_oid *id, mode_t mode)
{
	int fd, rc;

	/* O_EXCL|O_NOFOLLOW: never reuse or follow what is already there. */
	fd = openat(dirfd, name,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return export_io_fail(x, errno, "create", name);
	if (fchmod(fd, mode) < 0) { /* the umask must not decide the mode */
		rc = export_io_fail(x, errno, "set the mode of", name);
		close(fd);
		return rc;
	}
	rc = export_blob_content(x, fd, id, name);
	if (close(fd) < 0 && !rc)
		rc = export_io_fail(x, errno, "write", name);
	if (!rc)
		x->st.files++;
	return rc;
}

static int export_symlink(struct export_ctx *x, int dirfd, const char *name,
			  const git_oid *id)
{
	char *target = x->target;
	git_blob *blob = NULL;
	size_t len;

	if (git_blob_lookup(&blob, x->repo, id) < 0)
		return git_fail(x->err, NV_EIO, NULL,
				"export: cannot read link '%s%s'", x->path,
				name);
	len = (size_t)git_blob_rawsize(blob);
	if (len == 0 || len >= sizeof(x->target) ||
	    memchr(git_blob_rawcontent(blob), '\0', len)) {
		git_blob_free(blob);
		return nv_err_set(x->err, NV_EREFUSED, HINT_UNSAFE,
				  "export: symlink '%s%s' has an invalid "
				  "target",
				  x->path, name);
	}
	memcpy(target, git_blob_rawcontent(blob), len);
	target[len] = '\0';
	git_blob_free(blob);
	/* The target is stored verbatim and never opened by us. */
	if (symlinkat(target, dirfd, name) < 0)
		return export_io_fail(x, errno, "create symlink", name);
	x->st.symlinks++;
	return 0;
}

static int export_tree(struct export_ctx *x, const git_tree *tree, int dirfd,
		       int depth);

static int export_subtree(struct export_ctx *x, int dirfd, const char *name,
			  const git_oid *id, int depth)
{
	git_tree *sub = NULL;
	size_t saved = x->path_len, nlen = strlen(name);
	int fd, rc;

	if (depth >= NV_GIT_EXPORT_MAX_DEPTH)
		return nv_err_set(x->err, NV_EREFUSED, HINT_UNSAFE,
				  "export: '%s%s' is nested deeper than %d "
				  "folders",
				  x->path, name, NV_GIT_EXPORT_MAX_DEPTH);
	if (saved + nlen + 2 > sizeof(x->path))
		return nv_err_set(x->err, NV_EREFUSED, HINT_UNSAFE,
				  "export: path too long under '%s'", x->path);
	/* mkdirat fails on anything already there, symlink included, and
	 * O_NOFOLLOW|O_DIRECTORY makes sure we opened the folder we made. */
	if (mkdirat(dirfd, name, 0755) < 0)
		return export_io_fail(x, errno, "create folder", name);
	fd = openat(dirfd, name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return export_io_fail(x, errno, "open folder", name);
	if (fchmod(fd, 0755) < 0) {
		rc = export_io_fail(x, errno, "set the mode of", name);
		close(fd);
		return rc;
	}
	x->st.dirs++;
	if (git_tree_lookup(&sub, x->repo, id) < 0) {
		close(fd);
		return git_fail(x->err, NV_EIO, NULL,
				"export: cannot read tree '%s%s'", x->path,
				name);
	}
	memcpy(x->path + saved, name, nlen);
	x->path[saved + nlen] = '/';
	x->path[saved + nlen + 1] = '\0';
	x->path_len = saved + nlen + 1;
	rc = export_tree(x, sub, fd, depth + 1);
	x->path[saved] = '\0';
	x->path_len = saved;
	git_tree_free(sub);
	close(fd);
	return rc;
}

static int export_tree(struct export_ctx *x, const git_tree *tree, int dirfd,
		       int depth)
{
	size_t i, n = git_tree_entrycount(tree);
	int rc = 0;

	for (i = 0; i < n && !rc; i++) {
		const git_tree_entry *e = git_tree_entry_byindex(tree, i);
		const char *name = git_tree_entry_name(e);
		const git_oid *id = git_tree_entry_id(e);

		if (!nv_git_entry_name_ok(name))
			return nv_err_set(x->err, NV_EREFUSED, HINT_UNSAFE,
					  "export: unsafe entry '%s%.200s'",
					  x->path, name);
		switch (git_tree_entry_filemode(e)) {
		case GIT_FILEMODE_TREE:
			rc = export_subtree(x, dirfd, name, id, depth);
			break;
		case GIT_FILEMODE_BLOB:
			rc = export_file(x, dirfd, name, id, 0644);
			break;
		case GIT_FILEMODE_BLOB_EXECUTABLE:
			rc = export_file(x, dirfd, name, id, 0755);
			break;
		case GIT_FILEMODE_LINK:
			rc = export_symlink(x, dirfd, name, id);
			break;
		case GIT_FILEMODE_COMMIT:
			/* A gitlink: the content lives in another repo. */
			x->st.submodules++;
			break;
		default:
			return nv_err_set(x->err, NV_EREFUSED, HINT_UNSAFE,
					  "export: '%s%s' has an unknown mode",
					  x->path, name);
		}
	}
	return rc;
}

/* Removes everything below dirfd without following symlinks. Best effort:
 * errors are ignored, the export's own error is what the caller reports. */
static void remove_below(int dirfd, int depth)
{
	int removed;

	if (depth > NV_GIT_EXPORT_MAX_DEPTH + 1)
		return;
	do {
		struct dirent *d;
		DIR *dir;
		int fd = dup(dirfd);

		removed = 0;
		if (fd < 0)
			return;
		dir = fdopendir(fd);
		if (!dir) {
			close(fd);
			return;
		}
		rewinddir(dir);
		while ((d = readdir(dir)) != NULL) {
			struct stat st;

			if (strcmp(d->d_name, ".") == 0 ||
			    strcmp(d->d_name, "..") == 0)
				continue;
			if (fstatat(dirfd, d->d_name, &st,
				    AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			if (S_ISDIR(st.st_mode)) {
				int sub =
					openat(dirfd, d->d_name,
					       O_RDONLY | O_DIRECTORY |
						       O_NOFOLLOW | O_CLOEXEC);
				if (sub >= 0) {
					remove_below(sub, depth + 1);
					close(sub);
				}
				if (unlinkat(dirfd, d->d_name, AT_REMOVEDIR) ==
				    0)
					removed = 1;
			} else if (unlinkat(dirfd, d->d_name, 0) == 0) {
				removed = 1;
			}
		}
		closedir(dir);
		/* Removing while reading may hide entries: go again. */
	} while (removed);
}

/* Opens dest_dir, made with its missing parents when absent, one segment
 * at a time with openat: its length is then bounded by the project's limit
 * and not by the system's PATH_MAX. dest_dir is the caller's and trusted,
 * so links on the way are followed. *fd_out: the folder; *parent_out and
 * leaf: where it sits, to remove it again; *created: made by this call. */
static int open_dest(const char *path, int *fd_out, int *parent_out,
		     char leaf[NAME_MAX + 1], int *created, nv_err *err)
{
	size_t len = strlen(path), i = 0, end;
	int cur, next;

	*fd_out = *parent_out = -1;
	*created = 0;
	while (len > 1 && path[len - 1] == '/')
		len--;
	if (len >= NV_GIT_EXPORT_PATH_MAX)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "export folder path longer than %d bytes",
				  NV_GIT_EXPORT_PATH_MAX - 1);
	cur = open(path[0] == '/' ? "/" : ".",
		   O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0)
		return nv_err_set_errno(err, NV_EIO, errno, NULL,
					"cannot open export folder '%s'", path);
	while (i < len) {
		while (i < len && path[i] == '/')
			i++;
		end = i + strcspn(path + i, "/");
		if (end > len)
			end = len;
		if (end - i > NAME_MAX) {
			close(cur);
			return nv_err_set(err, NV_EINVAL, NULL,
					  "export folder '%.200s': a segment "
					  "is longer than %d bytes",
					  path, NAME_MAX);
		}
		memcpy(leaf, path + i, end - i);
		leaf[end - i] = '\0';
		if (end == len &&
		    (strcmp(leaf, ".") == 0 || strcmp(leaf, "..") == 0)) {
			/* an existing folder named by the path itself */
			*fd_out = openat(cur, leaf,
					 O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			close(cur);
			if (*fd_out < 0)
				return nv_err_set_errno(
					err, NV_EIO, errno, NULL,
					"cannot open export folder '%s'", path);
			leaf[0] = '\0';
			return 0;
		}
		next = openat(cur, leaf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (next < 0 && errno == ENOENT) {
			if (mkdirat(cur, leaf, 0755) == 0)
				*created = end == len;
			else if (errno != EEXIST)
				goto fail;
			next = openat(cur, leaf,
				      O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		}
		if (next < 0)
			goto fail;
		if (end == len) {
			*parent_out = cur;
			*fd_out = next;
			return 0;
		}
		close(cur);
		cur = next;
		i = end;
	}
	/* "/" itself */
	*fd_out = cur;
	leaf[0] = '\0';
	return 0;
fail : {
	int e = errno;
	close(cur);
	if (e == ENOTDIR)
		return nv_err_set(err, NV_EREFUSED,
				  "choose a folder path for the export",
				  "export destination '%s' is not a "
				  "folder",
				  path);
	return nv_err_set_errno(err, NV_EIO, e, NULL,
				"cannot create export folder '%s'", path);
}
}

/* ---- names a folding volume takes for one ---- */

#define COLLISIONS_SHOWN 8

struct folded_name {
	char *fold;
	const char *name;
};

static int folded_cmp(const void *a, const void *b)
{
	return strcmp(((const struct folded_name *)a)->fold,
		      ((const struct folded_name *)b)->fold);
}

/* Lists, into report, the pairs of names of tree (and of its subtrees)
 * that differ only in case or NFC/NFD form; *count gets their number.
 * Reads trees only, writes nothing. */
static int find_collisions(struct export_ctx *x, const git_tree *tree,
			   int depth, nv_buf *report, unsigned *count)
{
	size_t i, n = git_tree_entrycount(tree), used = 0;
	struct folded_name *names = calloc(n ? n : 1, sizeof(*names));
	int rc = 0;

	if (!names)
		return nv_err_set(x->err, NV_ENOMEM, NULL, "out of memory");
	for (i = 0; i < n; i++) {
		const git_tree_entry *e = git_tree_entry_byindex(tree, i);
		const char *name = git_tree_entry_name(e);
		size_t len = strlen(name), cap = NV_FSNAME_FOLD_CAP(len);

		if (git_tree_entry_filemode(e) == GIT_FILEMODE_COMMIT)
			continue; /* a gitlink writes nothing */
		names[used].fold = malloc(cap);
		if (!names[used].fold) {
			rc = nv_err_set(x->err, NV_ENOMEM, NULL,
					"out of memory");
			goto out;
		}
		nv_fsname_fold(name, len, names[used].fold, cap);
		names[used++].name = name;
	}
	if (used > 1)
		qsort(names, used, sizeof(*names), folded_cmp);
	for (i = 1; i < used; i++) {
		if (strcmp(names[i - 1].fold, names[i].fold) != 0)
			continue;
		if (++*count <= COLLISIONS_SHOWN)
			nv_buf_printf(report, "\n  '%s%s' and '%s%s'", x->path,
				      names[i - 1].name, x->path,
				      names[i].name);
	}
	for (i = 0; i < n && !rc && depth < NV_GIT_EXPORT_MAX_DEPTH; i++) {
		const git_tree_entry *e = git_tree_entry_byindex(tree, i);
		const char *name = git_tree_entry_name(e);
		size_t saved = x->path_len, nlen = strlen(name);
		git_tree *sub = NULL;

		if (git_tree_entry_filemode(e) != GIT_FILEMODE_TREE ||
		    saved + nlen + 2 > sizeof(x->path))
			continue; /* too long: the export refuses it */
		if (git_tree_lookup(&sub, x->repo, git_tree_entry_id(e)) < 0) {
			rc = git_fail(x->err, NV_EIO, NULL,
				      "export: cannot read tree '%s%s'",
				      x->path, name);
			break;
		}
		memcpy(x->path + saved, name, nlen);
		x->path[saved + nlen] = '/';
		x->path[saved + nlen + 1] = '\0';
		x->path_len = saved + nlen + 1;
		rc = find_collisions(x, sub, depth + 1, report, count);
		x->path[saved] = '\0';
		x->path_len = saved;
		git_tree_free(sub);
	}
out:
	for (i = 0; i < used; i++)
		free(names[i].fold);
	free(names);
	return rc;
}

/* On a volume that folds names, two names of one folder that differ only
 * in case would meet as one file ("File exists" halfway through): refused
 * before anything is written, listing them. */
static int refuse_collisions(struct export_ctx *x, const git_tree *tree,
			     const char *oid_hex)
{
	unsigned count = 0;
	nv_buf report;
	int rc;

	nv_buf_init(&report, 4096);
	rc = find_collisions(x, tree, 0, &report, &count);
	if (!rc && count)
		rc = nv_err_set(
			x->err, NV_EREFUSED,
			"this volume does not tell case (or accents' NFC/NFD "
			"form) apart: rename one name of each pair in the "
			"repository (git mv), or export to a case-sensitive "
			"volume",
			"export: commit %.12s holds %u pair%s of names that "
			"this volume takes for one:%s%s",
			oid_hex, count, count == 1 ? "" : "s",
			report.data ? report.data : "",
			count > COLLISIONS_SHOWN ? "\n  ..." : "");
	nv_buf_free(&report);
	return rc;
}

/* 1 when the folder open on fd has no entry, 0 when it has, -1 on error. */
static int dir_is_empty(int fd)
{
	struct dirent *d;
	DIR *dir;
	int dupfd = dup(fd), empty = 1;

	if (dupfd < 0)
		return -1;
	dir = fdopendir(dupfd);
	if (!dir) {
		close(dupfd);
		return -1;
	}
	while ((d = readdir(dir)) != NULL) {
		if (strcmp(d->d_name, ".") != 0 &&
		    strcmp(d->d_name, "..") != 0) {
			empty = 0;
			break;
		}
	}
	closedir(dir);
	return empty;
}

int nv_git_export(const nv_git_repo *repo, const char *oid_hex,
		  const char *dest_dir, nv_git_export_stats *stats, nv_err *err)
{
	struct export_ctx *x = NULL;
	git_commit *c = NULL;
	git_tree *tree = NULL;
	int created = 0, fd = -1, parent_fd = -1, rc, empty;
	char leaf[NAME_MAX + 1];

	if (stats)
		memset(stats, 0, sizeof(*stats));
	if (!dest_dir || !dest_dir[0])
		return nv_err_set(err, NV_EINVAL, NULL, "empty export folder");
	rc = lookup_commit(&c, repo->repo, oid_hex, err);
	if (rc)
		return rc;
	if (git_commit_tree(&tree, c) < 0) {
		rc = git_fail(err, NV_EIO, NULL, "cannot read tree of %s",
			      oid_hex);
		goto out;
	}
	x = calloc(1, sizeof(*x));
	if (!x) {
		rc = nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
		goto out;
	}
	x->repo = repo->repo;
	x->err = err;
	if (git_repository_odb(&x->odb, repo->repo) < 0) {
		rc = git_fail(err, NV_EIO, NULL,
			      "cannot open the object store");
		goto out;
	}

	/* dest_dir itself comes from the caller and is trusted (it may be a
	 * symlink); only what the tree holds is not. */
	rc = open_dest(dest_dir, &fd, &parent_fd, leaf, &created, err);
	if (rc)
		goto out;
	empty = dir_is_empty(fd);
	if (empty != 1) {
		rc = empty < 0 ? nv_err_set_errno(err, NV_EIO, errno, NULL,
						  "cannot read '%s'", dest_dir)
			       : nv_err_set(err, NV_EREFUSED,
					    "choose a new folder or empty it "
					    "first",
					    "export folder '%s' is not empty",
					    dest_dir);
		goto out;
	}
	if (nv_fsname_volume_of(fd) != NV_FSNAME_SENSITIVE)
		rc = refuse_collisions(x, tree, oid_hex);
	if (!rc)
		rc = export_tree(x, tree, fd, 0);
	if (rc) {
		remove_below(fd, 0);
		if (created && parent_fd >= 0)
			unlinkat(parent_fd, leaf, AT_REMOVEDIR);
		goto out;
	}
	if (stats)
		*stats = x->st;

out:
	if (fd >= 0)
		close(fd);
	if (parent_fd >= 0)
		close(parent_fd);
	if (x)
		git_odb_free(x->odb);
	free(x);
	git_tree_free(tree);
	git_commit_free(c);
	return rc;
}

/* ---- lock files ---- */

static const char *const lockfile_names[] = {
	"package-lock.json",
	"npm-shrinkwrap.json",
	"yarn.lock",
	"pnpm-lock.yaml",
	"bun.lockb",
	"bun.lock",
	"poetry.lock",
	"uv.lock",
	"Pipfile.lock",
	"pdm.lock",
	"pixi.lock",
	"Cargo.lock",
	"go.sum",
	"Gemfile.lock",
	"composer.lock",
	"conda-lock.yml",
	"conda-lock.yaml",
	"environment.yml",
	"environment.yaml",
	"flake.lock",
	"mix.lock",
	"pubspec.lock",
	"Podfile.lock",
	"Package.resolved",
	"gradle.lockfile",
};

int nv_git_is_lockfile(const char *name)
{
	size_t i, n = strlen(name);

	for (i = 0; i < sizeof(lockfile_names) / sizeof(lockfile_names[0]); i++)
		if (strcmp(name, lockfile_names[i]) == 0)
			return 1;
	/* requirements.txt, requirements-dev.txt, requirements_gpu.txt... */
	return n >= strlen("requirements.txt") &&
	       strncmp(name, "requirements", 12) == 0 &&
	       strcmp(name + n - 4, ".txt") == 0;
}

static void to_hex(char *out, const unsigned char *md, size_t len)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < len; i++) {
		out[2 * i] = digits[md[i] >> 4];
		out[2 * i + 1] = digits[md[i] & 15];
	}
	out[2 * len] = '\0';
}

int nv_git_lockfile_hash(const nv_git_repo *repo, const char *oid_hex,
			 char hex[NV_GIT_SHA256_HEX + 1], nv_err *err)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	char inner[NV_GIT_SHA256_HEX + 1];
	unsigned int mdlen = 0;
	EVP_MD_CTX *ctx = NULL;
	git_commit *c = NULL;
	git_tree *tree = NULL;
	size_t i, n;
	int rc;

	hex[0] = '\0';
	rc = lookup_commit(&c, repo->repo, oid_hex, err);
	if (rc)
		return rc;
	if (git_commit_tree(&tree, c) < 0) {
		rc = git_fail(err, NV_EIO, NULL, "cannot read tree of %s",
			      oid_hex);
		goto out;
	}
	ctx = EVP_MD_CTX_new();
	if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
		rc = nv_err_set(err, NV_ENOMEM, NULL, "cannot start sha256");
		goto out;
	}
	/* Git sorts a tree's blob names bytewise (only folders sort as if
	 * they ended in '/'), so walking the root in order is the sort.
	 * Only regular files count: a symlink's bytes are a path. */
	n = git_tree_entrycount(tree);
	for (i = 0; i < n; i++) {
		const git_tree_entry *e = git_tree_entry_byindex(tree, i);
		const char *name = git_tree_entry_name(e);
		git_filemode_t mode = git_tree_entry_filemode(e);
		git_blob *blob = NULL;
		int ok;

		if ((mode != GIT_FILEMODE_BLOB &&
		     mode != GIT_FILEMODE_BLOB_EXECUTABLE) ||
		    !nv_git_is_lockfile(name))
			continue;
		if (git_blob_lookup(&blob, repo->repo, git_tree_entry_id(e)) <
		    0) {
			rc = git_fail(err, NV_EIO, NULL, "cannot read '%s'",
				      name);
			goto out;
		}
		ok = EVP_Digest(git_blob_rawcontent(blob),
				(size_t)git_blob_rawsize(blob), md, &mdlen,
				EVP_sha256(), NULL);
		git_blob_free(blob);
		if (ok != 1) {
			rc = nv_err_set(err, NV_ENOMEM, NULL,
					"sha256 of '%s' failed", name);
			goto out;
		}
		to_hex(inner, md, mdlen);
		if (EVP_DigestUpdate(ctx, name, strlen(name) + 1) != 1 ||
		    EVP_DigestUpdate(ctx, inner, strlen(inner)) != 1 ||
		    EVP_DigestUpdate(ctx, "\n", 1) != 1) {
			rc = nv_err_set(err, NV_ENOMEM, NULL, "sha256 failed");
			goto out;
		}
	}
	if (EVP_DigestFinal_ex(ctx, md, &mdlen) != 1) {
		rc = nv_err_set(err, NV_ENOMEM, NULL, "sha256 failed");
		goto out;
	}
	to_hex(hex, md, mdlen);

out:
	EVP_MD_CTX_free(ctx);
	git_tree_free(tree);
	git_commit_free(c);
	return rc;
}

/* The blob at path in the tree of commit oid_hex (regular files only). */
static int lookup_file(git_blob **out, const nv_git_repo *repo,
		       const char *oid_hex, const char *path, nv_err *err)
{
	git_commit *c = NULL;
	git_tree *tree = NULL;
	git_tree_entry *e = NULL;
	int rc;

	*out = NULL;
	rc = lookup_commit(&c, repo->repo, oid_hex, err);
	if (rc)
		return rc;
	if (git_commit_tree(&tree, c) < 0) {
		rc = git_fail(err, NV_EIO, NULL, "cannot read tree of %s",
			      oid_hex);
		goto out;
	}
	if (git_tree_entry_bypath(&e, tree, path) < 0) {
		git_error_clear();
		rc = nv_err_set(err, NV_ENOTFOUND,
				"commit it (git add, git commit): what runs "
				"comes from the commit",
				"'%s' is not in commit %.12s", path, oid_hex);
		goto out;
	}
	if (git_tree_entry_filemode(e) != GIT_FILEMODE_BLOB &&
	    git_tree_entry_filemode(e) != GIT_FILEMODE_BLOB_EXECUTABLE) {
		rc = nv_err_set(err, NV_EINVAL, NULL,
				"'%s' in commit %.12s is not a regular file",
				path, oid_hex);
		goto out;
	}
	if (git_blob_lookup(out, repo->repo, git_tree_entry_id(e)) < 0)
		rc = git_fail(err, NV_EIO, NULL, "cannot read '%s'", path);
out:
	git_tree_entry_free(e);
	git_tree_free(tree);
	git_commit_free(c);
	return rc;
}

int nv_git_file_size(const nv_git_repo *repo, const char *oid_hex,
		     const char *path, size_t *size, nv_err *err)
{
	git_blob *blob = NULL;
	int rc = lookup_file(&blob, repo, oid_hex, path, err);

	*size = 0;
	if (rc)
		return rc;
	*size = (size_t)git_blob_rawsize(blob);
	git_blob_free(blob);
	return 0;
}

int nv_git_read_file(const nv_git_repo *repo, const char *oid_hex,
		     const char *path, char *buf, size_t cap, size_t *len,
		     nv_err *err)
{
	git_blob *blob = NULL;
	int rc = lookup_file(&blob, repo, oid_hex, path, err);
	size_t n;

	*len = 0;
	if (rc)
		return rc;
	n = (size_t)git_blob_rawsize(blob);
	if (n > cap) {
		git_blob_free(blob);
		return nv_err_set(err, NV_EINVAL, NULL,
				  "'%s' changed size while it was read", path);
	}
	memcpy(buf, git_blob_rawcontent(blob), n);
	*len = n;
	git_blob_free(blob);
	return 0;
}
