/* Fuzz target: image reference parsing (host/image/reference.c), which
 * takes strings from recipes, the CLI and registries' answers. Checks
 * invariants, not just the absence of crashes: an accepted reference has a
 * registry, a lowercase repository within the length bound, a tag or a
 * valid digest, and its full form parses back to the same fields. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "image/reference.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char text[NV_IMAGE_REF_MAX + 64], full[NV_IMAGE_REF_MAX + 64];
	nv_image_ref ref, again;
	nv_err err;
	size_t i;

	if (size >= sizeof(text))
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (nv_image_ref_parse(&ref, text, &err) != 0) {
		if (err.code != NV_EINVAL || !err.message[0])
			abort();
		return 0;
	}
	if (!ref.registry[0] || !ref.repository[0])
		abort();
	if (strlen(ref.registry) + 1 + strlen(ref.repository) >
	    NV_IMAGE_NAME_MAX)
		abort();
	for (i = 0; ref.repository[i]; i++)
		if (ref.repository[i] >= 'A' && ref.repository[i] <= 'Z')
			abort();
	if (!ref.tag[0] && !ref.digest[0])
		abort();
	if (ref.digest[0] && !nv_image_digest_valid(ref.digest))
		abort();
	if (nv_image_ref_format(&ref, 1, full, sizeof(full)) != 0)
		abort();
	if (nv_image_ref_parse(&again, full, &err) != 0 ||
	    strcmp(again.registry, ref.registry) != 0 ||
	    strcmp(again.repository, ref.repository) != 0 ||
	    strcmp(again.tag, ref.tag) != 0 ||
	    strcmp(again.digest, ref.digest) != 0)
		abort();
	return 0;
}
