/* Unit tests of the credentials module (host/creds): the secret container,
 * the env / file / command / keychain sources and their refusals, the
 * command cache, ISO-8601 expiry parsing, base64url and HS256 JWT minting
 * (checked against an independent HMAC computed here with OpenSSL).
 * Stand-ins for a credential command and for macOS `security` live in
 * tests/data/creds/. Works in a fresh folder under $TMPDIR (or /tmp) and
 * removes it afterwards. */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700 /* nftw */
#endif
#include "core/hex.h"
#include "creds/jwt.h"
#include "creds/secret.h"
#include "creds/source.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "nv_test.h"

#define EPOCH_2030 1893553445.0 /* 2030-01-02T03:04:05Z */

static char base[512];      /* the temp folder of this run */
static char data_dir[1024]; /* tests/data/creds */

/* ---- helpers ------------------------------------------------------------ */

static void path_in(char *out, size_t cap, const char *dir, const char *rel)
{
	if ((size_t)snprintf(out, cap, "%s/%s", dir, rel) >= cap)
		abort(); /* a test bug */
}

static int contains(const char *hay, const char *needle)
{
	return hay && needle && strstr(hay, needle) != NULL;
}

/* Writes exactly len bytes with exactly `mode` (umask notwithstanding). */
static int write_file(const char *path, const void *data, size_t len,
		      mode_t mode)
{
	int fd;
	ssize_t n;

	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return -1;
	n = write(fd, data, len);
	if (fchmod(fd, mode) != 0 || close(fd) != 0 || n != (ssize_t)len)
		return -1;
	return 0;
}

static int count_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	int c, n = 0;

	if (!f)
		return 0;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static void iso_at(double t, char *out, size_t cap)
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int rm_entry(const char *p, const struct stat *sb, int flag,
		    struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static int field_is(const nv_secret *s, const char *field, const void *value,
		    size_t len)
{
	const nv_secret_field *f = nv_secret_get(s, field);
	return f && f->len == len && memcmp(f->value, value, len) == 0 &&
	       f->value[len] == '\0';
}

static nv_creds_decl decl(const char *name, nv_secret_kind kind,
			  const char *source)
{
	nv_creds_decl d;
	memset(&d, 0, sizeof(d));
	d.name = name;
	d.kind = kind;
	d.source = source;
	return d;
}

/* ---- secret helpers ---------------------------------------------------- */

static void test_secret_basics(void)
{
	nv_err err;
	nv_secret *s;
	int required;
	char long_name[NV_SECRET_NAME_MAX + 2];

	CHECK(nv_secret_kind_parse("s3") == NV_SECRET_S3);
	CHECK(nv_secret_kind_parse("hs256") == NV_SECRET_HS256);
	CHECK(nv_secret_kind_parse("bogus") == 0);
	CHECK_STR(nv_secret_kind_name(NV_SECRET_BASIC), "basic");
	CHECK(nv_secret_kind_fields(NV_SECRET_S3, &required) != NULL &&
	      required == 2);

	CHECK(nv_secret_new("", NV_SECRET_BEARER, "env", &err) == NULL &&
	      err.code == NV_EINVAL);
	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	CHECK(nv_secret_new(long_name, NV_SECRET_BEARER, "env", &err) == NULL &&
	      err.code == NV_EINVAL);
	CHECK(nv_secret_new("x", (nv_secret_kind)42, "env", &err) == NULL &&
	      err.code == NV_EINVAL);

	/* equality: constant-time API semantics */
	CHECK(nv_secret_equal("abc", 3, "abc", 3) == 1);
	CHECK(nv_secret_equal("", 0, "", 0) == 1);
	CHECK(nv_secret_equal("abc", 3, "abcd", 4) == 0);
	CHECK(nv_secret_equal("abcd", 4, "abc", 3) == 0);
	CHECK(nv_secret_equal("abc", 3, "abd", 3) == 0);
	CHECK(nv_secret_equal("xbc", 3, "abc", 3) == 0);
	CHECK(nv_secret_equal("a\0c", 3, "a\0d", 3) == 0);

	/* set, replace, get, complete */
	s = nv_secret_new("tok", NV_SECRET_BEARER, "env", &err);
	CHECK(s != NULL);
	if (!s)
		return;
	CHECK(nv_secret_complete(s, &err) == NV_EREFUSED);
	CHECK(contains(err.message, "token"));
	CHECK(nv_secret_set(s, "token", "", 0, &err) == 0);
	CHECK(nv_secret_complete(s, &err) == NV_EREFUSED); /* empty */
	CHECK(nv_secret_set(s, "token", "first", 5, &err) == 0);
	CHECK(field_is(s, "token", "first", 5));
	CHECK(nv_secret_complete(s, &err) == 0);
	CHECK(nv_secret_set(s, "token", "second-longer", 13, &err) == 0);
	CHECK(field_is(s, "token", "second-longer", 13));
	CHECK(s->nfields == 1);
	CHECK(nv_secret_set(s, "token", "3", 1, &err) == 0);
	CHECK(field_is(s, "token", "3", 1));
	CHECK(nv_secret_set(s, "password", "x", 1, &err) == NV_EINVAL);
	CHECK(contains(err.message, "password"));
	CHECK(nv_secret_get(s, "password") == NULL);
	{
		size_t big = NV_SECRET_VALUE_MAX + 1;
		char *buf = calloc(1, big);
		CHECK(buf &&
		      nv_secret_set(s, "token", buf, big, &err) == NV_ENOMEM);
		free(buf);
		CHECK(field_is(s, "token", "3", 1)); /* unchanged */
	}
	nv_secret_free(s);
	nv_secret_free(NULL);

	s = nv_secret_new("login", NV_SECRET_BASIC, "env", &err);
	CHECK(s != NULL);
	if (!s)
		return;
	CHECK(nv_secret_set(s, "user", "alice", 5, &err) == 0);
	CHECK(nv_secret_complete(s, &err) == NV_EREFUSED);
	CHECK(contains(err.message, "password"));
	CHECK(nv_secret_set(s, "password", "pw", 2, &err) == 0);
	CHECK(nv_secret_complete(s, &err) == 0);
	nv_secret_free(s);

	s = nv_secret_new("aws", NV_SECRET_S3, "env", &err);
	CHECK(s != NULL);
	if (!s)
		return;
	CHECK(nv_secret_set(s, "access_key_id", "AK", 2, &err) == 0);
	CHECK(nv_secret_complete(s, &err) == NV_EREFUSED);
	CHECK(contains(err.message, "secret_access_key"));
	CHECK(nv_secret_set(s, "secret_access_key", "SK", 2, &err) == 0);
	CHECK(nv_secret_complete(s, &err) == 0); /* token is optional */
	nv_secret_free(s);
}

/* What the observer saw. */
static struct {
	char name[80];
	char value[80];
} seen[16];
static int nseen;

static void observer(const char *name, const void *value, size_t len)
{
	if (nseen < 16 && len < sizeof(seen[0].value)) {
		snprintf(seen[nseen].name, sizeof(seen[0].name), "%s", name);
		memcpy(seen[nseen].value, value, len);
		seen[nseen].value[len] = '\0';
	}
	nseen++;
}

static int was_seen(const char *value)
{
	for (int i = 0; i < nseen && i < 16; i++)
		if (strcmp(seen[i].value, value) == 0)
			return 1;
	return 0;
}

static void test_observer(void)
{
	nv_err err;
	nv_secret *s = nv_secret_new("aws", NV_SECRET_S3, "env", &err);
	char path[1024];

	CHECK(s != NULL);
	if (!s)
		return;
	nv_secret_set_observer(observer);
	nseen = 0;
	nv_secret_set(s, "access_key_id", "AKIDOBS", 7, &err);
	nv_secret_set(s, "secret_access_key", "SKOBS", 5, &err);
	nv_secret_set(s, "session_token", "STOBS", 5, &err);
	CHECK(nseen == 0); /* setting alone announces nothing */
	nv_secret_announce(s);
	CHECK(nseen == 3);
	CHECK(was_seen("AKIDOBS") && was_seen("SKOBS") && was_seen("STOBS"));
	CHECK_STR(seen[0].name, "aws");
	nv_secret_free(s);

	/* a basic credential: the password, not the user */
	s = nv_secret_new("login", NV_SECRET_BASIC, "env", &err);
	nseen = 0;
	nv_secret_set(s, "user", "alice", 5, &err);
	nv_secret_set(s, "password", "pwOBS", 5, &err);
	nv_secret_announce(s);
	CHECK(nseen == 1);
	CHECK(was_seen("pwOBS"));
	CHECK(!was_seen("alice"));
	nv_secret_free(s);

	/* nv_creds_load announces what it loaded (file, basic) */
	path_in(path, sizeof(path), base, "obs-basic");
	CHECK(write_file(path, "bob:hunterOBS\n", 14, 0600) == 0);
	nv_creds_decl d = decl("obs", NV_SECRET_BASIC, "file");
	d.path = path;
	nseen = 0;
	s = NULL;
	CHECK(nv_creds_load(&d, &s, &err) == 0);
	CHECK(nseen == 1 && was_seen("hunterOBS") && !was_seen("bob"));
	nv_secret_free(s);

	/* a refused load announces nothing */
	CHECK(write_file(path, "bob:leakOBS\n", 12, 0644) == 0);
	nseen = 0;
	CHECK(nv_creds_load(&d, &s, &err) == NV_EREFUSED);
	CHECK(nseen == 0);

	nv_secret_set_observer(NULL);
	nseen = 0;
	s = nv_secret_new("x", NV_SECRET_BEARER, "env", &err);
	nv_secret_set(s, "token", "t", 1, &err);
	nv_secret_announce(s); /* no observer: nothing, no crash */
	CHECK(nseen == 0);
	nv_secret_free(s);
}

/* ---- env source --------------------------------------------------------- */

static void test_env(void)
{
	nv_err err;
	nv_secret *s = NULL;
	nv_creds_decl d;

	setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "skENV/with+chars", 1);
	unsetenv("AWS_SESSION_TOKEN");
	d = decl("storage", NV_SECRET_S3, "env");
	CHECK(nv_creds_load(&d, &s, &err) == 0);
	if (s) {
		CHECK(field_is(s, "access_key_id", "AKIDENV", 7));
		CHECK(field_is(s, "secret_access_key", "skENV/with+chars", 16));
		CHECK(nv_secret_get(s, "session_token") == NULL);
		CHECK_STR(s->source, "env");
		CHECK(contains(s->origin, "AWS_ACCESS_KEY_ID"));
		CHECK(contains(s->origin, "AWS_SECRET_ACCESS_KEY"));
		CHECK(!contains(s->origin, "AKIDENV"));
		CHECK(!contains(s->origin, "skENV"));
		CHECK(s->loaded_at > 1e9);
		CHECK(s->expires_at == 0);
		nv_secret_free(s);
		s = NULL;
	}

	setenv("AWS_SESSION_TOKEN", "stENV", 1);
	CHECK(nv_creds_load(&d, &s, &err) == 0);
	CHECK(s && field_is(s, "session_token", "stENV", 5));
	nv_secret_free(s);
	s = NULL;

	/* a missing required variable is named */
	unsetenv("AWS_SECRET_ACCESS_KEY");
	CHECK(nv_creds_load(&d, &s, &err) == NV_EREFUSED);
	CHECK(s == NULL);
	CHECK(contains(err.message, "AWS_SECRET_ACCESS_KEY"));
	CHECK(err.hint[0] != '\0');
	/* an empty one counts as missing */
	setenv("AWS_SECRET_ACCESS_KEY", "", 1);
	CHECK(nv_creds_load(&d, &s, &err) == NV_EREFUSED);
	CHECK(contains(err.message, "AWS_SECRET_ACCESS_KEY"));
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	unsetenv("AWS_SESSION_TOKEN");

	/* s3 with its own names */
	setenv("NV_TEST_AK", "AKIDOWN", 1);
	setenv("NV_TEST_SK", "SKOWN", 1);
	d.env[0] = "NV_TEST_AK";
	d.env[1] = "NV_TEST_SK";
	CHECK(nv_creds_load(&d, &s, &err) == 0);
	CHECK(s && field_is(s, "secret_access_key", "SKOWN", 5));
	CHECK(s && contains(s->origin, "NV_TEST_SK"));
	nv_secret_free(s);
	s = NULL;

	/* bearer with a named variable */
	d = decl("api", NV_SECRET_BEARER, "env");
	d.env[0] = "NV_TEST_TOKEN";
	setenv("NV_TEST_TOKEN", "tokENV-123", 1);
	CHECK(nv_creds_load(&d, &s, &err) == 0);
	if (s) {
		CHECK(field_is(s, "token", "tokENV-123", 10));
		CHECK(s->kind == NV_SECRET_BEARER);
		CHECK(contains(s->origin, "NV_TEST_TOKEN"));
		CHECK(!contains(s->origin, "tokENV"));
		nv_secret_free(s);
		s = NULL;
	}
	unsetenv("NV_TEST_TOKEN");
	CHECK(nv_creds_load(&d, &s, &err) == NV_EREFUSED);
	CHECK(contains(err.message, "NV_TEST_TOKEN"));
	CHECK(s == NULL);

	/* bearer with no variable named at all */
	d.env[0] = NULL;
	CHECK(nv_creds_load(&d, &s, &err) == NV_EREFUSED);
	CHECK(s == NULL);

	/* an unknown source */
	d = decl("x", NV_SECRET_BEARER, "vault");
	CHECK(nv_creds_load(&d, &s, &err) == NV_EINVAL);
	CHECK(contains(err.message, "vault"));
	unsetenv("NV_TEST_AK");
	unsetenv("NV_TEST_SK");
}

/* ---- file source -------------------------------------------------------- */

static void test_file(void)
{
	nv_err err;
	nv_secret *s = NULL;
	nv_creds_decl d;
	char path[1024], link[1024];
	static const unsigned char key[] = {'k', '1', '\0', 0xff, 'z', '\n'};
	static const char s3json[] =
		"{\"Version\": 1, \"AccessKeyId\": \"AKIDFILE\", "
		"\"SecretAccessKey\": \"skFILE\"}\n";

	/* hs256: raw bytes, a NUL and the trailing newline kept exactly */
	path_in(path, sizeof(path), base, "jwt.key");
	CHECK(write_file(path, key, sizeof(key), 0600) == 0);
	d = decl("slurm", NV_SECRET_HS256, "file");
	d.path = path;
	CHECK(nv_creds_load(&d, &s, &err) == 0);
	if (s) {
		CHECK(field_is(s, "key", key, sizeof(key)));
		CHECK_STR(s->source, "file");
		CHECK_STR(s->origin, path);
		CHECK(s->created_at > 1e9); /* the file's mtime */
		CHECK(fabs(s->created_at - (double)time(NULL)) < 120);
		nv_secret_free(s);
		s = NULL;
	}
	/* 0400 is stricter than 0600: fine */
	CHECK(chmod(path, 0400) == 0);
	CHECK(nv_creds_load(&d, &s, &err) == 0);
	nv_secret_free(s);
	s = NULL;

	/* bearer: trimmed of the trailing newline */
	path_in(path, sizeof(path), base, "token");
	CHECK(write_file(path, "tokFILE\n", 8, 0600) == 0);
	d = decl("api", NV_SECRET_BEARER, "file");
	d.path = path;
	CHECK(nv_creds_load(&d, &s, &err) == 0);
	CHECK(s && field_is(s, "token", "tokFILE", 7));
	nv_secret_free(s);
	s = NULL;

	/* basic: user:password (the password may hold a colon) */
	path_in(path, sizeof(path), base, "basic");
	CHECK(write_file(path, "alice:pa:ssFILE\n", 16, 0600) == 0);
	d = decl("registry", NV_SECRET_BASIC, "file");
	d.path = path;
	CHECK(nv_creds_load(&d, &s, &err) == 0);
	CHECK(s && field_is(s, "user", "alice", 5));
	CHECK(s && field_is(s, "password", "pa:ssFILE", 9));
	nv_secret_free(s);
	s = NULL;
	CHECK(write_file(path, "no-colon-here\n", 14, 0600) == 0);
	CHECK(nv_creds_load(&d, &s, &err) == NV_EREFUSED);
	CHECK(contains(err.message, "user:password"));
	CHECK(!contains(err.message, "no-colon-here")); /* no value shown */

	/* s3: JSON */
	path_in(path, sizeof(path), base, "s3.json");
	CHECK(write_file(path, s3json, strlen(s3json), 0600) == 0);
	d = decl("storage", NV_SECRET_S3, "file");
	d.path = path;
	CHECK(nv_creds_load(&d, &s, &err) == 0);
	CHECK(s && field_is(s, "access_key_id", "AKIDFILE", 8));
	CHECK(s && field_is(s, "secret_access_key", "skFILE", 6));
	CHECK(s && nv_secret_get(s, "session_token") == NULL);
	nv_secret_free(s);
	s = NULL;

	/* modes readable by group or others: refused, mode named */
	CHECK(chmod(path, 0640) == 0);
	CHECK(nv_creds_load(&d, &s, &err) == NV_EREFUSED);
	CHECK(s == NULL);
	CHECK(contains(err.message, "640"));
	CHECK(contains(err.hint, "chmod 600"));
	CHECK(chmod(path, 0604) == 0);
	CHECK(nv_creds_load(&d, &s, &err) == NV_EREFUSED);
	CHECK(contains(err.message, "604"));
	CHECK(chmod(path, 0660) == 0);
	CHECK(nv_creds_load(&d, &s, &err) == NV_EREFUSED);
	CHECK(contains(err.message, "660"));
	CHECK(chmod(path, 0600) == 0);

	/* a symlink (even to a good file) is refused */
	path_in(link, sizeof(link), base, "s3-link.json");
	CHECK(symlink(path, link) == 0);
	d.path = link;
	CHECK(nv_creds_load(&d, &s, &err) == NV_EREFUSED);
	CHECK(s == NULL);
	CHECK(contains(err.message, link));
	CHECK(contains(err.hint, "symlink"));

	/* a missing file, a folder */
	path_in(link, sizeof(link), base, "absent");
	d.path = link;
	CHECK(nv_creds_load(&d, &s, &err) == NV_EREFUSED);
	CHECK(contains(err.message, "absent"));
	d.path = base;
	CHECK(nv_creds_load(&d, &s, &err) == NV_EREFUSED);
	CHECK(contains(err.message, "not a regular file"));
	d.path = NULL;
	CHECK(nv_creds_load(&d, &s, &err) == NV_EINVAL);

	/* owned by another user */
	d.path = path;
	if (geteuid() == 0) {
		CHECK(chown(path, 65534, 65534) == 0);
		CHECK(nv_creds_load(&d, &s, &err) == NV_EREFUSED);
		CHECK(s == NULL);
		CHECK(contains(err.message, "65534"));
		CHECK(contains(err.hint, "belong"));
		CHECK(chown(path, 0, 0) == 0);
		CHECK(nv_creds_load(&d, &s, &err) == 0);
		nv_secret_free(s);
		s = NULL;
	} else {
		SKIP("a file owned by another user: needs root to chown");
	}
}

/* A FIFO is not a regular file: refused, not waited on forever. Run in a
 * child with an alarm so a hang fails the check instead of the suite. */
static void test_file_fifo(void)
{
	char path[1024];
	pid_t pid;
	int status = 0;

	path_in(path, sizeof(path), base, "fifo");
	CHECK(mkfifo(path, 0600) == 0);
	pid = fork();
	if (pid == 0) {
		nv_err err;
		nv_secret *s = NULL;
		nv_creds_decl d = decl("fifo", NV_SECRET_BEARER, "file");
		d.path = path;
		alarm(5);
		_exit(nv_creds_load(&d, &s, &err) == NV_EREFUSED ? 0 : 1);
	}
	CHECK(pid > 0);
	if (pid > 0)
		CHECK(waitpid(pid, &status, 0) == pid);
	if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0))
		fprintf(stderr, "fifo credential: %s\n",
			WIFSIGNALED(status) ? "hung (killed by the alarm)"
					    : "not refused");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* ---- command source ----------------------------------------------------- */

static void test_parse_time(void)
{
	CHECK(nv_creds_parse_time("2030-01-02T03:04:05Z") == EPOCH_2030);
	CHECK(nv_creds_parse_time("2030-01-02T03:04:05+00:00") == EPOCH_2030);
	CHECK(nv_creds_parse_time("2030-01-02T03:04:05.5Z") ==
	      EPOCH_2030 + 0.5);
	CHECK(nv_creds_parse_time("1970-01-01T00:00:00Z") == 0);
	CHECK(nv_creds_parse_time("2030-01-02T03:04:05+02:00") == -1);
	CHECK(nv_creds_parse_time("2030-01-02T03:04:05-05:00") == -1);
	CHECK(nv_creds_parse_time("2030-01-02T03:04:05+0100") == -1);
	CHECK(nv_creds_parse_time("2030-01-02T03:04:05.25+01:00") == -1);
	CHECK(nv_creds_parse_time("2030-01-02T03:04:05PST") == -1);
	CHECK(nv_creds_parse_time("2030-01-02") == -1);
	CHECK(nv_creds_parse_time("tomorrow") == -1);
	CHECK(nv_creds_parse_time("") == -1);
	CHECK(nv_creds_parse_time(NULL) == -1);
}

static void test_command(void)
{
	nv_err err;
	nv_secret *a = NULL, *b = NULL;
	nv_creds_decl d;
	char script[1200], counter[1024], expfile[1024], when[64];
	int runs;

	path_in(script, sizeof(script), data_dir, "fake_command.sh");
	path_in(counter, sizeof(counter), base, "runs");
	path_in(expfile, sizeof(expfile), base, "expiration");
	unlink(counter);

	d = decl("sts", NV_SECRET_S3, "command");
	d.argv[0] = "sh";
	d.argv[1] = script;
	d.argv[2] = counter;
	d.argv[3] = expfile;

	nv_creds_cache_clear();
	/* expiring in an hour: cached, the command runs once */
	iso_at((double)time(NULL) + 3600, when, sizeof(when));
	CHECK(write_file(expfile, when, strlen(when), 0600) == 0);
	CHECK(nv_creds_load(&d, &a, &err) == 0);
	CHECK(nv_creds_load(&d, &b, &err) == 0);
	CHECK(count_lines(counter) == 1);
	if (a && b) {
		const nv_secret_field *fa =
			nv_secret_get(a, "secret_access_key");
		const nv_secret_field *fb =
			nv_secret_get(b, "secret_access_key");
		CHECK(fa && fb &&
		      nv_secret_equal(fa->value, fa->len, fb->value, fb->len));
		CHECK(field_is(a, "secret_access_key", "secret-1", 8));
		CHECK(field_is(a, "access_key_id", "AKIDTEST1", 9));
		CHECK(field_is(a, "session_token", "token-1", 7));
		CHECK(a != b); /* separate copies */
		CHECK(fabs(a->expires_at - nv_creds_parse_time(when)) < 1e-6);
		CHECK(b->expires_at == a->expires_at);
		CHECK_STR(a->source, "command");
		CHECK(contains(a->origin, "fake_command.sh"));
		CHECK(!contains(a->origin, "secret-1"));
	}
	nv_secret_free(a);
	nv_secret_free(b);
	a = b = NULL;

	/* after a clear, a credential inside the refresh margin is fetched
	 * anew on every load */
	nv_creds_cache_clear();
	unlink(counter);
	iso_at((double)time(NULL) + 120, when, sizeof(when));
	CHECK(write_file(expfile, when, strlen(when), 0600) == 0);
	CHECK(nv_creds_load(&d, &a, &err) == 0);
	CHECK(nv_creds_load(&d, &b, &err) == 0);
	nv_secret_free(b);
	b = NULL;
	CHECK(nv_creds_load(&d, &b, &err) == 0);
	CHECK(count_lines(counter) == 3);
	CHECK(a && field_is(a, "secret_access_key", "secret-1", 8));
	CHECK(b && field_is(b, "secret_access_key", "secret-3", 8));
	nv_secret_free(a);
	nv_secret_free(b);
	a = b = NULL;

	/* expired: refused */
	nv_creds_cache_clear();
	unlink(counter);
	iso_at((double)time(NULL) - 60, when, sizeof(when));
	CHECK(write_file(expfile, when, strlen(when), 0600) == 0);
	CHECK(nv_creds_load(&d, &a, &err) == NV_EREFUSED);
	CHECK(a == NULL);
	CHECK(contains(err.message, "expired"));
	CHECK(!contains(err.message, "secret-"));
	/* and not cached: asked again next time */
	CHECK(nv_creds_load(&d, &a, &err) == NV_EREFUSED);
	CHECK(count_lines(counter) == 2);

	/* Expiration parsed right */
	nv_creds_cache_clear();
	CHECK(write_file(expfile, "2030-01-02T03:04:05Z", 20, 0600) == 0);
	CHECK(nv_creds_load(&d, &a, &err) == 0);
	CHECK(a && a->expires_at == EPOCH_2030);
	nv_secret_free(a);
	a = NULL;

	/* a non-UTC Expiration is refused */
	nv_creds_cache_clear();
	CHECK(write_file(expfile, "2030-01-02T03:04:05+02:00", 25, 0600) == 0);
	CHECK(nv_creds_load(&d, &a, &err) == NV_EREFUSED);
	CHECK(contains(err.message, "Expiration"));

	/* malformed JSON, Version 2, a failing command, a missing one */
	CHECK(write_file(expfile, "2030-01-02T03:04:05Z", 20, 0600) == 0);
	nv_creds_cache_clear();
	d.argv[4] = "malformed";
	CHECK(nv_creds_load(&d, &a, &err) == NV_EREFUSED);
	CHECK(a == NULL);
	CHECK(contains(err.message, "not a JSON object"));
	CHECK(contains(err.message, "sts"));

	d.argv[4] = "v2";
	CHECK(nv_creds_load(&d, &a, &err) == NV_EREFUSED);
	CHECK(a == NULL);
	CHECK(contains(err.message, "Version"));
	CHECK(!contains(err.message, "secret-"));

	d.argv[4] = "fail";
	runs = count_lines(counter);
	CHECK(nv_creds_load(&d, &a, &err) == NV_EREFUSED);
	CHECK(a == NULL);
	CHECK(count_lines(counter) == runs + 1);
	CHECK(contains(err.message, "failed"));
	CHECK(contains(err.message, "exit status 1"));
	d.argv[4] = NULL;

	memset(d.argv, 0, sizeof(d.argv));
	d.argv[0] = "navette-test-no-such-command";
	CHECK(nv_creds_load(&d, &a, &err) == NV_EREFUSED);
	CHECK(a == NULL);
	CHECK(contains(err.message, "navette-test-no-such-command"));
	CHECK(contains(err.hint, "PATH"));

	d.argv[0] = NULL;
	CHECK(nv_creds_load(&d, &a, &err) == NV_EINVAL);

	/* a bearer token from a command */
	d = decl("tok", NV_SECRET_BEARER, "command");
	d.argv[0] = "sh";
	d.argv[1] = "-c";
	d.argv[2] = "printf '{\"Version\":1,\"Token\":\"tokCMD\"}'";
	CHECK(nv_creds_load(&d, &a, &err) == 0);
	CHECK(a && field_is(a, "token", "tokCMD", 6));
	CHECK(a && a->expires_at == 0);
	nv_secret_free(a);
	nv_creds_cache_clear();
}

/* ---- keychain source ---------------------------------------------------- */

static void test_keychain(void)
{
	nv_err err;
	nv_secret *s = NULL;
	nv_creds_decl d;
	char bin[1024], src[1200], dst[1200], cmd[4096], newpath[8192];
	const char *old_path = getenv("PATH");
	char *saved = strdup(old_path ? old_path : "/usr/bin:/bin");
	int real_security = access(NV_CREDS_KEYCHAIN_TOOL, X_OK) == 0;
	int rc;

	path_in(bin, sizeof(bin), base, "bin");
	CHECK(mkdir(bin, 0700) == 0);
	path_in(src, sizeof(src), data_dir, "security");
	path_in(dst, sizeof(dst), bin, "security");
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && chmod 755 '%s'", src, dst,
		 dst);
	CHECK(system(cmd) == 0);
	snprintf(newpath, sizeof(newpath), "%s:%s", bin, saved);
	setenv("PATH", newpath, 1);
	setenv("FAKE_SECURITY_SERVICE", "navette-registry", 1);
	setenv("FAKE_SECURITY_ACCOUNT", "ci-bot", 1);
	setenv("FAKE_SECURITY_VALUE", "kcSECRET-42", 1);
	unsetenv("FAKE_SECURITY_EXIT");

	d = decl("registry", NV_SECRET_BEARER, "keychain");
	d.service = "navette-registry";
	d.account = "ci-bot";

	/* security is run by its full path: a stand-in first on PATH is not
	 * asked (on Linux there is no /usr/bin/security at all) */
	CHECK_STR(nv_creds_keychain_tool(), "/usr/bin/security");
	rc = nv_creds_load(&d, &s, &err);
	CHECK(rc != 0 || !field_is(s, "token", "kcSECRET-42", 11));
	if (!real_security) {
		CHECK(rc == NV_EREFUSED);
		CHECK(contains(err.message, "/usr/bin/security"));
	}
	nv_secret_free(s);
	s = NULL;

	nv_creds_set_keychain_tool(dst);
	CHECK_STR(nv_creds_keychain_tool(), dst);
	CHECK(nv_creds_load(&d, &s, &err) == 0);
	if (s) {
		CHECK(field_is(s, "token", "kcSECRET-42", 11));
		CHECK_STR(s->source, "keychain");
		CHECK(contains(s->origin, "navette-registry"));
		CHECK(contains(s->origin, "ci-bot"));
		CHECK(!contains(s->origin, "kcSECRET"));
		nv_secret_free(s);
		s = NULL;
	} else {
		fprintf(stderr, "keychain: %s\n", err.message);
	}

	/* basic: the user is the account */
	d.kind = NV_SECRET_BASIC;
	CHECK(nv_creds_load(&d, &s, &err) == 0);
	CHECK(s && field_is(s, "user", "ci-bot", 6));
	CHECK(s && field_is(s, "password", "kcSECRET-42", 11));
	nv_secret_free(s);
	s = NULL;

	/* the stand-in really checks its arguments */
	d.service = "another-service";
	CHECK(nv_creds_load(&d, &s, &err) == NV_EREFUSED);
	CHECK(s == NULL);
	d.service = "navette-registry";

	/* item not found (exit 44) */
	setenv("FAKE_SECURITY_EXIT", "44", 1);
	CHECK(nv_creds_load(&d, &s, &err) == NV_EREFUSED);
	CHECK(s == NULL);
	CHECK(contains(err.hint, "add-generic-password"));
	CHECK(contains(err.message, "registry"));
	CHECK(contains(err.message, "Keychain"));
	/* the cause is kept legibly in the message */
	CHECK(contains(err.message, "exit status 44"));
	if (!contains(err.message, "exit status 44"))
		fprintf(stderr, "keychain refusal message: '%s'\n",
			err.message);
	unsetenv("FAKE_SECURITY_EXIT");

	/* a locked Keychain that cannot prompt (SSH): said plainly */
	setenv("FAKE_SECURITY_EXIT", "36", 1);
	CHECK(nv_creds_load(&d, &s, &err) == NV_EREFUSED);
	CHECK(s == NULL);
	CHECK(contains(err.message, "User interaction is not allowed"));
	CHECK(contains(err.message, "registry"));
	CHECK(contains(err.hint, "security unlock-keychain"));
	unsetenv("FAKE_SECURITY_EXIT");

	/* a value of several lines comes out in hex: refused, not used */
	setenv("FAKE_SECURITY_VALUE", "6c696e65310a6c696e6532", 1); /* l1\nl2 */
	CHECK(nv_creds_load(&d, &s, &err) == NV_EREFUSED);
	CHECK(s == NULL);
	CHECK(contains(err.message, "single-line"));
	CHECK(!contains(err.message, "6c696e65"));
	/* a hex token is a value like any other */
	setenv("FAKE_SECURITY_VALUE", "9f86d081884c7d659a2feaa0c55ad015", 1);
	CHECK(nv_creds_load(&d, &s, &err) == 0);
	CHECK(s &&
	      field_is(s, "password", "9f86d081884c7d659a2feaa0c55ad015", 32));
	nv_secret_free(s);
	s = NULL;
	setenv("FAKE_SECURITY_VALUE", "kcSECRET-42", 1);

	/* service and account are required */
	d.account = NULL;
	CHECK(nv_creds_load(&d, &s, &err) == NV_EINVAL);

	nv_creds_set_keychain_tool(NULL);
	CHECK_STR(nv_creds_keychain_tool(), NV_CREDS_KEYCHAIN_TOOL);
	setenv("PATH", saved, 1);
	free(saved);
	unsetenv("FAKE_SECURITY_SERVICE");
	unsetenv("FAKE_SECURITY_ACCOUNT");
	unsetenv("FAKE_SECURITY_VALUE");
}

/* What `security -w` prints for a value of several lines (hex of text with
 * a newline) is told from a value that is hex (random bytes). */
/* ---- no execution (plan mode, read-only commands) ------------------------ */

static int exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* With no_exec, a source that would run a program (command, keychain) is
 * NV_ENOTRUN and nothing runs; env and file sources still load. */
static void test_no_exec(void)
{
	nv_err err;
	nv_secret *s = NULL;
	nv_creds_decl d;
	char marker[1024], script[2400], tool[1200], path[1200];

	path_in(marker, sizeof(marker), base, "ran");
	unlink(marker);
	snprintf(script, sizeof(script),
		 "touch '%s'; echo '{\"AccessKeyId\": \"AKIDX\", "
		 "\"SecretAccessKey\": \"sk-x\"}'",
		 marker);
	d = decl("sts", NV_SECRET_S3, "command");
	d.argv[0] = "sh";
	d.argv[1] = "-c";
	d.argv[2] = script;
	d.no_exec = 1;
	nv_creds_cache_clear();
	CHECK(nv_creds_load(&d, &s, &err) == NV_ENOTRUN);
	CHECK(s == NULL);
	CHECK(!exists(marker));
	CHECK_STR(nv_err_code_name(err.code), "not_run");
	CHECK(contains(err.message, "credential sts"));
	CHECK(contains(err.message, "was not run"));
	CHECK(contains(err.hint, "navette creds check sts"));
	CHECK(nv_creds_source_executes("command"));
	CHECK(nv_creds_source_executes("keychain"));
	CHECK(!nv_creds_source_executes("env"));
	CHECK(!nv_creds_source_executes("file"));

	/* allowed, the same declaration runs */
	d.no_exec = 0;
	CHECK(nv_creds_load(&d, &s, &err) == 0);
	CHECK(exists(marker));
	nv_secret_free(s);
	s = NULL;
	/* a result this process already holds is given without running */
	unlink(marker);
	d.no_exec = 1;
	CHECK(nv_creds_load(&d, &s, &err) == 0);
	CHECK(s && field_is(s, "access_key_id", "AKIDX", 5));
	CHECK(!exists(marker));
	nv_secret_free(s);
	s = NULL;
	nv_creds_cache_clear();
	CHECK(nv_creds_load(&d, &s, &err) == NV_ENOTRUN);
	CHECK(!exists(marker));

	/* the Keychain's tool is a program too */
	path_in(tool, sizeof(tool), base, "security-marker");
	snprintf(script, sizeof(script), "#!/bin/sh\ntouch '%s'\necho kcv\n",
		 marker);
	CHECK(write_file(tool, script, strlen(script), 0700) == 0);
	nv_creds_set_keychain_tool(tool);
	d = decl("registry", NV_SECRET_BEARER, "keychain");
	d.service = "svc";
	d.account = "me";
	d.no_exec = 1;
	CHECK(nv_creds_load(&d, &s, &err) == NV_ENOTRUN);
	CHECK(s == NULL);
	CHECK(!exists(marker));
	CHECK(contains(err.message, "Keychain was not asked"));
	d.no_exec = 0;
	CHECK(nv_creds_load(&d, &s, &err) == 0);
	CHECK(exists(marker));
	CHECK(s && field_is(s, "token", "kcv", 3));
	nv_secret_free(s);
	s = NULL;
	nv_creds_set_keychain_tool(NULL);

	/* env and file sources only read: they load with no_exec */
	setenv("NAVETTE_TEST_NO_EXEC_TOKEN", "tok-env", 1);
	d = decl("envtok", NV_SECRET_BEARER, "env");
	d.env[0] = "NAVETTE_TEST_NO_EXEC_TOKEN";
	d.no_exec = 1;
	CHECK(nv_creds_load(&d, &s, &err) == 0);
	CHECK(s && field_is(s, "token", "tok-env", 7));
	nv_secret_free(s);
	s = NULL;
	unsetenv("NAVETTE_TEST_NO_EXEC_TOKEN");
	path_in(path, sizeof(path), base, "no-exec-token");
	CHECK(write_file(path, "tok-file\n", 9, 0600) == 0);
	d = decl("filetok", NV_SECRET_BEARER, "file");
	d.path = path;
	d.no_exec = 1;
	CHECK(nv_creds_load(&d, &s, &err) == 0);
	CHECK(s && field_is(s, "token", "tok-file", 8));
	nv_secret_free(s);
}

static void test_keychain_hex(void)
{
#define HEX(lit) (const unsigned char *)(lit), sizeof(lit) - 1
	CHECK(nv_creds_keychain_hex_multiline(HEX("610a620")) == 0);  /* odd */
	CHECK(nv_creds_keychain_hex_multiline(HEX("610a6200")) == 0); /* NUL */
	CHECK(nv_creds_keychain_hex_multiline(HEX("610a6263")) == 1);
	CHECK(nv_creds_keychain_hex_multiline(HEX("7B0D0A7D")) ==
	      1); /* {CRLF} */
	CHECK(nv_creds_keychain_hex_multiline(HEX("61626364")) ==
	      0); /* 1 line */
	CHECK(nv_creds_keychain_hex_multiline(HEX("0a0a")) == 1);
	CHECK(nv_creds_keychain_hex_multiline(HEX("0a")) == 0); /* too short */
	CHECK(nv_creds_keychain_hex_multiline(HEX("line1\nline2")) == 0);
	CHECK(nv_creds_keychain_hex_multiline(HEX(
		      "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822c")) ==
	      0);
	CHECK(nv_creds_keychain_hex_multiline(HEX("")) == 0);
#undef HEX
}

/* ---- base64url and JWT -------------------------------------------------- */

static void test_base64url(void)
{
	static const char *const in[] = {"",     "f",     "fo",    "foo",
					 "foob", "fooba", "foobar"};
	static const char *const out[] = {
		"", "Zg", "Zm8", "Zm9v", "Zm9vYg", "Zm9vYmE", "Zm9vYmFy"};
	static const unsigned char high[] = {0xfb, 0xff, 0xbf};
	char buf[64];

	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		memset(buf, 'X', sizeof(buf));
		size_t n = nv_base64url((const unsigned char *)in[i],
					strlen(in[i]), buf);
		CHECK_STR(buf, out[i]);
		CHECK(n == strlen(out[i]));
	}
	/* the url alphabet: '-' and '_' rather than '+' and '/' */
	nv_base64url(high, sizeof(high), buf);
	CHECK_STR(buf, "-_-_");
}

/* base64url -> bytes (test-side decoder); returns the length or -1. */
static long b64url_decode(const char *in, size_t len, unsigned char *out)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrst"
				"uvwxyz0123456789-_";
	unsigned v = 0;
	int bits = 0;
	long o = 0;

	for (size_t i = 0; i < len; i++) {
		const char *p = memchr(a, in[i], 64);
		if (!p || !in[i])
			return -1;
		v = (v << 6) | (unsigned)(p - a);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(v >> bits);
		}
	}
	return o;
}

/* bytes -> base64url without padding, through OpenSSL's encoder. */
static void openssl_b64url(const unsigned char *in, size_t len, char *out)
{
	int n = EVP_EncodeBlock((unsigned char *)out, in, (int)len);
	for (int i = 0; i < n; i++) {
		if (out[i] == '+')
			out[i] = '-';
		else if (out[i] == '/')
			out[i] = '_';
	}
	while (n > 0 && out[n - 1] == '=')
		n--;
	out[n] = '\0';
}

static void test_jwt(void)
{
	static const unsigned char keybytes[] = "jwt-key\0with-a-nul";
	const size_t keylen = sizeof(keybytes) - 1;
	nv_err err;
	nv_secret *key, *tok = NULL, *bearer;
	const nv_secret_field *f;
	char *token;
	const char *dot1, *dot2;
	unsigned char dec[1024], mac[EVP_MAX_MD_SIZE];
	unsigned int maclen = 0;
	char expect_sig[256];
	long n;
	double now = (double)time(NULL);

	key = nv_secret_new("slurm", NV_SECRET_HS256, "file", &err);
	CHECK(key && nv_secret_set(key, "key", keybytes, keylen, &err) == 0);
	if (!key)
		return;
	CHECK(nv_jwt_mint_hs256(key, "slurm.jwt", "{\"sun\":\"root\"}", 300,
				&tok, &err) == 0);
	if (!tok) {
		fprintf(stderr, "mint: %s\n", err.message);
		nv_secret_free(key);
		return;
	}
	CHECK(tok->kind == NV_SECRET_BEARER);
	CHECK_STR(tok->name, "slurm.jwt");
	CHECK_STR(tok->source, "minted");
	CHECK(contains(tok->origin, "slurm"));
	f = nv_secret_get(tok, "token");
	CHECK(f != NULL);
	if (!f)
		goto out;
	token = (char *)f->value;
	CHECK(strlen(token) == f->len);

	/* three base64url segments */
	dot1 = strchr(token, '.');
	dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
	CHECK(dot1 && dot2 && !strchr(dot2 + 1, '.'));
	if (!dot1 || !dot2)
		goto out;
	CHECK(strspn(token, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwx"
			    "yz0123456789-_.") == f->len);
	CHECK(!strchr(token, '='));

	/* header */
	n = b64url_decode(token, (size_t)(dot1 - token), dec);
	CHECK(n > 0);
	if (n > 0) {
		dec[n] = '\0';
		CHECK_STR((char *)dec, "{\"alg\":\"HS256\",\"typ\":\"JWT\"}");
	}

	/* payload: the claims plus iat and exp */
	n = b64url_decode(dot1 + 1, (size_t)(dot2 - dot1 - 1), dec);
	CHECK(n > 0);
	if (n > 0) {
		dec[n] = '\0';
		cJSON *p = cJSON_Parse((char *)dec);
		const cJSON *sun = cJSON_GetObjectItemCaseSensitive(p, "sun");
		const cJSON *iat = cJSON_GetObjectItemCaseSensitive(p, "iat");
		const cJSON *exp = cJSON_GetObjectItemCaseSensitive(p, "exp");
		CHECK(cJSON_IsObject(p));
		CHECK(cJSON_GetArraySize(p) == 3);
		CHECK(cJSON_IsString(sun) &&
		      strcmp(sun->valuestring, "root") == 0);
		CHECK(cJSON_IsNumber(iat) && cJSON_IsNumber(exp));
		if (cJSON_IsNumber(iat) && cJSON_IsNumber(exp)) {
			CHECK(exp->valuedouble - iat->valuedouble == 300);
			CHECK(fabs(iat->valuedouble - now) <= 5);
			CHECK(iat->valuedouble == floor(iat->valuedouble));
			CHECK(tok->expires_at == exp->valuedouble);
		}
		/* integers in the JSON text, not 1.7e9 */
		CHECK(!strstr((char *)dec, "e+"));
		cJSON_Delete(p);
	}

	/* signature: HMAC-SHA256(key, "header.payload"), computed here */
	CHECK(HMAC(EVP_sha256(), keybytes, (int)keylen,
		   (const unsigned char *)token, (size_t)(dot2 - token), mac,
		   &maclen) != NULL);
	CHECK(maclen == 32);
	openssl_b64url(mac, maclen, expect_sig);
	CHECK_STR(dot2 + 1, expect_sig);

out:
	nv_secret_free(tok);
	tok = NULL;

	/* existing iat/exp are replaced */
	CHECK(nv_jwt_mint_hs256(key, "t2",
				"{\"iat\":1,\"exp\":2,\"sun\":\"x\"}", 60, &tok,
				&err) == 0);
	if (tok) {
		f = nv_secret_get(tok, "token");
		dot1 = strchr((char *)f->value, '.');
		dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
		n = dot2 ? b64url_decode(dot1 + 1, (size_t)(dot2 - dot1 - 1),
					 dec)
			 : -1;
		CHECK(n > 0);
		if (n > 0) {
			dec[n] = '\0';
			cJSON *p = cJSON_Parse((char *)dec);
			const cJSON *iat =
				cJSON_GetObjectItemCaseSensitive(p, "iat");
			const cJSON *exp =
				cJSON_GetObjectItemCaseSensitive(p, "exp");
			CHECK(cJSON_GetArraySize(p) == 3);
			CHECK(iat && exp && iat->valuedouble > 1e9 &&
			      exp->valuedouble - iat->valuedouble == 60);
			cJSON_Delete(p);
		}
		nv_secret_free(tok);
		tok = NULL;
	}

	/* refusals: claims not an object, a lifespan <= 0, not an HS256 key */
	CHECK(nv_jwt_mint_hs256(key, "t", "[1]", 60, &tok, &err) == NV_EINVAL);
	CHECK(nv_jwt_mint_hs256(key, "t", "{bad", 60, &tok, &err) == NV_EINVAL);
	CHECK(nv_jwt_mint_hs256(key, "t", "{}", 0, &tok, &err) == NV_EINVAL);
	CHECK(tok == NULL);
	bearer = nv_secret_new("api", NV_SECRET_BEARER, "env", &err);
	if (bearer) {
		nv_secret_set(bearer, "token", "notakey", 7, &err);
		CHECK(nv_jwt_mint_hs256(bearer, "t", "{}", 60, &tok, &err) ==
		      NV_EINVAL);
		CHECK(tok == NULL);
		CHECK(contains(err.message, "api"));
		CHECK(contains(err.message, "HS256"));
		CHECK(contains(err.hint, "hs256"));
		nv_secret_free(bearer);
	}
	bearer = nv_secret_new("pemkey", NV_SECRET_PEM, "env", &err);
	if (bearer) {
		nv_secret_set(bearer, "key", "-----BEGIN", 10, &err);
		CHECK(nv_jwt_mint_hs256(bearer, "t", "{}", 60, &tok, &err) ==
		      NV_EINVAL);
		nv_secret_free(bearer);
	}
	nv_secret_free(key);
}

/* ---- ssh-cert ------------------------------------------------------------ */

/* data_dir/../ssh/certs/NAME (hex) decoded into out; its length. */
static size_t cert_vector(const char *name, char *out, size_t cap)
{
	char path[2048], hex[16384];
	size_t n, at = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/../ssh/certs/%s", data_dir, name);
	f = fopen(path, "r");
	n = f ? fread(hex, 1, sizeof(hex) - 1, f) : 0;
	if (f)
		fclose(f);
	for (size_t i = 0; i + 1 < n && hex[i] != '\n' && at + 1 < cap; i += 2)
		out[at++] = (char)(nv_hex_value((unsigned char)hex[i]) << 4 |
				   nv_hex_value((unsigned char)hex[i + 1]));
	out[at] = '\0';
	return at;
}

static char announced[4096];

static void cert_observer(const char *name, const void *value, size_t len)
{
	(void)name;
	if (len < sizeof(announced) && strstr(value, "-cert-v01") == NULL) {
		size_t used = strlen(announced);
		if (used + len + 2 < sizeof(announced)) {
			memcpy(announced + used, value, len);
			memcpy(announced + used + len, "|", 2);
		}
	}
}

static void test_ssh_cert(void)
{
	char key[8192], cert[8192], other[8192], host[8192], json[20000];
	char kp[1024], cp[1024], op[1024], hp[1024], jp[1024], *b64;
	size_t kn = cert_vector("ed25519.key.hex", key, sizeof(key));
	size_t cn = cert_vector("ed25519-cert.pub.hex", cert, sizeof(cert));
	size_t on = cert_vector("ecdsa-cert.pub.hex", other, sizeof(other));
	size_t hn = cert_vector("host-cert.pub.hex", host, sizeof(host));
	nv_creds_decl d = decl("login", NV_SECRET_SSH_CERT, "file");
	nv_secret *s = NULL;
	nv_err err;
	size_t j = 0;

	CHECK(kn > 300 && cn > 300 && on > 300 && hn > 300);
	CHECK(nv_secret_kind_parse("ssh-cert") == NV_SECRET_SSH_CERT);
	path_in(kp, sizeof(kp), base, "id");
	path_in(cp, sizeof(cp), base, "id-cert.pub");
	path_in(op, sizeof(op), base, "other-cert.pub");
	path_in(hp, sizeof(hp), base, "host-cert.pub");
	CHECK(write_file(kp, key, kn, 0600) == 0);
	CHECK(write_file(op, other, on, 0644) == 0);
	CHECK(write_file(hp, host, hn, 0644) == 0);
	d.path = kp;

	/* no certificate beside the key yet: the key alone, no expiry */
	unlink(cp);
	CHECK(nv_creds_load(&d, &s, &err) == 0);
	CHECK(s && field_is(s, "key", key, kn) && s->expires_at == 0 &&
	      !nv_secret_get(s, "certificate"));
	nv_secret_free(s);
	s = NULL;

	/* KEY-cert.pub beside it (mode 0644, as ssh-keygen writes it): its
	 * expiry read from the certificate, and its base64 announced */
	CHECK(write_file(cp, cert, cn, 0644) == 0);
	announced[0] = '\0';
	nv_secret_set_observer(cert_observer);
	CHECK(nv_creds_load(&d, &s, &err) == 0);
	nv_secret_set_observer(NULL);
	CHECK(s && s->expires_at == 1893542400.0);
	CHECK(s && field_is(s, "certificate", cert, cn - 1)); /* no newline */
	b64 = strchr(cert, ' ') + 1;
	*strchr(b64, ' ') = '\0';
	CHECK(contains(announced, b64) && contains(announced, "OPENSSH"));
	nv_secret_free(s);
	s = NULL;

	/* another key's certificate, a host certificate: refused */
	d.certificate = op;
	CHECK(nv_creds_load(&d, &s, &err) == NV_EREFUSED && !s);
	CHECK(contains(err.message, "is not for its key"));
	d.certificate = hp;
	CHECK(nv_creds_load(&d, &s, &err) == NV_EREFUSED);
	CHECK(contains(err.message, "host certificate"));
	/* an explicit certificate that is missing is an error */
	path_in(jp, sizeof(jp), base, "none-cert.pub");
	d.certificate = jp;
	CHECK(nv_creds_load(&d, &s, &err) == NV_EREFUSED);
	CHECK(contains(err.message, "cannot open its certificate"));

	/* a command prints {"Key", "Certificate"}; the expiry is the
	 * certificate's, not the command's claim */
	cert_vector("ed25519-cert.pub.hex", cert, sizeof(cert));
	cert[cn - 1] = '\0';
	j = (size_t)snprintf(json, sizeof(json), "{\"Version\":1,\"Key\":\"");
	for (size_t i = 0; i < kn; i++) {
		if (key[i] == '\n') {
			json[j++] = '\\';
			json[j++] = 'n';
		} else
			json[j++] = key[i];
	}
	snprintf(json + j, sizeof(json) - j,
		 "\",\"Certificate\":\"%s\",\"Expiration\":"
		 "\"2099-01-01T00:00:00Z\"}",
		 cert);
	path_in(jp, sizeof(jp), base, "cert.json");
	CHECK(write_file(jp, json, strlen(json), 0600) == 0);
	d = decl("login-cmd", NV_SECRET_SSH_CERT, "command");
	d.argv[0] = "cat";
	d.argv[1] = jp;
	nv_creds_cache_clear();
	CHECK(nv_creds_load(&d, &s, &err) == 0);
	CHECK(s && s->expires_at == 1893542400.0);
	CHECK(s && field_is(s, "key", key, kn));
	nv_secret_free(s);
	nv_creds_cache_clear();
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	const char *data = getenv("NAVETTE_TEST_DATA");
	char real[4096];

	if (data && *data)
		snprintf(data_dir, sizeof(data_dir), "%s/creds", data);
	else {
		/* run by hand: next to this file */
		snprintf(data_dir, sizeof(data_dir), "%s", __FILE__);
		char *slash = strrchr(data_dir, '/');
		if (slash)
			*slash = '\0';
		strncat(data_dir, "/../data/creds",
			sizeof(data_dir) - strlen(data_dir) - 1);
	}
	snprintf(base, sizeof(base), "%s/nv-creds-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(base)) {
		perror("mkdtemp");
		return 1;
	}
	if (!realpath(base, real) || strlen(real) + 64 > sizeof(base)) {
		perror("realpath");
		return 1;
	}
	memcpy(base, real, strlen(real) + 1);
	signal(SIGPIPE, SIG_IGN);

	test_secret_basics();
	test_observer();
	test_env();
	test_file();
	test_file_fifo();
	test_parse_time();
	test_command();
	test_keychain();
	test_no_exec();
	test_keychain_hex();
	test_base64url();
	test_jwt();
	test_ssh_cert();

	nv_creds_cache_clear();
	nftw(base, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return nv_test_done();
}
