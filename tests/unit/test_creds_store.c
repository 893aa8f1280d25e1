/* Writing a credential back to its source (host/creds/store.c): the text
 * of each kind is what the file source reads back (a round trip through
 * nv_creds_load), the file is replaced atomically with mode 0600 and no
 * temp file left, a folder or a value of several lines for the Keychain
 * is refused, and the Keychain is written by its tool with
 * add-generic-password -U -s -a -w (a stand-in script written here records
 * its arguments; its exit status 36 reads as a locked Keychain). Works in
 * a fresh folder under $TMPDIR (or /tmp). */
#include "creds/secret.h"
#include "creds/source.h"
#include "creds/store.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nv_test.h"

static char base[512];

static nv_secret *s3_secret(const char *id, const char *key, const char *token)
{
	nv_secret *s = nv_secret_new("svc", NV_SECRET_S3, "minted", NULL);
	nv_secret_set(s, "access_key_id", id, strlen(id), NULL);
	nv_secret_set(s, "secret_access_key", key, strlen(key), NULL);
	if (token)
		nv_secret_set(s, "session_token", token, strlen(token), NULL);
	return s;
}

static int field_is(const nv_secret *s, const char *name, const char *want)
{
	const nv_secret_field *f = nv_secret_get(s, name);
	return f && f->len == strlen(want) &&
	       memcmp(f->value, want, f->len) == 0;
}

static nv_secret *load_file(const char *path, nv_secret_kind kind)
{
	nv_creds_decl d;
	nv_secret *s = NULL;
	nv_err err;

	memset(&d, 0, sizeof(d));
	d.name = "svc";
	d.kind = kind;
	d.source = "file";
	d.path = path;
	if (nv_creds_load(&d, &s, &err) != 0)
		fprintf(stderr, "load: %s\n", err.message);
	return s;
}

static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	if (d)
		closedir(d);
	return n;
}

static void test_text(void)
{
	nv_secret *s = s3_secret("AK1", "se\"cr\\et", NULL);
	unsigned char *text;
	size_t len;
	nv_err err;

	CHECK(nv_creds_store_text(s, 0, &text, &len, &err) == 0);
	/* punctuation outside a key's alphabet is written \u00XX */
	CHECK_STR((const char *)text,
		  "{\"Version\": 1, \"AccessKeyId\": \"AK1\", "
		  "\"SecretAccessKey\": \"se\\u0022cr\\u005cet\"}\n");
	free(text);
	CHECK(nv_creds_store_text(s, 1, &text, &len, &err) == 0);
	CHECK(text[len - 1] == '}'); /* no newline for the Keychain */
	free(text);
	nv_secret_free(s);

	s = nv_secret_new("b", NV_SECRET_BASIC, "minted", NULL);
	nv_secret_set(s, "user", "ci", 2, NULL);
	nv_secret_set(s, "password", "pw", 2, NULL);
	CHECK(nv_creds_store_text(s, 0, &text, &len, &err) == 0);
	CHECK_STR((const char *)text, "ci:pw\n");
	free(text);
	CHECK(nv_creds_store_text(s, 1, &text, &len, &err) == 0);
	CHECK_STR((const char *)text, "pw"); /* the account is the user */
	free(text);
	nv_secret_free(s);

	/* a PEM key has several lines: not for the Keychain */
	s = nv_secret_new("p", NV_SECRET_PEM, "minted", NULL);
	nv_secret_set(s, "key", "-----BEGIN-----\nx\n-----END-----", 31, NULL);
	CHECK(nv_creds_store_text(s, 1, &text, &len, &err) == NV_EREFUSED);
	CHECK(strstr(err.message, "one line") != NULL);
	nv_secret_free(s);

	/* an incomplete secret is refused */
	s = nv_secret_new("i", NV_SECRET_S3, "minted", NULL);
	nv_secret_set(s, "access_key_id", "AK", 2, NULL);
	CHECK(nv_creds_store_text(s, 0, &text, &len, &err) == NV_EREFUSED);
	nv_secret_free(s);
}

static void test_file(void)
{
	char dir[600], path[700];
	nv_secret *s, *back;
	struct stat st;
	nv_err err;

	snprintf(dir, sizeof(dir), "%s/creds", base);
	mkdir(dir, 0700);
	snprintf(path, sizeof(path), "%s/svc.json", dir);
	/* an old value of mode 0644, as someone may have left it */
	FILE *f = fopen(path, "w");
	fputs("{\"AccessKeyId\": \"OLD\", \"SecretAccessKey\": \"old\"}", f);
	fclose(f);
	chmod(path, 0644);

	s = s3_secret("AKNEW", "new-secret", "tok");
	CHECK(nv_creds_store_file(s, path, &err) == 0);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
	CHECK(entries(dir) == 1); /* no temp file left */
	back = load_file(path, NV_SECRET_S3);
	CHECK(back != NULL);
	if (back) {
		CHECK(field_is(back, "access_key_id", "AKNEW"));
		CHECK(field_is(back, "secret_access_key", "new-secret"));
		CHECK(field_is(back, "session_token", "tok"));
		nv_secret_free(back);
	}
	/* a folder in its place is refused, and left as it is */
	CHECK(nv_creds_store_file(s, dir, &err) == NV_EREFUSED);
	nv_secret_free(s);

	/* an hs256 key is read back byte for byte */
	s = nv_secret_new("svc", NV_SECRET_HS256, "minted", NULL);
	nv_secret_set(s, "key", "k\0y\n", 4, NULL);
	snprintf(path, sizeof(path), "%s/jwt.key", dir);
	CHECK(nv_creds_store_file(s, path, &err) == 0);
	back = load_file(path, NV_SECRET_HS256);
	CHECK(back && nv_secret_get(back, "key")->len == 4 &&
	      memcmp(nv_secret_get(back, "key")->value, "k\0y\n", 4) == 0);
	nv_secret_free(back);
	nv_secret_free(s);
}

static void test_keychain(void)
{
	char tool[600], args[600], script[2048], got[1024] = "";
	nv_secret *s = s3_secret("AKK", "kc-secret", NULL);
	nv_err err;
	FILE *f;

	snprintf(tool, sizeof(tool), "%s/security", base);
	snprintf(args, sizeof(args), "%s/args", base);
	snprintf(script, sizeof(script),
		 "#!/bin/sh\nfor a in \"$@\"; do printf '%%s|' \"$a\"; done "
		 ">'%s'\nexit \"${STANDIN_EXIT:-0}\"\n",
		 args);
	f = fopen(tool, "w");
	fputs(script, f);
	fclose(f);
	chmod(tool, 0700);
	nv_creds_set_keychain_tool(tool);

	CHECK(nv_creds_store_keychain(s, "navette-s3", "ci", &err) == 0);
	f = fopen(args, "r");
	if (f) {
		if (!fgets(got, sizeof(got), f))
			got[0] = '\0';
		fclose(f);
	}
	CHECK_STR(got, "add-generic-password|-U|-s|navette-s3|-a|ci|-w|"
		       "{\"Version\": 1, \"AccessKeyId\": \"AKK\", "
		       "\"SecretAccessKey\": \"kc-secret\"}|");

	setenv("STANDIN_EXIT", "36", 1);
	CHECK(nv_creds_store_keychain(s, "navette-s3", "ci", &err) ==
	      NV_EREFUSED);
	CHECK(strstr(err.message, "locked") != NULL);
	setenv("STANDIN_EXIT", "44", 1);
	CHECK(nv_creds_store_keychain(s, "navette-s3", "ci", &err) ==
	      NV_EREFUSED);
	CHECK(strstr(err.message, "exit status 44") != NULL);
	CHECK(strstr(err.message, "kc-secret") == NULL);
	unsetenv("STANDIN_EXIT");
	CHECK(nv_creds_store_keychain(s, "", "ci", &err) == NV_EINVAL);
	nv_creds_set_keychain_tool(NULL);
	nv_secret_free(s);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	char cmd[700];

	snprintf(base, sizeof(base), "%s/nv-creds-store-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(base)) {
		perror("mkdtemp");
		return 1;
	}
	test_text();
	test_file();
	test_keychain();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	if (system(cmd) != 0)
		fprintf(stderr, "warning: could not remove %s\n", base);
	return nv_test_done();
}
