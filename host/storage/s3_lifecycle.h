/* A bucket's lifecycle rule (PutBucketLifecycleConfiguration): navette
 * sets one rule, expiring the objects under a prefix after some days,
 * and never replaces a configuration it did not write (a PUT replaces
 * every rule of the bucket). The XML building and the reading of a
 * configuration are pure C (unit-tested); the two calls go through the
 * S3 engine of s3.c. Nothing here allocates what the caller must free
 * but the nv_buf it passes. */
#ifndef NV_S3_LIFECYCLE_H
#define NV_S3_LIFECYCLE_H

#include <stddef.h>

#include "core/buf.h"
#include "core/nv_err.h"
#include "storage/s3.h"

#define NV_S3_LIFECYCLE_ID_MAX   255   /* S3's bound on a rule's ID */
#define NV_S3_LIFECYCLE_DAYS_MAX 36500 /* a century: beyond, a mistake */
#define NV_S3_LIFECYCLE_XML_MAX  ((size_t)64 * 1024)

/* The LifecycleConfiguration of one enabled rule: ID id, Filter/Prefix
 * prefix, Expiration/Days days. id: 1..255 of [A-Za-z0-9._-]; prefix: a
 * key prefix (non-empty, UTF-8, at most NV_FILESTORE_KEY_MAX bytes, XML
 * escaped here); days: 1..NV_S3_LIFECYCLE_DAYS_MAX. NV_EINVAL otherwise. */
int nv_s3_lifecycle_xml(nv_buf *out, const char *id, const char *prefix,
			long days, nv_err *err);

/* What a bucket's configuration (the body of GetBucketLifecycle) says of
 * the rule navette would write: the number of <Rule> elements in *rules,
 * *ours set when one of them has navette's ID, *same when that rule is
 * exactly navette's (its prefix, status and days as nv_s3_lifecycle_xml
 * writes them; spacing between elements ignored). A bounded scan of at
 * most NV_S3_LIFECYCLE_XML_MAX bytes (a longer body: *rules -1). */
void nv_s3_lifecycle_match(const char *xml, size_t len, const char *id,
			   const char *prefix, long days, int *rules, int *ours,
			   int *same);

/* The outcome of applying a rule. */
typedef enum nv_s3_lifecycle_outcome {
	NV_S3_LIFECYCLE_APPLIED = 1,     /* written now */
	NV_S3_LIFECYCLE_PRESENT = 2,     /* already the bucket's, untouched */
	NV_S3_LIFECYCLE_UNSUPPORTED = 3, /* 501 NotImplemented: not a failure */
	NV_S3_LIFECYCLE_FOREIGN = 4      /* other rules there: left alone */
} nv_s3_lifecycle_outcome;

/* Reads the bucket's configuration and writes navette's rule when there
 * is none (NoSuchLifecycleConfiguration) or when navette's is its only
 * rule and differs (days changed); *outcome says what
 * happened and *rules how many rules the bucket had. 0, or the S3 or
 * transport error. */
int nv_s3_lifecycle_apply(const nv_s3_config *cfg, const char *bucket,
			  const char *id, const char *prefix, long days,
			  nv_s3_lifecycle_outcome *outcome, int *rules,
			  nv_err *err);

#endif
