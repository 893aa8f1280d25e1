/* Registry protocol parsing (see protocol.h). Everything here reads bytes
 * from a server that may be hostile: fixed-size outputs, no value ever cut
 * silently, JSON bounded before cJSON sees it. */
#include "image/protocol.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <openssl/crypto.h>

static const char HINT_CHALLENGE[] =
	"the registry sent a WWW-Authenticate header navette cannot read; "
	"check the registry's address";

static int is_tchar(char c)
{
	/* c != 0 first: strchr finds the terminator of its own string */
	return c != '\0' &&
	       (isalnum((unsigned char)c) || strchr("!#$%&'*+-.^_`|~", c));
}

static const char *skip_ows(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* Copies a token or quoted-string at *pp into out[cap]; -1 on a malformed
 * value, -2 when it does not fit. */
static int read_value(const char **pp, char *out, size_t cap)
{
	const char *p = *pp;
	size_t n = 0;

	if (*p == '"') {
		p++;
		while (*p && *p != '"') {
			if (*p == '\\') {
				p++;
				if (!*p)
					return -1;
			}
			if ((unsigned char)*p < 0x20 && *p != '\t')
				return -1;
			if (n + 1 >= cap)
				return -2;
			out[n++] = *p++;
		}
		if (*p != '"')
			return -1;
		p++;
	} else {
		while (is_tchar(*p)) {
			if (n + 1 >= cap)
				return -2;
			out[n++] = *p++;
		}
		if (n == 0)
			return -1;
	}
	out[n] = '\0';
	*pp = p;
	return 0;
}

int nv_reg_challenge_parse(nv_reg_challenge *out, const char *header,
			   nv_err *err)
{
	const char *p;
	size_t n = 0;

	memset(out, 0, sizeof(*out));
	if (!header)
		return nv_err_set(err, NV_EINVAL, HINT_CHALLENGE,
				  "no WWW-Authenticate challenge");
	p = skip_ows(header);
	while (is_tchar(*p)) {
		if (n + 1 >= sizeof(out->scheme))
			return nv_err_set(err, NV_EINVAL, HINT_CHALLENGE,
					  "authentication scheme too long");
		out->scheme[n++] = (char)tolower((unsigned char)*p++);
	}
	out->scheme[n] = '\0';
	if (n == 0 || (*p && *p != ' ' && *p != '\t'))
		return nv_err_set(err, NV_EINVAL, HINT_CHALLENGE,
				  "malformed WWW-Authenticate challenge");
	for (;;) {
		char name[32], value[NV_REG_REALM_MAX], *dst = NULL;
		const char *start;
		size_t cap = 0, k = 0;
		int rc;

		p = skip_ows(p);
		while (*p == ',')
			p = skip_ows(p + 1);
		if (!*p)
			break;
		start = p;
		while (is_tchar(*p) && k + 1 < sizeof(name)) {
			name[k] = (char)tolower((unsigned char)*p);
			k++;
			p++;
		}
		name[k] = '\0';
		if (is_tchar(*p)) { /* a param name this long is not ours */
			while (is_tchar(*p))
				p++;
			name[0] = '\0';
		}
		p = skip_ows(p);
		if (*p != '=' || p == start) {
			/* the next challenge (or a token68): stop here */
			if (p == start)
				return nv_err_set(err, NV_EINVAL,
						  HINT_CHALLENGE,
						  "malformed WWW-Authenticate "
						  "challenge");
			break;
		}
		p = skip_ows(p + 1);
		rc = read_value(&p, value, sizeof(value));
		if (rc == -1)
			return nv_err_set(err, NV_EINVAL, HINT_CHALLENGE,
					  "malformed value of '%s' in the "
					  "WWW-Authenticate challenge",
					  name);
		if (strcmp(name, "realm") == 0) {
			dst = out->realm;
			cap = sizeof(out->realm);
		} else if (strcmp(name, "service") == 0) {
			dst = out->service;
			cap = sizeof(out->service);
		} else if (strcmp(name, "scope") == 0) {
			dst = out->scope;
			cap = sizeof(out->scope);
		} else if (strcmp(name, "error") == 0) {
			dst = out->error;
			cap = sizeof(out->error);
		}
		if (dst) {
			if (rc == -2 || strlen(value) >= cap)
				return nv_err_set(err, NV_EINVAL,
						  HINT_CHALLENGE,
						  "the '%s' of the "
						  "WWW-Authenticate challenge "
						  "is too long",
						  name);
			memcpy(dst, value, strlen(value) + 1);
		}
		p = skip_ows(p);
		if (*p && *p != ',')
			return nv_err_set(err, NV_EINVAL, HINT_CHALLENGE,
					  "malformed WWW-Authenticate "
					  "challenge after '%s'",
					  name);
	}
	return 0;
}

static void cleanse_json(cJSON *node, int depth)
{
	for (; node && depth < 1100; node = node->next) {
		if (node->valuestring)
			OPENSSL_cleanse(node->valuestring,
					strlen(node->valuestring));
		if (node->string)
			OPENSSL_cleanse(node->string, strlen(node->string));
		cleanse_json(node->child, depth + 1);
	}
}

void nv_reg_json_cleanse(struct cJSON *node)
{
	cleanse_json(node, 0);
}

int nv_reg_secret_finish(int rc, nv_secret *s, struct cJSON *doc,
			 nv_secret **out)
{
	if (!rc) {
		nv_secret_announce(s);
		*out = s;
		s = NULL;
	}
	nv_secret_free(s);
	nv_reg_json_cleanse(doc);
	cJSON_Delete(doc);
	return rc;
}

int nv_reg_token_parse(const char *body, size_t len, const char *name,
		       double now, nv_secret **out, nv_err *err)
{
	const cJSON *tok, *exp;
	nv_secret *s = NULL;
	double expires_in = NV_REG_TOKEN_DEFAULT_EXPIRY;
	cJSON *doc;
	int rc;

	*out = NULL;
	if (!body || len == 0 || len > NV_REG_TOKEN_BODY_MAX)
		return nv_err_set(err, NV_EBACKEND,
				  "check the registry's token service",
				  "the token service sent %s answer",
				  len ? "an oversized" : "an empty");
	doc = cJSON_ParseWithLength(body, len);
	if (!doc || !cJSON_IsObject(doc)) {
		cJSON_Delete(doc);
		return nv_err_set(err, NV_EBACKEND,
				  "check the registry's token service",
				  "the token service's answer is not a JSON "
				  "object");
	}
	tok = cJSON_GetObjectItemCaseSensitive(doc, "token");
	if (!cJSON_IsString(tok) || !tok->valuestring[0])
		tok = cJSON_GetObjectItemCaseSensitive(doc, "access_token");
	exp = cJSON_GetObjectItemCaseSensitive(doc, "expires_in");
	if (cJSON_IsNumber(exp) && exp->valuedouble > 0)
		expires_in = exp->valuedouble;
	if (!cJSON_IsString(tok) || !tok->valuestring[0]) {
		rc = nv_err_set(err, NV_EBACKEND,
				"check the registry's token service",
				"the token service's answer holds no token");
		goto out;
	}
	s = nv_secret_new(name, NV_SECRET_BEARER, "minted", err);
	if (!s) {
		rc = err ? err->code : NV_ENOMEM;
		goto out;
	}
	rc = nv_secret_set(s, "token", tok->valuestring,
			   strlen(tok->valuestring), err);
	if (rc)
		goto out;
	s->loaded_at = now;
	s->created_at = now;
	s->expires_at = now + expires_in;
	snprintf(s->origin, sizeof(s->origin), "registry token service");
out:
	return nv_reg_secret_finish(rc, s, doc, out);
}

static void copy_printable(char *dst, size_t cap, const char *src)
{
	size_t n = 0;

	if (!cap)
		return;
	for (; src && *src && n + 1 < cap; src++)
		dst[n++] = ((unsigned char)*src >= 0x20 &&
			    (unsigned char)*src < 0x7f)
				   ? *src
				   : '?';
	dst[n] = '\0';
}

void nv_reg_error_parse(const char *body, size_t len, char *code,
			size_t code_cap, char *message, size_t message_cap)
{
	const cJSON *errors, *first, *c, *m;
	cJSON *doc;

	if (code_cap)
		code[0] = '\0';
	if (message_cap)
		message[0] = '\0';
	if (!body || len == 0 || len > NV_REG_TOKEN_BODY_MAX)
		return;
	doc = cJSON_ParseWithLength(body, len);
	if (!doc)
		return;
	errors = cJSON_GetObjectItemCaseSensitive(doc, "errors");
	first = cJSON_IsArray(errors) ? cJSON_GetArrayItem(errors, 0) : NULL;
	if (cJSON_IsObject(first)) {
		c = cJSON_GetObjectItemCaseSensitive(first, "code");
		m = cJSON_GetObjectItemCaseSensitive(first, "message");
		if (cJSON_IsString(c))
			copy_printable(code, code_cap, c->valuestring);
		if (cJSON_IsString(m))
			copy_printable(message, message_cap, m->valuestring);
	} else {
		/* token services answer {"details": "..."} or {"error": ...} */
		m = cJSON_GetObjectItemCaseSensitive(doc, "details");
		if (!cJSON_IsString(m))
			m = cJSON_GetObjectItemCaseSensitive(doc, "error");
		if (cJSON_IsString(m))
			copy_printable(message, message_cap, m->valuestring);
	}
	cJSON_Delete(doc);
}

const char *nv_reg_error_hint(const char *code)
{
	static const struct {
		const char *code, *hint;
	} hints[] = {
		{"UNAUTHORIZED", "check the registry credential (navette.lua "
				 "credentials, or ~/.docker/config.json)"},
		{"DENIED", "the credential lacks the rights for this "
			   "repository: pull to read, push to write"},
		{"NAME_UNKNOWN", "check the repository name; it may not exist "
				 "on this registry yet"},
		{"NAME_INVALID", "check the repository name"},
		{"MANIFEST_UNKNOWN", "check the tag or digest: this image is "
				     "not in the repository"},
		{"MANIFEST_INVALID",
		 "the registry refused the manifest; it may "
		 "not support this media type"},
		{"MANIFEST_BLOB_UNKNOWN", "a blob of the manifest is missing "
					  "from the repository"},
		{"BLOB_UNKNOWN", "the blob is not in this repository"},
		{"BLOB_UPLOAD_UNKNOWN",
		 "the upload session expired; try again"},
		{"BLOB_UPLOAD_INVALID", "the upload was refused; try again"},
		{"DIGEST_INVALID", "the bytes sent do not match their digest"},
		{"SIZE_INVALID", "the bytes sent do not match their size"},
		{"TOOMANYREQUESTS", "the registry is rate-limiting: wait, or "
				    "authenticate to get a higher limit"},
		{"UNSUPPORTED", "the registry does not support this operation"},
	};
	size_t i;

	if (!code)
		return NULL;
	for (i = 0; i < sizeof(hints) / sizeof(hints[0]); i++)
		if (strcmp(code, hints[i].code) == 0)
			return hints[i].hint;
	return NULL;
}

int nv_reg_scope(char *out, size_t cap, const char *repository,
		 const char *actions)
{
	int n = snprintf(out, cap, "repository:%s:%s", repository, actions);

	if (n < 0 || (size_t)n >= cap) {
		if (cap)
			out[0] = '\0';
		return NV_ENOMEM;
	}
	return 0;
}
