/* Listing the file:// store (see filestore.h): keys in S3's order, one
 * folder at a time, a page of at most NV_FILESTORE_LIST_MAX, never through
 * a link. */
#include "storage/filestore.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fsname.h"
#include "storage/filestore_internal.h"

#define DIR_ENTRY_MAX 1000000 /* entries read from one folder by list() */

/* ---- list ------------------------------------------------------------- */

struct lister {
	nv_filestore *s;
	const char *prefix;
	size_t prefix_len;
	const char *start_after;
	unsigned max_keys, count;
	int truncated;
	nv_filestore_list_cb callback;
	void *payload;
	nv_err *err;
	nv_object_info info;
	/* the key being built: room for a full key plus one segment */
	char key[NV_FILESTORE_KEY_MAX + SEGMENT_MAX + 3];
};

struct entry {
	char *sort_name; /* name, with '/' appended for a folder */
	int is_dir;
};

/* internal: max_keys reached; far from any value a callback returns */
#define LIST_STOP INT_MIN

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->sort_name,
		      ((const struct entry *)b)->sort_name);
}

static int name_is_key_safe(const char *name)
{
	for (; *name; name++)
		if ((unsigned char)*name < 0x20 || *name == 0x7f ||
		    *name == '\\')
			return 0;
	return 1;
}

/* Can a key starting with candidate (key + "/" for a folder) be listed? */
static int may_match(const struct lister *l, const char *candidate, size_t len,
		     int is_dir)
{
	size_t n = len < l->prefix_len ? len : l->prefix_len;

	if (strncmp(candidate, l->prefix, n) != 0)
		return 0;
	if (!is_dir && len < l->prefix_len)
		return 0;
	if (l->start_after) {
		int c = strcmp(candidate, l->start_after);
		if (!is_dir)
			return c > 0;
		/* every key below sorts before start_after */
		if (c < 0 && strncmp(l->start_after, candidate, len) != 0)
			return 0;
	}
	return 1;
}

static void free_entries(struct entry *e, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(e[i].sort_name);
	free(e);
}

static int list_dir(struct lister *l, int dir_fd, size_t key_len);

static int list_entry(struct lister *l, int dir_fd, size_t key_len,
		      const struct entry *e)
{
	size_t name_len = strlen(e->sort_name) - (size_t)e->is_dir;
	char name[SEGMENT_MAX + 2];
	struct stat st;
	struct meta m;
	int fd;

	memcpy(name, e->sort_name, name_len);
	name[name_len] = '\0';
	memcpy(l->key + key_len, e->sort_name, name_len + (size_t)e->is_dir);
	l->key[key_len + name_len + (size_t)e->is_dir] = '\0';
	if (e->is_dir) {
		fd = open_dir_at(dir_fd, name);
		if (fd < 0)
			return 0; /* gone, or swapped for a link: skip */
		return list_dir(l, fd, key_len + name_len + 1);
	}
	if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
	    !S_ISREG(st.st_mode))
		return 0;
	if (l->count == l->max_keys) {
		l->truncated = 1;
		return LIST_STOP;
	}
	nv_filestore_fill_info(&l->info, l->key, &st,
			       nv_filestore_meta_read(l->s, l->key, &m) &&
					       nv_filestore_meta_fresh(&m, &st)
				       ? m.sha256
				       : "");
	l->count++;
	return l->callback(&l->info, l->payload);
}

/* Lists the folder dir_fd (whose keys start with l->key[0..key_len)) in key
 * order. Takes ownership of dir_fd. */
static int list_dir(struct lister *l, int dir_fd, size_t key_len)
{
	struct entry *entries = NULL, *grown;
	size_t n = 0, cap = 0, i, name_len;
	struct dirent *d;
	struct stat st;
	DIR *dir;
	int rc = 0, is_dir;

	dir = fdopendir(dir_fd);
	if (!dir) {
		close(dir_fd);
		return nv_err_set_errno(l->err, NV_EIO, errno, NULL,
					"cannot list folder '%.*s'",
					(int)key_len, l->key);
	}
	while ((d = readdir(dir)) != NULL) {
		if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
			continue;
		if (key_len == 0 &&
		    nv_fsname_is_reserved(d->d_name, strlen(d->d_name),
					  NV_FILESTORE_MARKER))
			continue;
		name_len = strlen(d->d_name);
		/* names no key can address are not objects */
		if (name_len > SEGMENT_MAX ||
		    key_len + name_len > NV_FILESTORE_KEY_MAX ||
		    !name_is_key_safe(d->d_name))
			continue;
		if (d->d_type == DT_DIR || d->d_type == DT_REG) {
			is_dir = d->d_type == DT_DIR;
		} else if (d->d_type == DT_UNKNOWN &&
			   fstatat(dir_fd, d->d_name, &st,
				   AT_SYMLINK_NOFOLLOW) == 0 &&
			   (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))) {
			is_dir = S_ISDIR(st.st_mode);
		} else {
			continue; /* links and special files are skipped */
		}
		memcpy(l->key + key_len, d->d_name, name_len);
		if (is_dir)
			l->key[key_len + name_len] = '/';
		l->key[key_len + name_len + (size_t)is_dir] = '\0';
		if (!may_match(l, l->key, key_len + name_len + (size_t)is_dir,
			       is_dir))
			continue;
		if (n == cap) {
			if (cap >= DIR_ENTRY_MAX) {
				rc = nv_err_set(l->err, NV_ENOMEM,
						"split the folder into "
						"sub-prefixes",
						"folder '%.*s' holds more than "
						"%d entries",
						(int)key_len, l->key,
						DIR_ENTRY_MAX);
				goto out;
			}
			cap = cap ? cap * 2 : 32;
			grown = realloc(entries, cap * sizeof(*entries));
			if (!grown) {
				rc = nv_err_set(l->err, NV_ENOMEM, NULL,
						"out of memory listing");
				goto out;
			}
			entries = grown;
		}
		entries[n].sort_name = malloc(name_len + 2);
		if (!entries[n].sort_name) {
			rc = nv_err_set(l->err, NV_ENOMEM, NULL,
					"out of memory listing");
			goto out;
		}
		memcpy(entries[n].sort_name, l->key + key_len,
		       name_len + (size_t)is_dir + 1);
		entries[n].is_dir = is_dir;
		n++;
	}
	if (n)
		qsort(entries, n, sizeof(*entries), entry_cmp);
	for (i = 0; i < n && !rc; i++)
		rc = list_entry(l, dirfd(dir), key_len, &entries[i]);
out:
	free_entries(entries, n);
	closedir(dir);
	return rc;
}

int nv_filestore_list(nv_filestore *s, const char *prefix,
		      const char *start_after, unsigned max_keys,
		      nv_filestore_list_cb callback, void *payload,
		      int *truncated, nv_err *err)
{
	struct lister *l;
	int fd, rc;

	if (truncated)
		*truncated = 0;
	if (!callback)
		return nv_err_set(err, NV_EINVAL, NULL, "list: no callback");
	if (prefix && strlen(prefix) > NV_FILESTORE_KEY_MAX)
		return nv_err_set(err, NV_EINVAL, KEY_HINT,
				  "list: prefix longer than %d bytes",
				  NV_FILESTORE_KEY_MAX);
	/* Big: keep it off the stack. */
	l = calloc(1, sizeof(*l));
	if (!l)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	l->s = s;
	l->prefix = prefix ? prefix : "";
	l->prefix_len = strlen(l->prefix);
	l->start_after = start_after && *start_after ? start_after : NULL;
	l->max_keys = max_keys == 0 || max_keys > NV_FILESTORE_LIST_MAX
			      ? NV_FILESTORE_LIST_MAX
			      : max_keys;
	l->callback = callback;
	l->payload = payload;
	l->err = err;
	fd = open_dir_at(s->root_fd, ".");
	if (fd < 0) {
		rc = nv_err_set_errno(err, NV_EIO, errno, NULL,
				      "cannot open store root '%s'", s->root);
	} else {
		rc = list_dir(l, fd, 0);
	}
	if (rc == LIST_STOP)
		rc = 0;
	if (truncated)
		*truncated = l->truncated;
	free(l);
	return rc;
}
