/* The pure-C pieces of the registry protocol (OCI distribution spec, with
 * Docker's token authentication), parsed from what a registry or its token
 * service sends, so they can be unit-tested and fuzzed without a server:
 * the WWW-Authenticate challenge, the token answer, the registry's error
 * body, and the scope strings a client asks for. No Lua, no network. */
#ifndef NV_IMAGE_PROTOCOL_H
#define NV_IMAGE_PROTOCOL_H

#include <stddef.h>

#include "core/nv_err.h"
#include "creds/secret.h"

#define NV_REG_REALM_MAX      1024
#define NV_REG_SERVICE_MAX    256
#define NV_REG_SCOPE_MAX      1024
#define NV_REG_TOKEN_BODY_MAX ((size_t)256 * 1024) /* a token answer */
#define NV_REG_TOKEN_DEFAULT_EXPIRY                                            \
	60 /* seconds, when expires_in is absent                               \
	    */

/* One challenge of a WWW-Authenticate header. */
typedef struct nv_reg_challenge {
	char scheme[16];                  /* lowercase: "bearer", "basic" */
	char realm[NV_REG_REALM_MAX];     /* "" when absent */
	char service[NV_REG_SERVICE_MAX]; /* bearer */
	char scope[NV_REG_SCOPE_MAX];     /* bearer, may hold several,
					     space-separated */
	char error[64]; /* "insufficient_scope", "invalid_token" */
} nv_reg_challenge;

/* Parses the first challenge of header: scheme, then auth-params
 * (token = token / quoted-string, separated by commas, RFC 7235), up to
 * the next scheme. Unknown params are ignored; a value longer than its
 * field is NV_EINVAL (never cut: a cut realm would be another URL).
 * A malformed header is NV_EINVAL. */
int nv_reg_challenge_parse(nv_reg_challenge *out, const char *header,
			   nv_err *err);

/* Reads a token service's JSON answer ({"token": ...} or
 * {"access_token": ...}, "expires_in" seconds, default
 * NV_REG_TOKEN_DEFAULT_EXPIRY) into a new bearer secret named name, that
 * expires at now + expires_in. The parsed copies of the token are wiped.
 * A body without a token, or over NV_REG_TOKEN_BODY_MAX: NV_EBACKEND. */
int nv_reg_token_parse(const char *body, size_t len, const char *name,
		       double now, nv_secret **out, nv_err *err);

/* The first error of a registry error body ({"errors":[{"code":...,
 * "message":...}]}): code and message copied, bounded and restricted to
 * printable ASCII. Both "" when the body is not such a document. */
void nv_reg_error_parse(const char *body, size_t len, char *code,
			size_t code_cap, char *message, size_t message_cap);

/* What a user should check for a registry error code (UNAUTHORIZED,
 * DENIED, NAME_UNKNOWN, MANIFEST_UNKNOWN, BLOB_UNKNOWN, ...), or NULL. */
const char *nv_reg_error_hint(const char *code);

/* Wipes every string (values and member names) of a parsed cJSON document
 * that may hold a secret, before cJSON_Delete frees it. */
struct cJSON;
void nv_reg_json_cleanse(struct cJSON *node);

/* The end of a parse that made secret s from doc: on rc 0 announces s and
 * hands it to *out; then frees what is left (s on an error, and doc with
 * its strings wiped). Returns rc. */
int nv_reg_secret_finish(int rc, nv_secret *s, struct cJSON *doc,
			 nv_secret **out);

/* "repository:NAME:ACTIONS" into out (NV_ENOMEM when it does not fit). */
int nv_reg_scope(char *out, size_t cap, const char *repository,
		 const char *actions);

#endif
