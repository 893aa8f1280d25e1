/* Filesystem helpers: mkdir -p, writes that retry EINTR, atomic writes,
 * bounded reads, removal of trees without following symlinks, randomness from
 * the OS. */
#include "core/fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int nv_mkdir_p(const char *path, int mode, nv_err *err)
{
	char buf[4096];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return nv_err_set(err, NV_EINVAL, NULL, "bad folder path '%s'",
				  path);
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, (mode_t)mode) != 0 && errno != EEXIST)
			return nv_err_set_errno(
				err, NV_EIO, errno,
				"check the folder's permissions",
				"cannot create %s", buf);
		*p = '/';
	}
	if (mkdir(buf, (mode_t)mode) != 0 && errno != EEXIST)
		return nv_err_set_errno(err, NV_EIO, errno,
					"check the folder's permissions",
					"cannot create %s", buf);
	struct stat st;
	if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
		return nv_err_set(err, NV_EIO, NULL, "%s is not a folder", buf);
	return 0;
}

int nv_fsync_durable(int fd)
{
#if defined(__APPLE__) && defined(F_FULLFSYNC) /* macOS: flush the drive */
	if (fcntl(fd, F_FULLFSYNC) == 0)
		return 0;
#endif
	return fsync(fd);
}

int nv_write_file_atomic(const char *path, const void *data, size_t len,
			 int mode, nv_err *err)
{
	char tmp[4200];
	char rnd[17];
	int fd;

	if (nv_random_hex(rnd, 8, err) != 0)
		return err ? err->code : NV_EIO;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp-%s", path, rnd) >=
	    sizeof(tmp))
		return nv_err_set(err, NV_EINVAL, NULL, "path too long: %s",
				  path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  (mode_t)mode);
	if (fd < 0)
		return nv_err_set_errno(err, NV_EIO, errno, NULL,
					"cannot create %s", tmp);
	if (nv_write_all(fd, data, len) != 0) {
		int e = errno;
		close(fd);
		unlink(tmp);
		return nv_err_set_errno(err, NV_EIO, e, "check free disk space",
					"cannot write %s", tmp);
	}
	if (nv_fsync_durable(fd) != 0 || close(fd) != 0) {
		int e = errno;
		unlink(tmp);
		return nv_err_set_errno(err, NV_EIO, e, NULL, "cannot sync %s",
					tmp);
	}
	if (rename(tmp, path) != 0) {
		int e = errno;
		unlink(tmp);
		return nv_err_set_errno(err, NV_EIO, e, NULL,
					"cannot rename into %s", path);
	}
	return 0;
}

int nv_read_file(char **out, size_t *len, const char *path, size_t max,
		 nv_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;

	*out = NULL;
	*len = 0;
	if (fd < 0)
		return nv_err_set_errno(err,
					errno == ENOENT ? NV_ENOTFOUND : NV_EIO,
					errno, NULL, "cannot open %s", path);
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return nv_err_set(err, NV_EIO, NULL, "%s is not a file", path);
	}
	if ((size_t)st.st_size > max) {
		close(fd);
		return nv_err_set(err, NV_ENOMEM, NULL,
				  "%s is larger than the %zu bytes allowed",
				  path, max);
	}
	int rc = nv_read_fd(out, len, fd, (size_t)st.st_size, err);
	close(fd);
	return rc;
}

int nv_read_fd(char **out, size_t *len, int fd, size_t size, nv_err *err)
{
	char *buf = malloc(size + 1);
	size_t got = 0;

	*out = NULL;
	*len = 0;
	if (!buf)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	while (got < size) {
		ssize_t n = read(fd, buf + got, size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	*out = buf;
	*len = got;
	return 0;
}

/* write, or pwrite at off when positioned, until all is written. */
static int write_loop(int fd, const char *p, size_t len, off_t off,
		      int positioned)
{
	while (len) {
		ssize_t n = positioned ? pwrite(fd, p, len, off)
				       : write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			return -1;
		}
		p += n;
		off += (off_t)n;
		len -= (size_t)n;
	}
	return 0;
}

int nv_write_all(int fd, const void *data, size_t len)
{
	return write_loop(fd, data, len, 0, 0);
}

int nv_pwrite_all(int fd, const void *data, size_t len, off_t off)
{
	return write_loop(fd, data, len, off, 1);
}

static int remove_at(int parent, const char *name, nv_err *err, int depth)
{
	struct stat st;

	if (depth > 256)
		return nv_err_set(err, NV_EIO, NULL, "folder tree too deep");
	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return errno == ENOENT
			       ? 0
			       : nv_err_set_errno(err, NV_EIO, errno, NULL,
						  "cannot stat %s", name);
	if (!S_ISDIR(st.st_mode)) {
		if (unlinkat(parent, name, 0) != 0 && errno != ENOENT)
			return nv_err_set_errno(err, NV_EIO, errno, NULL,
						"cannot remove %s", name);
		return 0;
	}
	/* A read-only folder (staged inputs) must be made writable first. */
	fchmodat(parent, name, 0700, 0);
	int fd = openat(parent, name,
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return nv_err_set_errno(err, NV_EIO, errno, NULL,
					"cannot open %s", name);
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return nv_err_set_errno(err, NV_EIO, errno, NULL,
					"cannot read %s", name);
	}
	struct dirent *e;
	int rc = 0;
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		rc = remove_at(dirfd(d), e->d_name, err, depth + 1);
		if (rc)
			break;
	}
	closedir(d);
	if (rc)
		return rc;
	if (unlinkat(parent, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
		return nv_err_set_errno(err, NV_EIO, errno, NULL,
					"cannot remove %s", name);
	return 0;
}

int nv_remove_tree(const char *path, nv_err *err)
{
	return remove_at(AT_FDCWD, path, err, 0);
}

int nv_random_hex(char *out, size_t nbytes, nv_err *err)
{
	unsigned char raw[64];
	static const char digits[] = "0123456789abcdef";
	int fd;

	if (nbytes > sizeof(raw))
		return nv_err_set(err, NV_EINVAL, NULL, "too many bytes");
	fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, raw, nbytes) != (ssize_t)nbytes) {
		if (fd >= 0)
			close(fd);
		return nv_err_set(err, NV_EIO, NULL,
				  "cannot read /dev/urandom");
	}
	close(fd);
	for (size_t i = 0; i < nbytes; i++) {
		out[2 * i] = digits[raw[i] >> 4];
		out[2 * i + 1] = digits[raw[i] & 15];
	}
	out[2 * nbytes] = '\0';
	return 0;
}

int nv_pathf(char *out, size_t cap, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(out, cap, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= cap) {
		if (cap)
			out[0] = '\0';
		return -1;
	}
	return 0;
}

int nv_which(const char *name, char *out, size_t cap)
{
	const char *path = getenv("PATH");
	char dir[4096];

	if (!name || !name[0])
		return NV_ENOTFOUND;
	if (strchr(name, '/'))
		return access(name, X_OK) == 0 &&
				       nv_pathf(out, cap, "%s", name) == 0
			       ? 0
			       : NV_ENOTFOUND;
	if (!path)
		path = "/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");
		/* Only absolute folders: an empty entry, "." or "bin" would
		 * find a program of the working folder (a checkout's own
		 * "navette", say). The folder is made canonical; the name is
		 * kept, since a program reached by a link (a multi-call one)
		 * may go by the name it was called with. */
		if (n > 0 && n < sizeof(dir) && path[0] == '/') {
			struct stat st;
			char real[PATH_MAX];
			memcpy(dir, path, n);
			dir[n] = '\0';
			if (realpath(dir, real) &&
			    nv_pathf(out, cap, "%s/%s",
				     strcmp(real, "/") == 0 ? "" : real,
				     name) == 0 &&
			    stat(out, &st) == 0 && S_ISREG(st.st_mode) &&
			    access(out, X_OK) == 0)
				return 0;
		}
		path += n;
		if (*path == ':')
			path++;
	}
	if (cap)
		out[0] = '\0';
	return NV_ENOTFOUND;
}
