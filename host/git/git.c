/* The git primitive in pure C: open, resolve, status, remote presence,
 * configuration, lock-file fingerprint and file reads over libgit2 (see
 * git.h for the contract; the export of a tree is export.c). libgit2's
 * error codes are translated into nv_err codes here so that callers never
 * see a git_error. */
#include "git/git.h"

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

#include "git/git_internal.h"

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
int nv_git_failf(nv_err *err, int code, const char *hint, const char *fmt, ...)
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
		return nv_git_failf(err, NV_EINVAL, HINT_FULL_OID,
				    "'%s' is not a commit id", hex);
	return 0;
}

int nv_git_lookup_commit(git_commit **out, git_repository *repo,
			 const char *oid_hex, nv_err *err)
{
	git_oid oid;
	int rc;

	rc = parse_oid(&oid, oid_hex, err);
	if (rc)
		return rc;
	rc = git_commit_lookup(out, repo, &oid);
	if (rc < 0)
		return nv_git_failf(err, map_git_code(rc), HINT_UNKNOWN_REF,
				    "commit %s not found in this repository",
				    oid_hex);
	return 0;
}

int nv_git_lookup_tree(git_tree **out, git_repository *repo,
		       const char *oid_hex, nv_err *err)
{
	git_commit *c = NULL;
	int rc = nv_git_lookup_commit(&c, repo, oid_hex, err);

	*out = NULL;
	if (rc)
		return rc;
	if (git_commit_tree(out, c) < 0)
		rc = nv_git_failf(err, NV_EIO, NULL, "cannot read tree of %s",
				  oid_hex);
	git_commit_free(c);
	return rc;
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
		return nv_git_failf(err, NV_EIO, "check .git/config",
				    "cannot read the repository configuration");
	if (git_config_iterator_new(&it, cfg) < 0) {
		git_config_free(cfg);
		return nv_git_failf(err, NV_EIO, "check .git/config",
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
		return nv_git_failf(err, NV_EIO, "check .git/config",
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

/* The handle of an opened repo, its folder a copy of dir (trailing
 * slashes cut when trim). Out of memory: repo is freed and libgit2 shut
 * down, as for an open that failed. */
/* Undoes an open that failed: the repository, and the libgit2 init the
 * open took. Returns rc. */
static int open_failed(git_repository *repo, int rc)
{
	git_repository_free(repo);
	git_libgit2_shutdown();
	return rc;
}

static int hold_repo(nv_git_repo **out, git_repository *repo, const char *dir,
		     int trim, nv_err *err)
{
	nv_git_repo *r = calloc(1, sizeof(*r));
	size_t len;

	if (r)
		r->workdir = strdup(dir);
	if (!r || !r->workdir) {
		free(r);
		return open_failed(repo, nv_err_set(err, NV_ENOMEM, NULL,
						    "out of memory"));
	}
	len = strlen(r->workdir);
	while (trim && len > 1 && r->workdir[len - 1] == '/')
		r->workdir[--len] = '\0';
	r->repo = repo;
	*out = r;
	return 0;
}

int nv_git_open(nv_git_repo **out, const char *path, nv_err *err)
{
	char start[PATH_MAX];
	git_repository *repo = NULL;
	const char *wd;
	struct stat st;
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
		return nv_git_failf(err, NV_EBACKEND, NULL,
				    "cannot initialise libgit2");
	rc = git_repository_open_ext(&repo, start, 0, NULL);
	if (rc == GIT_ENOTFOUND) {
		git_error_clear();
		rc = nv_err_set(err, NV_ENOTFOUND, HINT_NOT_A_REPO,
				"'%s' is not inside a git repository", path);
		goto fail;
	}
	if (rc == GIT_EOWNER) {
		rc = nv_git_failf(
			err, NV_EREFUSED,
			"the repository belongs to another user; add it to "
			"safe.directory if you trust it",
			"refusing to open the repository of '%s'", path);
		goto fail;
	}
	if (rc < 0) {
		rc = nv_git_failf(err, map_git_code(rc), HINT_NOT_A_REPO,
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

	return hold_repo(out, repo, wd, 1, err);

fail:
	return open_failed(repo, rc);
}

int nv_git_open_bare(nv_git_repo **out, const char *gitdir, nv_err *err)
{
	git_repository *repo = NULL;
	int rc;

	*out = NULL;
	if (!gitdir || !gitdir[0])
		return nv_err_set(err, NV_EINVAL, NULL,
				  "empty repository path");
	if (git_libgit2_init() < 0)
		return nv_git_failf(err, NV_EBACKEND, NULL,
				    "cannot initialise libgit2");
	rc = git_repository_open_ext(
		&repo, gitdir,
		GIT_REPOSITORY_OPEN_NO_SEARCH | GIT_REPOSITORY_OPEN_BARE, NULL);
	if (rc < 0) {
		rc = nv_git_failf(err, map_git_code(rc), NULL,
				  "cannot open the repository '%s'", gitdir);
		goto fail;
	}
	return hold_repo(out, repo, gitdir, 0, err);

fail:
	return open_failed(repo, rc);
}

int nv_git_fail(nv_err *err, int code, const char *hint, const char *message)
{
	return nv_git_failf(err, code, hint, "%s", message);
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
		return nv_git_failf(err, NV_EINVAL,
				    "give more characters of the commit id",
				    "'%.100s' matches several objects", ref);
	if (rc < 0)
		return nv_git_failf(
			err,
			rc == GIT_ENOTFOUND || rc == GIT_EINVALIDSPEC
				? NV_ENOTFOUND
				: map_git_code(rc),
			HINT_UNKNOWN_REF, "unknown ref '%.100s'", ref);
	rc = git_object_peel(&commit, obj, GIT_OBJECT_COMMIT);
	git_object_free(obj);
	if (rc < 0)
		return nv_git_failf(err, NV_EINVAL, HINT_UNKNOWN_REF,
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
		return nv_git_failf(err, NV_EIO, NULL,
				    "cannot read the index of %s",
				    repo->workdir);
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
		return nv_git_failf(err, NV_EIO, NULL,
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
	rc = nv_git_lookup_commit(&c, repo->repo, oid_hex, err);
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
		return nv_git_failf(
			err, NV_EIO, "check the repository (git status)",
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
	rc = nv_git_lookup_commit(&c, repo->repo, oid_hex, err);
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
		return nv_git_failf(err, NV_EIO, NULL,
				    "cannot list references");
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
		return nv_git_failf(err, NV_EIO, NULL,
				    "cannot list references");
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
		rc = nv_git_failf(err, NV_ENOMEM, NULL,
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
		rc = nv_git_failf(err, NV_EIO, NULL,
				  "cannot read the git configuration");
		goto out;
	}
	grc = git_config_get_string_buf(&value, cfg, name);
	if (grc == GIT_ENOTFOUND) {
		rc = nv_err_set(err, NV_ENOTFOUND, NULL, "%s is not set", name);
		goto out;
	}
	if (grc < 0) {
		rc = nv_git_failf(err, NV_EIO, NULL, "cannot read %s", name);
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

/* A regular file whose name is a lock file (a symlink's bytes are a
 * path, not a lock). */
static int lock_entry(const git_tree_entry *e)
{
	git_filemode_t mode = git_tree_entry_filemode(e);

	return (mode == GIT_FILEMODE_BLOB ||
		mode == GIT_FILEMODE_BLOB_EXECUTABLE) &&
	       nv_git_is_lockfile(git_tree_entry_name(e));
}

int nv_git_path_id(const nv_git_repo *repo, const char *oid_hex,
		   const char *path, char id[NV_GIT_OID_HEX_LEN + 1],
		   char *kind, nv_err *err)
{
	git_tree *tree = NULL;
	git_tree_entry *e = NULL;
	size_t len = strlen(path);
	int rc;

	id[0] = '\0';
	*kind = 0;
	if (len > 4096 || path[0] == '/' || strstr(path, "//") ||
	    strcmp(path, "..") == 0 || strncmp(path, "../", 3) == 0 ||
	    strstr(path, "/../") ||
	    (len >= 3 && strcmp(path + len - 3, "/..") == 0))
		return nv_err_set(err, NV_EINVAL,
				  "give a path relative to the repository's "
				  "root, such as src/ or configs/train.yaml",
				  "'%.200s' is not a path of the repository",
				  path);
	rc = nv_git_lookup_tree(&tree, repo->repo, oid_hex, err);
	if (rc)
		return rc;
	if (len == 0 || strcmp(path, ".") == 0 || strcmp(path, "./") == 0) {
		git_oid_tostr(id, NV_GIT_OID_HEX_LEN + 1, git_tree_id(tree));
		*kind = 't';
		git_tree_free(tree);
		return 0;
	}
	{
		char rel[4097];

		snprintf(rel, sizeof(rel), "%s", path);
		if (rel[len - 1] == '/')
			rel[len - 1] = '\0';
		if (git_tree_entry_bypath(&e, tree, rel) < 0) {
			git_tree_free(tree);
			return nv_err_set(err, NV_ENOTFOUND,
					  "check the path: it must be in the "
					  "commit",
					  "commit %.12s has no '%.200s'",
					  oid_hex, path);
		}
	}
	git_oid_tostr(id, NV_GIT_OID_HEX_LEN + 1, git_tree_entry_id(e));
	switch (git_tree_entry_type(e)) {
	case GIT_OBJECT_TREE: *kind = 't'; break;
	case GIT_OBJECT_COMMIT: *kind = 'c'; break;
	default: *kind = 'b';
	}
	git_tree_entry_free(e);
	git_tree_free(tree);
	return 0;
}

struct lock_walk {
	nv_git_lockfile_cb cb;
	void *payload;
	size_t n;
	int rc;
	nv_err *err;
};

static int lock_walk_one(const char *root, const git_tree_entry *e,
			 void *payload)
{
	struct lock_walk *w = payload;
	const char *name = git_tree_entry_name(e);
	char path[4097], id[NV_GIT_OID_HEX_LEN + 1];
	int n;

	if (!lock_entry(e))
		return 0;
	if (++w->n > NV_GIT_LOCKFILES_MAX) {
		w->rc = nv_err_set(w->err, NV_EREFUSED,
				   "keep fewer lock files in the repository",
				   "the commit holds more than %d lock files",
				   NV_GIT_LOCKFILES_MAX);
		return -1;
	}
	n = snprintf(path, sizeof(path), "%s%s", root, name);
	if (n < 0 || (size_t)n >= sizeof(path))
		return 0; /* (a path no checkout could hold) */
	git_oid_tostr(id, sizeof(id), git_tree_entry_id(e));
	w->rc = w->cb(path, id, w->payload);
	return w->rc ? -1 : 0;
}

int nv_git_lockfiles(const nv_git_repo *repo, const char *oid_hex,
		     nv_git_lockfile_cb cb, void *payload, nv_err *err)
{
	struct lock_walk w = {cb, payload, 0, 0, err};
	git_tree *tree = NULL;
	int rc = nv_git_lookup_tree(&tree, repo->repo, oid_hex, err);

	if (rc)
		return rc;
	if (git_tree_walk(tree, GIT_TREEWALK_PRE, lock_walk_one, &w) < 0 &&
	    !w.rc)
		w.rc = nv_git_failf(err, NV_EIO, NULL,
				    "cannot walk the tree of %.12s", oid_hex);
	git_tree_free(tree);
	return w.rc;
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
	git_tree *tree = NULL;
	size_t i, n;
	int rc;

	hex[0] = '\0';
	rc = nv_git_lookup_tree(&tree, repo->repo, oid_hex, err);
	if (rc)
		return rc;
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
		git_blob *blob = NULL;
		int ok;

		if (!lock_entry(e))
			continue;
		if (git_blob_lookup(&blob, repo->repo, git_tree_entry_id(e)) <
		    0) {
			rc = nv_git_failf(err, NV_EIO, NULL, "cannot read '%s'",
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
	return rc;
}

/* The blob at path in the tree of commit oid_hex (regular files only). */
static int lookup_file(git_blob **out, const nv_git_repo *repo,
		       const char *oid_hex, const char *path, nv_err *err)
{
	git_tree *tree = NULL;
	git_tree_entry *e = NULL;
	int rc;

	*out = NULL;
	rc = nv_git_lookup_tree(&tree, repo->repo, oid_hex, err);
	if (rc)
		return rc;
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
		rc = nv_git_failf(err, NV_EIO, NULL, "cannot read '%s'", path);
out:
	git_tree_entry_free(e);
	git_tree_free(tree);
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
