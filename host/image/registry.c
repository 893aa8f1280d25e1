/* The registry v2 client (see registry.h). One function, reg_perform(),
 * runs every request: it picks the credential for the request's scope
 * (Basic, a cached Bearer token, or none), answers 401 challenges at most
 * a few times per request, and replays the body from its start when it
 * must send it again (bodies are bytes or a file range, never a stream
 * that cannot rewind). The rest builds URLs, checks digests and turns
 * registry errors into nv_err. */
#include "image/registry.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "image/protocol.h"
#include "net/http.h"
#include "core/fsutil.h"
#include "core/hex.h"
#include "core/sha256.h"

#define URL_MAX     4096
#define HOST_MAX    300
#define ERROR_BODY  ((size_t)64 * 1024)
#define AUTH_ROUNDS 3 /* 401 answers handled per request */
#define IO_CHUNK    ((size_t)256 * 1024)

enum auth_mode {
	AUTH_UNKNOWN,
	AUTH_NONE,
	AUTH_BASIC,
	AUTH_BEARER,
	AUTH_STATIC
};

struct token_entry {
	char scope[NV_REG_SCOPE_MAX]; /* the operation's scope: the key */
	nv_secret *token;
	double used_at;
};

struct nv_registry {
	nv_registry_config cfg;
	char api_base[HOST_MAX + 16]; /* scheme://host[:port] */
	char api_host[HOST_MAX];      /* host[:port] */
	char bare_host[HOST_MAX];     /* host, no port, no brackets */
	nv_http_policy policy;
	enum auth_mode mode;
	char realm[NV_REG_REALM_MAX];
	char service[NV_REG_SERVICE_MAX];
	struct token_entry tokens[NV_REGISTRY_TOKENS_MAX];
	nv_registry_stats stats;
};

/* What to send. A file body is the range [offset, offset + len) of fd. */
struct reg_body {
	const void *data;
	size_t len;
	int fd;
	uint64_t offset, flen, pos;
	const char *digest; /* for progress reports */
	uint64_t base, total;
	nv_registry *r;
};

struct reg_req {
	const char *method;
	const char *url;
	const char *scope; /* space-separated scopes this request needs */
	const char *headers[8];
	size_t nheaders;
	struct reg_body *body;
	size_t max_body; /* response cap; 0: ERROR_BODY */
	nv_http_sink_fn sink;
	void *sink_payload;
	int max_redirects;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- URLs ---- */

/* "scheme://host[:port]/..." -> host[:port] and host (no brackets). */
static int url_host(const char *url, char hostport[HOST_MAX],
		    char bare[HOST_MAX])
{
	const char *p = strstr(url, "://"), *end;
	size_t n;

	if (!p)
		return -1;
	p += 3;
	end = p + strcspn(p, "/?#");
	if (memchr(p, '@', (size_t)(end - p)))
		return -1; /* userinfo: never ours */
	n = (size_t)(end - p);
	if (n == 0 || n >= HOST_MAX)
		return -1;
	memcpy(hostport, p, n);
	hostport[n] = '\0';
	if (hostport[0] == '[') {
		const char *close = strchr(hostport, ']');
		if (!close)
			return -1;
		n = (size_t)(close - hostport - 1);
		memcpy(bare, hostport + 1, n);
	} else {
		n = strcspn(hostport, ":");
		memcpy(bare, hostport, n);
	}
	bare[n] = '\0';
	return 0;
}

static void url_encode(nv_buf *b, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '.' ||
		    c == '_' || c == '~') {
			nv_buf_append(b, s, 1);
		} else {
			char e[3];
			nv_hex_percent(e, c);
			nv_buf_append(b, e, 3);
		}
	}
}

static int api_url(nv_registry *r, char *out, size_t cap, const char *fmt,
		   const char *repository, const char *rest)
{
	int n = snprintf(out, cap, "%s/v2/%s/%s%s", r->api_base, repository,
			 fmt, rest ? rest : "");

	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* ---- errors ---- */

static int reg_fail(nv_registry *r, const nv_http_response *resp,
		    const char *what, nv_err *err)
{
	char code[64], message[300], why[NV_REG_SCOPE_MAX + 100];
	const char *hint;
	nv_reg_challenge ch;
	nv_err ignored;
	int nv;

	nv_reg_error_parse(resp->body.data, resp->body.len, code, sizeof(code),
			   message, sizeof(message));
	why[0] = '\0';
	memset(&ch, 0, sizeof(ch));
	if (resp->status == 401 &&
	    nv_reg_challenge_parse(&ch, resp->www_authenticate, &ignored) ==
		    0 &&
	    ch.error[0])
		snprintf(why, sizeof(why), " (%s%s%.900s)", ch.error,
			 ch.scope[0] ? " for " : "", ch.scope);
	if (resp->status == 404)
		nv = NV_ENOTFOUND;
	else if (resp->status == 401 || resp->status == 403)
		nv = NV_EREFUSED;
	else
		nv = NV_EBACKEND;
	hint = nv_reg_error_hint(code);
	if (!hint) {
		if (resp->status == 401)
			hint = nv_reg_error_hint("UNAUTHORIZED");
		else if (resp->status == 403)
			hint = nv_reg_error_hint("DENIED");
		else if (resp->status == 429)
			hint = nv_reg_error_hint("TOOMANYREQUESTS");
		else if (resp->status >= 500)
			hint = "the registry failed; try again later";
		else
			hint = "check the reference and the registry";
	}
	if (strcmp(ch.error, "insufficient_scope") == 0 && why[0])
		hint = nv_reg_error_hint("DENIED");
	return nv_err_set(err, nv, hint, "registry %s: %s: HTTP %ld%s%s%s%s%s",
			  r->cfg.registry, what, resp->status,
			  code[0] ? " " : "", code, message[0] ? ": " : "",
			  message, why);
}

/* ---- tokens ---- */

static struct token_entry *token_find(nv_registry *r, const char *scope)
{
	double now = now_s();

	for (size_t i = 0; i < NV_REGISTRY_TOKENS_MAX; i++) {
		struct token_entry *e = &r->tokens[i];
		double margin;

		if (!e->token || strcmp(e->scope, scope) != 0)
			continue;
		/* renew a little before the end, never use an expired one */
		margin = (e->token->expires_at - e->token->loaded_at) / 10;
		if (margin > 10)
			margin = 10;
		if (e->token->expires_at > 0 &&
		    now >= e->token->expires_at - margin) {
			nv_secret_free(e->token);
			e->token = NULL;
			return NULL;
		}
		e->used_at = now;
		return e;
	}
	return NULL;
}

static void token_drop(nv_registry *r, const char *scope)
{
	for (size_t i = 0; i < NV_REGISTRY_TOKENS_MAX; i++)
		if (r->tokens[i].token &&
		    strcmp(r->tokens[i].scope, scope) == 0) {
			nv_secret_free(r->tokens[i].token);
			r->tokens[i].token = NULL;
		}
}

static void token_store(nv_registry *r, const char *scope, nv_secret *tok)
{
	struct token_entry *slot = NULL;

	token_drop(r, scope);
	for (size_t i = 0; i < NV_REGISTRY_TOKENS_MAX; i++) {
		struct token_entry *e = &r->tokens[i];

		if (!e->token) {
			slot = e;
			break;
		}
		if (!slot || e->used_at < slot->used_at)
			slot = e; /* the least recently used goes */
	}
	nv_secret_free(slot->token);
	snprintf(slot->scope, sizeof(slot->scope), "%s", scope);
	slot->token = tok;
	slot->used_at = now_s();
}

/* May the configured credential go to the token realm's host? */
static int realm_trusted(nv_registry *r, const char *hostport, const char *bare)
{
	if (strcasecmp(bare, r->bare_host) == 0)
		return 1;
	if (strcmp(r->cfg.registry, NV_IMAGE_DEFAULT_REGISTRY) == 0 &&
	    strcasecmp(bare, "auth.docker.io") == 0)
		return 1;
	for (size_t i = 0; i < r->cfg.ntoken_hosts; i++)
		if (strcasecmp(r->cfg.token_hosts[i], hostport) == 0 ||
		    strcasecmp(r->cfg.token_hosts[i], bare) == 0)
			return 1;
	return 0;
}

/* Fetches a token for scopes (space-separated) from the realm and caches
 * it under key. */
static int token_fetch(nv_registry *r, const char *key, const char *scopes,
		       nv_err *err)
{
	char hostport[HOST_MAX], bare[HOST_MAX], shown[URL_MAX];
	const nv_secret *cred = NULL;
	nv_http_response resp;
	nv_http_request req;
	nv_http_policy pol = r->policy;
	nv_secret *tok = NULL;
	const char *p;
	nv_buf url;
	int rc;

	if (!r->realm[0])
		return nv_err_set(err, NV_EBACKEND,
				  "check the registry's address",
				  "registry %s asked for a token without "
				  "naming a realm",
				  r->cfg.registry);
	if (url_host(r->realm, hostport, bare))
		return nv_err_set(err, NV_EBACKEND,
				  "check the registry's token settings",
				  "registry %s names a token realm navette "
				  "cannot use ('%.200s')",
				  r->cfg.registry, r->realm);
	nv_buf_init(&url, URL_MAX);
	nv_buf_puts(&url, r->realm);
	nv_buf_puts(&url, strchr(r->realm, '?') ? "&" : "?");
	if (r->service[0]) {
		nv_buf_puts(&url, "service=");
		url_encode(&url, r->service);
	}
	for (p = scopes; p && *p;) {
		size_t n = strcspn(p, " ");
		char one[NV_REG_SCOPE_MAX];

		if (n > 0 && n < sizeof(one)) {
			memcpy(one, p, n);
			one[n] = '\0';
			nv_buf_puts(&url, "&scope=");
			url_encode(&url, one);
		}
		p += n;
		while (*p == ' ')
			p++;
	}
	if (url.failed) {
		nv_buf_free(&url);
		return nv_err_set(err, NV_ENOMEM, NULL,
				  "token request URL too long");
	}
	if (r->cfg.credential && r->cfg.credential->kind == NV_SECRET_BASIC &&
	    realm_trusted(r, hostport, bare))
		cred = r->cfg.credential;
	memset(&req, 0, sizeof(req));
	req.method = "GET";
	req.url = url.data;
	req.credential = cred;
	req.credential_host = cred ? hostport : NULL;
	req.max_redirects = 3;
	pol.max_body = NV_REG_TOKEN_BODY_MAX;
	r->stats.token_requests++;
	rc = nv_http_perform(&pol, &req, &resp, err);
	nv_http_url_for_display(r->realm, shown, sizeof(shown));
	if (rc) {
		nv_http_response_free(&resp);
		nv_buf_free(&url);
		return rc;
	}
	if (resp.status != 200) {
		char code[64], message[300];

		nv_reg_error_parse(resp.body.data, resp.body.len, code,
				   sizeof(code), message, sizeof(message));
		rc = nv_err_set(
			err, resp.status >= 500 ? NV_EBACKEND : NV_EREFUSED,
			cred ? "check the registry credential and its rights"
			: r->cfg.credential
				? "the token service is on another "
				  "host than the registry: allow it "
				  "(token_hosts) to send it the "
				  "credential"
				: "give a registry credential "
				  "(navette.lua, or docker login)",
			"registry %s: the token service %s refused %s "
			"(HTTP %ld)%s%s",
			r->cfg.registry, shown,
			cred ? "the credential" : "an anonymous request",
			resp.status, message[0] ? ": " : "", message);
	} else {
		rc = nv_reg_token_parse(resp.body.data, resp.body.len,
					"registry-token", now_s(), &tok, err);
		if (!rc)
			token_store(r, key, tok);
	}
	nv_http_response_free(&resp);
	nv_buf_free(&url);
	return rc;
}

/* ---- the request loop ---- */

static int body_read(void *payload, char *buf, size_t cap, size_t *nread)
{
	struct reg_body *b = payload;
	uint64_t left = b->flen - b->pos;
	size_t want = cap < left ? cap : (size_t)left;
	ssize_t n = 0;

	*nread = 0;
	if (want == 0)
		return 0;
	do {
		n = pread(b->fd, buf, want, (off_t)(b->offset + b->pos));
	} while (n < 0 && errno == EINTR);
	if (n <= 0)
		return -1; /* the file shrank: the digest would not match */
	b->pos += (uint64_t)n;
	*nread = (size_t)n;
	if (b->r->cfg.progress && b->digest)
		b->r->cfg.progress(b->r->cfg.progress_payload, b->digest,
				   b->base + b->pos, b->total);
	return 0;
}

static int reg_perform(nv_registry *r, struct reg_req *q,
		       nv_http_response *resp, nv_err *err)
{
	char hostport[HOST_MAX], bare[HOST_MAX], auth_key[NV_REG_SCOPE_MAX];
	int rounds = 0, renewed = 0, rc;

	memset(resp, 0, sizeof(*resp));
	snprintf(auth_key, sizeof(auth_key), "%s", q->scope ? q->scope : "");
	if (url_host(q->url, hostport, bare))
		return nv_err_set(err, NV_EBACKEND, NULL,
				  "registry %s: unusable URL", r->cfg.registry);
	/* an upload Location on another host gets no credential */
	int same_host = strcasecmp(hostport, r->api_host) == 0;

	for (;;) {
		const nv_secret *cred = NULL;
		struct token_entry *tok = NULL;
		nv_http_policy pol = r->policy;
		nv_reg_challenge ch;
		nv_http_request req;

		if (same_host) {
			if (r->mode == AUTH_BASIC || r->mode == AUTH_STATIC) {
				cred = r->cfg.credential;
			} else if (r->mode == AUTH_BEARER) {
				tok = token_find(r, auth_key);
				if (!tok) {
					rc = token_fetch(r, auth_key, auth_key,
							 err);
					if (rc)
						return rc;
					tok = token_find(r, auth_key);
				}
				cred = tok ? tok->token : NULL;
			}
		}
		memset(&req, 0, sizeof(req));
		req.method = q->method;
		req.url = q->url;
		req.headers = q->headers;
		req.nheaders = q->nheaders;
		req.credential = cred;
		req.credential_host = cred ? r->api_host : NULL;
		if (cred && cred == r->cfg.credential && r->cfg.credential_host)
			req.credential_host = r->cfg.credential_host;
		req.max_redirects = q->max_redirects;
		req.sink = q->sink;
		req.sink_payload = q->sink_payload;
		if (q->body && q->body->fd >= 0) {
			q->body->pos = 0; /* a replay starts over */
			req.body_read = body_read;
			req.body_payload = q->body;
			req.body_size = (long long)q->body->flen;
		} else if (q->body) {
			req.body = q->body->data ? q->body->data : "";
			req.body_len = q->body->len;
		}
		pol.max_body = q->max_body ? q->max_body : ERROR_BODY;
		r->stats.requests++;
		rc = nv_http_perform(&pol, &req, resp, err);
		if (rc)
			return rc;
		if (resp->status != 401 || !same_host)
			return 0;

		/* 401: what does the registry want? */
		r->stats.unauthorized++;
		if (++rounds > AUTH_ROUNDS)
			return 0; /* the caller reports the 401 */
		if (nv_reg_challenge_parse(&ch, resp->www_authenticate, err))
			return 0;
		if (strcmp(ch.scheme, "basic") == 0) {
			if (!r->cfg.credential ||
			    r->cfg.credential->kind != NV_SECRET_BASIC ||
			    r->mode == AUTH_BASIC)
				return 0;
			r->mode = AUTH_BASIC;
		} else if (strcmp(ch.scheme, "bearer") == 0) {
			if (r->cfg.credential &&
			    r->cfg.credential->kind == NV_SECRET_BEARER) {
				/* a static token the registry refused */
				if (r->mode == AUTH_STATIC)
					return 0;
				r->mode = AUTH_STATIC;
				nv_http_response_free(resp);
				continue;
			}
			snprintf(r->realm, sizeof(r->realm), "%s", ch.realm);
			snprintf(r->service, sizeof(r->service), "%s",
				 ch.service);
			if (tok) {
				char scopes[2 * NV_REG_SCOPE_MAX + 2];

				/* refused token: renew once, for what we
				 * need and what the challenge names */
				if (renewed++)
					return 0;
				snprintf(scopes, sizeof(scopes), "%s%s%s",
					 auth_key,
					 ch.scope[0] && strcmp(ch.scope,
							       auth_key) != 0
						 ? " "
						 : "",
					 ch.scope[0] && strcmp(ch.scope,
							       auth_key) != 0
						 ? ch.scope
						 : "");
				token_drop(r, auth_key);
				rc = token_fetch(r, auth_key, scopes, err);
				if (rc) {
					nv_http_response_free(resp);
					return rc;
				}
			}
			r->mode = AUTH_BEARER;
		} else {
			return 0;
		}
		nv_http_response_free(resp);
	}
}

/* ---- the API ---- */

int nv_registry_open(nv_registry **out, const nv_registry_config *cfg,
		     nv_err *err)
{
	nv_image_ref ref;
	nv_registry *r;

	*out = NULL;
	if (!cfg || !cfg->registry || !cfg->registry[0])
		return nv_err_set(err, NV_EINVAL, NULL, "no registry given");
	if (cfg->credential && cfg->credential->kind != NV_SECRET_BASIC &&
	    cfg->credential->kind != NV_SECRET_BEARER)
		return nv_err_set(err, NV_EINVAL,
				  "declare the registry credential with kind "
				  "basic (user, password) or bearer (token)",
				  "credential '%s' is of kind %s",
				  cfg->credential->name,
				  nv_secret_kind_name(cfg->credential->kind));
	if (cfg->chunk_size && cfg->chunk_size < NV_REGISTRY_CHUNK_MIN)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "chunk size below %" PRIu64 " bytes",
				  NV_REGISTRY_CHUNK_MIN);
	r = calloc(1, sizeof(*r));
	if (!r)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	r->cfg = *cfg;
	/* the API host of a registry name, as a reference would have it */
	memset(&ref, 0, sizeof(ref));
	snprintf(ref.registry, sizeof(ref.registry), "%s", cfg->registry);
	if (nv_image_ref_api_base(&ref, r->api_base, sizeof(r->api_base)) ||
	    nv_image_ref_api_host(&ref, r->api_host, sizeof(r->api_host)) ||
	    url_host(r->api_base, r->api_host, r->bare_host)) {
		free(r);
		return nv_err_bad(err, NULL, "registry", cfg->registry, 200);
	}
	r->policy.ca_bundle = cfg->ca_bundle;
	r->policy.pinned_pubkey = cfg->pinned_pubkey;
	r->policy.connect_timeout_ms = cfg->connect_timeout_ms;
	r->policy.total_timeout_ms = cfg->total_timeout_ms;
	/* a registry verifying a large blob may be silent a while */
	r->policy.stall_timeout_ms = 60000;
	r->mode = AUTH_UNKNOWN;
	*out = r;
	return 0;
}

void nv_registry_free(nv_registry *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < NV_REGISTRY_TOKENS_MAX; i++)
		nv_secret_free(r->tokens[i].token);
	free(r);
}

const nv_registry_stats *nv_registry_stats_get(const nv_registry *r)
{
	return &r->stats;
}

const char *nv_registry_base(const nv_registry *r)
{
	return r->api_base;
}

int nv_registry_ping(nv_registry *r, nv_err *err)
{
	char url[URL_MAX];
	struct reg_req q;
	nv_http_response resp;
	int rc;

	snprintf(url, sizeof(url), "%s/v2/", r->api_base);
	memset(&q, 0, sizeof(q));
	q.method = "GET";
	q.url = url;
	q.scope = "";
	rc = reg_perform(r, &q, &resp, err);
	if (!rc && resp.status != 200)
		rc = reg_fail(r, &resp, "ping /v2/", err);
	nv_http_response_free(&resp);
	return rc;
}

void nv_registry_manifest_free(nv_registry_manifest *m)
{
	if (m)
		nv_buf_free(&m->body);
}

static int check_reference_arg(const char *reference, nv_err *err)
{
	if (!reference || !reference[0] || strlen(reference) > 128 ||
	    strpbrk(reference, "/?#% "))
		return nv_err_bad(err, NULL, "tag or digest", reference, 80);
	return 0;
}

static void copy_media_type(char out[NV_OCI_MEDIA_MAX], const char *ct)
{
	size_t n = ct ? strcspn(ct, "; ") : 0;

	if (n >= NV_OCI_MEDIA_MAX)
		n = 0;
	memcpy(out, ct ? ct : "", n);
	out[n] = '\0';
}

/* One read of manifests/REFERENCE or blobs/DIGEST with pull scope: q
 * comes with method and its options; URL, scope and (for manifests) Accept
 * are set here. A non-200 answer becomes the registry's error. what
 * receives the request's name for later messages. */
static int pull_request(nv_registry *r, struct reg_req *q, const char *kind,
			const char *repository, const char *reference,
			nv_http_response *resp, char what[400], nv_err *err)
{
	char url[URL_MAX], scope[NV_REG_SCOPE_MAX];
	int manifest = strcmp(kind, "manifests/") == 0, rc;

	memset(resp, 0, sizeof(*resp));
	if (manifest) {
		rc = check_reference_arg(reference, err);
		if (rc)
			return rc;
	} else if (!nv_image_digest_valid(reference)) {
		return nv_err_bad(err, NULL, "digest", reference, 80);
	}
	if (api_url(r, url, sizeof(url), kind, repository, reference) ||
	    nv_reg_scope(scope, sizeof(scope), repository, "pull"))
		return nv_err_set(err, NV_EINVAL, NULL, "name too long");
	snprintf(what, 400, "%s %.200s%s%.130s", manifest ? "manifest" : "blob",
		 repository, strncmp(reference, "sha256:", 7) == 0 ? "@" : ":",
		 reference);
	q->url = url;
	q->scope = scope;
	if (manifest)
		q->headers[q->nheaders++] = "Accept: " NV_OCI_ACCEPT;
	rc = reg_perform(r, q, resp, err);
	q->url = q->scope = NULL; /* they were on this stack */
	if (!rc && resp->status != 200)
		rc = reg_fail(r, resp, what, err);
	return rc;
}

int nv_registry_manifest_get(nv_registry *r, const char *repository,
			     const char *reference, nv_registry_manifest *out,
			     nv_err *err)
{
	char what[400], hex[NV_SHA256_HEX_LEN + 1];
	nv_http_response resp;
	struct reg_req q;
	int rc;

	memset(out, 0, sizeof(*out));
	memset(&q, 0, sizeof(q));
	q.method = "GET";
	q.max_body = NV_OCI_MANIFEST_MAX;
	rc = pull_request(r, &q, "manifests/", repository, reference, &resp,
			  what, err);
	if (rc)
		goto out;
	rc = nv_sha256_bytes(resp.body.data ? resp.body.data : "",
			     resp.body.len, hex, err);
	if (rc)
		goto out;
	snprintf(out->digest, sizeof(out->digest), "sha256:%s", hex);
	if (strncmp(reference, "sha256:", 7) == 0 &&
	    strcmp(reference, out->digest) != 0) {
		rc = nv_err_set(err, NV_EREFUSED,
				"the registry is broken or lying; do not use "
				"this image",
				"registry %s: %s: the bytes received hash to "
				"%s, not the digest asked for",
				r->cfg.registry, what, out->digest);
		goto out;
	}
	if (resp.docker_content_digest &&
	    strcmp(resp.docker_content_digest, out->digest) != 0) {
		rc = nv_err_set(err, NV_EREFUSED,
				"the registry is broken or lying; do not use "
				"this image",
				"registry %s: %s: Docker-Content-Digest says "
				"%.80s but the bytes hash to %s",
				r->cfg.registry, what,
				resp.docker_content_digest, out->digest);
		goto out;
	}
	copy_media_type(out->media_type, resp.content_type);
	out->body = resp.body; /* handed over */
	nv_buf_init(&resp.body, 0);
out:
	nv_http_response_free(&resp);
	if (rc)
		nv_registry_manifest_free(out);
	return rc;
}

int nv_registry_manifest_head(nv_registry *r, const char *repository,
			      const char *reference,
			      char digest[NV_IMAGE_DIGEST_LEN + 1],
			      char media_type[NV_OCI_MEDIA_MAX], int64_t *size,
			      nv_err *err)
{
	nv_http_response resp;
	struct reg_req q;
	const char *cl;
	char what[400];
	int rc;

	digest[0] = '\0';
	if (media_type)
		media_type[0] = '\0';
	memset(&q, 0, sizeof(q));
	q.method = "HEAD";
	q.max_body = NV_OCI_MANIFEST_MAX;
	rc = pull_request(r, &q, "manifests/", repository, reference, &resp,
			  what, err);
	if (!rc) {
		if (!nv_image_digest_valid(resp.docker_content_digest) ||
		    (strncmp(reference, "sha256:", 7) == 0 &&
		     strcmp(reference, resp.docker_content_digest) != 0))
			rc = nv_err_set(err, NV_EREFUSED,
					"the registry is broken or lying",
					"registry %s: %s: no usable "
					"Docker-Content-Digest in the answer",
					r->cfg.registry, what);
		else
			memcpy(digest, resp.docker_content_digest,
			       NV_IMAGE_DIGEST_LEN + 1);
		if (media_type)
			copy_media_type(media_type, resp.content_type);
		cl = nv_http_response_header(&resp, "content-length");
		if (size)
			*size = cl ? strtoll(cl, NULL, 10) : -1;
	}
	nv_http_response_free(&resp);
	return rc;
}

int nv_registry_manifest_put(nv_registry *r, const char *repository,
			     const char *reference, const char *media_type,
			     const void *body, size_t len,
			     char digest[NV_IMAGE_DIGEST_LEN + 1], nv_err *err)
{
	char url[URL_MAX], scope[NV_REG_SCOPE_MAX], what[400], ctype[200];
	char hex[NV_SHA256_HEX_LEN + 1], mine[NV_IMAGE_DIGEST_LEN + 1];
	struct reg_body b;
	nv_http_response resp;
	struct reg_req q;
	int rc;

	rc = check_reference_arg(reference, err);
	if (!rc)
		rc = nv_sha256_bytes(body, len, hex, err);
	if (rc)
		return rc;
	snprintf(mine, sizeof(mine), "sha256:%s", hex);
	if (digest)
		memcpy(digest, mine, sizeof(mine));
	if (api_url(r, url, sizeof(url), "manifests/", repository, reference) ||
	    nv_reg_scope(scope, sizeof(scope), repository, "pull,push"))
		return nv_err_set(err, NV_EINVAL, NULL, "name too long");
	snprintf(what, sizeof(what), "push manifest %s:%s", repository,
		 reference);
	snprintf(ctype, sizeof(ctype), "Content-Type: %s", media_type);
	memset(&b, 0, sizeof(b));
	b.data = body;
	b.len = len;
	b.fd = -1;
	memset(&q, 0, sizeof(q));
	q.method = "PUT";
	q.url = url;
	q.scope = scope;
	q.headers[q.nheaders++] = ctype;
	q.body = &b;
	rc = reg_perform(r, &q, &resp, err);
	if (!rc && resp.status != 201 && resp.status != 200)
		rc = reg_fail(r, &resp, what, err);
	if (!rc && resp.docker_content_digest &&
	    strcmp(resp.docker_content_digest, mine) != 0)
		rc = nv_err_set(err, NV_EREFUSED,
				"the registry changed the manifest; do not "
				"trust it",
				"registry %s: %s: it answered digest %.80s for "
				"bytes whose digest is %s",
				r->cfg.registry, what,
				resp.docker_content_digest, mine);
	nv_http_response_free(&resp);
	return rc;
}

int nv_registry_blob_head(nv_registry *r, const char *repository,
			  const char *digest, int64_t *size, nv_err *err)
{
	nv_http_response resp;
	struct reg_req q;
	const char *cl;
	char what[400];
	int rc;

	memset(&q, 0, sizeof(q));
	q.method = "HEAD";
	q.max_redirects = 5;
	/* no body comes, but curl holds Content-Length to the cap */
	q.max_body = (size_t)1 << 62;
	rc = pull_request(r, &q, "blobs/", repository, digest, &resp, what,
			  err);
	if (!rc && size) {
		cl = nv_http_response_header(&resp, "content-length");
		*size = cl ? strtoll(cl, NULL, 10) : -1;
	}
	nv_http_response_free(&resp);
	return rc;
}

struct hash_sink {
	nv_sha256 hash;
	nv_buf *buf; /* or */
	int fd;
	nv_err *err;
	uint64_t n;
};

static int hash_sink_write(void *payload, const char *data, size_t len)
{
	struct hash_sink *s = payload;

	if (nv_sha256_update(&s->hash, data, len, s->err))
		return -1;
	s->n += len;
	if (s->buf)
		return nv_buf_append(s->buf, data, len) ? -1 : 0;
	return nv_write_all(s->fd, data, len);
}

static int blob_fetch(nv_registry *r, const char *repository,
		      const char *digest, struct hash_sink *s, size_t max,
		      nv_err *err)
{
	char what[400], hex[NV_SHA256_HEX_LEN + 1];
	nv_http_response resp;
	struct reg_req q;
	int rc;

	rc = nv_sha256_init(&s->hash, err);
	if (rc)
		return rc;
	memset(&q, 0, sizeof(q));
	q.method = "GET";
	q.max_redirects = 5; /* registries send blobs from object stores */
	q.max_body = max;
	q.sink = hash_sink_write;
	q.sink_payload = s;
	rc = pull_request(r, &q, "blobs/", repository, digest, &resp, what,
			  err);
	if (!rc)
		rc = nv_sha256_final(&s->hash, hex, err);
	if (!rc && (strlen(digest) != 71 || strcmp(digest + 7, hex) != 0))
		rc = nv_err_set(err, NV_EREFUSED,
				"the registry is broken or lying; do not use "
				"this image",
				"registry %s: %s: the bytes received hash to "
				"sha256:%s",
				r->cfg.registry, what, hex);
	nv_sha256_dispose(&s->hash);
	nv_http_response_free(&resp);
	return rc;
}

int nv_registry_blob_get(nv_registry *r, const char *repository,
			 const char *digest, size_t max, nv_buf *out,
			 nv_err *err)
{
	struct hash_sink s;
	int rc;

	nv_buf_init(out, max);
	memset(&s, 0, sizeof(s));
	s.buf = out;
	s.fd = -1;
	s.err = err;
	rc = blob_fetch(r, repository, digest, &s, max, err);
	if (rc)
		nv_buf_free(out);
	return rc;
}

int nv_registry_blob_get_file(nv_registry *r, const char *repository,
			      const char *digest, const char *path, nv_err *err)
{
	char tmp[4096];
	struct hash_sink s;
	int rc;

	if (snprintf(tmp, sizeof(tmp), "%s.part.XXXXXX", path) >=
	    (int)sizeof(tmp))
		return nv_err_set(err, NV_EINVAL, NULL, "path too long");
	memset(&s, 0, sizeof(s));
	s.err = err;
	s.fd = mkstemp(tmp);
	if (s.fd < 0)
		return nv_err_set_errno(err, NV_EIO, errno, NULL,
					"cannot create '%s'", tmp);
	/* blobs may be large: no cap beyond the file system's */
	rc = blob_fetch(r, repository, digest, &s, (size_t)1 << 62, err);
	if (close(s.fd) < 0 && !rc)
		rc = nv_err_set_errno(err, NV_EIO, errno, NULL,
				      "cannot write '%s'", tmp);
	if (!rc && rename(tmp, path) < 0)
		rc = nv_err_set_errno(err, NV_EIO, errno, NULL,
				      "cannot rename to '%s'", path);
	if (rc)
		unlink(tmp);
	return rc;
}

/* An upload Location (relative or absolute) as an absolute URL with
 * extra appended to its query. */
static int location_url(nv_registry *r, const char *location, const char *extra,
			char *out, size_t cap)
{
	int n;

	if (!location || !location[0])
		return -1;
	if (strncmp(location, "http://", 7) == 0 ||
	    strncmp(location, "https://", 8) == 0)
		n = snprintf(out, cap, "%s%s%s", location,
			     extra ? (strchr(location, '?') ? "&" : "?") : "",
			     extra ? extra : "");
	else if (location[0] == '/')
		n = snprintf(out, cap, "%s%s%s%s", r->api_base, location,
			     extra ? (strchr(location, '?') ? "&" : "?") : "",
			     extra ? extra : "");
	else
		return -1;
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* POST an upload session (with extra query, e.g. a mount); returns the
 * response for the caller to read. */
static int upload_start(nv_registry *r, const char *repository,
			const char *scope, const char *query,
			nv_http_response *resp, nv_err *err)
{
	char url[URL_MAX];
	struct reg_body b;
	struct reg_req q;

	if (api_url(r, url, sizeof(url), "blobs/uploads/", repository, query))
		return nv_err_set(err, NV_EINVAL, NULL, "name too long");
	memset(&b, 0, sizeof(b));
	b.fd = -1;
	memset(&q, 0, sizeof(q));
	q.method = "POST";
	q.url = url;
	q.scope = scope;
	q.body = &b;
	return reg_perform(r, &q, resp, err);
}

static void upload_cancel(nv_registry *r, const char *scope,
			  const char *location)
{
	char url[URL_MAX];
	nv_http_response resp;
	struct reg_req q;
	nv_err ignored;

	if (location_url(r, location, NULL, url, sizeof(url)))
		return;
	memset(&q, 0, sizeof(q));
	q.method = "DELETE";
	q.url = url;
	q.scope = scope;
	reg_perform(r, &q, &resp, &ignored);
	nv_http_response_free(&resp);
}

/* Sends the blob (bytes, or fd's flen bytes) to an open session. */
static int upload_send(nv_registry *r, const char *repository,
		       const char *scope, const char *digest, char *location,
		       size_t loc_cap, struct reg_body *b, uint64_t total,
		       nv_err *err)
{
	char url[URL_MAX], what[400], range[64], extra[100];
	nv_http_response resp;
	struct reg_req q;
	uint64_t chunk = r->cfg.chunk_size, done = 0;
	int rc;

	snprintf(what, sizeof(what), "upload blob %s@%s", repository, digest);
	/* chunked: PATCH each range, following the new Location */
	while (chunk && done < total) {
		uint64_t n = total - done < chunk ? total - done : chunk;
		struct reg_body part = *b;

		if (b->fd >= 0) {
			part.offset = b->offset + done;
			part.flen = n;
		} else {
			part.data = (const char *)b->data + done;
			part.len = (size_t)n;
		}
		part.base = done;
		part.total = total;
		if (location_url(r, location, NULL, url, sizeof(url)))
			return nv_err_set(err, NV_EBACKEND, NULL,
					  "registry %s: %s: unusable upload "
					  "location",
					  r->cfg.registry, what);
		snprintf(range, sizeof(range),
			 "Content-Range: %" PRIu64 "-%" PRIu64, done,
			 done + n - 1);
		memset(&q, 0, sizeof(q));
		q.method = "PATCH";
		q.url = url;
		q.scope = scope;
		q.headers[q.nheaders++] =
			"Content-Type: application/octet-stream";
		q.headers[q.nheaders++] = range;
		q.body = &part;
		rc = reg_perform(r, &q, &resp, err);
		if (!rc && resp.status != 202)
			rc = reg_fail(r, &resp, what, err);
		if (!rc && (!resp.location || strlen(resp.location) >= loc_cap))
			rc = nv_err_set(err, NV_EBACKEND, NULL,
					"registry %s: %s: no Location after a "
					"chunk",
					r->cfg.registry, what);
		if (!rc)
			snprintf(location, loc_cap, "%s", resp.location);
		nv_http_response_free(&resp);
		if (rc)
			return rc;
		done += n;
		r->stats.bytes_uploaded += n;
	}
	/* the ':' of the digest, percent-encoded as in a query */
	snprintf(extra, sizeof(extra), "digest=sha256%%3A%s", digest + 7);
	if (location_url(r, location, extra, url, sizeof(url)))
		return nv_err_set(err, NV_EBACKEND, NULL,
				  "registry %s: %s: unusable upload location",
				  r->cfg.registry, what);
	memset(&q, 0, sizeof(q));
	q.method = "PUT";
	q.url = url;
	q.scope = scope;
	q.headers[q.nheaders++] = "Content-Type: application/octet-stream";
	if (chunk) {
		struct reg_body empty;

		memset(&empty, 0, sizeof(empty));
		empty.fd = -1;
		q.body = &empty;
		rc = reg_perform(r, &q, &resp, err);
	} else {
		b->base = 0;
		b->total = total;
		q.body = b;
		rc = reg_perform(r, &q, &resp, err);
		if (!rc && resp.status == 201)
			r->stats.bytes_uploaded += total;
	}
	if (!rc && resp.status != 201)
		rc = reg_fail(r, &resp, what, err);
	if (!rc && resp.docker_content_digest &&
	    strcmp(resp.docker_content_digest, digest) != 0)
		rc = nv_err_set(
			err, NV_EREFUSED, "the registry is broken or lying",
			"registry %s: %s: it stored %.80s", r->cfg.registry,
			what, resp.docker_content_digest);
	nv_http_response_free(&resp);
	if (!rc)
		r->stats.blobs_uploaded++;
	return rc;
}

/* POSTs a new upload session to repository: location[URL_MAX] gets where
 * its bytes go. */
static int upload_session(nv_registry *r, const char *repository,
			  const char *scope, char *location, nv_err *err)
{
	nv_http_response resp;
	char what[400];
	int rc;

	snprintf(what, sizeof(what), "start upload to %s", repository);
	rc = upload_start(r, repository, scope, NULL, &resp, err);
	if (!rc && resp.status != 202)
		rc = reg_fail(r, &resp, what, err);
	if (!rc && (!resp.location || strlen(resp.location) >= URL_MAX))
		rc = nv_err_set(err, NV_EBACKEND, NULL,
				"registry %s: %s: no upload Location",
				r->cfg.registry, what);
	if (!rc)
		snprintf(location, URL_MAX, "%s", resp.location);
	nv_http_response_free(&resp);
	return rc;
}

static int blob_upload(nv_registry *r, const char *repository,
		       const char *digest, struct reg_body *b, uint64_t total,
		       nv_err *err)
{
	char scope[NV_REG_SCOPE_MAX], location[URL_MAX];
	int rc;

	if (!nv_image_digest_valid(digest))
		return nv_err_set(err, NV_EINVAL, NULL, "bad digest");
	if (nv_reg_scope(scope, sizeof(scope), repository, "pull,push"))
		return nv_err_set(err, NV_EINVAL, NULL, "name too long");
	rc = upload_session(r, repository, scope, location, err);
	if (rc)
		return rc;
	b->digest = digest;
	b->r = r;
	rc = upload_send(r, repository, scope, digest, location,
			 sizeof(location), b, total, err);
	if (rc)
		upload_cancel(r, scope, location);
	return rc;
}

int nv_registry_blob_upload_bytes(nv_registry *r, const char *repository,
				  const char *digest, const void *data,
				  size_t len, nv_err *err)
{
	struct reg_body b;

	memset(&b, 0, sizeof(b));
	b.data = data;
	b.len = len;
	b.fd = -1;
	return blob_upload(r, repository, digest, &b, len, err);
}

int nv_registry_blob_upload_file(nv_registry *r, const char *repository,
				 const char *digest, const char *path,
				 nv_err *err)
{
	struct reg_body b;
	struct stat st;
	int rc;

	memset(&b, 0, sizeof(b));
	b.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (b.fd < 0)
		return nv_err_set_errno(err, NV_EIO, errno, NULL,
					"cannot open '%s'", path);
	if (fstat(b.fd, &st) < 0) {
		rc = nv_err_set_errno(err, NV_EIO, errno, NULL,
				      "cannot read '%s'", path);
		close(b.fd);
		return rc;
	}
	b.flen = (uint64_t)st.st_size;
	rc = blob_upload(r, repository, digest, &b, b.flen, err);
	close(b.fd);
	return rc;
}

/* ---- a blob whose digest comes last ---- */

struct nv_registry_upload {
	nv_registry *r;
	char repository[NV_IMAGE_NAME_MAX + 1];
	char scope[NV_REG_SCOPE_MAX];
	char location[URL_MAX];
	uint64_t sent; /* bytes the registry acknowledged */
	int open;      /* a session the registry holds for us */
	int broken;    /* a failed request: only cancel is left */
	unsigned chunks;
};

int nv_registry_upload_open(nv_registry_upload **out, nv_registry *r,
			    const char *repository, nv_err *err)
{
	nv_registry_upload *u;
	int rc;

	*out = NULL;
	if (!r || !repository || strlen(repository) > NV_IMAGE_NAME_MAX)
		return nv_err_set(err, NV_EINVAL, NULL, "bad repository");
	u = calloc(1, sizeof(*u));
	if (!u)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	u->r = r;
	snprintf(u->repository, sizeof(u->repository), "%s", repository);
	if (nv_reg_scope(u->scope, sizeof(u->scope), repository, "pull,push")) {
		free(u);
		return nv_err_set(err, NV_EINVAL, NULL, "name too long");
	}
	rc = upload_session(r, repository, u->scope, u->location, err);
	if (rc) {
		free(u);
		return rc;
	}
	u->open = 1;
	*out = u;
	return 0;
}

/* The end of the Range a registry answers ("0-N", "bytes=0-N"), or -1. */
static long long acknowledged_end(const nv_http_response *resp)
{
	const char *v = NULL, *dash;
	char *end;
	long long n;

	for (size_t i = 0; i < resp->nheaders; i++)
		if (resp->headers[i].name &&
		    strcasecmp(resp->headers[i].name, "Range") == 0)
			v = resp->headers[i].value;
	if (!v || !(dash = strchr(v, '-')))
		return -1;
	errno = 0;
	n = strtoll(dash + 1, &end, 10);
	if (errno || end == dash + 1 || n < 0)
		return -1;
	return n;
}

int nv_registry_upload_write_fd(nv_registry_upload *u, int fd, uint64_t offset,
				uint64_t len, nv_err *err)
{
	char url[URL_MAX], what[400], range[64];
	nv_http_response resp;
	struct reg_body part;
	struct reg_req q;
	long long end;
	int rc;

	if (!u || !u->open || u->broken || fd < 0 || len == 0 ||
	    offset != u->sent)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "upload: chunk out of order");
	snprintf(what, sizeof(what), "upload to %s", u->repository);
	if (location_url(u->r, u->location, NULL, url, sizeof(url)))
		return nv_err_set(err, NV_EBACKEND, NULL,
				  "registry %s: %s: unusable upload location",
				  u->r->cfg.registry, what);
	memset(&part, 0, sizeof(part));
	part.fd = fd;
	part.offset = offset;
	part.flen = len;
	part.r = u->r; /* no digest: no progress call, this may be a thread */
	snprintf(range, sizeof(range), "Content-Range: %" PRIu64 "-%" PRIu64,
		 offset, offset + len - 1);
	memset(&q, 0, sizeof(q));
	q.method = "PATCH";
	q.url = url;
	q.scope = u->scope;
	q.headers[q.nheaders++] = "Content-Type: application/octet-stream";
	q.headers[q.nheaders++] = range;
	q.body = &part;
	rc = reg_perform(u->r, &q, &resp, err);
	if (!rc && resp.status != 202)
		rc = reg_fail(u->r, &resp, what, err);
	if (!rc && (!resp.location || strlen(resp.location) >= URL_MAX))
		rc = nv_err_set(err, NV_EBACKEND, NULL,
				"registry %s: %s: no Location after a chunk",
				u->r->cfg.registry, what);
	/* each chunk checked: the registry holds exactly what was sent */
	if (!rc && (end = acknowledged_end(&resp)) >= 0 &&
	    (uint64_t)end != offset + len - 1)
		rc = nv_err_set(
			err, NV_EBACKEND, "the registry is broken or lying",
			"registry %s: %s: it holds bytes 0-%lld, not "
			"0-%" PRIu64,
			u->r->cfg.registry, what, end, offset + len - 1);
	if (!rc)
		snprintf(u->location, sizeof(u->location), "%s", resp.location);
	nv_http_response_free(&resp);
	if (rc) {
		u->broken = 1;
		return rc;
	}
	u->sent += len;
	u->chunks++;
	u->r->stats.bytes_uploaded += len;
	return 0;
}

int nv_registry_upload_commit(nv_registry_upload *u, const char *digest,
			      nv_err *err)
{
	char url[URL_MAX], what[400], extra[100];
	nv_http_response resp;
	struct reg_body empty;
	struct reg_req q;
	int rc;

	if (!u || !u->open || u->broken)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "upload: no session to commit");
	if (!nv_image_digest_valid(digest))
		return nv_err_set(err, NV_EINVAL, NULL, "bad digest");
	snprintf(what, sizeof(what), "upload blob %s@%s", u->repository,
		 digest);
	snprintf(extra, sizeof(extra), "digest=sha256%%3A%s", digest + 7);
	if (location_url(u->r, u->location, extra, url, sizeof(url)))
		return nv_err_set(err, NV_EBACKEND, NULL,
				  "registry %s: %s: unusable upload location",
				  u->r->cfg.registry, what);
	memset(&empty, 0, sizeof(empty));
	empty.fd = -1;
	memset(&q, 0, sizeof(q));
	q.method = "PUT";
	q.url = url;
	q.scope = u->scope;
	q.headers[q.nheaders++] = "Content-Type: application/octet-stream";
	q.body = &empty;
	rc = reg_perform(u->r, &q, &resp, err);
	if (!rc && resp.status != 201)
		rc = reg_fail(u->r, &resp, what, err);
	if (!rc && resp.docker_content_digest &&
	    strcmp(resp.docker_content_digest, digest) != 0)
		rc = nv_err_set(
			err, NV_EREFUSED, "the registry is broken or lying",
			"registry %s: %s: it stored %.80s", u->r->cfg.registry,
			what, resp.docker_content_digest);
	nv_http_response_free(&resp);
	if (rc) {
		u->broken = 1;
		return rc;
	}
	u->open = 0; /* the registry closed the session */
	u->r->stats.blobs_uploaded++;
	return 0;
}

void nv_registry_progress_report(nv_registry *r, const char *digest,
				 uint64_t done, uint64_t total)
{
	if (r && r->cfg.progress && digest)
		r->cfg.progress(r->cfg.progress_payload, digest, done, total);
}

uint64_t nv_registry_upload_sent(const nv_registry_upload *u)
{
	return u ? u->sent : 0;
}

void nv_registry_upload_free(nv_registry_upload *u)
{
	if (!u)
		return;
	if (u->open)
		upload_cancel(u->r, u->scope, u->location);
	free(u);
}

int nv_registry_blob_mount(nv_registry *r, const char *repository,
			   const char *digest, const char *from_repository,
			   int *mounted, nv_err *err)
{
	char scope[2 * NV_REG_SCOPE_MAX + 2], one[NV_REG_SCOPE_MAX];
	char from_scope[NV_REG_SCOPE_MAX], query[URL_MAX], what[400];
	nv_http_response resp;
	nv_buf enc;
	int rc;

	*mounted = 0;
	if (!nv_image_digest_valid(digest))
		return nv_err_set(err, NV_EINVAL, NULL, "bad digest");
	if (nv_reg_scope(one, sizeof(one), repository, "pull,push") ||
	    nv_reg_scope(from_scope, sizeof(from_scope), from_repository,
			 "pull"))
		return nv_err_set(err, NV_EINVAL, NULL, "name too long");
	snprintf(scope, sizeof(scope), "%s %s", one, from_scope);
	nv_buf_init(&enc, URL_MAX);
	nv_buf_puts(&enc, "?mount=sha256%3A");
	nv_buf_puts(&enc, digest + 7);
	nv_buf_puts(&enc, "&from=");
	url_encode(&enc, from_repository);
	if (enc.failed) {
		nv_buf_free(&enc);
		return nv_err_set(err, NV_EINVAL, NULL, "name too long");
	}
	snprintf(query, sizeof(query), "%s", enc.data);
	nv_buf_free(&enc);
	snprintf(what, sizeof(what), "mount %s from %s into %s", digest,
		 from_repository, repository);
	rc = upload_start(r, repository, scope, query, &resp, err);
	if (rc) {
		nv_http_response_free(&resp);
		return rc;
	}
	if (resp.status == 201) {
		*mounted = 1;
		r->stats.blobs_mounted++;
	} else if (resp.status == 202) {
		/* declined: drop the session it opened instead */
		upload_cancel(r, scope, resp.location);
	} else {
		rc = reg_fail(r, &resp, what, err);
	}
	nv_http_response_free(&resp);
	return rc;
}

void nv_registry_image_free(nv_registry_image *img)
{
	if (!img)
		return;
	nv_registry_manifest_free(&img->manifest);
	nv_oci_manifest_free(&img->parsed);
	nv_buf_free(&img->config);
}

int nv_registry_resolve(nv_registry *r, const char *repository,
			const char *reference, const char *platform,
			int with_config, nv_registry_image *out, nv_err *err)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if (!platform)
		platform = "linux/amd64";
	rc = nv_registry_manifest_get(r, repository, reference, &out->manifest,
				      err);
	if (!rc)
		rc = nv_oci_manifest_parse(
			&out->parsed, out->manifest.body.data,
			out->manifest.body.len, out->manifest.media_type, err);
	if (!rc && out->parsed.kind == NV_OCI_LIST) {
		size_t pos;
		char digest[NV_IMAGE_DIGEST_LEN + 1];

		memcpy(out->index_digest, out->manifest.digest,
		       sizeof(out->index_digest));
		rc = nv_oci_index_select(&out->parsed, platform, &pos, err);
		if (!rc) {
			memcpy(digest, out->parsed.entries[pos].digest,
			       sizeof(digest));
			nv_registry_manifest_free(&out->manifest);
			nv_oci_manifest_free(&out->parsed);
			rc = nv_registry_manifest_get(r, repository, digest,
						      &out->manifest, err);
		}
		if (!rc)
			rc = nv_oci_manifest_parse(
				&out->parsed, out->manifest.body.data,
				out->manifest.body.len,
				out->manifest.media_type, err);
		if (!rc && out->parsed.kind != NV_OCI_IMAGE)
			rc = nv_err_set(err, NV_EREFUSED, NULL,
					"registry %s: the index entry for %s "
					"is itself an index",
					r->cfg.registry, platform);
	}
	if (!rc)
		memcpy(out->digest, out->manifest.digest, sizeof(out->digest));
	if (!rc && with_config)
		rc = nv_registry_blob_get(r, repository,
					  out->parsed.config.digest,
					  NV_OCI_CONFIG_MAX, &out->config, err);
	if (rc)
		nv_registry_image_free(out);
	return rc;
}
