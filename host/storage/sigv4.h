/* AWS Signature Version 4 for S3-compatible object stores: the canonical
 * request, the string to sign, the signing key chain and the signature,
 * for Authorization-header signing, presigned (query-string) URLs and
 * browser POST policies. Pure C over OpenSSL; no I/O, no Lua.
 *
 * Canonical URI: with normalize_path, "." and ".." segments and empty
 * segments are removed first (other services; S3 never normalises). Then
 * either every byte but unreserved ones and '/' is %-encoded, so a '%' in
 * the raw path becomes %25 (the "double" encoding of services other than
 * S3), or, for S3 (service "s3" or encode_path_once), the path is taken as
 * already encoded: valid %XX escapes are decoded and encoded again in
 * canonical form, other bytes are encoded once.
 *
 * Secret-derived bytes (the "AWS4"+secret key, every HMAC of the chain, the
 * signing key) are wiped with OPENSSL_cleanse before the calls return.
 * Everything is bounded: header count and sizes, path and query lengths,
 * query parameter count, output sizes. */
#ifndef NV_SIGV4_H
#define NV_SIGV4_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/nv_err.h"
#include "creds/secret.h"

#define NV_SIGV4_HEADERS_MAX      64 /* request headers given by the caller */
#define NV_SIGV4_HEADER_NAME_MAX  256
#define NV_SIGV4_HEADER_VALUE_MAX ((size_t)8 * 1024)
#define NV_SIGV4_PATH_MAX         ((size_t)16 * 1024) /* raw, and query */
#define NV_SIGV4_QUERY_PARAMS_MAX 256
#define NV_SIGV4_SECRET_MAX       512
#define NV_SIGV4_TOKEN_MAX        ((size_t)8 * 1024)
#define NV_SIGV4_EXPIRES_MAX      604800 /* seven days, the S3 limit */
#define NV_SIGV4_OUTPUT_MAX       ((size_t)256 * 1024) /* per output buf */
#define NV_SIGV4_POLICY_MAX       ((size_t)64 * 1024)  /* POST policy JSON */
#define NV_SIGV4_HEX_LEN          64
#define NV_SIGV4_ADDED_MAX        4 /* headers the signer adds */
#define NV_SIGV4_UNSIGNED_PAYLOAD "UNSIGNED-PAYLOAD"

typedef struct nv_sigv4_header {
	const char *name;
	/* May hold folded lines ("a\r\n  b"): whitespace runs collapse. */
	const char *value;
} nv_sigv4_header;

/* The request to sign. Every pointer is the caller's and only read. */
typedef struct nv_sigv4_request {
	const char *method; /* "GET", "PUT"... */
	/* Raw, as in the request line, without the query: may hold
	 * %-escapes and UTF-8. NULL or "": "/". */
	const char *path;
	const char *query; /* raw, without '?'; NULL or "": none */
	/* Signed as "host" when headers holds no Host (one of the two is
	 * required). The HTTP client must send this same value. */
	const char *host;
	const nv_sigv4_header *headers; /* repeated names are joined */
	size_t nheaders;
	const void *body; /* hashed when payload_hash is NULL */
	size_t body_len;
	/* 64 lowercase hex digits, or a literal such as "UNSIGNED-PAYLOAD"
	 * (A-Z, 0-9, '-'). NULL: sha256 of body; except presigning for s3
	 * with no body, where NULL means UNSIGNED-PAYLOAD. */
	const char *payload_hash;
} nv_sigv4_request;

/* Credentials, scope and options. */
typedef struct nv_sigv4_params {
	const char *access_key_id;
	const unsigned char *secret; /* the secret access key */
	size_t secret_len;
	const char *session_token; /* NULL: none */
	const char *region;        /* "us-east-1" */
	const char *service;       /* "s3" */
	int64_t time;              /* seconds since the epoch, UTC */
	int normalize_path;   /* remove dot and empty segments (not for s3) */
	int encode_path_once; /* path already encoded (implied for s3) */
	/* Header signing: add a signed X-Amz-Content-Sha256 header
	 * (implied for s3). */
	int add_content_sha256;
	int expires; /* presigning: X-Amz-Expires, 1..NV_SIGV4_EXPIRES_MAX */
	/* The session token is added after signing, unsigned (some STS
	 * flavours want it so). */
	int omit_session_token;
} nv_sigv4_params;

/* What the signer produced. Initialise with nv_sigv4_result_init, release
 * with nv_sigv4_result_free (which wipes every buffer: they may hold the
 * session token). A result may be reused: each call resets it. */
typedef struct nv_sigv4_result {
	nv_buf canonical_request;
	nv_buf string_to_sign;
	char signature[NV_SIGV4_HEX_LEN + 1];
	char amz_date[17];                       /* 20150830T123600Z */
	char payload_hash[NV_SIGV4_HEX_LEN + 1]; /* as signed */
	/* nv_sigv4_sign_headers: "Name: value" lines to send, in order:
	 * X-Amz-Date, X-Amz-Content-Sha256 (when added), X-Amz-Security-Token
	 * (with a token), Authorization. Ready for nv_http_request.headers. */
	nv_buf headers[NV_SIGV4_ADDED_MAX];
	int nheaders;
	/* nv_sigv4_presign: the whole query string to send, without '?'. */
	nv_buf query;
} nv_sigv4_result;

void nv_sigv4_result_init(nv_sigv4_result *result);
void nv_sigv4_result_free(nv_sigv4_result *result);

/* Points the credential fields of params at an NV_SECRET_S3 secret's
 * access_key_id, secret_access_key and (when present) session_token.
 * params then borrows from s: keep s alive while signing. */
int nv_sigv4_params_from_secret(nv_sigv4_params *params, const nv_secret *s,
				nv_err *err);

/* Signs req for an Authorization header. Fills result (see above). */
int nv_sigv4_sign_headers(nv_sigv4_result *result, const nv_sigv4_request *req,
			  const nv_sigv4_params *params, nv_err *err);

/* Presigns req: the X-Amz-* parameters join the query; result->query is
 * the canonical query, then X-Amz-Signature, then the session token when
 * omit_session_token. Signed headers are the request's own (host...). */
int nv_sigv4_presign(nv_sigv4_result *result, const nv_sigv4_request *req,
		     const nv_sigv4_params *params, nv_err *err);

/* HMAC chain "AWS4"+secret -> date8 (YYYYMMDD) -> region -> service ->
 * "aws4_request". The caller wipes out with OPENSSL_cleanse. */
int nv_sigv4_signing_key(const unsigned char *secret, size_t secret_len,
			 const char *date8, const char *region,
			 const char *service, unsigned char out[32],
			 nv_err *err);

/* Appends data %-encoded as SigV4 wants: unreserved bytes (A-Z a-z 0-9
 * - _ . ~) as they are, every other byte as %XX (uppercase); '/' kept
 * when keep_slash. */
int nv_sigv4_uri_encode(nv_buf *out, const void *data, size_t len,
			int keep_slash);

/* Browser POST upload: appends base64(policy_json) to policy_b64 and
 * writes hex HMAC(signing key, that base64) into signature. The scope
 * comes from params (secret, region, service, time); the policy must carry
 * matching x-amz-credential and x-amz-date conditions. */
int nv_sigv4_post_policy_signature(nv_buf *policy_b64,
				   char signature[NV_SIGV4_HEX_LEN + 1],
				   const nv_sigv4_params *params,
				   const char *policy_json, size_t len,
				   nv_err *err);

#endif
