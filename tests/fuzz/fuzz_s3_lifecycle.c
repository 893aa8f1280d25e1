/* Fuzz target: the reading of a bucket's lifecycle configuration
 * (nv_s3_lifecycle_match, s3_lifecycle.c), which scans whatever a server
 * answers to GetBucketLifecycleConfiguration. Checks invariants, not just
 * the absence of crashes: a rule count of -1 exactly when the answer is
 * over the bound or holds a NUL, never below -1; navette's rule found the
 * same only where its ID is found; and the XML navette writes, appended
 * to any answer that has room, is always found the same. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "storage/s3_lifecycle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char joined[NV_S3_LIFECYCLE_XML_MAX + 1];
	const char *xml = (const char *)data;
	int rules, ours, same, over;
	nv_buf own;
	nv_err err;

	nv_s3_lifecycle_match(xml, size, "navette-archive-logs", "_archive/",
			      365, &rules, &ours, &same);
	over = size > NV_S3_LIFECYCLE_XML_MAX || memchr(xml, '\0', size);
	if (rules < -1 || (rules == -1) != (over != 0))
		abort();
	if (same && !ours)
		abort();
	if (rules == -1 && (ours || same))
		abort();
	/* navette's own configuration after the answer is always found */
	nv_buf_init(&own, NV_S3_LIFECYCLE_XML_MAX);
	if (nv_s3_lifecycle_xml(&own, "navette-archive-logs", "_archive/", 365,
				&err))
		abort();
	if (!over && size + 1 + own.len <= NV_S3_LIFECYCLE_XML_MAX) {
		memcpy(joined, data, size);
		joined[size] = '>'; /* a tag ends before it */
		memcpy(joined + size + 1, own.data, own.len);
		nv_s3_lifecycle_match(joined, size + 1 + own.len,
				      "navette-archive-logs", "_archive/", 365,
				      &rules, &ours, &same);
		if (rules < 1 || !ours || !same)
			abort();
	}
	nv_buf_free(&own);
	return 0;
}
