/* The redactor: registered secrets in all their encoded forms, credential
 * shapes, streaming across every chunk boundary, text left alone, and the
 * environment allow-list. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "creds/redact.h"
#include "nv_test.h"

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
	CHECK_STR(red(r,
		      "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3j"
		      "VmNHl0w5N_XgL0n3I9PlFUP0THsR8U."),
		  "<redacted:jwt>.");
	CHECK_STR(red(r, "jwt=eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0. end"),
		  "jwt=<redacted:jwt> end");
	CHECK_STR(red(r,
		      "before\n-----BEGIN RSA PRIVATE KEY-----\n"
		      "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\n"
		      "4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0/IzW7yWR7Qk\n"
		      "abc+/=\n-----END RSA PRIVATE KEY-----\nafter"),
		  "before\n<redacted:private-key>\nafter");
	CHECK_STR(
		red(r,
		    "{\"private_key\": \"-----BEGIN PRIVATE KEY-----\\nMII"
		    "Ev\\nQIBADAN\\n-----END PRIVATE KEY-----\\n\", \"a\": 1}"),
		"{\"private_key\": \"<redacted:private-key>\\n\", \"a\": 1}");
	CHECK_STR(
		red(r, "key AKIAIOSFODNN7EXAMPLE used, ASIAY34FZKBOKMUTVV7A."),
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
	CHECK_STR(red(r, "https://ghp_16C7e42F292c6912E7710c838347Ae178B4a"
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
	"url=https://u:pw-98765432@h/x AKIAIOSFODNN7EXAMPLE\n"
	"Authorization: Bearer abcdefgh12345678\n"
	"t=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N\n"
	"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIIrYSSNQFaA2Hwf1duRSxKtLYX5\n"
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
	nv_redactor_free(r);
	test_short_and_names();
	test_thousand();
	test_global_and_env();
	return nv_test_done();
}
