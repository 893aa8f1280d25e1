/* The file:// object store: a folder holding a `.navette-store/` marker
 * directory, with objects kept at plain paths `<root>/<key>` so a user can
 * find outputs with `ls`. The API mirrors S3 (put, get, head, list, delete,
 * copy) so the s3:// backend can serve the same calls. Publication is
 * atomic (temp file in the marker folder, fsync, rename), every object's
 * sha256 and size are recorded in the marker folder, and no operation
 * follows a symlink found inside the store. Pure C: no Lua here. */
#ifndef NV_FILESTORE_H
#define NV_FILESTORE_H

#include <stddef.h>
#include <stdint.h>

#include "core/nv_err.h"

#define NV_FILESTORE_MARKER   ".navette-store"
#define NV_FILESTORE_KEY_MAX  1024
#define NV_FILESTORE_PATH_MAX 4096
/* S3's page size; list() never returns more than this per call. */
#define NV_FILESTORE_LIST_MAX 1000
/* A temp file of the store's tmp/ untouched for this long, whose writer
 * (the pid in its name) is not a live process here, was left by a writer
 * that was killed: the next open for writing removes it. Long enough for
 * a writer on another machine sharing the store (whose pid means nothing
 * here) that still writes: it touches its temp file as it goes. */
#define NV_FILESTORE_STALE_SECONDS 3600

typedef struct nv_filestore nv_filestore;

typedef struct nv_object_info {
	char key[NV_FILESTORE_KEY_MAX + 1];
	uint64_t size;
	/* 64 hex digits; "" in list() results when the recorded checksum is
	 * missing or stale (call head() to compute it). */
	char sha256[65];
	int64_t mtime; /* seconds since the epoch */
} nv_object_info;

/* Opens the store at root (a path; "file://" URLs go through
 * nv_filestore_path_from_url first). With create, makes root and the marker
 * (mkdir -p); without, a folder lacking the marker is NV_ENOTFOUND.
 * *out is freed with nv_filestore_free(). */
int nv_filestore_open(nv_filestore **out, const char *root, int create,
		      nv_err *err);
/* Closes the store's descriptors and frees it; NULL is fine. */
void nv_filestore_free(nv_filestore *store);
/* Absolute, symlink-free path of the root; owned by the store. */
const char *nv_filestore_root(const nv_filestore *store);

/* Turns "file:///abs/path" (or "file://localhost/...", or an absolute path
 * taken verbatim) into an absolute path: percent-decoded, with no empty,
 * "." or ".." segment (one trailing slash is dropped). Rejects other
 * schemes, %00 and %2F. */
int nv_filestore_path_from_url(char *path_out, size_t path_cap,
			       const char *url_or_path, nv_err *err);

/* Walks up from url_or_path to the nearest folder holding the marker and
 * splits it into that root and the key below it ("" when the path is the
 * root itself). The path itself need not exist. */
int nv_filestore_find(char *root_out, size_t root_cap, char *key_out,
		      size_t key_cap, const char *url_or_path, nv_err *err);

/* "file://" followed by the percent-encoded absolute path of key (which is
 * checked). Reverses nv_filestore_find(). */
int nv_filestore_url(char *url_out, size_t url_cap, const nv_filestore *store,
		     const char *key, nv_err *err);

/* Key rules: 1..1024 bytes, no NUL or control byte, no backslash, not
 * absolute, no empty, "." or ".." segment, no trailing slash, segments of at
 * most 255 bytes (a file name), first segment not ".navette-store" in any
 * case or NFC/NFD form, trailing dots and spaces ignored (core/fsname.h;
 * refused on every system, since some volume would take it for the
 * marker).
 * The _len form also catches a NUL inside key[0..len). */
int nv_filestore_key_check(const char *key, nv_err *err);
int nv_filestore_key_check_len(const char *key, size_t len, nv_err *err);

/* A job's key prefix in a store (file or S3: one key grammar): template
 * with every "{project}" and "{id}" replaced. id must follow the job id
 * grammar (core/jobid.h), project must be one segment (no '/'), and the
 * prefix, without its trailing '/', must be a key; otherwise NV_EINVAL
 * naming what is wrong. */
int nv_filestore_job_prefix(char *out, size_t cap, const char *template_text,
			    const char *project, const char *id, nv_err *err);

/* Publishes src_path (or data[0..len)) as key, replacing any object there.
 * info (may be NULL) receives what was stored. On a volume that folds
 * names (detected at open, or NAVETTE_FS_CASE_INSENSITIVE=1), a key that
 * an existing one differs from only in case or NFC/NFD form (a folder on
 * its path included) is NV_EREFUSED naming both: they would share a file
 * while their records differ. copy() checks its destination likewise. */
int nv_filestore_put_file(nv_filestore *store, const char *key,
			  const char *src_path, nv_object_info *info,
			  nv_err *err);
int nv_filestore_put_bytes(nv_filestore *store, const char *key,
			   const void *data, size_t len, nv_object_info *info,
			   nv_err *err);

/* Copies key to dest_path (temp file beside it, then rename), checking the
 * bytes against the recorded sha256: a mismatch is NV_EIO and dest_path is
 * left untouched. */
int nv_filestore_get_file(nv_filestore *store, const char *key,
			  const char *dest_path, nv_object_info *info,
			  nv_err *err);

/* Reads key into memory, checked like get. An object larger than max_bytes
 * is NV_ENOMEM. *out is malloc'd, NUL-terminated for convenience (*len does
 * not count it), and freed by the caller. */
int nv_filestore_read(nv_filestore *store, const char *key, size_t max_bytes,
		      char **out, size_t *len, nv_object_info *info,
		      nv_err *err);

/* Size, sha256 and mtime of key; NV_ENOTFOUND when missing. The sha256 is
 * the recorded one unless the object was changed behind the store's back
 * (size, mtime or inode differ), in which case it is recomputed. */
int nv_filestore_head(nv_filestore *store, const char *key,
		      nv_object_info *info, nv_err *err);

/* Called once per listed object, in key order; a nonzero return stops the
 * listing and list() returns that value. info is valid during the call. */
typedef int (*nv_filestore_list_cb)(const nv_object_info *info, void *payload);

/* Keys starting with prefix ("" or NULL: all) and greater than start_after
 * (NULL: none), in byte order, at most max_keys of them (0 or more than
 * NV_FILESTORE_LIST_MAX: NV_FILESTORE_LIST_MAX). *truncated (may be NULL)
 * is set when more keys follow the last one reported. */
int nv_filestore_list(nv_filestore *store, const char *prefix,
		      const char *start_after, unsigned max_keys,
		      nv_filestore_list_cb callback, void *payload,
		      int *truncated, nv_err *err);

/* Removes key and its record, then prunes parent folders left empty (up to
 * the root). NV_ENOTFOUND when missing. */
int nv_filestore_delete(nv_filestore *store, const char *key, nv_err *err);

/* Server-side copy, published atomically like a put; the source bytes are
 * checked against its record while copying. */
int nv_filestore_copy(nv_filestore *store, const char *src_key,
		      const char *dst_key, nv_object_info *info, nv_err *err);

#endif
