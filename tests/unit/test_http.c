/* Unit tests of the HTTPS client (host/net/http.c) against real servers on
 * 127.0.0.1 that the test starts (tests/data/http/server.py): what a user
 * relies on is that TLS is verified (CA bundle, pins), that plain http
 * never leaves the machine, that a credential reaches only the host it was
 * given for (also across redirects), that hostile answers hit caps, and
 * that no message shows a secret. Certificates are made at test time by
 * tests/data/http/make_certs.sh in a temp folder, removed at the end. */
#include "net/http.h"
#include "core/fsutil.h"
#include "creds/secret.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include "nv_test.h"

#define TOKEN    "tok-SECRET-123"
#define PASSWORD "open-sesame"
#define URL_PW   "s3cretpw"

#include "http_test_server.h"

/* A port where nothing listens (bound then closed). */
static int closed_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static nv_http_policy plain_policy;
static nv_http_policy tls_policy; /* trusts the test CA */

static int get(const nv_http_policy *pol, const char *url, int redirects,
	       nv_http_response *resp, nv_err *err)
{
	nv_http_request req = {.url = url, .max_redirects = redirects};

	nv_err_clear(err);
	return nv_http_perform(pol, &req, resp, err);
}

/* The request log of a server (caller frees); "" when none. */
static char *server_log(const struct server *s, int tls)
{
	char url[128];
	nv_http_response resp;
	nv_err err;
	char *out;

	snprintf(url, sizeof(url), "%s://127.0.0.1:%d/_log",
		 tls ? "https" : "http", s->port);
	if (get(tls ? &tls_policy : &plain_policy, url, 0, &resp, &err) ||
	    resp.status != 200) {
		nv_http_response_free(&resp);
		return strdup("<no log>");
	}
	out = strdup(resp.body.data ? resp.body.data : "");
	nv_http_response_free(&resp);
	return out;
}

static int count_lines(const char *text, const char *needle)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static int contains(const char *hay, const char *needle)
{
	return hay && strstr(hay, needle) != NULL;
}

/* No message or hint ever holds a secret value or URL userinfo. */
static void check_clean(const nv_err *err)
{
	CHECK(!contains(err->message, TOKEN) && !contains(err->hint, TOKEN));
	CHECK(!contains(err->message, PASSWORD) &&
	      !contains(err->hint, PASSWORD));
	CHECK(!contains(err->message, URL_PW) && !contains(err->hint, URL_PW));
}

static nv_secret *bearer(void)
{
	nv_err err;
	nv_secret *s =
		nv_secret_new("registry-token", NV_SECRET_BEARER, "env", &err);

	if (!s || nv_secret_set(s, "token", TOKEN, strlen(TOKEN), &err))
		abort();
	return s;
}

static nv_secret *basic(void)
{
	nv_err err;
	nv_secret *s =
		nv_secret_new("slurm-login", NV_SECRET_BASIC, "env", &err);

	if (!s || nv_secret_set(s, "user", "alice", 5, &err) ||
	    nv_secret_set(s, "password", PASSWORD, strlen(PASSWORD), &err))
		abort();
	return s;
}

static void test_helpers(void)
{
	char shown[256];

	CHECK(nv_http_host_is_loopback("127.0.0.1"));
	CHECK(nv_http_host_is_loopback("127.9.8.7"));
	CHECK(nv_http_host_is_loopback("[::1]"));
	CHECK(nv_http_host_is_loopback("::1"));
	CHECK(nv_http_host_is_loopback("localhost"));
	CHECK(nv_http_host_is_loopback("LocalHost"));
	CHECK(!nv_http_host_is_loopback("128.0.0.1"));
	CHECK(!nv_http_host_is_loopback("127.0.0.1.nip.io"));
	CHECK(!nv_http_host_is_loopback("localhost.example.com"));
	/* names under localhost (RFC 6761), pinned to 127.0.0.1 */
	CHECK(nv_http_host_is_loopback("bucket.localhost"));
	CHECK(nv_http_host_is_loopback("a.b.LOCALHOST."));
	CHECK(!nv_http_host_is_loopback(".localhost"));
	CHECK(!nv_http_host_is_loopback("evillocalhost"));
	CHECK(!nv_http_host_is_loopback("localhost.evil"));
	CHECK(!nv_http_host_is_loopback("10.0.0.1"));
	CHECK(!nv_http_host_is_loopback("[::2]"));
	CHECK(!nv_http_host_is_loopback("example.invalid"));

	nv_http_url_for_display("https://alice:" URL_PW
				"@h.example:8443/a/b?X-Amz-Signature=dead"
				"&partNumber=1&X-Amz-Security-Token=tok#f",
				shown, sizeof(shown));
	CHECK_STR(shown, "https://h.example:8443/a/b?X-Amz-Signature="
			 "<redacted>&partNumber=1&X-Amz-Security-Token="
			 "<redacted>");
	nv_http_url_for_display("::not a url", shown, sizeof(shown));
	CHECK_STR(shown, "<unparsable URL>");
}

struct counter {
	size_t bytes;
	int calls;
};

static int count_sink(void *payload, const char *data, size_t len)
{
	struct counter *c = payload;

	(void)data;
	c->bytes += len;
	c->calls++;
	return 0;
}

struct reader {
	const char *chunks[4];
	int next;
};

static int read_chunks(void *payload, char *buf, size_t cap, size_t *nread)
{
	struct reader *r = payload;
	const char *c = r->chunks[r->next];
	size_t n = c ? strlen(c) : 0;

	if (n > cap)
		return -1;
	memcpy(buf, c ? c : "", n);
	*nread = n;
	if (c)
		r->next++;
	return 0;
}

static void test_plain(const struct server *a)
{
	char url[256];
	nv_http_response resp;
	nv_http_policy small = {.max_body = 1000};
	nv_err err;
	int rc;

	/* A plain GET on loopback, with the headers of interest. */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/hello", a->port);
	rc = get(&plain_policy, url, 0, &resp, &err);
	CHECK(rc == 0);
	CHECK(resp.status == 200);
	CHECK_STR(resp.body.data, "hello from a");
	CHECK_STR(resp.content_type, "text/plain; charset=utf-8");
	CHECK_STR(resp.etag, "\"abc123\"");
	CHECK_STR(resp.amz_request_id, "REQ42");
	CHECK_STR(resp.retry_after, "7");
	CHECK(contains(resp.docker_content_digest, "sha256:000"));
	CHECK_STR(nv_http_response_header(&resp, "etag"), "\"abc123\"");
	CHECK(resp.location == NULL);
	CHECK(resp.nheaders >= 6);
	CHECK_STR(resp.effective_url, url);
	nv_http_response_free(&resp);

	/* A 404 is an answer, not an error. */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/nothing", a->port);
	CHECK(get(&plain_policy, url, 0, &resp, &err) == 0);
	CHECK(resp.status == 404);
	CHECK_STR(resp.body.data, "no such route");
	nv_http_response_free(&resp);

	/* Methods and bodies. */
	{
		const char *hdrs[] = {"Content-Type: application/json"};
		nv_http_request req = {.url = url,
				       .method = "POST",
				       .body = "abc",
				       .body_len = 3,
				       .headers = hdrs,
				       .nheaders = 1};

		snprintf(url, sizeof(url), "http://127.0.0.1:%d/echo", a->port);
		CHECK(nv_http_perform(&plain_policy, &req, &resp, &err) == 0);
		CHECK_STR(resp.body.data, "POST|application/json|abc");
		nv_http_response_free(&resp);

		req.method = "PUT";
		req.nheaders = 0;
		CHECK(nv_http_perform(&plain_policy, &req, &resp, &err) == 0);
		CHECK_STR(resp.body.data, "PUT|-|abc");
		nv_http_response_free(&resp);

		req.method = "HEAD";
		req.body = NULL;
		snprintf(url, sizeof(url), "http://127.0.0.1:%d/hello",
			 a->port);
		CHECK(nv_http_perform(&plain_policy, &req, &resp, &err) == 0);
		CHECK(resp.status == 200 && resp.body.len == 0);
		CHECK_STR(resp.etag, "\"abc123\"");
		nv_http_response_free(&resp);

		req.method = "BAD METHOD";
		CHECK(nv_http_perform(&plain_policy, &req, &resp, &err) ==
		      NV_EINVAL);
		nv_http_response_free(&resp);
	}
	{
		struct reader r = {{"streamed-", "body", NULL}, 0};
		nv_http_request req = {.url = url,
				       .method = "PUT",
				       .body_read = read_chunks,
				       .body_payload = &r,
				       .body_size = -1};

		snprintf(url, sizeof(url), "http://127.0.0.1:%d/echo", a->port);
		CHECK(nv_http_perform(&plain_policy, &req, &resp, &err) == 0);
		CHECK_STR(resp.body.data, "PUT|-|streamed-body");
		nv_http_response_free(&resp);
	}

	/* Header injection is refused. */
	{
		const char *hdrs[] = {"X-A: b\r\nX-B: c"};
		nv_http_request req = {
			.url = url, .headers = hdrs, .nheaders = 1};

		CHECK(nv_http_perform(&plain_policy, &req, &resp, &err) ==
		      NV_EINVAL);
		nv_http_response_free(&resp);
	}

	/* Body caps, with and without Content-Length; the cap itself fits. */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/big?n=5000", a->port);
	CHECK(get(&small, url, 0, &resp, &err) == NV_ENOMEM);
	CHECK(contains(err.message, "cap of 1000 bytes"));
	nv_http_response_free(&resp);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/big-nolen?n=5000",
		 a->port);
	CHECK(get(&small, url, 0, &resp, &err) == NV_ENOMEM);
	CHECK(contains(err.message, "cap of 1000 bytes"));
	CHECK(resp.body.len <= 1000);
	nv_http_response_free(&resp);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/big-nolen?n=1000",
		 a->port);
	CHECK(get(&small, url, 0, &resp, &err) == 0);
	CHECK(resp.body.len == 1000);
	nv_http_response_free(&resp);

	/* A flood of headers hits the header cap. */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/many-headers?n=150",
		 a->port);
	CHECK(get(&plain_policy, url, 0, &resp, &err) == NV_ENOMEM);
	CHECK(contains(err.message, "100 headers"));
	nv_http_response_free(&resp);

	/* A sink takes 2xx bodies; an error body stays in resp.body. */
	{
		struct counter c = {0, 0};
		nv_http_request req = {
			.url = url, .sink = count_sink, .sink_payload = &c};

		snprintf(url, sizeof(url), "http://127.0.0.1:%d/big?n=3000",
			 a->port);
		CHECK(nv_http_perform(&small, &req, &resp, &err) ==
		      NV_ENOMEM); /* the cap applies to sinks too */
		nv_http_response_free(&resp);
		CHECK(nv_http_perform(&plain_policy, &req, &resp, &err) == 0);
		CHECK(c.bytes == 3000 && resp.body.len == 0);
		nv_http_response_free(&resp);
		c.bytes = 0;
		snprintf(url, sizeof(url), "http://127.0.0.1:%d/nothing",
			 a->port);
		CHECK(nv_http_perform(&plain_policy, &req, &resp, &err) == 0);
		CHECK(c.bytes == 0 && resp.status == 404);
		CHECK_STR(resp.body.data, "no such route");
		nv_http_response_free(&resp);
	}

	/* Plain http off loopback: refused before any connection (the
	 * .invalid name cannot even resolve). */
	CHECK(get(&plain_policy, "http://example.invalid/x", 0, &resp, &err) ==
	      NV_EREFUSED);
	CHECK(contains(err.message, "http://example.invalid/x"));
	CHECK(contains(err.message, "TLS is required"));
	nv_http_response_free(&resp);
	CHECK(get(&plain_policy, "http://127.0.0.1.nip.io/", 0, &resp, &err) ==
	      NV_EREFUSED);
	nv_http_response_free(&resp);
	CHECK(get(&plain_policy, "ftp://127.0.0.1/", 0, &resp, &err) ==
	      NV_EREFUSED);
	nv_http_response_free(&resp);
	CHECK(get(&plain_policy, "not a url", 0, &resp, &err) == NV_EINVAL);
	nv_http_response_free(&resp);

	/* Nothing listening: a backend error naming the URL, no userinfo. */
	snprintf(url, sizeof(url), "http://alice:" URL_PW "@127.0.0.1:%d/x",
		 closed_port());
	CHECK(get(&plain_policy, url, 0, &resp, &err) == NV_EBACKEND);
	CHECK(contains(err.message, "http://127.0.0.1:"));
	CHECK(contains(err.message, "cannot connect"));
	CHECK(!contains(err.message, "alice"));
	CHECK(err.hint[0] != '\0');
	check_clean(&err);
	nv_http_response_free(&resp);

	/* The total timeout. */
	{
		nv_http_policy quick = {.total_timeout_ms = 300};

		snprintf(url, sizeof(url), "http://127.0.0.1:%d/slow?ms=2000",
			 a->port);
		CHECK(get(&quick, url, 0, &resp, &err) == NV_EBACKEND);
		CHECK(contains(err.message, "timed out"));
		nv_http_response_free(&resp);
	}
}

static void test_credentials(const struct server *a)
{
	char url[256], bind[64], *before, *after;
	nv_secret *tok = bearer(), *login = basic();
	nv_http_request req = {.url = url, .credential = tok};
	nv_http_response resp;
	nv_err err;

	/* Bound to host:port, sent. */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/echo-auth", a->port);
	snprintf(bind, sizeof(bind), "127.0.0.1:%d", a->port);
	req.credential_host = bind;
	CHECK(nv_http_perform(&plain_policy, &req, &resp, &err) == 0);
	CHECK_STR(resp.body.data, "Bearer " TOKEN);
	nv_http_response_free(&resp);

	/* Bound to the host alone: any port of it. */
	req.credential_host = "127.0.0.1";
	CHECK(nv_http_perform(&plain_policy, &req, &resp, &err) == 0);
	CHECK_STR(resp.body.data, "Bearer " TOKEN);
	nv_http_response_free(&resp);

	/* A name under localhost reaches 127.0.0.1 without any resolver
	 * knowing it (pinned), over plain http. */
	snprintf(url, sizeof(url), "http://bucket.localhost:%d/echo-auth",
		 a->port);
	snprintf(bind, sizeof(bind), "bucket.localhost:%d", a->port);
	req.credential_host = bind;
	CHECK(nv_http_perform(&plain_policy, &req, &resp, &err) == 0);
	CHECK_STR(resp.body.data, "Bearer " TOKEN);
	nv_http_response_free(&resp);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/echo-auth", a->port);
	snprintf(bind, sizeof(bind), "127.0.0.1:%d", a->port);

	/* Basic. */
	req.credential = login;
	req.credential_host = bind;
	CHECK(nv_http_perform(&plain_policy, &req, &resp, &err) == 0);
	CHECK_STR(resp.body.data, "Basic YWxpY2U6b3Blbi1zZXNhbWU=");
	nv_http_response_free(&resp);

	/* Another host (same server, other name): refused, nothing sent. */
	before = server_log(a, 0);
	req.credential = tok;
	snprintf(url, sizeof(url), "http://localhost:%d/echo-auth", a->port);
	CHECK(nv_http_perform(&plain_policy, &req, &resp, &err) == NV_EREFUSED);
	CHECK(contains(err.message, "credential registry-token is bound to "
				    "host 127.0.0.1:"));
	CHECK(contains(err.message, "not sent to localhost:"));
	check_clean(&err);
	nv_http_response_free(&resp);

	/* Same host, another port than the binding: refused. */
	snprintf(bind, sizeof(bind), "127.0.0.1:%d", closed_port());
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/echo-auth", a->port);
	CHECK(nv_http_perform(&plain_policy, &req, &resp, &err) == NV_EREFUSED);
	check_clean(&err);
	nv_http_response_free(&resp);
	after = server_log(a, 0);
	CHECK_STR(after, before); /* the server received none of them */
	free(before);
	free(after);

	/* Misuse. */
	{
		const char *own[] = {"Authorization: Bearer other"};

		req.headers = own;
		req.nheaders = 1;
		CHECK(nv_http_perform(&plain_policy, &req, &resp, &err) ==
		      NV_EINVAL);
		nv_http_response_free(&resp);
		req.headers = NULL;
		req.nheaders = 0;
	}
	req.credential_host = NULL;
	CHECK(nv_http_perform(&plain_policy, &req, &resp, &err) == NV_EINVAL);
	nv_http_response_free(&resp);
	req.credential_host = "127.0.0.1:notaport";
	CHECK(nv_http_perform(&plain_policy, &req, &resp, &err) == NV_EINVAL);
	nv_http_response_free(&resp);
	{
		nv_secret *s3 = nv_secret_new("s3", NV_SECRET_S3, "env", &err);

		if (!s3)
			abort();
		req.credential = s3;
		req.credential_host = "127.0.0.1";
		CHECK(nv_http_perform(&plain_policy, &req, &resp, &err) ==
		      NV_EINVAL);
		CHECK(contains(err.message, "kind s3"));
		nv_http_response_free(&resp);
		nv_secret_free(s3);
	}

	/* Even a failed connection does not show the token. */
	req.credential = tok;
	req.credential_host = "127.0.0.1";
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", closed_port());
	CHECK(nv_http_perform(&plain_policy, &req, &resp, &err) == NV_EBACKEND);
	check_clean(&err);
	nv_http_response_free(&resp);

	nv_secret_free(tok);
	nv_secret_free(login);
}

struct hook_seen {
	int calls;
	char url[256];
};

static int refuse_redirect(void *payload, const char *url, nv_err *err)
{
	struct hook_seen *seen = payload;

	seen->calls++;
	snprintf(seen->url, sizeof(seen->url), "%s", url);
	return nv_err_set(err, NV_EREFUSED, "the hook's hint",
			  "redirect to %s: not this one", url);
}

static void test_redirects(const struct server *a, const struct server *b)
{
	char url[512], bind[64], *log_a, *log_b;
	nv_secret *tok = bearer();
	const char *hdrs[] = {"Cookie: session=1", "X-Trace: 7"};
	nv_http_request req = {.url = url,
			       .credential = tok,
			       .credential_host = bind,
			       .headers = hdrs,
			       .nheaders = 2};
	nv_http_response resp;
	nv_err err;

	snprintf(bind, sizeof(bind), "127.0.0.1:%d", a->port);

	/* max_redirects 0: the 3xx comes back, B is never contacted. */
	snprintf(url, sizeof(url),
		 "http://127.0.0.1:%d/redirect?to=http://127.0.0.1:%d/"
		 "echo-auth",
		 a->port, b->port);
	CHECK(nv_http_perform(&plain_policy, &req, &resp, &err) == 0);
	CHECK(resp.status == 302 && resp.redirects == 0);
	CHECK(contains(resp.location, "/echo-auth"));
	CHECK_STR(resp.body.data, "moved");
	nv_http_response_free(&resp);
	log_b = server_log(b, 0);
	CHECK_STR(log_b, "");
	free(log_b);

	/* Followed to B (another host:port): B gets no credential and no
	 * cookie, A got both. */
	req.max_redirects = 3;
	CHECK(nv_http_perform(&plain_policy, &req, &resp, &err) == 0);
	CHECK(resp.status == 200 && resp.redirects == 1);
	CHECK_STR(resp.body.data, "none");
	CHECK(contains(resp.effective_url, "/echo-auth"));
	nv_http_response_free(&resp);
	log_b = server_log(b, 0);
	CHECK_STR(log_b, "GET /echo-auth auth=- cookie=-\n");
	free(log_b);
	log_a = server_log(a, 0);
	CHECK(contains(log_a, "auth=Bearer " TOKEN " cookie=session=1"));
	free(log_a);

	/* A -> B -> A: once dropped, the credential stays dropped. */
	snprintf(url, sizeof(url),
		 "http://127.0.0.1:%d/redirect?to=http%%3A%%2F%%2F127.0.0.1%%3A"
		 "%d%%2Fredirect%%3Fto%%3Dhttp%%253A%%252F%%252F127.0.0.1%%253A"
		 "%d%%252Fecho-auth",
		 a->port, b->port, a->port);
	CHECK(nv_http_perform(&plain_policy, &req, &resp, &err) == 0);
	CHECK(resp.redirects == 2);
	CHECK_STR(resp.body.data, "none");
	nv_http_response_free(&resp);

	/* Same origin: kept. */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/redirect?to=/echo-auth",
		 a->port);
	CHECK(nv_http_perform(&plain_policy, &req, &resp, &err) == 0);
	CHECK(resp.redirects == 1);
	CHECK_STR(resp.body.data, "Bearer " TOKEN);
	nv_http_response_free(&resp);

	/* A caller's own Authorization header is dropped too. */
	{
		const char *own[] = {"Authorization: Basic Zm9vOmJhcg=="};
		nv_http_request r2 = {.url = url,
				      .headers = own,
				      .nheaders = 1,
				      .max_redirects = 3};

		snprintf(url, sizeof(url),
			 "http://127.0.0.1:%d/redirect?to=http://127.0.0.1:%d/"
			 "echo-auth",
			 a->port, b->port);
		CHECK(nv_http_perform(&plain_policy, &r2, &resp, &err) == 0);
		CHECK_STR(resp.body.data, "none");
		nv_http_response_free(&resp);
	}

	/* A redirect_check sees the next URL before it is followed; its
	 * refusal stops the request there: B is never contacted. */
	{
		struct hook_seen seen = {0, ""};
		nv_http_request r4 = {.url = url,
				      .max_redirects = 3,
				      .redirect_check = refuse_redirect,
				      .redirect_payload = &seen};

		snprintf(url, sizeof(url),
			 "http://127.0.0.1:%d/redirect?to=http://127.0.0.1:%d/"
			 "echo-auth",
			 a->port, b->port);
		char *before = server_log(b, 0); /* (the log grows) */

		CHECK(nv_http_perform(&plain_policy, &r4, &resp, &err) ==
		      NV_EREFUSED);
		CHECK(seen.calls == 1);
		CHECK(contains(seen.url, "/echo-auth"));
		CHECK(contains(err.message, "not this one"));
		CHECK_STR(err.hint, "the hook's hint");
		nv_http_response_free(&resp);
		log_b = server_log(b, 0);
		CHECK_STR(log_b, before);
		free(log_b);
		free(before);
		/* No redirect, no call. */
		snprintf(url, sizeof(url), "http://127.0.0.1:%d/echo-auth",
			 a->port);
		CHECK(nv_http_perform(&plain_policy, &r4, &resp, &err) == 0);
		CHECK(seen.calls == 1);
		nv_http_response_free(&resp);
	}

	/* 303 turns a POST into a GET; 307 keeps method and body. */
	{
		nv_http_request r3 = {.url = url,
				      .method = "POST",
				      .body = "abc",
				      .body_len = 3,
				      .max_redirects = 3};
		struct reader rd = {{"x", NULL}, 0};

		snprintf(url, sizeof(url),
			 "http://127.0.0.1:%d/redirect?to=/echo&code=303",
			 a->port);
		CHECK(nv_http_perform(&plain_policy, &r3, &resp, &err) == 0);
		CHECK_STR(resp.body.data, "GET|-|");
		nv_http_response_free(&resp);
		snprintf(url, sizeof(url),
			 "http://127.0.0.1:%d/redirect?to=/echo&code=307",
			 a->port);
		CHECK(nv_http_perform(&plain_policy, &r3, &resp, &err) == 0);
		CHECK_STR(resp.body.data, "POST|-|abc");
		nv_http_response_free(&resp);
		/* A streamed body cannot be replayed. */
		r3.body = NULL;
		r3.body_read = read_chunks;
		r3.body_payload = &rd;
		r3.body_size = 1;
		CHECK(nv_http_perform(&plain_policy, &r3, &resp, &err) ==
		      NV_EINVAL);
		nv_http_response_free(&resp);
	}

	/* A loop stops at the cap: 1 request + 3 redirects. */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/loop", a->port);
	CHECK(nv_http_perform(&plain_policy, &req, &resp, &err) == NV_EBACKEND);
	CHECK(contains(err.message, "too many redirects"));
	CHECK(resp.status == 302);
	check_clean(&err);
	nv_http_response_free(&resp);
	log_a = server_log(a, 0);
	CHECK(count_lines(log_a, "GET /loop ") == 4);
	free(log_a);

	/* A secret reflected by a server into a URL is masked in messages. */
	req.max_redirects = 1;
	snprintf(url, sizeof(url),
		 "http://127.0.0.1:%d/redirect?to=/redirect%%3Fto%%3D/" TOKEN,
		 a->port);
	CHECK(nv_http_perform(&plain_policy, &req, &resp, &err) == NV_EBACKEND);
	CHECK(contains(err.message, "redirect?to=/<redacted>"));
	check_clean(&err);
	nv_http_response_free(&resp);
	req.max_redirects = 3;

	/* A redirect off loopback over plain http is refused. */
	snprintf(url, sizeof(url),
		 "http://127.0.0.1:%d/redirect?to=http://example.invalid/",
		 a->port);
	CHECK(nv_http_perform(&plain_policy, &req, &resp, &err) == NV_EREFUSED);
	CHECK(contains(err.message, "TLS is required"));
	nv_http_response_free(&resp);

	nv_secret_free(tok);
}

static void read_pin(char *out, size_t cap)
{
	char path[700], *data = NULL;
	size_t len = 0;

	out[0] = '\0';
	snprintf(path, sizeof(path), "%s/pin.txt", cert_dir);
	if (nv_read_file(&data, &len, path, 256, NULL) == 0)
		snprintf(out, cap, "%s", data);
	free(data);
}

/* In-memory trust anchors (a kubeconfig's certificate-authority-data) and
 * a TLS client identity (client-certificate-data, client-key-data). */
static void test_tls_memory(const struct server *t)
{
	char url[256], path[700], *ca = NULL, *cert = NULL, *key = NULL;
	char *other = NULL;
	size_t ca_len = 0, cert_len = 0, key_len = 0, other_len = 0;
	nv_http_response resp;
	nv_http_policy pol = plain_policy;
	nv_http_session *sess;
	nv_http_request req = {0};
	nv_err err;

	snprintf(path, sizeof(path), "%s/ca.pem", cert_dir);
	CHECK(nv_read_file(&ca, &ca_len, path, 65536, NULL) == 0);
	snprintf(path, sizeof(path), "%s/client.pem", cert_dir);
	CHECK(nv_read_file(&cert, &cert_len, path, 65536, NULL) == 0);
	snprintf(path, sizeof(path), "%s/client.key", cert_dir);
	CHECK(nv_read_file(&key, &key_len, path, 65536, NULL) == 0);
	/* a certificate that is not the CA: trusts nothing of the server */
	snprintf(path, sizeof(path), "%s/client.pem", cert_dir);
	CHECK(nv_read_file(&other, &other_len, path, 65536, NULL) == 0);
	if (!ca || !cert || !key || !other)
		goto out;

	/* The CA as text: trusted with no file, and it is the only anchor. */
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/whoami", t->port);
	pol.ca_pem = ca;
	pol.ca_pem_len = ca_len;
	CHECK(get(&pol, url, 0, &resp, &err) == 0);
	CHECK(resp.status == 200);
	CHECK_STR(resp.body.data, "anonymous");
	nv_http_response_free(&resp);
	pol.ca_pem = other;
	pol.ca_pem_len = other_len;
	pol.ca_bundle = ca_path; /* not read when ca_pem is set */
	CHECK(get(&pol, url, 0, &resp, &err) == NV_EREFUSED);
	CHECK(contains(err.message, "certificate is not trusted"));
	CHECK(contains(err.hint, "certificate-authority"));
	nv_http_response_free(&resp);

	/* A client identity: the server sees its name. */
	pol = plain_policy;
	pol.ca_pem = ca;
	pol.ca_pem_len = ca_len;
	pol.client_cert_pem = cert;
	pol.client_cert_len = cert_len;
	pol.client_key_pem = key;
	pol.client_key_len = key_len;
	CHECK(get(&pol, url, 0, &resp, &err) == 0);
	CHECK_STR(resp.body.data, "navette-client");
	nv_http_response_free(&resp);

	/* A session never lends a connection made under one identity to a
	 * request made under another (or none). */
	sess = nv_http_session_new(&err);
	CHECK(sess != NULL);
	if (!sess)
		goto out;
	req.url = url;
	CHECK(nv_http_session_perform(sess, &pol, &req, &resp, &err) == 0);
	CHECK_STR(resp.body.data, "navette-client");
	nv_http_response_free(&resp);
	CHECK(nv_http_session_perform(sess, &pol, &req, &resp, &err) == 0);
	nv_http_response_free(&resp);
	CHECK(nv_http_session_connections(sess) == 1);
	pol.client_cert_pem = NULL;
	pol.client_key_pem = NULL;
	CHECK(nv_http_session_perform(sess, &pol, &req, &resp, &err) == 0);
	CHECK_STR(resp.body.data, "anonymous");
	nv_http_response_free(&resp);
	CHECK(nv_http_session_connections(sess) == 2);
	nv_http_session_free(sess);
out:
	free(ca);
	free(cert);
	free(key);
	free(other);
}

static void test_tls(const struct server *t, const struct server *a)
{
	char url[256], path[700], pin[NV_HTTP_PIN_MAX], cli_pin[128];
	char ca_pin[NV_HTTP_PIN_MAX], bind[64];
	nv_http_response resp;
	nv_http_policy pol;
	nv_secret *tok = bearer();
	nv_err err;

	/* Pins: from the certificate and from the public key, equal to the
	 * openssl CLI's; the CA's key gives another. */
	read_pin(cli_pin, sizeof(cli_pin));
	snprintf(path, sizeof(path), "%s/server.pem", cert_dir);
	CHECK(nv_http_pin_from_pem(path, pin, &err) == 0);
	CHECK_STR(pin, cli_pin);
	CHECK(strlen(pin) == 52);
	snprintf(path, sizeof(path), "%s/server.pub.pem", cert_dir);
	CHECK(nv_http_pin_from_pem(path, ca_pin, &err) == 0);
	CHECK_STR(ca_pin, cli_pin);
	CHECK(nv_http_pin_from_pem(ca_path, ca_pin, &err) == 0);
	CHECK(strcmp(ca_pin, pin) != 0);
	snprintf(path, sizeof(path), "%s/ext.cnf", cert_dir);
	CHECK(nv_http_pin_from_pem(path, cli_pin, &err) == NV_EINVAL);
	snprintf(path, sizeof(path), "%s/missing.pem", cert_dir);
	CHECK(nv_http_pin_from_pem(path, cli_pin, &err) == NV_EIO);

	/* With the CA bundle: trusted, by IP and by name. */
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/hello", t->port);
	CHECK(get(&tls_policy, url, 0, &resp, &err) == 0);
	CHECK(resp.status == 200);
	CHECK_STR(resp.body.data, "hello from tls");
	nv_http_response_free(&resp);
	snprintf(url, sizeof(url), "https://localhost:%d/hello", t->port);
	CHECK(get(&tls_policy, url, 0, &resp, &err) == 0);
	CHECK(resp.status == 200);
	nv_http_response_free(&resp);

	/* Without it: refused as untrusted. */
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/hello", t->port);
	CHECK(get(&plain_policy, url, 0, &resp, &err) == NV_EREFUSED);
	CHECK(contains(err.message, "certificate is not trusted"));
	CHECK(contains(err.message, "give the CA bundle of the profile"));
	nv_http_response_free(&resp);

	/* The right pin (with the CA) passes, a wrong one does not. */
	pol = tls_policy;
	pol.pinned_pubkey = pin;
	CHECK(get(&pol, url, 0, &resp, &err) == 0);
	CHECK(resp.status == 200);
	nv_http_response_free(&resp);
	pol.pinned_pubkey = ca_pin;
	CHECK(get(&pol, url, 0, &resp, &err) == NV_EREFUSED);
	CHECK(contains(err.message, "server's public key does not match the "
				    "pin of the profile"));
	nv_http_response_free(&resp);
	pol.pinned_pubkey =
		"sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
	CHECK(get(&pol, url, 0, &resp, &err) == NV_EREFUSED);
	CHECK(contains(err.message, "does not match the pin"));
	nv_http_response_free(&resp);

	/* A pin does not replace verification. */
	pol = plain_policy;
	pol.pinned_pubkey = pin;
	CHECK(get(&pol, url, 0, &resp, &err) == NV_EREFUSED);
	CHECK(contains(err.message, "not trusted"));
	nv_http_response_free(&resp);

	/* A credential over https, bound to the TLS server. */
	{
		nv_http_request req = {
			.url = url, .credential = tok, .credential_host = bind};

		snprintf(bind, sizeof(bind), "127.0.0.1:%d", t->port);
		snprintf(url, sizeof(url), "https://127.0.0.1:%d/echo-auth",
			 t->port);
		CHECK(nv_http_perform(&tls_policy, &req, &resp, &err) == 0);
		CHECK_STR(resp.body.data, "Bearer " TOKEN);
		nv_http_response_free(&resp);

		/* https -> http on a non-loopback host: refused. */
		req.max_redirects = 3;
		snprintf(url, sizeof(url),
			 "https://127.0.0.1:%d/redirect?to=http://"
			 "example.invalid/x",
			 t->port);
		CHECK(nv_http_perform(&tls_policy, &req, &resp, &err) ==
		      NV_EREFUSED);
		CHECK(contains(err.message, "downgrade"));
		check_clean(&err);
		nv_http_response_free(&resp);

		/* https -> http on loopback: followed, without the token
		 * (the scheme changed). */
		snprintf(url, sizeof(url),
			 "https://127.0.0.1:%d/redirect?to=http://127.0.0.1:"
			 "%d/echo-auth",
			 t->port, a->port);
		CHECK(nv_http_perform(&tls_policy, &req, &resp, &err) == 0);
		CHECK_STR(resp.body.data, "none");
		nv_http_response_free(&resp);
	}
	nv_secret_free(tok);
}

/* How many connections a server accepted so far (this query's own
 * included). */
static long server_connections(const struct server *s, int tls)
{
	char url[128];
	nv_http_response resp;
	nv_err err;
	long n = -1;

	snprintf(url, sizeof(url), "%s://127.0.0.1:%d/_connections",
		 tls ? "https" : "http", s->port);
	if (get(tls ? &tls_policy : &plain_policy, url, 0, &resp, &err) == 0 &&
	    resp.status == 200 && resp.body.data)
		n = atol(resp.body.data);
	nv_http_response_free(&resp);
	return n;
}

/* Sessions: successive requests to one endpoint share one connection (seen
 * by the server), while every rule of nv_http_perform still holds. */
static void test_session(const struct server *a, const struct server *b)
{
	char url[256], bind[64];
	nv_http_session *sess;
	nv_http_response resp;
	nv_secret *tok = bearer();
	nv_err err;
	long before, after;
	int ok = 1;

	sess = nv_http_session_new(&err);
	CHECK(sess != NULL);
	if (!sess)
		goto out;
	CHECK(nv_http_session_connections(sess) == 0);

	before = server_connections(a, 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/hello", a->port);
	for (int i = 0; i < 5; i++) {
		nv_http_request req = {.url = url};

		ok &= nv_http_session_perform(sess, &plain_policy, &req, &resp,
					      &err) == 0 &&
		      resp.status == 200 &&
		      contains(resp.body.data, "hello from a");
		nv_http_response_free(&resp);
	}
	CHECK(ok);
	after = server_connections(a, 0);
	/* five requests, one connection (+1: the count query's own) */
	CHECK(after - before == 2);
	CHECK(nv_http_session_connections(sess) == 1);

	/* Without a session, each request is a connection of its own. */
	before = server_connections(a, 0);
	for (int i = 0; i < 3; i++) {
		CHECK(get(&plain_policy, url, 0, &resp, &err) == 0);
		nv_http_response_free(&resp);
	}
	CHECK(server_connections(a, 0) - before == 4);

	/* A server that closes the connection: the next request opens a new
	 * one and works. */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/big-nolen?n=10",
		 a->port);
	{
		nv_http_request req = {.url = url};

		CHECK(nv_http_session_perform(sess, &plain_policy, &req, &resp,
					      &err) == 0);
		CHECK(resp.body.len == 10);
		nv_http_response_free(&resp);
	}
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/hello", a->port);
	{
		nv_http_request req = {.url = url};

		CHECK(nv_http_session_perform(sess, &plain_policy, &req, &resp,
					      &err) == 0);
		CHECK(resp.status == 200);
		nv_http_response_free(&resp);
	}
	CHECK(nv_http_session_connections(sess) == 2);

	/* A token in a header of its own, bound to its host like any
	 * credential, and left behind on a redirect to another origin. */
	snprintf(bind, sizeof(bind), "127.0.0.1:%d", a->port);
	{
		nv_http_request req = {.url = url,
				       .credential = tok,
				       .credential_host = bind,
				       .credential_header = "X-Test-Token",
				       .max_redirects = 2};

		snprintf(url, sizeof(url),
			 "http://127.0.0.1:%d/echo-header?name=X-Test-Token",
			 a->port);
		CHECK(nv_http_session_perform(sess, &plain_policy, &req, &resp,
					      &err) == 0);
		CHECK_STR(resp.body.data, TOKEN);
		nv_http_response_free(&resp);

		snprintf(url, sizeof(url),
			 "http://127.0.0.1:%d/echo-header?name=Authorization",
			 a->port);
		CHECK(nv_http_session_perform(sess, &plain_policy, &req, &resp,
					      &err) == 0);
		CHECK_STR(resp.body.data, "none");
		nv_http_response_free(&resp);

		snprintf(url, sizeof(url),
			 "http://127.0.0.1:%d/redirect?to=http://127.0.0.1:%d/"
			 "echo-header%%3Fname%%3DX-Test-Token",
			 a->port, b->port);
		CHECK(nv_http_session_perform(sess, &plain_policy, &req, &resp,
					      &err) == 0);
		CHECK(resp.redirects == 1);
		CHECK_STR(resp.body.data, "none");
		nv_http_response_free(&resp);

		/* bound to a, refused for b, nothing sent */
		snprintf(url, sizeof(url),
			 "http://127.0.0.1:%d/echo-header?name=X-Test-Token",
			 b->port);
		CHECK(nv_http_session_perform(sess, &plain_policy, &req, &resp,
					      &err) == NV_EREFUSED);
		check_clean(&err);
		nv_http_response_free(&resp);

		/* plain http off loopback: refused in a session too */
		req.url = "http://example.invalid/x";
		req.credential = NULL;
		req.credential_header = NULL;
		CHECK(nv_http_session_perform(sess, &plain_policy, &req, &resp,
					      &err) == NV_EREFUSED);
		nv_http_response_free(&resp);

		/* a basic credential cannot travel as a token header; the
		 * header name is checked */
		{
			nv_secret *pw = basic();

			req.url = url;
			req.credential = pw;
			req.credential_host = "127.0.0.1";
			req.credential_header = "X-Test-Token";
			CHECK(nv_http_session_perform(sess, &plain_policy, &req,
						      &resp,
						      &err) == NV_EINVAL);
			check_clean(&err);
			nv_http_response_free(&resp);
			req.credential = tok;
			req.credential_header = "X-Bad: header";
			CHECK(nv_http_session_perform(sess, &plain_policy, &req,
						      &resp,
						      &err) == NV_EINVAL);
			nv_http_response_free(&resp);
			nv_secret_free(pw);
		}
	}
out:
	nv_http_session_free(sess);
	nv_http_session_free(NULL);
	nv_secret_free(tok);
}

/* Over TLS: one handshake for many requests, and a connection verified
 * under one pin never serves a request made under another. */
static void test_session_tls(const struct server *t)
{
	char url[256], pin[NV_HTTP_PIN_MAX], path[700];
	nv_http_session *sess = nv_http_session_new(NULL);
	nv_http_request req = {.url = url};
	nv_http_response resp;
	nv_http_policy pol = tls_policy;
	nv_err err;
	long before;
	int ok = 1;

	CHECK(sess != NULL);
	if (!sess)
		return;
	snprintf(path, sizeof(path), "%s/server.pem", cert_dir);
	CHECK(nv_http_pin_from_pem(path, pin, &err) == 0);
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/hello", t->port);
	before = server_connections(t, 1);
	for (int i = 0; i < 4; i++) {
		ok &= nv_http_session_perform(sess, &tls_policy, &req, &resp,
					      &err) == 0 &&
		      resp.status == 200;
		nv_http_response_free(&resp);
	}
	CHECK(ok);
	CHECK(server_connections(t, 1) - before == 2);
	CHECK(nv_http_session_connections(sess) == 1);

	/* A wrong pin is refused although a verified connection is open. */
	pol.pinned_pubkey =
		"sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
	CHECK(nv_http_session_perform(sess, &pol, &req, &resp, &err) ==
	      NV_EREFUSED);
	CHECK(contains(err.message, "does not match the pin"));
	nv_http_response_free(&resp);
	/* No CA bundle: untrusted, whatever was open before. */
	CHECK(nv_http_session_perform(sess, &plain_policy, &req, &resp, &err) ==
	      NV_EREFUSED);
	CHECK(contains(err.message, "not trusted"));
	nv_http_response_free(&resp);
	/* The right pin: a new connection, then kept. */
	pol.pinned_pubkey = pin;
	for (int i = 0; i < 3; i++) {
		CHECK(nv_http_session_perform(sess, &pol, &req, &resp, &err) ==
		      0);
		nv_http_response_free(&resp);
	}
	CHECK(nv_http_session_connections(sess) == 4);
	nv_http_session_free(sess);
}

int main(void)
{
	struct server a = {-1, 0}, b = {-1, 0}, t = {-1, 0};
	char cmd[2048];
	const char *tmp = getenv("TMPDIR");
	int have_tls;

	signal(SIGPIPE, SIG_IGN);
	find_data_dir();
	snprintf(cert_dir, sizeof(cert_dir), "%s/nv-http-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(cert_dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(ca_path, sizeof(ca_path), "%s/ca.pem", cert_dir);
	tls_policy.ca_bundle = ca_path;

	test_helpers();

	if (server_start(&a, "a", 0) || server_start(&b, "b", 0)) {
		CHECK(!"test servers start");
		goto done;
	}
	test_plain(&a);
	test_credentials(&a);
	test_redirects(&a, &b);
	test_session(&a, &b);

	snprintf(cmd, sizeof(cmd), "sh '%s/make_certs.sh' '%s'", data_dir,
		 cert_dir);
	have_tls = system("command -v openssl >/dev/null 2>&1") == 0;
	if (!have_tls) {
		SKIP("TLS and pin tests: no openssl command (vendor/"
		     "packages.txt, group test)");
	} else if (system(cmd) != 0) {
		CHECK(!"make_certs.sh");
	} else if (server_start(&t, "tls", 1)) {
		CHECK(!"TLS test server starts");
	} else {
		test_tls(&t, &a);
		test_tls_memory(&t);
		test_session_tls(&t);
	}
done:
	server_stop(&a);
	server_stop(&b);
	server_stop(&t);
	nv_remove_tree(cert_dir, NULL);
	return nv_test_done();
}
