/* An OCI image layout (the folder `buildah commit ... oci:DIR` writes:
 * oci-layout, index.json, blobs/sha256/HEX) holding one image, read and
 * checked, then pushed to a repository with navette's own registry client
 * (its credentials, tokens and digest checks): every blob looked up first
 * (HEAD) and uploaded from its file only when missing, then the manifest
 * PUT under each tag asked.
 *
 * Reading is bounded (index.json at NV_OCI_LAYOUT_INDEX_MAX bytes, the
 * manifest at NV_OCI_MANIFEST_MAX) and checked: one image in the index,
 * the manifest's bytes hash to the digest the index names, every blob the
 * manifest names is a regular file of the size it says. Blob paths are
 * made from checked digests only (no name from the folder is followed).
 * Pure C, no Lua. */
#ifndef NV_IMAGE_LAYOUT_H
#define NV_IMAGE_LAYOUT_H

#include <stddef.h>

#include "core/buf.h"
#include "core/nv_err.h"
#include "image/manifest.h"
#include "image/reference.h"
#include "image/registry.h"

#define NV_OCI_LAYOUT_INDEX_MAX ((size_t)64 * 1024)

typedef struct nv_oci_layout {
	nv_buf manifest; /* the image manifest's bytes, verified */
	char media_type[NV_OCI_MEDIA_MAX];
	char digest[NV_IMAGE_DIGEST_LEN + 1];
	nv_oci_manifest parsed; /* its config and layers */
} nv_oci_layout;

/* The index's text: the one image manifest it names (media type, digest,
 * size). Malformed, several images or an index of indexes: NV_EINVAL. */
int nv_oci_layout_index_parse(const char *text, size_t len,
			      char media_type[NV_OCI_MEDIA_MAX],
			      char digest[NV_IMAGE_DIGEST_LEN + 1],
			      int64_t *size, nv_err *err);

/* Reads and checks the layout in dir. Release with nv_oci_layout_free. */
int nv_oci_layout_read(const char *dir, nv_oci_layout *out, nv_err *err);
void nv_oci_layout_free(nv_oci_layout *l);

/* Pushes the layout read from dir to repository of r, under each of tags
 * (at least one); digest receives the manifest's, which the registry
 * confirmed for every tag. */
int nv_oci_layout_push(nv_registry *r, const char *repository, const char *dir,
		       const nv_oci_layout *layout, const char *const *tags,
		       size_t ntags, nv_err *err);

#endif
