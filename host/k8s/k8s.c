/* Kubernetes API client (see k8s.h): the session and its requests. */
#include "k8s/k8s.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

struct nv_k8s {
	char *server;         /* without a trailing '/' */
	char bound_host[300]; /* host:port the token may go to */
	nv_http_policy policy;
	const nv_secret *token;
	nv_http_session *http;
	long requests;
};

static int server_parse(nv_k8s *k, const char *server, nv_err *err)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL, *extra = NULL;
	size_t n;
	int rc = 0;

	if (!u)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	if (curl_url_set(u, CURLUPART_URL, server, 0) ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) ||
	    (strcmp(scheme, "https") != 0 && strcmp(scheme, "http") != 0)) {
		rc = nv_err_bad(err,
				"the cluster's server is https://HOST[:PORT] "
				"(kubectl config view shows it)",
				"Kubernetes API server", server, 200);
		goto out;
	}
	if (strcmp(scheme, "http") == 0 && !nv_http_host_is_loopback(host)) {
		rc = nv_err_set(err, NV_EREFUSED,
				"use the cluster's https:// address",
				"the Kubernetes API server %s is plain http: a "
				"token would travel in clear",
				server);
		goto out;
	}
	if (curl_url_get(u, CURLUPART_QUERY, &extra, 0) == CURLUE_OK ||
	    curl_url_get(u, CURLUPART_USER, &extra, 0) == CURLUE_OK) {
		rc = nv_err_set(err, NV_EINVAL,
				"give https://HOST[:PORT][/PATH] only",
				"the Kubernetes API server's URL may not carry "
				"a query or user info");
		goto out;
	}
	if (curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT))
		port = NULL;
	if ((size_t)snprintf(k->bound_host, sizeof(k->bound_host), "%s%s%s",
			     host, port ? ":" : "",
			     port ? port : "") >= sizeof(k->bound_host)) {
		rc = nv_err_bad(err, NULL, "Kubernetes API server", server,
				200);
		goto out;
	}
	k->server = strdup(server);
	if (!k->server) {
		rc = nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
		goto out;
	}
	n = strlen(k->server);
	while (n > 0 && k->server[n - 1] == '/')
		k->server[--n] = '\0';
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_free(extra);
	curl_url_cleanup(u);
	return rc;
}

int nv_k8s_set_token(nv_k8s *k, const nv_secret *token, nv_err *err)
{
	if (token && token->kind != NV_SECRET_BEARER)
		return nv_err_set(err, NV_EINVAL,
				  "give a token (kind bearer), or a client "
				  "certificate in the kubeconfig",
				  "credential %s (%s) cannot authenticate to "
				  "a Kubernetes API server",
				  token->name,
				  nv_secret_kind_name(token->kind));
	k->token = token;
	return 0;
}

int nv_k8s_open(nv_k8s **out, const nv_k8s_config *cfg, nv_err *err)
{
	nv_k8s *k;
	int rc;

	*out = NULL;
	if (!cfg || !cfg->server)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "a Kubernetes session needs a server");
	if (!cfg->policy.client_cert_pem != !cfg->policy.client_key_pem)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "a client certificate needs its key, and "
				  "a key its certificate");
	k = calloc(1, sizeof(*k));
	if (!k)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	k->policy = cfg->policy;
	rc = server_parse(k, cfg->server, err);
	if (!rc)
		rc = nv_k8s_set_token(k, cfg->token, err);
	if (!rc) {
		k->http = nv_http_session_new(err);
		if (!k->http)
			rc = err ? err->code : NV_ENOMEM;
	}
	if (rc) {
		nv_k8s_close(k);
		return rc;
	}
	*out = k;
	return 0;
}

void nv_k8s_close(nv_k8s *k)
{
	if (!k)
		return;
	nv_http_session_free(k->http);
	free(k->server);
	free(k);
}

static int path_ok(const char *path, nv_err *err)
{
	size_t n = path ? strlen(path) : 0;

	if (n == 0 || path[0] != '/' || n >= NV_K8S_PATH_MAX ||
	    strstr(path, "/../") || strstr(path, "/./") ||
	    strpbrk(path, " \r\n\t#"))
		return nv_err_bad(err, NULL, "Kubernetes API path", path, 200);
	return 0;
}

/* Seconds a 429 or 503 asks to wait, or -1 when it is not to be tried
 * again (no Retry-After, or one beyond NV_K8S_RETRY_AFTER_MAX). */
static long retry_after(const nv_http_response *resp)
{
	char *end;
	long s;

	if ((resp->status != 429 && resp->status != 503) || !resp->retry_after)
		return -1;
	s = strtol(resp->retry_after, &end, 10);
	if (end == resp->retry_after || *end || s < 0 ||
	    s > NV_K8S_RETRY_AFTER_MAX)
		return -1;
	return s;
}

static int perform(nv_k8s *k, const char *method, const char *path,
		   const char *content_type, const char *body,
		   const nv_http_policy *policy, nv_http_sink_fn sink,
		   void *payload, nv_http_response *resp, nv_err *err)
{
	char url[NV_K8S_PATH_MAX + 320], ctype[128];
	const char *headers[2];
	size_t n = 0;
	nv_http_request req;
	int rc;

	memset(resp, 0, sizeof(*resp));
	rc = path_ok(path, err);
	if (rc)
		return rc;
	if ((size_t)snprintf(url, sizeof(url), "%s%s", k->server, path) >=
	    sizeof(url))
		return nv_err_set(err, NV_EINVAL, NULL, "URL too long");
	headers[n++] = "Accept: application/json";
	if (body) {
		if (!content_type || strpbrk(content_type, "\r\n") ||
		    (size_t)snprintf(ctype, sizeof(ctype), "Content-Type: %s",
				     content_type) >= sizeof(ctype))
			return nv_err_set(err, NV_EINVAL, NULL,
					  "a request body needs its content "
					  "type");
		headers[n++] = ctype;
	}
	for (int attempt = 0;; attempt++) {
		long wait;

		memset(&req, 0, sizeof(req));
		req.method = method;
		req.url = url;
		req.headers = headers;
		req.nheaders = n;
		req.body = body;
		req.body_len = body ? strlen(body) : 0;
		req.sink = sink;
		req.sink_payload = payload;
		req.credential = k->token;
		req.credential_host = k->token ? k->bound_host : NULL;
		req.max_redirects = 0;
		k->requests++;
		rc = nv_http_session_perform(k->http, policy, &req, resp, err);
		if (rc || sink || attempt >= NV_K8S_RETRIES)
			return rc;
		wait = retry_after(resp);
		if (wait < 0)
			return 0;
		nv_http_response_free(resp);
		memset(resp, 0, sizeof(*resp));
		if (wait > 0) {
			struct timespec ts = {wait, 0};

			while (nanosleep(&ts, &ts) != 0)
				;
		}
	}
}

int nv_k8s_call(nv_k8s *k, const char *method, const char *path,
		const char *content_type, const char *body, size_t max,
		nv_http_response *resp, nv_err *err)
{
	nv_http_policy policy = k->policy;

	policy.max_body = max ? max : NV_K8S_REPLY_MAX;
	return perform(k, method ? method : "GET", path, content_type, body,
		       &policy, NULL, NULL, resp, err);
}

int nv_k8s_stream(nv_k8s *k, const char *path, long seconds,
		  nv_http_sink_fn sink, void *payload, nv_http_response *resp,
		  nv_err *err)
{
	nv_http_policy policy = k->policy;

	if (seconds < 1 || seconds > NV_K8S_WATCH_MAX_S || !sink)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "a watch lasts 1 to %d seconds, with a sink",
				  NV_K8S_WATCH_MAX_S);
	/* The cap bounds what is kept of an error answer; the stream itself
	 * is bounded by its time and by the sink's own caps. */
	policy.max_body = NV_K8S_REPLY_MAX;
	policy.total_timeout_ms = (seconds + 15) * 1000L;
	/* a quiet watch is normal: bookmarks come about once a minute */
	policy.stall_timeout_ms = 0;
	return perform(k, "GET", path, NULL, NULL, &policy, sink, payload, resp,
		       err);
}

long nv_k8s_requests(const nv_k8s *k)
{
	return k ? k->requests : 0;
}

long nv_k8s_connections(const nv_k8s *k)
{
	return k ? nv_http_session_connections(k->http) : 0;
}

const char *nv_k8s_server(const nv_k8s *k)
{
	return k ? k->server : NULL;
}
