/* Secrets in memory (see secret.h). */
#include "creds/secret.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

static nv_secret_observer observer;

static const char *const s3_fields[] = {"access_key_id", "secret_access_key",
					"session_token", NULL};
static const char *const bearer_fields[] = {"token", NULL};
static const char *const basic_fields[] = {"user", "password", NULL};
static const char *const key_fields[] = {"key", NULL};
static const char *const ssh_cert_fields[] = {"key", "certificate", NULL};

const char *nv_secret_kind_name(nv_secret_kind kind)
{
	switch (kind) {
	case NV_SECRET_S3: return "s3";
	case NV_SECRET_BEARER: return "bearer";
	case NV_SECRET_BASIC: return "basic";
	case NV_SECRET_HS256: return "hs256";
	case NV_SECRET_PEM: return "pem";
	case NV_SECRET_SSH_CERT: return "ssh-cert";
	}
	return "?";
}

nv_secret_kind nv_secret_kind_parse(const char *name)
{
	static const nv_secret_kind all[] = {
		NV_SECRET_S3,    NV_SECRET_BEARER, NV_SECRET_BASIC,
		NV_SECRET_HS256, NV_SECRET_PEM,    NV_SECRET_SSH_CERT};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (strcmp(name, nv_secret_kind_name(all[i])) == 0)
			return all[i];
	return (nv_secret_kind)0;
}

const char *const *nv_secret_kind_fields(nv_secret_kind kind, int *required)
{
	switch (kind) {
	case NV_SECRET_S3: *required = 2; return s3_fields;
	case NV_SECRET_BEARER: *required = 1; return bearer_fields;
	case NV_SECRET_BASIC: *required = 2; return basic_fields;
	case NV_SECRET_HS256:
	case NV_SECRET_PEM: *required = 1; return key_fields;
	/* the certificate may come later, from the profile's signer */
	case NV_SECRET_SSH_CERT: *required = 1; return ssh_cert_fields;
	}
	*required = 0;
	return NULL;
}

nv_secret *nv_secret_new(const char *name, nv_secret_kind kind,
			 const char *source, nv_err *err)
{
	nv_secret *s;
	int required;

	if (!name[0] || strlen(name) > NV_SECRET_NAME_MAX) {
		nv_err_set(err, NV_EINVAL, NULL,
			   "credential names are 1..%d characters",
			   NV_SECRET_NAME_MAX);
		return NULL;
	}
	if (!nv_secret_kind_fields(kind, &required)) {
		nv_err_set(err, NV_EINVAL,
			   "kinds: s3, bearer, basic, hs256, pem, ssh-cert",
			   "credential %s: unknown kind", name);
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
		return NULL;
	}
	memcpy(s->name, name, strlen(name) + 1);
	s->kind = kind;
	strncpy(s->source, source, sizeof(s->source) - 1);
	return s;
}

int nv_secret_set(nv_secret *s, const char *field, const void *value,
		  size_t len, nv_err *err)
{
	int required, slot = -1;
	const char *const *names = nv_secret_kind_fields(s->kind, &required);

	for (int i = 0; names && names[i]; i++)
		if (strcmp(names[i], field) == 0)
			slot = i;
	if (slot < 0)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "credential %s (%s) has no field '%s'",
				  s->name, nv_secret_kind_name(s->kind), field);
	if (len > NV_SECRET_VALUE_MAX)
		return nv_err_set(err, NV_ENOMEM, NULL,
				  "credential %s: %s is larger than %zu bytes",
				  s->name, field, NV_SECRET_VALUE_MAX);
	nv_secret_field *f = &s->fields[slot];
	if (f->value) {
		OPENSSL_cleanse(f->value, f->len);
		free(f->value);
	}
	f->value = malloc(len + 1);
	if (!f->value)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	memcpy(f->value, value, len);
	f->value[len] = '\0';
	f->len = len;
	snprintf(f->name, sizeof(f->name), "%s", field);
	if (slot + 1 > s->nfields)
		s->nfields = slot + 1;
	return 0;
}

const nv_secret_field *nv_secret_get(const nv_secret *s, const char *field)
{
	for (int i = 0; i < s->nfields; i++)
		if (s->fields[i].value && strcmp(s->fields[i].name, field) == 0)
			return &s->fields[i];
	return NULL;
}

int nv_secret_complete(const nv_secret *s, nv_err *err)
{
	int required;
	const char *const *names = nv_secret_kind_fields(s->kind, &required);

	for (int i = 0; i < required; i++) {
		const nv_secret_field *f = nv_secret_get(s, names[i]);
		if (!f || f->len == 0)
			return nv_err_set(err, NV_EREFUSED,
					  "check the credential's source",
					  "credential %s (%s from %s): %s is "
					  "missing or empty",
					  s->name, nv_secret_kind_name(s->kind),
					  s->source, names[i]);
	}
	return 0;
}

void nv_secret_free(nv_secret *s)
{
	if (!s)
		return;
	for (int i = 0; i < NV_SECRET_FIELDS_MAX; i++) {
		if (s->fields[i].value) {
			OPENSSL_cleanse(s->fields[i].value, s->fields[i].len);
			free(s->fields[i].value);
		}
	}
	OPENSSL_cleanse(s, sizeof(*s));
	free(s);
}

int nv_secret_equal(const void *a, size_t alen, const void *b, size_t blen)
{
	if (alen != blen)
		return 0;
	return CRYPTO_memcmp(a, b, alen) == 0;
}

void nv_secret_set_observer(nv_secret_observer fn)
{
	observer = fn;
}

void nv_secret_announce(const nv_secret *s)
{
	if (!observer)
		return;
	for (int i = 0; i < s->nfields; i++) {
		/* An access key id is an identifier, but it names the key:
		 * masked like the rest. */
		if (strcmp(s->fields[i].name, "user") == 0)
			continue; /* a user name is shown in logs, not masked */
		if (strcmp(s->fields[i].name, "certificate") == 0 &&
		    s->fields[i].value) {
			/* its base64, however the line around it is cut */
			const char *v = (const char *)s->fields[i].value;
			const char *b = strchr(v, ' ');
			size_t n;
			while (b && *b == ' ')
				b++;
			n = b ? strcspn(b, " \t\r\n") : 0;
			if (n)
				observer(s->name, b, n);
			continue;
		}
		if (s->fields[i].value && s->fields[i].len)
			observer(s->name, s->fields[i].value, s->fields[i].len);
	}
}
