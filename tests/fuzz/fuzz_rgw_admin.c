/* Fuzz target: the parsers of radosgw's admin answers (rgw_admin.c), which
 * read whatever a server, or something posing as one, sends back, secrets
 * included. The first byte picks the parser (user info or key list, a
 * creation's answer against a fixed list of keys before, an error, a
 * user's info with its name, email and suspension), the
 * rest is the document. Checks invariants, not just the absence of
 * crashes: ids non-empty, bounded and of the allowed characters, at most
 * NV_RGW_KEYS_MAX; a creation yields a secret exactly when it succeeds,
 * with the id of a key the answer listed and the list before lacked; an
 * error code bounded and printable. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "storage/rgw_admin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_ids(const nv_rgw_key_list *ids)
{
	if (ids->count < 0 || ids->count > NV_RGW_KEYS_MAX)
		abort();
	for (int i = 0; i < ids->count; i++)
		if (nv_rgw_access_key_check(ids->ids[i], NULL) != 0)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static nv_rgw_key_list ids, before;
	const char *doc = (const char *)data + 1;
	char code[NV_RGW_CODE_MAX];
	nv_secret *s = NULL;
	nv_err err;
	int rc;

	if (size < 1)
		return 0;
	size--;
	switch (data[0] % 4) {
	case 3: {
		/* a user's info (navette team apply): a valid uid, bounded
		 * texts, the keys as parse_keys reads them */
		static nv_rgw_user u;

		if (nv_rgw_parse_user(doc, size, &u, &err) == 0) {
			if (nv_rgw_uid_check(u.uid, NULL) != 0 ||
			    strnlen(u.display_name, sizeof(u.display_name)) ==
				    sizeof(u.display_name) ||
			    strnlen(u.email, sizeof(u.email)) ==
				    sizeof(u.email) ||
			    (u.suspended != 0 && u.suspended != 1))
				abort();
			check_ids(&u.keys);
		}
		break;
	}
	case 0:
		rc = nv_rgw_parse_keys(doc, size, NULL, NULL, &ids, NULL, &err);
		if (rc == 0)
			check_ids(&ids);
		break;
	case 1:
		memset(&before, 0, sizeof(before));
		strcpy(before.ids[0], "W4K7HR1U38IE1TJ4ZFBP");
		strcpy(before.ids[1], "R0WUXR2WV3QLJLQHV4FB");
		before.count = 2;
		rc = nv_rgw_parse_keys(doc, size, &before, "fuzz", &ids, &s,
				       &err);
		if ((rc == 0) != (s != NULL))
			abort();
		if (s) {
			const nv_secret_field *id =
				nv_secret_get(s, "access_key_id");
			const nv_secret_field *sk =
				nv_secret_get(s, "secret_access_key");
			check_ids(&ids);
			if (!id || !sk || sk->len == 0 ||
			    sk->len > NV_RGW_SECRET_MAX ||
			    !nv_rgw_key_list_has(&ids,
						 (const char *)id->value) ||
			    nv_rgw_key_list_has(&before,
						(const char *)id->value))
				abort();
			nv_secret_free(s);
		}
		break;
	default:
		if (nv_rgw_parse_error(doc, size, code) == 0) {
			size_t n = strnlen(code, NV_RGW_CODE_MAX);
			if (n == 0 || n >= NV_RGW_CODE_MAX)
				abort();
			for (size_t i = 0; i < n; i++)
				if (code[i] < 0x21 || code[i] > 0x7e)
					abort();
		}
		break;
	}
	return 0;
}
