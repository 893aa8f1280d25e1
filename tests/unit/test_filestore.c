/* Unit tests of the file:// object store (host/storage/filestore*.c) and its
 * sha256 helpers: what a recipe relies on when it publishes outputs and
 * fetches inputs, including the refusals that keep a store safe. Works in a
 * fresh folder under $TMPDIR (or /tmp) and removes it afterwards. */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700 /* nftw */
#endif
#include "core/fsname.h"
#include "storage/filestore.h"
#include "core/sha256.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nv_test.h"

#define SHA_ABC                                                                \
	"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
#define SHA_EMPTY                                                              \
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static char base[512]; /* the temp folder of this run */
static char root[600]; /* a store inside it */

static void path_in(char *out, size_t cap, const char *dir, const char *rel)
{
	size_t d = strlen(dir), r = strlen(rel);

	if (d + 1 + r + 1 > cap)
		abort(); /* a test bug, not a store failure */
	memcpy(out, dir, d);
	out[d] = '/';
	memcpy(out + d + 1, rel, r + 1);
}

static int exists(const char *dir, const char *rel)
{
	char p[1200];
	struct stat st;

	path_in(p, sizeof(p), dir, rel);
	return lstat(p, &st) == 0;
}

static int write_file(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	int ok;

	if (!f)
		return -1;
	ok = fwrite(data, 1, len, f) == len;
	return fclose(f) == 0 && ok ? 0 : -1;
}

/* Does dir hold a get() temp file (".navette-get.*")? */
static int has_get_temp(const char *dir)
{
	struct dirent *d;
	int found = 0;
	DIR *dp = opendir(dir);

	if (!dp)
		return -1;
	while ((d = readdir(dp)) != NULL)
		if (strncmp(d->d_name, ".navette-get", 12) == 0)
			found = 1;
	closedir(dp);
	return found;
}

static size_t count_entries(const char *dir)
{
	struct dirent *d;
	size_t n = 0;
	DIR *dp = opendir(dir);

	if (!dp)
		return (size_t)-1;
	while ((d = readdir(dp)) != NULL)
		if (strcmp(d->d_name, ".") && strcmp(d->d_name, ".."))
			n++;
	closedir(dp);
	return n;
}

static int remove_one(const char *path, const struct stat *st, int flag,
		      struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* ---- sha256 ---------------------------------------------------------- */

static void test_sha256(void)
{
	char hex[65], path[700];
	nv_sha256 h;
	uint64_t size = 99;
	nv_err err;

	CHECK(nv_sha256_bytes("abc", 3, hex, &err) == 0);
	CHECK_STR(hex, SHA_ABC);
	CHECK(nv_sha256_bytes("", 0, hex, &err) == 0);
	CHECK_STR(hex, SHA_EMPTY);

	/* piece by piece gives the same digest */
	CHECK(nv_sha256_init(&h, &err) == 0);
	CHECK(nv_sha256_update(&h, "a", 1, &err) == 0);
	CHECK(nv_sha256_update(&h, "bc", 2, &err) == 0);
	CHECK(nv_sha256_final(&h, hex, &err) == 0);
	CHECK_STR(hex, SHA_ABC);
	CHECK(nv_sha256_final(&h, hex, &err) == NV_EINVAL);
	nv_sha256_dispose(&h);

	path_in(path, sizeof(path), base, "abc.txt");
	CHECK(write_file(path, "abc", 3) == 0);
	CHECK(nv_sha256_file(path, hex, &size, &err) == 0);
	CHECK_STR(hex, SHA_ABC);
	CHECK(size == 3);
	path_in(path, sizeof(path), base, "missing.txt");
	CHECK(nv_sha256_file(path, hex, &size, &err) == NV_ENOTFOUND);
}

/* ---- keys, URLs, find ------------------------------------------------ */

static void test_keys(void)
{
	char long_key[1100];
	nv_err err;

	CHECK(nv_filestore_key_check("a", &err) == 0);
	CHECK(nv_filestore_key_check("proj/job-1/result.txt", &err) == 0);
	CHECK(nv_filestore_key_check(".hidden/x", &err) == 0);
	CHECK(nv_filestore_key_check("x/.navette-store", &err) == 0);

	CHECK(nv_filestore_key_check("", &err) == NV_EINVAL);
	CHECK(nv_filestore_key_check("a/../b", &err) == NV_EINVAL);
	CHECK(strstr(err.message, "a/../b") && strstr(err.message, "'..'"));
	CHECK(err.hint[0] != '\0');
	CHECK(nv_filestore_key_check("..", &err) == NV_EINVAL);
	CHECK(nv_filestore_key_check("./a", &err) == NV_EINVAL);
	CHECK(nv_filestore_key_check("/abs", &err) == NV_EINVAL);
	CHECK(strstr(err.message, "'/'") != NULL);
	CHECK(nv_filestore_key_check("a//b", &err) == NV_EINVAL);
	CHECK(strstr(err.message, "empty segment") != NULL);
	CHECK(nv_filestore_key_check("a/", &err) == NV_EINVAL);
	CHECK(nv_filestore_key_check("a\\b", &err) == NV_EINVAL);
	CHECK(nv_filestore_key_check("a\nb", &err) == NV_EINVAL);
	CHECK(nv_filestore_key_check(".navette-store/x", &err) == NV_EINVAL);
	CHECK(strstr(err.message, "reserved") != NULL);
	CHECK(nv_filestore_key_check(".navette-store", &err) == NV_EINVAL);
	/* the marker in any case or with what a share drops: refused on
	 * every system, since a folding volume would take it for the marker */
	CHECK(nv_filestore_key_check(".NAVETTE-STORE/meta/x", &err) ==
	      NV_EINVAL);
	CHECK(strstr(err.message, "reserved") != NULL &&
	      strstr(err.message, ".NAVETTE-STORE") != NULL);
	CHECK(nv_filestore_key_check(".Navette-Store", &err) == NV_EINVAL);
	CHECK(nv_filestore_key_check(".navette-store./x", &err) == NV_EINVAL);
	CHECK(nv_filestore_key_check(".navette-store /x", &err) == NV_EINVAL);
	CHECK(nv_filestore_key_check(".navette-storex/x", &err) == 0);
	CHECK(nv_filestore_key_check("x/.NAVETTE-STORE", &err) == 0);
	/* a NUL inside the bytes a caller (Lua) hands us */
	CHECK(nv_filestore_key_check_len("a\0b", 3, &err) == NV_EINVAL);
	CHECK(strstr(err.message, "NUL") != NULL);

	/* 1024 bytes in 200-byte segments is fine, 1025 is not */
	memset(long_key, 'k', sizeof(long_key));
	for (int i = 200; i < 1100; i += 201)
		long_key[i] = '/';
	long_key[1024] = '\0';
	CHECK(nv_filestore_key_check(long_key, &err) == 0);
	long_key[1024] = 'k';
	long_key[1025] = '\0';
	CHECK(nv_filestore_key_check(long_key, &err) == NV_EINVAL);
	CHECK(strstr(err.message, "1025 bytes") != NULL);
	/* one 256-byte segment cannot be a file name */
	memset(long_key, 'k', 256);
	long_key[256] = '\0';
	CHECK(nv_filestore_key_check(long_key, &err) == NV_EINVAL);
}

static void test_find(nv_filestore *s)
{
	char r[1024], k[1100], url[2048], in[2048], p[1024];
	nv_err err;

	snprintf(in, sizeof(in), "file://%s/a/b.txt", root);
	CHECK(nv_filestore_find(r, sizeof(r), k, sizeof(k), in, &err) == 0);
	CHECK_STR(r, root);
	CHECK_STR(k, "a/b.txt");

	/* an absolute path works too, and the path need not exist yet */
	snprintf(in, sizeof(in), "%s/new/deep/x.bin", root);
	CHECK(nv_filestore_find(r, sizeof(r), k, sizeof(k), in, &err) == 0);
	CHECK_STR(k, "new/deep/x.bin");

	/* percent-decoding: space, %, and non-ASCII bytes */
	snprintf(in, sizeof(in), "file://%s/my%%20dir/100%%25%%C3%%A9.txt",
		 root);
	CHECK(nv_filestore_find(r, sizeof(r), k, sizeof(k), in, &err) == 0);
	CHECK_STR(k, "my dir/100%\xc3\xa9.txt");
	snprintf(in, sizeof(in), "file://localhost%s/q", root);
	CHECK(nv_filestore_find(r, sizeof(r), k, sizeof(k), in, &err) == 0);
	CHECK_STR(k, "q");

	/* url() reverses find() */
	CHECK(nv_filestore_url(url, sizeof(url), s, "my dir/100%\xc3\xa9.txt",
			       &err) == 0);
	CHECK(strstr(url, "/my%20dir/100%25%C3%A9.txt") != NULL);
	CHECK(nv_filestore_find(r, sizeof(r), k, sizeof(k), url, &err) == 0);
	CHECK_STR(k, "my dir/100%\xc3\xa9.txt");

	/* the root itself: empty key */
	CHECK(nv_filestore_find(r, sizeof(r), k, sizeof(k), root, &err) == 0);
	CHECK_STR(k, "");

	snprintf(in, sizeof(in), "file://%s/a%%2Fb", root);
	CHECK(nv_filestore_find(r, sizeof(r), k, sizeof(k), in, &err) ==
	      NV_EINVAL);
	snprintf(in, sizeof(in), "file://%s/a%%00b", root);
	CHECK(nv_filestore_find(r, sizeof(r), k, sizeof(k), in, &err) ==
	      NV_EINVAL);
	snprintf(in, sizeof(in), "file://%s/a/%%2E%%2E/b", root);
	CHECK(nv_filestore_find(r, sizeof(r), k, sizeof(k), in, &err) ==
	      NV_EINVAL);
	snprintf(in, sizeof(in), "%s/a/../b", root);
	CHECK(nv_filestore_find(r, sizeof(r), k, sizeof(k), in, &err) ==
	      NV_EINVAL);
	snprintf(in, sizeof(in), "file://%s/bad%%zz", root);
	CHECK(nv_filestore_find(r, sizeof(r), k, sizeof(k), in, &err) ==
	      NV_EINVAL);
	CHECK(nv_filestore_find(r, sizeof(r), k, sizeof(k), "relative/x",
				&err) == NV_EINVAL);
	CHECK(nv_filestore_find(r, sizeof(r), k, sizeof(k), "s3://b/k", &err) ==
	      NV_EINVAL);
	CHECK(nv_filestore_find(r, sizeof(r), k, sizeof(k),
				"file://otherhost/x", &err) == NV_EINVAL);
	snprintf(in, sizeof(in), "%s/.navette-store/meta", root);
	CHECK(nv_filestore_find(r, sizeof(r), k, sizeof(k), in, &err) ==
	      NV_EINVAL);
	/* outside any store */
	CHECK(nv_filestore_find(r, sizeof(r), k, sizeof(k), base, &err) ==
	      NV_ENOTFOUND);

	CHECK(nv_filestore_path_from_url(p, sizeof(p), "file:///a/b/", &err) ==
	      0);
	CHECK_STR(p, "/a/b");
}

/* ---- put / get / read / head ------------------------------------------ */

static void test_put_get(nv_filestore *s)
{
	char src[700], dest[700], tmpdir[700], obj[1200];
	nv_object_info info;
	char *data = NULL;
	size_t len = 0;
	nv_err err;

	path_in(src, sizeof(src), base, "src.txt");
	CHECK(write_file(src, "abc", 3) == 0);
	memset(&info, 0, sizeof(info));
	CHECK(nv_filestore_put_file(s, "runs/r1/out.txt", src, &info, &err) ==
	      0);
	CHECK_STR(info.key, "runs/r1/out.txt");
	CHECK_STR(info.sha256, SHA_ABC);
	CHECK(info.size == 3);
	CHECK(info.mtime > 0);
	/* plain path a user finds with ls, and nothing left in tmp/ */
	CHECK(exists(root, "runs/r1/out.txt"));
	path_in(tmpdir, sizeof(tmpdir), root, ".navette-store/tmp");
	CHECK(count_entries(tmpdir) == 0);

	memset(&info, 0, sizeof(info));
	CHECK(nv_filestore_head(s, "runs/r1/out.txt", &info, &err) == 0);
	CHECK_STR(info.sha256, SHA_ABC);
	CHECK(info.size == 3);

	path_in(dest, sizeof(dest), base, "fetched.txt");
	CHECK(nv_filestore_get_file(s, "runs/r1/out.txt", dest, &info, &err) ==
	      0);
	CHECK(nv_sha256_file(dest, info.sha256, NULL, &err) == 0);
	CHECK_STR(info.sha256, SHA_ABC);
	CHECK(has_get_temp(base) == 0);

	/* binary data with NULs, from memory, length-driven */
	CHECK(nv_filestore_put_bytes(s, "bin", "x\0y\0", 4, &info, &err) == 0);
	CHECK(nv_filestore_read(s, "bin", 100, &data, &len, &info, &err) == 0);
	CHECK(len == 4 && data && memcmp(data, "x\0y\0", 4) == 0);
	free(data);
	data = NULL;
	CHECK(nv_filestore_read(s, "bin", 3, &data, &len, &info, &err) ==
	      NV_ENOMEM);
	CHECK(data == NULL && strstr(err.message, "3 bytes") != NULL);

	/* overwrite replaces content and record */
	CHECK(nv_filestore_put_bytes(s, "bin", "", 0, &info, &err) == 0);
	CHECK(nv_filestore_head(s, "bin", &info, &err) == 0);
	CHECK_STR(info.sha256, SHA_EMPTY);
	CHECK(info.size == 0);

	/* missing */
	CHECK(nv_filestore_head(s, "nope", &info, &err) == NV_ENOTFOUND);
	CHECK(strstr(err.message, "nope") != NULL);
	CHECK(nv_filestore_get_file(s, "nope", dest, &info, &err) ==
	      NV_ENOTFOUND);
	CHECK(nv_filestore_head(s, "runs/r1", &info, &err) == NV_ENOTFOUND);
	CHECK(nv_filestore_put_file(s, "x", "/nonexistent/src", &info, &err) ==
	      NV_ENOTFOUND);

	/* bad keys are refused before anything is written */
	CHECK(nv_filestore_put_bytes(s, "../escape", "a", 1, &info, &err) ==
	      NV_EINVAL);
	CHECK(nv_filestore_put_bytes(s, "/abs", "a", 1, &info, &err) ==
	      NV_EINVAL);
	CHECK(nv_filestore_put_bytes(s, "a//b", "a", 1, &info, &err) ==
	      NV_EINVAL);
	CHECK(nv_filestore_put_bytes(s, ".navette-store/x", "a", 1, &info,
				     &err) == NV_EINVAL);
	CHECK(!exists(base, "escape") && !exists(root, "a"));

	/* an object cannot also be a folder, nor the reverse */
	CHECK(nv_filestore_put_bytes(s, "runs/r1/out.txt/x", "a", 1, &info,
				     &err) == NV_EREFUSED);
	CHECK(strstr(err.message, "is an object") != NULL);
	CHECK(nv_filestore_put_bytes(s, "runs/r1", "a", 1, &info, &err) ==
	      NV_EREFUSED);
	path_in(obj, sizeof(obj), root, "runs/r1/out.txt");
	CHECK(nv_sha256_file(obj, info.sha256, NULL, &err) == 0);
	CHECK_STR(info.sha256, SHA_ABC);

	/* server-side copy */
	CHECK(nv_filestore_copy(s, "runs/r1/out.txt", "copies/c.txt", &info,
				&err) == 0);
	CHECK_STR(info.sha256, SHA_ABC);
	CHECK(nv_filestore_head(s, "copies/c.txt", &info, &err) == 0);
	CHECK_STR(info.sha256, SHA_ABC);
	CHECK(nv_filestore_copy(s, "nope", "copies/d.txt", &info, &err) ==
	      NV_ENOTFOUND);
	CHECK(!exists(root, "copies/d.txt"));
	CHECK(count_entries(tmpdir) == 0);
}

/* Bytes changed behind the store's back with size and mtime kept (what
 * bit rot looks like): get must fail and leave no file at dest. */
static void test_corrupt(nv_filestore *s)
{
	char obj[1200], dest[700];
	struct timespec times[2];
	nv_object_info info;
	char *data = NULL;
	struct stat st;
	size_t len;
	nv_err err;
	int fd;

	CHECK(nv_filestore_put_bytes(s, "c/data.bin", "hello", 5, &info,
				     &err) == 0);
	path_in(obj, sizeof(obj), root, "c/data.bin");
	CHECK(stat(obj, &st) == 0);
	fd = open(obj, O_WRONLY);
	CHECK(fd >= 0 && pwrite(fd, "J", 1, 0) == 1);
	close(fd);
	times[0].tv_sec = 0;
	times[0].tv_nsec = UTIME_OMIT;
#ifdef __APPLE__
	times[1] = st.st_mtimespec;
#else
	times[1] = st.st_mtim;
#endif
	CHECK(utimensat(AT_FDCWD, obj, times, 0) == 0);

	path_in(dest, sizeof(dest), base, "corrupt-out.bin");
	CHECK(nv_filestore_get_file(s, "c/data.bin", dest, &info, &err) ==
	      NV_EIO);
	CHECK(strstr(err.message, "changed or corrupt") != NULL);
	CHECK(!exists(base, "corrupt-out.bin"));
	CHECK(has_get_temp(base) == 0);
	CHECK(nv_filestore_read(s, "c/data.bin", 100, &data, &len, &info,
				&err) == NV_EIO);
	CHECK(data == NULL);
	CHECK(nv_filestore_copy(s, "c/data.bin", "c/copy.bin", &info, &err) ==
	      NV_EIO);
	CHECK(!exists(root, "c/copy.bin"));

	/* an edit that changes the mtime is a new version, not corruption:
	 * head recomputes the checksum of what is there now */
	CHECK(write_file(obj, "hello world", 11) == 0);
	CHECK(nv_filestore_head(s, "c/data.bin", &info, &err) == 0);
	CHECK(info.size == 11);
	CHECK(nv_sha256_bytes("hello world", 11, dest, &err) == 0);
	CHECK_STR(info.sha256, dest);
	CHECK(nv_filestore_delete(s, "c/data.bin", &err) == 0);
}

/* A link planted inside the store must not redirect a write outside. */
static void test_symlink(nv_filestore *s)
{
	char outside[700], link[1200], dest[700];
	nv_object_info info;
	nv_err err;

	path_in(outside, sizeof(outside), base, "outside");
	CHECK(mkdir(outside, 0700) == 0);
	path_in(link, sizeof(link), root, "evil");
	CHECK(symlink(outside, link) == 0);
	CHECK(nv_filestore_put_bytes(s, "evil/x.txt", "a", 1, &info, &err) ==
	      NV_EREFUSED);
	CHECK(strstr(err.message, "symbolic link") != NULL);
	CHECK(nv_filestore_put_bytes(s, "evil/sub/x.txt", "a", 1, &info,
				     &err) == NV_EREFUSED);
	CHECK(count_entries(outside) == 0);

	/* a link as the object itself: not read, not replaced */
	path_in(dest, sizeof(dest), outside, "secret");
	CHECK(write_file(dest, "secret", 6) == 0);
	path_in(link, sizeof(link), root, "leaf-link");
	CHECK(symlink(dest, link) == 0);
	CHECK(nv_filestore_head(s, "leaf-link", &info, &err) == NV_EREFUSED);
	CHECK(nv_filestore_put_bytes(s, "leaf-link", "b", 1, &info, &err) ==
	      NV_EREFUSED);
	path_in(dest, sizeof(dest), base, "leak.txt");
	CHECK(nv_filestore_get_file(s, "leaf-link", dest, &info, &err) ==
	      NV_EREFUSED);
	CHECK(!exists(base, "leak.txt"));
	CHECK(count_entries(outside) == 1);
	unlink(link);
	path_in(link, sizeof(link), root, "evil");
	unlink(link);
}

/* ---- list ------------------------------------------------------------- */

struct collected {
	char keys[64][64];
	int n;
};

static int collect(const nv_object_info *info, void *payload)
{
	struct collected *c = payload;

	size_t len = strlen(info->key);

	if (c->n < 64 && len < sizeof(c->keys[0]))
		memcpy(c->keys[c->n++], info->key, len + 1);
	return 0;
}

static void test_list(void)
{
	/* in S3 order: '-' (0x2d) < '.' < '/' (0x2f) < '0' < 'a' */
	static const char *const sorted[] = {
		"a-b",       "a.txt",          "a/b",   "a/c/d", "a0",
		"out/res/x", "out/result.txt", "out/z", "zz"};
	const int total = (int)(sizeof(sorted) / sizeof(sorted[0]));
	char store_root[700], outside[700], link[1200];
	struct collected c;
	nv_filestore *s = NULL;
	int truncated = -1, pages = 0, i;
	char after[1100] = "";
	nv_object_info info;
	nv_err err;

	path_in(store_root, sizeof(store_root), base, "liststore");
	CHECK(nv_filestore_open(&s, store_root, 1, &err) == 0);
	if (!s)
		return;
	/* put in reverse order so sorting is not an accident of creation */
	for (i = total - 1; i >= 0; i--)
		CHECK(nv_filestore_put_bytes(s, sorted[i], "v", 1, &info,
					     &err) == 0);
	/* a link to a folder outside with an object-looking file in it */
	path_in(outside, sizeof(outside), base, "outside");
	path_in(link, sizeof(link), store_root, "b-link");
	CHECK(symlink(outside, link) == 0);

	memset(&c, 0, sizeof(c));
	CHECK(nv_filestore_list(s, "", NULL, 0, collect, &c, &truncated,
				&err) == 0);
	CHECK(c.n == total && truncated == 0);
	for (i = 0; i < total && i < c.n; i++)
		CHECK_STR(c.keys[i], sorted[i]);

	/* partial segment prefix */
	memset(&c, 0, sizeof(c));
	CHECK(nv_filestore_list(s, "out/res", NULL, 0, collect, &c, &truncated,
				&err) == 0);
	CHECK(c.n == 2);
	CHECK_STR(c.keys[0], "out/res/x");
	CHECK_STR(c.keys[1], "out/result.txt");
	memset(&c, 0, sizeof(c));
	CHECK(nv_filestore_list(s, "a/", NULL, 0, collect, &c, &truncated,
				&err) == 0);
	CHECK(c.n == 2);
	CHECK_STR(c.keys[1], "a/c/d");

	/* pages of 2 with start_after walk the whole store exactly once */
	memset(&c, 0, sizeof(c));
	do {
		int before = c.n;
		CHECK(nv_filestore_list(s, NULL, after, 2, collect, &c,
					&truncated, &err) == 0);
		CHECK(c.n - before <= 2);
		if (c.n > before)
			snprintf(after, sizeof(after), "%s", c.keys[c.n - 1]);
		pages++;
	} while (truncated == 1 && pages < 20);
	CHECK(pages == 5);
	CHECK(c.n == total);
	for (i = 0; i < total && i < c.n; i++)
		CHECK_STR(c.keys[i], sorted[i]);
	/* an exact full page reports no more */
	memset(&c, 0, sizeof(c));
	CHECK(nv_filestore_list(s, NULL, "out/result.txt", 2, collect, &c,
				&truncated, &err) == 0);
	CHECK(c.n == 2 && truncated == 0);

	/* delete prunes folders left empty, and only those */
	CHECK(nv_filestore_delete(s, "a/c/d", &err) == 0);
	CHECK(!exists(store_root, "a/c"));
	CHECK(exists(store_root, "a"));
	CHECK(nv_filestore_delete(s, "out/res/x", &err) == 0);
	CHECK(!exists(store_root, "out/res") && exists(store_root, "out"));
	CHECK(nv_filestore_delete(s, "a/c/d", &err) == NV_ENOTFOUND);
	CHECK(nv_filestore_delete(s, "a.txt", &err) == 0);
	CHECK(nv_filestore_delete(s, "a/b", &err) == 0);
	CHECK(!exists(store_root, "a"));
	CHECK(exists(store_root, ".navette-store"));
	CHECK(nv_filestore_head(s, "a/b", &info, &err) == NV_ENOTFOUND);
	unlink(link);
	nv_filestore_free(s);
}

static int count_key(const nv_object_info *info, void *payload)
{
	(void)info;
	(*(int *)payload)++;
	return 0;
}

/* What core/fsname folds (the rules of a case-insensitive volume). */
static void test_fold(void)
{
	char out[64];

	CHECK(nv_fsname_equal("README", 6, "readme", 6));
	CHECK(!nv_fsname_equal("README", 6, "readme2", 7));
	/* e-acute precomposed (NFC), decomposed (NFD), and in capitals */
	CHECK(nv_fsname_equal("caf\xc3\xa9", 5, "cafe\xcc\x81", 6));
	CHECK(nv_fsname_equal("CAF\xc3\x89", 5, "cafe\xcc\x81", 6));
	/* Latin Extended-A: S-caron both ways, and L-stroke's case */
	CHECK(nv_fsname_equal("\xc5\xa0", 2, "s\xcc\x8c", 3));
	CHECK(nv_fsname_equal("\xc5\x81", 2, "\xc5\x82", 2));
	CHECK(!nv_fsname_equal("caf\xc3\xa9", 5, "cafe", 4));
	CHECK(nv_fsname_fold("A\xc3\x80", 3, out, sizeof(out)) == 4);
	CHECK(memcmp(out, "aa\xcc\x80", 5) == 0);
	CHECK(nv_fsname_fold("ABCDEF", 6, out, 4) == (size_t)-1);
	CHECK(nv_fsname_is_reserved("NAVETTE.LOG", 11, "navette.log"));
	CHECK(nv_fsname_is_reserved("navette.log. ", 13, "navette.log"));
	CHECK(!nv_fsname_is_reserved("navette.logs", 12, "navette.log"));
}

/* Keys that a case-insensitive volume takes for one file are refused on
 * such a volume (forced here on any system by the switch), naming both. */
static void test_case_insensitive(void)
{
	char p[700];
	nv_filestore *s = NULL;
	nv_object_info info;
	nv_err err;
	int n = 0;

	setenv(NV_FSNAME_ENV, "1", 1);
	path_in(p, sizeof(p), base, "folding");
	CHECK(nv_filestore_open(&s, p, 1, &err) == 0);
	unsetenv(NV_FSNAME_ENV);
	if (!s)
		return;
	CHECK(nv_filestore_put_bytes(s, "proj/README", "a", 1, &info, &err) ==
	      0);
	CHECK(nv_filestore_put_bytes(s, "proj/readme", "b", 1, &info, &err) ==
	      NV_EREFUSED);
	CHECK(strstr(err.message, "proj/readme") &&
	      strstr(err.message, "proj/README") &&
	      strstr(err.message, "share one file"));
	CHECK(err.hint[0] != '\0');
	/* a folder on the path collides too */
	CHECK(nv_filestore_put_bytes(s, "PROJ/other", "c", 1, &info, &err) ==
	      NV_EREFUSED);
	CHECK(strstr(err.message, "'proj/...'") != NULL);
	/* the same key again is a plain replacement */
	CHECK(nv_filestore_put_bytes(s, "proj/README", "d", 1, &info, &err) ==
	      0);
	/* NFC then NFD of the same name */
	CHECK(nv_filestore_put_bytes(s, "proj/caf\xc3\xa9", "e", 1, &info,
				     &err) == 0);
	CHECK(nv_filestore_put_bytes(s, "proj/cafe\xcc\x81", "f", 1, &info,
				     &err) == NV_EREFUSED);
	CHECK(nv_filestore_copy(s, "proj/README", "proj/Readme", &info, &err) ==
	      NV_EREFUSED);
	/* nothing was written by the refusals */
	CHECK(nv_filestore_list(s, "", NULL, 0, count_key, &n, NULL, &err) ==
	      0);
	CHECK(n == 2);
	CHECK(!exists(p, "PROJ") && !exists(p, "proj/readme") &&
	      !exists(p, "proj/cafe\xcc\x81"));
	nv_filestore_free(s);

	/* without the switch, a volume that tells case apart (Linux's)
	 * keeps the two apart */
	{
		int fd = open(p, O_RDONLY | O_DIRECTORY);
		int folds = fd >= 0 &&
			    nv_fsname_volume_of(fd) != NV_FSNAME_SENSITIVE;
		if (fd >= 0)
			close(fd);
		if (folds)
			return;
	}
	CHECK(nv_filestore_open(&s, p, 0, &err) == 0);
	if (!s)
		return;
	CHECK(nv_filestore_put_bytes(s, "proj/readme", "b", 1, &info, &err) ==
	      0);
	nv_filestore_free(s);
}

static void test_open(void)
{
	char p[700];
	nv_filestore *s = NULL;
	nv_err err;

	path_in(p, sizeof(p), base, "plain");
	CHECK(mkdir(p, 0700) == 0);
	CHECK(nv_filestore_open(&s, p, 0, &err) == NV_ENOTFOUND);
	CHECK(s == NULL && strstr(err.message, "not a navette store") != NULL);
	path_in(p, sizeof(p), base, "does/not/exist");
	CHECK(nv_filestore_open(&s, p, 0, &err) == NV_ENOTFOUND);
	CHECK(nv_filestore_open(&s, p, 1, &err) == 0);
	CHECK(s && exists(p, ".navette-store"));
	nv_filestore_free(s);
	nv_filestore_free(NULL);
}

/* A job's prefix is built in C: the id's grammar and the key rules */
static void test_job_prefix(void)
{
	static char longid[100];
	const char *const bad[] = {
		"..",   "../../victim",  "/",    "/tmp/abs", "",
		"-rf",  "caf\xc3\xa9-1", "a\nb", "a/b",      "A-1",
		"p-1-", longid,          NULL};
	char out[NV_FILESTORE_KEY_MAX + 1];
	nv_err err;

	CHECK(nv_filestore_job_prefix(out, sizeof(out), "{project}/{id}/", "p",
				      "p-1-abc", &err) == 0);
	CHECK_STR(out, "p/p-1-abc/");
	CHECK(nv_filestore_job_prefix(out, sizeof(out),
				      "r/{id}/{id}-x/{project}", "p", "ab",
				      &err) == 0);
	CHECK_STR(out, "r/ab/ab-x/p");
	memset(longid, 'a', sizeof(longid) - 1);
	for (int i = 0; bad[i]; i++) {
		nv_err_clear(&err);
		CHECK(nv_filestore_job_prefix(out, sizeof(out),
					      "{project}/{id}/", "p", bad[i],
					      &err) == NV_EINVAL);
		CHECK(strstr(err.message, "job id") != NULL);
	}
	/* a project of two segments, a template that climbs out, one too
	 * long for a key */
	CHECK(nv_filestore_job_prefix(out, sizeof(out), "{project}/{id}/",
				      "a/b", "p-1", &err) == NV_EINVAL);
	CHECK(nv_filestore_job_prefix(out, sizeof(out), "../{id}/", "p", "p-1",
				      &err) == NV_EINVAL);
	CHECK(nv_filestore_job_prefix(out, sizeof(out), "/{id}/", "p", "p-1",
				      &err) == NV_EINVAL);
	CHECK(nv_filestore_job_prefix(out, 8, "{project}/{id}/", "p",
				      "p-1-abcdef", &err) == NV_EINVAL);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	char real[4096];
	nv_filestore *s = NULL;
	nv_err err;

	snprintf(base, sizeof(base), "%s/nv-filestore-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(base)) {
		perror("mkdtemp");
		return 1;
	}
	/* the store path must be symlink-free for string comparisons */
	if (!realpath(base, real) || strlen(real) + 16 > sizeof(base)) {
		perror("realpath");
		return 1;
	}
	memcpy(base, real, strlen(real) + 1);
	path_in(root, sizeof(root), base, "store");

	test_sha256();
	test_keys();
	test_job_prefix();
	test_open();
	CHECK(nv_filestore_open(&s, root, 1, &err) == 0);
	if (s) {
		CHECK_STR(nv_filestore_root(s), root);
		test_find(s);
		test_put_get(s);
		test_corrupt(s);
		test_symlink(s);
		nv_filestore_free(s);
	}
	test_list();
	test_fold();
	test_case_insensitive();

	nftw(base, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	return nv_test_done();
}
