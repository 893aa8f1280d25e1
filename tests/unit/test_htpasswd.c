/* New secrets and htpasswd lines (host/creds/htpasswd.c): an hs256 key has
 * the length asked and differs from the next, a basic password is drawn
 * from [A-Za-z0-9] only and every character of it shows up over many
 * draws, a user with ':' or a space and the kinds navette does not make
 * are refused; an htpasswd line is "user:$2y$CC$" and 53 characters that
 * libxcrypt verifies against the password and not against another, each
 * with its own salt; a hash made by Apache's htpasswd (apr's bcrypt, not
 * libxcrypt) verifies too. */
#include "creds/htpasswd.h"

#include <stdio.h>
#include <string.h>

#include "nv_test.h"

/* htpasswd -bnB -C 5 navette 'correct horse battery staple' (Apache
 * 2.4.65's htpasswd, Debian 12) */
static const char apache_hash[] =
	"$2y$05$4Tsx2dK78mIYvJL5AOQn7OF8k6VLrWMXli.uOLsYC1oJwsWpSmE5K";

static void test_generate(void)
{
	nv_err err;
	nv_secret *a = nv_secret_generate("k", NV_SECRET_HS256, NULL, 0, &err);
	nv_secret *b = nv_secret_generate("k", NV_SECRET_HS256, NULL, 64, &err);
	const nv_secret_field *fa, *fb;
	int seen[256] = {0}, others = 0, kinds = 0;

	CHECK(a != NULL && b != NULL);
	if (!a || !b)
		return;
	fa = nv_secret_get(a, "key");
	fb = nv_secret_get(b, "key");
	CHECK(fa && fa->len == 32);
	CHECK(fb && fb->len == 64);
	CHECK(strcmp(a->source, "generated") == 0);
	CHECK(fa && fb && memcmp(fa->value, fb->value, 32) != 0);
	nv_secret_free(a);
	nv_secret_free(b);

	for (int i = 0; i < 200; i++) {
		nv_secret *p = nv_secret_generate("r", NV_SECRET_BASIC, "svc",
						  32, &err);
		const nv_secret_field *f =
			p ? nv_secret_get(p, "password") : NULL;
		CHECK(f && f->len == 32);
		for (size_t j = 0; f && j < f->len; j++) {
			unsigned char c = f->value[j];
			if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			    (c >= '0' && c <= '9'))
				seen[c]++;
			else
				others++;
		}
		CHECK(p && strcmp((const char *)nv_secret_get(p, "user")->value,
				  "svc") == 0);
		nv_secret_free(p);
	}
	CHECK(others == 0);
	for (int c = 0; c < 256; c++)
		kinds += seen[c] > 0;
	CHECK(kinds == 62); /* 6400 draws: each of 62 seen */

	CHECK(nv_secret_generate("r", NV_SECRET_BASIC, "a:b", 32, &err) ==
	      NULL);
	CHECK(err.code == NV_EINVAL);
	CHECK(nv_secret_generate("r", NV_SECRET_BASIC, "a b", 32, &err) ==
	      NULL);
	CHECK(nv_secret_generate("r", NV_SECRET_BASIC, NULL, 32, &err) == NULL);
	CHECK(nv_secret_generate("r", NV_SECRET_S3, NULL, 32, &err) == NULL);
	CHECK(strstr(err.message, "not s3") != NULL);
	CHECK(nv_secret_generate("k", NV_SECRET_HS256, NULL, 8, &err) == NULL);
	CHECK(nv_secret_generate("k", NV_SECRET_HS256, NULL, 513, &err) ==
	      NULL);
}

static void test_line(void)
{
	nv_err err;
	char one[NV_HTPASSWD_LINE_MAX], two[NV_HTPASSWD_LINE_MAX];
	nv_secret *s = nv_secret_new("r", NV_SECRET_BASIC, "file", &err);
	const char *pw = "correct horse battery staple";

	nv_secret_set(s, "user", "navette", 7, &err);
	nv_secret_set(s, "password", pw, strlen(pw), &err);
	CHECK(nv_htpasswd_line(s, 5, one, sizeof(one), &err) == 0);
	CHECK(strncmp(one, "navette:$2y$05$", 15) == 0);
	CHECK(strlen(one) == 8 + 60);
	CHECK(nv_htpasswd_check(one + 8, (const unsigned char *)pw,
				strlen(pw)) == 1);
	CHECK(nv_htpasswd_check(one + 8, (const unsigned char *)"correct", 7) ==
	      0);
	CHECK(nv_htpasswd_line(s, 0, two, sizeof(two), &err) == 0);
	CHECK(strncmp(two, "navette:$2y$10$", 15) == 0);
	CHECK(strcmp(one + 15, two + 15) != 0); /* salts differ */
	CHECK(nv_htpasswd_check(apache_hash, (const unsigned char *)pw,
				strlen(pw)) == 1);
	CHECK(nv_htpasswd_check(apache_hash, (const unsigned char *)"x", 1) ==
	      0);
	CHECK(nv_htpasswd_check("$1$abc", (const unsigned char *)pw,
				strlen(pw)) == -1);

	CHECK(nv_htpasswd_line(s, 3, one, sizeof(one), &err) == NV_EINVAL);
	CHECK(nv_htpasswd_line(s, 15, one, sizeof(one), &err) == NV_EINVAL);
	CHECK(nv_htpasswd_line(s, 4, one, 20, &err) == NV_ENOMEM);
	nv_secret_set(s, "password", "a\0b", 3, &err);
	CHECK(nv_htpasswd_line(s, 4, one, sizeof(one), &err) == NV_EINVAL);
	{
		char long_pw[80];
		memset(long_pw, 'x', sizeof(long_pw));
		nv_secret_set(s, "password", long_pw, 73, &err);
		CHECK(nv_htpasswd_line(s, 4, one, sizeof(one), &err) ==
		      NV_EINVAL);
	}
	nv_secret_set(s, "user", "na:v", 4, &err);
	nv_secret_set(s, "password", "pw", 2, &err);
	CHECK(nv_htpasswd_line(s, 4, one, sizeof(one), &err) == NV_EINVAL);
	nv_secret_free(s);

	s = nv_secret_new("k", NV_SECRET_HS256, "file", &err);
	nv_secret_set(s, "key", "0123456789abcdef", 16, &err);
	CHECK(nv_htpasswd_line(s, 4, one, sizeof(one), &err) == NV_EINVAL);
	nv_secret_free(s);
}

int main(void)
{
	test_generate();
	test_line();
	return nv_test_done();
}
