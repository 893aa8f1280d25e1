/* Unit tests of host/core/fsutil.c's durable flush: nv_fsync_durable
 * flushes a file and a folder (F_FULLFSYNC on macOS, fsync elsewhere),
 * reports a bad descriptor as fsync does, and the atomic write that the
 * store's records go through still gives the whole file. nv_which finds
 * programs in absolute folders of PATH only (a relative or empty entry
 * would run a program of the working folder, a checkout's "navette") and
 * gives an absolute path with a canonical folder. */
#include "core/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nv_test.h"

/* dir/bin/nv-which-probe, run from dir with relative entries in PATH */
static void check_which(const char *dir)
{
	char bin[256], probe[300], link[300], real[PATH_MAX],
		want[PATH_MAX + 64];
	char found[PATH_MAX + 64], path[1024], cwd[PATH_MAX];
	const char *old_path = getenv("PATH");
	char saved[4096];

	snprintf(saved, sizeof(saved), "%s", old_path ? old_path : "");
	snprintf(bin, sizeof(bin), "%s/bin", dir);
	snprintf(probe, sizeof(probe), "%s/nv-which-probe", bin);
	snprintf(link, sizeof(link), "%s/nv-which-link", bin);
	CHECK(mkdir(bin, 0700) == 0);
	int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL, 0700);
	CHECK(fd >= 0);
	CHECK(write(fd, "#!/bin/sh\n", 10) == 10);
	close(fd);
	CHECK(symlink("nv-which-probe", link) == 0);
	/* a program in the working folder itself, as a checkout could hold */
	snprintf(probe, sizeof(probe), "%s/nv-which-probe", dir);
	fd = open(probe, O_WRONLY | O_CREAT | O_EXCL, 0700);
	CHECK(fd >= 0);
	close(fd);
	CHECK(realpath(bin, real) != NULL);
	CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
	CHECK(chdir(dir) == 0);

	/* relative entries, ".", an empty one: never searched */
	CHECK(setenv("PATH", ".:bin::./bin", 1) == 0);
	CHECK(nv_which("nv-which-probe", found, sizeof(found)) == NV_ENOTFOUND);
	CHECK(setenv("PATH", "", 1) == 0);
	CHECK(nv_which("nv-which-probe", found, sizeof(found)) == NV_ENOTFOUND);

	/* an absolute entry after them answers, with a canonical folder */
	snprintf(path, sizeof(path), ".:bin::%s/../bin", bin);
	CHECK(setenv("PATH", path, 1) == 0);
	CHECK(nv_which("nv-which-probe", found, sizeof(found)) == 0);
	snprintf(want, sizeof(want), "%s/nv-which-probe", real);
	CHECK(strcmp(found, want) == 0);
	/* a link keeps its name (a multi-call program goes by it) */
	CHECK(nv_which("nv-which-link", found, sizeof(found)) == 0);
	snprintf(want, sizeof(want), "%s/nv-which-link", real);
	CHECK(strcmp(found, want) == 0);

	CHECK(chdir(cwd) == 0);
	CHECK(setenv("PATH", saved, 1) == 0);
}

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

	check_which(dir);

	CHECK(nv_remove_tree(dir, &err) == 0);
	return nv_test_done();
}
