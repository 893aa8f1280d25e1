/* The walks of the secret scanner (see scan.h): the tree of a commit,
 * read through libgit2 from the object database, and a plain folder, read
 * without following symlinks. Each file goes to scan_file() (scan.c). A
 * commit's walk may skip the blobs a set of clean verdicts names (kept in a
 * file between scans, below). */
#include "creds/scan.h"
#include "creds/scan_internal.h"
#include "creds/token_shapes.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <git2.h>

#include "core/fsutil.h"
#include "core/hex.h"
#include "core/sha256.h"

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

#define DIR_MAX_ENTRIES 100000

#ifndef NAVETTE_VERSION
#define NAVETTE_VERSION "unknown"
#endif

/* ---- clean verdicts ---------------------------------------------------- */

#define VERDICT_KEY    32 /* bytes of a sha256 */
#define VERDICTS_MAGIC "navette scan verdicts 1 "
#define VERDICT_LINE   (2 * VERDICT_KEY + 1)
#define VERDICTS_FILE_MAX                                                      \
	(sizeof(VERDICTS_MAGIC) + 66 +                                         \
	 (size_t)NV_SCAN_VERDICTS_MAX * VERDICT_LINE)

struct verdict {
	unsigned char key[VERDICT_KEY];
	unsigned char used; /* hit by a scan since the load */
};

struct nv_scan_verdicts {
	char path[PATH_CAP];
	char fingerprint[65];
	struct verdict *old; /* loaded, sorted by key */
	size_t nold;
	unsigned char (*fresh)[VERDICT_KEY]; /* added since the load */
	size_t nfresh, cap_fresh;
};

void nv_scan_rules_fingerprint(char hex[65])
{
	char text[8192];
	size_t used = 0, i;
	nv_err ignored;
	int n;

	n = snprintf(
		text, sizeof(text),
		"navette scan rules %s|navette %s|%u|%u|%u|%u|%u|%u",
		NV_SCAN_RULES_VERSION, NAVETTE_VERSION,
		(unsigned)NV_SCAN_MAX_FILE_SIZE, (unsigned)NV_SCAN_BINARY_PROBE,
		(unsigned)NV_SCAN_MAX_FINDINGS, (unsigned)NV_SCAN_LINE_WINDOW,
		(unsigned)NV_TOKEN_DECIDE_MAX, (unsigned)NV_TOKEN_SHAPE_COUNT);
	used = n > 0 && (size_t)n < sizeof(text) ? (size_t)n : 0;
	for (i = 0; i < NV_TOKEN_SHAPE_COUNT && used < sizeof(text); i++) {
		const nv_token_shape *t = &nv_token_shapes[i];

		n = snprintf(text + used, sizeof(text) - used,
			     "|%s %d %zu %zu %s", t->prefix, (int)t->charset,
			     t->min, t->max, t->rule);
		if (n < 0 || (size_t)n >= sizeof(text) - used)
			break; /* cut: still a fixed function of the table */
		used += (size_t)n;
	}
	if (nv_sha256_bytes(text, used, hex, &ignored))
		snprintf(hex, 65, "%s", "unknown"); /* matches no file */
}

/* 64 lowercase hex digits (as the file is written) into key; -1 on any
 * other byte. */
static int key_from_hex(unsigned char key[VERDICT_KEY], const char *hex)
{
	size_t i;

	for (i = 0; i < 2 * VERDICT_KEY; i++) {
		int v = nv_hex_value((unsigned char)hex[i]);

		if (v < 0 || (hex[i] >= 'A' && hex[i] <= 'F'))
			return -1;
		if (i % 2 == 0)
			key[i / 2] = (unsigned char)(v << 4);
		else
			key[i / 2] |= (unsigned char)v;
	}
	return 0;
}

static int cmp_verdicts(const void *a, const void *b)
{
	return memcmp(((const struct verdict *)a)->key,
		      ((const struct verdict *)b)->key, VERDICT_KEY);
}

/* Parses the file's text into v->old; 0 when it is whole and current. */
static int verdicts_parse(nv_scan_verdicts *v, const char *text, size_t len)
{
	size_t head = strlen(VERDICTS_MAGIC) + 65, n, i;
	const char *p;

	if (len < head ||
	    memcmp(text, VERDICTS_MAGIC, strlen(VERDICTS_MAGIC)) != 0 ||
	    memcmp(text + strlen(VERDICTS_MAGIC), v->fingerprint, 64) != 0 ||
	    text[head - 1] != '\n' || (len - head) % VERDICT_LINE != 0)
		return -1;
	n = (len - head) / VERDICT_LINE;
	if (n == 0)
		return 0;
	if (n > NV_SCAN_VERDICTS_MAX)
		return -1;
	v->old = calloc(n, sizeof(*v->old));
	if (!v->old)
		return -1;
	for (i = 0, p = text + head; i < n; i++, p += VERDICT_LINE)
		if (p[VERDICT_LINE - 1] != '\n' ||
		    key_from_hex(v->old[i].key, p))
			return -1;
	qsort(v->old, n, sizeof(*v->old), cmp_verdicts);
	v->nold = n;
	return 0;
}

int nv_scan_verdicts_load(nv_scan_verdicts **out, const char *path, nv_err *err)
{
	nv_scan_verdicts *v;
	nv_err ignored;
	char *text = NULL;
	size_t len = 0;

	*out = NULL;
	if (!path || strlen(path) >= PATH_CAP)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "scan: bad verdicts path");
	v = calloc(1, sizeof(*v));
	if (!v)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	snprintf(v->path, sizeof(v->path), "%s", path);
	nv_scan_rules_fingerprint(v->fingerprint);
	if (nv_read_file(&text, &len, path, VERDICTS_FILE_MAX, &ignored) == 0 &&
	    verdicts_parse(v, text, len) != 0) {
		free(v->old); /* corrupt or stale: start empty */
		v->old = NULL;
		v->nold = 0;
	}
	free(text);
	*out = v;
	return 0;
}

size_t nv_scan_verdicts_count(const nv_scan_verdicts *v)
{
	return v ? v->nold + v->nfresh : 0;
}

void nv_scan_verdicts_free(nv_scan_verdicts *v)
{
	if (!v)
		return;
	free(v->old);
	free(v->fresh);
	free(v);
}

static void put_hex(char *out, const unsigned char *key)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < VERDICT_KEY; i++) {
		out[2 * i] = digits[key[i] >> 4];
		out[2 * i + 1] = digits[key[i] & 15];
	}
	out[2 * VERDICT_KEY] = '\n';
}

int nv_scan_verdicts_save(const nv_scan_verdicts *v, nv_err *err)
{
	size_t cap = VERDICTS_FILE_MAX, used, kept = 0, i;
	char dir[PATH_CAP], *text, *slash;
	int pass, rc;

	if (!v)
		return 0;
	snprintf(dir, sizeof(dir), "%s", v->path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		rc = nv_mkdir_p(dir, 0700, err);
		if (rc)
			return rc;
	}
	text = malloc(cap);
	if (!text)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	used = (size_t)snprintf(text, cap, "%s%s\n", VERDICTS_MAGIC,
				v->fingerprint);
	/* those the last scans used or added first: the bound drops the
	 * others (v->fresh is merged in by the end of every scan) */
	for (pass = 1; pass >= 0; pass--)
		for (i = 0; i < v->nold && kept < NV_SCAN_VERDICTS_MAX; i++) {
			if (v->old[i].used != pass)
				continue;
			put_hex(text + used, v->old[i].key);
			used += VERDICT_LINE;
			kept++;
		}
	rc = nv_write_file_atomic(v->path, text, used, 0600, err);
	free(text);
	return rc;
}

/* The key of blob id (hex) under the file name base. */
static int verdict_key(const nv_scan_verdicts *v, const char *id_hex,
		       const char *base, unsigned char key[VERDICT_KEY])
{
	char text[PATH_CAP + 200], hex[NV_SHA256_HEX_LEN + 1];
	nv_err ignored;
	int n = snprintf(text, sizeof(text), "%s\n%s\n%s", v->fingerprint,
			 id_hex, base);

	if (n < 0 || (size_t)n >= sizeof(text) ||
	    nv_sha256_bytes(text, (size_t)n, hex, &ignored))
		return -1;
	return key_from_hex(key, hex);
}

/* 1 when v holds key (marked used), else 0. */
static int verdicts_find(nv_scan_verdicts *v,
			 const unsigned char key[VERDICT_KEY])
{
	struct verdict probe, *hit;

	if (!v->nold)
		return 0;
	memcpy(probe.key, key, VERDICT_KEY);
	hit = bsearch(&probe, v->old, v->nold, sizeof(*v->old), cmp_verdicts);
	if (!hit)
		return 0;
	hit->used = 1;
	return 1;
}

static void verdicts_add(nv_scan_verdicts *v,
			 const unsigned char key[VERDICT_KEY])
{
	if (v->nold + v->nfresh >= 2 * (size_t)NV_SCAN_VERDICTS_MAX)
		return; /* bounded: the rest is scanned next time */
	if (v->nfresh == v->cap_fresh) {
		size_t cap = v->cap_fresh ? v->cap_fresh * 2 : 256;
		void *grown = realloc(v->fresh, cap * sizeof(*v->fresh));

		if (!grown)
			return; /* a cache: a lost verdict costs one scan */
		v->fresh = grown;
		v->cap_fresh = cap;
	}
	memcpy(v->fresh[v->nfresh++], key, VERDICT_KEY);
}

/* After a scan: what it added joins the sorted set, marked used, once. */
static void verdicts_merge(nv_scan_verdicts *v)
{
	struct verdict *all;
	size_t n = v->nold + v->nfresh, i, k;

	if (!v->nfresh)
		return;
	all = realloc(v->old, n * sizeof(*all));
	if (!all) {
		v->nfresh = 0; /* a cache: lost, scanned again next time */
		return;
	}
	for (i = 0; i < v->nfresh; i++) {
		memcpy(all[v->nold + i].key, v->fresh[i], VERDICT_KEY);
		all[v->nold + i].used = 1;
	}
	qsort(all, n, sizeof(*all), cmp_verdicts);
	for (i = k = 0; i < n; i++) {
		if (k && memcmp(all[k - 1].key, all[i].key, VERDICT_KEY) == 0) {
			all[k - 1].used |= all[i].used;
			continue;
		}
		all[k++] = all[i];
	}
	v->old = all;
	v->nold = k;
	v->nfresh = 0;
}

/* ---- commits ----------------------------------------------------------- */

struct commit_walk {
	struct scan_ctx *c;
	git_repository *repo;
	git_odb *odb;
	nv_scan_verdicts *verdicts; /* may be NULL */
	nv_err *err;
	int rc; /* an NV_E* code that stopped the walk */
	char path[PATH_CAP];
};

static int git_fail(nv_err *err, int code, const char *hint, const char *what,
		    const char *name)
{
	const git_error *ge = git_error_last();

	nv_err_set(err, code, hint, "scan: %s '%s'%s%s", what, name,
		   ge && ge->message ? ": " : "",
		   ge && ge->message ? ge->message : "");
	git_error_clear();
	return code;
}

static int scan_blob_content(struct commit_walk *w, const git_oid *id)
{
	git_object_t type;
	git_blob *blob = NULL;
	size_t size = 0;
	int rc;

	if (git_odb_read_header(&size, &type, w->odb, id) < 0)
		return w->rc = git_fail(w->err, NV_EIO, NULL, "cannot read",
					w->path);
	if (size > NV_SCAN_MAX_FILE_SIZE)
		return scan_file(w->c, w->path, NULL, size);
	if (git_blob_lookup(&blob, w->repo, id) < 0)
		return w->rc = git_fail(w->err, NV_EIO, NULL, "cannot read",
					w->path);
	rc = scan_file(w->c, w->path, git_blob_rawcontent(blob),
		       (size_t)git_blob_rawsize(blob));
	git_blob_free(blob);
	return rc;
}

/* A blob with a clean verdict is skipped; one that gives no finding (nor
 * an allowed one) gets a verdict. */
static int scan_blob(struct commit_walk *w, const git_oid *id)
{
	unsigned char key[VERDICT_KEY];
	char id_hex[72]; /* sha1 or sha256 ids, hex */
	const char *slash = strrchr(w->path, '/');
	size_t findings = w->c->st->findings, allowed = w->c->st->allowed;
	int keyed = 0, rc;

	if (w->verdicts) {
		git_oid_tostr(id_hex, sizeof(id_hex), id);
		keyed = verdict_key(w->verdicts, id_hex,
				    slash ? slash + 1 : w->path, key) == 0;
		if (keyed && verdicts_find(w->verdicts, key)) {
			w->c->st->cached++;
			return 0;
		}
	}
	rc = scan_blob_content(w, id);
	if (!rc && keyed && !scan_done(w->c) &&
	    w->c->st->findings == findings && w->c->st->allowed == allowed)
		verdicts_add(w->verdicts, key);
	return rc;
}

static int walk_entry(const char *root, const git_tree_entry *e, void *payload)
{
	struct commit_walk *w = payload;
	git_filemode_t mode = git_tree_entry_filemode(e);
	size_t depth = 0;
	const char *s;

	for (s = root; *s; s++)
		depth += *s == '/';
	if (mode == GIT_FILEMODE_TREE) {
		if (depth + 1 <= NV_SCAN_MAX_DEPTH)
			return 0;
		w->rc = nv_err_set(
			w->err, NV_EREFUSED, "flatten the folder structure",
			"scan: '%s%s' is nested deeper than %d "
			"folders",
			root, git_tree_entry_name(e), NV_SCAN_MAX_DEPTH);
		return -1;
	}
	if (mode != GIT_FILEMODE_BLOB && mode != GIT_FILEMODE_BLOB_EXECUTABLE) {
		w->c->st->skipped_other++;
		return 0;
	}
	if ((size_t)snprintf(w->path, sizeof(w->path), "%s%s", root,
			     git_tree_entry_name(e)) >= sizeof(w->path)) {
		w->rc = nv_err_set(w->err, NV_EINVAL, NULL,
				   "scan: path too long under '%.200s'", root);
		return -1;
	}
	if (scan_blob(w, git_tree_entry_id(e)) || scan_done(w->c))
		return -1;
	return 0;
}

static int parse_oid(git_oid *oid, const char *hex, nv_err *err)
{
	size_t i;

	for (i = 0; hex && i < 40; i++)
		if (!is_digit((unsigned char)hex[i]) &&
		    !(lower((unsigned char)hex[i]) >= 'a' &&
		      lower((unsigned char)hex[i]) <= 'f'))
			break;
	if (!hex || i != 40 || hex[40] != '\0' || git_oid_fromstr(oid, hex))
		return nv_err_set(err, NV_EINVAL,
				  "pass a full 40-character commit id",
				  "scan: '%.80s' is not a commit id",
				  hex ? hex : "(null)");
	return 0;
}

static int load_tree_allowlist(struct commit_walk *w, git_tree *tree,
			       nv_scan_allowlist **al)
{
	const git_tree_entry *e =
		git_tree_entry_byname(tree, NV_SCAN_ALLOW_FILE);
	git_blob *blob = NULL;
	int rc;

	*al = NULL;
	if (!e || git_tree_entry_type(e) != GIT_OBJECT_BLOB)
		return 0;
	if (git_blob_lookup(&blob, w->repo, git_tree_entry_id(e)) < 0)
		return git_fail(w->err, NV_EIO, NULL, "cannot read",
				NV_SCAN_ALLOW_FILE);
	if ((size_t)git_blob_rawsize(blob) > NV_SCAN_MAX_FILE_SIZE) {
		git_blob_free(blob);
		return nv_err_set(w->err, NV_EINVAL, NULL,
				  "scan: %s is too big", NV_SCAN_ALLOW_FILE);
	}
	rc = scan_allowlist_load(w->c, al, git_blob_rawcontent(blob),
				 (size_t)git_blob_rawsize(blob), w->err);
	git_blob_free(blob);
	return rc;
}

int nv_scan_commit(const char *repo_path, const char *oid_hex, nv_scan_cb cb,
		   void *payload, nv_scan_stats *stats, nv_err *err)
{
	return nv_scan_commit_ex(repo_path, oid_hex, 0, NULL, 0, cb, payload,
				 stats, err);
}

static int scan_commit(const char *repo_path, const char *oid_hex,
		       unsigned flags, const char *allow, size_t allow_len,
		       nv_scan_verdicts *verdicts, nv_scan_cb cb, void *payload,
		       nv_scan_stats *stats, nv_err *err);

int nv_scan_commit_ex(const char *repo_path, const char *oid_hex,
		      unsigned flags, const char *allow, size_t allow_len,
		      nv_scan_cb cb, void *payload, nv_scan_stats *stats,
		      nv_err *err)
{
	return scan_commit(repo_path, oid_hex, flags, allow, allow_len, NULL,
			   cb, payload, stats, err);
}

int nv_scan_commit_cached(const char *repo_path, const char *oid_hex,
			  nv_scan_verdicts *verdicts, nv_scan_cb cb,
			  void *payload, nv_scan_stats *stats, nv_err *err)
{
	int rc = scan_commit(repo_path, oid_hex, 0, NULL, 0, verdicts, cb,
			     payload, stats, err);

	if (verdicts)
		verdicts_merge(verdicts);
	return rc;
}

static int scan_commit(const char *repo_path, const char *oid_hex,
		       unsigned flags, const char *allow, size_t allow_len,
		       nv_scan_verdicts *verdicts, nv_scan_cb cb, void *payload,
		       nv_scan_stats *stats, nv_err *err)
{
	struct commit_walk *w = NULL;
	struct scan_ctx c;
	nv_scan_stats local;
	nv_scan_allowlist *al = NULL;
	git_commit *commit = NULL;
	git_tree *tree = NULL;
	git_oid oid;
	int rc, grc;

	memset(&c, 0, sizeof(c));
	c.cb = cb;
	c.payload = payload;
	c.st = stats ? stats : &local;
	memset(c.st, 0, sizeof(*c.st));
	rc = parse_oid(&oid, oid_hex, err);
	if (rc)
		return rc;
	if (!repo_path || !repo_path[0])
		return nv_err_set(err, NV_EINVAL, NULL,
				  "scan: empty repository path");
	w = calloc(1, sizeof(*w));
	if (!w)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	w->c = &c;
	w->err = err;
	w->verdicts = verdicts;
	if (git_libgit2_init() < 0) {
		free(w);
		return git_fail(err, NV_EBACKEND, NULL, "cannot initialise",
				"libgit2");
	}
	grc = git_repository_open_ext(&w->repo, repo_path, 0, NULL);
	if (grc < 0) {
		rc = git_fail(err,
			      grc == GIT_ENOTFOUND ? NV_ENOTFOUND
			      : grc == GIT_EOWNER  ? NV_EREFUSED
						   : NV_EIO,
			      "the path must be inside a git repository",
			      "cannot open the repository of", repo_path);
		goto out;
	}
	if (git_repository_odb(&w->odb, w->repo) < 0) {
		rc = git_fail(err, NV_EIO, NULL, "cannot open the objects of",
			      repo_path);
		goto out;
	}
	grc = git_commit_lookup(&commit, w->repo, &oid);
	if (grc < 0) {
		rc = git_fail(err, grc == GIT_ENOTFOUND ? NV_ENOTFOUND : NV_EIO,
			      "check the commit id (git log --oneline)",
			      "no commit", oid_hex);
		goto out;
	}
	if (git_commit_tree(&tree, commit) < 0) {
		rc = git_fail(err, NV_EIO, NULL, "cannot read the tree of",
			      oid_hex);
		goto out;
	}
	if (!(flags & NV_SCAN_NO_ALLOWLIST))
		rc = load_tree_allowlist(w, tree, &al);
	else if (allow && allow_len > NV_SCAN_MAX_FILE_SIZE)
		rc = nv_err_set(err, NV_EINVAL, NULL,
				"scan: the allow-list is too big");
	else
		rc = allow ? scan_allowlist_load(&c, &al, allow, allow_len, err)
			   : 0;
	if (rc)
		goto out;
	c.al = al;
	if (!scan_done(&c) &&
	    git_tree_walk(tree, GIT_TREEWALK_PRE, walk_entry, w) < 0 &&
	    !w->rc && !scan_done(&c)) {
		rc = git_fail(err, NV_EIO, NULL, "cannot walk the tree of",
			      oid_hex);
		goto out;
	}
	git_error_clear();
	rc = w->rc ? w->rc : c.stop;

out:
	nv_scan_allowlist_free(al);
	git_tree_free(tree);
	git_commit_free(commit);
	git_odb_free(w->odb);
	git_repository_free(w->repo);
	free(w);
	git_libgit2_shutdown();
	return rc;
}

/* ---- plain folders ------------------------------------------------------ */

struct dir_walk {
	struct scan_ctx *c;
	nv_err *err;
	char *buf; /* NV_SCAN_MAX_FILE_SIZE bytes, reused for every file */
	char path[PATH_CAP];
	size_t path_len;
};

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int dir_fail(struct dir_walk *w, int errnum, const char *what,
		    const char *name)
{
	return nv_err_set_errno(w->err, NV_EIO, errnum,
				"check the folder's rights",
				"scan: cannot %s '%s%s'", what, w->path, name);
}

/* Reads a regular file of at most NV_SCAN_MAX_FILE_SIZE bytes into w->buf
 * without following a symlink put there since the lstat. */
static int read_file_at(struct dir_walk *w, int dfd, const char *name,
			size_t *len, int *regular)
{
	struct stat st;
	size_t got = 0;
	int fd;

	*regular = 0;
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return dir_fail(w, errno, "open", name);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return 0;
	}
	*regular = 1;
	while (got < NV_SCAN_MAX_FILE_SIZE) {
		ssize_t r = read(fd, w->buf + got, NV_SCAN_MAX_FILE_SIZE - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;

			close(fd);
			return dir_fail(w, e, "read", name);
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	*len = got;
	return 0;
}

static int walk_dir(struct dir_walk *w, int dfd, int depth);

static int walk_child(struct dir_walk *w, int dfd, const char *name, int depth)
{
	struct stat st;
	size_t len = 0, saved = w->path_len;
	int rc = 0, regular, fd;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return dir_fail(w, errno, "stat", name);
	if (S_ISDIR(st.st_mode)) {
		if (depth + 1 > NV_SCAN_MAX_DEPTH)
			return nv_err_set(w->err, NV_EREFUSED,
					  "flatten the folder structure",
					  "scan: '%s%s' is nested deeper than "
					  "%d folders",
					  w->path, name, NV_SCAN_MAX_DEPTH);
		if (saved + strlen(name) + 2 > sizeof(w->path))
			return nv_err_set(w->err, NV_EINVAL, NULL,
					  "scan: path too long under '%.200s'",
					  w->path);
		fd = openat(dfd, name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return dir_fail(w, errno, "open", name);
		w->path_len += (size_t)snprintf(
			w->path + saved, sizeof(w->path) - saved, "%s/", name);
		rc = walk_dir(w, fd, depth + 1);
		w->path_len = saved;
		w->path[saved] = '\0';
		return rc;
	}
	if (!S_ISREG(st.st_mode)) {
		w->c->st->skipped_other++;
		return 0;
	}
	if (saved + strlen(name) + 1 > sizeof(w->path))
		return nv_err_set(w->err, NV_EINVAL, NULL,
				  "scan: path too long under '%.200s'",
				  w->path);
	if ((unsigned long long)st.st_size > NV_SCAN_MAX_FILE_SIZE) {
		memcpy(w->path + saved, name, strlen(name) + 1);
		scan_file(w->c, w->path, NULL, (size_t)st.st_size);
		w->path[saved] = '\0';
		return 0;
	}
	rc = read_file_at(w, dfd, name, &len, &regular);
	if (rc)
		return rc;
	memcpy(w->path + saved, name, strlen(name) + 1);
	if (regular)
		scan_file(w->c, w->path, w->buf, len);
	else
		w->c->st->skipped_other++;
	w->path[saved] = '\0';
	return 0;
}

/* Takes ownership of dfd. Entries are visited in name order so that the
 * findings come out the same on every machine. */
static int walk_dir(struct dir_walk *w, int dfd, int depth)
{
	DIR *d = fdopendir(dfd);
	char **names = NULL;
	size_t n = 0, cap = 0, i;
	struct dirent *de;
	int rc = 0;

	if (!d) {
		rc = dir_fail(w, errno, "list", "");
		close(dfd);
		return rc;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0 ||
		    strcmp(de->d_name, ".git") == 0)
			continue;
		if (n == DIR_MAX_ENTRIES) {
			rc = nv_err_set(w->err, NV_ENOMEM, NULL,
					"scan: '%s' has more than %d entries",
					w->path, DIR_MAX_ENTRIES);
			goto out;
		}
		if (n == cap) {
			char **grown;

			cap = cap ? cap * 2 : 64;
			grown = realloc(names, cap * sizeof(*names));
			if (!grown) {
				rc = nv_err_set(w->err, NV_ENOMEM, NULL,
						"out of memory");
				goto out;
			}
			names = grown;
		}
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			rc = nv_err_set(w->err, NV_ENOMEM, NULL,
					"out of memory");
			goto out;
		}
		n++;
	}
	if (n)
		qsort(names, n, sizeof(*names), cmp_names);
	for (i = 0; i < n && !rc && !scan_done(w->c); i++)
		rc = walk_child(w, dirfd(d), names[i], depth);

out:
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return rc;
}

int nv_scan_dir(const char *dir, nv_scan_cb cb, void *payload,
		nv_scan_stats *stats, nv_err *err)
{
	struct dir_walk w;
	struct scan_ctx c;
	nv_scan_stats local;
	nv_scan_allowlist *al = NULL;
	struct stat st;
	size_t len = 0;
	int fd, rc, regular = 0;

	memset(&c, 0, sizeof(c));
	memset(&w, 0, sizeof(w));
	c.cb = cb;
	c.payload = payload;
	c.st = stats ? stats : &local;
	memset(c.st, 0, sizeof(*c.st));
	w.c = &c;
	w.err = err;
	if (!dir || !dir[0])
		return nv_err_set(err, NV_EINVAL, NULL, "scan: empty folder");
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return nv_err_set_errno(
			err, errno == ENOENT ? NV_ENOTFOUND : NV_EIO, errno,
			NULL, "scan: cannot open '%s'", dir);
	w.buf = malloc(NV_SCAN_MAX_FILE_SIZE);
	if (!w.buf) {
		close(fd);
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	}
	/* A symlinked allow-list is ignored (and counted as skipped). */
	if (fstatat(fd, NV_SCAN_ALLOW_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode)) {
		rc = read_file_at(&w, fd, NV_SCAN_ALLOW_FILE, &len, &regular);
		if (!rc && regular)
			rc = scan_allowlist_load(&c, &al, w.buf, len, err);
		if (rc || scan_done(&c)) {
			close(fd);
			goto out;
		}
	}
	c.al = al;
	rc = walk_dir(&w, fd, 0);
	if (!rc)
		rc = c.stop;

out:
	if (!rc)
		rc = c.stop;
	nv_scan_allowlist_free(al);
	free(w.buf);
	return rc;
}
