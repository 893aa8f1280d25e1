/* A client of one OCI distribution (registry v2) service, pure C over
 * nv_http: ping, authentication, manifests, blobs. No Lua.
 *
 * Authentication follows what the registry asks for on a 401: Basic (the
 * configured user/password), or Bearer tokens from the realm its
 * WWW-Authenticate challenge names, requested for the scope each operation
 * needs ("repository:NAME:pull" to read, "...:pull,push" to write, plus
 * "repository:FROM:pull" for a cross-repository mount), cached per scope
 * until shortly before they expire, and renewed once when the registry
 * answers insufficient_scope or invalid_token. The configured credential
 * goes to the registry's own host only, and to a token realm only when
 * the realm is on the same host (any port), on a host listed in
 * token_hosts, or auth.docker.io for docker.io; otherwise tokens are
 * requested anonymously. Tokens are nv_secrets, never strings.
 *
 * Integrity: every manifest and blob read is hashed and compared with the
 * digest asked for and with Docker-Content-Digest; a mismatch is
 * NV_EREFUSED (a lying or broken server), never returned as data. Every
 * manifest request carries an explicit Accept (NV_OCI_ACCEPT). A pushed
 * manifest's Docker-Content-Digest must be the digest of the bytes sent.
 *
 * Errors carry the registry's error code (MANIFEST_UNKNOWN, DENIED...),
 * its message and a hint: 404 is NV_ENOTFOUND, 401/403 NV_EREFUSED, the
 * rest NV_EBACKEND. Not thread-safe: one client per thread. */
#ifndef NV_IMAGE_REGISTRY_H
#define NV_IMAGE_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/nv_err.h"
#include "creds/secret.h"
#include "image/manifest.h"
#include "image/reference.h"

#define NV_REGISTRY_TOKENS_MAX 32 /* scopes cached at once */
#define NV_REGISTRY_CHUNK_MIN  ((uint64_t)64 * 1024)

/* Progress of a blob upload: done of total bytes of digest. */
typedef void (*nv_registry_progress_fn)(void *payload, const char *digest,
					uint64_t done, uint64_t total);

typedef struct nv_registry_config {
	/* The registry as in a reference: "127.0.0.1:5000", "docker.io". */
	const char *registry;
	/* Basic (user, password) or bearer (token, sent as it is); NULL:
	 * anonymous. Bound to credential_host (NULL: the API host). */
	const nv_secret *credential;
	const char *credential_host;
	/* Other hosts allowed to receive the credential when they are the
	 * token realm (exact host, or host:port). */
	const char *const *token_hosts;
	size_t ntoken_hosts;
	const char *ca_bundle, *pinned_pubkey;
	long connect_timeout_ms, total_timeout_ms; /* 0: nv_http's */
	/* 0: blobs go in one PUT; else PATCH chunks of this size (at least
	 * NV_REGISTRY_CHUNK_MIN), then a closing PUT. */
	uint64_t chunk_size;
	nv_registry_progress_fn progress;
	void *progress_payload;
} nv_registry_config;

/* Counters, for tests and reports. */
typedef struct nv_registry_stats {
	unsigned requests;       /* HTTP requests to the registry */
	unsigned unauthorized;   /* 401 answers */
	unsigned token_requests; /* requests to the token realm */
	unsigned blobs_present;  /* HEAD said the registry had it */
	unsigned blobs_uploaded;
	unsigned blobs_mounted;
	uint64_t bytes_uploaded; /* blob bytes sent */
} nv_registry_stats;

typedef struct nv_registry nv_registry;

/* A client; cfg's strings must outlive it. Sends nothing. */
int nv_registry_open(nv_registry **out, const nv_registry_config *cfg,
		     nv_err *err);
void nv_registry_free(nv_registry *r);
const nv_registry_stats *nv_registry_stats_get(const nv_registry *r);
/* The API base ("http://127.0.0.1:5000", "https://registry-1.docker.io"). */
const char *nv_registry_base(const nv_registry *r);

/* GET /v2/ (authenticating if asked): 0 when the registry answers as a
 * v2 registry. */
int nv_registry_ping(nv_registry *r, nv_err *err);

typedef struct nv_registry_manifest {
	nv_buf body; /* the bytes, verified */
	char media_type[NV_OCI_MEDIA_MAX];
	char digest[NV_IMAGE_DIGEST_LEN + 1]; /* sha256 of body */
} nv_registry_manifest;

void nv_registry_manifest_free(nv_registry_manifest *m);

/* GET a manifest or index by tag or digest (verified as above). */
int nv_registry_manifest_get(nv_registry *r, const char *repository,
			     const char *reference, nv_registry_manifest *out,
			     nv_err *err);

/* HEAD: the digest the registry announces (not verifiable without the
 * bytes: use _get to pin), media type and size. NV_ENOTFOUND when absent. */
int nv_registry_manifest_head(nv_registry *r, const char *repository,
			      const char *reference,
			      char digest[NV_IMAGE_DIGEST_LEN + 1],
			      char media_type[NV_OCI_MEDIA_MAX], int64_t *size,
			      nv_err *err);

/* PUT body as reference (a tag, or its own digest); digest (may be NULL)
 * receives the sha256 of body, which the registry must confirm. */
int nv_registry_manifest_put(nv_registry *r, const char *repository,
			     const char *reference, const char *media_type,
			     const void *body, size_t len,
			     char digest[NV_IMAGE_DIGEST_LEN + 1], nv_err *err);

/* 0 when the blob is there (*size, may be NULL, its length), NV_ENOTFOUND
 * when not. */
int nv_registry_blob_head(nv_registry *r, const char *repository,
			  const char *digest, int64_t *size, nv_err *err);

/* GET a blob into out (capped at max bytes), verified. */
int nv_registry_blob_get(nv_registry *r, const char *repository,
			 const char *digest, size_t max, nv_buf *out,
			 nv_err *err);

/* GET a blob into the file path (created 0600 beside, renamed when
 * complete and verified), streamed. */
int nv_registry_blob_get_file(nv_registry *r, const char *repository,
			      const char *digest, const char *path,
			      nv_err *err);

/* Uploads bytes or a file's content as digest (monolithic or chunked, see
 * chunk_size). The registry checks the digest; its answer must name it. */
int nv_registry_blob_upload_bytes(nv_registry *r, const char *repository,
				  const char *digest, const void *data,
				  size_t len, nv_err *err);
int nv_registry_blob_upload_file(nv_registry *r, const char *repository,
				 const char *digest, const char *path,
				 nv_err *err);

/* A blob uploaded while it is made, its digest known only at the end
 * (OCI distribution's chunked upload): open POSTs a session, each
 * write_fd PATCHes the next len bytes of fd from offset (chunks in order,
 * each acknowledged; the caller bounds them), commit PUTs ?digest= and the
 * registry checks the digest over all it got. A failed request leaves only
 * free, which cancels a session still open (DELETE): nothing of it is kept.
 * No progress callback is made: these may run on a thread of their own,
 * provided no other call uses r meanwhile. A registry that refuses chunks
 * fails write_fd: the caller then sends the blob whole. */
typedef struct nv_registry_upload nv_registry_upload;
int nv_registry_upload_open(nv_registry_upload **out, nv_registry *r,
			    const char *repository, nv_err *err);
int nv_registry_upload_write_fd(nv_registry_upload *u, int fd, uint64_t offset,
				uint64_t len, nv_err *err);
int nv_registry_upload_commit(nv_registry_upload *u, const char *digest,
			      nv_err *err);
uint64_t nv_registry_upload_sent(const nv_registry_upload *u);
/* Calls r's progress function (on the caller's thread: the one that may
 * call it, where the upload runs on another). */
void nv_registry_progress_report(nv_registry *r, const char *digest,
				 uint64_t done, uint64_t total);
void nv_registry_upload_free(nv_registry_upload *u);

/* Asks the registry to mount digest from from_repository into repository.
 * *mounted = 1 when done (201); 0 when the registry declined (202, an
 * upload session it opened is cancelled), then upload. */
int nv_registry_blob_mount(nv_registry *r, const char *repository,
			   const char *digest, const char *from_repository,
			   int *mounted, nv_err *err);

/* An image resolved to one platform. */
typedef struct nv_registry_image {
	char digest[NV_IMAGE_DIGEST_LEN + 1];       /* the image manifest's */
	char index_digest[NV_IMAGE_DIGEST_LEN + 1]; /* "" when no index */
	nv_registry_manifest manifest;              /* the image manifest */
	nv_oci_manifest parsed;
	nv_buf config; /* the config blob (verified), when asked */
} nv_registry_image;

/* Fetches reference (tag or digest) from repository; an index is resolved
 * to platform (NULL: "linux/amd64") and the image manifest fetched by
 * digest. with_config: the config blob too. Release with
 * nv_registry_image_free(). */
int nv_registry_resolve(nv_registry *r, const char *repository,
			const char *reference, const char *platform,
			int with_config, nv_registry_image *out, nv_err *err);
void nv_registry_image_free(nv_registry_image *img);

#endif
