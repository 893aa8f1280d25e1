/* The lifecycle rule of s3_lifecycle.c: the XML sent (checked against the
 * PutBucketLifecycleConfiguration reference: Rule with ID, Filter/Prefix,
 * Status and Expiration/Days), escaping, the checks on its arguments, and
 * the reading of a bucket's configuration as radosgw and AWS write it
 * (indented or not, other rules beside navette's, a different number of
 * days, oversized or truncated answers). The calls themselves run against
 * radosgw in tests/integration/s3/test_archive_logs.sh. */
#include <stdio.h>
#include <string.h>

#include "nv_test.h"
#include "storage/s3_lifecycle.h"

static const char expected[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
	"<LifecycleConfiguration "
	"xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
	"<Rule><ID>navette-archive</ID><Filter><Prefix>team/_archive/"
	"</Prefix></Filter><Status>Enabled</Status><Expiration><Days>365"
	"</Days></Expiration></Rule></LifecycleConfiguration>";

static void test_xml(void)
{
	nv_buf b;
	nv_err err;

	nv_buf_init(&b, NV_S3_LIFECYCLE_XML_MAX);
	CHECK(nv_s3_lifecycle_xml(&b, "navette-archive", "team/_archive/", 365,
				  &err) == 0);
	CHECK_STR(b.data, expected);
	nv_buf_free(&b);

	/* a prefix is escaped as XML text */
	nv_buf_init(&b, NV_S3_LIFECYCLE_XML_MAX);
	CHECK(nv_s3_lifecycle_xml(&b, "r", "a&b<c>'\"/", 1, &err) == 0);
	CHECK(strstr(b.data, "<Prefix>a&amp;b&lt;c&gt;&apos;&quot;/</Prefix>"));
	CHECK(strstr(b.data, "<Days>1</Days>"));
	nv_buf_free(&b);
}

static void test_refused(void)
{
	char long_id[NV_S3_LIFECYCLE_ID_MAX + 2];
	char long_prefix[1100];
	nv_buf b;
	nv_err err;

	memset(long_id, 'a', sizeof(long_id) - 1);
	long_id[sizeof(long_id) - 1] = '\0';
	memset(long_prefix, 'p', sizeof(long_prefix) - 1);
	long_prefix[sizeof(long_prefix) - 1] = '\0';
	nv_buf_init(&b, NV_S3_LIFECYCLE_XML_MAX);
	CHECK(nv_s3_lifecycle_xml(&b, "", "p/", 1, &err) == NV_EINVAL);
	CHECK(nv_s3_lifecycle_xml(&b, long_id, "p/", 1, &err) == NV_EINVAL);
	CHECK(nv_s3_lifecycle_xml(&b, "a b", "p/", 1, &err) == NV_EINVAL);
	CHECK(nv_s3_lifecycle_xml(&b, "a<b", "p/", 1, &err) == NV_EINVAL);
	/* an empty prefix would expire the whole bucket */
	CHECK(nv_s3_lifecycle_xml(&b, "r", "", 1, &err) == NV_EINVAL);
	CHECK(strstr(err.message, "whole bucket"));
	CHECK(nv_s3_lifecycle_xml(&b, "r", NULL, 1, &err) == NV_EINVAL);
	CHECK(nv_s3_lifecycle_xml(&b, "r", long_prefix, 1, &err) == NV_EINVAL);
	CHECK(nv_s3_lifecycle_xml(&b, "r", "a\nb", 1, &err) == NV_EINVAL);
	CHECK(nv_s3_lifecycle_xml(&b, "r", "a\xff", 1, &err) == NV_EINVAL);
	CHECK(nv_s3_lifecycle_xml(&b, "r", "p/", 0, &err) == NV_EINVAL);
	CHECK(nv_s3_lifecycle_xml(&b, "r", "p/", -3, &err) == NV_EINVAL);
	CHECK(nv_s3_lifecycle_xml(&b, "r", "p/", NV_S3_LIFECYCLE_DAYS_MAX + 1,
				  &err) == NV_EINVAL);
	CHECK(b.len == 0); /* nothing written on a refusal */
	nv_buf_free(&b);
}

static void match(const char *xml, long days, int *rules, int *ours, int *same)
{
	nv_s3_lifecycle_match(xml, strlen(xml), "navette-archive",
			      "team/_archive/", days, rules, ours, same);
}

static void test_match(void)
{
	/* as radosgw answers GetBucketLifecycleConfiguration: indented */
	static const char rgw[] =
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<LifecycleConfiguration xmlns=\"http://s3.amazonaws.com/doc/"
		"2006-03-01/\">\n  <Rule>\n    <ID>navette-archive</ID>\n"
		"    <Filter>\n      <Prefix>team/_archive/</Prefix>\n"
		"    </Filter>\n    <Status>Enabled</Status>\n"
		"    <Expiration>\n      <Days>365</Days>\n    </Expiration>\n"
		"  </Rule>\n</LifecycleConfiguration>\n";
	static const char two[] =
		"<LifecycleConfiguration><Rule><ID>theirs</ID><Filter><Prefix>"
		"tmp/</Prefix></Filter><Status>Enabled</Status><Expiration>"
		"<Days>7</Days></Expiration></Rule><Rule><ID>navette-archive"
		"</ID><Filter><Prefix>team/_archive/</Prefix></Filter><Status>"
		"Enabled</Status><Expiration><Days>365</Days></Expiration>"
		"</Rule></LifecycleConfiguration>";
	static const char foreign[] =
		"<LifecycleConfiguration><Rule><ID>theirs</ID><Filter><Prefix>"
		"tmp/</Prefix></Filter><Status>Enabled</Status></Rule>"
		"</LifecycleConfiguration>";
	static const char disabled[] =
		"<LifecycleConfiguration><Rule><ID>navette-archive</ID><Filter>"
		"<Prefix>team/_archive/</Prefix></Filter><Status>Disabled"
		"</Status><Expiration><Days>365</Days></Expiration></Rule>"
		"</LifecycleConfiguration>";
	int rules, ours, same;

	match(rgw, 365, &rules, &ours, &same);
	CHECK(rules == 1 && ours && same);
	/* the policy's days changed: navette's rule, not the same */
	match(rgw, 30, &rules, &ours, &same);
	CHECK(rules == 1 && ours && !same);
	match(expected, 365, &rules, &ours, &same);
	CHECK(rules == 1 && ours && same);
	match(two, 365, &rules, &ours, &same);
	CHECK(rules == 2 && ours && same);
	match(foreign, 365, &rules, &ours, &same);
	CHECK(rules == 1 && !ours && !same);
	match(disabled, 365, &rules, &ours, &same);
	CHECK(rules == 1 && ours && !same);
	/* a text's own spaces are kept: a prefix "team/ _archive/" differs */
	nv_s3_lifecycle_match(rgw, strlen(rgw), "navette-archive",
			      "team/ _archive/", 365, &rules, &ours, &same);
	CHECK(rules == 1 && ours && !same);
	/* no configuration text, or a truncated one */
	/* a rule written <Rule\t> or <Rule/> still counts; <Rules> does not */
	match("<Rules><Rule\t><ID>x</ID></Rule><Rule/>", 365, &rules, &ours,
	      &same);
	CHECK(rules == 2 && !ours && !same);
	match("", 365, &rules, &ours, &same);
	CHECK(rules == 0 && !ours && !same);
	match("<LifecycleConfiguration><Rule><ID>navette-archive</ID>", 365,
	      &rules, &ours, &same);
	CHECK(rules == 1 && ours && !same);
}

static void test_bounds(void)
{
	static char big[NV_S3_LIFECYCLE_XML_MAX + 2];
	int rules, ours, same;

	memset(big, ' ', sizeof(big) - 1);
	nv_s3_lifecycle_match(big, sizeof(big) - 1, "navette-archive", "p/", 1,
			      &rules, &ours, &same);
	CHECK(rules == -1 && !ours && !same);
	/* a NUL inside the answer */
	nv_s3_lifecycle_match("<Rule>\0<Rule>", 13, "navette-archive", "p/", 1,
			      &rules, &ours, &same);
	CHECK(rules == -1);
	nv_s3_lifecycle_match(NULL, 0, "navette-archive", "p/", 1, &rules,
			      &ours, &same);
	CHECK(rules == -1);
}

int main(void)
{
	test_xml();
	test_refused();
	test_match();
	test_bounds();
	return nv_test_done();
}
