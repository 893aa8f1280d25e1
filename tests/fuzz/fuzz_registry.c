/* Fuzz target: what a registry or its token service sends, through every
 * pure-C reader of host/image (protocol.c, manifest.c): the WWW-Authenticate
 * challenge, the token answer, the error body, manifests and indexes, the
 * config, and the code-layer writers on whatever parsed. Checks invariants:
 * a parsed challenge has a lowercase scheme; every parsed descriptor has a
 * valid sha256 digest and a size >= 0; a token is never empty; a code
 * config built from an accepted config parses back with one more diff_id. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "image/manifest.h"
#include "image/protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ZERO                                                                   \
	"sha256:0000000000000000000000000000000000000000000000000000000000000" \
	"000"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char text[1 << 16];
	char code[64], message[128];
	nv_reg_challenge ch;
	nv_oci_manifest m;
	nv_oci_config_info info;
	nv_secret *tok = NULL;
	nv_err err;

	if (size >= sizeof(text))
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';

	if (nv_reg_challenge_parse(&ch, text, &err) == 0) {
		for (const char *p = ch.scheme; *p; p++)
			if (*p >= 'A' && *p <= 'Z')
				abort();
		if (!ch.scheme[0])
			abort();
	}
	if (nv_reg_token_parse(text, size, "fuzz", 0, &tok, &err) == 0) {
		const nv_secret_field *f = nv_secret_get(tok, "token");
		if (!f || f->len == 0)
			abort();
		nv_secret_free(tok);
	} else if (tok) {
		abort();
	}
	nv_reg_error_parse(text, size, code, sizeof(code), message,
			   sizeof(message));
	if (strlen(code) >= sizeof(code) || strlen(message) >= sizeof(message))
		abort();
	if (nv_oci_manifest_parse(&m, text, size, NULL, &err) == 0) {
		size_t pos;
		char *out = NULL, mt[NV_OCI_MEDIA_MAX];
		size_t out_len;

		if (m.nentries > NV_OCI_ENTRIES_MAX)
			abort();
		for (size_t i = 0; i < m.nentries; i++)
			if (!nv_image_digest_valid(m.entries[i].digest) ||
			    m.entries[i].size < 0)
				abort();
		if (m.kind == NV_OCI_LIST)
			(void)nv_oci_index_select(&m, "linux/amd64", &pos,
						  &err);
		if (m.kind == NV_OCI_IMAGE &&
		    nv_oci_code_manifest(text, size, ZERO, 1, ZERO, 2, NULL,
					 ZERO, &out, &out_len, mt, &err) == 0) {
			nv_oci_manifest again;

			if (nv_oci_manifest_parse(&again, out, out_len, NULL,
						  &err) != 0 ||
			    again.nentries != m.nentries + 1)
				abort();
			nv_oci_manifest_free(&again);
		}
		free(out);
		nv_oci_manifest_free(&m);
	}
	if (nv_oci_config_info_parse(text, size, &info, &err) == 0) {
		nv_code_layer_meta meta = {ZERO,   0,    "rev", "src",
					   "lock", "/w", "fuzz"};
		char *out = NULL;
		size_t out_len;

		if (nv_oci_code_config(text, size, info.ndiff_ids, &meta, &out,
				       &out_len, &err) == 0) {
			nv_oci_config_info again;

			if (nv_oci_config_info_parse(out, out_len, &again,
						     &err) != 0 ||
			    again.ndiff_ids != info.ndiff_ids + 1)
				abort();
		}
		free(out);
	}
	return 0;
}
