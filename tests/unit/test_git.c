/* Unit tests of host/git/git.c against real repositories built with the git
 * command in a temporary folder (git's global and system configuration are
 * kept out, so the tests behave the same on a clean machine). Covers
 * discovery, resolution, status kinds, remote presence, URL scrubbing,
 * export (modes, symlinks, gitlinks, hostile trees), the lock-file hash and
 * the library cache (cache.c: fetch, kinds of refs, a moved tag, racing
 * fetches). */
#include "git/cache.h"
#include "git/git.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/fsname.h"
#include "nv_test.h"

static char tmp[256];

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static int
sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	rc = system(cmd);
	if (rc != 0)
		fprintf(stderr, "command failed (%d): %s\n", rc, cmd);
	return rc;
}

/* Captures the first line of a command's output into out. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int
sh_out(char *out, size_t cap, const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	FILE *p;
	int ok;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	out[0] = '\0';
	p = popen(cmd, "r");
	if (!p)
		return -1;
	ok = fgets(out, (int)cap, p) != NULL;
	pclose(p);
	out[strcspn(out, "\n")] = '\0';
	return ok ? 0 : -1;
}

static void write_file(const char *path, const char *content)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		perror(path);
		exit(2);
	}
	fputs(content, f);
	fclose(f);
}

static int read_file(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, cap - 1, f);
	buf[n] = '\0';
	fclose(f);
	return 0;
}

struct seen {
	size_t n;
	char path[16][128];
	char kind[16][16];
};

static int collect(const char *path, const char *kind, void *payload)
{
	struct seen *s = payload;

	if (s->n < 16) {
		snprintf(s->path[s->n], sizeof(s->path[0]), "%s", path);
		snprintf(s->kind[s->n], sizeof(s->kind[0]), "%s", kind);
	}
	s->n++;
	return 0;
}

static const char *kind_of(const struct seen *s, const char *path)
{
	size_t i;

	for (i = 0; i < s->n && i < 16; i++)
		if (strcmp(s->path[i], path) == 0)
			return s->kind[i];
	return NULL;
}

static void test_not_a_repo_and_unborn(void)
{
	char dir[PATH_MAX + 32], oid[NV_GIT_OID_HEX_LEN + 1];
	nv_git_repo *repo = NULL;
	nv_err err;

	snprintf(dir, sizeof(dir), "%s/plain", tmp);
	mkdir(dir, 0755);
	CHECK(nv_git_open(&repo, dir, &err) == NV_ENOTFOUND);
	CHECK(repo == NULL);
	CHECK(strstr(err.hint, "git init") != NULL);

	snprintf(dir, sizeof(dir), "%s/unborn", tmp);
	CHECK(sh("git init -q -b main '%s'", dir) == 0);
	CHECK(nv_git_open(&repo, dir, &err) == 0);
	if (!repo)
		return;
	CHECK(nv_git_resolve(repo, "HEAD", oid, &err) == NV_EREFUSED);
	CHECK(strstr(err.message, "no commit yet") != NULL);
	nv_git_free(repo);

	snprintf(dir, sizeof(dir), "%s/bare.git", tmp);
	CHECK(sh("git init -q --bare '%s'", dir) == 0);
	CHECK(nv_git_open(&repo, dir, &err) == NV_EREFUSED);
}

/* git rev-parse SPEC in repository r, into out (41 bytes) */
static int rev_parse(const char *r, const char *spec, char *out)
{
	char f[PATH_MAX + 16];

	snprintf(f, sizeof(f), "%s/rev", tmp);
	if (sh("git -C '%s' rev-parse '%s' > '%s'", r, spec, f) != 0 ||
	    read_file(f, out, NV_GIT_OID_HEX_LEN + 2) != 0)
		return -1;
	out[NV_GIT_OID_HEX_LEN] = '\0';
	return 0;
}

struct locks_seen {
	char text[1024];
};

static int add_lock(const char *path, const char *blob, void *payload)
{
	struct locks_seen *w = payload;
	size_t n = strlen(w->text);

	snprintf(w->text + n, sizeof(w->text) - n, "%s=%.7s;", path, blob);
	return 0;
}

static void test_path_ids(nv_git_repo *repo, const char *r)
{
	char head[NV_GIT_OID_HEX_LEN + 1], id[NV_GIT_OID_HEX_LEN + 1];
	char want[NV_GIT_OID_HEX_LEN + 2], expect[256];
	struct locks_seen seen = {""};
	char kind = 0;
	nv_err err;

	CHECK(sh("cd '%s' && mkdir -p svc/api && printf 'x==1\\n' > "
		 "svc/api/requirements-gpu.txt && printf 'lock' > "
		 "svc/uv.lock && printf 'no' > svc/api/lock.txt && "
		 "git add -A && git commit -qm locks",
		 r) == 0);
	CHECK(nv_git_resolve(repo, "HEAD", head, &err) == 0);
	CHECK(nv_git_path_id(repo, head, "", id, &kind, &err) == 0);
	CHECK(rev_parse(r, "HEAD^{tree}", want) == 0);
	CHECK_STR(id, want);
	CHECK(kind == 't');
	CHECK(nv_git_path_id(repo, head, "sub/dir/", id, &kind, &err) == 0);
	CHECK(rev_parse(r, "HEAD:sub/dir", want) == 0);
	CHECK_STR(id, want);
	CHECK(kind == 't');
	CHECK(nv_git_path_id(repo, head, "sub/dir/deep.txt", id, &kind, &err) ==
	      0);
	CHECK(rev_parse(r, "HEAD:sub/dir/deep.txt", want) == 0);
	CHECK_STR(id, want);
	CHECK(kind == 'b');
	CHECK(nv_git_path_id(repo, head, "sub/nope", id, &kind, &err) ==
	      NV_ENOTFOUND);
	CHECK(strstr(err.message, "sub/nope") != NULL);
	CHECK(nv_git_path_id(repo, head, "../x", id, &kind, &err) == NV_EINVAL);
	CHECK(nv_git_path_id(repo, head, "/etc", id, &kind, &err) == NV_EINVAL);
	CHECK(nv_git_path_id(repo, head, "sub/../a.txt", id, &kind, &err) ==
	      NV_EINVAL);

	/* the lock files in any folder, in the tree's order */
	CHECK(nv_git_lockfiles(repo, head, add_lock, &seen, &err) == 0);
	CHECK(rev_parse(r, "HEAD:package-lock.json", want) == 0);
	snprintf(expect, sizeof(expect), "package-lock.json=%.7s;", want);
	CHECK(rev_parse(r, "HEAD:svc/api/requirements-gpu.txt", want) == 0);
	snprintf(expect + strlen(expect), sizeof(expect) - strlen(expect),
		 "svc/api/requirements-gpu.txt=%.7s;", want);
	CHECK(rev_parse(r, "HEAD:svc/uv.lock", want) == 0);
	snprintf(expect + strlen(expect), sizeof(expect) - strlen(expect),
		 "svc/uv.lock=%.7s;", want);
	CHECK_STR(seen.text, expect);
}

static void test_repo(void)
{
	char r[PATH_MAX], p[PATH_MAX + 64], buf[512], real[PATH_MAX];
	char head[NV_GIT_OID_HEX_LEN + 1], first[NV_GIT_OID_HEX_LEN + 1];
	char oid[NV_GIT_OID_HEX_LEN + 1], shortsha[8];
	char h1[NV_GIT_SHA256_HEX + 1], h2[NV_GIT_SHA256_HEX + 1];
	char h3[NV_GIT_SHA256_HEX + 1];
	nv_git_export_stats st;
	nv_git_commit info;
	nv_git_repo *repo = NULL;
	struct seen seen;
	struct stat sb;
	size_t count = 99;
	int present = -1;
	nv_err err;
	ssize_t n;

	snprintf(r, sizeof(r), "%s/work", tmp);
	CHECK(sh("git init -q -b main '%s'", r) == 0);
	CHECK(sh("cd '%s' && mkdir -p sub/dir && printf 'alpha\\n' > a.txt && "
		 "printf '#!/bin/sh\\necho hi\\n' > run.sh && chmod 755 run.sh "
		 "&& printf deep > sub/dir/deep.txt && "
		 "ln -s ../../etc/passwd link && printf '*.log\\n' > "
		 ".gitignore && printf '{\"v\":1}' > package-lock.json && "
		 "git add -A && git commit -qm 'first commit' && "
		 "git tag -a v1 -m v1",
		 r) == 0);

	/* Discovery from a subfolder and from a file. */
	snprintf(p, sizeof(p), "%s/sub/dir", r);
	CHECK(nv_git_open(&repo, p, &err) == 0);
	if (!repo) {
		fprintf(stderr, "open: %s\n", err.message);
		return;
	}
	CHECK(realpath(r, real) != NULL);
	CHECK_STR(nv_git_workdir(repo), real);
	nv_git_free(repo);
	snprintf(p, sizeof(p), "%s/sub/dir/deep.txt", r);
	CHECK(nv_git_open(&repo, p, &err) == 0);
	if (!repo)
		return;

	/* Resolution. */
	CHECK(nv_git_resolve(repo, "HEAD", head, &err) == 0);
	CHECK(sh_out(buf, sizeof(buf), "git -C '%s' rev-parse HEAD", r) == 0);
	CHECK_STR(head, buf);
	CHECK(nv_git_resolve(repo, "v1", oid, &err) == 0);
	CHECK_STR(oid, head); /* annotated tag peeled to its commit */
	CHECK(nv_git_resolve(repo, "main", oid, &err) == 0);
	CHECK_STR(oid, head);
	memcpy(shortsha, head, 7);
	shortsha[7] = '\0';
	CHECK(nv_git_resolve(repo, shortsha, oid, &err) == 0);
	CHECK_STR(oid, head);
	CHECK(nv_git_resolve(repo, "no-such-branch", oid, &err) ==
	      NV_ENOTFOUND);
	CHECK(strstr(err.message, "no-such-branch") != NULL);
	memcpy(first, head, sizeof(first));

	CHECK(nv_git_commit_info(repo, head, &info, &err) == 0);
	CHECK_STR(info.id, head);
	CHECK_STR(info.short_id, shortsha);
	CHECK_STR(info.summary, "first commit");
	CHECK_STR(info.author_name, "Navette Test");
	CHECK_STR(info.author_email, "test@navette.invalid");
	CHECK(info.time == 1700000000);
	CHECK(info.tz_offset_min == 60);
	CHECK(nv_git_commit_info(repo, "HEAD", &info, &err) == NV_EINVAL);

	/* Status: an ignored file keeps the tree clean. */
	snprintf(p, sizeof(p), "%s/debug.log", r);
	write_file(p, "noise");
	memset(&seen, 0, sizeof(seen));
	CHECK(nv_git_status(repo, collect, &seen, &count, &err) == 0);
	CHECK(count == 0);
	CHECK(seen.n == 0);

	CHECK(sh("cd '%s' && printf changed > a.txt && printf b > b.txt && "
		 "git add b.txt && mkdir -p new/deeper && printf u > "
		 "new/deeper/u.txt && rm run.sh",
		 r) == 0);
	memset(&seen, 0, sizeof(seen));
	CHECK(nv_git_status(repo, collect, &seen, &count, &err) == 0);
	CHECK(count == 4);
	CHECK_STR(kind_of(&seen, "a.txt"), "modified");
	CHECK_STR(kind_of(&seen, "b.txt"), "staged");
	CHECK_STR(kind_of(&seen, "new/deeper/u.txt"), "untracked");
	CHECK_STR(kind_of(&seen, "run.sh"), "deleted");
	CHECK(kind_of(&seen, "debug.log") == NULL);
	CHECK(sh("cd '%s' && git reset -q --hard && git clean -qfd", r) == 0);
	CHECK(nv_git_status(repo, NULL, NULL, &count, &err) == 0);
	CHECK(count == 0);

	/* Export: content, modes, symlinks kept as links. */
	snprintf(p, sizeof(p), "%s/out/x/y", tmp);
	CHECK(nv_git_export(repo, head, p, &st, &err) == 0);
	CHECK(st.files == 5); /* a.txt run.sh deep.txt .gitignore lock */
	CHECK(st.dirs == 2);
	CHECK(st.symlinks == 1);
	CHECK(st.submodules == 0);
	CHECK(st.bytes == 6 + 18 + 4 + 6 + 7);
	snprintf(p, sizeof(p), "%s/out/x/y/sub/dir/deep.txt", tmp);
	CHECK(read_file(p, buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "deep");
	snprintf(p, sizeof(p), "%s/out/x/y/run.sh", tmp);
	CHECK(stat(p, &sb) == 0 && (sb.st_mode & 0777) == 0755);
	snprintf(p, sizeof(p), "%s/out/x/y/a.txt", tmp);
	CHECK(stat(p, &sb) == 0 && (sb.st_mode & 0777) == 0644);
	snprintf(p, sizeof(p), "%s/out/x/y/link", tmp);
	CHECK(lstat(p, &sb) == 0 && S_ISLNK(sb.st_mode));
	n = readlink(p, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	CHECK_STR(buf, "../../etc/passwd");
	snprintf(p, sizeof(p), "%s/out/x/y", tmp);
	CHECK(nv_git_export(repo, head, p, &st, &err) == NV_EREFUSED);
	CHECK(strstr(err.message, "not empty") != NULL);
	snprintf(p, sizeof(p), "%s/out/empty", tmp);
	mkdir(p, 0700);
	CHECK(nv_git_export(repo, head, p, &st, &err) == 0);
	CHECK(st.files == 5);

	/* Lock-file hash follows package-lock.json only. */
	CHECK(nv_git_lockfile_hash(repo, head, h1, &err) == 0);
	CHECK(strlen(h1) == 64);
	CHECK(sh("cd '%s' && printf other > a.txt && git commit -qam two", r) ==
	      0);
	CHECK(nv_git_resolve(repo, "HEAD", head, &err) == 0);
	CHECK(nv_git_lockfile_hash(repo, head, h2, &err) == 0);
	CHECK_STR(h2, h1);
	CHECK(sh("cd '%s' && printf '{\"v\":2}' > package-lock.json && "
		 "git commit -qam three",
		 r) == 0);
	CHECK(nv_git_resolve(repo, "HEAD", head, &err) == 0);
	CHECK(nv_git_lockfile_hash(repo, head, h3, &err) == 0);
	CHECK(strcmp(h3, h1) != 0);

	/* Remote presence and URLs. */
	CHECK(sh("git -C '%s' remote add origin "
		 "https://user:secret@host/x.git",
		 r) == 0);
	CHECK(nv_git_on_remote(repo, NULL, head, &present, &err) == 0);
	CHECK(present == 0);
	CHECK(nv_git_on_remote(repo, "upstream", head, &present, &err) ==
	      NV_ENOTFOUND);
	CHECK(strstr(err.message, "origin") != NULL);
	CHECK(sh("git -C '%s' update-ref refs/remotes/origin/main HEAD", r) ==
	      0);
	present = -1;
	CHECK(nv_git_on_remote(repo, "origin", head, &present, &err) == 0);
	CHECK(present == 1);
	present = -1;
	CHECK(nv_git_on_remote(repo, NULL, first, &present, &err) == 0);
	CHECK(present == 1); /* an ancestor of the pushed tip */

	/* What a commit holds at a path, by id, as git names it. */
	test_path_ids(repo, r);
	CHECK(sh("cd '%s' && git commit -q --allow-empty -m four", r) == 0);
	CHECK(nv_git_resolve(repo, "HEAD", head, &err) == 0);
	present = -1;
	CHECK(nv_git_on_remote(repo, NULL, head, &present, &err) == 0);
	CHECK(present == 0);
	CHECK(nv_git_remote_url(repo, NULL, buf, sizeof(buf), &err) == 0);
	CHECK_STR(buf, "https://host/x.git");
	CHECK(nv_git_remote_url(repo, "nope", buf, sizeof(buf), &err) ==
	      NV_ENOTFOUND);
	CHECK(nv_git_remote_url(repo, NULL, buf, 8, &err) == NV_ENOMEM);

	/* A gitlink is skipped and counted. */
	CHECK(sh("cd '%s' && git update-index --add --cacheinfo "
		 "160000,%s,vendor/mod && git commit -qm gitlink",
		 r, first) == 0);
	CHECK(nv_git_resolve(repo, "HEAD", head, &err) == 0);
	snprintf(p, sizeof(p), "%s/out/withmod", tmp);
	CHECK(nv_git_export(repo, head, p, &st, &err) == 0);
	CHECK(st.submodules == 1);
	snprintf(p, sizeof(p), "%s/out/withmod/vendor/mod", tmp);
	CHECK(lstat(p, &sb) < 0 && errno == ENOENT);

	/* Packed objects (after gc) cannot be streamed: same bytes anyway. */
	CHECK(sh("git -C '%s' gc -q", r) == 0);
	snprintf(p, sizeof(p), "%s/out/packed", tmp);
	CHECK(nv_git_export(repo, head, p, &st, &err) == 0);
	snprintf(p, sizeof(p), "%s/out/packed/a.txt", tmp);
	CHECK(read_file(p, buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "other");
	snprintf(p, sizeof(p), "%s/out/packed/run.sh", tmp);
	CHECK(stat(p, &sb) == 0 && (sb.st_mode & 0777) == 0755);

	nv_git_free(repo);
}

/* Trees git itself would never check out, built with git mktree. */
static void test_hostile_trees(void)
{
	char r[PATH_MAX], p[PATH_MAX + 64], oid[64], outside[PATH_MAX + 32];
	nv_git_repo *repo = NULL;
	nv_git_export_stats st;
	struct stat sb;
	nv_err err;

	snprintf(r, sizeof(r), "%s/hostile", tmp);
	snprintf(outside, sizeof(outside), "%s/outside", tmp);
	mkdir(outside, 0755);
	CHECK(sh("git init -q -b main '%s'", r) == 0);
	CHECK(nv_git_open(&repo, r, &err) == 0);
	if (!repo)
		return;

	/* A symlink "evil" -> outside, then a folder "evil" with a file: the
	 * file must never land in outside/. */
	CHECK(sh_out(oid, sizeof(oid),
		     "cd '%s' && b=$(echo hi | git hash-object -w --stdin) && "
		     "l=$(printf '%s' | git hash-object -w --stdin) && "
		     "t=$(printf '100644 blob %%s\\tpwned\\n' $b | git mktree) "
		     "&& t2=$(printf '100644 blob %%s\\tok\\n120000 blob "
		     "%%s\\tevil\\n040000 tree %%s\\tevil\\n' $b $l $t | "
		     "git mktree) && git commit-tree $t2 -m evil",
		     r, outside) == 0);
	snprintf(p, sizeof(p), "%s/out-evil", tmp);
	CHECK(nv_git_export(repo, oid, p, &st, &err) < 0);
	snprintf(p, sizeof(p), "%s/pwned", outside);
	CHECK(lstat(p, &sb) < 0);
	snprintf(p, sizeof(p), "%s/out-evil", tmp);
	CHECK(lstat(p, &sb) < 0); /* created by the call, so removed */

	CHECK(sh_out(oid, sizeof(oid),
		     "cd '%s' && b=$(echo hi | git hash-object -w --stdin) && "
		     "t=$(printf '100644 blob %%s\\t..\\n' $b | git mktree) "
		     "&& git commit-tree $t -m dots",
		     r) == 0);
	snprintf(p, sizeof(p), "%s/out-dots", tmp);
	mkdir(p, 0755);
	CHECK(nv_git_export(repo, oid, p, &st, &err) == NV_EREFUSED);
	CHECK(lstat(p, &sb) == 0); /* existed before: kept, left empty */

	CHECK(sh_out(oid, sizeof(oid),
		     "cd '%s' && b=$(echo hi | git hash-object -w --stdin) && "
		     "t=$(printf '100644 blob %%s\\t.GIT\\n' $b | git mktree) "
		     "&& git commit-tree $t -m dotgit",
		     r) == 0);
	snprintf(p, sizeof(p), "%s/out-dotgit", tmp);
	CHECK(nv_git_export(repo, oid, p, &st, &err) == NV_EREFUSED);

	/* No lock file at all: the hash of empty input. */
	CHECK(nv_git_lockfile_hash(repo, oid, p, &err) == 0);
	CHECK_STR(p, "e3b0c44298fc1c149afbf4c8996fb924"
		     "27ae41e4649b934ca495991b7852b855");
	nv_git_free(repo);
}

/* Names that differ only in case or NFC/NFD form, exported to a volume
 * that folds names (forced by the switch on any system): refused before
 * anything is written, the pairs listed. Then paths longer than macOS's
 * PATH_MAX (1024) export, and the project limit (4096) holds. */
static void test_case_and_long_paths(void)
{
	char r[PATH_MAX], p[PATH_MAX + 64], oid[64], name[256];
	char deep[PATH_MAX], oid_deep[64], oid_over[64];
	nv_git_repo *repo = NULL;
	nv_git_export_stats st;
	struct stat sb;
	nv_err err;

	snprintf(r, sizeof(r), "%s/cases", tmp);
	CHECK(sh("git init -q -b main '%s'", r) == 0);
	CHECK(nv_git_open(&repo, r, &err) == 0);
	if (!repo)
		return;
	CHECK(sh_out(oid, sizeof(oid),
		     "cd '%s' && b=$(echo hi | git hash-object -w --stdin) && "
		     "s=$(printf '100644 blob %%s\tcaf\303\251\n100644 blob "
		     "%%s\tcafe\314\201\n' $b $b | git mktree) && "
		     "t=$(printf '100644 blob %%s\tREADME\n100644 blob "
		     "%%s\treadme\n040000 tree %%s\tsub\n' $b $b $s | "
		     "git mktree) && git commit-tree $t -m cases",
		     r) == 0);
	setenv("NAVETTE_FS_CASE_INSENSITIVE", "1", 1);
	snprintf(p, sizeof(p), "%s/out-cases", tmp);
	CHECK(nv_git_export(repo, oid, p, &st, &err) == NV_EREFUSED);
	unsetenv("NAVETTE_FS_CASE_INSENSITIVE");
	CHECK(strstr(err.message, "2 pairs") != NULL);
	CHECK(strstr(err.message, "'README'") &&
	      strstr(err.message, "'readme'"));
	CHECK(strstr(err.message, "'sub/caf\303\251'") &&
	      strstr(err.message, "'sub/cafe\314\201'"));
	CHECK(strstr(err.hint, "git mv") != NULL);
	CHECK(lstat(p, &sb) < 0); /* nothing written, the folder removed */
	/* a volume that tells case apart (Linux's) takes all four */
	CHECK(sh("mkdir -p '%s'", p) == 0);
	{
		int fd = open(p, O_RDONLY | O_DIRECTORY);
		int folds = fd >= 0 &&
			    nv_fsname_volume_of(fd) != NV_FSNAME_SENSITIVE;
		if (fd >= 0)
			close(fd);
		if (!folds) {
			CHECK(nv_git_export(repo, oid, p, &st, &err) == 0);
			CHECK(st.files == 4);
		}
	}

	/* six folders of 200 bytes: over 1200 bytes below the export */
	memset(name, 'd', 200);
	name[200] = '\0';
	CHECK(sh_out(oid_deep, sizeof(oid_deep),
		     "cd '%s' && b=$(echo deep | git hash-object -w --stdin) "
		     "&& t=$(printf '100644 blob %%s\tleaf\n' $b | git mktree)"
		     " && for i in 1 2 3 4 5 6; do t=$(printf '040000 tree "
		     "%%s\t%%s\n' $t %s | git mktree); done && "
		     "git commit-tree $t -m deep",
		     r, name) == 0);
	/* and the export folder itself over 1024 bytes */
	snprintf(deep, sizeof(deep), "%s/%s/%s/%s/%s/%s/out", tmp, name, name,
		 name, name, name);
	CHECK(strlen(deep) > 1024);
	CHECK(nv_git_export(repo, oid_deep, deep, &st, &err) == 0);
	CHECK(st.files == 1 && st.dirs == 6);
	CHECK((size_t)snprintf(p, sizeof(p), "%s/%s/%s/%s/%s/%s/%s/leaf", deep,
			       name, name, name, name, name, name) < sizeof(p));
	CHECK(strlen(p) > 2200 && lstat(p, &sb) == 0);

	/* 21 such folders: past the project's 4096-byte limit, refused */
	CHECK(sh_out(oid_over, sizeof(oid_over),
		     "cd '%s' && t=$(git rev-parse %s^{tree}) && for i in 1 2 "
		     "3 4 5 6 7 8 9 10 11 12 13 14 15; do t=$(printf '040000 "
		     "tree %%s\t%%s\n' $t %s | git mktree); done && "
		     "git commit-tree $t -m over",
		     r, oid_deep, name) == 0);
	snprintf(p, sizeof(p), "%s/out-over", tmp);
	CHECK(nv_git_export(repo, oid_over, p, &st, &err) == NV_EREFUSED);
	CHECK(strstr(err.message, "too long") != NULL);
	CHECK(lstat(p, &sb) < 0);
	nv_git_free(repo);
}

static void test_pure_helpers(void)
{
	char url[128];

	snprintf(url, sizeof(url), "https://user:secret@host/x.git");
	nv_git_url_strip_userinfo(url);
	CHECK_STR(url, "https://host/x.git");
	snprintf(url, sizeof(url), "ssh://git@host:22/x");
	nv_git_url_strip_userinfo(url);
	CHECK_STR(url, "ssh://host:22/x");
	snprintf(url, sizeof(url), "git@github.com:a/b.git");
	nv_git_url_strip_userinfo(url);
	CHECK_STR(url, "git@github.com:a/b.git");
	snprintf(url, sizeof(url), "https://host/a@b");
	nv_git_url_strip_userinfo(url);
	CHECK_STR(url, "https://host/a@b");

	CHECK(nv_git_is_lockfile("package-lock.json"));
	CHECK(nv_git_is_lockfile("requirements-dev.txt"));
	CHECK(nv_git_is_lockfile("requirements.txt"));
	CHECK(!nv_git_is_lockfile("requirements.md"));
	CHECK(!nv_git_is_lockfile("README.md"));

	/* names a volume could take for .git are never exported */
	CHECK(!nv_git_entry_name_ok(".git"));
	CHECK(!nv_git_entry_name_ok(".GIT"));
	CHECK(!nv_git_entry_name_ok(".Git."));  /* SMB drops the dot */
	CHECK(!nv_git_entry_name_ok(".git  ")); /* and the blanks */
	CHECK(!nv_git_entry_name_ok(".g\xe2\x80\x8cit")); /* U+200C */
	CHECK(!nv_git_entry_name_ok("\xef\xbb\xbf.git")); /* U+FEFF */
	CHECK(!nv_git_entry_name_ok(".gi\xe2\x81\xaft")); /* U+206F */
	CHECK(nv_git_entry_name_ok(".github"));
	CHECK(nv_git_entry_name_ok(".gitignore"));
	CHECK(nv_git_entry_name_ok("a\xe2\x80\x8c"
				   "b")); /* only near .git */
	CHECK(nv_git_entry_name_ok("git"));
	CHECK(!nv_git_entry_name_ok(".."));
	CHECK(!nv_git_entry_name_ok("a/b"));
}

/* A fresh fetch of lib into cache by n processes at once: each succeeds. */
static int racing_fetches(const char *cache, const char *lib, int n)
{
	pid_t pids[8];
	int i, ok = 1, status;

	for (i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			nv_err err;
			_exit(nv_git_cache_fetch(cache, lib, &err) ? 1 : 0);
		}
	}
	for (i = 0; i < n; i++)
		if (pids[i] < 0 || waitpid(pids[i], &status, 0) < 0 ||
		    !WIFEXITED(status) || WEXITSTATUS(status) != 0)
			ok = 0;
	return ok;
}

static void test_library_cache(void)
{
	char lib[PATH_MAX], cache[PATH_MAX], first[64], second[64];
	char name[NV_GIT_CACHE_NAME_LEN + 1], other[NV_GIT_CACHE_NAME_LEN + 1];
	char oid[NV_GIT_OID_HEX_LEN + 1];
	const char *kind = NULL;
	nv_git_repo *repo = NULL;
	struct stat st;
	nv_err err;

	CHECK(nv_git_cache_name(name, "https://h/team/lib", &err) == 0);
	CHECK(strlen(name) == NV_GIT_CACHE_NAME_LEN);
	CHECK(nv_git_cache_name(other, "https://h/team/lib2", &err) == 0);
	CHECK(strcmp(name, other) != 0);
	CHECK(nv_git_cache_name(other, "https://h/team/lib", &err) == 0);
	CHECK_STR(name, other);

	snprintf(lib, sizeof(lib), "%s/library", tmp);
	CHECK(sh("git init -q -b main '%s' && cd '%s' && echo a > a.lua && "
		 "git add a.lua && git commit -qm one && git tag v1",
		 lib, lib) == 0);
	CHECK(sh_out(first, sizeof(first), "git -C '%s' rev-parse HEAD", lib) ==
	      0);

	/* nothing there: no folder is left behind */
	snprintf(cache, sizeof(cache), "%s/cache/none", tmp);
	CHECK(nv_git_cache_fetch(cache, "/nonexistent/lib", &err) ==
	      NV_ENOTFOUND);
	CHECK(stat(cache, &st) < 0);

	snprintf(cache, sizeof(cache), "%s/cache/%s", tmp, name);
	CHECK(racing_fetches(cache, lib, 4));
	CHECK(nv_git_open_bare(&repo, cache, &err) == 0);
	if (!repo)
		return;
	CHECK(nv_git_cache_resolve(repo, "v1", oid, &kind, &err) == 0);
	CHECK_STR(oid, first);
	CHECK_STR(kind, "tag");
	CHECK(nv_git_cache_resolve(repo, "main", oid, &kind, &err) == 0);
	CHECK_STR(kind, "branch");
	CHECK(nv_git_cache_resolve(repo, first, oid, &kind, &err) == 0);
	CHECK_STR(kind, "commit");
	CHECK(nv_git_cache_resolve(repo, "v2", oid, &kind, &err) ==
	      NV_ENOTFOUND);
	nv_git_free(repo);

	/* the tag moves: a fetch follows it and keeps the old commit */
	CHECK(sh("cd '%s' && echo b > b.lua && git add b.lua && "
		 "git commit -qm two && git tag -f v1 >/dev/null",
		 lib) == 0);
	CHECK(sh_out(second, sizeof(second), "git -C '%s' rev-parse HEAD",
		     lib) == 0);
	CHECK(nv_git_cache_fetch(cache, lib, &err) == 0);
	CHECK(nv_git_open_bare(&repo, cache, &err) == 0);
	if (!repo)
		return;
	CHECK(nv_git_cache_resolve(repo, "v1", oid, &kind, &err) == 0);
	CHECK_STR(oid, second);
	CHECK(nv_git_cache_resolve(repo, first, oid, &kind, &err) == 0);
	nv_git_free(repo);

	/* a tag named like commit id `first` pointing at `second`: the id
	 * still means that commit; a name that looks like an abbreviated
	 * id is refused; a commit the cache lacks is not found through a
	 * tag of its name */
	CHECK(sh("cd '%s' && git tag %s %s && git tag abcdef1 %s && "
		 "git tag 00000000000000000000000000000000000000aa %s",
		 lib, first, second, second, second) == 0);
	CHECK(nv_git_cache_fetch(cache, lib, &err) == 0);
	CHECK(nv_git_open_bare(&repo, cache, &err) == 0);
	if (!repo)
		return;
	CHECK(nv_git_cache_resolve(repo, first, oid, &kind, &err) == 0);
	CHECK_STR(oid, first);
	CHECK_STR(kind, "commit");
	CHECK(nv_git_cache_resolve(repo, "abcdef1", oid, &kind, &err) ==
	      NV_EINVAL);
	CHECK(strstr(err.message, "ambiguous") != NULL);
	/* every length of an abbreviated id, 4 to 39 hex digits, in lower,
	 * upper and mixed case, is refused as ambiguous (a tag "beef" too,
	 * which exists); 3 digits is a name, 40 a commit id */
	CHECK(sh("cd '%s' && git tag beef %s && git tag abc %s", lib, second,
		 second) == 0);
	CHECK(nv_git_cache_fetch(cache, lib, &err) == 0);
	nv_git_free(repo);
	CHECK(nv_git_open_bare(&repo, cache, &err) == 0);
	if (!repo)
		return;
	for (int len = NV_GIT_CACHE_HEX_MIN; len < NV_GIT_OID_HEX_LEN; len++) {
		static const char *const digits[] = {"0123456789abcdef",
						     "0123456789ABCDEF",
						     "0a1B2c3D4e5F6789"};
		for (size_t c = 0; c < 3; c++) {
			char ref[NV_GIT_OID_HEX_LEN + 1];

			for (int i = 0; i < len; i++)
				ref[i] = digits[c][(i * 7 + len) % 16];
			ref[len] = '\0';
			nv_err_clear(&err);
			if (nv_git_cache_resolve(repo, ref, oid, &kind, &err) !=
				    NV_EINVAL ||
			    !strstr(err.message, "ambiguous"))
				fprintf(stderr,
					"not refused as ambiguous: %s\n", ref);
			CHECK(err.code == NV_EINVAL &&
			      strstr(err.message, "ambiguous") != NULL);
		}
	}
	CHECK(nv_git_cache_resolve(repo, "beef", oid, &kind, &err) ==
	      NV_EINVAL);
	CHECK(nv_git_cache_resolve(repo, "BEEF", oid, &kind, &err) ==
	      NV_EINVAL);
	CHECK(nv_git_cache_resolve(repo, "abc", oid, &kind, &err) == 0);
	CHECK_STR(oid, second);
	CHECK_STR(kind, "tag");
	CHECK(sh("cd '%s' && git tag -d beef abc >/dev/null", lib) == 0);
	CHECK(nv_git_cache_resolve(repo,
				   "00000000000000000000000000000000000000aa",
				   oid, &kind, &err) == NV_ENOTFOUND);
	CHECK(nv_git_cache_has_commit(repo, first, &err) == 0);
	CHECK(nv_git_cache_has_commit(
		      repo, "00000000000000000000000000000000000000aa", &err) ==
	      NV_ENOTFOUND);
	CHECK(nv_git_cache_has_commit(repo, "v1", &err) == NV_EINVAL);
	nv_git_free(repo);
	CHECK(sh("cd '%s' && git tag -d %s abcdef1 "
		 "00000000000000000000000000000000000000aa >/dev/null",
		 lib, first) == 0);

	/* only https:// or a folder: a file named like an ssh address, a
	 * relative path, another scheme are refused before libgit2 */
	CHECK(sh("echo x > '%s/u@127.0.0.1:x'", tmp) == 0);
	{
		char path[PATH_MAX + 32];

		snprintf(path, sizeof(path), "%s/u@127.0.0.1:x", tmp);
		CHECK(nv_git_cache_fetch(cache, path, &err) == NV_ENOTFOUND);
		CHECK(strstr(err.message, "not a folder") != NULL);
	}
	CHECK(nv_git_cache_fetch(cache, "u@127.0.0.1:x", &err) == NV_EINVAL);
	CHECK(nv_git_cache_fetch(cache, "ssh://127.0.0.1/x", &err) ==
	      NV_EINVAL);

	/* the user's url.X.insteadOf does not rewrite a library's URL */
	CHECK(sh("git config --global url.file:///nonexistent/.insteadOf "
		 "file://") == 0);
	CHECK(nv_git_cache_fetch(cache, lib, &err) == 0);
	CHECK(sh("git config --global --unset url.file:///nonexistent/"
		 ".insteadOf") == 0);

	/* what a killed fetch left is removed by the next fetch */
	CHECK(sh("mkdir -p '%s.tmp-0123456789abcdef/objects' "
		 "'%s.tmp-keep' && echo x > "
		 "'%s/objects/pack/pack_git2_0123456789abcdef'",
		 cache, cache, cache) == 0);
	CHECK(nv_git_cache_fetch(cache, lib, &err) == 0);
	CHECK(sh("test ! -e '%s.tmp-0123456789abcdef' && "
		 "test ! -e '%s/objects/pack/pack_git2_0123456789abcdef' && "
		 "test -d '%s.tmp-keep'",
		 cache, cache, cache) == 0);

	/* the remote gone: the fetch fails, the cache stays */
	CHECK(sh("mv '%s' '%s.away'", lib, lib) == 0);
	CHECK(nv_git_cache_fetch(cache, lib, &err) == NV_ENOTFOUND);
	CHECK(nv_git_open_bare(&repo, cache, &err) == 0);
	if (repo)
		CHECK(nv_git_cache_resolve(repo, second, oid, &kind, &err) ==
		      0);
	nv_git_free(repo);
	CHECK(sh("git --git-dir='%s/cache/%s' fsck --no-progress >/dev/null",
		 tmp, name) == 0);
}

int main(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/nv-test-git-XXXXXX");
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

	test_pure_helpers();
	test_not_a_repo_and_unborn();
	test_repo();
	test_hostile_trees();
	test_case_and_long_paths();
	test_library_cache();

	if (!getenv("NV_TEST_KEEP"))
		sh("rm -rf '%s'", tmp);
	return nv_test_done();
}
