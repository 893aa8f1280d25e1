/* HTTPS client of navette (S3, OCI registries, slurmrestd), pure C over
 * libcurl, no Lua.
 *
 * Security stance, not configurable:
 * - TLS verification is ALWAYS on (CURLOPT_SSL_VERIFYPEER=1,
 *   CURLOPT_SSL_VERIFYHOST=2). There is no option to turn it off; a profile
 *   may only add a CA bundle or pin the server's public key.
 * - Plain http:// is accepted only for loopback hosts (127.0.0.0/8, ::1,
 *   localhost and the names under it, which are pinned to 127.0.0.1 and
 *   never asked of a resolver); anything else is NV_EREFUSED before any
 *   connection.
 * - A credential is bound to a host (and optionally a port) and attached
 *   only to requests for that host. Redirects are followed by this module,
 *   never by curl: once a hop leaves the first URL's origin (scheme, host,
 *   port), the credential and any Authorization, Cookie and Host headers
 *   are dropped for that hop and every later one.
 * - Response bodies and headers have hard caps.
 * - Messages never hold a secret value or URL userinfo.
 *
 * Thread-safety: each nv_http_perform call uses its own curl handle; a
 * session (nv_http_session_*) keeps one handle, and so its connections, for
 * successive requests of one thread at a time; curl_global_init runs once
 * behind a pthread_once. */
#ifndef NV_HTTP_H
#define NV_HTTP_H

#include <stddef.h>

#include "core/buf.h"
#include "core/nv_err.h"
#include "creds/secret.h"

#define NV_HTTP_CONNECT_TIMEOUT_MS_DEFAULT 10000L
#define NV_HTTP_TOTAL_TIMEOUT_MS_DEFAULT   300000L
#define NV_HTTP_MAX_BODY_DEFAULT           ((size_t)16 * 1024 * 1024)
#define NV_HTTP_HEADERS_MAX                100 /* response headers kept */
#define NV_HTTP_HEADER_BYTES_MAX           ((size_t)64 * 1024)
#define NV_HTTP_REDIRECTS_MAX              20
/* curl's buffer for a body streamed through a sink or a reader. */
#define NV_HTTP_STREAM_BUFFER ((size_t)512 * 1024)
/* "sha256//" + base64 of 32 bytes + NUL fits in 64. */
#define NV_HTTP_PIN_MAX 64

/* How to talk to one endpoint (from the profile). Zeroes mean defaults. */
typedef struct nv_http_policy {
	const char *ca_bundle; /* PEM file of trusted CAs; NULL: system */
	/* PEM text of trusted CAs (a kubeconfig's certificate-authority-data);
	 * when set, the only trust anchors, and ca_bundle is not read. */
	const char *ca_pem;
	size_t ca_pem_len;
	const char *pinned_pubkey; /* "sha256//BASE64[;sha256//...]" or NULL */
	/* A TLS client identity, PEM text (both or neither): the key is not
	 * copied (it stays in the caller's secret, which must outlive the
	 * request); a session never reuses a connection made under another
	 * identity or other trust anchors. */
	const char *client_cert_pem;
	size_t client_cert_len;
	const void *client_key_pem;
	size_t client_key_len;
	long connect_timeout_ms; /* 0: ..._CONNECT_TIMEOUT_MS_DEFAULT */
	long total_timeout_ms;   /* whole request, all hops; 0: default */
	size_t max_body;         /* response body cap; 0: default */
	/* no byte either way for this long (a stalled server or link) ends
	 * the request; 0: only the total timeout. NAVETTE_HTTP_STALL_TIMEOUT
	 * (seconds) replaces a nonzero value. */
	long stall_timeout_ms;
} nv_http_policy;

/* Streams a request body: fills buf with up to cap bytes, sets *nread
 * (0 at the end). Returns 0, or -1 to abort the request (NV_EIO). */
typedef int (*nv_http_read_fn)(void *payload, char *buf, size_t cap,
			       size_t *nread);

/* Receives the body of a 2xx final response instead of resp->body
 * (downloads). Returns 0, or -1 to abort (NV_EIO). The cap still applies. */
typedef int (*nv_http_sink_fn)(void *payload, const char *data, size_t len);

typedef struct nv_http_request {
	const char *method; /* "GET", "PUT"...; NULL: GET, or POST with body */
	const char *url;
	/* Extra request headers, "Name: value" each, no CR/LF. */
	const char *const *headers;
	size_t nheaders;
	/* The body: bytes, or a reader (then body_size is its length, or -1
	 * when unknown: chunked). A reader cannot be replayed, so a 307/308
	 * redirect of such a request is an error. */
	const void *body;
	size_t body_len;
	nv_http_read_fn body_read;
	void *body_payload;
	long long body_size;
	nv_http_sink_fn sink; /* optional, see nv_http_sink_fn */
	void *sink_payload;
	/* Optional credential: kind bearer ("token") or basic ("user",
	 * "password"), sent as an Authorization header only when the URL's
	 * host (and port, when the binding names one) equals
	 * credential_host: "host", "host:port" or "[v6]:port". Otherwise the
	 * request is refused (NV_EREFUSED) and nothing is sent. */
	const nv_secret *credential;
	const char *credential_host;
	/* NULL: the credential goes in Authorization. A header name
	 * ("X-SLURM-USER-TOKEN"): a bearer token is sent as "NAME: token"
	 * instead, under the same binding and redirect rules. */
	const char *credential_header;
	/* 0: a 3xx comes back to the caller. N > 0: up to N redirects are
	 * followed (at most NV_HTTP_REDIRECTS_MAX); one more is an error. */
	int max_redirects;
	/* Optional: asked before a redirect is followed, with the next URL
	 * (userinfo included, as the Location gave it). Nonzero, with err
	 * set, refuses the redirect: nothing more is sent. */
	int (*redirect_check)(void *payload, const char *url, nv_err *err);
	void *redirect_payload;
} nv_http_request;

typedef struct nv_http_header {
	char *name;
	char *value; /* surrounding blanks trimmed */
} nv_http_header;

typedef struct nv_http_response {
	long status; /* of the last response received; 0 if none */
	nv_buf body; /* capped at the policy's max_body */
	/* The URL of the last hop, userinfo removed. */
	char *effective_url;
	int redirects; /* how many were followed */
	/* Every header of the last response, in order (bounded). */
	nv_http_header *headers;
	size_t nheaders;
	/* The first value of headers of interest, or NULL; they point into
	 * headers. */
	const char *content_type;
	const char *location;
	const char *etag;
	const char *retry_after;
	const char *www_authenticate;
	const char *docker_content_digest;
	const char *amz_request_id; /* x-amz-request-id */
} nv_http_response;

/* Runs one request under policy. *resp is initialised here and must be
 * released with nv_http_response_free() whatever the result; after an
 * error it holds what was received (status, headers), if anything.
 * Returns 0 for any HTTP status (a 404 is not an error here), or:
 * NV_EINVAL bad request fields; NV_EREFUSED plain http to a non-loopback
 * host, a credential bound to another host, an https->http downgrade, an
 * untrusted certificate or a pin mismatch; NV_EBACKEND connection or
 * timeout failures, too many redirects; NV_ENOMEM a cap was hit (named in
 * the message); NV_EIO a body reader or sink failed. */
int nv_http_perform(const nv_http_policy *policy, const nv_http_request *req,
		    nv_http_response *resp, nv_err *err);

/* A session: successive requests reuse one curl handle, so a connection
 * (and its TLS session) to an endpoint is kept open between them, with the
 * same rules as nv_http_perform (same code path). Connections opened under
 * one policy are closed before a request under another CA bundle or pin.
 * One thread at a time per session. */
typedef struct nv_http_session nv_http_session;

/* A new session, or NULL (NV_ENOMEM / NV_EBACKEND in err). */
nv_http_session *nv_http_session_new(nv_err *err);

/* nv_http_perform on the session's connections. */
int nv_http_session_perform(nv_http_session *session,
			    const nv_http_policy *policy,
			    const nv_http_request *req, nv_http_response *resp,
			    nv_err *err);

/* How many connections the session opened so far (curl's count of new
 * connections per transfer, summed): 1 after any number of requests to one
 * endpoint that keeps them alive. */
long nv_http_session_connections(const nv_http_session *session);

/* Closes the session's connections and frees it. NULL is fine. */
void nv_http_session_free(nv_http_session *session);

/* The first value of response header name (case-insensitive), or NULL. */
const char *nv_http_response_header(const nv_http_response *resp,
				    const char *name);

/* Frees everything resp holds; resp may be re-used. NULL is fine. */
void nv_http_response_free(nv_http_response *resp);

/* Whether host (as in a URL: "127.0.0.1", "[::1]", "localhost",
 * "bucket.localhost") is a loopback address. */
int nv_http_host_is_loopback(const char *host);

/* Copies url into out for messages: userinfo removed, and the values of
 * query parameters that look like credentials (X-Amz-Signature,
 * X-Amz-Credential, X-Amz-Security-Token, token...) replaced by
 * "<redacted>". A URL that cannot be parsed becomes "<unparsable URL>". */
void nv_http_url_for_display(const char *url, char *out, size_t cap);

/* The pin of a certificate or public key PEM file, in the form
 * CURLOPT_PINNEDPUBLICKEY takes: "sha256//" followed by the base64 of the
 * SHA-256 of the DER SubjectPublicKeyInfo. */
int nv_http_pin_from_pem(const char *pem_path, char out[NV_HTTP_PIN_MAX],
			 nv_err *err);

#endif
