/* The deterministic tar writer of a commit's tree (see archive.h for the
 * format). It works in two passes: the first walks the tree, checks every
 * name and symlink and sorts the entries, so that a refused tree writes no
 * byte; the second streams the entries through one buffer into the
 * uncompressed hash, the optional deflate, the output hash and the
 * caller's callback. File content is streamed from loose objects in bounded
 * memory; packed blobs (which libgit2 cannot stream) are read whole. */
#include "git/archive.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <git2.h>
#include <zlib.h>

#include "git/pgzip.h"
#include "core/fsutil.h"
#include "core/sha256.h"

#define BLOCK          512
#define IO_BUF         ((size_t)128 * 1024)
#define USTAR_MAX      100                      /* name and linkname fields */
#define SIZE_MAX_OCTAL ((uint64_t)077777777777) /* 11 octal digits */

static const char HINT_TREE[] =
	"fix the tree (git ls-tree -r COMMIT) or choose another commit";

enum entry_type { ENTRY_DIR, ENTRY_FILE, ENTRY_EXEC, ENTRY_LINK };

struct entry {
	char *name;   /* relative to the tree root; folders end with '/' */
	char *target; /* symlinks: the target, verbatim */
	git_oid id;
	enum entry_type type;
};

struct archive {
	git_repository *repo;
	git_odb *odb;
	nv_err *err;
	struct entry *entries;
	size_t n, cap;
	uint64_t submodules;
	char path[NV_ARCHIVE_PATH_MAX]; /* current folder while walking */
	size_t path_len;
	char prefix[NV_ARCHIVE_PATH_MAX]; /* normalised, ends with '/' or "" */
	int64_t mtime;
};

/* ---- pass 1: collect, check, sort ---- */

static int add_entry(struct archive *a, const char *name, size_t len,
		     enum entry_type type, const git_oid *id, char *target)
{
	struct entry *e;

	if (a->n >= NV_ARCHIVE_MAX_ENTRIES)
		return nv_err_set(a->err, NV_EREFUSED, HINT_TREE,
				  "archive: the tree has more than %zu entries",
				  NV_ARCHIVE_MAX_ENTRIES);
	if (a->n == a->cap) {
		size_t ncap = a->cap ? a->cap * 2 : 256;
		struct entry *ne = realloc(a->entries, ncap * sizeof(*ne));

		if (!ne)
			return nv_err_set(a->err, NV_ENOMEM, NULL,
					  "archive: out of memory");
		a->entries = ne;
		a->cap = ncap;
	}
	e = &a->entries[a->n];
	e->name = malloc(len + 1);
	if (!e->name)
		return nv_err_set(a->err, NV_ENOMEM, NULL,
				  "archive: out of memory");
	memcpy(e->name, name, len);
	e->name[len] = '\0';
	e->target = target;
	e->type = type;
	if (id)
		git_oid_cpy(&e->id, id);
	else
		memset(&e->id, 0, sizeof(e->id));
	a->n++;
	return 0;
}

/* Reads a symlink's target: 1..PATH_MAX-1 bytes, no NUL, not absolute. */
static int read_link_target(struct archive *a, const git_oid *id,
			    const char *name, char **out)
{
	git_blob *blob = NULL;
	const char *data;
	size_t len;

	*out = NULL;
	if (git_blob_lookup(&blob, a->repo, id) < 0) {
		const git_error *ge = git_error_last();
		nv_err_set(a->err, NV_EIO, NULL,
			   "archive: cannot read symlink '%s': %s", name,
			   ge && ge->message ? ge->message : "unknown error");
		git_error_clear();
		return NV_EIO;
	}
	data = git_blob_rawcontent(blob);
	len = (size_t)git_blob_rawsize(blob);
	if (len == 0 || len >= NV_ARCHIVE_PATH_MAX || memchr(data, '\0', len)) {
		git_blob_free(blob);
		return nv_err_set(a->err, NV_EREFUSED, HINT_TREE,
				  "archive: symlink '%s' has an invalid target",
				  name);
	}
	if (data[0] == '/') {
		nv_err_set(a->err, NV_EREFUSED,
			   "make the link relative to its folder, inside the "
			   "repository",
			   "archive: symlink '%s' points to the absolute path "
			   "'%.*s'",
			   name, (int)(len > 200 ? 200 : len), data);
		git_blob_free(blob);
		return NV_EREFUSED;
	}
	*out = malloc(len + 1);
	if (!*out) {
		git_blob_free(blob);
		return nv_err_set(a->err, NV_ENOMEM, NULL,
				  "archive: out of memory");
	}
	memcpy(*out, data, len);
	(*out)[len] = '\0';
	git_blob_free(blob);
	return 0;
}

static int walk_tree(struct archive *a, const git_tree *tree, int depth);

static int walk_entry(struct archive *a, const git_tree_entry *te, int depth)
{
	const char *name = git_tree_entry_name(te);
	const git_oid *id = git_tree_entry_id(te);
	size_t saved = a->path_len, nlen = strlen(name);
	git_filemode_t mode = git_tree_entry_filemode(te);
	char *target = NULL;
	git_tree *sub = NULL;
	int rc;

	if (!nv_git_entry_name_ok(name))
		return nv_err_set(a->err, NV_EREFUSED, HINT_TREE,
				  "archive: unsafe entry '%s%.200s'", a->path,
				  name);
	/* room for the name, a '/' and the NUL */
	if (saved + nlen + 2 > sizeof(a->path))
		return nv_err_set(a->err, NV_EREFUSED, HINT_TREE,
				  "archive: a path under '%.200s' is longer "
				  "than %d bytes",
				  a->path, NV_ARCHIVE_PATH_MAX);
	memcpy(a->path + saved, name, nlen + 1);
	a->path_len = saved + nlen;
	switch (mode) {
	case GIT_FILEMODE_BLOB:
		rc = add_entry(a, a->path, a->path_len, ENTRY_FILE, id, NULL);
		break;
	case GIT_FILEMODE_BLOB_EXECUTABLE:
		rc = add_entry(a, a->path, a->path_len, ENTRY_EXEC, id, NULL);
		break;
	case GIT_FILEMODE_LINK:
		rc = read_link_target(a, id, a->path, &target);
		if (!rc)
			rc = add_entry(a, a->path, a->path_len, ENTRY_LINK, id,
				       target);
		if (rc)
			free(target);
		break;
	case GIT_FILEMODE_COMMIT:
		/* A gitlink: its content is in another repository. */
		a->submodules++;
		rc = 0;
		break;
	case GIT_FILEMODE_TREE:
		if (depth >= NV_GIT_EXPORT_MAX_DEPTH) {
			rc = nv_err_set(a->err, NV_EREFUSED, HINT_TREE,
					"archive: '%s' is nested deeper than "
					"%d folders",
					a->path, NV_GIT_EXPORT_MAX_DEPTH);
			break;
		}
		a->path[a->path_len++] = '/';
		a->path[a->path_len] = '\0';
		rc = add_entry(a, a->path, a->path_len, ENTRY_DIR, NULL, NULL);
		if (rc)
			break;
		if (git_tree_lookup(&sub, a->repo, id) < 0) {
			git_error_clear();
			rc = nv_err_set(a->err, NV_EIO, NULL,
					"archive: cannot read tree '%s'",
					a->path);
			break;
		}
		rc = walk_tree(a, sub, depth + 1);
		git_tree_free(sub);
		break;
	default:
		rc = nv_err_set(a->err, NV_EREFUSED, HINT_TREE,
				"archive: '%s' has an unknown mode %o", a->path,
				(unsigned)mode);
	}
	a->path_len = saved;
	a->path[saved] = '\0';
	return rc;
}

static int walk_tree(struct archive *a, const git_tree *tree, int depth)
{
	size_t i, n = git_tree_entrycount(tree);
	int rc = 0;

	for (i = 0; i < n && !rc; i++)
		rc = walk_entry(a, git_tree_entry_byindex(tree, i), depth);
	return rc;
}

static int entry_cmp(const void *x, const void *y)
{
	const struct entry *ex = x, *ey = y;

	return strcmp(ex->name, ey->name);
}

static const struct entry *find_entry(const struct archive *a, const char *name)
{
	struct entry key;

	key.name = (char *)name;
	return bsearch(&key, a->entries, a->n, sizeof(*a->entries), entry_cmp);
}

/* Resolves a symlink's target from the link's folder, component by
 * component, following the in-tree symlinks it passes through. Returns 0
 * when it stays inside the tree, else an NV_EREFUSED naming the link. */
static int check_link(struct archive *a, const struct entry *link)
{
	char cur[NV_ARCHIVE_PATH_MAX]; /* resolved folder, no trailing '/' */
	char pend[2 * NV_ARCHIVE_PATH_MAX]; /* what is left to resolve */
	size_t cur_len, pos = 0, hops = 0;
	const char *slash = strrchr(link->name, '/');

	cur_len = slash ? (size_t)(slash - link->name) : 0;
	memcpy(cur, link->name, cur_len);
	cur[cur_len] = '\0';
	snprintf(pend, sizeof(pend), "%s", link->target);
	while (pend[pos]) {
		size_t clen = strcspn(pend + pos, "/");
		const char *comp = pend + pos;
		const struct entry *e;
		size_t next = pos + clen + (pend[pos + clen] == '/');

		if (clen == 0 || (clen == 1 && comp[0] == '.')) {
			pos = next;
			continue;
		}
		if (clen == 2 && comp[0] == '.' && comp[1] == '.') {
			char *up;

			if (cur_len == 0)
				goto escapes;
			up = strrchr(cur, '/');
			cur_len = up ? (size_t)(up - cur) : 0;
			cur[cur_len] = '\0';
			pos = next;
			continue;
		}
		if (cur_len + 1 + clen >= sizeof(cur))
			goto too_long;
		{
			size_t old = cur_len;

			if (cur_len)
				cur[cur_len++] = '/';
			memcpy(cur + cur_len, comp, clen);
			cur_len += clen;
			cur[cur_len] = '\0';
			e = find_entry(a, cur);
			if (!e || e->type != ENTRY_LINK) {
				pos = next;
				continue;
			}
			/* An in-tree symlink: go on from its folder, with its
			 * target in front of what is left. */
			if (++hops > NV_ARCHIVE_LINK_HOPS)
				return nv_err_set(
					a->err, NV_EREFUSED, HINT_TREE,
					"archive: symlink '%s' goes through "
					"more than %d symlinks (a loop?)",
					link->name, NV_ARCHIVE_LINK_HOPS);
			cur_len = old;
			cur[cur_len] = '\0';
			if (e->target[0] == '/')
				goto escapes;
			{
				char rest[2 * NV_ARCHIVE_PATH_MAX];
				int w = snprintf(rest, sizeof(rest), "%s/%s",
						 e->target, pend + next);

				if (w < 0 || (size_t)w >= sizeof(rest))
					goto too_long;
				memcpy(pend, rest, (size_t)w + 1);
				pos = 0;
			}
		}
	}
	return 0;
escapes:
	return nv_err_set(a->err, NV_EREFUSED,
			  "a symlink must point inside the repository; make "
			  "its target a path within the tree",
			  "archive: symlink '%s' points outside the tree "
			  "('%.200s')",
			  link->name, link->target);
too_long:
	return nv_err_set(a->err, NV_EREFUSED, HINT_TREE,
			  "archive: symlink '%s' resolves to a path longer "
			  "than %d bytes",
			  link->name, NV_ARCHIVE_PATH_MAX);
}

/* "/a/b/" -> "a/b/", "" -> ""; components "", ".", ".." refused. */
static int normalise_prefix(struct archive *a, const char *prefix)
{
	const char *p = prefix ? prefix : "";
	size_t len = 0;

	while (*p == '/')
		p++;
	while (*p) {
		size_t clen = strcspn(p, "/");

		if (clen == 0 || (clen == 1 && p[0] == '.') ||
		    (clen == 2 && p[0] == '.' && p[1] == '.'))
			return nv_err_set(
				a->err, NV_EINVAL,
				"give a folder such as /workspace",
				"archive: bad folder '%.200s' (empty, "
				"'.' or '..' component)",
				prefix);
		if (len + clen + 2 > sizeof(a->prefix) / 2)
			return nv_err_set(a->err, NV_EINVAL, NULL,
					  "archive: folder '%.200s' too long",
					  prefix);
		memcpy(a->prefix + len, p, clen);
		len += clen;
		a->prefix[len++] = '/';
		p += clen;
		/* one trailing '/' (or several) ends the prefix */
		while (*p == '/' && p[1] == '/')
			p++;
		if (*p == '/')
			p++;
		if (!*p)
			break;
	}
	a->prefix[len] = '\0';
	return 0;
}

/* ---- pass 2: the stream ---- */

struct writer {
	nv_archive_write_fn write;
	void *payload;
	nv_err *err;
	nv_sha256 tar_hash, out_hash;
	int gzip;
	nv_pgzip *z;
	uint64_t tar_size, size;
	size_t used;
	unsigned char *buf;  /* IO_BUF bytes of tar not yet hashed */
	unsigned char *rbuf; /* IO_BUF bytes read from a blob stream */
};

static int out_emit(struct writer *w, const unsigned char *data, size_t len)
{
	int rc;

	if (len == 0)
		return 0;
	if (w->gzip) {
		rc = nv_sha256_update(&w->out_hash, data, len, w->err);
		if (rc)
			return rc;
	}
	if (w->write(w->payload, data, len) != 0) {
		/* the callback may have said why */
		if (!w->err->code)
			nv_err_set(w->err, NV_EIO, NULL,
				   "archive: the output refused the data");
		return w->err->code;
	}
	w->size += len;
	return 0;
}

static int gz_out(void *payload, const unsigned char *data, size_t len)
{
	return out_emit(payload, data, len) ? -1 : 0;
}

/* Hashes and passes on bytes of tar (not the buffer's). */
static int tar_emit(struct writer *w, const unsigned char *data, size_t len)
{
	int rc;

	if (len == 0)
		return 0;
	rc = nv_sha256_update(&w->tar_hash, data, len, w->err);
	if (rc)
		return rc;
	w->tar_size += len;
	return w->gzip ? nv_pgzip_write(w->z, data, len, w->err)
		       : out_emit(w, data, len);
}

static int tar_flush(struct writer *w)
{
	int rc = tar_emit(w, w->buf, w->used);

	w->used = 0;
	return rc;
}

static int tar_put(struct writer *w, const void *data, size_t len)
{
	const unsigned char *p = data;
	int rc;

	if (w->used + len > IO_BUF) {
		rc = tar_flush(w);
		if (rc)
			return rc;
		if (len >= IO_BUF)
			return tar_emit(w, p, len);
	}
	memcpy(w->buf + w->used, p, len);
	w->used += len;
	return 0;
}

static int tar_pad(struct writer *w, uint64_t size)
{
	static const unsigned char zeros[BLOCK];
	size_t r = (size_t)(size % BLOCK);

	return r ? tar_put(w, zeros, BLOCK - r) : 0;
}

static void octal(char *field, size_t width, uint64_t v)
{
	/* width-1 digits and a NUL, as ustar readers expect */
	snprintf(field, width, "%0*" PRIo64, (int)(width - 1), v);
}

static void header_block(unsigned char block[BLOCK], const char *name,
			 char type, unsigned mode, uint64_t size,
			 const char *linkname, int64_t mtime)
{
	char *h = (char *)block;
	unsigned sum = 0;
	size_t i;

	memset(block, 0, BLOCK);
	strncpy(h, name, USTAR_MAX); /* may fill the field: no NUL then */
	octal(h + 100, 8, mode);
	octal(h + 108, 8, 0); /* uid */
	octal(h + 116, 8, 0); /* gid */
	octal(h + 124, 12, size > SIZE_MAX_OCTAL ? 0 : size);
	octal(h + 136, 12, (uint64_t)mtime);
	memset(h + 148, ' ', 8);
	h[156] = type;
	if (linkname)
		strncpy(h + 157, linkname, USTAR_MAX);
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	octal(h + 329, 8, 0); /* devmajor */
	octal(h + 337, 8, 0); /* devminor */
	for (i = 0; i < BLOCK; i++)
		sum += block[i];
	snprintf(h + 148, 7, "%06o", sum & 0777777);
	h[155] = ' ';
}

/* One pax record "LEN key=value\n", LEN counting itself. */
static int pax_record(char *out, size_t cap, size_t *used, const char *key,
		      const char *value)
{
	size_t body = strlen(key) + strlen(value) + 3, len = body, digits;
	int w;

	for (;;) {
		char tmp[24];

		digits = (size_t)snprintf(tmp, sizeof(tmp), "%zu", len);
		if (body + digits == len)
			break;
		len = body + digits;
	}
	w = snprintf(out + *used, cap - *used, "%zu %s=%s\n", len, key, value);
	if (w < 0 || (size_t)w != len || *used + len >= cap)
		return -1;
	*used += len;
	return 0;
}

/* The header of one entry, preceded by a pax header when a field does not
 * fit ustar. */
static int write_header(struct writer *w, const char *name, char type,
			unsigned mode, uint64_t size, const char *linkname,
			int64_t mtime)
{
	unsigned char block[BLOCK];
	int need_pax = strlen(name) > USTAR_MAX ||
		       (linkname && strlen(linkname) > USTAR_MAX) ||
		       size > SIZE_MAX_OCTAL;
	int rc;

	if (need_pax) {
		char pax[3 * NV_ARCHIVE_PATH_MAX], paxname[USTAR_MAX + 1];
		const char *base;
		size_t used = 0, nlen = strlen(name);
		char sizebuf[24];

		if (strlen(name) > USTAR_MAX &&
		    pax_record(pax, sizeof(pax), &used, "path", name))
			goto too_big;
		if (linkname && strlen(linkname) > USTAR_MAX &&
		    pax_record(pax, sizeof(pax), &used, "linkpath", linkname))
			goto too_big;
		if (size > SIZE_MAX_OCTAL) {
			snprintf(sizebuf, sizeof(sizebuf), "%" PRIu64, size);
			if (pax_record(pax, sizeof(pax), &used, "size",
				       sizebuf))
				goto too_big;
		}
		/* A fixed name (never a pid or time) keeps it reproducible. */
		while (nlen > 0 && name[nlen - 1] == '/')
			nlen--;
		base = name;
		for (size_t i = 0; i < nlen; i++)
			if (name[i] == '/')
				base = name + i + 1;
		snprintf(paxname, sizeof(paxname), "PaxHeaders/%.*s",
			 (int)(name + nlen - base), base);
		header_block(block, paxname, 'x', 0644, used, NULL, mtime);
		rc = tar_put(w, block, BLOCK);
		if (!rc)
			rc = tar_put(w, pax, used);
		if (!rc)
			rc = tar_pad(w, used);
		if (rc)
			return rc;
	}
	header_block(block, name, type, mode, size, linkname, mtime);
	return tar_put(w, block, BLOCK);
too_big:
	return nv_err_set(w->err, NV_EREFUSED, HINT_TREE,
			  "archive: pax header of '%.200s' too large", name);
}

static int read_fail(struct archive *a, const char *name)
{
	const git_error *ge = git_error_last();

	nv_err_set(a->err, NV_EIO, "check the repository (git fsck)",
		   "archive: cannot read the content of '%s': %s", name,
		   ge && ge->message ? ge->message : "unknown error");
	git_error_clear();
	return NV_EIO;
}

static int write_file_entry(struct archive *a, struct writer *w,
			    const struct entry *e, const char *name,
			    nv_archive_result *res)
{
	unsigned mode = e->type == ENTRY_EXEC ? 0755 : 0644;
	git_odb_stream *stream = NULL;
	git_object_t type;
	size_t len = 0, total = 0;
	git_blob *blob = NULL;
	int rc;

	if (git_odb_open_rstream(&stream, &len, &type, a->odb, &e->id) == 0) {
		int n;

		if (type != GIT_OBJECT_BLOB) {
			git_odb_stream_free(stream);
			return nv_err_set(a->err, NV_EIO, NULL,
					  "archive: '%s' is not a blob",
					  e->name);
		}
		rc = write_header(w, name, '0', mode, len, NULL, a->mtime);
		while (!rc && (n = git_odb_stream_read(stream, (char *)w->rbuf,
						       IO_BUF)) > 0) {
			/* more than announced would corrupt the archive */
			if (total + (size_t)n > len)
				break;
			rc = tar_put(w, w->rbuf, (size_t)n);
			total += (size_t)n;
		}
		git_odb_stream_free(stream);
		if (rc)
			return rc;
		if (total != len)
			return read_fail(a, e->name);
	} else {
		git_error_clear();
		if (git_blob_lookup(&blob, a->repo, &e->id) < 0)
			return read_fail(a, e->name);
		len = (size_t)git_blob_rawsize(blob);
		rc = write_header(w, name, '0', mode, len, NULL, a->mtime);
		if (!rc)
			rc = tar_put(w, git_blob_rawcontent(blob), len);
		git_blob_free(blob);
		if (rc)
			return rc;
	}
	res->files++;
	res->file_bytes += len;
	return tar_pad(w, len);
}

static int write_entries(struct archive *a, struct writer *w,
			 nv_archive_result *res)
{
	char name[2 * NV_ARCHIVE_PATH_MAX];
	size_t plen = strlen(a->prefix), i;
	int rc;

	/* The prefix's folders, outermost first. */
	for (i = 0; i < plen; i++) {
		if (a->prefix[i] != '/')
			continue;
		memcpy(name, a->prefix, i + 1);
		name[i + 1] = '\0';
		rc = write_header(w, name, '5', 0755, 0, NULL, a->mtime);
		if (rc)
			return rc;
		res->dirs++;
	}
	for (i = 0; i < a->n; i++) {
		const struct entry *e = &a->entries[i];

		snprintf(name, sizeof(name), "%s%s", a->prefix, e->name);
		switch (e->type) {
		case ENTRY_DIR:
			rc = write_header(w, name, '5', 0755, 0, NULL,
					  a->mtime);
			res->dirs++;
			break;
		case ENTRY_LINK:
			rc = write_header(w, name, '2', 0777, 0, e->target,
					  a->mtime);
			res->symlinks++;
			break;
		default: rc = write_file_entry(a, w, e, name, res);
		}
		if (rc)
			return rc;
	}
	/* end of archive: two zero blocks */
	{
		static const unsigned char zeros[2 * BLOCK];

		rc = tar_put(w, zeros, sizeof(zeros));
	}
	return rc;
}

static int writer_open(struct writer *w, const nv_archive_opts *opts,
		       nv_archive_write_fn write, void *payload, nv_err *err)
{
	int rc;

	memset(w, 0, sizeof(*w));
	w->write = write;
	w->payload = payload;
	w->err = err;
	w->gzip = opts && opts->gzip;
	w->buf = malloc(IO_BUF);
	w->rbuf = malloc(IO_BUF);
	if (!w->buf || !w->rbuf)
		return nv_err_set(err, NV_ENOMEM, NULL,
				  "archive: out of memory");
	rc = nv_sha256_init(&w->tar_hash, err);
	if (!rc && w->gzip)
		rc = nv_sha256_init(&w->out_hash, err);
	if (!rc && w->gzip)
		rc = nv_pgzip_open(&w->z, NV_ARCHIVE_GZIP_LEVEL,
				   NV_ARCHIVE_GZIP_OS, opts->threads, gz_out, w,
				   err);
	return rc;
}

static int writer_finish(struct writer *w, nv_archive_result *res)
{
	int rc = tar_flush(w);

	if (!rc && w->gzip)
		rc = nv_pgzip_finish(w->z, w->err);
	if (!rc)
		rc = nv_sha256_final(&w->tar_hash, res->tar_sha256, w->err);
	if (!rc && w->gzip)
		rc = nv_sha256_final(&w->out_hash, res->sha256, w->err);
	else if (!rc)
		memcpy(res->sha256, res->tar_sha256, sizeof(res->sha256));
	res->tar_size = w->tar_size;
	res->size = w->size;
	return rc;
}

static void writer_close(struct writer *w)
{
	nv_pgzip_free(w->z);
	w->z = NULL;
	nv_sha256_dispose(&w->tar_hash);
	nv_sha256_dispose(&w->out_hash);
	free(w->buf);
	free(w->rbuf);
}

static void archive_free(struct archive *a)
{
	size_t i;

	for (i = 0; i < a->n; i++) {
		free(a->entries[i].name);
		free(a->entries[i].target);
	}
	free(a->entries);
	if (a->odb)
		git_odb_free(a->odb);
	free(a);
}

int nv_archive_commit(const nv_git_repo *repo, const char *oid_hex,
		      const nv_archive_opts *opts, nv_archive_write_fn write,
		      void *payload, nv_archive_result *res, nv_err *err)
{
	nv_archive_result local;
	nv_err local_err;
	struct archive *a = NULL;
	git_commit *commit = NULL;
	git_tree *tree = NULL;
	struct writer w;
	git_oid oid;
	size_t i;
	int rc;

	memset(&w, 0, sizeof(w));
	if (!err)
		err = &local_err;
	nv_err_clear(err);
	if (!res)
		res = &local;
	memset(res, 0, sizeof(*res));
	if (!repo || !write)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "archive: missing repository or writer");
	if (!oid_hex || strlen(oid_hex) != NV_GIT_OID_HEX_LEN ||
	    git_oid_fromstr(&oid, oid_hex) < 0) {
		git_error_clear();
		return nv_err_set(err, NV_EINVAL,
				  "pass a full 40-character commit id",
				  "archive: '%.80s' is not a full commit id",
				  oid_hex ? oid_hex : "");
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return nv_err_set(err, NV_ENOMEM, NULL,
				  "archive: out of memory");
	a->repo = nv_git_libgit2(repo);
	a->err = err;
	rc = normalise_prefix(a, opts ? opts->prefix : NULL);
	if (rc)
		goto out;
	if (git_commit_lookup(&commit, a->repo, &oid) < 0) {
		git_error_clear();
		rc = nv_err_set(err, NV_ENOTFOUND,
				"check the commit id (git log --oneline)",
				"archive: commit %s not found in this "
				"repository",
				oid_hex);
		goto out;
	}
	a->mtime = (int64_t)git_commit_time(commit);
	if (a->mtime < 0)
		a->mtime = 0; /* tar has no time before 1970 */
	if (git_commit_tree(&tree, commit) < 0 ||
	    git_repository_odb(&a->odb, a->repo) < 0) {
		git_error_clear();
		rc = nv_err_set(err, NV_EIO, "check the repository (git fsck)",
				"archive: cannot read the tree of %s", oid_hex);
		goto out;
	}
	rc = walk_tree(a, tree, 0);
	if (rc)
		goto out;
	qsort(a->entries, a->n, sizeof(*a->entries), entry_cmp);
	for (i = 0; i < a->n && !rc; i++)
		if (a->entries[i].type == ENTRY_LINK)
			rc = check_link(a, &a->entries[i]);
	if (rc)
		goto out;

	rc = writer_open(&w, opts, write, payload, err);
	if (!rc)
		rc = write_entries(a, &w, res);
	if (!rc)
		rc = writer_finish(&w, res);
	res->submodules = a->submodules;
	res->mtime = a->mtime;
out:
	writer_close(&w);
	git_tree_free(tree);
	git_commit_free(commit);
	archive_free(a);
	return rc;
}

struct file_sink {
	int fd;
	nv_err *err;
	const char *path;
};

static int file_write(void *payload, const void *data, size_t len)
{
	struct file_sink *f = payload;
	if (nv_write_all(f->fd, data, len)) {
		nv_err_set_errno(f->err, NV_EIO, errno,
				 "check the free space and rights",
				 "archive: cannot write '%s'", f->path);
		return -1;
	}
	return 0;
}

int nv_archive_commit_file(const nv_git_repo *repo, const char *oid_hex,
			   const nv_archive_opts *opts, const char *path,
			   nv_archive_result *res, nv_err *err)
{
	char tmp[NV_ARCHIVE_PATH_MAX];
	struct file_sink f;
	int rc;

	if (!path || !path[0] ||
	    snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) >=
		    (int)sizeof(tmp))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "archive: bad output path");
	f.fd = mkstemp(tmp);
	f.err = err;
	f.path = path;
	if (f.fd < 0)
		return nv_err_set_errno(err, NV_EIO, errno, NULL,
					"archive: cannot create '%s'", tmp);
	nv_err_clear(err);
	rc = nv_archive_commit(repo, oid_hex, opts, file_write, &f, res, err);
	if (!rc && fchmod(f.fd, 0644) < 0)
		rc = nv_err_set_errno(err, NV_EIO, errno, NULL,
				      "archive: cannot set the mode of '%s'",
				      tmp);
	if (!rc && fsync(f.fd) < 0)
		rc = nv_err_set_errno(err, NV_EIO, errno, NULL,
				      "archive: cannot write '%s'", path);
	if (close(f.fd) < 0 && !rc)
		rc = nv_err_set_errno(err, NV_EIO, errno, NULL,
				      "archive: cannot write '%s'", path);
	if (!rc && rename(tmp, path) < 0)
		rc = nv_err_set_errno(err, NV_EIO, errno, NULL,
				      "archive: cannot rename to '%s'", path);
	if (rc)
		unlink(tmp);
	return rc;
}
