/* AWS Signature Version 4 (see sigv4.h). Checked against the AWS signing
 * test suite (tests/data/sigv4) by tests/unit/test_sigv4.c. The secret
 * itself never enters a growing buffer: it is copied once into a stack
 * array for the first HMAC and wiped there, with every HMAC after it. */
#include "storage/sigv4.h"

#include "core/sha256.h"
#include "core/hex.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#define ALGORITHM       "AWS4-HMAC-SHA256"
#define SCOPE_PART_MAX  64
#define ACCESS_KEY_MAX  128
#define METHOD_MAX      32
#define SCRATCH_MAX     ((size_t)1024 * 1024)
#define ENTRIES_MAX     (NV_SIGV4_QUERY_PARAMS_MAX + 8)
#define TIME_MAX        253402300799LL /* 9999-12-31T23:59:59Z */
#define HINT_LIMITS     "see the limits in host/storage/sigv4.h"
#define HINT_CREDENTIAL "check the S3 credential (access key, secret, token)"

enum sign_mode { SIGN_HEADERS, SIGN_QUERY };

/* ---- small helpers -------------------------------------------------- */

static int is_unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
	       c == '~';
}

static char ascii_lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

static int ascii_caseeq(const char *a, const char *b)
{
	while (*a && ascii_lower(*a) == ascii_lower(*b)) {
		a++;
		b++;
	}
	return *a == '\0' && *b == '\0';
}

/* RFC 9110 token characters: header names and methods. */
static int is_tchar(unsigned char c)
{
	return is_unreserved(c) || (c && strchr("!#$%&'*+^`|", c) != NULL);
}

static int is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static void to_hex(const unsigned char *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

static int hmac_sha256(const unsigned char *key, size_t key_len,
		       const void *data, size_t len, unsigned char out[32])
{
	unsigned int n = 0;
	if (!HMAC(EVP_sha256(), key, (int)key_len, data, len, out, &n) ||
	    n != 32)
		return -1;
	return 0;
}

/* Wipes a buffer that may hold a session token, keeping its cap. */
static void buf_wipe(nv_buf *b)
{
	size_t max = b->max;
	if (b->data)
		OPENSSL_cleanse(b->data, b->cap);
	nv_buf_free(b);
	nv_buf_init(b, max);
}

static void buf_truncate(nv_buf *b, size_t len)
{
	if (b->data && len <= b->len) {
		b->len = len;
		b->data[len] = '\0';
	}
}

/* 1..max bytes of A-Z a-z 0-9 . _ - (a region or a service). */
static int valid_scope_part(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > SCOPE_PART_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!is_unreserved((unsigned char)s[i]) || s[i] == '~')
			return 0;
	return 1;
}

/* Printable, no blank, and nothing that would break "Credential=K/..". */
static int valid_access_key(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > ACCESS_KEY_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c <= 0x20 || c >= 0x7f || c == '/' || c == ',')
			return 0;
	}
	return 1;
}

/* Visible ASCII only: the token goes into a header line as it is. */
static int valid_token(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > NV_SIGV4_TOKEN_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c <= 0x20 || c >= 0x7f)
			return 0;
	}
	return 1;
}

/* 64 lowercase hex digits, or a literal such as UNSIGNED-PAYLOAD. */
static int valid_payload_hash(const char *s)
{
	size_t n = strlen(s);
	int hex = n == NV_SIGV4_HEX_LEN, literal = n > 0 && n <= 64;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			hex = 0;
		if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-'))
			literal = 0;
	}
	return hex || literal;
}

static int format_time(int64_t t, char date8[9], char amz_date[17], nv_err *err)
{
	struct tm tm;
	time_t tt = (time_t)t;

	if (t < 0 || t > TIME_MAX || (int64_t)tt != t || !gmtime_r(&tt, &tm) ||
	    strftime(amz_date, 17, "%Y%m%dT%H%M%SZ", &tm) != 16)
		return nv_err_set(err, NV_EINVAL, "check the clock",
				  "sigv4: time %lld out of range",
				  (long long)t);
	memcpy(date8, amz_date, 8);
	date8[8] = '\0';
	return 0;
}

/* ---- encoding ------------------------------------------------------- */

int nv_sigv4_uri_encode(nv_buf *out, const void *data, size_t len,
			int keep_slash)
{
	static const char digits[] = "0123456789ABCDEF";
	const unsigned char *p = data;
	size_t run = 0; /* bytes copied as they are, not yet appended */

	for (size_t i = 0; i < len; i++) {
		unsigned char c = p[i];
		if (is_unreserved(c) || (keep_slash && c == '/')) {
			run++;
			continue;
		}
		char esc[3] = {'%', digits[c >> 4], digits[c & 15]};
		if (run && nv_buf_append(out, p + i - run, run))
			return -1;
		run = 0;
		if (nv_buf_append(out, esc, 3))
			return -1;
	}
	if (run && nv_buf_append(out, p + len - run, run))
		return -1;
	return out->failed ? -1 : 0;
}

/* Input taken as already encoded: each valid %XX is decoded and encoded
 * again in canonical form (so %41 is "A", %2f is "%2F" and never a path
 * separator), every other byte is encoded. */
static int encode_canonical(nv_buf *out, const char *s, size_t len,
			    int keep_slash)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		int hi, lo;
		if (c == '%' && i + 2 < len &&
		    (hi = nv_hex_value((unsigned char)s[i + 1])) >= 0 &&
		    (lo = nv_hex_value((unsigned char)s[i + 2])) >= 0) {
			unsigned char b = (unsigned char)(hi << 4 | lo);
			if (nv_sigv4_uri_encode(out, &b, 1, 0))
				return -1;
			i += 2;
			continue;
		}
		if (nv_sigv4_uri_encode(out, &c, 1, keep_slash))
			return -1;
	}
	return out->failed ? -1 : 0;
}

/* Removes empty, "." and ".." segments (RFC 3986 section 5.2.4, with
 * empty segments dropped as SigV4 wants). out receives an absolute path,
 * "/" at least; a trailing slash stays. */
static int normalize_path(nv_buf *out, const char *path, size_t len)
{
	size_t pos = 0;
	int dir = 0; /* the last segment names a folder: keep a slash */

	while (pos <= len) {
		const char *seg = path + pos;
		const char *slash = memchr(seg, '/', len - pos);
		size_t n = slash ? (size_t)(slash - seg) : len - pos;

		if (n == 0 || (n == 1 && seg[0] == '.')) {
			dir = 1;
		} else if (n == 2 && seg[0] == '.' && seg[1] == '.') {
			size_t cut = out->len;
			while (cut > 0 && out->data[cut - 1] != '/')
				cut--;
			if (cut > 0)
				buf_truncate(out, cut - 1); /* drops "/seg" */
			dir = 1;
		} else {
			nv_buf_append(out, "/", 1);
			nv_buf_append(out, seg, n);
			dir = 0;
		}
		pos += n + 1;
	}
	if (out->len == 0 || dir)
		nv_buf_append(out, "/", 1);
	return out->failed ? -1 : 0;
}

static int canonical_uri(nv_buf *cr, const char *path, int normalize, int once,
			 nv_err *err)
{
	nv_buf norm;
	size_t len;
	int rc;

	if (!path || !*path)
		path = "/";
	len = strlen(path);
	if (len > NV_SIGV4_PATH_MAX)
		return nv_err_set(err, NV_EINVAL, HINT_LIMITS,
				  "sigv4: path of %zu bytes is too long", len);
	if (path[0] != '/')
		return nv_err_set(err, NV_EINVAL,
				  "give the path as in the request line",
				  "sigv4: path must start with '/'");
	nv_buf_init(&norm, NV_SIGV4_PATH_MAX + 2);
	if (normalize) {
		if (normalize_path(&norm, path, len)) {
			nv_buf_free(&norm);
			return nv_err_set(err, NV_ENOMEM, NULL,
					  "sigv4: out of memory");
		}
		path = norm.data;
		len = norm.len;
	}
	rc = once ? encode_canonical(cr, path, len, 1)
		  : nv_sigv4_uri_encode(cr, path, len, 1);
	nv_buf_free(&norm);
	if (rc)
		return nv_err_set(err, NV_ENOMEM, HINT_LIMITS,
				  "sigv4: canonical request too large");
	return 0;
}

/* ---- tables of name/value pairs (headers, query parameters) --------- */

typedef struct sigv4_entry {
	size_t name_off, value_off;
	const char *name, *value;
	size_t order; /* keeps repeated headers in their given order */
} sigv4_entry;

typedef struct sigv4_table {
	nv_buf store; /* "name\0value\0" for each entry */
	sigv4_entry entries[ENTRIES_MAX];
	size_t n;
} sigv4_table;

static void table_init(sigv4_table *t)
{
	nv_buf_init(&t->store, SCRATCH_MAX);
	t->n = 0;
}

static void table_free(sigv4_table *t)
{
	buf_wipe(&t->store); /* may hold the session token */
	nv_buf_free(&t->store);
}

/* Opens an entry; the caller appends the name to t->store. */
static void table_begin(sigv4_table *t)
{
	t->entries[t->n].name_off = t->store.len;
	t->entries[t->n].order = t->n;
}

/* Ends the name; the caller appends the value. */
static void table_mid(sigv4_table *t)
{
	nv_buf_append(&t->store, "", 1);
	t->entries[t->n].value_off = t->store.len;
}

static void table_end(sigv4_table *t)
{
	nv_buf_append(&t->store, "", 1);
	t->n++;
}

static int table_add(sigv4_table *t, const char *name, const char *value,
		     int encode)
{
	table_begin(t);
	if (encode)
		nv_sigv4_uri_encode(&t->store, name, strlen(name), 0);
	else
		nv_buf_puts(&t->store, name);
	table_mid(t);
	if (encode)
		nv_sigv4_uri_encode(&t->store, value, strlen(value), 0);
	else
		nv_buf_puts(&t->store, value);
	table_end(t);
	return t->store.failed ? -1 : 0;
}

static int compare_query(const void *a, const void *b)
{
	const sigv4_entry *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : strcmp(x->value, y->value);
}

static int compare_headers(const void *a, const void *b)
{
	const sigv4_entry *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	if (c)
		return c;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Once the store stops growing: points entries into it, then sorts. */
static void table_sort(sigv4_table *t,
		       int (*compare)(const void *, const void *))
{
	for (size_t i = 0; i < t->n; i++) {
		t->entries[i].name = t->store.data + t->entries[i].name_off;
		t->entries[i].value = t->store.data + t->entries[i].value_off;
	}
	qsort(t->entries, t->n, sizeof(t->entries[0]), compare);
}

/* Appends value trimmed, each run of blanks (folded lines included) made
 * one space. */
static void append_collapsed(nv_buf *b, const char *v, size_t len)
{
	size_t i = 0, end = len;
	int blank = 0;

	while (i < end && is_blank(v[i]))
		i++;
	while (end > i && is_blank(v[end - 1]))
		end--;
	for (; i < end; i++) {
		if (is_blank(v[i])) {
			if (!blank)
				nv_buf_append(b, " ", 1);
			blank = 1;
		} else {
			nv_buf_append(b, v + i, 1);
			blank = 0;
		}
	}
}

/* Headers the signer writes itself: a caller's copy would clash. */
static const char *const reserved_headers[] = {"authorization", "x-amz-date",
					       "x-amz-content-sha256",
					       "x-amz-security-token", NULL};

/* Headers that proxies and HTTP stacks rewrite: signing them breaks
 * requests for nothing, so (like the AWS SDKs) they are left unsigned. */
static const char *const unsigned_headers[] = {
	"user-agent",        "expect",          "connection",
	"transfer-encoding", "x-amzn-trace-id", NULL};

static int in_list(const char *const *list, const char *name)
{
	for (; *list; list++)
		if (ascii_caseeq(*list, name))
			return 1;
	return 0;
}

static int collect_headers(sigv4_table *t, const nv_sigv4_request *req,
			   nv_err *err)
{
	int have_host = 0;

	if (req->nheaders > NV_SIGV4_HEADERS_MAX)
		return nv_err_set(err, NV_EINVAL, HINT_LIMITS,
				  "sigv4: %zu headers, at most %d",
				  req->nheaders, NV_SIGV4_HEADERS_MAX);
	for (size_t i = 0; i < req->nheaders; i++) {
		const char *name = req->headers[i].name;
		const char *value = req->headers[i].value;
		size_t nlen = name ? strlen(name) : 0;
		size_t vlen = value ? strlen(value) : 0;

		if (nlen == 0 || nlen > NV_SIGV4_HEADER_NAME_MAX || !value)
			return nv_err_set(err, NV_EINVAL, NULL,
					  "sigv4: header %zu: bad name or "
					  "no value",
					  i);
		for (size_t k = 0; k < nlen; k++)
			if (!is_tchar((unsigned char)name[k]))
				return nv_err_set(err, NV_EINVAL, NULL,
						  "sigv4: header %zu: bad "
						  "character in name",
						  i);
		if (vlen > NV_SIGV4_HEADER_VALUE_MAX)
			return nv_err_set(err, NV_EINVAL, HINT_LIMITS,
					  "sigv4: header %s: value too long",
					  name);
		if (in_list(reserved_headers, name))
			return nv_err_set(err, NV_EINVAL,
					  "leave it out: the signer adds it",
					  "sigv4: header %s given", name);
		if (in_list(unsigned_headers, name))
			continue;
		if (ascii_caseeq(name, "host"))
			have_host = 1;
		table_begin(t);
		for (size_t k = 0; k < nlen; k++) {
			char c = ascii_lower(name[k]);
			nv_buf_append(&t->store, &c, 1);
		}
		table_mid(t);
		append_collapsed(&t->store, value, vlen);
		table_end(t);
	}
	if (!have_host) {
		if (!req->host || !*req->host ||
		    strlen(req->host) > NV_SIGV4_HEADER_NAME_MAX)
			return nv_err_set(err, NV_EINVAL,
					  "set the request's host",
					  "sigv4: no Host to sign");
		table_begin(t);
		nv_buf_puts(&t->store, "host");
		table_mid(t);
		append_collapsed(&t->store, req->host, strlen(req->host));
		table_end(t);
	}
	return t->store.failed ? nv_err_set(err, NV_ENOMEM, HINT_LIMITS,
					    "sigv4: headers too large")
			       : 0;
}

/* Query parameters the presigner adds: the request may not carry them. */
static const char *const presign_params[] = {
	"X-Amz-Algorithm",      "X-Amz-Credential",
	"X-Amz-Date",           "X-Amz-Expires",
	"X-Amz-SignedHeaders",  "X-Amz-Signature",
	"X-Amz-Security-Token", NULL};

static int collect_query(sigv4_table *t, const char *query, enum sign_mode mode,
			 nv_err *err)
{
	size_t len = query ? strlen(query) : 0, pos = 0;

	if (len > NV_SIGV4_PATH_MAX)
		return nv_err_set(err, NV_EINVAL, HINT_LIMITS,
				  "sigv4: query of %zu bytes is too long", len);
	while (pos < len) {
		const char *piece = query + pos;
		const char *amp = memchr(piece, '&', len - pos);
		size_t n = amp ? (size_t)(amp - piece) : len - pos;
		const char *eq = memchr(piece, '=', n);
		size_t klen = eq ? (size_t)(eq - piece) : n;

		pos += n + 1;
		if (n == 0)
			continue; /* "a=1&&b=2", a trailing '&' */
		if (t->n >= NV_SIGV4_QUERY_PARAMS_MAX)
			return nv_err_set(err, NV_EINVAL, HINT_LIMITS,
					  "sigv4: more than %d query "
					  "parameters",
					  NV_SIGV4_QUERY_PARAMS_MAX);
		table_begin(t);
		encode_canonical(&t->store, piece, klen, 0);
		if (mode == SIGN_QUERY && !t->store.failed &&
		    in_list(presign_params,
			    t->store.data + t->entries[t->n].name_off))
			return nv_err_set(err, NV_EINVAL,
					  "leave it out: the presigner adds "
					  "it",
					  "sigv4: query parameter %s given",
					  t->store.data +
						  t->entries[t->n].name_off);
		table_mid(t);
		if (eq)
			encode_canonical(&t->store, eq + 1, n - klen - 1, 0);
		table_end(t);
	}
	return t->store.failed ? nv_err_set(err, NV_ENOMEM, HINT_LIMITS,
					    "sigv4: query too large")
			       : 0;
}

/* ---- signing -------------------------------------------------------- */

int nv_sigv4_signing_key(const unsigned char *secret, size_t secret_len,
			 const char *date8, const char *region,
			 const char *service, unsigned char out[32],
			 nv_err *err)
{
	unsigned char key[4 + NV_SIGV4_SECRET_MAX];
	unsigned char k_date[32], k_region[32], k_service[32];
	int rc = 0;

	if (!secret || secret_len == 0 || secret_len > NV_SIGV4_SECRET_MAX)
		return nv_err_set(err, NV_EINVAL, HINT_CREDENTIAL,
				  "sigv4: secret key missing or too long");
	if (!date8 || strlen(date8) != 8 || strspn(date8, "0123456789") != 8)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "sigv4: date must be YYYYMMDD");
	if (!valid_scope_part(region) || !valid_scope_part(service))
		return nv_err_set(err, NV_EINVAL, "check the profile's region",
				  "sigv4: bad region or service name");
	memcpy(key, "AWS4", 4);
	memcpy(key + 4, secret, secret_len);
	if (hmac_sha256(key, 4 + secret_len, date8, 8, k_date) ||
	    hmac_sha256(k_date, 32, region, strlen(region), k_region) ||
	    hmac_sha256(k_region, 32, service, strlen(service), k_service) ||
	    hmac_sha256(k_service, 32, "aws4_request", 12, out)) {
		OPENSSL_cleanse(out, 32);
		rc = nv_err_set(err, NV_EFAILED, NULL,
				"sigv4: HMAC-SHA256 failed");
	}
	OPENSSL_cleanse(key, sizeof(key));
	OPENSSL_cleanse(k_date, sizeof(k_date));
	OPENSSL_cleanse(k_region, sizeof(k_region));
	OPENSSL_cleanse(k_service, sizeof(k_service));
	return rc;
}

/* hex HMAC(signing key, data) */
static int sign_with_key(const nv_sigv4_params *p, const char *date8,
			 const void *data, size_t len,
			 char out[NV_SIGV4_HEX_LEN + 1], nv_err *err)
{
	unsigned char key[32], mac[32];
	int rc = nv_sigv4_signing_key(p->secret, p->secret_len, date8,
				      p->region, p->service, key, err);
	if (rc)
		return rc;
	if (hmac_sha256(key, 32, data, len, mac))
		rc = nv_err_set(err, NV_EFAILED, NULL,
				"sigv4: HMAC-SHA256 failed");
	else
		to_hex(mac, 32, out);
	OPENSSL_cleanse(key, sizeof(key));
	OPENSSL_cleanse(mac, sizeof(mac));
	return rc;
}

void nv_sigv4_result_init(nv_sigv4_result *r)
{
	memset(r, 0, sizeof(*r));
	nv_buf_init(&r->canonical_request, NV_SIGV4_OUTPUT_MAX);
	nv_buf_init(&r->string_to_sign, NV_SIGV4_OUTPUT_MAX);
	for (int i = 0; i < NV_SIGV4_ADDED_MAX; i++)
		nv_buf_init(&r->headers[i], NV_SIGV4_OUTPUT_MAX);
	nv_buf_init(&r->query, NV_SIGV4_OUTPUT_MAX);
}

static void result_reset(nv_sigv4_result *r)
{
	buf_wipe(&r->canonical_request);
	buf_wipe(&r->string_to_sign);
	for (int i = 0; i < NV_SIGV4_ADDED_MAX; i++)
		buf_wipe(&r->headers[i]);
	buf_wipe(&r->query);
	r->nheaders = 0;
	r->signature[0] = r->amz_date[0] = r->payload_hash[0] = '\0';
}

void nv_sigv4_result_free(nv_sigv4_result *r)
{
	if (!r)
		return;
	result_reset(r);
	nv_buf_free(&r->canonical_request);
	nv_buf_free(&r->string_to_sign);
	for (int i = 0; i < NV_SIGV4_ADDED_MAX; i++)
		nv_buf_free(&r->headers[i]);
	nv_buf_free(&r->query);
}

int nv_sigv4_params_from_secret(nv_sigv4_params *p, const nv_secret *s,
				nv_err *err)
{
	const nv_secret_field *id, *key, *token;

	if (!s || s->kind != NV_SECRET_S3)
		return nv_err_set(err, NV_EINVAL, HINT_CREDENTIAL,
				  "sigv4: credential is not of kind s3");
	id = nv_secret_get(s, "access_key_id");
	key = nv_secret_get(s, "secret_access_key");
	token = nv_secret_get(s, "session_token");
	if (!id || !key || id->len == 0 || key->len == 0)
		return nv_err_set(err, NV_EINVAL, HINT_CREDENTIAL,
				  "sigv4: credential '%s' lacks a key",
				  s->name);
	p->access_key_id = (const char *)id->value;
	p->secret = key->value;
	p->secret_len = key->len;
	p->session_token =
		token && token->len ? (const char *)token->value : NULL;
	return 0;
}

static int check_params(const nv_sigv4_request *req, const nv_sigv4_params *p,
			enum sign_mode mode, nv_err *err)
{
	size_t mlen = req->method ? strlen(req->method) : 0;

	if (mlen == 0 || mlen > METHOD_MAX)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "sigv4: missing or bad method");
	for (size_t i = 0; i < mlen; i++)
		if (!is_tchar((unsigned char)req->method[i]))
			return nv_err_set(err, NV_EINVAL, NULL,
					  "sigv4: bad method");
	if (!valid_access_key(p->access_key_id))
		return nv_err_set(err, NV_EINVAL, HINT_CREDENTIAL,
				  "sigv4: missing or bad access key id");
	if (!p->secret || p->secret_len == 0 ||
	    p->secret_len > NV_SIGV4_SECRET_MAX)
		return nv_err_set(err, NV_EINVAL, HINT_CREDENTIAL,
				  "sigv4: missing or too long secret key");
	if (p->session_token && !valid_token(p->session_token))
		return nv_err_set(err, NV_EINVAL, HINT_CREDENTIAL,
				  "sigv4: bad session token");
	if (!valid_scope_part(p->region) || !valid_scope_part(p->service))
		return nv_err_set(err, NV_EINVAL, "check the profile's region",
				  "sigv4: bad region or service name");
	if (mode == SIGN_QUERY &&
	    (p->expires < 1 || p->expires > NV_SIGV4_EXPIRES_MAX))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "sigv4: expiry %d s not in 1..%d", p->expires,
				  NV_SIGV4_EXPIRES_MAX);
	if (req->payload_hash && !valid_payload_hash(req->payload_hash))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "sigv4: bad payload hash");
	if (!req->body && req->body_len)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "sigv4: body length without a body");
	return 0;
}

/* One signing in progress: what the steps of sign() share. */
struct signing {
	nv_sigv4_result *r;
	const nv_sigv4_request *req;
	const nv_sigv4_params *p;
	enum sign_mode mode;
	int is_s3;
	const char *token;
	int sign_token; /* the token is signed, not only sent */
	char date8[9];
	char scope[3 * SCOPE_PART_MAX];
	sigv4_table *headers, *query;
	nv_buf signed_names;
};

/* The payload's hash: the caller's, UNSIGNED-PAYLOAD for a presigned S3
 * request without a body, or the body's sha256. */
static int payload_hash(struct signing *s, nv_err *err)
{
	const nv_sigv4_request *req = s->req;
	nv_sigv4_result *r = s->r;

	if (req->payload_hash)
		snprintf(r->payload_hash, sizeof(r->payload_hash), "%s",
			 req->payload_hash);
	else if (s->mode == SIGN_QUERY && s->is_s3 && !req->body)
		snprintf(r->payload_hash, sizeof(r->payload_hash), "%s",
			 NV_SIGV4_UNSIGNED_PAYLOAD);
	else
		return nv_sha256_bytes(req->body ? req->body : "",
				       req->body_len, r->payload_hash, err);
	return 0;
}

/* Headers: the request's, then the signer's; sorted, and their names
 * listed once each in signed_names. */
static int signed_headers(struct signing *s, nv_err *err)
{
	sigv4_table *headers = s->headers;
	int rc;

	rc = collect_headers(headers, s->req, err);
	if (rc)
		return rc;
	if (s->mode == SIGN_HEADERS) {
		table_add(headers, "x-amz-date", s->r->amz_date, 0);
		if (s->p->add_content_sha256 || s->is_s3)
			table_add(headers, "x-amz-content-sha256",
				  s->r->payload_hash, 0);
		if (s->sign_token)
			table_add(headers, "x-amz-security-token", s->token, 0);
	}
	table_sort(headers, compare_headers);
	for (size_t i = 0; i < headers->n; i++) {
		if (i && strcmp(headers->entries[i].name,
				headers->entries[i - 1].name) == 0)
			continue;
		if (s->signed_names.len)
			nv_buf_append(&s->signed_names, ";", 1);
		nv_buf_puts(&s->signed_names, headers->entries[i].name);
	}
	return 0;
}

/* Query: the request's, then the presigner's (unsorted yet). */
static int signed_query(struct signing *s, nv_err *err)
{
	const nv_sigv4_params *p = s->p;
	sigv4_table *query = s->query;
	char credential[ACCESS_KEY_MAX + sizeof(s->scope) + 2];
	char expires[16];
	int rc;

	rc = collect_query(query, s->req->query, s->mode, err);
	if (rc || s->mode != SIGN_QUERY)
		return rc;
	snprintf(credential, sizeof(credential), "%s/%s", p->access_key_id,
		 s->scope);
	snprintf(expires, sizeof(expires), "%d", p->expires);
	table_add(query, "X-Amz-Algorithm", ALGORITHM, 1);
	table_add(query, "X-Amz-Credential", credential, 1);
	table_add(query, "X-Amz-Date", s->r->amz_date, 1);
	table_add(query, "X-Amz-Expires", expires, 1);
	if (!s->signed_names.failed)
		table_add(query, "X-Amz-SignedHeaders", s->signed_names.data,
			  1);
	if (s->sign_token)
		table_add(query, "X-Amz-Security-Token", s->token, 1);
	return 0;
}

/* The canonical request, into r->canonical_request. */
static int canonical_request(struct signing *s, nv_err *err)
{
	const sigv4_table *headers = s->headers, *query = s->query;
	nv_buf *cr = &s->r->canonical_request;
	int rc;

	nv_buf_puts(cr, s->req->method);
	nv_buf_append(cr, "\n", 1);
	rc = canonical_uri(cr, s->req->path, s->p->normalize_path,
			   s->p->encode_path_once || s->is_s3, err);
	if (rc)
		return rc;
	nv_buf_append(cr, "\n", 1);
	for (size_t i = 0; i < query->n; i++)
		nv_buf_printf(cr, "%s%s=%s", i ? "&" : "",
			      query->entries[i].name, query->entries[i].value);
	nv_buf_append(cr, "\n", 1);
	for (size_t i = 0; i < headers->n; i++) {
		const sigv4_entry *e = &headers->entries[i];
		int first = i == 0 || strcmp(e->name, e[-1].name) != 0;
		int last =
			i + 1 == headers->n || strcmp(e->name, e[1].name) != 0;
		if (first) {
			nv_buf_puts(cr, e->name);
			nv_buf_append(cr, ":", 1);
		} else {
			nv_buf_append(cr, ",", 1);
		}
		nv_buf_puts(cr, e->value);
		if (last)
			nv_buf_append(cr, "\n", 1);
	}
	nv_buf_printf(cr, "\n%s\n%s", s->signed_names.data, s->r->payload_hash);
	if (cr->failed)
		return nv_err_set(err, NV_ENOMEM, HINT_LIMITS,
				  "sigv4: canonical request too large");
	return 0;
}

/* The string to sign, then the signature. */
static int string_to_sign(struct signing *s, nv_err *err)
{
	nv_sigv4_result *r = s->r;
	char cr_hash[NV_SIGV4_HEX_LEN + 1];
	int rc;

	rc = nv_sha256_bytes(r->canonical_request.data,
			     r->canonical_request.len, cr_hash, err);
	if (rc)
		return rc;
	nv_buf_printf(&r->string_to_sign, ALGORITHM "\n%s\n%s\n%s", r->amz_date,
		      s->scope, cr_hash);
	if (r->string_to_sign.failed)
		return nv_err_set(err, NV_ENOMEM, NULL, "sigv4: out of memory");
	return sign_with_key(s->p, s->date8, r->string_to_sign.data,
			     r->string_to_sign.len, r->signature, err);
}

/* What goes on the wire: the headers to add, or the presigned query. */
static int wire_form(struct signing *s, nv_err *err)
{
	nv_sigv4_result *r = s->r;
	const char *token = s->token;
	int failed = 0;

	if (s->mode == SIGN_HEADERS) {
		nv_buf *h = r->headers;
		nv_buf_printf(&h[r->nheaders++], "X-Amz-Date: %s", r->amz_date);
		if (s->p->add_content_sha256 || s->is_s3)
			nv_buf_printf(&h[r->nheaders++],
				      "X-Amz-Content-Sha256: %s",
				      r->payload_hash);
		if (token)
			nv_buf_printf(&h[r->nheaders++],
				      "X-Amz-Security-Token: %s", token);
		nv_buf_printf(&h[r->nheaders++],
			      "Authorization: " ALGORITHM " Credential=%s/%s, "
			      "SignedHeaders=%s, Signature=%s",
			      s->p->access_key_id, s->scope,
			      s->signed_names.data, r->signature);
		for (int i = 0; i < r->nheaders; i++)
			failed |= h[i].failed;
	} else {
		nv_buf *q = &r->query;
		for (size_t i = 0; i < s->query->n; i++)
			nv_buf_printf(q, "%s=%s&", s->query->entries[i].name,
				      s->query->entries[i].value);
		nv_buf_printf(q, "X-Amz-Signature=%s", r->signature);
		if (token && !s->sign_token) {
			nv_buf_puts(q, "&X-Amz-Security-Token=");
			nv_sigv4_uri_encode(q, token, strlen(token), 0);
		}
		failed = q->failed;
	}
	if (failed)
		return nv_err_set(err, NV_ENOMEM, HINT_LIMITS,
				  "sigv4: signed request too large");
	return 0;
}

static int sign(nv_sigv4_result *r, const nv_sigv4_request *req,
		const nv_sigv4_params *p, enum sign_mode mode, nv_err *err)
{
	struct signing s;
	int rc;

	memset(&s, 0, sizeof(s));
	s.r = r;
	s.req = req;
	s.p = p;
	s.mode = mode;
	s.token = p->session_token;
	s.sign_token = s.token && !p->omit_session_token;
	nv_buf_init(&s.signed_names, NV_SIGV4_OUTPUT_MAX);
	result_reset(r);
	rc = check_params(req, p, mode, err);
	if (!rc)
		rc = format_time(p->time, s.date8, r->amz_date, err);
	if (rc)
		goto done;
	snprintf(s.scope, sizeof(s.scope), "%s/%s/%s/aws4_request", s.date8,
		 p->region, p->service);
	s.is_s3 = strcmp(p->service, "s3") == 0;
	rc = payload_hash(&s, err);
	if (rc)
		goto done;
	s.headers = malloc(sizeof(*s.headers));
	s.query = malloc(sizeof(*s.query));
	if (!s.headers || !s.query) {
		rc = nv_err_set(err, NV_ENOMEM, NULL, "sigv4: out of memory");
		goto done;
	}
	table_init(s.headers);
	table_init(s.query);
	rc = signed_headers(&s, err);
	if (!rc)
		rc = signed_query(&s, err);
	if (rc)
		goto done;
	if (s.headers->store.failed || s.query->store.failed ||
	    s.signed_names.failed) {
		rc = nv_err_set(err, NV_ENOMEM, HINT_LIMITS,
				"sigv4: request too large to sign");
		goto done;
	}
	table_sort(s.query, compare_query);
	rc = canonical_request(&s, err);
	if (!rc)
		rc = string_to_sign(&s, err);
	if (!rc)
		rc = wire_form(&s, err);
done:
	if (s.headers)
		table_free(s.headers);
	if (s.query)
		table_free(s.query);
	free(s.headers);
	free(s.query);
	nv_buf_free(&s.signed_names);
	if (rc)
		result_reset(r);
	return rc;
}

int nv_sigv4_sign_headers(nv_sigv4_result *result, const nv_sigv4_request *req,
			  const nv_sigv4_params *params, nv_err *err)
{
	return sign(result, req, params, SIGN_HEADERS, err);
}

int nv_sigv4_presign(nv_sigv4_result *result, const nv_sigv4_request *req,
		     const nv_sigv4_params *params, nv_err *err)
{
	return sign(result, req, params, SIGN_QUERY, err);
}

int nv_sigv4_post_policy_signature(nv_buf *policy_b64,
				   char signature[NV_SIGV4_HEX_LEN + 1],
				   const nv_sigv4_params *p,
				   const char *policy_json, size_t len,
				   nv_err *err)
{
	char date8[9], amz_date[17];
	unsigned char *b64;
	size_t start = policy_b64->len;
	int n, rc;

	if (!policy_json || len == 0 || len > NV_SIGV4_POLICY_MAX)
		return nv_err_set(err, NV_EINVAL, HINT_LIMITS,
				  "sigv4: POST policy empty or too long");
	rc = format_time(p->time, date8, amz_date, err);
	if (rc)
		return rc;
	b64 = malloc(4 * ((len + 2) / 3) + 1);
	if (!b64)
		return nv_err_set(err, NV_ENOMEM, NULL, "sigv4: out of memory");
	n = EVP_EncodeBlock(b64, (const unsigned char *)policy_json, (int)len);
	if (n < 0 || nv_buf_append(policy_b64, b64, (size_t)n)) {
		free(b64);
		return nv_err_set(err, NV_ENOMEM, HINT_LIMITS,
				  "sigv4: POST policy too large");
	}
	free(b64);
	rc = sign_with_key(p, date8, policy_b64->data + start,
			   policy_b64->len - start, signature, err);
	if (rc)
		buf_truncate(policy_b64, start);
	return rc;
}
