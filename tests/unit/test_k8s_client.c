/* Unit tests of the Kubernetes API session (host/k8s/k8s.c) against the
 * HTTP test server (tests/data/http/server.py): which servers it accepts,
 * that the token goes in Authorization, that answers come back whatever
 * their status, that a 429 or 503 asking to wait is tried again within
 * bounds, that a watch is handed over as it streams, and that the
 * cluster's CA and a client identity given as PEM text are used. The
 * real API server is in tests/integration/kubernetes. */
#include "k8s/k8s.h"
#include "core/fsutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nv_test.h"
#include "http_test_server.h"

#define TOKEN                                                                  \
	"k8s-tok-"                                                             \
	"SECRET-9"

static nv_secret *secret(nv_secret_kind kind, const char *field,
			 const char *value)
{
	nv_err err;
	nv_secret *s = nv_secret_new("cluster-token", kind, "env", &err);

	if (!s || nv_secret_set(s, field, value, strlen(value), &err))
		abort();
	return s;
}

static int contains(const char *hay, const char *needle)
{
	return hay && strstr(hay, needle);
}

struct lines {
	int chunks, stop_after;
	char text[4096];
	size_t len;
};

static int collect(void *payload, const char *data, size_t len)
{
	struct lines *l = payload;

	l->chunks++;
	if (l->len + len < sizeof(l->text)) {
		memcpy(l->text + l->len, data, len);
		l->len += len;
		l->text[l->len] = '\0';
	}
	if (l->stop_after && l->chunks >= l->stop_after)
		return -1;
	return 0;
}

static void test_open(int port)
{
	nv_k8s *k = NULL;
	nv_k8s_config cfg = {0};
	nv_secret *basic = secret(NV_SECRET_BASIC, "user", "u");
	char url[128];
	nv_err err;

	cfg.server = "http://k8s.example:6443";
	CHECK(nv_k8s_open(&k, &cfg, &err) == NV_EREFUSED);
	CHECK(contains(err.message, "token would travel in clear"));
	cfg.server = "ftp://127.0.0.1/";
	CHECK(nv_k8s_open(&k, &cfg, &err) == NV_EINVAL);
	CHECK(contains(err.hint, "https://HOST"));
	cfg.server = "https://127.0.0.1:6443/?x=1";
	CHECK(nv_k8s_open(&k, &cfg, &err) == NV_EINVAL);
	cfg.server = "https://u:p@127.0.0.1:6443";
	CHECK(nv_k8s_open(&k, &cfg, &err) == NV_EINVAL);
	cfg.server = NULL;
	CHECK(nv_k8s_open(&k, &cfg, &err) == NV_EINVAL);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	cfg.server = url;
	cfg.token = basic;
	CHECK(nv_k8s_open(&k, &cfg, &err) == NV_EINVAL);
	CHECK(contains(err.message, "cannot authenticate"));
	cfg.token = NULL;
	cfg.policy.client_cert_pem = "x";
	CHECK(nv_k8s_open(&k, &cfg, &err) == NV_EINVAL);
	CHECK(k == NULL);
	nv_secret_free(basic);
}

static void test_calls(int port)
{
	nv_k8s *k = NULL;
	nv_k8s_config cfg = {0};
	nv_secret *tok = secret(NV_SECRET_BEARER, "token", TOKEN);
	nv_http_response resp;
	struct lines l;
	char url[128];
	nv_err err;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", port);
	cfg.server = url;
	cfg.token = tok;
	CHECK(nv_k8s_open(&k, &cfg, &err) == 0);
	if (!k)
		goto out;
	url[strlen(url) - 1] = '\0'; /* kept without its trailing '/' */
	CHECK_STR(nv_k8s_server(k), url);

	/* The token, as a bearer token. */
	CHECK(nv_k8s_call(k, "GET", "/echo-auth", NULL, NULL, 0, &resp, &err) ==
	      0);
	CHECK(resp.status == 200);
	CHECK_STR(resp.body.data, "Bearer " TOKEN);
	nv_http_response_free(&resp);
	CHECK(nv_k8s_set_token(k, NULL, &err) == 0);
	CHECK(nv_k8s_call(k, "GET", "/echo-auth", NULL, NULL, 0, &resp, &err) ==
	      0);
	CHECK_STR(resp.body.data, "none");
	nv_http_response_free(&resp);
	CHECK(nv_k8s_set_token(k, tok, &err) == 0);

	/* A body with its content type. */
	CHECK(nv_k8s_call(k, "PATCH", "/echo", "application/merge-patch+json",
			  "{\"spec\":{\"suspend\":false}}", 0, &resp,
			  &err) == 0);
	CHECK_STR(resp.body.data, "PATCH|application/merge-patch+json|"
				  "{\"spec\":{\"suspend\":false}}");
	nv_http_response_free(&resp);
	CHECK(nv_k8s_call(k, "POST", "/echo", NULL, "{}", 0, &resp, &err) ==
	      NV_EINVAL);
	nv_http_response_free(&resp);

	/* Any status comes back to the caller. */
	CHECK(nv_k8s_call(k, "GET", "/status?code=409", NULL, NULL, 0, &resp,
			  &err) == 0);
	CHECK(resp.status == 409);
	nv_http_response_free(&resp);

	/* Paths: absolute, no dot segments, no spaces. */
	CHECK(nv_k8s_call(k, "GET", "api/v1", NULL, NULL, 0, &resp, &err) ==
	      NV_EINVAL);
	CHECK(nv_k8s_call(k, "GET", "/api/../x", NULL, NULL, 0, &resp, &err) ==
	      NV_EINVAL);
	CHECK(nv_k8s_call(k, "GET", "/a b", NULL, NULL, 0, &resp, &err) ==
	      NV_EINVAL);

	/* 429 with Retry-After: tried again, up to NV_K8S_RETRIES times. */
	long before = nv_k8s_requests(k);
	CHECK(nv_k8s_call(k, "GET", "/retry-after?key=a&n=2", NULL, NULL, 0,
			  &resp, &err) == 0);
	CHECK(resp.status == 200);
	CHECK_STR(resp.body.data, "done after 2");
	CHECK(nv_k8s_requests(k) - before == 3);
	nv_http_response_free(&resp);
	before = nv_k8s_requests(k);
	CHECK(nv_k8s_call(k, "GET", "/retry-after?key=b&n=9&code=503", NULL,
			  NULL, 0, &resp, &err) == 0);
	CHECK(resp.status == 503);
	CHECK(nv_k8s_requests(k) - before == NV_K8S_RETRIES + 1);
	nv_http_response_free(&resp);
	/* a wait beyond the bound is the caller's to decide */
	before = nv_k8s_requests(k);
	CHECK(nv_k8s_call(k, "GET", "/retry-after?key=c&n=1&after=3600", NULL,
			  NULL, 0, &resp, &err) == 0);
	CHECK(resp.status == 429);
	CHECK(nv_k8s_requests(k) - before == 1);
	nv_http_response_free(&resp);

	/* The body cap. */
	CHECK(nv_k8s_call(k, "GET", "/big?n=5000", NULL, NULL, 1000, &resp,
			  &err) == NV_ENOMEM);
	nv_http_response_free(&resp);

	/* A watch: chunks as they come, until the server closes. */
	memset(&l, 0, sizeof(l));
	CHECK(nv_k8s_stream(k, "/lines?n=4&ms=150", 5, collect, &l, &resp,
			    &err) == 0);
	CHECK(resp.status == 200);
	CHECK_STR(l.text, "{\"n\":0}\n{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n");
	CHECK(l.chunks >= 2); /* handed over as it streamed */
	nv_http_response_free(&resp);
	memset(&l, 0, sizeof(l));
	l.stop_after = 1;
	CHECK(nv_k8s_stream(k, "/lines?n=4&ms=150", 5, collect, &l, &resp,
			    &err) == NV_EIO);
	CHECK(l.chunks == 1);
	nv_http_response_free(&resp);
	CHECK(nv_k8s_stream(k, "/lines", 0, collect, &l, &resp, &err) ==
	      NV_EINVAL);
	CHECK(nv_k8s_stream(k, "/lines", NV_K8S_WATCH_MAX_S + 1, collect, &l,
			    &resp, &err) == NV_EINVAL);
	/* a stream's error answer lands in resp->body */
	CHECK(nv_k8s_stream(k, "/status?code=410", 5, collect, &l, &resp,
			    &err) == 0);
	CHECK(resp.status == 410);
	nv_http_response_free(&resp);
out:
	nv_k8s_close(k);
	nv_secret_free(tok);
}

/* The cluster's CA and a client identity as PEM text (a kubeconfig's
 * certificate-authority-data, client-certificate-data, client-key-data). */
static void test_tls(int port)
{
	char url[128], path[700], *ca = NULL, *cert = NULL, *key = NULL;
	size_t ca_len = 0, cert_len = 0, key_len = 0;
	nv_k8s *k = NULL;
	nv_k8s_config cfg = {0};
	nv_http_response resp;
	nv_err err;

	snprintf(path, sizeof(path), "%s/ca.pem", cert_dir);
	CHECK(nv_read_file(&ca, &ca_len, path, 65536, NULL) == 0);
	snprintf(path, sizeof(path), "%s/client.pem", cert_dir);
	CHECK(nv_read_file(&cert, &cert_len, path, 65536, NULL) == 0);
	snprintf(path, sizeof(path), "%s/client.key", cert_dir);
	CHECK(nv_read_file(&key, &key_len, path, 65536, NULL) == 0);
	snprintf(url, sizeof(url), "https://127.0.0.1:%d", port);
	cfg.server = url;
	cfg.policy.ca_pem = ca;
	cfg.policy.ca_pem_len = ca_len;
	cfg.policy.client_cert_pem = cert;
	cfg.policy.client_cert_len = cert_len;
	cfg.policy.client_key_pem = key;
	cfg.policy.client_key_len = key_len;
	CHECK(nv_k8s_open(&k, &cfg, &err) == 0);
	if (k) {
		CHECK(nv_k8s_call(k, "GET", "/whoami", NULL, NULL, 0, &resp,
				  &err) == 0);
		CHECK_STR(resp.body.data, "navette-client");
		nv_http_response_free(&resp);
		CHECK(nv_k8s_connections(k) == 1);
	}
	nv_k8s_close(k);
	free(ca);
	free(cert);
	free(key);
}

int main(void)
{
	struct server plain = {-1, 0}, tls = {-1, 0};
	const char *tmp = getenv("TMPDIR");
	char cmd[2048];

	signal(SIGPIPE, SIG_IGN);
	find_data_dir();
	snprintf(cert_dir, sizeof(cert_dir), "%s/nv-k8s-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(cert_dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(ca_path, sizeof(ca_path), "%s/ca.pem", cert_dir);
	if (server_start(&plain, "k8s", 0)) {
		CHECK(!"the test server starts");
		goto done;
	}
	test_open(plain.port);
	test_calls(plain.port);
	snprintf(cmd, sizeof(cmd), "sh '%s/make_certs.sh' '%s'", data_dir,
		 cert_dir);
	if (system("command -v openssl >/dev/null 2>&1") != 0)
		SKIP("TLS: no openssl command (vendor/packages.txt, group "
		     "test)");
	else if (system(cmd) != 0)
		CHECK(!"make_certs.sh");
	else if (server_start(&tls, "k8s-tls", 1))
		CHECK(!"the TLS test server starts");
	else
		test_tls(tls.port);
done:
	server_stop(&plain);
	server_stop(&tls);
	nv_remove_tree(cert_dir, NULL);
	return nv_test_done();
}
