/* Small filesystem helpers shared by the C modules (no Lua). */
#ifndef NV_FSUTIL_H
#define NV_FSUTIL_H

#include <stddef.h>
#include <sys/types.h>

#include "core/nv_err.h"

/* mkdir -p with mode; existing folders are fine. */
int nv_mkdir_p(const char *path, int mode, nv_err *err);

/* Flushes fd's data and metadata to stable storage, for the records that
 * must survive a power cut (queue, store). 0, or -1 with errno set. On
 * macOS fsync only hands the data to the drive, whose cache can still lose
 * it: F_FULLFSYNC asks the drive to flush too, with fsync as the fallback
 * where a file system refuses it (network volumes, some USB drives). */
int nv_fsync_durable(int fd);

/* Writes data to path atomically (temp file in the same folder,
 * nv_fsync_durable, rename). mode applies to the new file. */
int nv_write_file_atomic(const char *path, const void *data, size_t len,
			 int mode, nv_err *err);

/* Reads at most max bytes of path into a malloc'd NUL-terminated buffer
 * (caller frees). A larger file is NV_ENOMEM. */
int nv_read_file(char **out, size_t *len, const char *path, size_t max,
		 nv_err *err);

/* Reads up to size bytes of fd into a malloc'd NUL-terminated buffer
 * (caller frees), retrying EINTR; it stops early at the end of the file or
 * on a read error, so a file that shrank gives what was there. fd stays
 * open. */
int nv_read_fd(char **out, size_t *len, int fd, size_t size, nv_err *err);

/* Writes all len bytes of data to fd (at offset off for nv_pwrite_all),
 * retrying EINTR and short writes. 0, or -1 with errno set (EIO for a
 * write that wrote nothing). */
int nv_write_all(int fd, const void *data, size_t len);
int nv_pwrite_all(int fd, const void *data, size_t len, off_t off);

/* rm -rf that never follows symlinks. Missing path is fine. */
int nv_remove_tree(const char *path, nv_err *err);

/* n random bytes as 2n lowercase hex characters (+NUL) from the OS. */
int nv_random_hex(char *out, size_t nbytes, nv_err *err);

/* The first executable called name in the absolute folders of $PATH (or
 * /usr/bin:/bin without one), its path made of the canonical folder and
 * name, copied into out; relative and empty entries are skipped. A name
 * holding '/' is checked as it is. 0 when found, NV_ENOTFOUND otherwise. */
int nv_which(const char *name, char *out, size_t cap);

/* snprintf for paths: on truncation out becomes "" and -1 is returned, so
 * a cut path is never used. */
int nv_pathf(char *out, size_t cap, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 3, 4)))
#endif
	;

#endif
