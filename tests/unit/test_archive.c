/* Unit tests of host/git/archive.c against real repositories built with the
 * git command in a temporary folder, with tar, gzip, Python's tarfile and
 * `shasum -a 256` (all on macOS too) as the independent readers: the same
 * commit gives the same bytes twice and in a clone (packed objects), the
 * listing shows uid/gid 0, the commit time and git's modes in sorted order,
 * extraction gives the tree's files, long names go through pax headers,
 * prefixes add their folders, the gzip header carries nothing of the machine,
 * and unsafe trees (symlinks leaving the tree, directly or through another
 * symlink, absolute targets) are refused before a byte is written. */
#include "git/archive.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nv_test.h"
#include "nv_test_sh.h"

static char tmp[256];

/* Lists a tar.gz as "mode uid/gid size date time name[ -> target]", the
 * time in UTC, a folder's name ending in '/'. */
#define TAR_LISTING                                                            \
	"import stat, sys, tarfile, time\n"                                    \
	"for m in tarfile.open(sys.argv[1]):\n"                                \
	"    kind = stat.S_IFDIR if m.isdir() else stat.S_IFLNK if "           \
	"m.issym() else stat.S_IFREG\n"                                        \
	"    when = time.strftime(\"%Y-%m-%d %H:%M:%S\", "                     \
	"time.gmtime(m.mtime))\n"                                              \
	"    name = m.name + (\"/\" if m.isdir() else \"\")\n"                 \
	"    if m.issym(): name += \" -> \" + m.linkname\n"                    \
	"    print(stat.filemode(kind | m.mode), \"%d/%d\" % (m.uid, "         \
	"m.gid), m.size, when, name)\n"

/* 200 characters of path, to force pax headers (ustar keeps 100). */
#define LONG_DIR                                                               \
	"a-folder-with-a-rather-long-name-to-go-past-the-ustar-limit-of-"      \
	"one-hundred"
#define LONG_FILE                                                              \
	"and-a-file-whose-name-is-long-too-so-that-the-whole-path-is-well-"    \
	"over-a-hundred-bytes.txt"

static void first_line(char *s)
{
	s[strcspn(s, "\n")] = '\0';
}

struct counter {
	size_t calls, bytes;
	int fail_after; /* > 0: fail on that call */
};

static int count_write(void *payload, const void *data, size_t len)
{
	struct counter *c = payload;

	(void)data;
	c->calls++;
	c->bytes += len;
	return c->fail_after > 0 && (int)c->calls >= c->fail_after ? -1 : 0;
}

static int make_repo(const char *r, char head[NV_GIT_OID_HEX_LEN + 1])
{
	char buf[256];

	if (sh("git init -q -b main '%s' && cd '%s' && "
	       "mkdir -p bin a/b/c '" LONG_DIR "' && "
	       "printf 'hello\\n' > README && "
	       "printf '#!/bin/sh\\necho run\\n' > bin/run.sh && "
	       "chmod 755 bin/run.sh && printf 'deep\\n' > a/b/c/deep.txt && "
	       "printf 'dash\\n' > a-b && "
	       "ln -s b/c/deep.txt a/ln && ln -s ../README a/b/up && "
	       "printf 'long\\n' > '" LONG_DIR "/" LONG_FILE "' && "
	       "ln -s '" LONG_DIR "/" LONG_FILE "' longlink && "
	       "dd if=/dev/urandom of=a/blob.bin bs=1024 count=300 "
	       "2>/dev/null && git add -A && git commit -qm first",
	       r, r))
		return -1;
	if (sh_out(buf, sizeof(buf), "git -C '%s' rev-parse HEAD", r))
		return -1;
	first_line(buf);
	if (strlen(buf) != NV_GIT_OID_HEX_LEN)
		return -1;
	memcpy(head, buf, NV_GIT_OID_HEX_LEN + 1);
	return 0;
}

static int files_equal(const char *a, const char *b)
{
	return sh("cmp -s '%s' '%s'", a, b) == 0;
}

static void test_archive(void)
{
	char r[PATH_MAX], clone[PATH_MAX], head[NV_GIT_OID_HEX_LEN + 1];
	char f1[PATH_MAX], f2[PATH_MAX], f3[PATH_MAX], out[16384], *line;
	nv_archive_result res1, res2, res3;
	nv_archive_opts opts = {NULL, 1, 0};
	nv_git_repo *repo = NULL;
	nv_err err;
	int n;

	snprintf(r, sizeof(r), "%s/work", tmp);
	CHECK(make_repo(r, head) == 0);
	CHECK(nv_git_open(&repo, r, &err) == 0);
	if (!repo)
		return;
	snprintf(f1, sizeof(f1), "%s/one.tar.gz", tmp);
	snprintf(f2, sizeof(f2), "%s/two.tar.gz", tmp);
	CHECK(nv_archive_commit_file(repo, head, &opts, f1, &res1, &err) == 0);
	if (err.code)
		fprintf(stderr, "archive: %s\n", err.message);
	CHECK(nv_archive_commit_file(repo, head, &opts, f2, &res2, &err) == 0);

	/* Twice: the same bytes, the same digests. */
	CHECK(files_equal(f1, f2));
	CHECK_STR(res1.sha256, res2.sha256);
	CHECK_STR(res1.tar_sha256, res2.tar_sha256);
	CHECK(strcmp(res1.sha256, res1.tar_sha256) != 0);
	CHECK(res1.mtime == 1700000000);
	CHECK(res1.files == 6);
	CHECK(res1.symlinks == 3);
	CHECK(res1.dirs == 5); /* a/ a/b/ a/b/c/ bin/ LONG_DIR/ */
	CHECK(res1.submodules == 0);
	CHECK(res1.file_bytes == 6 + 19 + 5 + 5 + 5 + 300 * 1024);

	/* The digests are those of the bytes, by independent tools. */
	CHECK(sh_out(out, sizeof(out), "shasum -a 256 '%s'", f1) == 0);
	CHECK(strncmp(out, res1.sha256, 64) == 0);
	CHECK(sh_out(out, sizeof(out), "gzip -dc '%s' | shasum -a 256", f1) ==
	      0);
	CHECK(strncmp(out, res1.tar_sha256, 64) == 0);
	CHECK(sh_out(out, sizeof(out), "gzip -dc '%s' | wc -c", f1) == 0);
	CHECK((uint64_t)strtoull(out, NULL, 10) == res1.tar_size);
	CHECK(sh_out(out, sizeof(out), "wc -c < '%s'", f1) == 0);
	CHECK((uint64_t)strtoull(out, NULL, 10) == res1.size);
	CHECK(res1.tar_size % 512 == 0);

	/* gzip header: no name (FLG 0), MTIME 0, OS 3. */
	CHECK(sh_out(out, sizeof(out),
		     "head -c 10 '%s' | od -An -tx1 | tr -d ' \\n'", f1) == 0);
	CHECK(strncmp(out, "1f8b0800000000000", 17) == 0);
	CHECK(strlen(out) == 20 && strcmp(out + 18, "03") == 0);

	/* The listing: sorted names, uid/gid 0, commit time, git's modes.
	 * Python's tarfile writes it as GNU tar's `-tv --full-time` would:
	 * BSD tar (macOS) has no --full-time. */
	CHECK(sh_out(out, sizeof(out), "python3 -c '%s' '%s'", TAR_LISTING,
		     f1) == 0);
	{
		const char *want[] = {
			"-rw-r--r-- 0/0 6 2023-11-14 22:13:20 README",
			"-rw-r--r-- 0/0 5 2023-11-14 22:13:20 a-b",
			"drwxr-xr-x 0/0 0 2023-11-14 22:13:20 " LONG_DIR "/",
			"-rw-r--r-- 0/0 5 2023-11-14 22:13:20 " LONG_DIR
			"/" LONG_FILE,
			"drwxr-xr-x 0/0 0 2023-11-14 22:13:20 a/",
			"drwxr-xr-x 0/0 0 2023-11-14 22:13:20 a/b/",
			"drwxr-xr-x 0/0 0 2023-11-14 22:13:20 a/b/c/",
			"-rw-r--r-- 0/0 5 2023-11-14 22:13:20 a/b/c/deep.txt",
			"lrwxrwxrwx 0/0 0 2023-11-14 22:13:20 a/b/up -> "
			"../README",
			"-rw-r--r-- 0/0 307200 2023-11-14 22:13:20 a/blob.bin",
			"lrwxrwxrwx 0/0 0 2023-11-14 22:13:20 a/ln -> "
			"b/c/deep.txt",
			"drwxr-xr-x 0/0 0 2023-11-14 22:13:20 bin/",
			"-rwxr-xr-x 0/0 19 2023-11-14 22:13:20 bin/run.sh",
			"lrwxrwxrwx 0/0 0 2023-11-14 22:13:20 longlink "
			"-> " LONG_DIR "/" LONG_FILE,
		};

		size_t i = 0, nwant = sizeof(want) / sizeof(want[0]);
		char *save = NULL;

		for (line = strtok_r(out, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save), i++) {
			char norm[1024], *d = norm;
			const char *s = line;
			int space = 0;

			/* squeeze runs of blanks (tar aligns columns) */
			for (; *s && d < norm + sizeof(norm) - 1; s++) {
				if (*s == ' ') {
					if (space)
						continue;
					space = 1;
				} else {
					space = 0;
				}
				*d++ = *s;
			}
			*d = '\0';
			if (i < nwant)
				CHECK_STR(norm, want[i]);
		}
		CHECK(i == nwant);
	}

	/* Extracting gives the tree's files, modes and links. */
	CHECK(sh("mkdir -p '%s/x' && tar -xzf '%s' -C '%s/x' && "
		 "diff -r --no-dereference -x .git '%s' '%s/x'",
		 tmp, f1, tmp, r, tmp) == 0);
	CHECK(sh("test -x '%s/x/bin/run.sh' && test ! -x '%s/x/README' && "
		 "test \"$(readlink '%s/x/a/ln')\" = b/c/deep.txt",
		 tmp, tmp, tmp) == 0);

	/* The same commit in a clone (objects now packed): the same bytes. */
	snprintf(clone, sizeof(clone), "%s/clone", tmp);
	CHECK(sh("git clone -q --no-local '%s' '%s' && test -n \"$(ls "
		 "'%s/.git/objects/pack/'*.pack)\"",
		 r, clone, clone) == 0);
	{
		nv_git_repo *c = NULL;

		CHECK(nv_git_open(&c, clone, &err) == 0);
		snprintf(f3, sizeof(f3), "%s/three.tar.gz", tmp);
		if (c) {
			CHECK(nv_archive_commit_file(c, head, &opts, f3, &res3,
						     &err) == 0);
			nv_git_free(c);
		}
		CHECK(files_equal(f1, f3));
		CHECK_STR(res3.sha256, res1.sha256);
	}

	/* Uncompressed: one digest, and tar reads it. */
	opts.gzip = 0;
	CHECK(nv_archive_commit_file(repo, head, &opts, f3, &res3, &err) == 0);
	CHECK_STR(res3.sha256, res3.tar_sha256);
	CHECK_STR(res3.tar_sha256, res1.tar_sha256);
	CHECK(res3.size == res1.tar_size);
	CHECK(sh("tar -tf '%s' >/dev/null", f3) == 0);

	/* A prefix: its folders first, then the tree below it. */
	opts.prefix = "/opt//app/";
	n = nv_archive_commit_file(repo, head, &opts, f3, &res3, &err);
	CHECK(n == 0);
	CHECK(sh_out(out, sizeof(out), "tar -tf '%s' | head -n 4", f3) == 0);
	CHECK_STR(out, "opt/\nopt/app/\nopt/app/README\nopt/app/a-b\n");
	CHECK(res3.dirs == 7);
	opts.prefix = "workspace";
	CHECK(nv_archive_commit_file(repo, head, &opts, f3, &res3, &err) == 0);
	CHECK(sh_out(out, sizeof(out), "tar -tf '%s' | head -n 1", f3) == 0);
	CHECK_STR(out, "workspace/\n");
	CHECK(sh("mkdir -p '%s/y' && tar -xf '%s' -C '%s/y' && "
		 "diff -r --no-dereference -x .git '%s' '%s/y/workspace'",
		 tmp, f3, tmp, r, tmp) == 0);
	opts.prefix = "a/../b";
	CHECK(nv_archive_commit_file(repo, head, &opts, f3, &res3, &err) ==
	      NV_EINVAL);
	CHECK(strstr(err.message, "a/../b") != NULL);

	/* A failing writer stops the archive with NV_EIO. */
	{
		struct counter c = {0, 0, 2};

		opts.prefix = NULL;
		CHECK(nv_archive_commit(repo, head, &opts, count_write, &c,
					NULL, &err) == NV_EIO);
		CHECK(c.calls == 2);
	}

	/* Bad ids. */
	CHECK(nv_archive_commit_file(repo, "1234", &opts, f3, NULL, &err) ==
	      NV_EINVAL);
	CHECK(nv_archive_commit_file(repo,
				     "0123456789012345678901234567890123456789",
				     &opts, f3, NULL, &err) == NV_ENOTFOUND);
	nv_git_free(repo);
}

/* Commits one tree change in r and archives it; the writer must never be
 * called for a refused tree. Returns the archive's code. */
static int archive_after(const char *r, const char *change, nv_err *err,
			 struct counter *c)
{
	char head[64];
	nv_git_repo *repo = NULL;
	nv_archive_opts opts = {"workspace", 1, 0};
	int rc;

	if (sh("cd '%s' && %s && git add -A && git commit -qm change", r,
	       change))
		return 99;
	if (sh_out(head, sizeof(head), "git -C '%s' rev-parse HEAD", r))
		return 99;
	first_line(head);
	if (nv_git_open(&repo, r, err))
		return 99;
	memset(c, 0, sizeof(*c));
	rc = nv_archive_commit(repo, head, &opts, count_write, c, NULL, err);
	nv_git_free(repo);
	return rc;
}

static void test_refusals(void)
{
	char r[PATH_MAX];
	struct counter c;
	nv_err err;

	snprintf(r, sizeof(r), "%s/hostile", tmp);
	CHECK(sh("git init -q -b main '%s' && cd '%s' && mkdir -p d/e && "
		 "printf x > d/e/f && git add -A && git commit -qm base",
		 r, r) == 0);

	/* Inside the tree: fine, including ".." that comes back in. */
	CHECK(archive_after(r, "ln -s ../d/e/f d/in && ln -s e/../../d d/e/g",
			    &err, &c) == 0);
	CHECK(c.bytes > 0);

	CHECK(archive_after(r, "ln -s ../../etc/passwd d/out", &err, &c) ==
	      NV_EREFUSED);
	CHECK(strstr(err.message, "'d/out'") != NULL);
	CHECK(strstr(err.message, "outside the tree") != NULL);
	CHECK(c.calls == 0);

	CHECK(archive_after(r, "rm d/out && ln -s /etc/passwd abs", &err, &c) ==
	      NV_EREFUSED);
	CHECK(strstr(err.message, "'abs'") != NULL);
	CHECK(strstr(err.message, "absolute") != NULL);
	CHECK(c.calls == 0);

	/* Lexically inside, but through an in-tree link that climbs out:
	 * d/up is the root, so d/up/.. is the tree's parent. */
	CHECK(archive_after(r, "rm abs && ln -s .. d/up && ln -s d/up/.. sneak",
			    &err, &c) == NV_EREFUSED);
	CHECK(strstr(err.message, "'sneak'") != NULL);
	CHECK(c.calls == 0);

	/* A loop of links is refused rather than followed forever. */
	CHECK(archive_after(r, "rm sneak && ln -s l2/x l1 && ln -s l1/x l2",
			    &err, &c) == NV_EREFUSED);
	CHECK(strstr(err.message, "symlinks") != NULL);

	/* A gitlink is skipped and counted. */
	{
		char head[64];
		nv_archive_result res;
		nv_git_repo *repo = NULL;

		CHECK(sh("cd '%s' && rm l1 l2 && git add -A && "
			 "git update-index --add --cacheinfo "
			 "160000,0123456789012345678901234567890123456789,sub "
			 "&& git commit -qm gitlink",
			 r) == 0);
		CHECK(sh_out(head, sizeof(head), "git -C '%s' rev-parse HEAD",
			     r) == 0);
		first_line(head);
		CHECK(nv_git_open(&repo, r, &err) == 0);
		if (repo) {
			memset(&c, 0, sizeof(c));
			CHECK(nv_archive_commit(repo, head, NULL, count_write,
						&c, &res, &err) == 0);
			CHECK(res.submodules == 1);
			nv_git_free(repo);
		}
	}
}

/* gzip on several cores: the same bytes whatever the thread count, and a
 * stream any gzip reads, over several blocks (with zlib, one member with a
 * dictionary across blocks; with libdeflate, a member per block). */
static void test_threads(void)
{
	char r[PATH_MAX], head[64], f1[PATH_MAX], f3[PATH_MAX], out[256];
	nv_archive_opts one = {NULL, 1, 1}, three = {NULL, 1, 3};
	nv_archive_result a, b;
	nv_git_repo *repo = NULL;
	nv_err err;

	snprintf(r, sizeof(r), "%s/threads", tmp);
	CHECK(sh("git init -q -b main '%s' && cd '%s' && seq 1 700000 > "
		 "counting.txt && head -c 1500000 /dev/urandom > noise.bin && "
		 "git add -A && git commit -qm big",
		 r, r) == 0);
	CHECK(sh_out(head, sizeof(head), "git -C '%s' rev-parse HEAD", r) == 0);
	first_line(head);
	CHECK(nv_git_open(&repo, r, &err) == 0);
	if (!repo)
		return;
	snprintf(f1, sizeof(f1), "%s/t1.tar.gz", tmp);
	snprintf(f3, sizeof(f3), "%s/t3.tar.gz", tmp);
	CHECK(nv_archive_commit_file(repo, head, &one, f1, &a, &err) == 0);
	CHECK(nv_archive_commit_file(repo, head, &three, f3, &b, &err) == 0);
	CHECK(a.tar_size > 5 * 1024 * 1024); /* more than five blocks */
	CHECK(files_equal(f1, f3));
	CHECK_STR(a.sha256, b.sha256);
	CHECK(sh("gzip -t '%s'", f3) == 0);
	CHECK(sh_out(out, sizeof(out), "gzip -dc '%s' | shasum -a 256", f3) ==
	      0);
	CHECK(strncmp(out, a.tar_sha256, 64) == 0);
	CHECK(sh("mkdir -p '%s/tx' && tar -xzf '%s' -C '%s/tx' && "
		 "cmp -s '%s/tx/counting.txt' '%s/counting.txt' && "
		 "cmp -s '%s/tx/noise.bin' '%s/noise.bin'",
		 tmp, f3, tmp, tmp, r, tmp, r) == 0);
	/* and a layer that compresses: smaller than its tar */
	CHECK(a.size < a.tar_size);
	nv_git_free(repo);
}

int main(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/nv-test-archive-XXXXXX");
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 2;
	}
	/* A clean, predictable git: no user or system configuration. */
	setenv("HOME", tmp, 1);
	setenv("XDG_CONFIG_HOME", tmp, 1);
	setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
	setenv("GIT_AUTHOR_NAME", "Navette Test", 1);
	setenv("GIT_AUTHOR_EMAIL", "test@navette.invalid", 1);
	setenv("GIT_COMMITTER_NAME", "Navette Test", 1);
	setenv("GIT_COMMITTER_EMAIL", "test@navette.invalid", 1);
	setenv("GIT_AUTHOR_DATE", "1700000000 +0100", 1);
	setenv("GIT_COMMITTER_DATE", "1700000000 +0100", 1);
	unsetenv("GIT_DIR");
	unsetenv("GIT_WORK_TREE");
	unsetenv("GIT_INDEX_FILE");
	umask(022);

	test_archive();
	test_refusals();
	test_threads();

	if (!getenv("NV_TEST_KEEP"))
		sh("rm -rf '%s'", tmp);
	return nv_test_done();
}
