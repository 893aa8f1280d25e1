/* Unit tests of host/k8s/k8s_manifest.c: a job description checked key by
 * key and the Job, Secret, patches and DeleteOptions it becomes. Each body
 * is parsed back with cJSON and its fields checked (design 3.2 of issue
 * 31), every refusal is tried, the same description gives the same bytes
 * whatever the order of its settings, and a 1,000-task sweep stays small.
 *
 * With NV_K8S_MANIFEST_OUT=DIR it also writes the manifests it built into
 * DIR (job-*.json, secret-*.json) for the schema check
 * (tests/integration/kubernetes/test_k8s_manifest_schema.sh); with
 * arguments "check FILE" it only runs nv_k8s_job_check on FILE (exit 1
 * when refused, the error on stderr). */
#include "k8s/k8s_manifest.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "nv_test.h"

#define IMAGE                                                                  \
	"127.0.0.1:5000/navette/base@sha256:"                                  \
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

#define UID "6f1a2b3c-0000-4000-8000-00000000abcd"

static const char *out_dir;

static void set(nv_k8s_job_desc *d, const char *k, const char *v)
{
	nv_err err;
	int rc = nv_k8s_desc_set(d, k, v, &err);

	CHECK(rc == 0);
	if (rc)
		fprintf(stderr, "set %s: %s\n", k, err.message);
}

/* o's member along the NULL-terminated path of keys (or array indexes
 * written "#N"). */
static cJSON *at(const cJSON *o, ...)
{
	va_list ap;
	const char *k;

	va_start(ap, o);
	while (o && (k = va_arg(ap, const char *)) != NULL)
		o = k[0] == '#' ? cJSON_GetArrayItem(o, atoi(k + 1))
				: cJSON_GetObjectItemCaseSensitive(o, k);
	va_end(ap);
	return (cJSON *)o;
}

static const char *str(const cJSON *o)
{
	return cJSON_IsString(o) ? o->valuestring : NULL;
}

static int num(const cJSON *o)
{
	return cJSON_IsNumber(o) ? o->valueint : -12345;
}

/* The array of numbers as "a,b,c". */
static const char *numbers(const cJSON *a, char *out, size_t cap)
{
	const cJSON *v;
	size_t used = 0;

	out[0] = '\0';
	cJSON_ArrayForEach(v, a)
	{
		used += (size_t)snprintf(out + used, cap - used, "%s%d",
					 used ? "," : "", v->valueint);
	}
	return out;
}

/* The object's keys as "a,b,c" (their order is the body's). */
static const char *keys(const cJSON *o, char *out, size_t cap)
{
	const cJSON *v;
	size_t used = 0;

	out[0] = '\0';
	cJSON_ArrayForEach(v, o)
	{
		used += (size_t)snprintf(out + used, cap - used, "%s%s",
					 used ? "," : "", v->string);
	}
	return out;
}

static void save(const char *name, const char *text)
{
	char path[4096];
	FILE *f;

	if (!out_dir)
		return;
	snprintf(path, sizeof(path), "%s/%s", out_dir, name);
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	fputs(text, f);
	fclose(f);
}

static void base(nv_k8s_job_desc *d)
{
	nv_k8s_desc_init(d);
	set(d, "name", "demo-lxk2a0-7f3qz");
	set(d, "namespace", "navette-test");
	set(d, "image", IMAGE);
}

static cJSON *build(const nv_k8s_job_desc *d, const char *file)
{
	char *text = NULL;
	nv_err err;
	cJSON *job;
	int rc = nv_k8s_job_manifest(d, &text, &err);

	CHECK(rc == 0);
	if (rc) {
		fprintf(stderr, "job manifest: %s\n", err.message);
		return NULL;
	}
	if (file)
		save(file, text);
	job = cJSON_Parse(text);
	CHECK(job != NULL);
	free(text);
	return job;
}

static void test_one_job(void)
{
	nv_k8s_job_desc d;
	cJSON *job, *pod, *c, *rules, *env, *vol;
	char text[512], *stext = NULL;
	nv_err err;

	base(&d);
	job = build(&d, "job-one.json");
	CHECK_STR(str(at(job, "apiVersion", NULL)), "batch/v1");
	CHECK_STR(str(at(job, "kind", NULL)), "Job");
	CHECK_STR(keys(job, text, sizeof(text)),
		  "apiVersion,kind,metadata,spec");
	CHECK_STR(str(at(job, "metadata", "name", NULL)), "demo-lxk2a0-7f3qz");
	CHECK_STR(str(at(job, "metadata", "namespace", NULL)), "navette-test");
	CHECK_STR(keys(at(job, "metadata", "labels", NULL), text, sizeof(text)),
		  "navette/job");
	CHECK(at(job, "metadata", "annotations", NULL) == NULL);
	CHECK_STR(keys(at(job, "spec", NULL), text, sizeof(text)),
		  "completionMode,completions,parallelism,backoffLimit,"
		  "backoffLimitPerIndex,podReplacementPolicy,suspend,"
		  "podFailurePolicy,template");
	CHECK_STR(str(at(job, "spec", "completionMode", NULL)), "Indexed");
	CHECK(num(at(job, "spec", "completions", NULL)) == 1);
	CHECK(num(at(job, "spec", "parallelism", NULL)) == 1);
	CHECK(num(at(job, "spec", "backoffLimit", NULL)) == 1);
	CHECK(num(at(job, "spec", "backoffLimitPerIndex", NULL)) == 0);
	CHECK_STR(str(at(job, "spec", "podReplacementPolicy", NULL)), "Failed");
	CHECK(cJSON_IsFalse(at(job, "spec", "suspend", NULL)));
	CHECK(at(job, "spec", "ttlSecondsAfterFinished", NULL) == NULL);
	CHECK(at(job, "spec", "activeDeadlineSeconds", NULL) == NULL);

	/* disruptions are ignored; any exit but 0 ends the one job */
	rules = at(job, "spec", "podFailurePolicy", "rules", NULL);
	CHECK(cJSON_GetArraySize(rules) == 2);
	CHECK_STR(str(at(rules, "#0", "action", NULL)), "Ignore");
	CHECK_STR(str(at(rules, "#0", "onPodConditions", "#0", "type", NULL)),
		  "DisruptionTarget");
	CHECK_STR(str(at(rules, "#0", "onPodConditions", "#0", "status", NULL)),
		  "True");
	CHECK_STR(str(at(rules, "#1", "action", NULL)), "FailJob");
	CHECK_STR(str(at(rules, "#1", "onExitCodes", "operator", NULL)),
		  "NotIn");
	CHECK_STR(str(at(rules, "#1", "onExitCodes", "containerName", NULL)),
		  "job");
	CHECK_STR(numbers(at(rules, "#1", "onExitCodes", "values", NULL), text,
			  sizeof(text)),
		  "0");

	pod = at(job, "spec", "template", "spec", NULL);
	CHECK_STR(str(at(job, "spec", "template", "metadata", "labels",
			 "navette/job", NULL)),
		  "demo-lxk2a0-7f3qz");
	CHECK_STR(str(at(pod, "restartPolicy", NULL)), "Never");
	CHECK(cJSON_IsFalse(at(pod, "automountServiceAccountToken", NULL)));
	CHECK(cJSON_IsFalse(at(pod, "enableServiceLinks", NULL)));
	CHECK(at(pod, "nodeSelector", NULL) == NULL);
	CHECK(at(pod, "imagePullSecrets", NULL) == NULL);
	CHECK(cJSON_GetArraySize(at(pod, "containers", NULL)) == 1);
	c = at(pod, "containers", "#0", NULL);
	CHECK_STR(str(at(c, "name", NULL)), "job");
	CHECK_STR(str(at(c, "image", NULL)), IMAGE);
	CHECK_STR(str(at(c, "command", "#0", NULL)), "sh");
	CHECK_STR(str(at(c, "command", "#1", NULL)),
		  "/navette/secret/launcher.sh");
	CHECK(at(c, "args", NULL) == NULL);
	env = at(c, "env", NULL);
	CHECK(cJSON_GetArraySize(env) == 3);
	CHECK_STR(str(at(env, "#0", "name", NULL)), "NAVETTE_JOB_DIR");
	CHECK_STR(str(at(env, "#0", "value", NULL)), "/navette/work");
	CHECK_STR(str(at(env, "#1", "name", NULL)), "K8S_INDEX_FAILURES");
	CHECK_STR(
		str(at(env, "#1", "valueFrom", "fieldRef", "fieldPath", NULL)),
		"metadata.annotations['batch.kubernetes.io/"
		"job-index-failure-count']");
	CHECK_STR(str(at(env, "#2", "name", NULL)), "K8S_NODE_NAME");
	CHECK_STR(
		str(at(env, "#2", "valueFrom", "fieldRef", "fieldPath", NULL)),
		"spec.nodeName");
	/* nothing asked, nothing written */
	CHECK(at(c, "resources", NULL) == NULL);
	CHECK_STR(str(at(c, "volumeMounts", "#0", "mountPath", NULL)),
		  "/navette/secret");
	CHECK(cJSON_IsTrue(at(c, "volumeMounts", "#0", "readOnly", NULL)));
	CHECK_STR(str(at(c, "volumeMounts", "#1", "mountPath", NULL)),
		  "/navette/work");
	CHECK(cJSON_IsFalse(
		at(c, "securityContext", "allowPrivilegeEscalation", NULL)));
	CHECK_STR(str(at(c, "securityContext", "capabilities", "drop", "#0",
			 NULL)),
		  "ALL");
	CHECK_STR(str(at(c, "securityContext", "seccompProfile", "type", NULL)),
		  "RuntimeDefault");
	vol = at(pod, "volumes", NULL);
	CHECK(cJSON_GetArraySize(vol) == 2);
	CHECK_STR(str(at(vol, "#0", "name", NULL)), "secret");
	CHECK_STR(str(at(vol, "#0", "secret", "secretName", NULL)),
		  "demo-lxk2a0-7f3qz");
	CHECK(num(at(vol, "#0", "secret", "defaultMode", NULL)) == 0400);
	CHECK(cJSON_GetArraySize(at(vol, "#0", "secret", "items", NULL)) == 1);
	CHECK_STR(str(at(vol, "#0", "secret", "items", "#0", "key", NULL)),
		  "launcher.sh");
	CHECK_STR(str(at(vol, "#0", "secret", "items", "#0", "path", NULL)),
		  "launcher.sh");
	CHECK_STR(str(at(vol, "#1", "name", NULL)), "work");
	CHECK(cJSON_IsObject(at(vol, "#1", "emptyDir", NULL)));
	cJSON_Delete(job);
	CHECK(nv_k8s_desc_set_launcher(&d, "exit 0\n", 7, &err) == 0);
	CHECK(nv_k8s_secret_manifest(&d, UID, &stext, &err) == 0);
	if (stext)
		save("secret-one.json", stext);
	nv_k8s_secret_manifest_free(stext);
	nv_k8s_desc_free(&d);
}

static void full(nv_k8s_job_desc *d)
{
	nv_err err;

	base(d);
	set(d, "cpus", "4");
	set(d, "memory", "16GiB");
	set(d, "gpus", "2");
	set(d, "time_limit", "1h");
	set(d, "node", "kwok-gpu-a");
	set(d, "image_pull_secret", "registry-auth");
	set(d, "run", "run-42");
	set(d, "project", "demo");
	set(d, "commit", "0123456789abcdef0123456789abcdef01234567");
	set(d, "member", "Alice Smith <alice@example.org>");
	set(d, "profile", "gpu-cluster");
	set(d, "spec_sha256",
	    "ffeeddccbbaa99887766554433221100"
	    "ffeeddccbbaa99887766554433221100");
	CHECK(nv_k8s_desc_setenv(d, "NAVETTE_JOB_ID", "demo-lxk2a0-7f3qz", 0,
				 &err) == 0);
	CHECK(nv_k8s_desc_setenv(d, "EPOCHS", "3", 0, &err) == 0);
}

static void test_gpu_job(void)
{
	nv_k8s_job_desc d;
	cJSON *job, *c, *l, *env;
	char text[512];

	full(&d);
	job = build(&d, "job-gpu.json");
	l = at(job, "metadata", "labels", NULL);
	CHECK_STR(keys(l, text, sizeof(text)),
		  "navette/job,navette/run,navette/project,navette/commit,"
		  "navette/member,navette/profile");
	CHECK_STR(str(at(l, "navette/commit", NULL)), "0123456789ab");
	/* the label holds what a label may, the annotation the whole */
	CHECK_STR(str(at(l, "navette/member", NULL)),
		  "Alice-Smith--alice-example.org");
	CHECK_STR(str(at(job, "metadata", "annotations", "navette/member-id",
			 NULL)),
		  "Alice Smith <alice@example.org>");
	CHECK_STR(str(at(job, "metadata", "annotations", "navette/spec-sha256",
			 NULL)),
		  "ffeeddccbbaa99887766554433221100"
		  "ffeeddccbbaa99887766554433221100");
	CHECK(cJSON_Compare(
		l, at(job, "spec", "template", "metadata", "labels", NULL), 1));
	CHECK(num(at(job, "spec", "activeDeadlineSeconds", NULL)) == 3600);
	CHECK_STR(str(at(job, "spec", "template", "spec", "nodeSelector",
			 "kubernetes.io/hostname", NULL)),
		  "kwok-gpu-a");
	CHECK_STR(str(at(job, "spec", "template", "spec", "imagePullSecrets",
			 "#0", "name", NULL)),
		  "registry-auth");
	c = at(job, "spec", "template", "spec", "containers", "#0", NULL);
	CHECK_STR(str(at(c, "resources", "limits", "cpu", NULL)), "4");
	CHECK_STR(str(at(c, "resources", "limits", "memory", NULL)), "16Gi");
	/* a count as a string: the schema refuses anything else */
	CHECK_STR(str(at(c, "resources", "limits", "nvidia.com/gpu", NULL)),
		  "2");
	CHECK(cJSON_Compare(at(c, "resources", "requests", NULL),
			    at(c, "resources", "limits", NULL), 1));
	env = at(c, "env", NULL);
	CHECK(cJSON_GetArraySize(env) == 5);
	CHECK_STR(str(at(env, "#1", "name", NULL)), "NAVETTE_JOB_ID");
	CHECK_STR(str(at(env, "#2", "name", NULL)), "EPOCHS");
	CHECK_STR(str(at(env, "#2", "value", NULL)), "3");
	cJSON_Delete(job);
	/* nothing a label may hold: a plain word */
	set(&d, "member", "@@@");
	job = build(&d, NULL);
	CHECK_STR(str(at(job, "metadata", "labels", "navette/member", NULL)),
		  "member");
	CHECK_STR(str(at(job, "metadata", "annotations", "navette/member-id",
			 NULL)),
		  "@@@");
	cJSON_Delete(job);
	nv_k8s_desc_free(&d);

	/* other quantities */
	base(&d);
	set(&d, "cpus", "0.5");
	set(&d, "memory", "1.5G");
	job = build(&d, NULL);
	c = at(job, "spec", "template", "spec", "containers", "#0", NULL);
	CHECK_STR(str(at(c, "resources", "limits", "cpu", NULL)), "500m");
	CHECK_STR(str(at(c, "resources", "limits", "memory", NULL)), "1536Mi");
	CHECK(at(c, "resources", "limits", "nvidia.com/gpu", NULL) == NULL);
	cJSON_Delete(job);
	set(&d, "memory", "1000");
	job = build(&d, NULL);
	CHECK_STR(str(at(job, "spec", "template", "spec", "containers", "#0",
			 "resources", "requests", "memory", NULL)),
		  "1000");
	cJSON_Delete(job);
	nv_k8s_desc_free(&d);
}

static void test_retries(void)
{
	nv_k8s_job_desc d;
	cJSON *job, *rules;
	char text[512];

	base(&d);
	set(&d, "retries", "2");
	set(&d, "retry_exit_codes", "9,7,7");
	set(&d, "requeue_exit", "75");
	job = build(&d, "job-retries.json");
	CHECK(num(at(job, "spec", "backoffLimitPerIndex", NULL)) == 2);
	CHECK(num(at(job, "spec", "backoffLimit", NULL)) == 3);
	rules = at(job, "spec", "podFailurePolicy", "rules", NULL);
	CHECK(cJSON_GetArraySize(rules) == 3);
	CHECK_STR(str(at(rules, "#0", "action", NULL)), "Ignore");
	CHECK_STR(str(at(rules, "#1", "action", NULL)), "Count");
	CHECK_STR(str(at(rules, "#1", "onExitCodes", "operator", NULL)), "In");
	CHECK_STR(numbers(at(rules, "#1", "onExitCodes", "values", NULL), text,
			  sizeof(text)),
		  "7,9,75");
	CHECK_STR(str(at(rules, "#2", "action", NULL)), "FailJob");
	CHECK_STR(numbers(at(rules, "#2", "onExitCodes", "values", NULL), text,
			  sizeof(text)),
		  "0,7,9,75");
	cJSON_Delete(job);

	/* the requeue code alone, below the others, and named twice */
	set(&d, "retry_exit_codes", "200,3");
	set(&d, "requeue_exit", "3");
	job = build(&d, NULL);
	rules = at(job, "spec", "podFailurePolicy", "rules", NULL);
	CHECK_STR(numbers(at(rules, "#1", "onExitCodes", "values", NULL), text,
			  sizeof(text)),
		  "3,200");
	CHECK_STR(numbers(at(rules, "#2", "onExitCodes", "values", NULL), text,
			  sizeof(text)),
		  "0,3,200");
	cJSON_Delete(job);
	nv_k8s_desc_free(&d);

	base(&d);
	set(&d, "requeue_exit", "75");
	job = build(&d, NULL);
	rules = at(job, "spec", "podFailurePolicy", "rules", NULL);
	CHECK_STR(numbers(at(rules, "#1", "onExitCodes", "values", NULL), text,
			  sizeof(text)),
		  "75");
	cJSON_Delete(job);
	nv_k8s_desc_free(&d);
}

/* "p-lxk2a0-00000,p-lxk2a0-00001,..." for n tasks */
static char *task_ids(int n)
{
	char *ids = malloc((size_t)n * 16 + 1), *p = ids;

	for (int i = 0; ids && i < n; i++)
		p += sprintf(p, "%sp-lxk2a0-%05d", i ? "," : "", i);
	return ids;
}

static void test_sweep(void)
{
	nv_k8s_job_desc d;
	cJSON *job, *rules;
	char *ids = task_ids(3), *text = NULL;
	nv_err err;

	base(&d);
	set(&d, "tasks", "3");
	set(&d, "parallelism", "2");
	set(&d, "retries", "1");
	set(&d, "retry_exit_codes", "7");
	set(&d, "task_ids", ids);
	set(&d, "gpus", "1");
	job = build(&d, "job-sweep.json");
	CHECK_STR(str(at(job, "spec", "completionMode", NULL)), "Indexed");
	CHECK(num(at(job, "spec", "completions", NULL)) == 3);
	CHECK(num(at(job, "spec", "parallelism", NULL)) == 2);
	CHECK(num(at(job, "spec", "backoffLimitPerIndex", NULL)) == 1);
	CHECK(num(at(job, "spec", "backoffLimit", NULL)) == 6);
	CHECK_STR(
		str(at(job, "metadata", "annotations", "navette/tasks", NULL)),
		ids);
	rules = at(job, "spec", "podFailurePolicy", "rules", NULL);
	/* a sweep ends the index, not the other tasks */
	CHECK_STR(str(at(rules, "#2", "action", NULL)), "FailIndex");
	cJSON_Delete(job);

	/* parallelism over the tasks; task ids missing or miscounted */
	set(&d, "parallelism", "4");
	CHECK(nv_k8s_job_manifest(&d, &text, &err) == NV_EINVAL);
	CHECK(text == NULL && strstr(err.message, "parallelism 4") != NULL);
	set(&d, "parallelism", "3");
	set(&d, "tasks", "4");
	CHECK(nv_k8s_job_manifest(&d, &text, &err) == NV_EINVAL);
	CHECK(strstr(err.message, "4 tasks has 3 task ids") != NULL);
	CHECK(strstr(err.hint, "task_ids") != NULL);
	nv_k8s_desc_free(&d);
	base(&d);
	set(&d, "tasks", "2");
	CHECK(nv_k8s_job_manifest(&d, &text, &err) == NV_EINVAL);
	CHECK(strstr(err.message, "has 0 task ids") != NULL);
	nv_k8s_desc_free(&d);
	free(ids);
}

static void test_big_sweep(void)
{
	nv_k8s_job_desc d;
	char *ids = task_ids(NV_K8S_TASKS_MAX), *text = NULL;
	nv_err err;
	cJSON *job;

	base(&d);
	set(&d, "tasks", "1000");
	set(&d, "task_ids", ids);
	set(&d, "retries", "3");
	CHECK(nv_k8s_job_manifest(&d, &text, &err) == 0);
	/* one Job for the whole sweep: the ids are most of it */
	printf("1,000-task sweep: Job manifest %zu bytes\n",
	       text ? strlen(text) : 0);
	CHECK(text && strlen(text) < strlen(ids) + 4096);
	if (text)
		save("job-sweep-1000.json", text);
	job = text ? cJSON_Parse(text) : NULL;
	CHECK(num(at(job, "spec", "completions", NULL)) == 1000);
	CHECK(num(at(job, "spec", "parallelism", NULL)) == 1000);
	CHECK(num(at(job, "spec", "backoffLimit", NULL)) == 4000);
	cJSON_Delete(job);
	free(text);
	/* a 1,001st task is refused */
	CHECK(nv_k8s_desc_set(&d, "tasks", "1001", &err) == NV_EINVAL);
	nv_k8s_desc_free(&d);
	free(ids);
}

static void test_after(void)
{
	nv_k8s_job_desc d;
	cJSON *job;

	base(&d);
	set(&d, "after", "demo-lxk2a0-aaaaa,demo-lxk2a0-bbbbb");
	job = build(&d, "job-after.json");
	/* created suspended: navette releases it once its producers end */
	CHECK(cJSON_IsTrue(at(job, "spec", "suspend", NULL)));
	CHECK_STR(
		str(at(job, "metadata", "annotations", "navette/after", NULL)),
		"demo-lxk2a0-aaaaa,demo-lxk2a0-bbbbb");
	CHECK_STR(str(at(job, "metadata", "labels", "navette/held", NULL)),
		  "after");
	cJSON_Delete(job);
	nv_k8s_desc_free(&d);

	base(&d);
	set(&d, "suspend", "true");
	job = build(&d, "job-suspended.json");
	CHECK(cJSON_IsTrue(at(job, "spec", "suspend", NULL)));
	CHECK(at(job, "metadata", "labels", "navette/held", NULL) == NULL);
	cJSON_Delete(job);
	nv_k8s_desc_free(&d);
}

static void test_secret(void)
{
	nv_k8s_job_desc d;
	const char *launcher = "#!/bin/sh\necho \"hi\" \\ \t\x01 é\n";
	char *text = NULL, *jtext = NULL, keytext[256];
	cJSON *sec, *job, *o, *items;
	nv_err err;

	full(&d);
	CHECK(nv_k8s_desc_set_launcher(&d, launcher, strlen(launcher), &err) ==
	      0);
	CHECK(nv_k8s_desc_add_secret(&d, "zeta", "Z-VALUE-1", 9, &err) == 0);
	CHECK(nv_k8s_desc_add_secret(&d, "HF_TOKEN", "hf_\"x\"\n", 7, &err) ==
	      0);
	CHECK(nv_k8s_desc_add_secret(&d, "a.b-c_d", "", 0, &err) == 0);
	CHECK(nv_k8s_secret_manifest(&d, UID, &text, &err) == 0);
	if (text)
		save("secret-gpu.json", text);
	sec = text ? cJSON_Parse(text) : NULL;
	CHECK(sec != NULL);
	CHECK_STR(keys(sec, keytext, sizeof(keytext)),
		  "apiVersion,kind,metadata,type,stringData");
	CHECK_STR(str(at(sec, "apiVersion", NULL)), "v1");
	CHECK_STR(str(at(sec, "kind", NULL)), "Secret");
	CHECK_STR(str(at(sec, "type", NULL)), "Opaque");
	CHECK_STR(str(at(sec, "metadata", "name", NULL)), "demo-lxk2a0-7f3qz");
	CHECK_STR(str(at(sec, "metadata", "namespace", NULL)), "navette-test");
	o = at(sec, "metadata", "ownerReferences", NULL);
	CHECK(cJSON_GetArraySize(o) == 1);
	o = at(o, "#0", NULL);
	CHECK_STR(keys(o, keytext, sizeof(keytext)),
		  "apiVersion,kind,name,uid,controller");
	CHECK_STR(str(at(o, "apiVersion", NULL)), "batch/v1");
	CHECK_STR(str(at(o, "kind", NULL)), "Job");
	CHECK_STR(str(at(o, "name", NULL)), "demo-lxk2a0-7f3qz");
	CHECK_STR(str(at(o, "uid", NULL)), UID);
	CHECK(cJSON_IsFalse(at(o, "controller", NULL)));
	CHECK(at(o, "blockOwnerDeletion", NULL) == NULL);
	/* sorted by name, whatever the order they came in */
	o = at(sec, "stringData", NULL);
	CHECK_STR(keys(o, keytext, sizeof(keytext)),
		  "launcher.sh,s.HF_TOKEN,s.a.b-c_d,s.zeta");
	CHECK_STR(str(at(o, "launcher.sh", NULL)), launcher);
	CHECK_STR(str(at(o, "s.HF_TOKEN", NULL)), "hf_\"x\"\n");
	CHECK_STR(str(at(o, "s.a.b-c_d", NULL)), "");
	CHECK_STR(str(at(o, "s.zeta", NULL)), "Z-VALUE-1");

	/* the Job mounts each key and says where; no value is in it */
	CHECK(nv_k8s_job_manifest(&d, &jtext, &err) == 0);
	CHECK(jtext && !strstr(jtext, "Z-VALUE-1") && !strstr(jtext, "hf_"));
	job = jtext ? cJSON_Parse(jtext) : NULL;
	CHECK(cJSON_Compare(at(job, "metadata", "labels", NULL),
			    at(sec, "metadata", "labels", NULL), 1));
	items = at(job, "spec", "template", "spec", "volumes", "#0", "secret",
		   "items", NULL);
	CHECK(cJSON_GetArraySize(items) == 4);
	CHECK_STR(str(at(items, "#1", "key", NULL)), "s.HF_TOKEN");
	CHECK_STR(str(at(items, "#1", "path", NULL)), "secrets/HF_TOKEN");
	CHECK_STR(str(at(items, "#3", "key", NULL)), "s.zeta");
	CHECK_STR(str(at(items, "#3", "path", NULL)), "secrets/zeta");
	CHECK_STR(str(at(job, "spec", "template", "spec", "containers", "#0",
			 "env", "#1", "name", NULL)),
		  "NAVETTE_SECRETS");
	CHECK_STR(str(at(job, "spec", "template", "spec", "containers", "#0",
			 "env", "#1", "value", NULL)),
		  "/navette/secret/secrets");
	cJSON_Delete(job);
	cJSON_Delete(sec);
	free(jtext);
	nv_k8s_secret_manifest_free(text);

	/* refusals: no uid, no launcher */
	CHECK(nv_k8s_secret_manifest(&d, "", &text, &err) == NV_EINVAL);
	CHECK(text == NULL && strstr(err.hint, "metadata.uid") != NULL);
	nv_k8s_desc_free(&d);
	base(&d);
	CHECK(nv_k8s_secret_manifest(&d, UID, &text, &err) == NV_EINVAL);
	CHECK(strstr(err.message, "no launcher") != NULL);
	nv_k8s_desc_free(&d);
}

static void test_secret_size(void)
{
	nv_k8s_job_desc d;
	size_t max = NV_K8S_SECRET_MAX;
	char *big = malloc(max + 1), *text = NULL;
	nv_err err;

	memset(big, 'x', max + 1);
	base(&d);
	/* exactly 1 MiB of values: accepted */
	CHECK(nv_k8s_desc_set_launcher(&d, big, max - 10, &err) == 0);
	CHECK(nv_k8s_desc_add_secret(&d, "k", big, 10, &err) == 0);
	CHECK(nv_k8s_secret_manifest(&d, UID, &text, &err) == 0);
	CHECK(text && strlen(text) > max);
	nv_k8s_secret_manifest_free(text);
	text = NULL;
	/* one byte more: refused, saying why and what to do */
	CHECK(nv_k8s_desc_set_launcher(&d, big, max - 9, &err) == 0);
	CHECK(nv_k8s_secret_manifest(&d, UID, &text, &err) == NV_EREFUSED);
	CHECK(text == NULL);
	CHECK(strstr(err.message, "1048577 bytes") != NULL);
	CHECK(strstr(err.message, "1 MiB") != NULL);
	CHECK(strstr(err.hint, "split the sweep") != NULL);
	nv_k8s_desc_free(&d);
	free(big);
}

static void refused(const char *key, const char *value, const char *needle)
{
	nv_k8s_job_desc d;
	nv_err err;
	int rc;

	base(&d);
	rc = nv_k8s_desc_set(&d, key, value, &err);
	CHECK(rc == NV_EINVAL);
	CHECK(err.hint[0] != '\0');
	if (rc != NV_EINVAL || !strstr(err.message, key) ||
	    (needle && !strstr(err.hint, needle))) {
		nv_test_failed++;
		fprintf(stderr, "set %s = '%s': rc %d, '%s' (hint '%s')\n", key,
			value, rc, err.message, err.hint);
	}
	nv_k8s_desc_free(&d);
}

static void test_refusals(void)
{
	nv_k8s_job_desc d;
	nv_err err;
	char *text = NULL, long_name[80];

	memset(long_name, 'a', 64);
	long_name[64] = '\0';
	refused("name", "Demo", "DNS-1123");
	refused("name", long_name, "DNS-1123");
	refused("name", "-demo", "DNS-1123");
	refused("name", "", "DNS-1123");
	refused("namespace", "navette_test", "namespace");
	refused("image", "127.0.0.1:5000/navette/base:v1", "by digest");
	refused("image", "127.0.0.1:5000/navette/base", "by digest");
	refused("image",
		"127.0.0.1:5000/base:v1@sha256:"
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
		"abcdef",
		"without a tag");
	refused("image",
		"base@sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef"
		"0123456789abcdef",
		"by digest");
	refused("image", "base@sha256:0123", "by digest");
	refused("image",
		"@sha256:0123456789abcdef0123456789abcdef0123456789abcdef"
		"0123456789abcdef",
		"by digest");
	refused("tasks", "0", "1000");
	refused("tasks", "1001", "split");
	refused("tasks", "two", "1000");
	refused("parallelism", "0", "1000");
	refused("cpus", "0", "above 0");
	refused("cpus", "1.2345", "3 decimals");
	refused("cpus", "-1", "above 0");
	refused("memory", "4X", "K/M/G/T");
	refused("memory", "0", "K/M/G/T");
	refused("gpus", "-1", "GPUs");
	refused("gpus", "1.5", "GPUs");
	refused("time_limit", "0", "seconds");
	refused("time_limit", "2y", "seconds");
	refused("retries", "101", "0 to 100");
	refused("retry_exit_codes", "0", "exit 0 is a success");
	refused("retry_exit_codes", "7,0", "exit 0 is a success");
	refused("retry_exit_codes", "256", "1 to 255");
	refused("retry_exit_codes", "7,", "1 to 255");
	refused("retry_exit_codes", "a", "1 to 255");
	refused("retry_exit_codes", "", "1 to 255");
	refused("requeue_exit", "0", "1 to 255");
	refused("requeue_exit", "256", "1 to 255");
	refused("suspend", "maybe", "true or false");
	refused("node", "Bad_Node", "kubectl get nodes");
	refused("image_pull_secret", "Auth!", "dockerconfigjson");
	refused("run", "-x", "label value");
	refused("project", "a/b", "label value");
	refused("profile", long_name, "label value");
	refused("commit", "XYZ1234", "hex");
	refused("commit", "abc", "hex");
	refused("member", "", "UTF-8");
	refused("member", "bad\xff", "UTF-8");
	refused("member", "line\nbreak", "control");
	refused("task_ids", "ok-aaaaa,Bad", "index order");
	refused("task_ids", "", "index order");
	refused("spec_sha256", "abcd", "64");
	refused("after", "x-1,,y-2", "producers");

	/* unknown key: the known ones in the hint */
	base(&d);
	CHECK(nv_k8s_desc_set(&d, "restart_policy", "Always", &err) ==
	      NV_EINVAL);
	CHECK(strstr(err.message, "unknown Kubernetes job setting") != NULL);
	CHECK(strstr(err.hint, "image_pull_secret") != NULL);
	CHECK(nv_k8s_desc_set(&d, NULL, "x", &err) == NV_EINVAL);
	CHECK(nv_k8s_desc_set(&d, "name", NULL, &err) == NV_EINVAL);

	/* env: secrets are refused, by the caller's word or by name */
	CHECK(nv_k8s_desc_setenv(&d, "API_KEY", "k", 1, &err) == NV_EREFUSED);
	CHECK(strstr(err.message, "API_KEY holds a secret") != NULL);
	CHECK(strstr(err.hint, "secrets") != NULL);
	CHECK(nv_k8s_desc_setenv(&d, "NAVETTE_SECRET_KEY", "k", 0, &err) ==
	      NV_EREFUSED);
	CHECK(nv_k8s_desc_setenv(&d, "NAVETTE_SECRETS_GET", "k", 0, &err) ==
	      NV_EREFUSED);
	CHECK(nv_k8s_desc_setenv(&d, "K8S_NODE_NAME", "n", 0, &err) ==
	      NV_EINVAL);
	CHECK(strstr(err.message, "reserved") != NULL);
	CHECK(nv_k8s_desc_setenv(&d, "NAVETTE_JOB_DIR", "/x", 0, &err) ==
	      NV_EINVAL);
	CHECK(nv_k8s_desc_setenv(&d, "1X", "v", 0, &err) == NV_EINVAL);
	CHECK(nv_k8s_desc_setenv(&d, "A-B", "v", 0, &err) == NV_EINVAL);
	CHECK(nv_k8s_desc_setenv(&d, "X", NULL, 0, &err) == NV_EINVAL);
	CHECK(nv_k8s_desc_setenv(&d, "X", "bad\xff", 0, &err) == NV_EINVAL);
	CHECK(nv_k8s_desc_setenv(&d, "NAVETTE_JOB_ID", "Bad", 0, &err) ==
	      NV_EINVAL);
	CHECK(d.nenv == 0);
	/* a later value replaces an earlier one */
	CHECK(nv_k8s_desc_setenv(&d, "X", "1", 0, &err) == 0);
	CHECK(nv_k8s_desc_setenv(&d, "X", "2", 0, &err) == 0);
	CHECK(d.nenv == 1 && strcmp(d.env_values[0], "2") == 0);

	/* secrets: names that would climb out or clash, values not text */
	CHECK(nv_k8s_desc_add_secret(&d, ".hidden", "v", 1, &err) == NV_EINVAL);
	CHECK(nv_k8s_desc_add_secret(&d, "a/b", "v", 1, &err) == NV_EINVAL);
	CHECK(nv_k8s_desc_add_secret(&d, "", "v", 1, &err) == NV_EINVAL);
	CHECK(nv_k8s_desc_add_secret(&d, "bin", "\xff\xfe", 2, &err) ==
	      NV_EINVAL);
	CHECK(strstr(err.hint, "base64") != NULL);
	CHECK(nv_k8s_desc_add_secret(&d, "nul", "a\0b", 3, &err) == NV_EINVAL);
	CHECK(nv_k8s_desc_add_secret(&d, "k", "v", 1, &err) == 0);
	CHECK(nv_k8s_desc_add_secret(&d, "k", "w", 1, &err) == NV_EINVAL);
	CHECK(strstr(err.message, "given twice") != NULL);
	CHECK(nv_k8s_desc_set_launcher(&d, "", 0, &err) == NV_EINVAL);
	nv_k8s_desc_free(&d);
	/* freed: as new */
	CHECK(d.nenv == 0 && d.nsecrets == 0 && d.launcher == NULL &&
	      d.tasks == 1 && d.name == NULL);

	/* a description without its required settings */
	nv_k8s_desc_init(&d);
	CHECK(nv_k8s_job_manifest(&d, &text, &err) == NV_EINVAL);
	CHECK(strstr(err.message, "no name") != NULL);
	set(&d, "name", "demo-lxk2a0-7f3qz");
	CHECK(nv_k8s_job_manifest(&d, &text, &err) == NV_EINVAL);
	CHECK(strstr(err.message, "no namespace") != NULL);
	set(&d, "namespace", "ns");
	CHECK(nv_k8s_job_manifest(&d, &text, &err) == NV_EINVAL);
	CHECK(strstr(err.message, "no image") != NULL);
	CHECK(text == NULL);
	nv_k8s_desc_free(&d);
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *text = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (text = malloc((size_t)n + 1))) {
		*len = fread(text, 1, (size_t)n, f);
		text[*len] = '\0';
	}
	fclose(f);
	return text;
}

static void test_check(void)
{
	const char *data = getenv("NAVETTE_TEST_DATA");
	char path[4096], *text;
	size_t len = 0;
	nv_err err;
	static const char *const good =
		"{\"spec\":{\"podFailurePolicy\":{},\"podReplacementPolicy\":"
		"\"Failed\",\"template\":{\"spec\":{\"restartPolicy\":"
		"\"Never\",\"containers\":[{\"image\":\"" IMAGE "\"}]}}}}";
	char bad[1024];

	CHECK(nv_k8s_job_check(good, strlen(good), &err) == 0);
	snprintf(bad, sizeof(bad), "%s", good);
	memcpy(strstr(bad, "Never"), "Alway", 5);
	CHECK(nv_k8s_job_check(bad, strlen(bad), &err) == NV_EINVAL);
	CHECK(strstr(err.message, "restartPolicy") != NULL);
	snprintf(bad, sizeof(bad), "%s", good);
	memcpy(strstr(bad, "\"Failed\""), "\"Ghost\" ", 8);
	CHECK(nv_k8s_job_check(bad, strlen(bad), &err) == NV_EINVAL);
	CHECK(strstr(err.message, "podReplacementPolicy") != NULL);
	snprintf(bad, sizeof(bad), "%s", good);
	memcpy(strstr(bad, "@sha256"), ":v1@sha", 7);
	CHECK(nv_k8s_job_check(bad, strlen(bad), &err) == NV_EINVAL);
	CHECK(strstr(err.message, "not pinned by digest") != NULL);
	CHECK(nv_k8s_job_check("{", 1, &err) == NV_EINVAL);

	if (!data) {
		SKIP("NAVETTE_TEST_DATA is not set (run under ctest)");
		return;
	}
	/* the schema takes restartPolicy Always; the builder's check not */
	snprintf(path, sizeof(path),
		 "%s/k8s/manifests/invalid/"
		 "restartpolicy-always-schema-accepts.json",
		 data);
	text = read_file(path, &len);
	CHECK(text != NULL);
	if (!text)
		return;
	CHECK(nv_k8s_job_check(text, len, &err) == NV_EINVAL);
	CHECK(strstr(err.message, "restartPolicy 'Always'") != NULL);
	CHECK(strstr(err.hint, "422") != NULL);
	free(text);
}

static void test_deterministic(void)
{
	nv_k8s_job_desc a, b;
	char *ta = NULL, *tb = NULL, *tc = NULL, *sa = NULL, *sb = NULL;
	nv_err err;

	full(&a);
	set(&a, "retries", "1");
	set(&a, "retry_exit_codes", "7,3");
	CHECK(nv_k8s_desc_add_secret(&a, "one", "1", 1, &err) == 0);
	CHECK(nv_k8s_desc_add_secret(&a, "two", "2", 1, &err) == 0);
	CHECK(nv_k8s_desc_set_launcher(&a, "L", 1, &err) == 0);

	/* the same settings, given in another order */
	nv_k8s_desc_init(&b);
	CHECK(nv_k8s_desc_set_launcher(&b, "L", 1, &err) == 0);
	CHECK(nv_k8s_desc_add_secret(&b, "two", "2", 1, &err) == 0);
	CHECK(nv_k8s_desc_add_secret(&b, "one", "1", 1, &err) == 0);
	set(&b, "retry_exit_codes", "3,7");
	set(&b, "retries", "1");
	set(&b, "spec_sha256",
	    "ffeeddccbbaa99887766554433221100"
	    "ffeeddccbbaa99887766554433221100");
	set(&b, "profile", "gpu-cluster");
	set(&b, "member", "Alice Smith <alice@example.org>");
	set(&b, "commit", "0123456789abcdef0123456789abcdef01234567");
	set(&b, "project", "demo");
	set(&b, "run", "run-42");
	set(&b, "image_pull_secret", "registry-auth");
	set(&b, "node", "kwok-gpu-a");
	set(&b, "time_limit", "3600");
	set(&b, "gpus", "2");
	set(&b, "memory", "17179869184");
	set(&b, "cpus", "4.000");
	set(&b, "image", IMAGE);
	set(&b, "namespace", "navette-test");
	set(&b, "name", "demo-lxk2a0-7f3qz");
	CHECK(nv_k8s_desc_setenv(&b, "NAVETTE_JOB_ID", "demo-lxk2a0-7f3qz", 0,
				 &err) == 0);
	CHECK(nv_k8s_desc_setenv(&b, "EPOCHS", "3", 0, &err) == 0);

	CHECK(nv_k8s_job_manifest(&a, &ta, &err) == 0);
	CHECK(nv_k8s_job_manifest(&b, &tb, &err) == 0);
	CHECK(nv_k8s_job_manifest(&a, &tc, &err) == 0);
	CHECK(ta && tb && strcmp(ta, tb) == 0);
	CHECK(ta && tc && strcmp(ta, tc) == 0);
	CHECK(nv_k8s_secret_manifest(&a, UID, &sa, &err) == 0);
	CHECK(nv_k8s_secret_manifest(&b, UID, &sb, &err) == 0);
	CHECK(sa && sb && strcmp(sa, sb) == 0);
	free(ta);
	free(tb);
	free(tc);
	nv_k8s_secret_manifest_free(sa);
	nv_k8s_secret_manifest_free(sb);
	nv_k8s_desc_free(&a);
	nv_k8s_desc_free(&b);
}

static void test_bodies(void)
{
	nv_buf b;
	nv_err err;

	nv_buf_init(&b, 4096);
	CHECK(nv_k8s_resume_patch(&b, &err) == 0);
	CHECK_STR(b.data, "{\"spec\":{\"suspend\":false}}");
	nv_buf_free(&b);
	nv_buf_init(&b, 4096);
	CHECK(nv_k8s_ttl_patch(3600, &b, &err) == 0);
	CHECK_STR(b.data, "{\"spec\":{\"ttlSecondsAfterFinished\":3600}}");
	nv_buf_free(&b);
	nv_buf_init(&b, 4096);
	CHECK(nv_k8s_ttl_patch(-1, &b, &err) == NV_EINVAL);
	CHECK(b.len == 0);
	CHECK(nv_k8s_delete_body(&b, &err) == 0);
	CHECK_STR(b.data, "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\","
			  "\"propagationPolicy\":\"Background\"}");
	nv_buf_free(&b);
	/* a full buffer is an error, not a cut body */
	nv_buf_init(&b, 8);
	CHECK(nv_k8s_delete_body(&b, &err) == NV_ENOMEM);
	nv_buf_free(&b);
}

static int check_file(const char *path)
{
	size_t len = 0;
	char *text = read_file(path, &len);
	nv_err err;
	int rc;

	if (!text) {
		fprintf(stderr, "cannot read %s\n", path);
		return 2;
	}
	rc = nv_k8s_job_check(text, len, &err);
	free(text);
	if (rc) {
		fprintf(stderr, "refused: %s (%s)\n", err.message, err.hint);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "check") == 0)
		return check_file(argv[2]);
	out_dir = getenv("NV_K8S_MANIFEST_OUT");
	test_one_job();
	test_gpu_job();
	test_retries();
	test_sweep();
	test_big_sweep();
	test_after();
	test_secret();
	test_secret_size();
	test_refusals();
	test_check();
	test_deterministic();
	test_bodies();
	return nv_test_done();
}
