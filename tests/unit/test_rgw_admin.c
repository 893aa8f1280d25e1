/* The parsers of radosgw's admin answers (rgw_admin.c) and its name checks:
 * the access key ids of a user-info object and of a key list, the one new
 * key of a creation's answer (its secret copied, no other), and the
 * malformed, oversized and ambiguous answers a hostile server could send.
 * The requests themselves run against the real radosgw in
 * tests/integration/s3/test_rotate_keys.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nv_test.h"
#include "storage/rgw_admin.h"

static const char info_doc[] =
	"{\"tenant\":\"\",\"user_id\":\"svc\",\"display_name\":\"svc\","
	"\"suspended\":0,\"subusers\":[],\"keys\":[{\"user\":\"svc\","
	"\"access_key\":\"W4K7HR1U38IE1TJ4ZFBP\",\"secret_key\":"
	"\"RJOmXA52LOOiF6J1pcmPdLneV2AiFnYCVgGYy9lE\"},{\"user\":\"svc\","
	"\"access_key\":\"R0WUXR2WV3QLJLQHV4FB\",\"secret_key\":"
	"\"3itIqxnpH0fmM8scOC0qUVQluFEUSP4Rn7KNEkTX\"}],\"swift_keys\":[],"
	"\"caps\":[]}";

/* the answer of a creation: every key, the new one first */
static const char created_doc[] =
	"[{\"user\":\"svc\",\"access_key\":\"BEY2SGW611BTULJ0WWY4\","
	"\"secret_key\":\"SrxVy0fsvL1vYJdczx4qNF8RBT43UmPoloNDsMMh\"},"
	"{\"user\":\"svc\",\"access_key\":\"R0WUXR2WV3QLJLQHV4FB\","
	"\"secret_key\":\"3itIqxnpH0fmM8scOC0qUVQluFEUSP4Rn7KNEkTX\"},"
	"{\"user\":\"svc\",\"access_key\":\"W4K7HR1U38IE1TJ4ZFBP\","
	"\"secret_key\":\"RJOmXA52LOOiF6J1pcmPdLneV2AiFnYCVgGYy9lE\"}]";

static int parse(const char *doc, nv_rgw_key_list *ids, nv_err *err)
{
	return nv_rgw_parse_keys(doc, strlen(doc), NULL, NULL, ids, NULL, err);
}

static void test_user_info(nv_rgw_key_list *ids)
{
	nv_err err;

	CHECK(parse(info_doc, ids, &err) == 0);
	CHECK(ids->count == 2);
	CHECK_STR(ids->ids[0], "W4K7HR1U38IE1TJ4ZFBP");
	CHECK_STR(ids->ids[1], "R0WUXR2WV3QLJLQHV4FB");
	CHECK(nv_rgw_key_list_has(ids, "R0WUXR2WV3QLJLQHV4FB"));
	CHECK(!nv_rgw_key_list_has(ids, "R0WUXR2WV3QLJLQHV4F"));
	/* a subuser's key is listed beside the user's: not the user's */
	CHECK(parse("{\"user_id\":\"svc\",\"keys\":["
		    "{\"user\":\"svc:backup\",\"access_key\":"
		    "\"SUBUSERKEY000000001X\",\"secret_key\":\"x\"},"
		    "{\"user\":\"svc\",\"access_key\":"
		    "\"W4K7HR1U38IE1TJ4ZFBP\",\"secret_key\":\"y\"}]}",
		    ids, &err) == 0);
	CHECK(ids->count == 1);
	CHECK_STR(ids->ids[0], "W4K7HR1U38IE1TJ4ZFBP");
	/* a user without keys */
	CHECK(parse("{\"user_id\":\"x\",\"keys\":[]}", ids, &err) == 0);
	CHECK(ids->count == 0);
}

static void test_created(const nv_rgw_key_list *before)
{
	nv_rgw_key_list *after = calloc(1, sizeof(*after));
	nv_secret *s = NULL;
	const nv_secret_field *f;
	nv_err err;

	CHECK(nv_rgw_parse_keys(created_doc, strlen(created_doc), before,
				"svc-new", after, &s, &err) == 0);
	CHECK(after->count == 3);
	CHECK(s != NULL);
	if (s) {
		CHECK(s->kind == NV_SECRET_S3);
		CHECK_STR(s->name, "svc-new");
		CHECK_STR(s->source, "minted");
		f = nv_secret_get(s, "access_key_id");
		CHECK(f && strcmp((const char *)f->value,
				  "BEY2SGW611BTULJ0WWY4") == 0);
		f = nv_secret_get(s, "secret_access_key");
		CHECK(f &&
		      strcmp((const char *)f->value,
			     "SrxVy0fsvL1vYJdczx4qNF8RBT43UmPoloNDsMMh") == 0);
		CHECK(s->nfields == 2); /* no session token, nothing else */
		nv_secret_free(s);
	}
	/* nothing new: the answer does not say which key is ours */
	s = NULL;
	CHECK(nv_rgw_parse_keys(info_doc, strlen(info_doc), before, "n", after,
				&s, &err) == NV_EBACKEND);
	CHECK(s == NULL);
	CHECK(strstr(err.message, "0 new keys") != NULL);
	/* two new (another admin at the same moment): refused, none kept */
	{
		nv_rgw_key_list empty;
		memset(&empty, 0, sizeof(empty));
		CHECK(nv_rgw_parse_keys(info_doc, strlen(info_doc), &empty, "n",
					after, &s, &err) == NV_EBACKEND);
		CHECK(s == NULL);
		CHECK(strstr(err.message, "2 new keys") != NULL);
	}
	/* the new key without a usable secret */
	{
		const char *doc = "[{\"access_key\":\"NEWKEY\","
				  "\"secret_key\":\"has space\"}]";
		nv_rgw_key_list empty;
		memset(&empty, 0, sizeof(empty));
		CHECK(nv_rgw_parse_keys(doc, strlen(doc), &empty, "n", after,
					&s, &err) == NV_EBACKEND);
		CHECK(s == NULL);
	}
	/* a creation needs the list before */
	CHECK(nv_rgw_parse_keys(created_doc, strlen(created_doc), NULL, "n",
				after, &s, &err) == NV_EINVAL);
	free(after);
}

static void test_malformed(nv_rgw_key_list *ids)
{
	static const char *const bad[] = {
		"",
		"not json",
		"{\"user_id\":\"svc\"}",              /* no keys */
		"{\"keys\":{}}",                      /* not a list */
		"[1,2]",                              /* not objects */
		"[{\"secret_key\":\"x\"}]",           /* no id */
		"[{\"access_key\":7}]",               /* not a string */
		"[{\"access_key\":\"\"}]",            /* empty */
		"[{\"access_key\":\"a b\"}]",         /* a blank */
		"[{\"access_key\":\"a\\u0000b\"}]",   /* a NUL */
		"[{\"access_key\":\"\\u001b[31m\"}]", /* an escape */
		"\"keys\"",
	};
	nv_err err;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = parse(bad[i], ids, &err);
		if (rc != NV_EBACKEND)
			fprintf(stderr, "accepted: %s\n", bad[i]);
		CHECK(rc == NV_EBACKEND);
	}
	/* an id of 129 bytes */
	{
		char doc[512];
		char id[NV_RGW_ACCESS_KEY_MAX + 2];
		memset(id, 'A', sizeof(id) - 1);
		id[sizeof(id) - 1] = '\0';
		snprintf(doc, sizeof(doc), "[{\"access_key\":\"%s\"}]", id);
		CHECK(parse(doc, ids, &err) == NV_EBACKEND);
		id[NV_RGW_ACCESS_KEY_MAX] = '\0'; /* 128: fine */
		snprintf(doc, sizeof(doc), "[{\"access_key\":\"%s\"}]", id);
		CHECK(parse(doc, ids, &err) == 0);
	}
	/* more keys than a user may have in one answer */
	{
		size_t cap = (NV_RGW_KEYS_MAX + 1) * 40 + 16, used = 0;
		char *doc = malloc(cap);
		used += (size_t)snprintf(doc, cap, "[");
		for (int i = 0; i <= NV_RGW_KEYS_MAX; i++)
			used += (size_t)snprintf(doc + used, cap - used,
						 "%s{\"access_key\":\"K%05d\"}",
						 i ? "," : "", i);
		snprintf(doc + used, cap - used, "]");
		CHECK(parse(doc, ids, &err) == NV_EBACKEND);
		CHECK(strstr(err.message, "more than") != NULL);
		free(doc);
	}
	/* an answer over the cap is refused unread */
	CHECK(nv_rgw_parse_keys("[]", NV_RGW_ANSWER_MAX + 1, NULL, NULL, ids,
				NULL, &err) == NV_EBACKEND);
}

static void test_errors(void)
{
	char code[NV_RGW_CODE_MAX];
	const char *doc = "{\"Code\":\"NoSuchUser\",\"Message\":\"\","
			  "\"RequestId\":\"tx1\",\"HostId\":\"h\"}";

	CHECK(nv_rgw_parse_error(doc, strlen(doc), code) == 0);
	CHECK_STR(code, "NoSuchUser");
	CHECK(nv_rgw_parse_error("<Error/>", 8, code) == -1);
	CHECK(code[0] == '\0');
	CHECK(nv_rgw_parse_error("{\"Code\":\"\"}", 11, code) == -1);
	/* control characters of a server are not kept */
	doc = "{\"Code\":\"Bad\\u001bCode\"}";
	CHECK(nv_rgw_parse_error(doc, strlen(doc), code) == 0);
	CHECK_STR(code, "Bad?Code");
}

static void test_names(void)
{
	nv_err err;

	CHECK(nv_rgw_uid_check("svc", &err) == 0);
	CHECK(nv_rgw_uid_check("team1$carl", &err) == 0);
	CHECK(nv_rgw_uid_check("a.b_c-d@e", &err) == 0);
	CHECK(nv_rgw_uid_check("", &err) == NV_EINVAL);
	CHECK(nv_rgw_uid_check("a&b=c", &err) == NV_EINVAL);
	CHECK(nv_rgw_uid_check("$svc", &err) == NV_EINVAL);
	CHECK(nv_rgw_uid_check("a$b$c", &err) == NV_EINVAL);
	CHECK(nv_rgw_uid_check("a b", &err) == NV_EINVAL);
	CHECK(nv_rgw_access_key_check("W4K7HR1U38IE1TJ4ZFBP", &err) == 0);
	CHECK(nv_rgw_access_key_check("a&uid=other", &err) == NV_EINVAL);
	CHECK(nv_rgw_access_key_check(NULL, &err) == NV_EINVAL);
}

/* No request leaves without a credential or with a bad name. */
static void test_refused_before_sending(void)
{
	nv_s3_config cfg;
	nv_rgw_key_list *ids = calloc(1, sizeof(*ids));
	nv_secret *s = NULL;
	nv_err err;

	memset(&cfg, 0, sizeof(cfg));
	/* port 9 (discard) on loopback: nothing must be sent there */
	cfg.endpoint = "http://127.0.0.1:9";
	CHECK(nv_rgw_user_keys(&cfg, "svc", ids, &err) == NV_EINVAL);
	CHECK(strstr(err.message, "signed") != NULL);
	CHECK(nv_rgw_key_create(&cfg, "svc", "", &s, &err) == NV_EINVAL);
	CHECK(nv_rgw_key_remove(&cfg, "a&b", "K", &err) == NV_EINVAL);
	CHECK(nv_rgw_key_remove(&cfg, "svc", "K&x=1", &err) == NV_EINVAL);
	CHECK(nv_rgw_check_credential(&cfg, NULL, &err) == NV_EINVAL);
	free(ids);
}

int main(void)
{
	nv_rgw_key_list *ids = calloc(1, sizeof(*ids));
	nv_rgw_key_list *before = calloc(1, sizeof(*before));

	test_user_info(ids);
	CHECK(parse(info_doc, before, NULL) == 0);
	test_created(before);
	test_malformed(ids);
	test_errors();
	test_names();
	test_refused_before_sending();
	free(ids);
	free(before);
	return nv_test_done();
}
