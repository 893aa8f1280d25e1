/* Secrets in memory: a named credential holding up to a few fields (an S3
 * key pair and its session token, a user and password, a key). Values live
 * only in C memory, are wiped with OPENSSL_cleanse when freed, and are
 * compared in constant time. Metadata (kind, source, times) is public.
 * Pure C. */
#ifndef NV_SECRET_H
#define NV_SECRET_H

#include <stddef.h>
#include <stdint.h>

#include "core/nv_err.h"

#define NV_SECRET_NAME_MAX   64
#define NV_SECRET_FIELDS_MAX 4
#define NV_SECRET_VALUE_MAX  ((size_t)64 * 1024)

typedef enum nv_secret_kind {
	NV_SECRET_S3 = 1,  /* access_key_id, secret_access_key, session_token */
	NV_SECRET_BEARER,  /* token */
	NV_SECRET_BASIC,   /* user, password */
	NV_SECRET_HS256,   /* key */
	NV_SECRET_PEM,     /* key (a PEM private key) */
	NV_SECRET_SSH_CERT /* key (OpenSSH private key), certificate (the
			    * ...-cert-v01@openssh.com line; optional) */
} nv_secret_kind;

typedef struct nv_secret_field {
	char name[32];
	unsigned char *value; /* NUL-terminated for convenience */
	size_t len;
} nv_secret_field;

typedef struct nv_secret {
	char name[NV_SECRET_NAME_MAX + 1];
	nv_secret_kind kind;
	char source[16];   /* env, file, keychain, command, minted */
	char origin[256];  /* variable names, path, service... never a value */
	double loaded_at;  /* when navette read it */
	double created_at; /* when it was made, if known (file mtime), or 0 */
	double expires_at; /* 0: no expiry known */
	nv_secret_field fields[NV_SECRET_FIELDS_MAX];
	int nfields;
} nv_secret;

const char *nv_secret_kind_name(nv_secret_kind kind);
/* "s3", "bearer", "basic", "hs256", "pem", "ssh-cert" -> kind; 0 when
 * unknown. */
nv_secret_kind nv_secret_kind_parse(const char *name);

/* The field names each kind carries, NULL-terminated; the first
 * `required` of them must be present. */
const char *const *nv_secret_kind_fields(nv_secret_kind kind, int *required);

/* A new, empty secret (caller frees with nv_secret_free). */
nv_secret *nv_secret_new(const char *name, nv_secret_kind kind,
			 const char *source, nv_err *err);

/* Copies value into the named field. */
int nv_secret_set(nv_secret *s, const char *field, const void *value,
		  size_t len, nv_err *err);

/* The field's bytes, or NULL when absent. */
const nv_secret_field *nv_secret_get(const nv_secret *s, const char *field);

/* Whether every required field of the kind is set. */
int nv_secret_complete(const nv_secret *s, nv_err *err);

/* Wipes every value (OPENSSL_cleanse) and frees. NULL is fine. */
void nv_secret_free(nv_secret *s);

/* Constant-time equality of two byte strings (lengths may differ: then
 * unequal, in time depending only on the lengths). */
int nv_secret_equal(const void *a, size_t alen, const void *b, size_t blen);

/* Callback run for every field value as a secret is completed, so the
 * redactor learns it; set once by the runtime. */
typedef void (*nv_secret_observer)(const char *name, const void *value,
				   size_t len);
void nv_secret_set_observer(nv_secret_observer fn);
void nv_secret_announce(const nv_secret *s);

#endif
