/* The redactor (see redact.h).
 *
 * One pass over a window of bytes finds (1) literal secrets with an
 * Aho-Corasick automaton built lazily from every registered secret and its
 * encoded forms, (2) secrets known only by salted fingerprints, with a
 * rolling hash per (salt, length) confirmed by an HMAC, and (3) credential
 * shapes with a scanner called only at a few trigger bytes. Matches become
 * spans; overlapping spans are merged so that no secret byte survives. A pass
 * returns a "safe" offset: bytes before it can no longer be part of a match and
 * are emitted; the rest is kept by the stream and scanned again with the next
 * write. A shape that outgrows NV_REDACT_SHAPE_MAX is masked anyway and a small
 * continuation state drops the rest of it from the next writes, so memory stays
 * bounded.
 *
 * This file holds the registry of secrets, their encoded forms and the
 * environment's allow-list. The automaton is in redact_automaton.c, the
 * fingerprints in redact_fingerprint.c, the shapes in redact_shapes.c, the
 * passes and the streams in redact_stream.c; redact_internal.h is what
 * they share. */
#include "creds/redact.h"
#include "creds/redact_internal.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

/* ---- registry ---- */

void redact_wipe_free(void *p, size_t len)
{
	if (p) {
		OPENSSL_cleanse(p, len);
		free(p);
	}
}

nv_redactor *nv_redactor_new(void)
{
	nv_redactor *r = calloc(1, sizeof(*r));
	pthread_mutexattr_t attr;

	if (!r)
		return NULL;
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
	if (pthread_mutex_init(&r->lock, &attr) != 0) {
		pthread_mutexattr_destroy(&attr);
		free(r);
		return NULL;
	}
	pthread_mutexattr_destroy(&attr);
	return r;
}

void nv_redactor_free(nv_redactor *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nsecrets; i++) {
		free(r->secrets[i].label);
		redact_wipe_free(r->secrets[i].value, r->secrets[i].len);
	}
	free(r->secrets);
	redact_automaton_free(r);
	free(r->salts);
	free(r->fps);
	free(r->groups.v);
	free(r->groups.filter);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

static nv_redactor *global_redactor;
static pthread_once_t global_once = PTHREAD_ONCE_INIT;

static void global_init(void)
{
	global_redactor = nv_redactor_new();
}

nv_redactor *nv_redact_global(void)
{
	pthread_once(&global_once, global_init);
	return global_redactor;
}

int redact_name_ok_n(const char *name, size_t n)
{
	if (n == 0 || n > NV_REDACT_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned c = (unsigned char)name[i];
		if (!is_alnum(c) && !strchr("_.:/-", (int)c))
			return 0;
	}
	return 1;
}

static int name_ok(const char *name)
{
	return name ? redact_name_ok_n(name, strlen(name)) : 0;
}

int nv_redact_add_secret(nv_redactor *r, const char *name, const void *value,
			 size_t len, nv_err *err)
{
	int rc = 0;

	if (!r || !value)
		return nv_err_set(err, NV_EINVAL, NULL, "no redactor or value");
	if (!name_ok(name))
		return nv_err_set(err, NV_EINVAL,
				  "use letters, digits and _.:/- (at most 64)",
				  "bad credential name for the redactor");
	if (len < NV_REDACT_SECRET_MIN)
		return nv_err_set(err, NV_EREFUSED,
				  "a secret must be at least 8 bytes long",
				  "secret '%s' is too short to be masked "
				  "safely (%zu bytes)",
				  name, len);
	if (len > NV_REDACT_SECRET_MAX)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "secret '%s' is longer than %d bytes", name,
				  NV_REDACT_SECRET_MAX);
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < r->nsecrets; i++) {
		if (r->secrets[i].len == len &&
		    CRYPTO_memcmp(r->secrets[i].value, value, len) == 0)
			goto out; /* already masked, under its first name */
	}
	if (r->nsecrets >= SECRETS_MAX) {
		rc = nv_err_set(err, NV_ENOMEM, NULL,
				"too many secrets for the redactor (%d)",
				SECRETS_MAX);
		goto out;
	}
	if (r->nsecrets == r->secrets_cap) {
		size_t cap = r->secrets_cap ? 2 * r->secrets_cap : 16;
		struct secret *p = realloc(r->secrets, cap * sizeof(*p));
		if (!p)
			goto nomem;
		r->secrets = p;
		r->secrets_cap = cap;
	}
	struct secret *s = &r->secrets[r->nsecrets];
	s->label_len = strlen(name) + strlen("<redacted:>");
	s->label = malloc(s->label_len + 1);
	s->value = malloc(len);
	if (!s->label || !s->value) {
		free(s->label);
		free(s->value);
		goto nomem;
	}
	memcpy(s->label, "<redacted:", 10);
	memcpy(s->label + 10, name, s->label_len - 11);
	memcpy(s->label + s->label_len - 1, ">", 2);
	memcpy(s->value, value, len);
	s->len = len;
	r->nsecrets++;
	r->dirty = 1;
out:
	pthread_mutex_unlock(&r->lock);
	return rc;
nomem:
	pthread_mutex_unlock(&r->lock);
	return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
}

size_t redact_locked_count(nv_redactor *r, const size_t *count)
{
	size_t n;

	pthread_mutex_lock(&r->lock);
	n = *count;
	pthread_mutex_unlock(&r->lock);
	return n;
}

size_t nv_redact_secret_count(nv_redactor *r)
{
	return redact_locked_count(r, &r->nsecrets);
}

/* ---- encoded forms of a secret ---- */

static const char b64_std[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64_url[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* The base64 characters fully determined by v when v starts `align` bytes
 * into the encoded stream: the partial characters at both edges depend on
 * the neighbouring bytes (or padding) and are left out, so the core matches
 * padded and unpadded encodings alike. */
static size_t b64_core(const unsigned char *v, size_t n, size_t align,
		       const char *alphabet, char *out)
{
	size_t total = 8 * (align + n), o = 0;

	for (size_t i = (8 * align + 5) / 6; 6 * i + 6 <= total; i++) {
		size_t bit = 6 * i - 8 * align;
		unsigned x = 0;
		for (size_t k = 0; k < 6; k++, bit++)
			x = (x << 1) | ((v[bit >> 3] >> (7 - (bit & 7))) & 1u);
		out[o++] = alphabet[x];
	}
	return o;
}

static int is_unreserved(unsigned c)
{
	return is_alnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

static size_t url_encode(const unsigned char *v, size_t n, const char *hex,
			 char *out)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		if (is_unreserved(v[i])) {
			out[o++] = (char)v[i];
		} else {
			out[o++] = '%';
			out[o++] = hex[v[i] >> 4];
			out[o++] = hex[v[i] & 15];
		}
	}
	return o;
}

typedef int (*redact_variant_fn)(nv_redactor *r, void *ctx,
				 const unsigned char *p, size_t n,
				 int32_t secret);

/* Calls fn for every form of secret `idx` that is matched literally. */
int redact_for_each_variant(nv_redactor *r, int32_t idx, redact_variant_fn fn,
			    void *ctx)
{
	const struct secret *s = &r->secrets[idx];
	/* both percent-encodings side by side: up to 2 x PATTERN_MAX + 1 */
	unsigned char tmp[2 * PATTERN_MAX + 8];
	size_t n;
	int rc = fn(r, ctx, s->value, s->len, idx);

	for (size_t align = 0; align < 3 && rc == 0; align++) {
		n = b64_core(s->value, s->len, align, b64_std, (char *)tmp);
		rc = fn(r, ctx, tmp, n, idx);
		if (rc == 0 && (memchr(tmp, '+', n) || memchr(tmp, '/', n))) {
			n = b64_core(s->value, s->len, align, b64_url,
				     (char *)tmp);
			rc = fn(r, ctx, tmp, n, idx);
		}
	}
	n = url_encode(s->value, s->len, "0123456789ABCDEF", (char *)tmp);
	if (rc == 0 && n != s->len) {
		rc = fn(r, ctx, tmp, n, idx);
		size_t m = url_encode(s->value, s->len, "0123456789abcdef",
				      (char *)tmp + n + 1);
		if (rc == 0 && memcmp(tmp, tmp + n + 1, m) != 0)
			rc = fn(r, ctx, tmp + n + 1, m, idx);
	}
	OPENSSL_cleanse(tmp, sizeof(tmp));
	return rc;
}

/* ---- environment ---- */

static const char *const env_allowed[] = {
	"PATH",
	"HOME",
	"USER",
	"LOGNAME",
	"LANG",
	"LANGUAGE",
	"TZ",
	"TERM",
	"COLORTERM",
	"NO_COLOR",
	"PWD",
	"OLDPWD",
	"SHELL",
	"TMPDIR",
	"HOSTNAME",
	"SHLVL",
	"CUDA_VISIBLE_DEVICES",
	"NVIDIA_VISIBLE_DEVICES",
	"OMP_NUM_THREADS",
	"NAVETTE_JOB_ID",
	"NAVETTE_PROJECT",
	"NAVETTE_COMMIT",
	"NAVETTE_PROFILE",
	"NAVETTE_IMAGE",
	"NAVETTE_PHASE",
};

static int env_allowed_n(const char *name, size_t n)
{
	if (n > 3 && memcmp(name, "LC_", 3) == 0) {
		for (size_t i = 3; i < n; i++)
			if (!is_upper((unsigned char)name[i]) && name[i] != '_')
				return 0;
		return 1;
	}
	for (size_t i = 0; i < sizeof(env_allowed) / sizeof(*env_allowed);
	     i++) {
		if (strlen(env_allowed[i]) == n &&
		    memcmp(env_allowed[i], name, n) == 0)
			return 1;
	}
	return 0;
}

int nv_redact_env_allowed(const char *name)
{
	return name ? env_allowed_n(name, strlen(name)) : 0;
}

int nv_redact_env_line(const char *entry, nv_buf *out)
{
	const char *eq = strchr(entry, '=');

	if (!eq || env_allowed_n(entry, (size_t)(eq - entry)))
		return nv_buf_puts(out, entry);
	if (nv_buf_append(out, entry, (size_t)(eq - entry) + 1) != 0)
		return -1;
	return nv_buf_puts(out, "<hidden>");
}
