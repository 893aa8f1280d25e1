/* Fuzz target: the parsers of S3's XML answers (s3_xml.c), which read
 * whatever a server, or something posing as one, sends back. The first
 * byte picks the parser, the rest is the document. Checks invariants, not
 * just the absence of crashes: listed keys are non-empty and within the
 * key limit, part numbers within 1..10000 and sizes within 5 GiB, ETags
 * non-empty, bounded and unquoted, fields always terminated. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "storage/s3.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_listed(const nv_object_info *info, const char *upload_id,
		     void *payload)
{
	size_t n = strnlen(info->key, sizeof(info->key));

	(void)payload;
	if (n == 0 || n > NV_FILESTORE_KEY_MAX)
		abort();
	if (upload_id &&
	    strnlen(upload_id, NV_S3_UPLOAD_ID_MAX + 1) > NV_S3_UPLOAD_ID_MAX)
		abort();
	return 0;
}

static int on_part(int number, uint64_t size, const char *etag, void *payload)
{
	size_t n = strnlen(etag, NV_S3_ETAG_MAX + 1);

	(void)payload;
	if (number < 1 || number > NV_S3_PARTS_MAX ||
	    size > NV_S3_PART_SIZE_MAX || n == 0 || n > NV_S3_ETAG_MAX ||
	    strchr(etag, '"'))
		abort();
	return 0;
}

static int on_deleted(const char *key, const char *code, const char *message,
		      void *payload)
{
	size_t n = strnlen(key, NV_FILESTORE_KEY_MAX + 1);

	(void)payload;
	if (n == 0 || n > NV_FILESTORE_KEY_MAX)
		abort();
	if (code && (strnlen(code, 64) >= 64 || !message))
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *xml = (const char *)data + 1;
	char token[NV_S3_TOKEN_MAX + 1], field[256];
	nv_s3_error_doc doc;
	int truncated, marker;
	nv_err err;

	if (size < 1)
		return 0;
	size--;
	switch (data[0] % 5) {
	case 0:
		if (nv_s3_xml_error(xml, size, &doc) == 0 &&
		    (strnlen(doc.code, sizeof(doc.code)) >= sizeof(doc.code) ||
		     strnlen(doc.message, sizeof(doc.message)) >=
			     sizeof(doc.message) ||
		     strnlen(doc.request_id, sizeof(doc.request_id)) >=
			     sizeof(doc.request_id)))
			abort();
		break;
	case 1:
		if (nv_s3_xml_list(xml, size, on_listed, NULL, &truncated,
				   token, sizeof(token), &err) == 0 &&
		    strnlen(token, sizeof(token)) >= sizeof(token))
			abort();
		break;
	case 2:
		if (nv_s3_xml_parts(xml, size, on_part, NULL, &truncated,
				    &marker, &err) == 0 &&
		    (marker < 0 || marker > NV_S3_PARTS_MAX))
			abort();
		break;
	case 3:
		nv_s3_xml_delete_result(xml, size, on_deleted, NULL, &err);
		break;
	default:
		if (nv_s3_xml_field(xml, size, "InitiateMultipartUploadResult",
				    "UploadId", field, sizeof(field),
				    &err) == 0 &&
		    strnlen(field, sizeof(field)) >= sizeof(field))
			abort();
	}
	return 0;
}
