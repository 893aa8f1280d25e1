/* The redactor: registered secrets in all their encoded forms, credential
 * shapes (PEM keys with prefixed lines too), salted fingerprints of another
 * redactor's secrets, streaming across every chunk boundary, text left
 * alone, and the environment allow-list. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "creds/redact.h"
#include "creds/token_shapes.h"
#include "nv_test.h"
#include "token_samples.h"

static char outbuf[1 << 20];

/* One-shot redaction into a static buffer. */
static const char *red(nv_redactor *r, const char *in)
{
	nv_buf b;

	nv_buf_init(&b, sizeof(outbuf) - 1);
	if (nv_redact_buffer(r, in, strlen(in), &b) != 0) {
		nv_buf_free(&b);
		return "(error)";
	}
	memcpy(outbuf, b.data ? b.data : "", b.len);
	outbuf[b.len] = '\0';
	nv_buf_free(&b);
	return outbuf;
}

/* The redaction of in copied into the array dst: a redaction longer
 * than dst fails the test instead of being compared cut. */
#define RED_INTO(dst, r, in)                                                   \
	CHECK((size_t)snprintf((dst), sizeof(dst), "%s", red((r), (in))) <     \
	      sizeof(dst))

static void emit_buf(const char *buf, size_t len, void *payload)
{
	nv_buf_append(payload, buf, len);
}

/* Streams in through writes of the given sizes (cycled); out is
 * initialised by the caller. */
static int stream_through(nv_redactor *r, const char *in, size_t len,
			  const size_t *sizes, size_t nsizes, nv_buf *out)
{
	nv_redact_stream *s = nv_redact_stream_new(r, emit_buf, out);
	size_t off = 0, k = 0;
	int rc = 0;

	if (!s)
		return -1;
	while (off < len && rc == 0) {
		size_t n = sizes[k++ % nsizes];
		if (n > len - off)
			n = len - off;
		rc = nv_redact_stream_write(s, in + off, n);
		off += n;
	}
	if (rc == 0)
		rc = nv_redact_stream_flush(s);
	nv_redact_stream_free(s);
	return rc;
}

static void b64(const unsigned char *in, size_t len, char *out, int url,
		int pad)
{
	int n = EVP_EncodeBlock((unsigned char *)out, in, (int)len);
	for (int i = 0; i < n; i++) {
		if (url && out[i] == '+')
			out[i] = '-';
		if (url && out[i] == '/')
			out[i] = '_';
		if (!pad && out[i] == '=')
			out[i] = '\0';
	}
}

static void test_shapes(nv_redactor *r)
{
	CHECK_STR(red(r, "GET /b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&"
			 "X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20240101"
			 "&X-Amz-Date=20240101T000000Z&X-Amz-Signature="
			 "abcdef0123456789 HTTP/1.1"),
		  "GET /b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&"
		  "X-Amz-Credential=<redacted:x-amz-credential>"
		  "&X-Amz-Date=20240101T000000Z&X-Amz-Signature="
		  "<redacted:x-amz-signature> HTTP/1.1");
	CHECK_STR(red(r, "url='https://h/k?x-amz-security-token=FQoGZXIvYXdz"
			 "EJr'"),
		  "url='https://h/k?x-amz-security-token="
		  "<redacted:x-amz-security-token>'");
	CHECK_STR(red(r, "> Authorization: AWS4-HMAC-SHA256 Credential=a/b, "
			 "Signature=ff00\r\n> Host: h\n"),
		  "> Authorization: <redacted:authorization>\r\n> Host: h\n");
	CHECK_STR(
		red(r, "{\"authorization\": \"Basic dXNlcjpwYXNz\", \"n\": 1}"),
		"{\"authorization\": \"<redacted:authorization>\", "
		"\"n\": 1}");
	CHECK_STR(red(r, "token: Bearer abc123def456ghi789 ok"),
		  "token: Bearer <redacted:bearer> ok");
	CHECK_STR(red(r, "eyJhbGciOiJIUzI1NiJ9."
			 "eyJzdWIiOiIxMjM0In0."
			 "dozjgNryP4J3j"
			 "VmNHl0w5N_XgL0n3I9PlFUP0THsR8U."),
		  "<redacted:jwt>.");
	CHECK_STR(red(r, "jwt=eyJhbGciOiJub25lIn0."
			 "eyJzdWIiOiJ4In0. end"),
		  "jwt=<redacted:jwt> end");
	CHECK_STR(red(r,
		      "before\n-----BEGIN RSA PRIVATE KEY-----\n"
		      "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\n"
		      "4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0/IzW7yWR7Qk\n"
		      "abc+/=\n-----END RSA PRIVATE KEY-----\nafter"),
		  "before\n<redacted:private-key>\nafter");
	CHECK_STR(
		red(r,
		    "{\"private_key\": \"-----BEGIN PRIVATE "
		    "KEY-----\\nMII"
		    "Ev\\nQIBADAN\\n-----END PRIVATE KEY-----\\n\", \"a\": 1}"),
		"{\"private_key\": \"<redacted:private-key>\\n\", \"a\": 1}");
	CHECK_STR(red(r, "key AKIA"
			 "IOSFODNN7EXAMPLE used, ASIA"
			 "Y34FZKBOKMUTVV7A."),
		  "key <redacted:aws-access-key-id> used, "
		  "<redacted:aws-access-key-id>.");
	CHECK_STR(red(r, "aws_secret_access_key = "
			 "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"),
		  "aws_secret_access_key = <redacted:aws-secret-key>\n");
	CHECK_STR(red(r, "{\"SecretAccessKey\": "
			 "\"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\"}"),
		  "{\"SecretAccessKey\": \"<redacted:aws-secret-key>\"}");
	CHECK_STR(red(r, "clone https://alice:s3cr3t-pass@example.com/r.git"),
		  "clone https://alice:<redacted:url-password>@example.com/"
		  "r.git");
	CHECK_STR(red(r, "https://ghp_"
			 "16C7e42F292c6912E7710c838347Ae178B4a"
			 "@github.com/o/r"),
		  "https://<redacted:url-userinfo>@github.com/o/r");
}

static void test_not_masked(nv_redactor *r)
{
	static const char *const plain[] = {
		"2024-05-01T12:34:56.789Z INFO step 1200/5000 loss=0.1234 "
		"lr=3e-4\n",
		"commit 3f2a9c1b7e4d5f60718293a4b5c6d7e8f9012345 (HEAD)\n",
		"sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c"
		"15b0f00a08\n",
		"job 123e4567-e89b-12d3-a456-426614174000 at "
		"/var/lib/navette/jobs/a-b/out/model.safetensors\n",
		"password: \nsecret: \nAuthorization: \n",
		"the Bearer scheme; Bearer authentication; bearer <token>\n",
		"http://localhost:8080/path?q=1 and ssh://git@github.com/o/r\n",
		"-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n"
		"-----END CERTIFICATE-----\n",
		"eyJ is a prefix; AKIA is too; AKIAIOSFODNN7EXAMPLEX is long\n",
		"X-Amz-Date=20240101T000000Z x-amz-signature\n",
		"{\"step\": 12, \"path\": \"s3://bucket/key\", \"ok\": true}\n",
		"the secret is out; secrets: none; secret=short\n",
	};

	for (size_t i = 0; i < sizeof(plain) / sizeof(*plain); i++)
		CHECK_STR(red(r, plain[i]), plain[i]);
}

static void test_secret_forms(nv_redactor *r)
{
	/* Bytes chosen so that both base64 alphabets differ and
	 * percent-encoding has letters in its hex. */
	static const unsigned char sec[] = "\xfb\xef\xbe/s3cr3t+P@ss\xff?&=~z";
	size_t n = sizeof(sec) - 1;
	unsigned char in[64];
	char enc[128], text[256], mid[9];
	nv_err err;

	CHECK(nv_redact_add_secret(r, "db_password", sec, n, &err) == 0);
	memcpy(text, "pw=", 3);
	memcpy(text + 3, sec, n);
	strcpy(text + 3 + n, " done");
	CHECK_STR(red(r, text), "pw=<redacted:db_password> done");

	for (int url = 0; url < 2; url++) {
		for (size_t align = 0; align < 3; align++) {
			for (int tail = 0; tail < 3; tail++) {
				memcpy(in, "\x01\x02", align);
				memcpy(in + align, sec, n);
				memcpy(in + align + n, "ab", (size_t)tail);
				b64(in, align + n + (size_t)tail, enc, url,
				    tail != 1);
				snprintf(text, sizeof(text), "data: %s\n", enc);
				memcpy(mid, enc + strlen(enc) / 2 - 4, 8);
				mid[8] = '\0';
				const char *o = red(r, text);
				CHECK(strstr(o, "<redacted:db_password>") !=
				      NULL);
				CHECK(strstr(o, mid) == NULL);
			}
		}
	}

	static const char *const encoded[] = {
		"%FB%EF%BE%2Fs3cr3t%2BP%40ss%FF%3F%26%3D~z",
		"%fb%ef%be%2fs3cr3t%2bP%40ss%ff%3f%26%3d~z",
	};
	for (size_t i = 0; i < 2; i++) {
		snprintf(text, sizeof(text), "GET /cb?pw=%s&x=1", encoded[i]);
		CHECK_STR(red(r, text),
			  "GET /cb?pw=<redacted:db_password>&x=1");
	}
}

static void test_short_and_names(void)
{
	nv_redactor *r = nv_redactor_new();
	nv_err err;
	char big[NV_REDACT_SECRET_MAX + 1];

	CHECK(r != NULL);
	CHECK(nv_redact_add_secret(r, "pin", "pass123", 7, &err) ==
	      NV_EREFUSED);
	CHECK(err.code == NV_EREFUSED);
	CHECK(nv_redact_secret_count(r) == 0);
	CHECK_STR(red(r, "user pass123 logged in"), "user pass123 logged in");
	CHECK(nv_redact_add_secret(r, "bad name", "longenough1", 11, &err) ==
	      NV_EINVAL);
	memset(big, 'q', sizeof(big));
	CHECK(nv_redact_add_secret(r, "big", big, sizeof(big), &err) ==
	      NV_EINVAL);
	CHECK(nv_redact_add_secret(r, "tok", "pass1234", 8, &err) == 0);
	CHECK(nv_redact_add_secret(r, "tok2", "pass1234", 8, &err) == 0);
	CHECK(nv_redact_secret_count(r) == 1);
	CHECK_STR(red(r, "pass123 pass1234"), "pass123 <redacted:tok>");
	/* registering after use rebuilds the automaton */
	CHECK(nv_redact_add_secret(r, "other", "0th3r-s3cret", 12, &err) == 0);
	CHECK_STR(red(r, "a 0th3r-s3cret b pass1234"),
		  "a <redacted:other> b <redacted:tok>");
	nv_redactor_free(r);
}

static const char split_text[] =
	"start line\nkey=Zm9vYmFyLXNlY3JldC0xMjM0 raw=foobar-secret-1234 "
	"url=https://u:"
	"pw-98765432@h/x AKIA"
	"IOSFODNN7EXAMPLE\n"
	"Authorization: Bearer abcdefgh12345678\n"
	"t=eyJhbGciOiJIUzI1NiJ9."
	"eyJzdWIiOiIxMjM0In0."
	"dozjgNryP4J3jVmNHl0w5N\n"
	"-----BEGIN EC PRIVATE "
	"KEY-----\nMHcCAQEEIIrYSSNQFaA2Hwf1duRSxKtLYX5\n"
	"oAoGCCqGSM49AwEHoUQDQgAE\n-----END EC PRIVATE KEY-----\n"
	"?X-Amz-Signature=0123456789abcdef&y=1 end foobar-secret-1234";

static void test_splits(nv_redactor *r)
{
	size_t len = sizeof(split_text) - 1;
	char expect[4096];
	size_t bad = 0, first_bad = 0;
	nv_buf b;
	size_t one = 1;

	snprintf(expect, sizeof(expect), "%s", red(r, split_text));
	CHECK(strstr(expect, "foobar-secret-1234") == NULL);
	CHECK(strstr(expect, "Zm9vYmFyLXNlY3JldC0x") == NULL);
	CHECK(strstr(expect, "MHcCAQEE") == NULL);
	CHECK(strstr(expect, "pw-98765432") == NULL);
	CHECK(strstr(expect, "0123456789abcdef") == NULL);
	CHECK(strstr(expect, "abcdefgh12345678") == NULL);
	CHECK(strstr(expect, "end <redacted:split>") != NULL);

	nv_buf_init(&b, 1 << 20);
	CHECK(stream_through(r, split_text, len, &one, 1, &b) == 0);
	CHECK_STR(b.data, expect);
	nv_buf_free(&b);

	for (size_t cut = 0; cut <= len; cut++) {
		size_t sizes[2] = {cut, len};
		nv_buf_init(&b, 1 << 20);
		if (stream_through(r, split_text, len, sizes, 2, &b) != 0 ||
		    !b.data || strcmp(b.data, expect) != 0) {
			if (!bad++)
				first_bad = cut;
		}
		nv_buf_free(&b);
	}
	if (bad)
		fprintf(stderr, "split at %zu differs\n", first_bad);
	CHECK(bad == 0);
}

/* A PEM block longer than the stream window: masked anyway, the rest of
 * the block dropped, the text after it shown. */
static void test_long_pem(nv_redactor *r)
{
	nv_buf in, out;
	size_t sizes[] = {4096, 1000, 7};

	nv_buf_init(&in, 1 << 20);
	nv_buf_puts(&in, "head\n-----BEGIN PRIVATE KEY-----\n");
	for (int i = 0; i < 600; i++)
		nv_buf_puts(&in, "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNk\n");
	nv_buf_puts(&in, "-----END PRIVATE KEY-----\ntail.\n");
	for (size_t k = 0; k < 3; k++) {
		nv_buf_init(&out, 1 << 20);
		CHECK(stream_through(r, in.data, in.len, sizes + k, 1, &out) ==
		      0);
		CHECK(out.data && strstr(out.data, "QUJDREVG") == NULL);
		CHECK(out.data &&
		      strncmp(out.data, "head\n<redacted:private-key>", 27) ==
			      0);
		CHECK(out.data && strstr(out.data, "\ntail.\n") != NULL);
		nv_buf_free(&out);
	}
	nv_buf_free(&in);
}

static uint64_t rng = 88172645463325252ull;

static unsigned rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

static void test_thousand(void)
{
	static const char alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn"
				    "opqrstuvwxyz0123456789-_+/!$";
	static char secrets[1000][65];
	nv_redactor *r = nv_redactor_new();
	nv_buf text, out;
	nv_err err;
	int added = 0, leaked = 0, count = 0;

	nv_buf_init(&text, 1 << 20);
	for (int i = 0; i < 1000; i++) {
		size_t n = 16 + rnd(49);
		char name[16];
		for (size_t k = 0; k < n; k++)
			secrets[i][k] = alpha[rnd(sizeof(alpha) - 1)];
		secrets[i][n] = '\0';
		snprintf(name, sizeof(name), "s%d", i);
		added +=
			nv_redact_add_secret(r, name, secrets[i], n, &err) == 0;
		nv_buf_printf(&text, "line %d value=%s ok\n", i, secrets[i]);
	}
	CHECK(added == 1000);
	nv_buf_init(&out, 1 << 22);
	CHECK(nv_redact_buffer(r, text.data, text.len, &out) == 0);
	for (int i = 0; i < 1000; i++)
		leaked += out.data && strstr(out.data, secrets[i]) != NULL;
	for (const char *p = out.data; p && (p = strstr(p, "<redacted:s")); p++)
		count++;
	CHECK(leaked == 0);
	CHECK(count == 1000);
	CHECK(out.data && strstr(out.data, "line 999 value=<redacted:s999> "
					   "ok\n") != NULL);
	nv_buf_free(&out);
	test_not_masked(r);
	nv_buf_free(&text);
	nv_redactor_free(r);
}

/* Has the document or output got these bytes anywhere? (memmem(), which
 * is not POSIX.) */
static int holds(const char *hay, size_t n, const void *needle, size_t m)
{
	for (size_t i = 0; hay && m <= n && i <= n - m; i++)
		if (memcmp(hay + i, needle, m) == 0)
			return 1;
	return 0;
}

/* Streams in byte by byte and at every two-chunk split; 0 when each
 * result is `expect`. */
static size_t stream_mismatches(nv_redactor *r, const char *in, size_t len,
				const char *expect)
{
	size_t bad = 0, one = 1;
	nv_buf b;

	nv_buf_init(&b, 1 << 20);
	if (stream_through(r, in, len, &one, 1, &b) != 0 || !b.data ||
	    strcmp(b.data, expect) != 0)
		bad++;
	nv_buf_free(&b);
	for (size_t cut = 0; cut <= len; cut++) {
		size_t sizes[2] = {cut, len};
		nv_buf_init(&b, 1 << 20);
		if (stream_through(r, in, len, sizes, 2, &b) != 0 || !b.data ||
		    strcmp(b.data, expect) != 0) {
			if (!bad++)
				fprintf(stderr, "split at %zu differs\n", cut);
		}
		nv_buf_free(&b);
	}
	return bad;
}

/* "<redacted:RULE>" of a table row. */
static const char *token_label(const nv_token_shape *t)
{
	static char label[64];

	snprintf(label, sizeof(label), "<redacted:%s>", t->rule);
	return label;
}

/* Every row of the table of token shapes (the one the tree scanner uses):
 * masked in one write, byte by byte and at every two-write split, at its
 * shortest and at 300 characters (fixed-length rows: their length), next
 * to text; the near misses (one character short, one too many for a fixed
 * length, glued to a word before or after) left alone, split or not. */
static void test_token_table(nv_redactor *r)
{
	char tok[512], text[1280], expect[640], miss[640];
	size_t masked = 0;

	for (size_t k = 0; k < NV_TOKEN_SHAPE_COUNT; k++) {
		const nv_token_shape *t = &nv_token_shapes[k];
		size_t min = t->charset == NV_TOKEN_JWT ? 8 : t->min;
		size_t runs[2] = {min, t->max ? t->max : 300};
		char label[64];

		snprintf(label, sizeof(label), "%s", token_label(t));
		for (size_t v = 0; v < 2; v++) {
			token_sample(t, runs[v], tok, sizeof(tok));
			snprintf(text, sizeof(text), "k=%s, \"%s\"\n", tok,
				 tok);
			snprintf(expect, sizeof(expect), "k=%s, \"%s\"\n",
				 label, label);
			CHECK_STR(red(r, text), expect);
			CHECK(stream_mismatches(r, text, strlen(text),
						expect) == 0);
			masked += strcmp(red(r, text), expect) == 0;
		}

		/* one character short of a token */
		token_sample(t, min - 1, tok, sizeof(tok));
		snprintf(miss, sizeof(miss), "k=%s end\n", tok);
		CHECK_STR(red(r, miss), miss);
		CHECK(stream_mismatches(r, miss, strlen(miss), miss) == 0);
		/* inside a word */
		token_sample(t, runs[0], tok, sizeof(tok));
		snprintf(miss, sizeof(miss), "k=a%s end\n", tok);
		CHECK_STR(red(r, miss), miss);
		snprintf(miss, sizeof(miss), "k=_%s end\n", tok);
		CHECK_STR(red(r, miss), miss);
		if (t->charset == NV_TOKEN_UPPER_DIGIT) {
			/* a letter its class lacks glued after it */
			snprintf(miss, sizeof(miss), "k=%sq end\n", tok);
			CHECK_STR(red(r, miss), miss);
		}
		if (t->max) {
			/* a fixed-length shape one character too long */
			token_sample(t, t->max + 1, tok, sizeof(tok));
			snprintf(miss, sizeof(miss), "k=%s end\n", tok);
			CHECK_STR(red(r, miss), miss);
			CHECK(stream_mismatches(r, miss, strlen(miss), miss) ==
			      0);
		}
	}
	CHECK(masked == 2 * NV_TOKEN_SHAPE_COUNT);

	/* JWT near misses: a short header, a short payload, no payload, a
	 * start glued to a dot; prefixes alone */
	static const char *const near[] = {
		"t=eyJhbGci.eyJzdWIiOiIxMjM0 end\n",
		"t=eyJhbGciOiJIUzI1NiJ9.eyJzdWI end\n",
		"t=eyJhbGciOiJIUzI1NiJ9. end\n",
		"t=.eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0 end\n",
		"see eyJ and glpat- and xoxb- and ghp_ and AKIA\n",
	};
	for (size_t i = 0; i < sizeof(near) / sizeof(*near); i++) {
		CHECK_STR(red(r, near[i]), near[i]);
		CHECK(stream_mismatches(r, near[i], strlen(near[i]), near[i]) ==
		      0);
	}
}

/* Streams in through writes of `size` bytes; 1 when the output is
 * expect. */
static int stream_equals(nv_redactor *r, const nv_buf *in, size_t size,
			 const char *expect)
{
	nv_buf out;
	int ok;

	nv_buf_init(&out, 1 << 22);
	ok = stream_through(r, in->data, in->len, &size, 1, &out) == 0 &&
	     out.data && strcmp(out.data, expect) == 0;
	if (!ok)
		fprintf(stderr, "write size %zu: %.80s...\n", size,
			out.data ? out.data : "(none)");
	nv_buf_free(&out);
	return ok;
}

/* A token of any length is masked whole, with the text around it shown:
 * JWTs of 64 KiB and 1 MiB (a JWT past the 64 KiB stream block was shown
 * in clear), a 1 MiB GitHub token, and a JWT header too long to wait for
 * its dot, in one buffer and through writes of several sizes. A header
 * without a dot under that bound is left alone. */
static void test_long_tokens(nv_redactor *r)
{
	static const size_t sizes[] = {7, 4096, 65536, 65537, 1000003};
	static const size_t lengths[] = {64 * 1024, 1024 * 1024};
	static const char gh_expect[] = "a=<redacted:github-token> end\n";
	static const char jwt_expect[] = "a=<redacted:jwt> end\n";
	const nv_token_shape *gh = NULL;
	char small[512];
	nv_buf in;

	for (size_t k = 0; k < NV_TOKEN_SHAPE_COUNT; k++)
		if (strcmp(nv_token_shapes[k].prefix, "ghp_") == 0)
			gh = &nv_token_shapes[k];
	CHECK(gh != NULL);
	if (!gh)
		return;
	token_sample(gh, 40, small, sizeof(small));
	for (size_t l = 0; l < 2; l++) {
		static const char expect[] =
			"a=<redacted:jwt> then <redacted:github-token> end\n";
		nv_buf_init(&in, 4 << 20);
		nv_buf_puts(&in, "a=eyJhbGciOiJIUzI1NiJ9."
				 "eyJzdWIiOiIx");
		while (in.len < lengths[l])
			nv_buf_puts(&in, "MjM0NTY3ODkwIiwibmFtZSI6IkpvaG4");
		nv_buf_puts(&in, ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9");
		nv_buf_printf(&in, " then %s end\n", small);
		CHECK(!in.failed);
		CHECK(in.len > lengths[l]);
		CHECK_STR(red(r, in.data), expect);
		for (size_t s = 0; s < sizeof(sizes) / sizeof(*sizes); s++)
			CHECK(stream_equals(r, &in, sizes[s], expect));
		nv_buf_free(&in);
	}

	/* a GitHub token of 1 MiB */
	nv_buf_init(&in, 4 << 20);
	nv_buf_puts(&in, "a=ghp_");
	while (in.len < (1u << 20))
		nv_buf_puts(&in, "Q3N7XK2P9RT4WVZBaB3dE5fG7hJ9kL1m");
	nv_buf_puts(&in, " end\n");
	CHECK_STR(red(r, in.data), gh_expect);
	for (size_t s = 0; s < sizeof(sizes) / sizeof(*sizes); s++)
		CHECK(stream_equals(r, &in, sizes[s], gh_expect));
	nv_buf_free(&in);

	/* a header past NV_TOKEN_DECIDE_MAX without its dot: masked (it
	 * cannot be held until the dot comes) */
	nv_buf_init(&in, 1 << 20);
	nv_buf_puts(&in, "a=eyJ");
	while (in.len < 3 * NV_TOKEN_DECIDE_MAX)
		nv_buf_puts(&in, "hbGciOiJIUzI1NiJ9");
	nv_buf_puts(&in, " end\n");
	CHECK_STR(red(r, in.data), jwt_expect);
	for (size_t s = 0; s < 3; s++)
		CHECK(stream_equals(r, &in, sizes[s], jwt_expect));
	nv_buf_free(&in);
	/* under it, a header without a payload is not a JWT */
	nv_buf_init(&in, 1 << 20);
	nv_buf_puts(&in, "a=eyJ");
	while (in.len < NV_TOKEN_DECIDE_MAX / 2)
		nv_buf_puts(&in, "hbGciOiJIUzI1NiJ9");
	nv_buf_puts(&in, " end\n");
	CHECK_STR(red(r, in.data), in.data);
	for (size_t s = 0; s < 3; s++)
		CHECK(stream_equals(r, &in, sizes[s], in.data));
	nv_buf_free(&in);
}

static const struct {
	const char *name, *value;
} fp_secrets[] = {
	{"api_token", "tok-4f8a9b2c1d7e6f30"},
	{"db_pass", "p@ss w0rd/+&=?x~\xc3\xa9z"}, /* percent-encodes */
	{"deploy/key", "Zq9_LmN0pQrStUvWx2yZ0a1b2c3d"},
};
#define FP_NSECRETS (sizeof(fp_secrets) / sizeof(*fp_secrets))

/* Every hash field (third) of a document, for comparing two exports. */
static size_t doc_hashes(const char *doc, char hashes[][17], size_t max)
{
	size_t n = 0;
	const char *l = strchr(doc, '\n');

	while (l && l[1] && n < max) {
		const char *f = l + 1;
		for (int k = 0; k < 2 && f; k++) {
			f = strchr(f, ' ');
			f = f ? f + 1 : NULL;
		}
		if (!f)
			break;
		memcpy(hashes[n], f, 16);
		hashes[n++][16] = '\0';
		l = strchr(l + 1, '\n');
	}
	return n;
}

static void test_fingerprints(void)
{
	nv_redactor *src = nv_redactor_new(), *dst = nv_redactor_new();
	nv_buf doc, doc2, text;
	nv_err err;
	char enc[256], expect[8192], mid[9], line[512];
	char h1[64][17], h2[64][17];
	unsigned char in[128];

	CHECK(src && dst);
	for (size_t i = 0; i < FP_NSECRETS; i++)
		CHECK(nv_redact_add_secret(
			      src, fp_secrets[i].name, fp_secrets[i].value,
			      strlen(fp_secrets[i].value), &err) == 0);
	nv_buf_init(&doc, 1 << 20);
	nv_buf_init(&doc2, 1 << 20);
	CHECK(nv_redact_export_fingerprints(src, &doc, &err) == 0);
	CHECK(nv_redact_export_fingerprints(src, &doc2, &err) == 0);
	CHECK(doc.data &&
	      strncmp(doc.data, "navette-fingerprints 1 ", 23) == 0);

	/* the document holds no value in any of its forms */
	for (size_t i = 0; i < FP_NSECRETS; i++) {
		const char *v = fp_secrets[i].value;
		size_t n = strlen(v);
		CHECK(!holds(doc.data, doc.len, v, n));
		for (int url = 0; url < 2; url++) {
			b64((const unsigned char *)v, n, enc, url, 0);
			CHECK(!holds(doc.data, doc.len, enc, strlen(enc) - 2));
			CHECK(!holds(doc2.data, doc2.len, enc,
				     strlen(enc) - 2));
		}
	}
	CHECK(!holds(doc.data, doc.len, "p%40ss", 6));

	/* two exports: other salt, no hash in common */
	CHECK(doc2.data && strncmp(doc.data, doc2.data, 87) != 0);
	size_t n1 = doc_hashes(doc.data, h1, 64);
	size_t n2 = doc_hashes(doc2.data, h2, 64);
	CHECK(n1 > 3 * FP_NSECRETS && n1 == n2);
	int common = 0;
	for (size_t i = 0; i < n1; i++)
		for (size_t k = 0; k < n2; k++)
			common += strcmp(h1[i], h2[k]) == 0;
	CHECK(common == 0);

	/* a fresh redactor with no secret masks them from the document */
	CHECK(nv_redact_add_fingerprints(dst, doc.data, doc.len, &err) == 0);
	CHECK(nv_redact_secret_count(dst) == 0);
	CHECK(nv_redact_fingerprint_count(dst) == n1);
	CHECK(nv_redact_add_fingerprints(dst, doc.data, doc.len, &err) == 0);
	CHECK(nv_redact_fingerprint_count(dst) == n1); /* known: skipped */

	snprintf(line, sizeof(line), "a=%s b=%s c=%s.", fp_secrets[0].value,
		 fp_secrets[1].value, fp_secrets[2].value);
	CHECK_STR(red(dst, line), "a=<redacted:api_token> b=<redacted:db_pass>"
				  " c=<redacted:deploy/key>.");

	nv_buf_init(&text, 1 << 20);
	for (size_t i = 0; i < FP_NSECRETS; i++) {
		const char *v = fp_secrets[i].value;
		size_t n = strlen(v);
		nv_buf_printf(&text, "raw %s\n", v);
		for (int url = 0; url < 2; url++) {
			for (size_t align = 0; align < 3; align++) {
				memcpy(in, "\x01\x02", align);
				memcpy(in + align, v, n);
				memcpy(in + align + n, "ab", 2);
				b64(in, align + n + 2, enc, url, 1);
				nv_buf_printf(&text, "b64 %s\n", enc);
			}
		}
	}
	nv_buf_puts(&text, "pct p%40ss%20w0rd%2F%2B%26%3D%3Fx~%C3%A9z&"
			   "p%40ss%20w0rd%2f%2b%26%3d%3fx~%c3%a9z\n"
			   "near tok-4f8a9b2c1d7e6f31 tok-4f8a9b2c1d7e6f3\n");
	snprintf(expect, sizeof(expect), "%s", red(dst, text.data));
	CHECK_STR(expect, red(src, text.data)); /* as the secrets' owner */
	for (size_t i = 0; i < FP_NSECRETS; i++) {
		const char *v = fp_secrets[i].value;
		size_t n = strlen(v);
		CHECK(!strstr(expect, v));
		for (int url = 0; url < 2; url++) {
			for (size_t align = 0; align < 3; align++) {
				memcpy(in, "\x01\x02", align);
				memcpy(in + align, v, n);
				b64(in, align + n, enc, url, 0);
				memcpy(mid, enc + strlen(enc) / 2 - 4, 8);
				mid[8] = '\0';
				CHECK(!strstr(expect, mid));
			}
		}
	}
	CHECK(strstr(expect, "pct <redacted:db_pass>&<redacted:db_pass>\n"));
	/* one byte off, or one short: not the secret */
	CHECK(strstr(expect,
		     "near tok-4f8a9b2c1d7e6f31 tok-4f8a9b2c1d7e6f3\n"));
	CHECK(strstr(expect, "raw <redacted:deploy/key>\n"));
	CHECK(stream_mismatches(dst, text.data, text.len, expect) == 0);
	test_not_masked(dst);

	/* the right hash with a wrong HMAC is not the secret */
	nv_redactor *tampered = nv_redactor_new();
	for (char *l = strchr(doc.data, '\n'); l && l[1];
	     l = strchr(l + 1, '\n')) {
		char *eol = strchr(l + 1, '\n');
		eol[-1] = eol[-1] == '0' ? '1' : '0'; /* last confirm digit */
	}
	CHECK(nv_redact_add_fingerprints(tampered, doc.data, doc.len, &err) ==
	      0);
	CHECK_STR(red(tampered, line), line);
	nv_redactor_free(tampered);

	/* a second document (another salt) adds to the first */
	nv_redactor *other = nv_redactor_new();
	nv_buf doc3;
	CHECK(nv_redact_add_secret(other, "late", "l4te-s3cret-value", 17,
				   &err) == 0);
	nv_buf_init(&doc3, 1 << 20);
	CHECK(nv_redact_export_fingerprints(other, &doc3, &err) == 0);
	CHECK(nv_redact_add_fingerprints(dst, doc3.data, doc3.len, &err) == 0);
	CHECK_STR(red(dst, "x l4te-s3cret-value tok-4f8a9b2c1d7e6f30"),
		  "x <redacted:late> <redacted:api_token>");
	nv_buf_free(&doc3);
	nv_redactor_free(other);

	nv_buf_free(&text);
	nv_buf_free(&doc);
	nv_buf_free(&doc2);
	nv_redactor_free(dst);
	nv_redactor_free(src);
}

static void test_fingerprints_malformed(void)
{
	static const char salt[] = "navette-fingerprints 1 "
				   "00112233445566778899aabbccddeeff"
				   "00112233445566778899aabbccddeeff\n";
	static const char good[] = "api 12 0123456789abcdef "
				   "0123456789abcdef0123456789abcdef\n";
	static const struct {
		const char *body; /* after the header and one good line */
		int line;
	} bad[] = {
		{"api 12 0123456789abcdef 0123456789abcdef0123456789abcde\n",
		 3},
		{"api 12 0123456789abcdef 0123456789abcdef0123456789abcdef "
		 "x\n",
		 3},
		{"api 12 0123456789ABCDEF 0123456789abcdef0123456789abcdef\n",
		 3},
		{"api  12 0123456789abcdef 0123456789abcdef0123456789abcdef\n",
		 3},
		{"bad name 12 0123456789abcdef 0123456789abcdef0123456789abcdef"
		 "\n",
		 3},
		{"api 7 0123456789abcdef 0123456789abcdef0123456789abcdef\n",
		 3},
		{"api 012 0123456789abcdef 0123456789abcdef0123456789abcdef\n",
		 3},
		{"api 12 ffffffffffffffff 0123456789abcdef0123456789abcdef\n",
		 3},
		{"\napi 12 0123456789abcdef 0123456789abcdef0123456789abcdef\n",
		 3},
		{"api 12 0123456789abcdef 0123456789abcdef0123456789abcdef\n"
		 "api 12\n",
		 4},
	};
	nv_redactor *r = nv_redactor_new();
	nv_buf doc;
	nv_err err;
	char want[32];

	nv_buf_init(&doc, 1 << 16);
	nv_buf_puts(&doc, salt);
	nv_buf_puts(&doc, good);
	CHECK(nv_redact_add_fingerprints(r, doc.data, doc.len, &err) == 0);
	CHECK(nv_redact_fingerprint_count(r) == 1);
	nv_buf_free(&doc);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		nv_buf_init(&doc, 1 << 16);
		nv_buf_puts(&doc, salt);
		nv_buf_puts(&doc, good);
		nv_buf_puts(&doc, bad[i].body);
		/* another salt, so a good line would count */
		doc.data[23] = '9';
		CHECK(nv_redact_add_fingerprints(r, doc.data, doc.len, &err) ==
		      NV_EINVAL);
		snprintf(want, sizeof(want), "line %d:", bad[i].line);
		if (!strstr(err.message, want))
			fprintf(stderr, "case %zu: %s\n", i, err.message);
		CHECK(strstr(err.message, want) != NULL);
		nv_buf_free(&doc);
	}
	CHECK(nv_redact_fingerprint_count(r) == 1); /* all or nothing */
	CHECK(nv_redact_add_fingerprints(r, "", 0, &err) == NV_EINVAL);
	CHECK(strstr(err.message, "line 1:") != NULL);
	CHECK(nv_redact_add_fingerprints(r, "navette-fingerprints 2 00", 25,
					 &err) == NV_EINVAL);
	CHECK(strstr(err.message, "line 1:") != NULL);
	/* an empty export is a valid document */
	nv_redactor *empty = nv_redactor_new();
	nv_buf_init(&doc, 1 << 16);
	CHECK(nv_redact_export_fingerprints(empty, &doc, &err) == 0);
	CHECK(doc.len == 23 + 64 + 1);
	CHECK(nv_redact_add_fingerprints(r, doc.data, doc.len, &err) == 0);
	nv_buf_free(&doc);
	nv_redactor_free(empty);
	nv_redactor_free(r);
}

/* Collapses runs of the same label (a stream may cut a body run in two,
 * each part masked). */
static void collapse_labels(char *s)
{
	static const char lab[] = "<redacted:private-key>";
	size_t n = sizeof(lab) - 1;
	char *p = s;

	while ((p = strstr(p, lab)) != NULL) {
		while (strncmp(p + n, lab, n) == 0)
			memmove(p + n, p + 2 * n, strlen(p + 2 * n) + 1);
		p += n;
	}
}

/* A PEM block printed with a prefix on every line (split in two runs
 * with a space when split; with_end: 0 no END line, 1 its own line, 2 glued
 * to the last body line). Returns the number of body lines; each is
 * kept in body (64 chars + NUL). */
static size_t prefixed_pem(nv_buf *in, const char *prefix, size_t nlines,
			   char body[][65], int with_end, int split)
{
	unsigned char raw[48];

	nv_buf_printf(in, "%s-----BEGIN PRIVATE KEY-----\n", prefix);
	for (size_t i = 0; i < nlines; i++) {
		for (size_t k = 0; k < sizeof(raw); k++)
			raw[k] = (unsigned char)rnd(256);
		EVP_EncodeBlock((unsigned char *)body[i], raw,
				i + 1 < nlines ? 48 : 29);
		if (split)
			nv_buf_printf(in, "%s%.32s %s\n", prefix, body[i],
				      body[i] + 32);
		else
			nv_buf_printf(in, "%s%s\n", prefix, body[i]);
	}
	if (with_end == 2)
		in->data[--in->len] = '\0';
	if (with_end)
		nv_buf_printf(in, "%s-----END PRIVATE KEY-----\n",
			      with_end == 1 ? prefix : "");
	return nlines;
}

static size_t count_of(const char *s, const char *what)
{
	size_t n = 0;

	for (; s && (s = strstr(s, what)) != NULL; s++)
		n++;
	return n;
}

/* Which of the body lines show any 16 of their characters. */
static size_t body_leaks(const char *out, char body[][65], size_t n)
{
	size_t leaks = 0;

	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(body[i]);
		for (size_t k = 0; k + 16 <= len; k += 8) {
			char piece[17];
			memcpy(piece, body[i] + k, 16);
			piece[16] = '\0';
			if (strstr(out, piece)) {
				leaks++;
				break;
			}
		}
	}
	return leaks;
}

static void test_pem_prefixed(nv_redactor *r)
{
	static const char *const prefixes[] = {
		"stderr| ", "2024-05-01T12:34:56.789Z [rank0] ", "> "};
	static char body[400][65];
	static char expect[1 << 17];
	nv_buf in, out;
	size_t sizes[64];

	for (size_t p = 0; p < sizeof(prefixes) / sizeof(*prefixes); p++) {
		const char *pre = prefixes[p];
		nv_buf_init(&in, 1 << 20);
		nv_buf_puts(&in, "job start\n");
		size_t n = prefixed_pem(&in, pre, 26, body, 1, 0);
		nv_buf_printf(&in, "%sdone at step 12\n", pre);
		RED_INTO(expect, r, in.data);
		CHECK(body_leaks(expect, body, n) == 0);
		CHECK(count_of(expect, pre) == n + 3); /* prefixes stay */
		CHECK(strstr(expect, "done at step 12\n") != NULL);
		CHECK(strncmp(expect, "job start\n", 10) == 0);
		CHECK(count_of(expect, "<redacted:private-key>") == n + 2);
		for (int round = 0; round < 3; round++) {
			unsigned top = round == 0 ? 7 : round == 1 ? 200 : 3000;
			for (size_t k = 0; k < 64; k++)
				sizes[k] = 1 + rnd(top);
			nv_buf_init(&out, 1 << 20);
			CHECK(stream_through(r, in.data, in.len, sizes, 64,
					     &out) == 0);
			CHECK_STR(out.data, expect);
			nv_buf_free(&out);
		}
		nv_buf_free(&in);
	}

	/* no END line: masked while lines carry body runs */
	nv_buf_init(&in, 1 << 20);
	size_t n = prefixed_pem(&in, "stderr| ", 5, body, 0, 0);
	nv_buf_puts(&in, "stderr| hello, world\nlast line\n");
	snprintf(expect, sizeof(expect), "%s", red(r, in.data));
	CHECK(body_leaks(expect, body, n) == 0);
	CHECK(strstr(expect, "stderr| hello, world\nlast line\n") != NULL);
	nv_buf_init(&out, 1 << 20);
	sizes[0] = 5;
	CHECK(stream_through(r, in.data, in.len, sizes, 1, &out) == 0);
	CHECK_STR(out.data, expect);
	nv_buf_free(&out);
	nv_buf_free(&in);

	/* longer than NV_REDACT_SHAPE_MAX: still masked line by line, with
	 * or without an END line, one or two runs a line; without END the
	 * first line without a run ends it, and its shapes count */
	for (int kind = 0; kind < 5; kind++) {
		int with_end = kind < 2 ? 1 : kind == 4 ? 2 : 0;
		nv_buf_init(&in, 1 << 20);
		nv_buf_puts(&in, "head\n");
		n = prefixed_pem(&in, "stderr| ", 400, body, with_end,
				 kind & 1);
		size_t body_end = in.len;
		if (!with_end)
			nv_buf_puts(&in, "stderr| clone https://alice:s3cr3t-"
					 "pass@example.com/r.git\n");
		nv_buf_puts(&in,
			    "commit 3f2a9c1b7e4d5f60718293a4b5c6d7e8f9012345"
			    " (HEAD)\nstderr| tail.\n");
		RED_INTO(expect, r, in.data);
		collapse_labels(expect);
		CHECK(body_leaks(expect, body, n) == 0);
		CHECK(count_of(expect, "stderr| ") ==
		      n + 2 + (size_t)(with_end != 2));
		CHECK(strstr(expect, "\ncommit 3f2a9c1b7e4d5f60718293a4b5c6d7e8"
				     "f9012345 (HEAD)\nstderr| tail.\n"));
		CHECK(with_end || strstr(expect, "alice:<redacted:url-password>"
						 "@example.com/r.git\n"));
		size_t bad = 0;
		for (int round = 0; round < 4 + 120; round++) {
			unsigned top = round == 0   ? 9
				       : round == 1 ? 100
				       : round == 2 ? 700
						    : 20000;
			size_t nsizes = 64;
			for (size_t k = 0; k < 64; k++)
				sizes[k] = 1 + rnd(top);
			if (round >= 4) {
				/* every cut around the end of the body */
				sizes[0] = body_end - 60 + (size_t)round - 4;
				sizes[1] = in.len;
				nsizes = 2;
			}
			nv_buf_init(&out, 1 << 20);
			CHECK(stream_through(r, in.data, in.len, sizes, nsizes,
					     &out) == 0);
			if (out.data)
				collapse_labels(out.data);
			/* expect is checked for leaks above */
			if (!out.data || strcmp(out.data, expect) != 0) {
				if (!bad++)
					fprintf(stderr, "kind %d round %d\n",
						kind, round);
			}
			nv_buf_free(&out);
		}
		CHECK(bad == 0);
		if (with_end == 2) {
			/* with no secret nothing cuts a run: exactly one
			 * label per run and one for the END line */
			nv_redactor *bare = nv_redactor_new();
			char once[1 << 15];
			snprintf(once, sizeof(once), "%s", red(bare, in.data));
			sizes[0] = 5;
			nv_buf_init(&out, 1 << 20);
			CHECK(stream_through(bare, in.data, in.len, sizes, 1,
					     &out) == 0);
			CHECK_STR(out.data, once);
			nv_buf_free(&out);
			nv_redactor_free(bare);
		}
		nv_buf_free(&in);
	}
}

/* Streams `in` as one write, byte by byte and at every `step`th two-chunk
 * split; returns how many outputs leak a body line or differ from the
 * one-shot output `expect`. */
static size_t stream_leaks_or_diffs(nv_redactor *r, const char *in, size_t len,
				    const char *expect, char body[][65],
				    size_t nbody, size_t step)
{
	size_t bad = 0, one = 1, whole = len;
	nv_buf b;

	for (size_t cut = 0; cut <= len + 1; cut += step) {
		size_t sizes[2] = {cut, len};
		const size_t *sz = sizes;
		size_t nsz = 2;
		if (cut == 0) {
			sz = &whole; /* one write, then flush */
			nsz = 1;
		} else if (cut == 1) {
			sz = &one; /* byte by byte */
			nsz = 1;
		}
		nv_buf_init(&b, 1 << 20);
		if (stream_through(r, in, len, sz, nsz, &b) != 0 || !b.data ||
		    body_leaks(b.data, body, nbody) != 0 ||
		    strcmp(b.data, expect) != 0) {
			if (!bad++)
				fprintf(stderr, "chunking %zu differs\n", cut);
		}
		nv_buf_free(&b);
		if (cut < 2 && step > 2)
			cut = 2 - step; /* then 2, 2 + step, ... */
	}
	return bad;
}

/* A key the size of a 2048-bit RSA one (25 lines of 64 base64 characters
 * and a shorter one) and an ed25519-sized one right after, printed plain
 * then with "stderr| " on every line, read by a redactor that holds the
 * fingerprints of a long secret: its encoded forms (~1336 bytes for 1000
 * bytes, ~3000 percent-encoded for 1024 binary ones) make a stream hold
 * back that much, so a pass ends inside the prefixed block. The rest of
 * it must not be shown by the next pass, which starts past BEGIN. */
static void test_pem_long_holdback(void)
{
	static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklm"
				       "nopqrstuvwxyz0123456789+/";
	static const char *const prefixes[] = {"", "stderr| "};
	static char body[27][65];
	static char expect[1 << 15];
	unsigned char raw[1024], secret[1024];
	nv_redactor *rs[4];
	nv_buf in, doc;
	nv_err err;
	size_t nr = 0;

	for (size_t i = 0; i < 27; i++) {
		/* 25 x 48 bytes, 17 bytes (24 characters), ed25519: 48 */
		size_t n = i < 25 ? 48 : i == 25 ? 17 : 48;
		for (size_t k = 0; k < n; k++)
			raw[k] = (unsigned char)rnd(256);
		EVP_EncodeBlock((unsigned char *)body[i], raw, (int)n);
	}
	rs[nr++] = nv_redactor_new(); /* no holdback but literal ones */
	for (int kind = 0; kind < 3; kind++) {
		/* 0: fingerprints of a 1000-byte token (the base64 charset),
		 * 1: of 1024 binary bytes, 2: the token as a plain secret */
		nv_redactor *src = nv_redactor_new(), *dst = nv_redactor_new();
		size_t n = kind == 1 ? 1024 : 1000;
		for (size_t k = 0; k < n; k++)
			secret[k] = kind == 1
					    ? (unsigned char)rnd(256)
					    : (unsigned char)b64chars[rnd(64)];
		if (kind == 2) {
			CHECK(nv_redact_add_secret(dst, "big", secret, n,
						   &err) == 0);
		} else {
			CHECK(nv_redact_add_secret(src, "big", secret, n,
						   &err) == 0);
			nv_buf_init(&doc, 1 << 20);
			CHECK(nv_redact_export_fingerprints(src, &doc, &err) ==
			      0);
			CHECK(nv_redact_add_fingerprints(dst, doc.data, doc.len,
							 &err) == 0);
			CHECK(nv_redact_fingerprint_count(dst) >= 4);
			nv_buf_free(&doc);
		}
		nv_redactor_free(src);
		rs[nr++] = dst;
	}

	for (int which = 0; which < 3; which++) {
		/* plain copy, prefixed copy, both (plain first) */
		nv_buf_init(&in, 1 << 20);
		for (size_t c = 0; c < 2; c++) {
			const char *pre = prefixes[c];
			if (which != 2 && (size_t)which != c)
				continue;
			nv_buf_printf(&in, "%ssome line\n", pre);
			for (size_t i = 0; i < 27; i++) {
				if (i == 0 || i == 26)
					nv_buf_printf(&in,
						      "%s-----BEGIN PRIVATE "
						      "KEY-----\n",
						      pre);
				nv_buf_printf(&in, "%s%s\n", pre, body[i]);
				if (i == 25 || i == 26)
					nv_buf_printf(&in,
						      "%s-----END PRIVATE "
						      "KEY-----\n",
						      pre);
			}
		}
		for (size_t k = 0; k < nr; k++) {
			RED_INTO(expect, rs[k], in.data);
			CHECK(body_leaks(expect, body, 27) == 0);
			CHECK(count_of(expect, "some line\n") ==
			      (which == 2 ? 2u : 1u));
			CHECK(count_of(expect, "stderr| ") ==
			      (which == 0 ? 0u : 32u));
			/* a label a block, or BEGIN, 27 runs and 2 END */
			CHECK(count_of(expect, "<redacted:private-key>") ==
			      (which == 0   ? 2u
			       : which == 1 ? 31u
					    : 33u));
			CHECK(stream_leaks_or_diffs(rs[k], in.data, in.len,
						    expect, body, 27,
						    k == 0 ? 1 : 7) == 0);
		}
		nv_buf_free(&in);
	}
	for (size_t k = 0; k < nr; k++)
		nv_redactor_free(rs[k]);
}

struct capture {
	char buf[256];
	size_t len;
	int stream;
};

static struct capture captured;

static void capture_out(int stream, const char *buf, size_t len)
{
	captured.stream = stream;
	if (len > sizeof(captured.buf) - 1 - captured.len)
		len = sizeof(captured.buf) - 1 - captured.len;
	memcpy(captured.buf + captured.len, buf, len);
	captured.len += len;
	captured.buf[captured.len] = '\0';
}

static void test_global_and_env(void)
{
	nv_redactor *g = nv_redact_global();
	nv_err err;
	nv_buf b;

	CHECK(g != NULL && g == nv_redact_global());
	CHECK(nv_redact_add_secret(g, "api", "glob4l-t0ken", 12, &err) == 0);
	nv_redact_out_filter(2, "use glob4l-t0ken\n", 17, capture_out);
	CHECK_STR(captured.buf, "use <redacted:api>\n");
	CHECK(captured.stream == 2);

	CHECK(nv_redact_env_allowed("PATH"));
	CHECK(nv_redact_env_allowed("LC_ALL"));
	CHECK(nv_redact_env_allowed("NAVETTE_JOB_ID"));
	CHECK(!nv_redact_env_allowed("NAVETTE_TOKEN"));
	CHECK(!nv_redact_env_allowed("AWS_SECRET_ACCESS_KEY"));
	CHECK(!nv_redact_env_allowed("PATHX"));
	CHECK(!nv_redact_env_allowed("LC_"));
	nv_buf_init(&b, 1024);
	CHECK(nv_redact_env_line("HOME=/home/a", &b) == 0);
	CHECK(nv_redact_env_line(" GITHUB_TOKEN=ghp_x", &b) == 0);
	CHECK_STR(b.data, "HOME=/home/a GITHUB_TOKEN=<hidden>");
	nv_buf_free(&b);
}

int main(void)
{
	nv_redactor *r = nv_redactor_new();
	nv_err err;

	CHECK(r != NULL);
	test_shapes(r);
	test_not_masked(r);
	CHECK_STR(red(r, ""), "");
	test_secret_forms(r);
	test_shapes(r); /* still right with secrets loaded */
	CHECK(nv_redact_add_secret(r, "split", "foobar-secret-1234", 18,
				   &err) == 0);
	test_splits(r);
	test_long_pem(r);
	test_pem_prefixed(r);
	test_token_table(r);
	test_long_tokens(r);
	nv_redactor_free(r);
	test_short_and_names();
	test_thousand();
	test_fingerprints();
	test_fingerprints_malformed();
	test_pem_long_holdback();
	test_global_and_env();
	return nv_test_done();
}
