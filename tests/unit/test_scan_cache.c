/* Unit tests of the secret scanner's clean verdicts (host/creds/scan_walk.c,
 * nv_scan_commit_cached): a second scan of a commit that changed one file
 * reads only that file; a new blob holding a secret is found after a cached
 * scan, and a blob with a finding (allowed or not) never gets a verdict;
 * the same bytes under a name the name rules read differently are read
 * again; a corrupt, cut or stale verdicts file is ignored. The planted
 * secrets are assembled from pieces, as in test_scan.c. */
#include "creds/scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nv_test.h"
#include "nv_test_sh.h"

/* clang-format off */
#define AWS_ID     "AKIA" "Q3N7XK2P9RT4WVZB"
#define AWS_SECRET "kT9v/2Lq8Zx+" "Wm4Rn7Bp3Yc6" "Hd1Fg5Js0Ka8Ue2N"
#define PEM_BEGIN  "-----BEGIN RSA " "PRIVATE" " KEY-----"
#define PEM_END    "-----END RSA " "PRIVATE" " KEY-----"
#define KEY_BODY \
	"MIIEowIBAAKCAQEA7x9Zq2Kp1vB3nT8wYc4LmR6sD0fH5jUaGiXoNbVeWlQtPyCz\n"
/* clang-format on */

static char tmp[256];

static void head_of(const char *repo, char oid[41])
{
	char out[64];

	oid[0] = '\0';
	if (sh_out(out, sizeof(out), "git -C '%s' rev-parse HEAD", repo) == 0)
		snprintf(oid, 41, "%.40s", out);
}

static void put_text(const char *root, const char *rel, const char *text)
{
	char path[1024], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (slash = strchr(path + strlen(root) + 1, '/'); slash;
	     slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	f = fopen(path, "wb");
	if (!f || fputs(text, f) < 0) {
		perror(path);
		exit(2);
	}
	fclose(f);
}

/* Commits everything in repo; oid gets the new HEAD. */
static int commit(const char *repo, char oid[41])
{
	int rc = sh("cd '%s' && git add -A && git -c user.name=t "
		    "-c user.email=t@t commit -q -m test",
		    repo);

	head_of(repo, oid);
	return rc;
}

static int count_findings(const nv_scan_finding *f, void *payload)
{
	(void)f;
	(*(size_t *)payload)++;
	return 0;
}

/* Scans oid with the verdicts at path (loaded, then saved), into st. */
static int scan(const char *repo, const char *oid, const char *path,
		nv_scan_stats *st)
{
	nv_scan_verdicts *v = NULL;
	size_t seen = 0;
	nv_err err;
	int rc;

	rc = nv_scan_verdicts_load(&v, path, &err);
	if (rc)
		return rc;
	rc = nv_scan_commit_cached(repo, oid, v, count_findings, &seen, st,
				   &err);
	if (rc == 0 && nv_scan_verdicts_save(v, &err))
		rc = -1;
	nv_scan_verdicts_free(v);
	CHECK(seen == st->findings);
	return rc;
}

static size_t read_count(const nv_scan_stats *st)
{
	return st->files + st->skipped_binary + st->skipped_large;
}

static size_t verdicts_in(const char *path)
{
	nv_scan_verdicts *v = NULL;
	nv_err err;
	size_t n;

	if (nv_scan_verdicts_load(&v, path, &err))
		return (size_t)-1;
	n = nv_scan_verdicts_count(v);
	nv_scan_verdicts_free(v);
	return n;
}

static void test_second_push(void)
{
	char repo[512], cache[600], oid[41];
	nv_scan_stats st;

	snprintf(repo, sizeof(repo), "%s/second", tmp);
	snprintf(cache, sizeof(cache), "%s/cache/%s", tmp,
		 NV_SCAN_VERDICTS_FILE);
	CHECK(sh("git init -q '%s'", repo) == 0);
	put_text(repo, "README.md", "# demo\n");
	put_text(repo, "src/a.py", "def a():\n    return 1\n");
	put_text(repo, "src/b.py", "def b():\n    return 2\n");
	put_text(repo, "src/c.py", "def c():\n    return 3\n");
	put_text(repo, "docs/notes.txt", "nothing to see\n");
	put_text(repo, "docs/copy.txt", "nothing to see\n"); /* same blob */
	CHECK(commit(repo, oid) == 0);

	/* the first scan reads every file; the folder is made for the file */
	CHECK(scan(repo, oid, cache, &st) == 0);
	CHECK(st.findings == 0);
	CHECK(st.cached == 0);
	CHECK(read_count(&st) == 6);
	CHECK(verdicts_in(cache) == 6); /* by name too: copy.txt, notes.txt */

	/* the same commit again: nothing read */
	CHECK(scan(repo, oid, cache, &st) == 0);
	CHECK(st.findings == 0 && read_count(&st) == 0);
	CHECK(st.cached == 6);

	/* one file changed: only that file is read */
	put_text(repo, "src/b.py", "def b():\n    return 22\n");
	CHECK(commit(repo, oid) == 0);
	CHECK(scan(repo, oid, cache, &st) == 0);
	CHECK(st.findings == 0);
	CHECK(read_count(&st) == 1);
	CHECK(st.cached == 5);
	CHECK(verdicts_in(cache) == 7);

	/* a new blob holding a secret is found after the cached scans, and
	 * found again the next time: it never gets a verdict */
	put_text(repo, "config/aws.ini",
		 "[default]\naws_access_key_id = " AWS_ID "\n"
		 "aws_secret_access_key = " AWS_SECRET "\n");
	CHECK(commit(repo, oid) == 0);
	CHECK(scan(repo, oid, cache, &st) == 0);
	CHECK(st.findings == 2);
	CHECK(read_count(&st) == 1 && st.cached == 6);
	CHECK(verdicts_in(cache) == 7);
	CHECK(scan(repo, oid, cache, &st) == 0);
	CHECK(st.findings == 2 && read_count(&st) == 1);

	/* a secret written into a file scanned clean before: new bytes, a new
	 * blob id, read and found */
	put_text(repo, "src/a.py",
		 "def a():\n    return 1\nAWS = \"" AWS_ID "\"\n");
	CHECK(commit(repo, oid) == 0);
	CHECK(scan(repo, oid, cache, &st) == 0);
	CHECK(st.findings == 3);
}

/* The name rules read the base name: the same bytes under a name that makes
 * them a secret are read again. */
static void test_name_counts(void)
{
	char repo[512], cache[600], oid[41];
	nv_scan_stats st;
	const char *body = "DB_HOST=db.internal\nDB_PORT=5432\n"
			   "DB_USER=app_reader_2024\n";

	snprintf(repo, sizeof(repo), "%s/names", tmp);
	snprintf(cache, sizeof(cache), "%s/names-cache/%s", tmp,
		 NV_SCAN_VERDICTS_FILE);
	CHECK(sh("git init -q '%s'", repo) == 0);
	put_text(repo, "settings.txt", body);
	CHECK(commit(repo, oid) == 0);
	CHECK(scan(repo, oid, cache, &st) == 0);
	CHECK(st.findings == 0 && st.cached == 0);

	put_text(repo, "deploy/.env", body);
	CHECK(commit(repo, oid) == 0);
	CHECK(scan(repo, oid, cache, &st) == 0);
	CHECK(st.cached == 1);   /* settings.txt */
	CHECK(st.findings == 1); /* deploy/.env: the same blob, a dotenv */
	CHECK(read_count(&st) == 1);
}

/* A finding the allow-list excused leaves no verdict: without the
 * allow-list, the same blob is reported. */
static void test_allowed_not_cached(void)
{
	char repo[512], cache[600], oid[41];
	nv_scan_stats st;

	snprintf(repo, sizeof(repo), "%s/allowed", tmp);
	snprintf(cache, sizeof(cache), "%s/allowed-cache/%s", tmp,
		 NV_SCAN_VERDICTS_FILE);
	CHECK(sh("git init -q '%s'", repo) == 0);
	put_text(repo, NV_SCAN_ALLOW_FILE, "fixtures/** test keys, not live\n");
	put_text(repo, "fixtures/key.pem",
		 PEM_BEGIN "\n" KEY_BODY PEM_END "\n");
	CHECK(commit(repo, oid) == 0);
	CHECK(scan(repo, oid, cache, &st) == 0);
	CHECK(st.findings == 0 && st.allowed == 1);
	CHECK(verdicts_in(cache) == 1); /* the allow-list file only */

	CHECK(sh("rm '%s/%s'", repo, NV_SCAN_ALLOW_FILE) == 0);
	CHECK(commit(repo, oid) == 0);
	CHECK(scan(repo, oid, cache, &st) == 0);
	CHECK(st.findings == 1);
	CHECK(st.cached == 0);
}

/* A corrupt, cut or stale file is an empty set, and is replaced. */
static void test_bad_files(void)
{
	char repo[512], path[600], oid[41], fp[65];
	nv_scan_stats st;
	FILE *f;

	snprintf(repo, sizeof(repo), "%s/second", tmp); /* reused */
	snprintf(path, sizeof(path), "%s/cache/%s", tmp, NV_SCAN_VERDICTS_FILE);
	head_of(repo, oid);
	CHECK(verdicts_in(path) > 0);

	/* cut in the middle of a line */
	CHECK(truncate(path, 200) == 0);
	CHECK(verdicts_in(path) == 0);
	/* garbage */
	f = fopen(path, "wb");
	CHECK(f != NULL);
	if (f) {
		fputs("\x01\x02not a verdicts file\n", f);
		fclose(f);
	}
	CHECK(verdicts_in(path) == 0);
	/* stale: another fingerprint, well formed */
	f = fopen(path, "wb");
	CHECK(f != NULL);
	if (f) {
		fprintf(f, "navette scan verdicts 1 %064d\n%064d\n", 0, 7);
		fclose(f);
	}
	CHECK(verdicts_in(path) == 0);
	/* a line that is not hex, under the right fingerprint */
	nv_scan_rules_fingerprint(fp);
	CHECK(strlen(fp) == 64);
	f = fopen(path, "wb");
	CHECK(f != NULL);
	if (f) {
		fprintf(f, "navette scan verdicts 1 %s\n%064d\n%063dz\n", fp, 1,
			2);
		fclose(f);
	}
	CHECK(verdicts_in(path) == 0);
	/* a missing file, and a folder in its place */
	CHECK(unlink(path) == 0);
	CHECK(verdicts_in(path) == 0);
	CHECK(mkdir(path, 0700) == 0);
	CHECK(verdicts_in(path) == 0);
	CHECK(rmdir(path) == 0);

	/* a full scan, written back whole */
	CHECK(scan(repo, oid, path, &st) == 0);
	CHECK(st.cached == 0 && st.findings == 3);
	CHECK(verdicts_in(path) == 5);
	CHECK(scan(repo, oid, path, &st) == 0);
	CHECK(st.findings == 3 && read_count(&st) == 2);

	/* the fingerprint is stable */
	{
		char again[65];

		nv_scan_rules_fingerprint(again);
		CHECK_STR(again, fp);
	}
	/* NULL verdicts: a plain scan */
	memset(&st, 0, sizeof(st));
	{
		size_t seen = 0;
		nv_err err;

		CHECK(nv_scan_commit_cached(repo, oid, NULL, count_findings,
					    &seen, &st, &err) == 0);
		CHECK(st.findings == 3 && st.cached == 0 && seen == 3);
	}
	CHECK(nv_scan_verdicts_save(NULL, NULL) == 0);
	nv_scan_verdicts_free(NULL);
}

int main(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/nv-test-scan-cache-XXXXXX");
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 2;
	}
	setenv("HOME", tmp, 1);
	setenv("XDG_CONFIG_HOME", tmp, 1);
	setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
	unsetenv("GIT_DIR");
	unsetenv("GIT_WORK_TREE");
	unsetenv("GIT_INDEX_FILE");

	test_second_push();
	test_name_counts();
	test_allowed_not_cached();
	test_bad_files();

	if (!getenv("NV_TEST_KEEP"))
		sh("rm -rf '%s'", tmp);
	return nv_test_done();
}
