/* The file:// object store (see filestore.h for the contract).
 *
 * Layout: objects at <root>/<key>; the marker <root>/.navette-store/ holds
 * tmp/ (temp files, so a rename into place never crosses a filesystem) and
 * meta/<h2>/<h> where h = sha256(key): one small text record per object
 * with its size, sha256, mtime and inode. The record is trusted only while
 * size, mtime and inode still match the file; otherwise the object was
 * replaced behind the store's back and its sha256 is recomputed. The inode
 * also makes a concurrent put harmless: a reader holding the old file sees
 * a record for another inode and does not report a false corruption.
 *
 * Every path inside the store is opened one segment at a time with
 * O_NOFOLLOW from the root's descriptor, so a symlink planted in the store
 * can neither redirect a write nor expose a file outside the root.
 *
 * This file opens the store, walks it, keeps the records and holds the
 * operations on one object; keys and URLs are in filestore_keys.c,
 * listing in filestore_list.c, what they share in filestore_internal.h. */
#include "storage/filestore.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/fsname.h"
#include "core/fsutil.h"
#include "core/proc.h"
#include "storage/filestore_internal.h"
#include "core/sha256.h"

#ifdef __APPLE__
#define NV_MTIM(st) ((st)->st_mtimespec)
#else
#define NV_MTIM(st) ((st)->st_mtim)
#endif

#define COPY_CHUNK   65536
#define META_MAX     (NV_FILESTORE_KEY_MAX + 512)
#define UNIQUE_TRIES 100

/* ---- small helpers ---------------------------------------------------- */

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static ssize_t read_some(int fd, void *buf, size_t cap)
{
	ssize_t n;

	do {
		n = read(fd, buf, cap);
	} while (n < 0 && errno == EINTR);
	return n;
}

/* Creates name in dir_fd exclusively with a fresh name "<tag>.<...>";
 * O_EXCL makes collisions (other processes, other threads) harmless. */
static int create_unique(int dir_fd, const char *tag, char *name,
			 size_t name_cap)
{
	static unsigned long counter;
	struct timespec ts;
	int i, fd;

	for (i = 0; i < UNIQUE_TRIES; i++) {
		clock_gettime(CLOCK_REALTIME, &ts);
		snprintf(name, name_cap, "%s.%ld.%lu.%ld", tag, (long)getpid(),
			 ++counter, (long)ts.tv_nsec);
		fd = openat(dir_fd, name,
			    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				    O_CLOEXEC,
			    0666);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	errno = EEXIST;
	return -1;
}

void nv_filestore_fill_info(nv_object_info *info, const char *key,
			    const struct stat *st, const char *sha256)
{
	/* callers checked the key; the bound only keeps the copy safe */
	size_t key_len = strnlen(key, NV_FILESTORE_KEY_MAX);
	size_t sha_len = strnlen(sha256, NV_SHA256_HEX_LEN);

	if (!info)
		return;
	memcpy(info->key, key, key_len);
	info->key[key_len] = '\0';
	info->size = (uint64_t)st->st_size;
	memcpy(info->sha256, sha256, sha_len);
	info->sha256[sha_len] = '\0';
	info->mtime = (int64_t)st->st_mtime;
}

/* ---- open / free ------------------------------------------------------ */

static int mkdir_p(const char *path, nv_err *err)
{
	char buf[NV_FILESTORE_PATH_MAX];
	size_t len = strlen(path), i;

	if (len >= sizeof(buf))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "path too long: '%.80s'", path);
	memcpy(buf, path, len + 1);
	for (i = 1; i <= len; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, 0777) != 0 && errno != EEXIST)
			return nv_err_set_errno(err, NV_EIO, errno,
						"check permissions on the "
						"parent folder",
						"cannot create '%s'", buf);
		buf[i] = path[i];
	}
	return 0;
}

/* Opens (making it when possible) a sub-folder of the marker. */
static int open_marker_sub(int marker_fd, const char *name)
{
	if (mkdirat(marker_fd, name, 0777) != 0 && errno != EEXIST)
		return -1;
	return open_dir_at(marker_fd, name);
}

/* Removes the temp files of tmp/ that writers killed while publishing
 * left (create_unique's "<tag>.<pid>.<...>"): untouched for
 * NV_FILESTORE_STALE_SECONDS, and their pid no live process here. Best
 * effort: a store another user shares keeps what we may not remove. */
static void sweep_stale_temps(int tmp_fd)
{
	int fd = dup(tmp_fd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	time_t now = time(NULL);

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d))) {
		const char *dot = strchr(e->d_name, '.');
		struct stat st;
		char *end;
		long pid;

		if (!dot || (strncmp(e->d_name, "put.", 4) != 0 &&
			     strncmp(e->d_name, "meta.", 5) != 0))
			continue;
		pid = strtol(dot + 1, &end, 10);
		if (end == dot + 1 || *end != '.' || pid <= 0)
			continue;
		if (fstatat(tmp_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISREG(st.st_mode) ||
		    now - st.st_mtime < NV_FILESTORE_STALE_SECONDS)
			continue;
		/* a live process of that pid may be its writer: kept */
		if (nv_proc_alive((pid_t)pid))
			continue;
		unlinkat(tmp_fd, e->d_name, 0);
	}
	closedir(d);
}

int nv_filestore_open(nv_filestore **out, const char *root, int create,
		      nv_err *err)
{
	nv_filestore *s;
	int marker_fd = -1, rc = 0;

	*out = NULL;
	if (!root || !*root)
		return nv_err_set(err, NV_EINVAL, NULL, "no store root given");
	if (create) {
		rc = mkdir_p(root, err);
		if (rc)
			return rc;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	s->root_fd = s->meta_fd = s->tmp_fd = -1;
	if (strlen(root) >= sizeof(s->root) || !realpath(root, s->root)) {
		rc = nv_err_set_errno(
			err, errno == ENOENT ? NV_ENOTFOUND : NV_EIO, errno,
			"check the path, or open with create=true",
			"cannot open store '%s'", root);
		goto fail;
	}
	s->root_fd = open(s->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->root_fd < 0) {
		rc = nv_err_set_errno(err, NV_EIO, errno,
				      "check that it is a readable folder",
				      "cannot open store '%s'", s->root);
		goto fail;
	}
	if (create && mkdirat(s->root_fd, NV_FILESTORE_MARKER, 0777) != 0 &&
	    errno != EEXIST) {
		rc = nv_err_set_errno(
			err, NV_EIO, errno, "check permissions on the folder",
			"cannot create '%s/%s'", s->root, NV_FILESTORE_MARKER);
		goto fail;
	}
	marker_fd = open_dir_at(s->root_fd, NV_FILESTORE_MARKER);
	if (marker_fd < 0) {
		if (errno == ENOENT)
			rc = nv_err_set(err, NV_ENOTFOUND,
					"open it with create=true to make it a "
					"store, or check the path",
					"'%s' is not a navette store (it has "
					"no " NV_FILESTORE_MARKER "/ folder)",
					s->root);
		else
			rc = nv_err_set_errno(
				err, errno == ELOOP ? NV_EREFUSED : NV_EIO,
				errno,
				"the marker must be a real folder, not a link",
				"cannot open '%s/%s'", s->root,
				NV_FILESTORE_MARKER);
		goto fail;
	}
	/* A store we may not write to is still readable: tmp/ and meta/ are
	 * optional here and their absence is reported by the writers. */
	s->meta_fd = open_marker_sub(marker_fd, "meta");
	s->tmp_fd = open_marker_sub(marker_fd, "tmp");
	close(marker_fd);
	if (create && s->tmp_fd >= 0)
		sweep_stale_temps(s->tmp_fd);
	/* probed in tmp/: on the store's volume, and ours to write in */
	s->volume = s->tmp_fd >= 0 ? nv_fsname_volume_of(s->tmp_fd)
				   : NV_FSNAME_SENSITIVE;
	*out = s;
	return 0;
fail:
	nv_filestore_free(s);
	return rc;
}

void nv_filestore_free(nv_filestore *store)
{
	if (!store)
		return;
	close_fd(&store->root_fd);
	close_fd(&store->meta_fd);
	close_fd(&store->tmp_fd);
	free(store);
}

const char *nv_filestore_root(const nv_filestore *store)
{
	return store->root;
}

/* ---- walking inside the store ----------------------------------------- */

/* Explains why `name` (the segment of key ending at seg_end) could not be
 * opened as a folder. */
static int walk_error(int dir_fd, const char *name, const char *key,
		      size_t seg_end, int errnum, nv_err *err)
{
	struct stat st;

	if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISLNK(st.st_mode))
			return nv_err_set(err, NV_EREFUSED,
					  "remove the link from the store or "
					  "use another key",
					  "key '%s': '%.*s' is a symbolic link "
					  "inside the store; navette never "
					  "follows links there",
					  key, (int)seg_end, key);
		if (!S_ISDIR(st.st_mode))
			return nv_err_set(err, NV_EREFUSED,
					  "delete that object first, or use "
					  "another key",
					  "key '%s': '%.*s' is an object, so "
					  "it cannot also be a folder",
					  key, (int)seg_end, key);
	}
	if (errnum == ENOENT)
		return nv_err_set(err, NV_ENOTFOUND,
				  "list the prefix to see which keys exist",
				  "no object '%s' in the store", key);
	return nv_err_set_errno(
		err, NV_EIO, errnum, "check permissions inside the store",
		"key '%s': cannot open folder '%.*s'", key, (int)seg_end, key);
}

/* Opens the folder key[0..len) below the root (len 0: the root itself),
 * one segment at a time without following links; with create, makes
 * missing folders. *fd_out is the caller's to close. */
static int walk_dirs(nv_filestore *s, const char *key, size_t len, int create,
		     int *fd_out, nv_err *err)
{
	char seg[SEGMENT_MAX + 1];
	size_t start = 0, i;
	int cur, next;

	*fd_out = -1;
	cur = open_dir_at(s->root_fd, ".");
	if (cur < 0)
		return nv_err_set_errno(err, NV_EIO, errno, NULL,
					"cannot open store root '%s'", s->root);
	for (i = 0; i <= len; i++) {
		size_t seg_len;
		if (i < len && key[i] != '/')
			continue;
		seg_len = i - start;
		if (seg_len == 0 || seg_len > SEGMENT_MAX) {
			start = i + 1;
			continue; /* key_check ran before; len 0 lands here */
		}
		memcpy(seg, key + start, seg_len);
		seg[seg_len] = '\0';
		next = open_dir_at(cur, seg);
		if (next < 0 && errno == ENOENT && create) {
			if (mkdirat(cur, seg, 0777) != 0 && errno != EEXIST) {
				int e = errno;
				close(cur);
				return nv_err_set_errno(
					err, NV_EIO, e,
					"check permissions inside the store",
					"key '%s': cannot create folder "
					"'%.*s'",
					key, (int)i, key);
			}
			next = open_dir_at(cur, seg);
		}
		if (next < 0) {
			int e = errno,
			    rc = walk_error(cur, seg, key, i, e, err);
			close(cur);
			return rc;
		}
		close(cur);
		cur = next;
		start = i + 1;
	}
	*fd_out = cur;
	return 0;
}

static size_t parent_len(const char *key)
{
	const char *slash = strrchr(key, '/');
	return slash ? (size_t)(slash - key) : 0;
}

static const char *leaf_of(const char *key)
{
	const char *slash = strrchr(key, '/');
	return slash ? slash + 1 : key;
}

/* Checks key and opens the folder that holds it (never created). */
static int open_parent(nv_filestore *s, const char *key, int *dir_fd,
		       nv_err *err)
{
	int rc = nv_filestore_key_check(key, err);

	return rc ? rc : walk_dirs(s, key, parent_len(key), 0, dir_fd, err);
}

/* Removes folders left empty along key's path, deepest first, stopping at
 * the first one that still holds something. Best effort. */
static void prune_parents(nv_filestore *s, const char *key)
{
	size_t len = parent_len(key);

	while (len > 0) {
		char seg[SEGMENT_MAX + 1];
		size_t up = len;
		int fd, rc;

		while (up > 0 && key[up - 1] != '/')
			up--;
		if (len - up > SEGMENT_MAX)
			return;
		memcpy(seg, key + up, len - up);
		seg[len - up] = '\0';
		if (walk_dirs(s, key, up ? up - 1 : 0, 0, &fd, NULL))
			return;
		rc = unlinkat(fd, seg, AT_REMOVEDIR);
		close(fd);
		if (rc != 0)
			return;
		len = up ? up - 1 : 0;
	}
}

/* Opens the object key for reading; a link, folder or special file there is
 * not an object. */
static int open_object(nv_filestore *s, const char *key, int *fd_out,
		       struct stat *st, nv_err *err)
{
	int dir_fd, fd, rc;

	*fd_out = -1;
	rc = open_parent(s, key, &dir_fd, err);
	if (rc)
		return rc;
	/* O_NONBLOCK so a FIFO planted in the store cannot hang us. */
	fd = openat(dir_fd, leaf_of(key),
		    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if (e == ELOOP || e == EMLINK)
			rc = nv_err_set(err, NV_EREFUSED,
					"remove the link from the store",
					"key '%s' is a symbolic link inside "
					"the store; navette never follows "
					"links there",
					key);
		else if (e == ENOENT)
			rc = nv_err_set(err, NV_ENOTFOUND,
					"list the prefix to see which keys "
					"exist",
					"no object '%s' in the store", key);
		else
			rc = nv_err_set_errno(err, NV_EIO, e,
					      "check permissions inside the "
					      "store",
					      "cannot open object '%s'", key);
		close(dir_fd);
		return rc;
	}
	close(dir_fd);
	if (fstat(fd, st) != 0) {
		rc = nv_err_set_errno(err, NV_EIO, errno, NULL,
				      "cannot stat object '%s'", key);
		close(fd);
		return rc;
	}
	if (S_ISDIR(st->st_mode)) {
		close(fd);
		return nv_err_set(err, NV_ENOTFOUND,
				  "list it as a prefix: list('<key>/')",
				  "no object '%s' in the store ('%s/' is a "
				  "folder of objects)",
				  key, key);
	}
	if (!S_ISREG(st->st_mode)) {
		close(fd);
		return nv_err_set(err, NV_EREFUSED, "remove it from the store",
				  "key '%s' is not a regular file", key);
	}
	*fd_out = fd;
	return 0;
}

/* ---- records ---------------------------------------------------------- */

static int meta_name(const char *key, char hex[65], nv_err *err)
{
	return nv_sha256_bytes(key, strlen(key), hex, err);
}

/* Reads key's record; returns 1 when present and well formed, else 0. */
int nv_filestore_meta_read(nv_filestore *s, const char *key, struct meta *m)
{
	char hex[65], sub[3], buf[META_MAX + 1];
	const char *key_line;
	int dir_fd, fd;
	ssize_t n;
	size_t used = 0;

	if (s->meta_fd < 0 || meta_name(key, hex, NULL))
		return 0;
	memcpy(sub, hex, 2);
	sub[2] = '\0';
	dir_fd = open_dir_at(s->meta_fd, sub);
	if (dir_fd < 0)
		return 0;
	fd = openat(dir_fd, hex, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	close(dir_fd);
	if (fd < 0)
		return 0;
	while (used < META_MAX &&
	       (n = read_some(fd, buf + used, META_MAX - used)) > 0)
		used += (size_t)n;
	close(fd);
	buf[used] = '\0';
	if (sscanf(buf,
		   "navette-object 1\nsize %" SCNu64 "\nmtime %" SCNd64
		   ".%ld\nino %" SCNu64 "\nsha256 %64[0-9a-f]\n",
		   &m->size, &m->mtime_sec, &m->mtime_nsec, &m->ino,
		   m->sha256) != 5 ||
	    strlen(m->sha256) != 64)
		return 0;
	/* The record names its key, for people reading meta/ and so that a
	 * damaged or misplaced record is never trusted. */
	key_line = strstr(buf, "\nkey ");
	if (!key_line)
		return 0;
	key_line += 5;
	return strncmp(key_line, key, strlen(key)) == 0 &&
	       key_line[strlen(key)] == '\n';
}

int nv_filestore_meta_fresh(const struct meta *m, const struct stat *st)
{
	return m->size == (uint64_t)st->st_size &&
	       m->mtime_sec == (int64_t)NV_MTIM(st).tv_sec &&
	       m->mtime_nsec == (long)NV_MTIM(st).tv_nsec &&
	       m->ino == (uint64_t)st->st_ino;
}

static int meta_write(nv_filestore *s, const char *key, const struct stat *st,
		      const char *sha256, nv_err *err)
{
	char hex[65], sub[3], tmp[96], buf[META_MAX + 1];
	int fd, dir_fd, len, rc;

	rc = meta_name(key, hex, err);
	if (rc)
		return rc;
	if (s->meta_fd < 0)
		return nv_err_set(
			err, NV_EIO,
			"check permissions on the store's "
			"marker folder",
			"store '%s' has no writable " NV_FILESTORE_MARKER
			"/meta folder",
			s->root);
	len = snprintf(buf, sizeof(buf),
		       "navette-object 1\nsize %" PRIu64 "\nmtime %" PRId64
		       ".%09ld\nino %" PRIu64 "\nsha256 %s\nkey %s\n",
		       (uint64_t)st->st_size, (int64_t)NV_MTIM(st).tv_sec,
		       (long)NV_MTIM(st).tv_nsec, (uint64_t)st->st_ino, sha256,
		       key);
	if (len < 0 || (size_t)len >= sizeof(buf))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "record of '%s' too long", key);
	memcpy(sub, hex, 2);
	sub[2] = '\0';
	if (mkdirat(s->meta_fd, sub, 0777) != 0 && errno != EEXIST)
		return nv_err_set_errno(err, NV_EIO, errno, NULL,
					"cannot create record folder for '%s'",
					key);
	dir_fd = open_dir_at(s->meta_fd, sub);
	if (dir_fd < 0)
		return nv_err_set_errno(err, NV_EIO, errno, NULL,
					"cannot open record folder for '%s'",
					key);
	fd = create_unique(s->tmp_fd, "meta", tmp, sizeof(tmp));
	if (fd < 0) {
		rc = nv_err_set_errno(err, NV_EIO, errno, NULL,
				      "cannot create record of '%s'", key);
		goto out;
	}
	if (nv_write_all(fd, buf, (size_t)len) != 0 ||
	    nv_fsync_durable(fd) != 0) {
		rc = nv_err_set_errno(err, NV_EIO, errno,
				      "check free space on the store's disk",
				      "cannot write record of '%s'", key);
		close(fd);
		unlinkat(s->tmp_fd, tmp, 0);
		goto out;
	}
	close(fd);
	if (renameat(s->tmp_fd, tmp, dir_fd, hex) != 0) {
		rc = nv_err_set_errno(err, NV_EIO, errno, NULL,
				      "cannot publish record of '%s'", key);
		unlinkat(s->tmp_fd, tmp, 0);
	}
out:
	close(dir_fd);
	return rc;
}

static void meta_remove(nv_filestore *s, const char *key)
{
	char hex[65], sub[3];
	int dir_fd;

	if (s->meta_fd < 0 || meta_name(key, hex, NULL))
		return;
	memcpy(sub, hex, 2);
	sub[2] = '\0';
	dir_fd = open_dir_at(s->meta_fd, sub);
	if (dir_fd < 0)
		return;
	unlinkat(dir_fd, hex, 0);
	close(dir_fd);
}

/* ---- writing: temp file, then publish --------------------------------- */

struct writer {
	int fd;
	char name[96];
	nv_sha256 hash;
	uint64_t size;
};

static int writer_start(nv_filestore *s, struct writer *w, nv_err *err)
{
	w->fd = -1;
	w->size = 0;
	w->hash.ctx = NULL;
	if (s->tmp_fd < 0)
		return nv_err_set(
			err, NV_EIO,
			"check permissions on the store's marker "
			"folder",
			"store '%s' has no writable " NV_FILESTORE_MARKER
			"/tmp folder",
			s->root);
	w->fd = create_unique(s->tmp_fd, "put", w->name, sizeof(w->name));
	if (w->fd < 0)
		return nv_err_set_errno(err, NV_EIO, errno,
					"check permissions on the store",
					"cannot create a temp file in '%s/%s'",
					s->root, NV_FILESTORE_MARKER "/tmp");
	return nv_sha256_init(&w->hash, err);
}

static int writer_add(const void *data, size_t len, void *payload, nv_err *err)
{
	struct writer *w = payload;
	int rc = nv_sha256_update(&w->hash, data, len, err);

	if (rc)
		return rc;
	if (nv_write_all(w->fd, data, len) != 0)
		return nv_err_set_errno(err, NV_EIO, errno,
					"check free space on the store's disk",
					"cannot write temp file");
	w->size += len;
	return 0;
}

/* Drops the temp file; harmless after a successful publish. */
static void writer_abort(nv_filestore *s, struct writer *w)
{
	nv_sha256_dispose(&w->hash);
	if (w->fd >= 0) {
		close(w->fd);
		unlinkat(s->tmp_fd, w->name, 0);
	}
	w->fd = -1;
}

/* Finds, in the folder open on dir_fd, an entry other than seg that the
 * volume takes for seg: 1 and its name in found, 0 when none (*exact set
 * when seg itself is there), -1 when the folder cannot be read. */
static int find_folded(int dir_fd, const char *seg, size_t seg_len,
		       char found[SEGMENT_MAX + 1], int *exact)
{
	struct dirent *d;
	DIR *dir;
	int fd = dup(dir_fd), hit = 0;

	*exact = 0;
	if (fd < 0)
		return -1;
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return -1;
	}
	while ((d = readdir(dir)) != NULL) {
		size_t n = strlen(d->d_name);
		if (n == seg_len && memcmp(d->d_name, seg, n) == 0)
			*exact = 1;
		else if (!hit && n <= SEGMENT_MAX &&
			 nv_fsname_equal(d->d_name, n, seg, seg_len)) {
			memcpy(found, d->d_name, n + 1);
			hit = 1;
		}
	}
	closedir(dir);
	return hit;
}

/* On a volume that folds names, a key that differs from an existing one
 * only in case or NFC/NFD form would share its file while their records
 * differ: refused, naming both. Each folder on the key's path is read;
 * on a volume found folding (not forced) only where a lookup of the name
 * hits, since a miss means nothing there can collide. */
static int check_folded_collision(nv_filestore *s, const char *key, nv_err *err)
{
	char seg[SEGMENT_MAX + 1], found[SEGMENT_MAX + 1];
	size_t start = 0, len = strlen(key), i;
	struct stat st;
	int cur, next, exact, hit, rc = 0;

	cur = open_dir_at(s->root_fd, ".");
	if (cur < 0)
		return 0; /* the walk that follows reports it */
	for (i = 0; i <= len && !rc; i++) {
		size_t seg_len;
		if (i < len && key[i] != '/')
			continue;
		seg_len = i - start;
		memcpy(seg, key + start, seg_len);
		seg[seg_len] = '\0';
		if (s->volume == NV_FSNAME_FOLDING &&
		    fstatat(cur, seg, &st, AT_SYMLINK_NOFOLLOW) != 0)
			break;
		hit = find_folded(cur, seg, seg_len, found, &exact);
		if (hit == 0 && s->volume == NV_FSNAME_FOLDING) {
			/* the volume found an entry under this name that
			 * navette's fold does not match (another script's
			 * case, a form outside the Latin ranges): it would
			 * be shared all the same */
			rc = nv_err_set(
				err, NV_EREFUSED,
				"this store's volume matches names by rules "
				"wider than navette's (case of other scripts, "
				"other Unicode forms): use the existing "
				"spelling, or a key that differs in more than "
				"case or form",
				"key '%s' names an existing entry of '%.*s' "
				"under another spelling: on this volume they "
				"would share one file",
				key, (int)start, key);
			break;
		}
		if (hit > 0 && !exact) {
			rc = nv_err_set(
				err, NV_EREFUSED,
				"this store's volume does not tell case (or "
				"accents' NFC/NFD form) apart: use the "
				"existing spelling, or a key that differs in "
				"more than case",
				"key '%s' collides with the existing "
				"'%.*s%s%s': "
				"on this volume they would share one file",
				key, (int)start, key, found,
				i < len ? "/..." : "");
			break;
		}
		if (i == len || !exact)
			break;
		next = open_dir_at(cur, seg);
		close(cur);
		cur = next;
		if (cur < 0)
			return 0;
		start = i + 1;
	}
	close(cur);
	return rc;
}

/* Checks that key can be published and opens its folder (made if needed).
 * Done before any byte is copied, so a bad destination fails fast. */
static int prepare_destination(nv_filestore *s, const char *key, int *dir_fd,
			       nv_err *err)
{
	struct stat st;
	int rc;

	rc = nv_filestore_key_check(key, err);
	if (!rc && s->volume != NV_FSNAME_SENSITIVE)
		rc = check_folded_collision(s, key, err);
	if (rc)
		return rc;
	rc = walk_dirs(s, key, parent_len(key), 1, dir_fd, err);
	if (rc)
		return rc;
	if (fstatat(*dir_fd, leaf_of(key), &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISLNK(st.st_mode))
			rc = nv_err_set(err, NV_EREFUSED,
					"remove the link from the store or "
					"use another key",
					"key '%s' is a symbolic link inside "
					"the store; navette never writes "
					"through links",
					key);
		else if (S_ISDIR(st.st_mode))
			rc = nv_err_set(err, NV_EREFUSED,
					"delete the objects below it, or use "
					"another key",
					"key '%s' is a folder holding other "
					"objects",
					key);
		else if (!S_ISREG(st.st_mode))
			rc = nv_err_set(err, NV_EREFUSED,
					"remove it from the store",
					"key '%s' is not a regular file", key);
	}
	if (rc) {
		close(*dir_fd);
		*dir_fd = -1;
	}
	return rc;
}

static int publish(nv_filestore *s, const char *key, int dir_fd,
		   struct writer *w, nv_object_info *info, nv_err *err)
{
	char sha[65];
	struct stat st;
	int rc;

	rc = nv_sha256_final(&w->hash, sha, err);
	if (rc)
		return rc;
	if (nv_fsync_durable(w->fd) != 0 || fstat(w->fd, &st) != 0)
		return nv_err_set_errno(err, NV_EIO, errno,
					"check free space on the store's disk",
					"cannot flush object '%s'", key);
	rc = meta_write(s, key, &st, sha, err);
	if (rc)
		return rc;
	if (renameat(s->tmp_fd, w->name, dir_fd, leaf_of(key)) != 0)
		return nv_err_set_errno(err, NV_EIO, errno,
					"a concurrent delete may have removed "
					"the folder; retry",
					"cannot publish object '%s'", key);
	close(w->fd);
	w->fd = -1;
	/* The rename is durable only once its folder is flushed. */
	nv_fsync_durable(dir_fd);
	nv_filestore_fill_info(info, key, &st, sha);
	return 0;
}

typedef int (*sink_fn)(const void *data, size_t len, void *payload,
		       nv_err *err);

/* Streams the object key to sink, hashing as it goes. When the record is
 * current the bytes must match it, else the object rotted or was changed
 * in place with its mtime restored: NV_EIO. max_bytes 0: no cap. */
static int read_object(nv_filestore *s, const char *key, uint64_t max_bytes,
		       sink_fn sink, void *payload, nv_object_info *info,
		       nv_err *err)
{
	unsigned char buf[COPY_CHUNK];
	struct stat st;
	struct meta m;
	nv_sha256 hash = {0}; /* {0}: every field, and clang accepts it */
	char sha[65];
	uint64_t total = 0;
	int fd, rc, fresh;
	ssize_t n;

	rc = open_object(s, key, &fd, &st, err);
	if (rc)
		return rc;
	if (max_bytes && (uint64_t)st.st_size > max_bytes) {
		rc = nv_err_set(err, NV_ENOMEM,
				"use get() to copy it to a file, or raise "
				"max_bytes",
				"object '%s' is %" PRIu64 " bytes, over the "
				"cap of %" PRIu64 " bytes",
				key, (uint64_t)st.st_size, max_bytes);
		goto out;
	}
	fresh = nv_filestore_meta_read(s, key, &m) &&
		nv_filestore_meta_fresh(&m, &st);
	rc = nv_sha256_init(&hash, err);
	if (rc)
		goto out;
	while ((n = read_some(fd, buf, sizeof(buf))) > 0) {
		total += (uint64_t)n;
		if (max_bytes && total > max_bytes) {
			rc = nv_err_set(err, NV_ENOMEM,
					"the object is growing; retry",
					"object '%s' grew over the cap of "
					"%" PRIu64 " bytes while being read",
					key, max_bytes);
			goto out;
		}
		rc = nv_sha256_update(&hash, buf, (size_t)n, err);
		if (!rc)
			rc = sink(buf, (size_t)n, payload, err);
		if (rc)
			goto out;
	}
	if (n < 0) {
		rc = nv_err_set_errno(err, NV_EIO, errno, NULL,
				      "cannot read object '%s'", key);
		goto out;
	}
	rc = nv_sha256_final(&hash, sha, err);
	if (rc)
		goto out;
	if (fresh && (total != m.size || strcmp(sha, m.sha256) != 0)) {
		rc = nv_err_set(err, NV_EIO,
				"the file under the store was modified or "
				"damaged; put it again or delete it",
				"object '%s' changed or corrupt: sha256 %s, "
				"recorded %s at put",
				key, sha, m.sha256);
		goto out;
	}
	st.st_size = (off_t)total;
	nv_filestore_fill_info(info, key, &st, sha);
out:
	nv_sha256_dispose(&hash);
	close(fd);
	return rc;
}

/* ---- public operations ------------------------------------------------ */

/* Where a put's bytes come from: another object of the store (key), an
 * open file (fd >= 0, read from path), or bytes in memory. */
struct put_source {
	const char *key;
	int fd;
	const char *path;
	const void *data;
	size_t len;
};

static int put_fill(nv_filestore *s, struct writer *w,
		    const struct put_source *from, nv_err *err)
{
	unsigned char buf[COPY_CHUNK];
	ssize_t n;
	int rc = 0;

	if (from->key)
		return read_object(s, from->key, 0, writer_add, w, NULL, err);
	if (from->fd < 0)
		return writer_add(from->data, from->len, w, err);
	while (!rc && (n = read_some(from->fd, buf, sizeof(buf))) != 0) {
		if (n < 0)
			rc = nv_err_set_errno(err, NV_EIO, errno, NULL,
					      "cannot read '%s'", from->path);
		else
			rc = writer_add(buf, (size_t)n, w, err);
	}
	return rc;
}

/* Writes key from a source: a temporary file, published whole or not at
 * all. */
static int put_from(nv_filestore *s, const char *key,
		    const struct put_source *from, nv_object_info *info,
		    nv_err *err)
{
	struct writer w = {.fd = -1};
	int dir_fd, rc;

	rc = prepare_destination(s, key, &dir_fd, err);
	if (rc)
		return rc;
	rc = writer_start(s, &w, err);
	if (!rc)
		rc = put_fill(s, &w, from, err);
	if (!rc)
		rc = publish(s, key, dir_fd, &w, info, err);
	writer_abort(s, &w);
	close(dir_fd);
	if (rc)
		prune_parents(s, key);
	return rc;
}

int nv_filestore_put_bytes(nv_filestore *s, const char *key, const void *data,
			   size_t len, nv_object_info *info, nv_err *err)
{
	struct put_source from = {.fd = -1, .data = data, .len = len};

	return put_from(s, key, &from, info, err);
}

int nv_filestore_put_file(nv_filestore *s, const char *key,
			  const char *src_path, nv_object_info *info,
			  nv_err *err)
{
	struct put_source from = {.path = src_path};
	int rc;

	rc = nv_filestore_key_check(key, err);
	if (rc)
		return rc;
	from.fd = open(src_path, O_RDONLY | O_CLOEXEC);
	if (from.fd < 0)
		return nv_err_set_errno(
			err, errno == ENOENT ? NV_ENOTFOUND : NV_EIO, errno,
			"check the source path and its permissions",
			"cannot read '%s' to put it as '%s'", src_path, key);
	rc = put_from(s, key, &from, info, err);
	close(from.fd);
	return rc;
}

int nv_filestore_copy(nv_filestore *s, const char *src_key, const char *dst_key,
		      nv_object_info *info, nv_err *err)
{
	struct put_source from = {.key = src_key, .fd = -1};
	int rc;

	rc = nv_filestore_key_check(src_key, err);
	if (rc)
		return rc;
	return put_from(s, dst_key, &from, info, err);
}

static int fd_sink(const void *data, size_t len, void *payload, nv_err *err)
{
	if (nv_write_all(*(int *)payload, data, len) != 0)
		return nv_err_set_errno(err, NV_EIO, errno,
					"check free space at the destination",
					"cannot write destination file");
	return 0;
}

int nv_filestore_get_file(nv_filestore *s, const char *key,
			  const char *dest_path, nv_object_info *info,
			  nv_err *err)
{
	char dir[NV_FILESTORE_PATH_MAX], tmp[96];
	const char *slash = strrchr(dest_path, '/');
	const char *base = slash ? slash + 1 : dest_path;
	int dir_fd, fd, rc;

	if (!*base)
		return nv_err_set(err, NV_EINVAL,
				  "give a file path, not a folder",
				  "destination '%s' names a folder", dest_path);
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dest_path)
		snprintf(dir, sizeof(dir), "/");
	else if ((size_t)(slash - dest_path) < sizeof(dir))
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - dest_path),
			 dest_path);
	else
		return nv_err_set(err, NV_EINVAL, NULL,
				  "destination path too long");
	dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0)
		return nv_err_set_errno(err, NV_EIO, errno,
					"create the destination folder first",
					"cannot open folder '%s'", dir);
	fd = create_unique(dir_fd, ".navette-get", tmp, sizeof(tmp));
	if (fd < 0) {
		rc = nv_err_set_errno(err, NV_EIO, errno,
				      "check permissions on the destination "
				      "folder",
				      "cannot create a temp file in '%s'", dir);
		close(dir_fd);
		return rc;
	}
	rc = read_object(s, key, 0, fd_sink, &fd, info, err);
	if (!rc && nv_fsync_durable(fd) != 0)
		rc = nv_err_set_errno(err, NV_EIO, errno, NULL,
				      "cannot flush '%s'", dest_path);
	close(fd);
	if (!rc && renameat(dir_fd, tmp, dir_fd, base) != 0)
		rc = nv_err_set_errno(
			err, NV_EIO, errno, "check the destination path",
			"cannot move the object to '%s'", dest_path);
	if (rc)
		unlinkat(dir_fd, tmp, 0);
	close(dir_fd);
	return rc;
}

struct mem_sink {
	char *data;
	size_t len, cap;
};

static int mem_add(const void *data, size_t len, void *payload, nv_err *err)
{
	struct mem_sink *m = payload;

	if (len > m->cap - m->len)
		return nv_err_set(err, NV_ENOMEM, NULL,
				  "object grew while being read");
	memcpy(m->data + m->len, data, len);
	m->len += len;
	return 0;
}

int nv_filestore_read(nv_filestore *s, const char *key, size_t max_bytes,
		      char **out, size_t *len, nv_object_info *info,
		      nv_err *err)
{
	struct mem_sink m = {NULL, 0, 0};
	struct stat st;
	int fd, rc;

	*out = NULL;
	*len = 0;
	/* Size the buffer from the file, capped; read_object re-checks the cap
	 * and the buffer bound if the file grows meanwhile. */
	rc = open_object(s, key, &fd, &st, err);
	if (rc)
		return rc;
	close(fd);
	if ((uint64_t)st.st_size > (uint64_t)max_bytes)
		return nv_err_set(err, NV_ENOMEM,
				  "use get() to copy it to a file, or raise "
				  "max_bytes",
				  "object '%s' is %" PRIu64 " bytes, over the "
				  "cap of %zu bytes",
				  key, (uint64_t)st.st_size, max_bytes);
	m.cap = (size_t)st.st_size;
	m.data = malloc(m.cap + 1);
	if (!m.data)
		return nv_err_set(err, NV_ENOMEM, NULL,
				  "cannot allocate %zu bytes for '%s'", m.cap,
				  key);
	rc = read_object(s, key, max_bytes, mem_add, &m, info, err);
	if (rc) {
		free(m.data);
		return rc;
	}
	m.data[m.len] = '\0';
	*out = m.data;
	*len = m.len;
	return 0;
}

int nv_filestore_head(nv_filestore *s, const char *key, nv_object_info *info,
		      nv_err *err)
{
	struct stat st;
	struct meta m;
	char sha[65];
	int fd, rc;

	rc = open_object(s, key, &fd, &st, err);
	if (rc)
		return rc;
	if (nv_filestore_meta_read(s, key, &m) &&
	    nv_filestore_meta_fresh(&m, &st)) {
		nv_filestore_fill_info(info, key, &st, m.sha256);
	} else {
		uint64_t size;
		rc = nv_sha256_fd(fd, sha, &size, err);
		if (!rc) {
			st.st_size = (off_t)size;
			nv_filestore_fill_info(info, key, &st, sha);
		}
	}
	close(fd);
	return rc;
}

int nv_filestore_delete(nv_filestore *s, const char *key, nv_err *err)
{
	struct stat st;
	int dir_fd, rc;

	rc = open_parent(s, key, &dir_fd, err);
	if (rc)
		return rc;
	if (fstatat(dir_fd, leaf_of(key), &st, AT_SYMLINK_NOFOLLOW) != 0) {
		rc = errno == ENOENT
			     ? nv_err_set(err, NV_ENOTFOUND,
					  "list the prefix to see which keys "
					  "exist",
					  "no object '%s' in the store", key)
			     : nv_err_set_errno(err, NV_EIO, errno, NULL,
						"cannot stat '%s'", key);
	} else if (S_ISDIR(st.st_mode)) {
		rc = nv_err_set(err, NV_ENOTFOUND,
				"delete the objects below it one by one",
				"no object '%s' in the store ('%s/' is a "
				"folder of objects)",
				key, key);
	} else if (!S_ISREG(st.st_mode)) {
		rc = nv_err_set(err, NV_EREFUSED, "remove it by hand",
				"key '%s' is not a regular file (a link or "
				"special file inside the store)",
				key);
	} else if (unlinkat(dir_fd, leaf_of(key), 0) != 0) {
		rc = nv_err_set_errno(err, NV_EIO, errno,
				      "check permissions inside the store",
				      "cannot delete '%s'", key);
	}
	close(dir_fd);
	if (rc)
		return rc;
	meta_remove(s, key);
	prune_parents(s, key);
	return 0;
}
