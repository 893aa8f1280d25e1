/* The reuse index entry (reuse/reuse_index.h): an entry navette writes is
 * read back field by field, and every entry that could point a run at
 * something else than a run record of the job it names, or overflow a
 * field, is refused with a message naming the field. */
#include <stdio.h>
#include <string.h>

#include "nv_test.h"
#include "reuse/reuse_index.h"

#define KEY                                                                    \
	"sha256:"                                                              \
	"08c03a005fdd2a0083e4cd184ac47900e8074783cae2800fc4c2cb4f3c1fa262"
#define GOOD                                                                   \
	"{\"navette_reuse\":1,\"key\":\"" KEY "\",\"job\":\"demo-l0x2ab-"      \
	"9f8e7\",\"name\":\"train[lr=0.01]\",\"project\":\"demo\","            \
	"\"profile\":\"local\",\"record\":\"file:///tmp/s/demo/demo-l0x2ab-"   \
	"9f8e7/navette-run.json\",\"created\":\"2026-12-07T08:00:00Z\","       \
	"\"later\":[1,2]}"

static int parses(const char *text, nv_reuse_entry *e, nv_err *err)
{
	return nv_reuse_index_parse(text, strlen(text), e, err);
}

/* GOOD with field=value (value as JSON text) instead of its own. */
static int variant(const char *field, const char *value, nv_err *err)
{
	char text[8192], pat[64];
	const char *at, *end;
	nv_reuse_entry e;

	snprintf(pat, sizeof(pat), "\"%s\":", field);
	at = strstr(GOOD, pat);
	if (!at)
		return 99;
	at += strlen(pat);
	end = at;
	if (*end == '"') {
		end = strchr(end + 1, '"') + 1;
	} else {
		while (*end != ',' && *end != '}')
			end++;
	}
	snprintf(text, sizeof(text), "%.*s%s%s", (int)(at - GOOD), GOOD, value,
		 end);
	return parses(text, &e, err);
}

int main(void)
{
	nv_reuse_entry e;
	nv_err err;
	char big[NV_REUSE_INDEX_MAX + 2];
	char longname[400];

	CHECK(parses(GOOD, &e, &err) == 0);
	CHECK_STR(e.key, KEY);
	CHECK_STR(e.job, "demo-l0x2ab-9f8e7");
	CHECK_STR(e.name, "train[lr=0.01]");
	CHECK_STR(e.project, "demo");
	CHECK_STR(e.profile, "local");
	CHECK_STR(e.record,
		  "file:///tmp/s/demo/demo-l0x2ab-9f8e7/navette-run.json");
	CHECK_STR(e.created, "2026-12-07T08:00:00Z");

	/* the key's form */
	CHECK(nv_reuse_key_check(KEY, &err) == 0);
	CHECK(nv_reuse_key_check("sha256:abc", &err) != 0);
	CHECK(nv_reuse_key_check(NULL, &err) != 0);
	CHECK(variant("key",
		      "\"sha1:08c03a005fdd2a0083e4cd184ac47900e8074783"
		      "cae2800fc4c2cb4f3c1fa262\"",
		      &err) != 0);
	CHECK(variant("key",
		      "\"sha256:08C03A005FDD2A0083E4CD184AC47900E80747"
		      "83CAE2800FC4C2CB4F3C1FA262\"",
		      &err) != 0);
	/* a job id out of its grammar: it names a folder and a prefix */
	CHECK(variant("job", "\"../../etc\"", &err) != 0);
	CHECK(strstr(err.message, "../../etc") != NULL);
	CHECK(variant("job", "\"Demo-1\"", &err) != 0);
	/* record: a run record's URL, nothing else */
	CHECK(variant("record", "\"https://evil.example/navette-run.json\"",
		      &err) != 0);
	CHECK(strstr(err.message, "'record'") != NULL);
	CHECK(variant("record", "\"file:///etc/passwd\"", &err) != 0);
	CHECK(variant("record", "\"s3://b/p/../../x/navette-run.json\"",
		      &err) != 0);
	CHECK(variant("record", "\"s3://b/demo/j/navette-run.json\"", &err) ==
	      0);
	/* texts: no control byte, UTF-8, bounded, present, of their type */
	CHECK(variant("name", "\"a\\u001b[31mred\"", &err) != 0);
	CHECK(strstr(err.message, "control") != NULL);
	CHECK(variant("name", "\"caf\\u00e9\"", &err) == 0);
	CHECK(variant("name", "\"\"", &err) != 0);
	CHECK(variant("name", "7", &err) != 0);
	memset(longname, 'a', sizeof(longname));
	longname[0] = '"';
	longname[300] = '"';
	longname[301] = '\0';
	CHECK(variant("name", longname, &err) != 0);
	CHECK(variant("profile", "null", &err) != 0);
	CHECK(variant("created", "\"yesterday\"", &err) != 0);
	/* the version */
	CHECK(variant("navette_reuse", "2", &err) != 0);
	CHECK(variant("navette_reuse", "\"1\"", &err) != 0);
	/* not an object, not JSON, too large */
	CHECK(parses("[1]", &e, &err) != 0);
	CHECK(parses("{", &e, &err) != 0);
	CHECK(parses("", &e, &err) != 0);
	memset(big, ' ', sizeof(big));
	memcpy(big, GOOD, strlen(GOOD));
	big[sizeof(big) - 1] = '\0';
	CHECK(parses(big, &e, &err) != 0);
	CHECK(e.key[0] == '\0'); /* a refused entry leaves nothing */
	return nv_test_done();
}
