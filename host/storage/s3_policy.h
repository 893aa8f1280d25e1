/* A bucket's policy (GetBucketPolicy, PutBucketPolicy, DeleteBucketPolicy):
 * the JSON document that grants other users of the store actions on the
 * bucket's keys. navette writes it from a team's policy (navette team
 * apply); the document is built by the caller, checked here for size and
 * shape (a JSON object with Version and a Statement array) before it is
 * sent. Only the bucket's owner may read or write it. */
#ifndef NV_S3_POLICY_H
#define NV_S3_POLICY_H

#include <stddef.h>

#include "core/buf.h"
#include "core/nv_err.h"
#include "storage/s3.h"

/* S3's bound on a bucket policy. */
#define NV_S3_POLICY_MAX ((size_t)20 * 1024)

/* 0 when json (len bytes) is a policy document navette may send: at most
 * NV_S3_POLICY_MAX bytes, a JSON object whose "Version" is a string and
 * whose "Statement" is a non-empty array of objects, each with "Effect"
 * "Allow" or "Deny", one of "Action" and "NotAction", and one of
 * "Resource" and "NotResource" (a string or an array of strings).
 * NV_EINVAL naming what is wrong otherwise. */
int nv_s3_policy_check(const char *json, size_t len, nv_err *err);

/* The bucket's policy into out (at most NV_S3_POLICY_MAX bytes); *none
 * set, out empty, when it has none (404 NoSuchBucketPolicy). */
int nv_s3_policy_get(const nv_s3_config *cfg, const char *bucket, nv_buf *out,
		     int *none, nv_err *err);

/* Replaces the bucket's policy with json (checked first). */
int nv_s3_policy_put(const nv_s3_config *cfg, const char *bucket,
		     const char *json, size_t len, nv_err *err);

/* Removes the bucket's policy (none there: fine). */
int nv_s3_policy_delete(const nv_s3_config *cfg, const char *bucket,
			nv_err *err);

#endif
