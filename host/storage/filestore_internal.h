/* What the files of the file:// store share, private to
 * host/storage/filestore*.c (the API is filestore.h): the store handle,
 * the record kept for each object, and the helpers that listing borrows
 * from filestore.c. */
#ifndef NV_FILESTORE_INTERNAL_H
#define NV_FILESTORE_INTERNAL_H

#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>

#include "core/fsname.h"
#include "storage/filestore.h"

#define SEGMENT_MAX 255 /* NAME_MAX on the filesystems we target */
#define KEY_HINT                                                               \
	"a key is a relative path like 'project/job-id/result.txt': "          \
	"1..1024 bytes, '/'-separated, no empty, '.' or '..' segment, "        \
	"no backslash or control character"

struct nv_filestore {
	int root_fd;
	int meta_fd; /* -1 when the marker has no meta/ and we cannot make it */
	int tmp_fd;  /* -1 likewise: the store is then read-only */
	enum nv_fsname_volume volume; /* folding: refuse colliding keys */
	char root[NV_FILESTORE_PATH_MAX];
};

/* The record kept for each object in meta/. */
struct meta {
	uint64_t size;
	int64_t mtime_sec;
	long mtime_nsec;
	uint64_t ino;
	char sha256[65];
};

static inline int open_dir_at(int dir_fd, const char *name)
{
	return openat(dir_fd, name,
		      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* info of key from its stat and sha256 ("" when unknown). */
void nv_filestore_fill_info(nv_object_info *info, const char *key,
			    const struct stat *st, const char *sha256);
/* Reads key's record; returns 1 when present and well formed, else 0. */
int nv_filestore_meta_read(nv_filestore *s, const char *key, struct meta *m);
/* Whether the record still describes the file (size, mtime, inode). */
int nv_filestore_meta_fresh(const struct meta *m, const struct stat *st);

#endif
