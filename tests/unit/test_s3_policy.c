/* The check of a bucket policy before it is sent (storage/s3_policy.c):
 * the documents navette team apply writes pass; a document that is not an
 * object, lacks Version or Statement, has an empty Statement list, a
 * statement without Effect Allow/Deny, Action (or NotAction) or Resource
 * (or NotResource), or with both forms, a NUL byte or more than 20 KiB is
 * refused with NV_EINVAL. */
#include "storage/s3_policy.h"

#include <stdio.h>
#include <string.h>

#include "nv_test.h"

static int check(const char *json)
{
	nv_err err;
	return nv_s3_policy_check(json, strlen(json), &err);
}

int main(void)
{
	static char big[NV_S3_POLICY_MAX + 128];
	nv_err err;
	size_t n;

	CHECK(check("{\"Version\":\"2012-10-17\",\"Statement\":[{\"Sid\":"
		    "\"a\",\"Effect\":\"Allow\",\"Principal\":{\"AWS\":["
		    "\"arn:aws:iam:::user/alice\"]},\"Action\":["
		    "\"s3:GetObject\"],\"Resource\":[\"arn:aws:s3:::shared/"
		    "*\"]}]}") == 0);
	CHECK(check("{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":"
		    "\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:*\","
		    "\"Resource\":\"arn:aws:s3:::b/*\"}]}") == 0);
	/* Others' statements in IAM's Not forms are a policy too. */
	CHECK(check("{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":"
		    "\"Deny\",\"Principal\":\"*\",\"NotAction\":[\"s3:Get*\"],"
		    "\"NotResource\":\"arn:aws:s3:::b/public/*\"}]}") == 0);
	CHECK(check("{\"Version\":\"1\",\"Statement\":[{\"Effect\":\"Allow\","
		    "\"Action\":\"x\",\"NotAction\":\"y\",\"Resource\":\"z\"}]"
		    "}") == NV_EINVAL);
	CHECK(check("{\"Version\":\"1\",\"Statement\":[{\"Effect\":\"Allow\","
		    "\"Action\":\"x\",\"Resource\":\"z\",\"NotResource\":\"y\"}"
		    "]}") == NV_EINVAL);
	CHECK(check("{\"Version\":\"1\",\"Statement\":[{\"Effect\":\"Allow\","
		    "\"NotAction\":[],\"Resource\":\"z\"}]}") == NV_EINVAL);
	CHECK(check("[]") == NV_EINVAL);
	CHECK(check("{\"Statement\":[{\"Effect\":\"Allow\",\"Action\":\"x\","
		    "\"Resource\":\"y\"}]}") == NV_EINVAL);
	CHECK(check("{\"Version\":\"1\",\"Statement\":[]}") == NV_EINVAL);
	CHECK(check("{\"Version\":\"1\",\"Statement\":[{\"Effect\":\"Maybe\","
		    "\"Action\":\"x\",\"Resource\":\"y\"}]}") == NV_EINVAL);
	CHECK(check("{\"Version\":\"1\",\"Statement\":[{\"Effect\":\"Allow\","
		    "\"Resource\":\"y\"}]}") == NV_EINVAL);
	CHECK(check("{\"Version\":\"1\",\"Statement\":[{\"Effect\":\"Allow\","
		    "\"Action\":[],\"Resource\":\"y\"}]}") == NV_EINVAL);
	CHECK(check("{\"Version\":\"1\",\"Statement\":[{\"Effect\":\"Allow\","
		    "\"Action\":[1],\"Resource\":\"y\"}]}") == NV_EINVAL);
	CHECK(check("{\"Version\":\"1\",\"Statement\":[\"x\"]}") == NV_EINVAL);
	CHECK(check("{\"Version\":\"1\",\"Statement\":[{\"Effect\":\"Allow\","
		    "\"Action\":\"x\",\"Resource\":\"y\"}") == NV_EINVAL);
	CHECK(nv_s3_policy_check("{\"Version\":\"1\"}\0", 17, &err) ==
	      NV_EINVAL);
	CHECK(nv_s3_policy_check("", 0, &err) == NV_EINVAL);
	n = (size_t)snprintf(big, sizeof(big),
			     "{\"Version\":\"1\",\"Statement\":[{\"Effect\":"
			     "\"Allow\",\"Action\":\"x\",\"Resource\":\"");
	memset(big + n, 'a', NV_S3_POLICY_MAX);
	memcpy(big + n + NV_S3_POLICY_MAX - 10, "\"}]}", 5);
	CHECK(nv_s3_policy_check(big, strlen(big), &err) == NV_EINVAL);
	CHECK(strstr(err.message, "bytes") != NULL);
	return nv_test_done();
}
