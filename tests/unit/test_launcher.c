/* The launcher script: values from recipes are quoted, never evaluated;
 * reserved environment names are refused; the script reports phases and
 * the exit status. The script is run for real with /bin/sh. The node
 * launcher runs against a stand-in curl (tests/data/launcher/fake-curl:
 * file:// downloads, a POST "store" in a folder): checksums of code and
 * inputs, the success condition, hostile names and values in the run
 * record, reserved output names. (The real S3 path is
 * tests/integration/s3/test_s3_jobs.sh.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/fsutil.h"
#include "core/utf8.h"
#include "jobs/launcher.h"
#include "jobs/secrets.h"
#include "nv_test.h"

static const char spec_text[] =
	"{\"id\":\"p-1\",\"commit\":\"abc\",\"project\":\"p\","
	"\"command\":[\"sh\",\"-c\",\"printf '%s|%s|%s' \\\"$1\\\" "
	"\\\"$WEIRD\\\" \\\"$NAVETTE_JOB_ID\\\" > "
	"\\\"$NAVETTE_OUTPUTS/out\\\"; exit 7\",\"x\",\"it's $(touch "
	"pwned); `id`\"],"
	"\"env\":{\"WEIRD\":\"a'b\\\"c $HOME; rm -rf /\"}}";

/* ---- the node launcher ------------------------------------------------ */

static char rdir[] = "/tmp/navette-node-XXXXXX";
/* what a scheduler would set for the next run_node (NAME=value ...) */
static const char *node_env = "";

static void shell(const char *cmd)
{
	int rc = system(cmd);
	CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 0);
}

static char *sha256_of(const char *path)
{
	static char hex[65];
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "shasum -a 256 < '%s' | cut -c1-64", path);
	FILE *f = popen(cmd, "r");
	hex[0] = '\0';
	if (f) {
		if (!fgets(hex, sizeof(hex), f))
			hex[0] = '\0';
		pclose(f);
	}
	return hex;
}

/* A node launcher's spec, whose command is `sh run.sh` from the code
 * archive. */
static cJSON *node_spec(const char *input_sha, long input_size,
			const char *pattern, const char *required)
{
	char path[600];
	cJSON *spec = cJSON_Parse(
		"{\"id\":\"p-2\",\"commit\":\"c0ffee\",\"project\":\"p\","
		"\"command\":[\"sh\",\"run.sh\"],\"logs\":{\"max_bytes\":"
		"100000},\"success\":{\"exit_codes\":[0,5]},"
		"\"failure_condition\":{\"log_patterns\":[]}}");
	cJSON *t = cJSON_AddObjectToObject(spec, "transfer");
	cJSON *code = cJSON_AddObjectToObject(t, "code");
	cJSON *post = cJSON_AddObjectToObject(t, "post");
	cJSON *fields = cJSON_AddObjectToObject(post, "fields");
	cJSON *inputs = cJSON_AddArrayToObject(t, "inputs");
	cJSON *in = cJSON_CreateObject();

	cJSON_AddStringToObject(t, "prefix", "p/p-2/");
	cJSON_AddStringToObject(t, "output_url", "s3://b/p/p-2/");
	snprintf(path, sizeof(path), "file://%s/code.tar.gz", rdir);
	cJSON_AddStringToObject(code, "url", path);
	cJSON_AddStringToObject(code, "sha256", ""); /* set by run_node */
	cJSON_AddStringToObject(post, "url", "http://127.0.0.1:1/b");
	cJSON_AddStringToObject(fields, "key", "p/p-2/${filename}");
	cJSON_AddStringToObject(fields, "policy", "eyJ'quoted'$(id)");
	cJSON_AddStringToObject(fields, "x-amz-signature", "00ff");
	cJSON_AddStringToObject(in, "name", "data");
	cJSON_AddStringToObject(in, "url", "s3://b/in/data.csv");
	snprintf(path, sizeof(path), "file://%s/data.csv", rdir);
	cJSON_AddStringToObject(in, "get", path);
	cJSON_AddStringToObject(in, "sha256", input_sha);
	cJSON_AddNumberToObject(in, "size", (double)input_size);
	cJSON_AddItemToArray(inputs, in);
	if (pattern)
		cJSON_AddItemToArray(
			cJSON_GetObjectItem(
				cJSON_GetObjectItem(spec, "failure_condition"),
				"log_patterns"),
			cJSON_CreateString(pattern));
	if (required) {
		cJSON *req = cJSON_AddArrayToObject(
			cJSON_GetObjectItem(spec, "success"), "outputs");
		cJSON_AddItemToArray(req, cJSON_CreateString(required));
	}
	return spec;
}

/* Runs the launcher of spec in a fresh job folder; returns the run record
 * the launcher published to the stand-in store (NULL if none). */
static cJSON *run_node(cJSON *spec, const char *run_sh, int *status)
{
	char path[600], cmd[2400];
	nv_buf b;
	nv_err err;
	char *text = NULL;
	size_t len;
	cJSON *record = NULL;

	snprintf(cmd, sizeof(cmd),
		 "rm -rf '%s/job' '%s/store' '%s/src' && mkdir -p '%s/src'",
		 rdir, rdir, rdir, rdir);
	shell(cmd);
	snprintf(path, sizeof(path), "%s/src/run.sh", rdir);
	CHECK(nv_write_file_atomic(path, run_sh, strlen(run_sh), 0644, &err) ==
	      0);
	snprintf(cmd, sizeof(cmd), "tar -czf '%s/code.tar.gz' -C '%s/src' .",
		 rdir, rdir);
	shell(cmd);
	/* the archive changed: its sha256 in the spec follows */
	snprintf(path, sizeof(path), "%s/code.tar.gz", rdir);
	cJSON *code = cJSON_GetObjectItem(cJSON_GetObjectItem(spec, "transfer"),
					  "code");
	cJSON_ReplaceItemInObject(code, "sha256",
				  cJSON_CreateString(sha256_of(path)));
	nv_buf_init(&b, NV_LAUNCHER_MAX);
	CHECK(nv_launcher_script(spec, &b, &err) == 0);
	snprintf(path, sizeof(path), "%s/launcher.sh", rdir);
	CHECK(nv_write_file_atomic(path, b.data, b.len, 0700, &err) == 0);
	nv_buf_free(&b);
	snprintf(cmd, sizeof(cmd),
		 "env -i PATH=%s/bin:/usr/bin:/bin NAVETTE_JOB_DIR=%s/job "
		 "FAKE_STORE=%s/store FAKE_PREFIX=p/p-2/ %s "
		 "NAVETTE_LOG_INTERVAL=1 /bin/sh %s/launcher.sh "
		 ">%s/launcher.out 2>&1",
		 rdir, rdir, rdir, node_env, rdir, rdir);
	int rc = system(cmd);
	*status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
	snprintf(path, sizeof(path), "%s/store/p/p-2/navette-run.json", rdir);
	if (nv_read_file(&text, &len, path, 1 << 20, &err) == 0) {
		record = cJSON_Parse(text);
		if (!record)
			fprintf(stderr, "not JSON: %s\n", text);
	}
	free(text);
	return record;
}

static const char *rstr(const cJSON *o, const char *path1, const char *path2)
{
	const cJSON *v = cJSON_GetObjectItem(o, path1);
	if (path2)
		v = cJSON_GetObjectItem(v, path2);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int store_has(const char *key)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/store/%s", rdir, key);
	return access(path, F_OK) == 0;
}

static char *store_read(const char *key)
{
	char path[600], *text = NULL;
	size_t len;
	nv_err err;

	snprintf(path, sizeof(path), "%s/store/%s", rdir, key);
	if (nv_read_file(&text, &len, path, 1 << 20, &err) != 0)
		return NULL;
	return text;
}

/* A Python job that writes to stdout and stderr in turn: its log holds
 * the lines in the order written, since the launcher sets
 * PYTHONUNBUFFERED (run_node's environment has none); a job that sets
 * it keeps its value. */
static void test_python_order(const char *sha, long size)
{
	int status;
	cJSON *spec, *rec;
	char *log;
	const char *run_sh =
		"python3 -c 'import os, sys\n"
		"for i in range(3):\n"
		"    print(\"out\", i)\n"
		"    sys.stderr.write(\"err %d\\n\" % i)\n"
		"print(\"unbuffered=\" + os.environ.get(\"PYTHONUNBUFFERED\", "
		"\"\"))'\n";

	if (system("python3 -c '' >/dev/null 2>&1") != 0) {
		fprintf(stderr, "skip: no python3 for the log order test\n");
		return;
	}
	spec = node_spec(sha, size, NULL, NULL);
	rec = run_node(spec, run_sh, &status);
	CHECK(rec != NULL && status == 0);
	log = store_read("p/p-2/navette.log");
	CHECK(log && strstr(log, "out 0\nerr 0\nout 1\nerr 1\nout 2\nerr 2\n"
				 "unbuffered=1\n"));
	if (!log || !strstr(log, "out 0\nerr 0\n"))
		fprintf(stderr, "log:\n%s\n", log ? log : "(none)");
	free(log);
	cJSON_Delete(rec);
	cJSON_Delete(spec);

	/* the job's own value is kept */
	spec = node_spec(sha, size, NULL, NULL);
	cJSON_AddItemToObject(spec, "env",
			      cJSON_Parse("{\"PYTHONUNBUFFERED\":"
					  "\"\"}"));
	rec = run_node(spec, run_sh, &status);
	CHECK(rec != NULL && status == 0);
	log = store_read("p/p-2/navette.log");
	CHECK(log && strstr(log, "unbuffered=\n"));
	free(log);
	cJSON_Delete(rec);
	cJSON_Delete(spec);
}

/* A job's secrets on a node: the sealed object fetched through its GET,
 * deleted through its DELETE, decrypted by the node's openssl with the
 * launcher's password into a 0400 file named by HF_TOKEN_FILE; the log
 * shipped masks the value (and the password of a user:pass); the folder
 * is gone at the end. Without the delivery (the launcher kept in jobs.db,
 * a plan's) the job fails before running. */
static void test_node_secrets(const char *sha, long size)
{
	static const char value[] = "hubsecret-5e1f0c9a7d3b2e8f4a6c";
	/* (made up; named so that the tree's own secret scan passes it) */
	static const char regpass[] = "s3cr3t-pa55w0rd-xyz";
	char obj[600], obj2[600], url[700], pass[65], pass2[65];
	nv_secret *tok = nv_secret_new("hub", NV_SECRET_BEARER, "env", NULL);
	nv_secret *reg = nv_secret_new("reg", NV_SECRET_BASIC, "env", NULL);
	cJSON *spec, *rec, *list, *delivery, *item;
	char *log;
	nv_err err;
	int status;

	CHECK(tok &&
	      nv_secret_set(tok, "token", value, strlen(value), &err) == 0);
	CHECK(reg && nv_secret_set(reg, "user", "alice", 5, &err) == 0 &&
	      nv_secret_set(reg, "password", regpass, strlen(regpass), &err) ==
		      0);
	snprintf(obj, sizeof(obj), "%s/sealed-hub", rdir);
	snprintf(obj2, sizeof(obj2), "%s/sealed-reg", rdir);
	CHECK(nv_job_secret_seal(tok, obj, pass, &err) == 0);
	CHECK(nv_job_secret_seal(reg, obj2, pass2, &err) == 0);

	spec = node_spec(sha, size, NULL, NULL);
	list = cJSON_AddArrayToObject(spec, "secrets");
	delivery = cJSON_AddArrayToObject(spec, "secrets_delivery");
	item = cJSON_CreateObject();
	cJSON_AddStringToObject(item, "name", "HF_TOKEN");
	cJSON_AddStringToObject(item, "credential", "hub");
	cJSON_AddItemToArray(list, item);
	item = cJSON_CreateObject();
	cJSON_AddStringToObject(item, "name", "REG");
	cJSON_AddStringToObject(item, "credential", "reg");
	cJSON_AddItemToArray(list, item);
	item = cJSON_CreateObject();
	cJSON_AddStringToObject(item, "name", "HF_TOKEN");
	snprintf(url, sizeof(url), "file://%s", obj);
	cJSON_AddStringToObject(item, "get", url);
	cJSON_AddStringToObject(item, "delete", url);
	cJSON_AddStringToObject(item, "password", pass);
	cJSON_AddItemToArray(delivery, item);
	item = cJSON_CreateObject();
	cJSON_AddStringToObject(item, "name", "REG");
	snprintf(url, sizeof(url), "file://%s", obj2);
	cJSON_AddStringToObject(item, "get", url);
	cJSON_AddStringToObject(item, "delete", url);
	cJSON_AddStringToObject(item, "password", pass2);
	cJSON_AddItemToArray(delivery, item);
	rec = run_node(
		spec,
		"echo \"mode=$(ls -l \"$HF_TOKEN_FILE\" | cut -c1-10)\"\n"
		"echo \"dir=$NAVETTE_SECRETS\"\n"
		"echo \"value=$(cat \"$HF_TOKEN_FILE\")\"\n"
		"echo \"pass=$(cut -d: -f2 \"$REG_FILE\")\"\n"
		"echo \"both=$(cat \"$REG_FILE\")\"\n"
		"env > \"$NAVETTE_WORKSPACE/env\"\n"
		"if grep -q hubsecret \"$NAVETTE_WORKSPACE/env\"; then "
		"echo env=holds; else echo env=clean; fi\n",
		&status);
	CHECK(rec != NULL);
	CHECK_STR(rstr(rec, "state", NULL), "succeeded");
	log = store_read("p/p-2/navette.log");
	CHECK(log != NULL);
	if (log) {
		const char *dir = strstr(log, "dir=");
		char folder[300] = "";
		CHECK(strstr(log, "mode=-r--------\n") != NULL);
		CHECK(strstr(log, "value=<redacted:HF_TOKEN>\n") != NULL);
		CHECK(strstr(log, "pass=<redacted:REG>\n") != NULL);
		CHECK(strstr(log, "both=<redacted:REG>\n") != NULL);
		CHECK(strstr(log, "env=clean\n") != NULL);
		CHECK(strstr(log, value) == NULL);
		CHECK(strstr(log, regpass) == NULL);
		if (dir)
			sscanf(dir + 4, "%299[^\n]", folder);
		CHECK(folder[0] == '/');
		CHECK(folder[0] == '/' && access(folder, F_OK) != 0);
	}
	free(log);
	CHECK(access(obj, F_OK) != 0); /* deleted once fetched */
	CHECK(access(obj2, F_OK) != 0);
	cJSON_Delete(rec);

	/* the launcher as jobs.db keeps it: no URLs, no password */
	cJSON_DeleteItemFromObject(spec, "secrets_delivery");
	rec = run_node(spec, "touch \"$NAVETTE_OUTPUTS/ran\"\n", &status);
	CHECK_STR(rstr(rec, "failure", "phase"), "data_ready");
	CHECK(rstr(rec, "failure", "reason") &&
	      strstr(rstr(rec, "failure", "reason"), "without its secrets"));
	CHECK(!store_has("p/p-2/ran"));
	cJSON_Delete(rec);
	cJSON_Delete(spec);
	nv_secret_free(tok);
	nv_secret_free(reg);
}

/* The generated script for spec, or NULL with *rc its error. */
static char *script_of(const cJSON *spec, int *rc, nv_err *err)
{
	nv_buf b;

	nv_buf_init(&b, NV_LAUNCHER_MAX);
	*rc = nv_launcher_script(spec, &b, err);
	if (*rc) {
		nv_buf_free(&b);
		return NULL;
	}
	return b.data;
}

/* Whether spec with launch (JSON) is refused, the message naming what. */
static int launch_refused(const char *sha, const char *launch, const char *what)
{
	cJSON *spec = node_spec(sha, 1, NULL, NULL);
	nv_err err;
	int rc;
	char *text;

	cJSON_AddItemToObject(spec, "launch", cJSON_Parse(launch));
	text = script_of(spec, &rc, &err);
	free(text);
	cJSON_Delete(spec);
	return rc == NV_EINVAL && strstr(err.message, what) != NULL;
}

/* spec.launch, the scheduler's values (launcher.h): without it one plain
 * run that cannot requeue, whatever the node's environment says; with
 * another scheduler's, its variables and commands, quoted; an array's
 * case on its index variable; bad names and words refused; a launcher
 * that its container started runs the command in place. */
static void test_launch(const char *sha, long size)
{
	char path[600], *text, *got;
	const char *reason;
	nv_err err;
	int status, rc;
	cJSON *spec, *rec, *specs;

	/* a stand-in scontrol that leaves a mark when asked anything */
	snprintf(path, sizeof(path), "%s/bin/scontrol", rdir);
	{
		char sc[700];
		snprintf(sc, sizeof(sc),
			 "#!/bin/sh\necho \"$*\" >> %s/asked\necho "
			 "denied\nexit 1\n",
			 rdir);
		CHECK(nv_write_file_atomic(path, sc, strlen(sc), 0755, &err) ==
		      0);
	}

	/* no launch: attempt 1 whatever SLURM_RESTART_COUNT says, and a
	 * retry that needs a requeue fails saying why */
	spec = node_spec(sha, size, NULL, NULL);
	cJSON_AddItemToObject(spec, "retries",
			      cJSON_Parse("{\"max\":2,\"on\":[\"exit:3\"]}"));
	text = script_of(spec, &rc, &err);
	CHECK(rc == 0 && text && !strstr(text, "${SLURM") &&
	      strstr(text, "\nnv_launch_requeue_program=\n"));
	free(text);
	node_env = "NAVETTE_RETRY_ON=exit:3 SLURM_JOB_ID=77 "
		   "SLURM_RESTART_COUNT=1 SLURMD_NODENAME=slurm-node";
	rec = run_node(spec, "exit 3\n", &status);
	CHECK(rec != NULL);
	CHECK_STR(rstr(rec, "failure", "phase"), "running");
	reason = rstr(rec, "failure", "reason");
	CHECK(reason && strstr(reason, "exited with status 3") &&
	      strstr(reason, "no way to requeue the job"));
	CHECK(rstr(rec, "failure", "hint") &&
	      strstr(rstr(rec, "failure", "hint"), "spec.launch.requeue"));
	CHECK(cJSON_GetObjectItem(rec, "attempt") &&
	      cJSON_GetObjectItem(rec, "attempt")->valuedouble == 1);
	got = cJSON_PrintUnformatted(cJSON_GetObjectItem(rec, "attempts"));
	CHECK(got && !strstr(got, "slurm-node"));
	free(got);
	snprintf(path, sizeof(path), "%s/asked", rdir);
	CHECK(access(path, F_OK) != 0);
	cJSON_Delete(rec);

	/* another scheduler's values: its restarts, node and job reference,
	 * its requeue command (words quoted, the reference last) */
	cJSON_AddItemToObject(
		spec, "launch",
		cJSON_Parse("{\"scheduler\":\"Kube\",\"attempt\":\"RESTARTS\","
			    "\"node\":\"MY_NODE\",\"job\":\"MY_JOB\","
			    "\"requeue\":[\"scontrol\",\"it's $(touch "
			    "pwned)\"],\"requeue_needs\":\"a kind "
			    "cluster\"}"));
	node_env = "NAVETTE_RETRY_ON=exit:3 RESTARTS=1 MY_NODE=kube-node "
		   "MY_JOB=j-7 SLURM_JOB_ID=77";
	rec = run_node(spec, "exit 3\n", &status);
	CHECK(rec != NULL);
	reason = rstr(rec, "failure", "reason");
	CHECK(reason &&
	      strstr(reason, "Kube did not requeue the job (denied)"));
	CHECK(rstr(rec, "failure", "hint") &&
	      strstr(rstr(rec, "failure", "hint"), "a kind cluster"));
	CHECK(cJSON_GetObjectItem(rec, "attempt") &&
	      cJSON_GetObjectItem(rec, "attempt")->valuedouble == 2);
	got = cJSON_PrintUnformatted(cJSON_GetObjectItem(rec, "attempts"));
	CHECK(got && strstr(got, "\"node\":\"kube-node\""));
	free(got);
	snprintf(path, sizeof(path), "%s/asked", rdir);
	CHECK(nv_read_file(&got, &(size_t){0}, path, 4096, &err) == 0);
	CHECK_STR(got, "it's $(touch pwned) j-7\n");
	free(got);
	unlink(path);
	snprintf(path, sizeof(path), "%s/job/workspace/pwned", rdir);
	CHECK(access(path, F_OK) != 0);
	cJSON_Delete(rec);
	node_env = "";

	/* a launcher its container started: no runtime, no pull */
	cJSON_DeleteItemFromObject(spec, "retries");
	cJSON_ReplaceItemInObject(spec, "launch",
				  cJSON_Parse("{\"in_container\":true}"));
	cJSON_AddItemToObject(spec, "container",
			      cJSON_Parse("{\"image\":\"reg/app@sha256:ab\","
					  "\"runtime\":\"/nowhere/podman\"}"));
	text = script_of(spec, &rc, &err);
	CHECK(rc == 0 && text && !strstr(text, "/nowhere/podman"));
	free(text);
	rec = run_node(spec, "touch \"$NAVETTE_OUTPUTS/ran\"\n", &status);
	CHECK_STR(rstr(rec, "state", NULL), "succeeded");
	CHECK(store_has("p/p-2/ran"));
	cJSON_Delete(rec);
	cJSON_Delete(spec);

	/* an array's tasks chosen by the scheduler's index variable */
	specs = cJSON_CreateArray();
	for (int k = 0; k < 2; k++) {
		spec = node_spec(sha, size, NULL, NULL);
		cJSON_ReplaceItemInObject(
			spec, "id", cJSON_CreateString(k ? "p-3" : "p-2"));
		cJSON_AddItemToObject(spec, "launch",
				      cJSON_Parse("{\"array_index\":"
						  "\"JOB_COMPLETION_INDEX\"}"));
		cJSON_AddItemToArray(specs, spec);
	}
	{
		nv_buf b;
		nv_buf_init(&b, NV_LAUNCHER_ARRAY_MAX);
		CHECK(nv_launcher_array_script(specs, &b, &err) == 0);
		CHECK(b.data &&
		      strstr(b.data, "\ncase ${JOB_COMPLETION_INDEX:-} in\n") &&
		      strstr(b.data, "no task '${JOB_COMPLETION_INDEX:-}'") &&
		      !strstr(b.data, "${SLURM"));
		nv_buf_free(&b);
		/* without an index variable there is no array */
		cJSON_ArrayForEach(spec, specs)
			cJSON_DeleteItemFromObject(spec, "launch");
		nv_buf_init(&b, NV_LAUNCHER_ARRAY_MAX);
		CHECK(nv_launcher_array_script(specs, &b, &err) == NV_EINVAL);
		CHECK(strstr(err.message, "array_index") != NULL);
		nv_buf_free(&b);
		cJSON_ArrayForEach(spec, specs) cJSON_AddItemToObject(
			spec, "launch",
			cJSON_Parse("{\"array_index\":\"X;id\"}"));
		nv_buf_init(&b, NV_LAUNCHER_ARRAY_MAX);
		CHECK(nv_launcher_array_script(specs, &b, &err) == NV_EINVAL);
		CHECK(b.len == 0 || !strstr(b.data, "X;id"));
		nv_buf_free(&b);
	}
	cJSON_Delete(specs);

	/* Kubernetes' way: an attempt the retries name ends with the exit
	 * code requeue_exit (the Job controller runs the index again),
	 * leaving its line in the attempts and no record; one past
	 * retries.max fails with the command's own code and its record */
	spec = node_spec(sha, size, NULL, NULL);
	cJSON_AddItemToObject(spec, "retries",
			      cJSON_Parse("{\"max\":2,\"on\":[\"exit:3\"]}"));
	cJSON_AddItemToObject(
		spec, "launch",
		cJSON_Parse(
			"{\"scheduler\":\"Kubernetes\",\"attempt\":"
			"\"FAILS\",\"node\":\"K_NODE\",\"requeue_exit\":75}"));
	text = script_of(spec, &rc, &err);
	CHECK(rc == 0 && text && strstr(text, "\nnv_launch_requeue_exit=75\n"));
	free(text);
	node_env = "NAVETTE_RETRY_ON=exit:3 FAILS=0 K_NODE=kwok-gpu-a";
	rec = run_node(spec, "exit 3\n", &status);
	CHECK(rec == NULL);
	CHECK(status == 75);
	snprintf(path, sizeof(path),
		 "%s/store/p/p-2/navette-checkpoint/attempts.jsonl", rdir);
	CHECK(nv_read_file(&got, &(size_t){0}, path, 4096, &err) == 0);
	CHECK(got && strstr(got, "\"attempt\":1,\"state\":\"failed\"") &&
	      strstr(got, "\"node\":\"kwok-gpu-a\""));
	free(got);
	node_env = "NAVETTE_RETRY_ON=exit:3 FAILS=2 K_NODE=kwok-gpu-a";
	rec = run_node(spec, "exit 3\n", &status);
	CHECK(rec != NULL);
	CHECK(status == 3);
	reason = rstr(rec, "failure", "reason");
	CHECK(reason && strstr(reason, "attempt 3 of 3, no retry left"));
	cJSON_Delete(rec);
	cJSON_Delete(spec);
	node_env = "";

	/* what a spec may not give */
	CHECK(launch_refused(sha, "{\"requeue_exit\":0}", "requeue_exit"));
	CHECK(launch_refused(sha, "{\"requeue_exit\":256}", "requeue_exit"));
	CHECK(launch_refused(sha, "{\"requeue_exit\":\"75\"}", "requeue_exit"));
	CHECK(launch_refused(sha, "{\"requeue_exit\":7.5}", "requeue_exit"));
	CHECK(launch_refused(sha,
			     "{\"job\":\"J\",\"requeue\":[\"r\"],"
			     "\"requeue_exit\":75}",
			     "requeue_exit"));
	CHECK(launch_refused(sha, "{\"array_index\":\"A;rm -rf /\"}",
			     "array_index"));
	CHECK(launch_refused(sha, "{\"attempt\":\"NAVETTE_JOB_ID\"}",
			     "attempt"));
	CHECK(launch_refused(sha, "{\"node\":\"PATH\"}", "node"));
	CHECK(launch_refused(sha, "{\"job\":7}", "job"));
	CHECK(launch_refused(sha, "{\"arrayindex\":\"I\"}", "arrayindex"));
	CHECK(launch_refused(sha, "{\"job\":\"J\",\"requeue\":[]}", "requeue"));
	CHECK(launch_refused(sha, "{\"job\":\"J\",\"requeue\":[\"\"]}",
			     "requeue"));
	CHECK(launch_refused(sha, "{\"job\":\"J\",\"time_left\":[1]}",
			     "time_left"));
	CHECK(launch_refused(sha, "{\"timed_out\":[\"t\"]}", "no job"));
	CHECK(launch_refused(sha, "{\"scheduler\":\"a\\nb\"}", "scheduler"));
	CHECK(launch_refused(sha, "{\"in_container\":\"yes\"}",
			     "in_container"));
	CHECK(launch_refused(sha, "[\"SLURM_JOB_ID\"]", "not an object"));
}

static void test_node_launcher(void)
{
	char path[600], link[600];
	nv_err err;
	int status;
	const char *data = "a,b\n1,2\n";
	cJSON *spec, *rec;

	CHECK(mkdtemp(rdir) != NULL);
	snprintf(path, sizeof(path), "%s/bin", rdir);
	nv_mkdir_p(path, 0755, &err);
	snprintf(path, sizeof(path), "%s/bin/curl", rdir);
	const char *data_dir = getenv("NAVETTE_TEST_DATA");
	CHECK(data_dir != NULL && data_dir[0] == '/');
	if (!data_dir || data_dir[0] != '/')
		return; /* the stand-in curl is needed: never the real one */
	snprintf(link, sizeof(link), "%s/launcher/fake-curl", data_dir);
	CHECK(access(link, X_OK) == 0);
	CHECK(symlink(link, path) == 0);
	/* a node with a GPU: nvidia-smi as a driver prints it, for the
	 * fingerprint */
	snprintf(path, sizeof(path), "%s/bin/nvidia-smi", rdir);
	{
		const char *smi =
			"#!/bin/sh\n"
			"case \"$*\" in\n"
			"*query-gpu*) echo 'NVIDIA H200, 560.35.03'; "
			"echo 'NVIDIA H200, 560.35.03' ;;\n"
			"*) echo '| NVIDIA-SMI 560.35.03   Driver Version: "
			"560.35.03   CUDA Version: 12.6     |' ;;\n"
			"esac\n";
		CHECK(nv_write_file_atomic(path, smi, strlen(smi), 0755,
					   &err) == 0);
	}
	snprintf(path, sizeof(path), "%s/data.csv", rdir);
	CHECK(nv_write_file_atomic(path, data, strlen(data), 0644, &err) == 0);
	char sha[65];
	snprintf(sha, sizeof(sha), "%s", sha256_of(path));

	/* success: exit 5 is allowed; outputs with a space and a subfolder */
	spec = node_spec(sha, (long)strlen(data), NULL, "sub/r.txt");
	rec = run_node(spec,
		       "cat \"$NAVETTE_INPUTS/data\" > \"$NAVETTE_OUTPUTS/a "
		       "b.txt\"\nmkdir -p \"$NAVETTE_OUTPUTS/sub\"\n"
		       "echo r > \"$NAVETTE_OUTPUTS/sub/r.txt\"\n"
		       "echo done\nexit 5\n",
		       &status);
	CHECK(rec != NULL);
	CHECK(status == 0);
	CHECK_STR(rstr(rec, "state", NULL), "succeeded");
	CHECK(cJSON_GetObjectItem(rec, "exit_code") &&
	      cJSON_GetObjectItem(rec, "exit_code")->valuedouble == 5);
	CHECK(store_has("p/p-2/a b.txt") && store_has("p/p-2/sub/r.txt"));
	/* the node's fingerprint: the kernel, the CPU, the GPUs and CUDA
	 * from nvidia-smi; no interpreter (the command is sh) */
	{
		const cJSON *node = cJSON_GetObjectItem(rec, "node");
		const cJSON *gpus = cJSON_GetObjectItem(node, "gpus");

		CHECK(cJSON_IsObject(node));
		CHECK(rstr(node, "kernel", NULL) &&
		      strlen(rstr(node, "kernel", NULL)) > 2);
		CHECK(cJSON_IsNumber(cJSON_GetObjectItem(
			cJSON_GetObjectItem(node, "cpu"), "cores")));
		CHECK(cJSON_GetArraySize(gpus) == 2);
		CHECK_STR(rstr(cJSON_GetArrayItem(gpus, 1), "name", NULL),
			  "NVIDIA H200");
		CHECK_STR(rstr(cJSON_GetArrayItem(gpus, 0), "driver", NULL),
			  "560.35.03");
		CHECK_STR(rstr(node, "cuda", NULL), "12.6");
		CHECK(cJSON_IsNull(cJSON_GetObjectItem(node, "interpreter")));
		CHECK(cJSON_IsNull(cJSON_GetObjectItem(node, "runtime")));
	}
	CHECK(store_has("p/p-2/navette.log") &&
	      store_has("p/p-2/navette-status"));
	const cJSON *outs = cJSON_GetObjectItem(rec, "outputs");
	CHECK(cJSON_GetArraySize(outs) == 2);
	CHECK_STR(rstr(cJSON_GetArrayItem(outs, 0), "name", NULL), "a b.txt");
	CHECK_STR(rstr(cJSON_GetArrayItem(outs, 0), "sha256", NULL), sha);
	CHECK_STR(rstr(cJSON_GetArrayItem(outs, 0), "url", NULL),
		  "s3://b/p/p-2/a b.txt");
	CHECK_STR(
		rstr(cJSON_GetArrayItem(cJSON_GetObjectItem(rec, "inputs"), 0),
		     "sha256", NULL),
		sha);
	CHECK_STR(rstr(rec, "log", "url"), "s3://b/p/p-2/navette.log");
	cJSON_Delete(rec);
	cJSON_Delete(spec);

	/* an input whose bytes are not those submitted: nothing runs */
	spec = node_spec("0000000000000000000000000000000000000000000000000"
			 "000000000000000",
			 (long)strlen(data), NULL, NULL);
	rec = run_node(spec, "touch \"$NAVETTE_OUTPUTS/ran\"\n", &status);
	CHECK(status != 0);
	CHECK_STR(rstr(rec, "state", NULL), "failed");
	CHECK_STR(rstr(rec, "failure", "phase"), "data_ready");
	CHECK(rstr(rec, "failure", "reason") &&
	      strstr(rstr(rec, "failure", "reason"), "has sha256"));
	CHECK(!store_has("p/p-2/ran"));
	cJSON_Delete(rec);
	cJSON_Delete(spec);

	/* a wrong size is caught too */
	spec = node_spec(sha, 3, NULL, NULL);
	rec = run_node(spec, "true\n", &status);
	CHECK(rstr(rec, "failure", "reason") &&
	      strstr(rstr(rec, "failure", "reason"), "bytes"));
	cJSON_Delete(rec);
	cJSON_Delete(spec);

	/* a failure pattern with quotes and backslashes: the record stays
	 * JSON and names it; exit 0 does not save the job */
	spec = node_spec(sha, (long)strlen(data), "bad \"thing\" \\ here",
			 NULL);
	rec = run_node(spec,
		       "printf '%s\\n' 'a bad \"thing\" \\ here!'\n"
		       "echo x > \"$NAVETTE_OUTPUTS/x\"\n",
		       &status);
	CHECK(rec != NULL);
	CHECK_STR(rstr(rec, "failure", "phase"), "running");
	CHECK(rstr(rec, "failure", "reason") &&
	      strstr(rstr(rec, "failure", "reason"),
		     "'bad \"thing\" \\ here'"));
	CHECK(!store_has("p/p-2/x"));
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(rec, "outputs")) == 0);
	cJSON_Delete(rec);
	cJSON_Delete(spec);

	/* a reserved output name, and a required output missing */
	spec = node_spec(sha, (long)strlen(data), NULL, NULL);
	rec = run_node(spec, "echo x > \"$NAVETTE_OUTPUTS/navette-run.json\"\n",
		       &status);
	CHECK_STR(rstr(rec, "failure", "phase"), "outputs_published");
	CHECK(rstr(rec, "failure", "reason") &&
	      strstr(rstr(rec, "failure", "reason"), "reserved"));
	cJSON_Delete(rec);
	cJSON_Delete(spec);
	/* reserved in any case, and with what a share drops: a volume that
	 * folds names would let the log overwrite the output */
	spec = node_spec(sha, (long)strlen(data), NULL, NULL);
	rec = run_node(spec,
		       "echo x > \"$NAVETTE_OUTPUTS/ok.txt\"\n"
		       "echo x > \"$NAVETTE_OUTPUTS/Navette.LOG\"\n",
		       &status);
	CHECK_STR(rstr(rec, "failure", "phase"), "outputs_published");
	CHECK(rstr(rec, "failure", "reason") &&
	      strstr(rstr(rec, "failure", "reason"), "'Navette.LOG'") &&
	      strstr(rstr(rec, "failure", "reason"), "'navette.log'"));
	CHECK(!store_has("p/p-2/Navette.LOG"));
	cJSON_Delete(rec);
	cJSON_Delete(spec);
	spec = node_spec(sha, (long)strlen(data), NULL, NULL);
	rec = run_node(spec,
		       "mkdir \"$NAVETTE_OUTPUTS/NAVETTE-LOG. \"\n"
		       "echo x > \"$NAVETTE_OUTPUTS/NAVETTE-LOG. /000001\"\n",
		       &status);
	CHECK_STR(rstr(rec, "failure", "phase"), "outputs_published");
	CHECK(rstr(rec, "failure", "reason") &&
	      strstr(rstr(rec, "failure", "reason"), "'navette-log'"));
	cJSON_Delete(rec);
	cJSON_Delete(spec);
	/* output names that are not UTF-8 (a file, a symlink, a reserved
	 * name): refused, and the reason shows them as text, so that the
	 * record stays valid JSON (cJSON_Parse would take raw bytes: the
	 * file is checked as UTF-8 itself) */
	static const char *const bad_names[] = {
		"echo x > \"$NAVETTE_OUTPUTS/$(printf 'r\\351sum\\351')\"\n",
		"ln -s /etc/passwd \"$NAVETTE_OUTPUTS/$(printf 'l\\377')\"\n",
		"mkdir \"$NAVETTE_OUTPUTS/navette-log\"\n"
		"echo x > \"$NAVETTE_OUTPUTS/navette-log/$(printf '\\377')\"\n",
		NULL};
	for (int i = 0; bad_names[i]; i++) {
		char *text = NULL;
		size_t tlen = 0;
		spec = node_spec(sha, (long)strlen(data), NULL, NULL);
		rec = run_node(spec, bad_names[i], &status);
		CHECK_STR(rstr(rec, "failure", "phase"), "outputs_published");
		CHECK(rstr(rec, "failure", "reason") &&
		      strchr(rstr(rec, "failure", "reason"), '?'));
		snprintf(path, sizeof(path), "%s/store/p/p-2/navette-run.json",
			 rdir);
		CHECK(nv_read_file(&text, &tlen, path, 1 << 20, &err) == 0);
		CHECK(text && nv_utf8_invalid_at(text, tlen) == NV_UTF8_VALID);
		free(text);
		cJSON_Delete(rec);
		cJSON_Delete(spec);
	}
	spec = node_spec(sha, (long)strlen(data), NULL, "model.bin");
	rec = run_node(spec, "exit 0\n", &status);
	CHECK_STR(rstr(rec, "failure", "phase"), "outputs_published");
	CHECK(rstr(rec, "failure", "reason") &&
	      strstr(rstr(rec, "failure", "reason"), "model.bin"));
	cJSON_Delete(rec);
	cJSON_Delete(spec);

	/* a symlink among the outputs is refused, never followed */
	spec = node_spec(sha, (long)strlen(data), NULL, NULL);
	rec = run_node(spec, "ln -s /etc/passwd \"$NAVETTE_OUTPUTS/pw\"\n",
		       &status);
	CHECK_STR(rstr(rec, "failure", "phase"), "outputs_published");
	CHECK(!store_has("p/p-2/pw"));
	cJSON_Delete(rec);
	cJSON_Delete(spec);

	/* an image the node cannot pull: failed at image_ready, nothing
	 * fetched or run */
	spec = node_spec(sha, (long)strlen(data), NULL, NULL);
	cJSON *c = cJSON_AddObjectToObject(spec, "container");
	snprintf(path, sizeof(path), "%s/launcher/fake-runtime", data_dir);
	cJSON_AddStringToObject(c, "runtime", path);
	cJSON_AddStringToObject(c, "image", "reg/missing@sha256:00");
	rec = run_node(spec, "touch \"$NAVETTE_OUTPUTS/ran\"\n", &status);
	CHECK_STR(rstr(rec, "failure", "phase"), "image_ready");
	CHECK(rstr(rec, "failure", "reason") &&
	      strstr(rstr(rec, "failure", "reason"), "manifest unknown"));
	CHECK(!store_has("p/p-2/ran"));
	cJSON_Delete(rec);
	cJSON_Delete(spec);

	/* an incomplete transfer section is refused at generation */
	spec = node_spec(sha, 1, NULL, NULL);
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(spec, "transfer"),
				   "post");
	nv_buf b;
	nv_buf_init(&b, NV_LAUNCHER_MAX);
	CHECK(nv_launcher_script(spec, &b, &err) == NV_EINVAL);
	nv_buf_free(&b);
	cJSON_Delete(spec);
	test_node_secrets(sha, (long)strlen(data));
	test_python_order(sha, (long)strlen(data));
	test_launch(sha, (long)strlen(data));
	nv_remove_tree(rdir, &err);
}

/* Runs a local job in an image through a stand-in runtime (path): the
 * command writes $WEIRD and its working directory to outputs/w. Returns
 * the launcher's exit status; *status gets the status file, *w the
 * output (NULL when missing), *log the runtime's log of its options. */
static int run_in_container(const char *dir, const char *runtime,
			    const char *image, int gpus, char **status,
			    char **w, char **log)
{
	char path[600], cmd[1600];
	size_t len;
	nv_buf b;
	nv_err err;
	int rc;
	cJSON *spec = cJSON_Parse(
		"{\"id\":\"p-3\",\"commit\":\"c\",\"project\":\"p\","
		"\"command\":[\"sh\",\"-c\",\"printf '%s' "
		"\\\"$WEIRD\\\" "
		"> \\\"$NAVETTE_OUTPUTS/w\\\"; pwd >> "
		"\\\"$NAVETTE_OUTPUTS/w\\\"; printf '%s' "
		"\\\"$NAVETTE_JOB_ID $NAVETTE_WORKSPACE ${HOST_ONLY:-}\\\" "
		">> \\\"$NAVETTE_OUTPUTS/w\\\"\"],"
		"\"env\":{\"WEIRD\":\"a b'c\"}}");
	cJSON *c = cJSON_AddObjectToObject(spec, "container");

	cJSON_AddStringToObject(c, "runtime", runtime);
	cJSON_AddStringToObject(c, "image", image);
	if (gpus)
		cJSON_AddNumberToObject(
			cJSON_AddObjectToObject(spec, "resources"), "gpus", 1);
	*status = *w = *log = NULL;
	nv_buf_init(&b, NV_LAUNCHER_MAX);
	CHECK(nv_launcher_script(spec, &b, &err) == 0);
	cJSON_Delete(spec);
	snprintf(cmd, sizeof(cmd),
		 "rm -rf %s/j %s/runtime.log && mkdir -p %s/j/workspace "
		 "%s/j/inputs %s/j/outputs",
		 dir, dir, dir, dir, dir);
	CHECK(system(cmd) == 0);
	snprintf(path, sizeof(path), "%s/launcher.sh", dir);
	CHECK(nv_write_file_atomic(path, b.data, b.len, 0700, &err) == 0);
	nv_buf_free(&b);
	snprintf(cmd, sizeof(cmd),
		 "env -i PATH=/usr/bin:/bin NAVETTE_JOB_DIR=%s/j HOST_ONLY=x "
		 "FAKE_RUNTIME_LOG=%s/runtime.log /bin/sh %s; exit $?",
		 dir, dir, path);
	rc = system(cmd);
	snprintf(path, sizeof(path), "%s/j/status", dir);
	CHECK(nv_read_file(status, &len, path, 4096, &err) == 0);
	snprintf(path, sizeof(path), "%s/j/outputs/w", dir);
	if (nv_read_file(w, &len, path, 4096, &err))
		*w = NULL;
	snprintf(path, sizeof(path), "%s/runtime.log", dir);
	if (nv_read_file(log, &len, path, 8192, &err))
		*log = NULL;
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static int has_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = text; p && *p;) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if (len == n && memcmp(p, line, n) == 0)
			return 1;
		p = e ? e + 1 : NULL;
	}
	return 0;
}

/* Whether the runtime's log has "OPT DIR/j/WHAT:DIR/j/WHATSUFFIX", the
 * bind mount of the job folder's WHAT at its own path. */
static int mount_logged(const char *log, const char *dir, const char *opt,
			const char *what, const char *suffix)
{
	char line[1400];

	snprintf(line, sizeof(line), "%s %s/j/%s:%s/j/%s%s", opt, dir, what,
		 dir, what, suffix);
	return has_line(log, line);
}

/* A local job in an image, through stand-ins of each runtime family: the
 * image is pulled before anything runs, the workspace and inputs are
 * mounted read-only at their paths, outputs writable, only the job's
 * variables pass in, GPUs pass when the job asks for them, and a pull
 * failure stops the job at image_ready with nothing run. */
static void test_container(void)
{
	char dir[] = "/tmp/navette-container-XXXXXX";
	char runtime[600], want[1400];
	const char *data_dir = getenv("NAVETTE_TEST_DATA");
	static const char *const families[] = {"fake-runtime",
					       "fake-apptainer/apptainer",
					       "fake-enroot/enroot"};
	char *status, *w, *log;

	CHECK(data_dir != NULL && data_dir[0] == '/');
	if (!data_dir || data_dir[0] != '/')
		return;
	CHECK(mkdtemp(dir) != NULL);
	for (int f = 0; f < 3; f++) {
		snprintf(runtime, sizeof(runtime), "%s/launcher/%s", data_dir,
			 families[f]);
		/* a job that runs */
		CHECK(run_in_container(dir, runtime, "reg/app@sha256:ab",
				       f == 1, &status, &w, &log) == 0);
		CHECK_STR(status, "image_ready\ndata_ready\nrunning\n"
				  "logs_visible\nexit 0\n");
		snprintf(want, sizeof(want),
			 "a b'c%s/j/workspace\np-3 %s/j/workspace ", dir, dir);
		CHECK_STR(w, want);
		if (f == 0) {
			CHECK(mount_logged(log, dir, "-v", "workspace", ":ro"));
			CHECK(mount_logged(log, dir, "-v", "inputs", ":ro"));
			CHECK(mount_logged(log, dir, "-v", "outputs", ""));
			CHECK(has_line(log, "-e WEIRD"));
			CHECK(has_line(log, "--pull=never"));
			CHECK(has_line(log, "image reg/app@sha256:ab"));
			CHECK(!strstr(log ? log : "", "nvidia"));
		} else if (f == 1) {
			CHECK(mount_logged(log, dir, "--bind", "workspace",
					   ":ro"));
			CHECK(mount_logged(log, dir, "--bind", "inputs",
					   ":ro"));
			CHECK(mount_logged(log, dir, "--bind", "outputs", ""));
			CHECK(has_line(log, "--cleanenv"));
			CHECK(has_line(log, "--containall"));
			CHECK(has_line(log, "--nv")); /* gpus = 1 */
			CHECK(has_line(log,
				       "image docker://reg/app@sha256:ab"));
		} else {
			CHECK(mount_logged(log, dir, "--mount", "inputs",
					   ":none:x-create=dir,bind,ro"));
			CHECK(mount_logged(log, dir, "--mount", "outputs",
					   ":none:x-create=dir,bind"));
			CHECK(has_line(log, "--env WEIRD"));
			CHECK(has_line(log,
				       "image docker://reg#app@sha256:ab"));
		}
		free(status);
		free(w);
		free(log);
		/* GPUs asked for: the OCI family passes them */
		if (f == 0) {
			CHECK(run_in_container(dir, runtime,
					       "reg/app@sha256:ab", 1, &status,
					       &w, &log) == 0);
			CHECK(has_line(log, "--device nvidia.com/gpu=all"));
			free(status);
			free(w);
			free(log);
		}
		/* an image the node cannot pull */
		CHECK(run_in_container(dir, runtime, "reg/missing@sha256:ab", 0,
				       &status, &w, &log) == 125);
		CHECK(status && strncmp(status,
					"image_failed cannot pull "
					"reg/missing@sha256:ab",
					45) == 0);
		CHECK(status && !strstr(status, "running"));
		CHECK(w == NULL);
		free(status);
		free(w);
		free(log);
	}
	{
		nv_err err;

		nv_remove_tree(dir, &err);
	}
}

/* The launcher makes folders, keys and log lines of the job id: a spec
 * whose id breaks the grammar (core/jobid.h) gets no script, local or
 * node, and the refusal names the id. A byte count the shell's
 * arithmetic would overflow is refused too, not printed. */
static void test_bad_ids_and_counts(void)
{
	static char longid[100]; /* NUL-free but overlong */
	const char *const bad[] = {
		"..",   "../../victim",  "/",    "/tmp/abs", "",
		"-rf",  "caf\xc3\xa9-1", "a\nb", "a/b",      "A-1",
		"p-1-", longid,          NULL};
	nv_buf b;
	nv_err err;

	memset(longid, 'a', sizeof(longid) - 1);
	for (int i = 0; bad[i]; i++) {
		const char *id = bad[i];
		for (int node = 0; node < 2; node++) {
			cJSON *spec = node ? node_spec("00", 1, NULL, NULL)
					   : cJSON_Parse(spec_text);
			cJSON_ReplaceItemInObject(spec, "id",
						  cJSON_CreateString(id));
			nv_buf_init(&b, NV_LAUNCHER_MAX);
			nv_err_clear(&err);
			CHECK(nv_launcher_script(spec, &b, &err) == NV_EINVAL);
			CHECK(strstr(err.message, "job id") != NULL);
			CHECK(b.len == 0);
			nv_buf_free(&b);
			cJSON_Delete(spec);
		}
	}
	cJSON *spec = cJSON_Parse(spec_text);
	cJSON_ReplaceItemInObject(spec, "id",
				  cJSON_CreateString("../../victim"));
	nv_buf_init(&b, NV_LAUNCHER_MAX);
	CHECK(nv_launcher_script(spec, &b, &err) == NV_EINVAL);
	CHECK(strstr(err.message, "'../../victim'") != NULL);
	nv_buf_free(&b);
	cJSON_Delete(spec);

	/* logs.max_bytes and max_output_bytes: whole, 0..2^53 */
	static const double counts[] = {9223372036854775808.0, 1e300, -1, 2.5,
					9007199254740994.0};
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		for (int which = 0; which < 2; which++) {
			cJSON *r = node_spec("00", 1, NULL, NULL);
			cJSON *o = cJSON_GetObjectItemCaseSensitive(
				r, which ? "transfer" : "logs");
			const char *key =
				which ? "max_output_bytes" : "max_bytes";
			cJSON_DeleteItemFromObject(o, key);
			cJSON_AddNumberToObject(o, key, counts[i]);
			nv_buf_init(&b, NV_LAUNCHER_MAX);
			CHECK(nv_launcher_script(r, &b, &err) == NV_EINVAL);
			CHECK(strstr(err.message, key) != NULL);
			nv_buf_free(&b);
			cJSON_Delete(r);
		}
	}
	cJSON *r = node_spec("00", 1, NULL, NULL);
	cJSON *logs = cJSON_GetObjectItemCaseSensitive(r, "logs");
	cJSON_DeleteItemFromObject(logs, "max_bytes");
	cJSON_AddNumberToObject(logs, "max_bytes", 9007199254740992.0);
	nv_buf_init(&b, NV_LAUNCHER_MAX);
	CHECK(nv_launcher_script(r, &b, &err) == 0);
	CHECK(b.data && strstr(b.data, "NAVETTE_LOG_MAX='9007199254740992'"));
	nv_buf_free(&b);
	cJSON_Delete(r);
}

/* Writes the launcher b into job folder dir (with its workspace and
 * outputs) and runs it from there with an empty environment; the
 * system() status. */
static int run_launcher(const char *dir, const nv_buf *b)
{
	char path[512], cmd[1200];
	nv_err err;

	snprintf(path, sizeof(path), "%s/workspace", dir);
	nv_mkdir_p(path, 0755, &err);
	snprintf(path, sizeof(path), "%s/outputs", dir);
	nv_mkdir_p(path, 0755, &err);
	snprintf(path, sizeof(path), "%s/launcher.sh", dir);
	CHECK(nv_write_file_atomic(path, b->data, b->len, 0700, &err) == 0);
	snprintf(cmd, sizeof(cmd),
		 "cd %s && env -i PATH=/usr/bin:/bin NAVETTE_JOB_DIR=%s "
		 "/bin/sh %s; exit $?",
		 dir, dir, path);
	return system(cmd);
}

/* A sweep's parameters: each exported as NAVETTE_PARAM_<NAME>, quoted,
 * never evaluated; a bad name or a value that is not text refused. */
static void test_params(void)
{
	static const char *const bad[] = {
		"{\"1x\":\"1\"}",
		"{\"a-b\":\"1\"}",
		"{\"\":\"1\"}",
		"{\"a\":1}",
		"{\"a\":null}",
		"[\"a\"]",
		"{\"abcdefghijklmnopqrstuvwxyz0123456\":\"1\"}"};
	char dir[] = "/tmp/navette-params-XXXXXX";
	char path[512], cmd[1200];
	nv_buf b;
	nv_err err;
	char *out = NULL;
	size_t len = 0;
	cJSON *spec = cJSON_Parse(
		"{\"id\":\"p-2\",\"commit\":\"abc\",\"project\":\"p\","
		"\"command\":[\"sh\",\"-c\",\"printf '%s|%s' "
		"\\\"$NAVETTE_PARAM_LR\\\" \\\"$NAVETTE_PARAM_MODEL_NAME\\\" > "
		"\\\"$NAVETTE_OUTPUTS/out\\\"\"],"
		"\"params\":{\"lr\":\"0.001\",\"model_name\":\"$(touch "
		"pwned)'x\"}}");

	CHECK(spec != NULL);
	CHECK(mkdtemp(dir) != NULL);
	nv_buf_init(&b, NV_LAUNCHER_MAX);
	CHECK(nv_launcher_script(spec, &b, &err) == 0);
	/* run from the job folder: an assignment that evaluated its value
	 * would make pwned there (the header runs before any cd) */
	int rc = run_launcher(dir, &b);
	CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 0);
	snprintf(path, sizeof(path), "%s/outputs/out", dir);
	CHECK(nv_read_file(&out, &len, path, 4096, &err) == 0);
	CHECK_STR(out, "0.001|$(touch pwned)'x");
	free(out);
	snprintf(path, sizeof(path), "%s/pwned", dir);
	CHECK(access(path, F_OK) != 0);
	snprintf(path, sizeof(path), "%s/workspace/pwned", dir);
	CHECK(access(path, F_OK) != 0);
	nv_buf_free(&b);

	/* a container gets them too */
	cJSON *c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "runtime", "podman");
	cJSON_AddStringToObject(c, "image",
				"example.invalid/x@sha256:"
				"00000000000000000000000000000000"
				"00000000000000000000000000000000");
	cJSON_AddItemToObject(spec, "container", c);
	nv_buf_init(&b, NV_LAUNCHER_MAX);
	CHECK(nv_launcher_script(spec, &b, &err) == 0);
	CHECK(b.data && strstr(b.data, "-e NAVETTE_PARAM_LR ") != NULL);
	CHECK(b.data && strstr(b.data, "-e NAVETTE_PARAM_MODEL_NAME ") != NULL);
	nv_buf_free(&b);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cJSON_ReplaceItemInObject(spec, "params", cJSON_Parse(bad[i]));
		nv_buf_init(&b, NV_LAUNCHER_MAX);
		CHECK(nv_launcher_script(spec, &b, &err) == NV_EINVAL);
		nv_buf_free(&b);
	}
	cJSON_Delete(spec);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	shell(cmd);
}

int main(void)
{
	char dir[] = "/tmp/navette-launcher-XXXXXX";
	char path[512];
	nv_buf b;
	nv_err err;
	cJSON *spec = cJSON_Parse(spec_text);

	CHECK(spec != NULL);
	CHECK(mkdtemp(dir) != NULL);
	nv_buf_init(&b, NV_LAUNCHER_MAX);
	CHECK(nv_launcher_script(spec, &b, &err) == 0);
	CHECK(b.data && strncmp(b.data, "#!/bin/sh\n", 10) == 0);

	int rc = run_launcher(dir, &b);
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

	test_bad_ids_and_counts();
	test_params();

	/* reserved and malformed environment names */
	CHECK(nv_launcher_env_name_ok("EPOCHS"));
	CHECK(!nv_launcher_env_name_ok("NAVETTE_JOB_ID"));
	CHECK(!nv_launcher_env_name_ok("PATH"));
	CHECK(!nv_launcher_env_name_ok("A-B"));
	CHECK(!nv_launcher_env_name_ok("1A"));
	CHECK(!nv_launcher_env_name_ok(""));
	/* names the shell or the loader give a meaning to */
	CHECK(!nv_launcher_env_name_ok("OPTIND"));
	CHECK(!nv_launcher_env_name_ok("IFS"));
	CHECK(!nv_launcher_env_name_ok("PS4"));
	CHECK(!nv_launcher_env_name_ok("ENV"));
	CHECK(!nv_launcher_env_name_ok("BASH_ENV"));
	CHECK(!nv_launcher_env_name_ok("BASH_FUNC_x%%"));
	CHECK(!nv_launcher_env_name_ok("LD_PRELOAD"));
	CHECK(!nv_launcher_env_name_ok("LD_LIBRARY_PATH"));
	CHECK(!nv_launcher_env_name_ok("DYLD_INSERT_LIBRARIES"));
	CHECK(!nv_launcher_env_name_ok("GLIBC_TUNABLES"));
	CHECK(!nv_launcher_env_name_ok("GCONV_PATH"));
	CHECK(!nv_launcher_env_name_ok("MALLOC_CHECK_"));
	CHECK(strstr(nv_launcher_env_name_problem("OPTIND"), "shell") != NULL);
	CHECK(nv_launcher_env_name_problem("EPOCHS") == NULL);
	CHECK(nv_launcher_env_name_ok("LANG"));
	CHECK(nv_launcher_env_name_ok("OLD_LD_PATH"));
	CHECK(nv_launcher_env_name_ok("optind_like"));

	/* a job's own objects, in any case, are not outputs */
	CHECK_STR(nv_launcher_output_reserved("Navette.log"), "navette.log");
	CHECK_STR(nv_launcher_output_reserved("NAVETTE-RUN.JSON"),
		  "navette-run.json");
	CHECK_STR(nv_launcher_output_reserved("navette-log/000001"),
		  "navette-log");
	CHECK_STR(nv_launcher_output_reserved("Navette-Status."),
		  "navette-status");
	CHECK(nv_launcher_output_reserved("navette.logs") == NULL);
	CHECK(nv_launcher_output_reserved("sub/navette.log") == NULL);
	CHECK(nv_launcher_output_reserved("result.txt") == NULL);

	/* a local container in a VM (macOS; forced here): no host network,
	 * and a GPU job is refused rather than run without its GPUs */
	{
		static const char vm_spec[] =
			"{\"id\":\"p-9\",\"commit\":\"c\",\"project\":\"p\","
			"\"backend\":\"local\",\"command\":[\"true\"],"
			"\"container\":{\"image\":\"reg/app@sha256:ab\","
			"\"runtime\":\"podman\"}}";
		cJSON *vm = cJSON_Parse(vm_spec);

		nv_buf_init(&b, NV_LAUNCHER_MAX);
		CHECK(nv_launcher_script(vm, &b, &err) == 0);
		CHECK(b.data && strstr(b.data, "--network=host") != NULL);
		nv_buf_free(&b);
		setenv("NAVETTE_LOCAL_RUNTIME_IN_VM", "1", 1);
		nv_buf_init(&b, NV_LAUNCHER_MAX);
		CHECK(nv_launcher_script(vm, &b, &err) == 0);
		CHECK(b.data && strstr(b.data, "--pull=never") &&
		      !strstr(b.data, "--network=host"));
		nv_buf_free(&b);
		cJSON_AddItemToObject(vm, "resources",
				      cJSON_Parse("{\"gpus\":1}"));
		nv_buf_init(&b, NV_LAUNCHER_MAX);
		CHECK(nv_launcher_script(vm, &b, &err) == NV_EREFUSED);
		CHECK(strstr(err.message, "GPUs") && strstr(err.message, "VM"));
		nv_buf_free(&b);
		/* a Slurm job's container runs on its node, not in the VM */
		cJSON_ReplaceItemInObject(vm, "backend",
					  cJSON_CreateString("slurm"));
		nv_buf_init(&b, NV_LAUNCHER_MAX);
		CHECK(nv_launcher_script(vm, &b, &err) == 0);
		CHECK(b.data && strstr(b.data, "--network=host") &&
		      strstr(b.data, "nvidia.com/gpu=all"));
		nv_buf_free(&b);
		unsetenv("NAVETTE_LOCAL_RUNTIME_IN_VM");
		cJSON_Delete(vm);
	}
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
	test_node_launcher();
	test_container();
	return nv_test_done();
}
