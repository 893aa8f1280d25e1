/* The launcher script: values from recipes are quoted, never evaluated;
 * reserved environment names are refused; the script reports phases and
 * the exit status. The script is run for real with /bin/sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/fsutil.h"
#include "jobs/launcher.h"
#include "nv_test.h"

static const char spec_text[] =
	"{\"id\":\"p-1\",\"commit\":\"abc\",\"project\":\"p\","
	"\"command\":[\"sh\",\"-c\",\"printf '%s|%s|%s' \\\"$1\\\" "
	"\\\"$WEIRD\\\" \\\"$NAVETTE_JOB_ID\\\" > "
	"\\\"$NAVETTE_OUTPUTS/out\\\"; exit 7\",\"x\",\"it's $(touch "
	"pwned); `id`\"],"
	"\"env\":{\"WEIRD\":\"a'b\\\"c $HOME; rm -rf /\"}}";

int main(void)
{
	char dir[] = "/tmp/navette-launcher-XXXXXX";
	char path[512], cmd[1200];
	nv_buf b;
	nv_err err;
	cJSON *spec = cJSON_Parse(spec_text);

	CHECK(spec != NULL);
	CHECK(mkdtemp(dir) != NULL);
	nv_buf_init(&b, NV_LAUNCHER_MAX);
	CHECK(nv_launcher_script(spec, &b, &err) == 0);
	CHECK(b.data && strncmp(b.data, "#!/bin/sh\n", 10) == 0);

	snprintf(path, sizeof(path), "%s/workspace", dir);
	nv_mkdir_p(path, 0755, &err);
	snprintf(path, sizeof(path), "%s/outputs", dir);
	nv_mkdir_p(path, 0755, &err);
	snprintf(path, sizeof(path), "%s/launcher.sh", dir);
	CHECK(nv_write_file_atomic(path, b.data, b.len, 0700, &err) == 0);
	snprintf(cmd, sizeof(cmd),
		 "env -i PATH=/usr/bin:/bin NAVETTE_JOB_DIR=%s /bin/sh %s; "
		 "exit $?",
		 dir, path);
	int rc = system(cmd);
	CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 7);

	char *out = NULL;
	size_t len = 0;
	snprintf(path, sizeof(path), "%s/outputs/out", dir);
	CHECK(nv_read_file(&out, &len, path, 4096, &err) == 0);
	CHECK_STR(out, "it's $(touch pwned); `id`|a'b\"c $HOME; rm -rf /|p-1");
	free(out);
	snprintf(path, sizeof(path), "%s/workspace/pwned", dir);
	CHECK(access(path, F_OK) != 0);

	snprintf(path, sizeof(path), "%s/status", dir);
	CHECK(nv_read_file(&out, &len, path, 4096, &err) == 0);
	CHECK_STR(out, "running\nlogs_visible\nexit 7\n");
	free(out);
	nv_buf_free(&b);

	/* reserved and malformed environment names */
	CHECK(nv_launcher_env_name_ok("EPOCHS"));
	CHECK(!nv_launcher_env_name_ok("NAVETTE_JOB_ID"));
	CHECK(!nv_launcher_env_name_ok("PATH"));
	CHECK(!nv_launcher_env_name_ok("A-B"));
	CHECK(!nv_launcher_env_name_ok("1A"));
	CHECK(!nv_launcher_env_name_ok(""));
	cJSON *bad = cJSON_Parse("{\"id\":\"p\",\"commit\":\"c\",\"project\":"
				 "\"p\",\"command\":[\"true\"],"
				 "\"env\":{\"X;rm -rf /\":\"v\"}}");
	nv_buf_init(&b, NV_LAUNCHER_MAX);
	CHECK(nv_launcher_script(bad, &b, &err) == NV_EINVAL);
	nv_buf_free(&b);
	cJSON_Delete(bad);
	bad = cJSON_Parse("{\"id\":\"p\",\"commit\":\"c\",\"project\":\"p\","
			  "\"command\":[]}");
	nv_buf_init(&b, NV_LAUNCHER_MAX);
	CHECK(nv_launcher_script(bad, &b, &err) == NV_EINVAL);
	nv_buf_free(&b);
	cJSON_Delete(bad);

	/* the cap holds */
	nv_buf_init(&b, 64);
	CHECK(nv_launcher_script(spec, &b, &err) == NV_ENOMEM);
	nv_buf_free(&b);

	cJSON_Delete(spec);
	nv_remove_tree(dir, &err);
	return nv_test_done();
}
