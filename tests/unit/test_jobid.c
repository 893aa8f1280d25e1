/* The job id grammar (core/jobid.h), shared by the job database, the
 * agent, the launcher, the stores and Slurm: ids navette makes pass, and
 * every variant that could climb out of a folder, start an option, break a
 * line or a shell word is refused with a message naming the id. */
#include <string.h>

#include "core/jobid.h"
#include "nv_test.h"

static const char *const good[] = {
	"p-1", "ab", "my-project-20261202-155154-0123abc-9f8e7d",
	"0123456789abcdefghijklmnopqrstuvwxyz-0123456789abcdefghijklmnop",
	NULL};

static const char *const bad[] = {"..",
				  "../../victim",
				  "a/../b",
				  "/",
				  "a/b",
				  "/tmp/x",
				  "",
				  "-rf",
				  "-x-1",
				  "p-1-",
				  "caf\xc3\xa9-1",
				  "a\nb",
				  "a\rb",
				  "a b",
				  "A-1",
				  "a_b",
				  "a%b",
				  "a.b",
				  "a\\b",
				  "\x1b[31mred",
				  "a",
				  "a\xff",
				  NULL};

int main(void)
{
	nv_err err;
	char longid[200];

	/* the last good one is 63 characters, the limit */
	CHECK(strlen(good[3]) == 63);
	for (int i = 0; good[i]; i++) {
		CHECK(nv_job_id_check(good[i], &err) == 0);
		CHECK(nv_job_id_prefix_check(good[i], &err) == 0);
	}
	for (int i = 0; bad[i]; i++) {
		nv_err_clear(&err);
		CHECK(nv_job_id_check(bad[i], &err) == NV_EINVAL);
		CHECK(err.code == NV_EINVAL);
		CHECK(strstr(err.message, "job id") != NULL);
		CHECK(err.hint[0] != '\0');
		/* the message never carries the raw control byte */
		CHECK(strchr(err.message, '\n') == NULL);
		CHECK(strchr(err.message, '\x1b') == NULL);
	}
	CHECK(nv_job_id_check(NULL, &err) == NV_EINVAL);

	/* the message names the bad id, bytes shown as \xNN */
	nv_job_id_check("../../victim", &err);
	CHECK(strstr(err.message, "'../../victim'") != NULL);
	CHECK(strstr(err.message, "offset 0") != NULL);
	nv_job_id_check("a\nb", &err);
	CHECK(strstr(err.message, "'a\\x0ab'") != NULL);
	CHECK(strstr(err.message, "offset 1") != NULL);
	nv_job_id_check("caf\xc3\xa9-1", &err);
	CHECK(strstr(err.message, "caf\\xc3\\xa9-1") != NULL);
	nv_job_id_check("-rf", &err);
	CHECK(strstr(err.message, "starts with '-'") != NULL);

	/* NUL-free but overlong: 64 is refused, and a very long one is
	 * shown shortened */
	memset(longid, 'a', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = '\0';
	CHECK(nv_job_id_check(longid, &err) == NV_EINVAL);
	CHECK(strstr(err.message, "longer than 63") != NULL);
	CHECK(strstr(err.message, "...") != NULL);
	CHECK(strlen(err.message) < 200);
	longid[64] = '\0';
	CHECK(nv_job_id_check(longid, &err) == NV_EINVAL);
	longid[63] = '\0';
	CHECK(nv_job_id_check(longid, &err) == 0);

	/* a prefix typed by a user may end with '-' or be one character */
	CHECK(nv_job_id_prefix_check("p-", &err) == 0);
	CHECK(nv_job_id_prefix_check("p", &err) == 0);
	CHECK(nv_job_id_prefix_check("p%", &err) == NV_EINVAL);
	CHECK(nv_job_id_prefix_check("p_", &err) == NV_EINVAL);
	CHECK(nv_job_id_prefix_check("-p", &err) == NV_EINVAL);
	CHECK(nv_job_id_prefix_check("", &err) == NV_EINVAL);
	CHECK(nv_job_id_prefix_check("../x", &err) == NV_EINVAL);
	return nv_test_done();
}
