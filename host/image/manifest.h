/* Image manifests, indexes and configs in pure C over cJSON: reading what a
 * registry sends (OCI image manifest and index, Docker schema2 manifest and
 * manifest list), choosing an index entry for a platform, and writing the
 * config and manifest of a code layer added on top of a base image.
 *
 * Reading is bounded (NV_OCI_MANIFEST_MAX bytes, NV_OCI_ENTRIES_MAX layers
 * or index entries, every descriptor's digest checked for its form).
 * Writing starts from the base's own bytes and changes only what a new
 * layer must change, so the output depends on nothing but its inputs: the
 * same base and the same layer give the same bytes, hence the same digest. */
#ifndef NV_IMAGE_MANIFEST_H
#define NV_IMAGE_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "core/nv_err.h"
#include "image/reference.h"

#define NV_OCI_MANIFEST_MAX ((size_t)4 * 1024 * 1024)
#define NV_OCI_CONFIG_MAX   ((size_t)8 * 1024 * 1024)
#define NV_OCI_ENTRIES_MAX  1024
#define NV_OCI_MEDIA_MAX    128

#define NV_OCI_MT_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define NV_OCI_MT_INDEX    "application/vnd.oci.image.index.v1+json"
#define NV_OCI_MT_CONFIG   "application/vnd.oci.image.config.v1+json"
#define NV_OCI_MT_LAYER_GZ "application/vnd.oci.image.layer.v1.tar+gzip"
#define NV_OCI_MT_LAYER    "application/vnd.oci.image.layer.v1.tar"
#define NV_DOCKER_MT_MANIFEST                                                  \
	"application/vnd.docker.distribution.manifest.v2+json"
#define NV_DOCKER_MT_LIST                                                      \
	"application/vnd.docker.distribution.manifest.list.v2+json"
#define NV_DOCKER_MT_CONFIG "application/vnd.docker.container.image.v1+json"
#define NV_DOCKER_MT_LAYER_GZ                                                  \
	"application/vnd.docker.image.rootfs.diff.tar.gzip"
/* What every manifest request accepts (the registry picks). */
#define NV_OCI_ACCEPT                                                          \
	NV_OCI_MT_MANIFEST ", " NV_OCI_MT_INDEX ", " NV_DOCKER_MT_MANIFEST     \
			   ", " NV_DOCKER_MT_LIST

typedef enum nv_oci_kind {
	NV_OCI_IMAGE = 1, /* OCI image manifest or Docker schema2 manifest */
	NV_OCI_LIST       /* OCI index or Docker manifest list */
} nv_oci_kind;

typedef struct nv_oci_descriptor {
	char media_type[NV_OCI_MEDIA_MAX];
	char digest[NV_IMAGE_DIGEST_LEN + 1];
	int64_t size;
	/* index entries only ("" when absent) */
	char os[32], architecture[32], variant[32];
} nv_oci_descriptor;

typedef struct nv_oci_manifest {
	nv_oci_kind kind;
	int docker; /* 1: Docker schema2 media types, 0: OCI */
	char media_type[NV_OCI_MEDIA_MAX];
	nv_oci_descriptor config; /* images */
	/* layers (images) or manifests (lists), in order; malloc'd */
	nv_oci_descriptor *entries;
	size_t nentries;
} nv_oci_manifest;

/* Parses a manifest or index. content_type (may be NULL) is the response's
 * Content-Type, used when the body has no mediaType. Docker schema1 and
 * unknown types: NV_EREFUSED naming the type. Malformed: NV_EBACKEND.
 * Release with nv_oci_manifest_free(). */
int nv_oci_manifest_parse(nv_oci_manifest *out, const char *body, size_t len,
			  const char *content_type, nv_err *err);
void nv_oci_manifest_free(nv_oci_manifest *m);

/* Splits "os/arch[/variant]" (e.g. "linux/arm64/v8"); NV_EINVAL when
 * malformed. */
int nv_oci_platform_parse(const char *platform, char os[32], char arch[32],
			  char variant[32], nv_err *err);

/* The index entry for the platform: os and architecture equal, and the
 * variant too when one is asked (an entry without variant matches any).
 * None: NV_ENOTFOUND listing the platforms the index has. */
int nv_oci_index_select(const nv_oci_manifest *index, const char *platform,
			size_t *pos, nv_err *err);

/* What a config says about its image, for inspect and checks. */
typedef struct nv_oci_config_info {
	char os[32], architecture[32], variant[32];
	size_t ndiff_ids;
} nv_oci_config_info;

int nv_oci_config_info_parse(const char *body, size_t len,
			     nv_oci_config_info *info, nv_err *err);

/* The code layer's facts that go into the new config. */
typedef struct nv_code_layer_meta {
	const char *diff_id;       /* "sha256:..." of the uncompressed tar */
	int64_t created;           /* commit time, seconds since 1970 */
	const char *revision;      /* commit id */
	const char *source;        /* remote URL, or NULL/"" for none */
	const char *lockfile_hash; /* hex, or NULL */
	const char *into;          /* "/workspace": also the WorkingDir */
	const char *created_by;    /* history line */
} nv_code_layer_meta;

/* Label of the lock-file hash (io.navette.lockfile.sha256). */
#define NV_CODE_LAYER_LOCK_LABEL "io.navette.lockfile.sha256"

/* The base config with the layer added: rootfs.diff_ids gets the diff_id,
 * history one entry, "created" and the labels org.opencontainers.image.
 * {revision,source,created} and NV_CODE_LAYER_LOCK_LABEL are set, and
 * config.WorkingDir becomes meta->into. *out is malloc'd (caller frees).
 * A base config without rootfs.diff_ids, or whose diff_ids count is not
 * base_layers: NV_EREFUSED. */
int nv_oci_code_config(const char *base_config, size_t len, size_t base_layers,
		       const nv_code_layer_meta *meta, char **out,
		       size_t *out_len, nv_err *err);

/* The base manifest (an image, not an index) with its config descriptor
 * replaced and the layer appended (media type of the base's family: OCI
 * or Docker). For OCI manifests, the annotations
 * org.opencontainers.image.base.name/.base.digest name the base (each
 * left out when NULL);
 * "subject" is dropped (the new image is not the base's referrer).
 * media_type receives the manifest's media type. *out is malloc'd. */
int nv_oci_code_manifest(const char *base_manifest, size_t len,
			 const char *config_digest, int64_t config_size,
			 const char *layer_digest, int64_t layer_size,
			 const char *base_name, const char *base_digest,
			 char **out, size_t *out_len,
			 char media_type[NV_OCI_MEDIA_MAX], nv_err *err);

/* "2023-11-14T22:13:20Z" for t (UTC). */
void nv_oci_time(int64_t t, char out[32]);

#endif
