/* HTTPS client over libcurl (see http.h). Redirects are followed here, hop
 * by hop, so that the decision to keep or drop a credential is ours and not
 * curl's; every hop re-checks the scheme policy. Pure C, no Lua. */
#include "net/http.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "core/clock.h"
#include "core/fault.h"

#define URL_SHOWN_MAX 512
#define HOST_MAX      256

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_result;

static void global_init(void)
{
	global_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* The parts of a URL that make its origin. */
struct origin {
	char scheme[8];
	char host[HOST_MAX]; /* brackets of IPv6 literals removed */
	long port;           /* explicit or the scheme's default */
};

/* State shared with curl's callbacks during one hop. */
struct transfer {
	const nv_http_request *req;
	nv_http_response *resp;
	CURL *handle;
	size_t max_body;
	size_t body_seen;   /* bytes of this hop's body, buffer or sink */
	size_t header_seen; /* bytes of kept headers */
	size_t headers_cap; /* allocated slots in resp->headers */
	int to_sink;        /* -1: not decided yet for this hop */
	int body_over_cap;
	int headers_over_cap;
	int out_of_memory;
	int sink_failed;
	int read_failed;
	size_t body_sent; /* bytes of the request body handed to curl */
};

static void strip_brackets(const char *host, char *out, size_t cap)
{
	size_t n = strlen(host);

	if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
		host++;
		n -= 2;
	}
	if (n >= cap)
		n = cap - 1;
	memcpy(out, host, n);
	out[n] = '\0';
}

/* "localhost" and the names under it (RFC 6761: "bucket.localhost" for
 * virtual-host S3 tests). Never left to a resolver: see pin_localhost(). */
static int localhost_name(const char *host)
{
	size_t n = strlen(host);

	if (n && host[n - 1] == '.')
		n--;
	if (n == 9 && strncasecmp(host, "localhost", 9) == 0)
		return 1;
	return n > 10 && strncasecmp(host + n - 10, ".localhost", 10) == 0 &&
	       host[0] != '.';
}

int nv_http_host_is_loopback(const char *host)
{
	char bare[HOST_MAX];
	struct in_addr a4;
	struct in6_addr a6;

	if (!host || strlen(host) >= sizeof(bare))
		return 0;
	strip_brackets(host, bare, sizeof(bare));
	if (localhost_name(bare))
		return 1;
	if (inet_pton(AF_INET, bare, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, bare, &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6) ||
		       (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
	return 0;
}

/* Query parameters whose values are credentials (presigned URLs, SAS). */
static int param_is_sensitive(const char *name, size_t len)
{
	static const char *const words[] = {"signature", "credential", "token",
					    "password",  "secret",     NULL};
	char low[64];

	if (len == 0 || len >= sizeof(low))
		return len > 0; /* an odd, long name: hide its value */
	for (size_t i = 0; i < len; i++)
		low[i] = (char)tolower((unsigned char)name[i]);
	low[len] = '\0';
	if (strcmp(low, "sig") == 0)
		return 1;
	for (int i = 0; words[i]; i++)
		if (strstr(low, words[i]))
			return 1;
	return 0;
}

void nv_http_url_for_display(const char *url, char *out, size_t cap)
{
	CURLU *u = NULL;
	char *base = NULL, *query = NULL;
	nv_buf b;

	if (!cap)
		return;
	snprintf(out, cap, "<unparsable URL>");
	nv_buf_init(&b, cap - 1);
	u = curl_url();
	if (!u || !url ||
	    curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME))
		goto done;
	if (curl_url_set(u, CURLUPART_USER, NULL, 0) ||
	    curl_url_set(u, CURLUPART_PASSWORD, NULL, 0) ||
	    curl_url_set(u, CURLUPART_OPTIONS, NULL, 0) ||
	    curl_url_set(u, CURLUPART_FRAGMENT, NULL, 0))
		goto done;
	if (curl_url_get(u, CURLUPART_QUERY, &query, 0) != CURLUE_OK)
		query = NULL;
	if (curl_url_set(u, CURLUPART_QUERY, NULL, 0) ||
	    curl_url_get(u, CURLUPART_URL, &base, 0))
		goto done;
	nv_buf_puts(&b, base);
	for (const char *p = query; p && *p;) {
		const char *end = strchr(p, '&');
		size_t seg = end ? (size_t)(end - p) : strlen(p);
		const char *eq = memchr(p, '=', seg);
		size_t name_len = eq ? (size_t)(eq - p) : seg;

		nv_buf_puts(&b, p == query ? "?" : "&");
		if (eq && param_is_sensitive(p, name_len)) {
			nv_buf_append(&b, p, name_len);
			nv_buf_puts(&b, "=<redacted>");
		} else {
			nv_buf_append(&b, p, seg);
		}
		p = end ? end + 1 : p + seg;
	}
	/* A URL cut by the cap still shows no secret: only whole pieces of
	 * the cleaned form were appended. */
	if (b.data)
		snprintf(out, cap, "%s", b.data);
done:
	nv_buf_free(&b);
	curl_free(base);
	curl_free(query);
	curl_url_cleanup(u);
}

/* memmem is a GNU extension; this is the portable, small-input version. */
static const char *find_bytes(const char *hay, size_t len, const void *needle,
			      size_t n)
{
	for (size_t i = 0; n && i + n <= len; i++)
		if (memcmp(hay + i, needle, n) == 0)
			return hay + i;
	return NULL;
}

static void append_cut(char *dst, size_t *used, size_t cap, const char *src,
		       size_t n)
{
	size_t room = cap - 1 - *used;

	if (n > room)
		n = room;
	memcpy(dst + *used, src, n);
	*used += n;
}

/* Replaces every occurrence of needle in s (a NUL-terminated string in a
 * cap-byte array) by "<redacted>". */
static void scrub(char *s, size_t cap, const void *needle, size_t n)
{
	char tmp[NV_ERR_MESSAGE_MAX];
	size_t used = 0, len;
	const char *p = s, *hit;

	if (!needle || n < 4 || cap > sizeof(tmp))
		return;
	len = strlen(s);
	while ((hit = find_bytes(p, len - (size_t)(p - s), needle, n))) {
		append_cut(tmp, &used, cap, p, (size_t)(hit - p));
		append_cut(tmp, &used, cap, "<redacted>", 10);
		p = hit + n;
	}
	if (p == s)
		return;
	append_cut(tmp, &used, cap, p, strlen(p));
	tmp[used] = '\0';
	memcpy(s, tmp, used + 1);
	OPENSSL_cleanse(tmp, sizeof(tmp));
}

static void scrub_err(nv_err *err, const void *needle, size_t n)
{
	if (!err)
		return;
	scrub(err->message, sizeof(err->message), needle, n);
	scrub(err->hint, sizeof(err->hint), needle, n);
}

/* --- URLs, origins and bindings ---------------------------------------- */

static int origin_of(CURLU *u, struct origin *o, const char *shown, nv_err *err)
{
	char *scheme = NULL, *host = NULL, *port = NULL;
	int rc = 0;

	if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) ||
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT)) {
		rc = nv_err_set(err, NV_EINVAL, "give an absolute http(s) URL",
				"URL %s has no scheme, host or port", shown);
		goto out;
	}
	if (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0) {
		rc = nv_err_set(err, NV_EREFUSED, "use an https:// URL",
				"URL %s: only http and https are spoken",
				shown);
		goto out;
	}
	if (strlen(host) >= sizeof(o->host)) {
		rc = nv_err_set(err, NV_EINVAL, NULL,
				"URL %s: host name too long", shown);
		goto out;
	}
	snprintf(o->scheme, sizeof(o->scheme), "%s", scheme);
	strip_brackets(host, o->host, sizeof(o->host));
	o->port = strtol(port, NULL, 10);
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	return rc;
}

static int scheme_check(const struct origin *o, const char *shown, nv_err *err)
{
	if (strcmp(o->scheme, "http") == 0 &&
	    !nv_http_host_is_loopback(o->host))
		return nv_err_set(err, NV_EREFUSED, "use an https:// URL",
				  "plain http to %s refused: TLS is required "
				  "except for loopback hosts (127.0.0.0/8, "
				  "::1, localhost)",
				  shown);
	return 0;
}

static int origin_equal(const struct origin *a, const struct origin *b)
{
	return strcmp(a->scheme, b->scheme) == 0 &&
	       strcasecmp(a->host, b->host) == 0 && a->port == b->port;
}

/* "host", "host:port", "[v6]", "[v6]:port" or a bare v6 literal. */
static int binding_parse(const char *binding, char *host, size_t cap,
			 long *port)
{
	const char *colon = NULL, *end;
	size_t n;

	*port = 0;
	if (binding[0] == '[') {
		end = strchr(binding, ']');
		if (!end)
			return -1;
		n = (size_t)(end - binding - 1);
		if (n >= cap)
			return -1;
		memcpy(host, binding + 1, n);
		host[n] = '\0';
		if (end[1] == ':')
			colon = end + 1;
		else if (end[1])
			return -1;
	} else {
		colon = strchr(binding, ':');
		if (colon && strchr(colon + 1, ':'))
			colon = NULL; /* a bare IPv6 literal */
		n = colon ? (size_t)(colon - binding) : strlen(binding);
		if (n == 0 || n >= cap)
			return -1;
		memcpy(host, binding, n);
		host[n] = '\0';
	}
	if (colon) {
		char *stop;
		long p = strtol(colon + 1, &stop, 10);

		if (!colon[1] || *stop || p < 1 || p > 65535)
			return -1;
		*port = p;
	}
	return 0;
}

static int binding_check(const nv_http_request *req, const struct origin *o,
			 nv_err *err)
{
	char host[HOST_MAX];
	long port;

	if (binding_parse(req->credential_host, host, sizeof(host), &port))
		return nv_err_set(err, NV_EINVAL,
				  "bind it to \"host\" or \"host:port\"",
				  "credential %s: bad bound host '%s'",
				  req->credential->name, req->credential_host);
	if (strcasecmp(host, o->host) == 0 && (!port || port == o->port))
		return 0;
	return nv_err_set(
		err, NV_EREFUSED,
		"a credential is only sent to the host it was given "
		"for; check the endpoint of the profile",
		"credential %s is bound to host %s, not sent to %s:%ld",
		req->credential->name, req->credential_host, o->host, o->port);
}

/* --- request headers ----------------------------------------------------- */

static int header_name_is(const char *header, const char *name)
{
	size_t n = strlen(name);

	return strncasecmp(header, name, n) == 0 &&
	       (header[n] == ':' || header[n] == ';' || header[n] == ' ');
}

/* Headers that carry the identity of the first origin. */
static int header_is_origin_bound(const char *header)
{
	return header_name_is(header, "Authorization") ||
	       header_name_is(header, "Cookie") ||
	       header_name_is(header, "Host");
}

static void slist_free_wiped(struct curl_slist *list)
{
	for (struct curl_slist *p = list; p; p = p->next)
		OPENSSL_cleanse(p->data, strlen(p->data));
	curl_slist_free_all(list);
}

static int field_ok(const nv_secret_field *f)
{
	return f && f->len > 0 && memchr(f->value, '\r', f->len) == NULL &&
	       memchr(f->value, '\n', f->len) == NULL &&
	       memchr(f->value, '\0', f->len) == NULL;
}

/* "Authorization: ..." (or "NAME: token" when header_name is given) for
 * the credential, malloc'd (wipe before free). */
static int auth_header(const nv_secret *s, const char *header_name, char **out,
		       size_t *out_len, nv_err *err)
{
	const nv_secret_field *a, *b;
	unsigned char *plain = NULL;
	char *h = NULL;
	size_t plain_len, cap;

	*out = NULL;
	if (header_name) {
		if (s->kind != NV_SECRET_BEARER)
			return nv_err_set(err, NV_EINVAL,
					  "give a bearer token for this "
					  "service",
					  "credential %s (%s) cannot be sent "
					  "as %s",
					  s->name, nv_secret_kind_name(s->kind),
					  header_name);
		a = nv_secret_get(s, "token");
		if (!field_ok(a))
			goto bad;
		cap = strlen(header_name) + 3 + a->len;
		h = malloc(cap);
		if (!h)
			goto nomem;
		snprintf(h, cap, "%s: %s", header_name, (const char *)a->value);
	} else if (s->kind == NV_SECRET_BEARER) {
		a = nv_secret_get(s, "token");
		if (!field_ok(a))
			goto bad;
		cap = sizeof("Authorization: Bearer ") + a->len;
		h = malloc(cap);
		if (!h)
			goto nomem;
		snprintf(h, cap, "Authorization: Bearer %s",
			 (const char *)a->value);
	} else if (s->kind == NV_SECRET_BASIC) {
		a = nv_secret_get(s, "user");
		b = nv_secret_get(s, "password");
		if (!field_ok(a) || !b || !field_ok(b) ||
		    memchr(a->value, ':', a->len))
			goto bad;
		plain_len = a->len + 1 + b->len;
		plain = malloc(plain_len);
		cap = sizeof("Authorization: Basic ") + 4 * (plain_len / 3 + 1);
		h = malloc(cap);
		if (!plain || !h)
			goto nomem;
		memcpy(plain, a->value, a->len);
		plain[a->len] = ':';
		memcpy(plain + a->len + 1, b->value, b->len);
		memcpy(h, "Authorization: Basic ", 21);
		EVP_EncodeBlock((unsigned char *)h + 21, plain, (int)plain_len);
		OPENSSL_cleanse(plain, plain_len);
		free(plain);
	} else {
		return nv_err_set(err, NV_EINVAL,
				  "HTTP requests take bearer or basic "
				  "credentials",
				  "credential %s is of kind %s", s->name,
				  nv_secret_kind_name(s->kind));
	}
	*out = h;
	*out_len = strlen(h);
	return 0;
bad:
	return nv_err_set(err, NV_EINVAL, "check the fields of the credential",
			  "credential %s (%s) is incomplete or holds a line "
			  "break",
			  s->name, nv_secret_kind_name(s->kind));
nomem:
	free(plain); /* nothing secret copied into it yet */
	free(h);
	return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
}

static int method_ok(const char *m)
{
	if (!m[0] || strlen(m) > 16)
		return 0;
	for (const char *p = m; *p; p++)
		if (!isupper((unsigned char)*p) && *p != '-')
			return 0;
	return 1;
}

static int validate(const nv_http_request *req, nv_err *err)
{
	if (!req || !req->url)
		return nv_err_set(err, NV_EINVAL, NULL, "no URL to request");
	if (req->method && !method_ok(req->method))
		return nv_err_bad(err, NULL, "HTTP method", req->method, 20);
	if (req->body && req->body_read)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "a request has a body or a body reader, "
				  "not both");
	if (req->max_redirects < 0 ||
	    req->max_redirects > NV_HTTP_REDIRECTS_MAX)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "max_redirects is 0..%d",
				  NV_HTTP_REDIRECTS_MAX);
	for (size_t i = 0; i < req->nheaders; i++) {
		const char *h = req->headers[i];

		if (!h || strpbrk(h, "\r\n") || !strpbrk(h, ":;") ||
		    h[0] == ':' || h[0] == ';')
			return nv_err_set(
				err, NV_EINVAL, "headers are \"Name: value\"",
				"request header %zu is malformed", i + 1);
		if (req->credential &&
		    header_name_is(h, req->credential_header
					      ? req->credential_header
					      : "Authorization"))
			return nv_err_set(err, NV_EINVAL, NULL,
					  "a request has a credential or an "
					  "%s header, not both",
					  req->credential_header
						  ? req->credential_header
						  : "Authorization");
	}
	if (req->credential_header) {
		const char *p = req->credential_header;

		if (!req->credential || !*p || strlen(p) > 64)
			return nv_err_set(err, NV_EINVAL, NULL,
					  "a credential header needs a "
					  "credential and a short name");
		for (; *p; p++)
			if (!isalnum((unsigned char)*p) && *p != '-')
				return nv_err_set(err, NV_EINVAL, NULL,
						  "bad credential header name");
	}
	if (req->credential && !req->credential_host)
		return nv_err_set(err, NV_EINVAL,
				  "give the host the credential is for",
				  "credential %s has no bound host",
				  req->credential->name);
	return 0;
}

/* --- response callbacks -------------------------------------------------- */

static void headers_free(nv_http_response *resp)
{
	for (size_t i = 0; i < resp->nheaders; i++) {
		free(resp->headers[i].name);
		free(resp->headers[i].value);
	}
	free(resp->headers);
	resp->headers = NULL;
	resp->nheaders = 0;
}

static size_t on_header(char *data, size_t size, size_t nitems, void *ud)
{
	struct transfer *t = ud;
	nv_http_response *resp = t->resp;
	size_t len = size * nitems, name_len;
	const char *colon, *v, *end = data + len;
	nv_http_header *h;

	/* tests: die once the server has answered, before the answer is
	 * read (core/fault.h); "100 Continue" is not the answer */
	if (len > 12 && memcmp(data, "HTTP/", 5) == 0) {
		const char *sp = memchr(data, ' ', len - 4);
		if (sp && memcmp(sp + 1, "100", 3) != 0)
			nv_fault_point("http-answer", t->req->url);
	}
	while (end > data && (end[-1] == '\r' || end[-1] == '\n'))
		end--;
	if (end - data >= 5 && memcmp(data, "HTTP/", 5) == 0) {
		/* A new response (after 100 Continue): keep only its own. */
		headers_free(resp);
		t->headers_cap = 0;
		t->header_seen = 0;
		return len;
	}
	if (end == data || data[0] == ' ' || data[0] == '\t')
		return len; /* end of headers, or obsolete folding */
	colon = memchr(data, ':', (size_t)(end - data));
	if (!colon || colon == data)
		return len;
	name_len = (size_t)(colon - data);
	for (v = colon + 1; v < end && (*v == ' ' || *v == '\t'); v++)
		;
	while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	t->header_seen += (size_t)(end - data);
	if (resp->nheaders >= NV_HTTP_HEADERS_MAX ||
	    t->header_seen > NV_HTTP_HEADER_BYTES_MAX) {
		t->headers_over_cap = 1;
		return 0;
	}
	if (resp->nheaders == t->headers_cap) {
		size_t cap = t->headers_cap ? t->headers_cap * 2 : 16;
		nv_http_header *p = realloc(resp->headers, cap * sizeof(*p));

		if (!p)
			goto nomem;
		resp->headers = p;
		t->headers_cap = cap;
	}
	h = &resp->headers[resp->nheaders];
	h->name = strndup(data, name_len);
	h->value = strndup(v, (size_t)(end - v));
	if (!h->name || !h->value) {
		free(h->name);
		free(h->value);
		goto nomem;
	}
	resp->nheaders++;
	return len;
nomem:
	t->out_of_memory = 1;
	return 0;
}

static size_t on_body(char *data, size_t size, size_t nitems, void *ud)
{
	struct transfer *t = ud;
	size_t len = size * nitems;

	if (t->to_sink < 0) {
		long status = 0;

		if (curl_easy_getinfo(t->handle, CURLINFO_RESPONSE_CODE,
				      &status) != CURLE_OK)
			status = 0;
		t->to_sink = t->req->sink && status >= 200 && status < 300;
	}
	if (len > t->max_body - t->body_seen) {
		t->body_over_cap = 1;
		return 0;
	}
	t->body_seen += len;
	if (t->to_sink) {
		if (t->req->sink(t->req->sink_payload, data, len)) {
			t->sink_failed = 1;
			return 0;
		}
		return len;
	}
	if (nv_buf_append(&t->resp->body, data, len)) {
		t->out_of_memory = 1;
		return 0;
	}
	return len;
}

static size_t on_read(char *data, size_t size, size_t nitems, void *ud)
{
	struct transfer *t = ud;
	size_t n = 0, cap = size * nitems;

	/* tests: die with part of the body sent (core/fault.h) */
	if (t->body_sent > 0)
		nv_fault_point("http-upload", t->req->url);
	if (t->req->body_read(t->req->body_payload, data, cap, &n) || n > cap) {
		t->read_failed = 1;
		return CURL_READFUNC_ABORT;
	}
	t->body_sent += n;
	return n;
}

/* --- one hop ------------------------------------------------------------- */

/* (sleep does not count: see core/clock.h) */
static long monotonic_ms(void)
{
	return (long)(nv_monotonic() * 1000.0);
}

enum body_mode { BODY_NONE, BODY_BYTES, BODY_READER };

struct hop {
	const char *url;
	const char *shown;
	const char *method;
	enum body_mode body;
	struct curl_slist *headers;
	struct curl_slist *resolve; /* a localhost name pinned to 127.0.0.1 */
	int loopback;
	long connect_ms, total_ms;
};

#define SETOPT(opt, val)                                                       \
	do {                                                                   \
		cc = curl_easy_setopt(h, opt, val);                            \
		if (cc != CURLE_OK)                                            \
			goto out;                                              \
	} while (0)

/* The stall window of policy in seconds (0: none), see http.h. */
static long stall_seconds(const nv_http_policy *policy)
{
	const char *env = getenv("NAVETTE_HTTP_STALL_TIMEOUT");
	long ms = policy->stall_timeout_ms;

	if (ms > 0 && env && *env) {
		char *end = NULL;
		long s = strtol(env, &end, 10);
		if (end && *end == '\0' && s > 0 && s <= 86400)
			return s;
	}
	return ms > 0 ? (ms + 999) / 1000 : 0;
}

static CURLcode hop_setup(CURL *h, const nv_http_policy *policy,
			  const struct hop *hop, struct transfer *t,
			  char *errbuf)
{
	const nv_http_request *req = t->req;
	CURLcode cc = CURLE_OK;

	curl_easy_reset(h);
	SETOPT(CURLOPT_ERRORBUFFER, errbuf);
	SETOPT(CURLOPT_URL, hop->url);
	SETOPT(CURLOPT_NOSIGNAL, 1L);
	SETOPT(CURLOPT_PROTOCOLS_STR, "http,https");
	SETOPT(CURLOPT_FOLLOWLOCATION, 0L);
	/* Never relaxed: see http.h. */
	SETOPT(CURLOPT_SSL_VERIFYPEER, 1L);
	SETOPT(CURLOPT_SSL_VERIFYHOST, 2L);
	if (policy->ca_pem) {
		struct curl_blob ca = {(void *)policy->ca_pem,
				       policy->ca_pem_len, CURL_BLOB_COPY};

		SETOPT(CURLOPT_CAINFO_BLOB, &ca);
	} else if (policy->ca_bundle) {
		SETOPT(CURLOPT_CAINFO, policy->ca_bundle);
	}
	if (policy->client_cert_pem && policy->client_key_pem) {
		struct curl_blob cert = {(void *)policy->client_cert_pem,
					 policy->client_cert_len,
					 CURL_BLOB_COPY};
		struct curl_blob key = {(void *)policy->client_key_pem,
					policy->client_key_len,
					CURL_BLOB_NOCOPY};

		SETOPT(CURLOPT_SSLCERTTYPE, "PEM");
		SETOPT(CURLOPT_SSLCERT_BLOB, &cert);
		SETOPT(CURLOPT_SSLKEYTYPE, "PEM");
		SETOPT(CURLOPT_SSLKEY_BLOB, &key);
	}
	if (policy->pinned_pubkey)
		SETOPT(CURLOPT_PINNEDPUBLICKEY, policy->pinned_pubkey);
	if (hop->loopback)
		SETOPT(CURLOPT_PROXY, ""); /* loopback never goes out */
	if (hop->resolve)
		SETOPT(CURLOPT_RESOLVE, hop->resolve);
	/* Fewer, larger reads and writes for bodies streamed to or from a
	 * file (curl's 16 KiB default costs a syscall per 16 KiB). */
	if (req->sink)
		SETOPT(CURLOPT_BUFFERSIZE, (long)NV_HTTP_STREAM_BUFFER);
	if (hop->body == BODY_READER)
		SETOPT(CURLOPT_UPLOAD_BUFFERSIZE, (long)NV_HTTP_STREAM_BUFFER);
	SETOPT(CURLOPT_CONNECTTIMEOUT_MS, hop->connect_ms);
	SETOPT(CURLOPT_TIMEOUT_MS, hop->total_ms);
	/* a stall: under 1 byte/s for the whole window */
	SETOPT(CURLOPT_LOW_SPEED_LIMIT, stall_seconds(policy) > 0 ? 1L : 0L);
	SETOPT(CURLOPT_LOW_SPEED_TIME, stall_seconds(policy));
	SETOPT(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)t->max_body);
	SETOPT(CURLOPT_HEADERFUNCTION, on_header);
	SETOPT(CURLOPT_HEADERDATA, t);
	SETOPT(CURLOPT_WRITEFUNCTION, on_body);
	SETOPT(CURLOPT_WRITEDATA, t);
	if (hop->headers)
		SETOPT(CURLOPT_HTTPHEADER, hop->headers);

	if (strcmp(hop->method, "HEAD") == 0) {
		SETOPT(CURLOPT_NOBODY, 1L);
	} else if (hop->body == BODY_BYTES) {
		SETOPT(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
		SETOPT(CURLOPT_POSTFIELDS, req->body ? req->body : "");
		if (strcmp(hop->method, "POST") != 0)
			SETOPT(CURLOPT_CUSTOMREQUEST, hop->method);
	} else if (hop->body == BODY_READER) {
		SETOPT(CURLOPT_UPLOAD, 1L);
		SETOPT(CURLOPT_READFUNCTION, on_read);
		SETOPT(CURLOPT_READDATA, t);
		if (req->body_size >= 0)
			SETOPT(CURLOPT_INFILESIZE_LARGE,
			       (curl_off_t)req->body_size);
		if (strcmp(hop->method, "PUT") != 0)
			SETOPT(CURLOPT_CUSTOMREQUEST, hop->method);
	} else if (strcmp(hop->method, "GET") == 0) {
		SETOPT(CURLOPT_HTTPGET, 1L);
	} else {
		SETOPT(CURLOPT_CUSTOMREQUEST, hop->method);
	}
out:
	return cc;
}

#undef SETOPT

static int hop_headers(const nv_http_request *req, const char *auth,
		       int same_origin, enum body_mode body,
		       struct curl_slist **out, nv_err *err)
{
	struct curl_slist *list = NULL, *next;
	int has_type = 0;

	*out = NULL;
	for (size_t i = 0; i < req->nheaders; i++) {
		const char *hdr = req->headers[i];

		if (!same_origin && header_is_origin_bound(hdr))
			continue;
		has_type |= header_name_is(hdr, "Content-Type");
		next = curl_slist_append(list, hdr);
		if (!next)
			goto nomem;
		list = next;
	}
	if (auth && same_origin) {
		next = curl_slist_append(list, auth);
		if (!next)
			goto nomem;
		list = next;
	}
	/* curl would label raw bytes as a form otherwise. */
	if (body == BODY_BYTES && !has_type) {
		next = curl_slist_append(list, "Content-Type:");
		if (!next)
			goto nomem;
		list = next;
	}
	*out = list;
	return 0;
nomem:
	slist_free_wiped(list);
	return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
}

static int curl_failure(CURLcode cc, const struct transfer *t,
			const nv_http_policy *policy, const char *shown,
			const char *errbuf, long total_ms, nv_err *err)
{
	const char *why = errbuf[0] ? errbuf : curl_easy_strerror(cc);

	if (t->body_over_cap || cc == CURLE_FILESIZE_EXCEEDED)
		return nv_err_set(err, NV_ENOMEM,
				  "raise the body cap of the profile if such a "
				  "large answer is expected",
				  "the response body of %s is over the cap of "
				  "%zu bytes; transfer aborted",
				  shown, t->max_body);
	if (t->headers_over_cap)
		return nv_err_set(err, NV_ENOMEM, "the server misbehaves",
				  "the response headers of %s are over the "
				  "cap of %d headers or %zu bytes",
				  shown, NV_HTTP_HEADERS_MAX,
				  NV_HTTP_HEADER_BYTES_MAX);
	if (t->out_of_memory)
		return nv_err_set(err, NV_ENOMEM, NULL,
				  "out of memory reading the response of %s",
				  shown);
	if (t->sink_failed)
		return nv_err_set(err, NV_EIO, NULL,
				  "the response body of %s could not be "
				  "stored",
				  shown);
	if (t->read_failed)
		return nv_err_set(err, NV_EIO, NULL,
				  "the request body for %s could not be read",
				  shown);
	switch (cc) {
	case CURLE_PEER_FAILED_VERIFICATION:
		if (policy->ca_pem)
			return nv_err_set(
				err, NV_EREFUSED,
				"the CA certificate given for this server (a "
				"kubeconfig's certificate-authority) is not "
				"the "
				"one that signed its certificate; TLS "
				"verification cannot be turned off",
				"%s: the server's certificate is not trusted "
				"(%s)",
				shown, why);
		return nv_err_set(
			err, NV_EREFUSED,
			policy->ca_bundle
				? "the CA bundle of the profile does not "
				  "vouch for this server; TLS verification "
				  "cannot be turned off"
				: "set the CA bundle of the profile to the PEM "
				  "file of the CA that signed the server's "
				  "certificate; TLS verification cannot be "
				  "turned off",
			"%s: the server's certificate is not trusted: give the "
			"CA bundle of the profile (%s)",
			shown, why);
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
		return nv_err_set(err, NV_EREFUSED,
				  "if the server's key was rotated on purpose, "
				  "update the pin of the profile",
				  "%s: the server's public key does not match "
				  "the pin of the profile",
				  shown);
	case CURLE_SSL_CACERT_BADFILE:
		return nv_err_set(err, NV_EIO, "check the profile's CA bundle",
				  "the CA bundle %s cannot be read (%s)",
				  policy->ca_bundle ? policy->ca_bundle
						    : "(system)",
				  why);
	case CURLE_COULDNT_RESOLVE_HOST:
		return nv_err_set(err, NV_EBACKEND,
				  "check the host name of the endpoint and "
				  "the network (DNS, VPN)",
				  "%s: cannot resolve the host (%s)", shown,
				  why);
	case CURLE_COULDNT_CONNECT:
		return nv_err_set(err, NV_EBACKEND,
				  "is the service running and reachable from "
				  "here? check the endpoint, VPN and firewall",
				  "%s: cannot connect (%s)", shown, why);
	case CURLE_OPERATION_TIMEDOUT:
		return nv_err_set(err, NV_EBACKEND,
				  "the service is slow or unreachable; check "
				  "the network or raise the profile's timeouts",
				  "%s: timed out (limit %ld ms): %s", shown,
				  total_ms, why);
	case CURLE_SSL_CONNECT_ERROR:
		return nv_err_set(err, NV_EBACKEND,
				  "is this an https endpoint? check the port",
				  "%s: TLS handshake failed (%s)", shown, why);
	case CURLE_UNSUPPORTED_PROTOCOL:
		return nv_err_set(err, NV_EREFUSED, "use an https:// URL",
				  "%s: protocol refused (%s)", shown, why);
	default:
		return nv_err_set(err, NV_EBACKEND,
				  "check the endpoint and the network",
				  "%s: request failed (%s)", shown, why);
	}
}

static int is_redirect(long status)
{
	return status == 301 || status == 302 || status == 303 ||
	       status == 307 || status == 308;
}

static void capture_interesting(nv_http_response *resp)
{
	resp->content_type = nv_http_response_header(resp, "Content-Type");
	resp->location = nv_http_response_header(resp, "Location");
	resp->etag = nv_http_response_header(resp, "ETag");
	resp->retry_after = nv_http_response_header(resp, "Retry-After");
	resp->www_authenticate =
		nv_http_response_header(resp, "WWW-Authenticate");
	resp->docker_content_digest =
		nv_http_response_header(resp, "Docker-Content-Digest");
	resp->amz_request_id =
		nv_http_response_header(resp, "x-amz-request-id");
}

static void reset_for_hop(nv_http_response *resp, struct transfer *t)
{
	headers_free(resp);
	nv_buf_free(&resp->body);
	nv_buf_init(&resp->body, t->max_body);
	capture_interesting(resp);
	resp->status = 0;
	t->headers_cap = 0;
	t->header_seen = 0;
	t->body_seen = 0;
	t->to_sink = -1;
}

static int set_effective_url(nv_http_response *resp, const char *shown,
			     nv_err *err)
{
	free(resp->effective_url);
	resp->effective_url = strdup(shown);
	if (!resp->effective_url)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	return 0;
}

/* --- one request, hop by hop --------------------------------------------- */

/* Everything one request carries from hop to hop. */
struct exchange {
	const nv_http_policy *policy;
	const nv_http_request *req;
	nv_http_response *resp;
	struct transfer t;
	struct origin first, cur;
	struct hop hop;
	char shown[URL_SHOWN_MAX];
	char errbuf[CURL_ERROR_SIZE];
	char *auth, *url, *url_password;
	size_t auth_len;
	CURLU *u;
	CURL *given, *h;
	int same_origin; /* 0 once a redirect left the first origin */
	long connect_ms, total_ms, deadline;
	long *connections;
};

/* The request's URL, origin and credential, before the first hop. */
static int exchange_open(struct exchange *x, nv_err *err)
{
	const nv_http_request *req = x->req;
	int rc;

	nv_http_url_for_display(req->url, x->shown, sizeof(x->shown));
	x->u = curl_url();
	if (!x->u)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	if (curl_url_set(x->u, CURLUPART_URL, req->url, 0))
		return nv_err_set(err, NV_EINVAL,
				  "give an absolute https:// URL",
				  "malformed URL %s", x->shown);
	if (curl_url_get(x->u, CURLUPART_PASSWORD, &x->url_password, 0))
		x->url_password = NULL;
	rc = origin_of(x->u, &x->first, x->shown, err);
	if (rc)
		return rc;
	x->cur = x->first;
	rc = scheme_check(&x->first, x->shown, err);
	if (rc)
		return rc;
	if (req->credential) {
		rc = binding_check(req, &x->first, err);
		if (rc)
			return rc;
		rc = auth_header(req->credential, req->credential_header,
				 &x->auth, &x->auth_len, err);
		if (rc)
			return rc;
	}

	x->hop.method =
		req->method ? req->method
			    : (req->body || req->body_read ? "POST" : "GET");
	x->hop.body = req->body_read ? BODY_READER
		      : req->body    ? BODY_BYTES
				     : BODY_NONE;
	if (x->hop.body == BODY_NONE && (strcmp(x->hop.method, "POST") == 0 ||
					 strcmp(x->hop.method, "PUT") == 0 ||
					 strcmp(x->hop.method, "PATCH") == 0))
		x->hop.body = BODY_BYTES; /* an empty body, with its length */
	x->hop.shown = x->shown;
	x->h = x->given ? x->given : curl_easy_init();
	if (!x->h)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	x->t.handle = x->h;
	x->deadline = monotonic_ms() + x->total_ms;
	return 0;
}

/* The next hop's URL, pins, time left and headers. */
static int hop_prepare(struct exchange *x, nv_err *err)
{
	struct hop *hop = &x->hop;
	long left = x->deadline - monotonic_ms();
	int rc;

	hop->loopback = nv_http_host_is_loopback(x->cur.host);
	curl_slist_free_all(hop->resolve);
	hop->resolve = NULL;
	if (localhost_name(x->cur.host)) {
		char pin[HOST_MAX + 40];

		snprintf(pin, sizeof(pin), "%s:%ld:127.0.0.1", x->cur.host,
			 x->cur.port);
		hop->resolve = curl_slist_append(NULL, pin);
		if (!hop->resolve)
			return nv_err_set(err, NV_ENOMEM, NULL,
					  "out of memory");
	}
	rc = scheme_check(&x->cur, x->shown, err);
	if (rc)
		return rc;
	if (left <= 0)
		return nv_err_set(err, NV_EBACKEND,
				  "raise the profile's timeouts",
				  "%s: timed out (limit %ld ms) after %d "
				  "redirects",
				  x->shown, x->total_ms, x->resp->redirects);
	hop->total_ms = left;
	hop->connect_ms = x->connect_ms < left ? x->connect_ms : left;
	curl_free(x->url);
	x->url = NULL;
	if (curl_url_get(x->u, CURLUPART_URL, &x->url, 0))
		return nv_err_set(err, NV_EINVAL, NULL, "malformed URL %s",
				  x->shown);
	hop->url = x->url;
	rc = set_effective_url(x->resp, x->shown, err);
	if (rc)
		return rc;
	rc = hop_headers(x->req, x->auth, x->same_origin, hop->body,
			 &hop->headers, err);
	if (rc)
		return rc;
	reset_for_hop(x->resp, &x->t);
	return 0;
}

/* Sends one hop and reads its answer; *status is the answer's code. */
static int hop_send(struct exchange *x, long *status, nv_err *err)
{
	CURL *h = x->h;
	CURLcode cc;
	long opened = 0;

	x->errbuf[0] = '\0';
	cc = hop_setup(h, x->policy, &x->hop, &x->t, x->errbuf);
	if (cc == CURLE_OK)
		cc = curl_easy_perform(h);
	if (curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status) == CURLE_OK)
		x->resp->status = *status;
	if (curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &opened) == CURLE_OK &&
	    opened > 0)
		*x->connections += opened;
	capture_interesting(x->resp);
	slist_free_wiped(x->hop.headers);
	x->hop.headers = NULL;
	if (cc != CURLE_OK)
		return curl_failure(cc, &x->t, x->policy, x->shown, x->errbuf,
				    x->total_ms, err);
	return 0;
}

/* Moves x->u to the answer's Location and *next to its origin; refuses a
 * downgrade from https to plain http off loopback. */
static int redirect_target(struct exchange *x, struct origin *next, nv_err *err)
{
	char from[URL_SHOWN_MAX];
	char *location = strdup(x->resp->location);
	int rc;

	if (!location)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	/* Resolved against the current URL. */
	if (curl_url_set(x->u, CURLUPART_URL, location, 0)) {
		char bad[URL_SHOWN_MAX];

		nv_http_url_for_display(location, bad, sizeof(bad));
		free(location);
		return nv_err_set(err, NV_EBACKEND, "the server misbehaves",
				  "%s redirects to a malformed Location %s",
				  x->shown, bad);
	}
	free(location);
	memcpy(from, x->shown, sizeof(from));
	curl_free(x->url);
	x->url = NULL;
	if (curl_url_get(x->u, CURLUPART_URL, &x->url, 0))
		return nv_err_set(err, NV_EBACKEND, NULL,
				  "%s redirects to a malformed URL", from);
	nv_http_url_for_display(x->url, x->shown, sizeof(x->shown));
	rc = origin_of(x->u, next, x->shown, err);
	if (rc)
		return rc;
	if (strcmp(x->cur.scheme, "https") == 0 &&
	    strcmp(next->scheme, "http") == 0 &&
	    !nv_http_host_is_loopback(next->host))
		return nv_err_set(err, NV_EREFUSED,
				  "the server should redirect to https",
				  "redirect from %s to %s refused: a downgrade "
				  "from https to plain http",
				  from, x->shown);
	return 0;
}

/* Follows the answer of the hop just sent when it redirects (*again set
 * to 1, x pointing at the next hop); *again stays 0 for a final answer. */
static int hop_follow(struct exchange *x, long status, int *again, nv_err *err)
{
	const nv_http_request *req = x->req;
	struct hop *hop = &x->hop;
	struct origin next;
	int rc;

	if (!req->max_redirects || !is_redirect(status) || !x->resp->location)
		return 0;
	if (x->resp->redirects >= req->max_redirects)
		return nv_err_set(err, NV_EBACKEND,
				  "a redirect loop, or raise max_redirects",
				  "too many redirects: stopped after %d (the "
				  "cap), at %s",
				  x->resp->redirects, x->shown);
	if ((status == 307 || status == 308) && hop->body == BODY_READER)
		return nv_err_set(err, NV_EINVAL,
				  "send the body as bytes, or to the final URL",
				  "%s answered %ld: a streamed body cannot be "
				  "sent again",
				  x->shown, status);
	if ((status == 303 && strcmp(hop->method, "HEAD") != 0) ||
	    ((status == 301 || status == 302) &&
	     strcmp(hop->method, "POST") == 0)) {
		hop->method = "GET";
		hop->body = BODY_NONE;
	}
	rc = redirect_target(x, &next, err);
	if (rc)
		return rc;
	if (req->redirect_check &&
	    (rc = req->redirect_check(req->redirect_payload, x->url, err)))
		return rc;
	/* Once the origin changes, the credential stays behind for this hop
	 * and every later one. */
	if (!origin_equal(&next, &x->first))
		x->same_origin = 0;
	x->cur = next;
	x->resp->redirects++;
	*again = 1;
	return 0;
}

/* Frees what the request held; on failure, no secret stays in err. */
static void exchange_close(struct exchange *x, int rc, nv_err *err)
{
	const nv_http_request *req = x->req;

	if (rc && req && req->credential) {
		for (int i = 0; i < req->credential->nfields; i++) {
			const nv_secret_field *f = &req->credential->fields[i];

			if (strcmp(f->name, "user") != 0)
				scrub_err(err, f->value, f->len);
		}
	}
	if (rc && x->url_password)
		scrub_err(err, x->url_password, strlen(x->url_password));
	if (x->auth) {
		OPENSSL_cleanse(x->auth, x->auth_len);
		free(x->auth);
	}
	if (x->url_password) {
		OPENSSL_cleanse(x->url_password, strlen(x->url_password));
		curl_free(x->url_password);
	}
	curl_free(x->url);
	curl_url_cleanup(x->u);
	if (x->h && x->h != x->given)
		curl_easy_cleanup(x->h);
	else if (x->h)
		curl_easy_reset(x->h); /* no pointer into this frame survives */
	curl_slist_free_all(x->hop.resolve);
}

/* One request, all its hops, on handle `given` (a session's) or on a handle
 * of its own when given is NULL. *connections grows by the connections
 * curl had to open. */
static int perform(CURL *given, const nv_http_policy *policy,
		   const nv_http_request *req, nv_http_response *resp,
		   long *connections, nv_err *err)
{
	static const nv_http_policy no_policy;
	struct exchange x;
	int rc;

	memset(resp, 0, sizeof(*resp));
	memset(&x, 0, sizeof(x));
	if (!policy)
		policy = &no_policy;
	x.t.max_body =
		policy->max_body ? policy->max_body : NV_HTTP_MAX_BODY_DEFAULT;
	nv_buf_init(&resp->body, x.t.max_body);
	rc = validate(req, err);
	if (rc)
		return rc;
	x.policy = policy;
	x.req = req;
	x.resp = resp;
	x.t.req = req;
	x.t.resp = resp;
	x.given = given;
	x.connections = connections;
	x.same_origin = 1;
	x.connect_ms = policy->connect_timeout_ms > 0
			       ? policy->connect_timeout_ms
			       : NV_HTTP_CONNECT_TIMEOUT_MS_DEFAULT;
	x.total_ms = policy->total_timeout_ms > 0
			     ? policy->total_timeout_ms
			     : NV_HTTP_TOTAL_TIMEOUT_MS_DEFAULT;

	pthread_once(&global_once, global_init);
	if (global_result != CURLE_OK)
		return nv_err_set(err, NV_EBACKEND, NULL,
				  "libcurl failed to initialise: %s",
				  curl_easy_strerror(global_result));

	rc = exchange_open(&x, err);
	while (!rc) {
		long status = 0;
		int again = 0;

		rc = hop_prepare(&x, err);
		if (!rc)
			rc = hop_send(&x, &status, err);
		if (!rc)
			rc = hop_follow(&x, status, &again, err);
		if (!again)
			break; /* the final answer, or a failure */
	}
	exchange_close(&x, rc, err);
	return rc;
}

int nv_http_perform(const nv_http_policy *policy, const nv_http_request *req,
		    nv_http_response *resp, nv_err *err)
{
	long connections = 0;

	return perform(NULL, policy, req, resp, &connections, err);
}

/* --- sessions ------------------------------------------------------------ */

struct nv_http_session {
	CURL *handle;
	long connections;
	/* The trust settings the open connections were made under. */
	char *ca_bundle;
	char *pinned_pubkey;
	/* sha256 of the in-memory CA text and client identity (zero: none) */
	unsigned char identity[32];
	int used;
};

nv_http_session *nv_http_session_new(nv_err *err)
{
	nv_http_session *s;

	pthread_once(&global_once, global_init);
	if (global_result != CURLE_OK) {
		nv_err_set(err, NV_EBACKEND, NULL,
			   "libcurl failed to initialise: %s",
			   curl_easy_strerror(global_result));
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (s)
		s->handle = curl_easy_init();
	if (!s || !s->handle) {
		free(s);
		nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
		return NULL;
	}
	return s;
}

/* What the in-memory trust anchors and client identity are, as one
 * digest (all zero when there are none): each part is hashed with its
 * length, so no two different settings give the same digest. */
static void policy_identity(const nv_http_policy *policy, unsigned char out[32])
{
	const void *part[3] = {NULL, NULL, NULL};
	size_t len[3] = {0, 0, 0};
	EVP_MD_CTX *md;
	unsigned int n = 32;

	memset(out, 0, 32);
	if (!policy || (!policy->ca_pem && !policy->client_cert_pem))
		return;
	part[0] = policy->ca_pem,
	len[0] = policy->ca_pem ? policy->ca_pem_len : 0;
	part[1] = policy->client_cert_pem;
	len[1] = policy->client_cert_pem ? policy->client_cert_len : 0;
	part[2] = policy->client_key_pem;
	len[2] = policy->client_key_pem ? policy->client_key_len : 0;
	md = EVP_MD_CTX_new();
	if (!md || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
		/* never equal to a real digest's chance: refuse reuse */
		memset(out, 0xff, 32);
		EVP_MD_CTX_free(md);
		return;
	}
	for (int i = 0; i < 3; i++) {
		unsigned long long l = len[i];

		EVP_DigestUpdate(md, &l, sizeof(l));
		if (l)
			EVP_DigestUpdate(md, part[i], len[i]);
	}
	EVP_DigestFinal_ex(md, out, &n);
	EVP_MD_CTX_free(md);
}

static int same_setting(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Keeps the open connections only while the trust settings stay the same:
 * a connection verified under one CA bundle or pin never serves a request
 * made under another. */
static int session_policy(nv_http_session *s, const nv_http_policy *policy,
			  nv_err *err)
{
	const char *ca = policy ? policy->ca_bundle : NULL;
	const char *pin = policy ? policy->pinned_pubkey : NULL;
	char *ca_copy = NULL, *pin_copy = NULL;
	unsigned char identity[32];

	policy_identity(policy, identity);
	if (s->used && same_setting(ca, s->ca_bundle) &&
	    same_setting(pin, s->pinned_pubkey) &&
	    CRYPTO_memcmp(identity, s->identity, sizeof(identity)) == 0)
		return 0;
	if ((ca && !(ca_copy = strdup(ca))) ||
	    (pin && !(pin_copy = strdup(pin)))) {
		free(ca_copy);
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	}
	if (s->used) {
		CURL *fresh = curl_easy_init();

		if (!fresh) {
			free(ca_copy);
			free(pin_copy);
			return nv_err_set(err, NV_ENOMEM, NULL,
					  "out of memory");
		}
		curl_easy_cleanup(s->handle);
		s->handle = fresh;
	}
	free(s->ca_bundle);
	free(s->pinned_pubkey);
	s->ca_bundle = ca_copy;
	s->pinned_pubkey = pin_copy;
	memcpy(s->identity, identity, sizeof(identity));
	s->used = 1;
	return 0;
}

int nv_http_session_perform(nv_http_session *session,
			    const nv_http_policy *policy,
			    const nv_http_request *req, nv_http_response *resp,
			    nv_err *err)
{
	int rc;

	memset(resp, 0, sizeof(*resp));
	if (!session)
		return nv_err_set(err, NV_EINVAL, NULL, "no HTTP session");
	rc = session_policy(session, policy, err);
	if (rc)
		return rc;
	return perform(session->handle, policy, req, resp,
		       &session->connections, err);
}

long nv_http_session_connections(const nv_http_session *session)
{
	return session ? session->connections : 0;
}

void nv_http_session_free(nv_http_session *session)
{
	if (!session)
		return;
	curl_easy_cleanup(session->handle);
	free(session->ca_bundle);
	free(session->pinned_pubkey);
	free(session);
}

const char *nv_http_response_header(const nv_http_response *resp,
				    const char *name)
{
	if (!resp)
		return NULL;
	for (size_t i = 0; i < resp->nheaders; i++)
		if (strcasecmp(resp->headers[i].name, name) == 0)
			return resp->headers[i].value;
	return NULL;
}

void nv_http_response_free(nv_http_response *resp)
{
	if (!resp)
		return;
	headers_free(resp);
	nv_buf_free(&resp->body);
	free(resp->effective_url);
	memset(resp, 0, sizeof(*resp));
}

int nv_http_pin_from_pem(const char *pem_path, char out[NV_HTTP_PIN_MAX],
			 nv_err *err)
{
	BIO *bio = NULL;
	X509 *cert = NULL;
	EVP_PKEY *key = NULL;
	unsigned char *der = NULL, *p, md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;
	int der_len, rc = 0;

	out[0] = '\0';
	bio = BIO_new_file(pem_path, "r");
	if (!bio) {
		rc = nv_err_set(err, NV_EIO, "check the path", "cannot read %s",
				pem_path);
		goto out;
	}
	cert = PEM_read_bio_X509(bio, NULL, NULL, NULL);
	if (cert) {
		key = X509_get_pubkey(cert);
	} else if (BIO_reset(bio) == 0) {
		ERR_clear_error();
		key = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
	}
	if (!key) {
		rc = nv_err_set(
			err, NV_EINVAL, "give a PEM certificate or public key",
			"%s holds no certificate or public key", pem_path);
		goto out;
	}
	der_len = i2d_PUBKEY(key, NULL);
	if (der_len <= 0 || !(der = OPENSSL_malloc((size_t)der_len))) {
		rc = nv_err_set(err, NV_ENOMEM, NULL,
				"cannot encode the public key of %s", pem_path);
		goto out;
	}
	p = der;
	if (i2d_PUBKEY(key, &p) != der_len ||
	    !EVP_Digest(der, (size_t)der_len, md, &md_len, EVP_sha256(),
			NULL) ||
	    md_len != 32) {
		rc = nv_err_set(err, NV_EIO, NULL,
				"cannot hash the public key of %s", pem_path);
		goto out;
	}
	memcpy(out, "sha256//", 8);
	EVP_EncodeBlock((unsigned char *)out + 8, md, (int)md_len);
out:
	ERR_clear_error();
	OPENSSL_free(der);
	EVP_PKEY_free(key);
	X509_free(cert);
	BIO_free(bio);
	return rc;
}
