/* Fuzz target: the index.json reader of host/image/layout.c, which reads
 * the OCI layout buildah wrote before its blobs are pushed. The text is
 * handed over in a buffer of exactly its length, not NUL-terminated, so a
 * read past it is seen. Checks invariants, not just the absence of
 * crashes: an accepted index names an image manifest (OCI or Docker) by a
 * valid sha256 digest with a size navette reads; a refusal is NV_EINVAL
 * with a message; text over the bound is always refused. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "image/layout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char media_type[NV_OCI_MEDIA_MAX], digest[NV_IMAGE_DIGEST_LEN + 1];
	int64_t manifest_size = -1;
	char *text;
	nv_err err;
	int rc;

	if (size > 1 << 20)
		return 0;
	text = malloc(size ? size : 1);
	if (!text)
		return 0;
	if (size)
		memcpy(text, data, size);
	nv_err_clear(&err);
	rc = nv_oci_layout_index_parse(text, size, media_type, digest,
				       &manifest_size, &err);
	free(text);
	if (rc != 0) {
		if (rc != NV_EINVAL || err.code != NV_EINVAL || !err.message[0])
			abort();
		return 0;
	}
	if (size > NV_OCI_LAYOUT_INDEX_MAX)
		abort();
	if (strcmp(media_type, NV_OCI_MT_MANIFEST) != 0 &&
	    strcmp(media_type, NV_DOCKER_MT_MANIFEST) != 0)
		abort();
	if (!nv_image_digest_valid(digest))
		abort();
	if (manifest_size < 2 || manifest_size > (int64_t)NV_OCI_MANIFEST_MAX)
		abort();
	return 0;
}
