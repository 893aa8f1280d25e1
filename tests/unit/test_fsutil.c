/* Unit tests of host/core/fsutil.c's durable flush: nv_fsync_durable
 * flushes a file and a folder (F_FULLFSYNC on macOS, fsync elsewhere),
 * reports a bad descriptor as fsync does, and the atomic write that the
 * store's records go through still gives the whole file. */
#include "core/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nv_test.h"

int main(void)
{
	char dir[] = "/tmp/navette-fsutil-XXXXXX";
	char path[128], *back = NULL;
	size_t len = 0;
	nv_err err;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/f", dir);

	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	CHECK(fd >= 0);
	CHECK(write(fd, "abc", 3) == 3);
	CHECK(nv_fsync_durable(fd) == 0);
	CHECK(close(fd) == 0);

	int dfd = open(dir, O_RDONLY);
	CHECK(dfd >= 0);
	CHECK(nv_fsync_durable(dfd) == 0);
	close(dfd);

	/* a closed descriptor: -1 and EBADF, as from fsync */
	errno = 0;
	CHECK(nv_fsync_durable(fd) == -1 && errno == EBADF);

	CHECK(nv_write_file_atomic(path, "durable\n", 8, 0600, &err) == 0);
	CHECK(nv_read_file(&back, &len, path, 64, &err) == 0);
	CHECK(back && len == 8 && memcmp(back, "durable\n", 8) == 0);
	free(back);

	CHECK(nv_remove_tree(dir, &err) == 0);
	return nv_test_done();
}
