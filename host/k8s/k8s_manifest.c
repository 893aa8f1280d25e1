/* Kubernetes manifests (see k8s_manifest.h): a job description checked key
 * by key, and the Job, Secret, patches and DeleteOptions it becomes, each
 * with one key order. Pure C over cJSON, no Lua. The Secret's body holds
 * the launcher's presigned URLs and the job's secrets: it is written by
 * hand into one buffer sized beforehand (no realloc leaves a copy behind)
 * and wiped when freed, as the description's secrets are. */
#include "k8s/k8s_manifest.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <openssl/crypto.h>

#include "core/hex.h"
#include "core/jobid.h"
#include "core/units.h"
#include "core/utf8.h"

#define LP NV_K8S_LABEL_PREFIX "/"

static const char *const desc_keys[] = {"name",
					"namespace",
					"image",
					"tasks",
					"parallelism",
					"cpus",
					"memory",
					"gpus",
					"time_limit",
					"retries",
					"retry_exit_codes",
					"requeue_exit",
					"suspend",
					"node",
					"image_pull_secret",
					"run",
					"project",
					"commit",
					"member",
					"profile",
					"task_ids",
					"spec_sha256",
					"after",
					NULL};

/* Names the builder sets in the container's env itself. */
static const char *const reserved_env[] = {
	"NAVETTE_JOB_DIR", NV_K8S_ENV_FAILURES,    NV_K8S_ENV_NODE,
	"NAVETTE_SECRETS", "JOB_COMPLETION_INDEX", NULL};

const char *const *nv_k8s_desc_keys(void)
{
	return desc_keys;
}

void nv_k8s_desc_init(nv_k8s_job_desc *d)
{
	memset(d, 0, sizeof(*d));
	d->tasks = 1;
}

static void wipe_free(char *p, size_t len)
{
	if (!p)
		return;
	OPENSSL_cleanse(p, len);
	free(p);
}

void nv_k8s_desc_free(nv_k8s_job_desc *d)
{
	if (!d)
		return;
	free(d->name);
	free(d->ns);
	free(d->image);
	free(d->node);
	free(d->image_pull_secret);
	free(d->run);
	free(d->project);
	free(d->commit);
	free(d->member);
	free(d->profile);
	free(d->member_id);
	free(d->task_ids);
	free(d->spec_sha256);
	free(d->after);
	for (size_t i = 0; i < d->nenv; i++) {
		free(d->env_names[i]);
		/* not secret by the caller's word, but may hold URLs */
		wipe_free(d->env_values[i], strlen(d->env_values[i]));
	}
	free(d->env_names);
	free(d->env_values);
	for (size_t i = 0; i < d->nsecrets; i++) {
		free(d->secret_names[i]);
		wipe_free(d->secret_values[i], d->secret_lens[i]);
	}
	free(d->secret_names);
	free(d->secret_values);
	free(d->secret_lens);
	wipe_free(d->launcher, d->launcher_len);
	nv_k8s_desc_init(d);
}

/* ---- checks of one value --------------------------------------------- */

/* "2", "0.5", "1.250" -> thousandths of a CPU (Kubernetes' millicores). */
static int parse_milli(const char *v, long *out)
{
	long whole = 0, frac = 0;
	int places = 0;
	const char *p = v;

	if (!v || !isdigit((unsigned char)*p))
		return -1;
	for (; isdigit((unsigned char)*p); p++) {
		whole = whole * 10 + (*p - '0');
		if (whole > 65536)
			return -1;
	}
	if (*p == '.') {
		for (p++; isdigit((unsigned char)*p); p++) {
			if (++places > 3)
				return -1;
			frac = frac * 10 + (*p - '0');
		}
		if (places == 0)
			return -1;
		for (int i = places; i < 3; i++)
			frac *= 10;
	}
	if (*p)
		return -1;
	*out = whole * 1000 + frac;
	return 0;
}

static int parse_flag(const char *v, int *out)
{
	if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0)
		*out = 1;
	else if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0)
		*out = 0;
	else
		return -1;
	return 0;
}

/* A DNS-1123 label (dots == 0) or subdomain (dots == 1): lowercase
 * letters, digits, '-' (and '.'), alphanumeric at both ends. */
static int dns_ok(const char *v, size_t max, int dots)
{
	size_t n = strlen(v);

	if (n == 0 || n > max || !isalnum((unsigned char)v[0]) ||
	    !isalnum((unsigned char)v[n - 1]))
		return 0;
	for (const char *p = v; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		    *p == '-' || (dots && *p == '.'))
			continue;
		return 0;
	}
	return 1;
}

/* A label value: 1..63 bytes of letters, digits, '-', '_', '.',
 * alphanumeric at both ends. */
static int label_value_ok(const char *v)
{
	size_t n = strlen(v);

	if (n == 0 || n > 63 || !isalnum((unsigned char)v[0]) ||
	    !isalnum((unsigned char)v[n - 1]))
		return 0;
	for (const char *p = v; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("-_.", *p))
			return 0;
	return 1;
}

/* repo@sha256:<64 lowercase hex>, the repository without a tag (a ':'
 * after the last '/' would be one; before it, a registry's port). */
static int image_ok(const char *v)
{
	const char *at = strchr(v, '@'), *slash;

	if (!at || at == v || strncmp(at, "@sha256:", 8) != 0 ||
	    !nv_hex_is_lower(at + 8, 64) || strlen(v) > 512)
		return 0;
	for (const char *p = v; p < at; p++)
		if (!isgraph((unsigned char)*p) || *p == '@')
			return 0;
	slash = NULL;
	for (const char *p = v; p < at; p++)
		if (*p == '/')
			slash = p;
	for (const char *p = slash ? slash : v; p < at; p++)
		if (*p == ':')
			return 0;
	return 1;
}

/* Job ids separated by commas, at most max of them; *count gets how
 * many. */
static int id_list_ok(const char *v, size_t max, size_t *count)
{
	char id[NV_JOB_ID_MAX + 2];
	size_t n = 0;
	nv_err ignored;

	for (const char *p = v;; p++) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);

		if (len == 0 || len > NV_JOB_ID_MAX || ++n > max)
			return 0;
		memcpy(id, p, len);
		id[len] = '\0';
		if (nv_job_id_check(id, &ignored))
			return 0;
		if (!comma)
			break;
		p = comma;
	}
	*count = n;
	return 1;
}

static int set_text(char **field, const char *v, nv_err *err)
{
	char *copy = strdup(v);

	if (!copy)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	free(*field);
	*field = copy;
	return 0;
}

static int desc_bad(nv_err *err, const char *key, const char *value,
		    const char *what)
{
	return nv_err_set(err, NV_EINVAL, what,
			  "Kubernetes job setting '%s' = '%.80s' is not valid",
			  key, value ? value : "(nothing)");
}

/* The member as a label value: every other byte becomes '-', cut at 63,
 * trimmed to alphanumeric ends ("member" when nothing is left). */
static void member_label(const char *member, char out[64])
{
	size_t n = 0, start = 0;

	for (const char *p = member; *p && n < 63; p++)
		out[n++] = isalnum((unsigned char)*p) || strchr("-_.", *p)
				   ? *p
				   : '-';
	while (n > 0 && !isalnum((unsigned char)out[n - 1]))
		n--;
	while (start < n && !isalnum((unsigned char)out[start]))
		start++;
	memmove(out, out + start, n - start);
	n -= start;
	if (n == 0)
		memcpy(out, "member", n = 6);
	out[n] = '\0';
}

static int set_exit_codes(nv_k8s_job_desc *d, const char *v, nv_err *err)
{
	int codes[NV_K8S_EXIT_CODES_MAX];
	size_t n = 0;
	const char *p = v;

	if (!*p)
		goto bad;
	while (*p) {
		char *end;
		long c;

		if (!isdigit((unsigned char)*p))
			goto bad;
		errno = 0;
		c = strtol(p, &end, 10);
		if (errno || c < 0 || c > 255)
			goto bad;
		if (c == 0)
			return nv_err_set(
				err, NV_EINVAL,
				"exit 0 is a success: name only the failing "
				"codes to retry, 1 to 255",
				"Kubernetes job setting 'retry_exit_codes' "
				"holds 0");
		if (n == NV_K8S_EXIT_CODES_MAX)
			goto bad;
		/* insert sorted, once */
		size_t i = 0;
		while (i < n && codes[i] < c)
			i++;
		if (i == n || codes[i] != c) {
			memmove(codes + i + 1, codes + i,
				(n - i) * sizeof(*codes));
			codes[i] = (int)c;
			n++;
		}
		p = end;
		if (*p == ',' && p[1])
			p++;
		else if (*p)
			goto bad;
	}
	memcpy(d->exit_codes, codes, n * sizeof(*codes));
	d->nexit_codes = n;
	return 0;
bad:
	return desc_bad(err, "retry_exit_codes", v,
			"give exit codes 1 to 255 separated by commas, such "
			"as \"7,9\" (at most 64)");
}

int nv_k8s_desc_set(nv_k8s_job_desc *d, const char *key, const char *value,
		    nv_err *err)
{
	char **text = NULL;
	long long n;
	double x;
	size_t count;

	if (!key)
		return nv_err_set(err, NV_EINVAL, NULL, "no setting name");
	if (!value)
		return desc_bad(err, key, value, "give a value");
	if (strcmp(key, "name") == 0) {
		if (!dns_ok(value, 63, 0))
			return desc_bad(
				err, key, value,
				"a DNS-1123 label: 1 to 63 lowercase "
				"letters, digits and '-', a letter or "
				"digit at both ends (a navette job id)");
		text = &d->name;
	} else if (strcmp(key, "namespace") == 0) {
		if (!dns_ok(value, 63, 0))
			return desc_bad(err, key, value,
					"a DNS-1123 label: 1 to 63 lowercase "
					"letters, digits and '-'; check the "
					"profile's kubernetes.namespace");
		text = &d->ns;
	} else if (strcmp(key, "image") == 0) {
		if (!image_ok(value))
			return desc_bad(err, key, value,
					"give the image by digest, "
					"repo@sha256:<64 hex>, without a tag: "
					"navette pins it before it submits");
		text = &d->image;
	} else if (strcmp(key, "tasks") == 0 ||
		   strcmp(key, "parallelism") == 0) {
		if (nv_units_count(value, NV_K8S_TASKS_MAX, &n) || n < 1)
			return desc_bad(err, key, value,
					"give a whole number from 1 to 1000 "
					"(a larger sweep: split it)");
		if (key[0] == 't')
			d->tasks = (int)n;
		else
			d->parallelism = (int)n;
		return 0;
	} else if (strcmp(key, "cpus") == 0) {
		long milli;

		if (parse_milli(value, &milli) || milli < 1)
			return desc_bad(err, key, value,
					"give a number of CPUs above 0, with "
					"up to 3 decimals (\"2\", \"0.5\")");
		d->cpu_milli = milli;
		return 0;
	} else if (strcmp(key, "memory") == 0) {
		if (nv_units_bytes(value, &x) || x < 1 || x > 1e15)
			return desc_bad(err, key, value,
					"give bytes, or a number with "
					"K/M/G/T (\"4GiB\")");
		d->memory_bytes = (long long)ceil(x);
		return 0;
	} else if (strcmp(key, "gpus") == 0) {
		if (nv_units_count(value, 4096, &n))
			return desc_bad(err, key, value,
					"give a whole number of GPUs >= 0");
		d->gpus = (int)n;
		return 0;
	} else if (strcmp(key, "time_limit") == 0) {
		if (nv_units_seconds(value, &x) || x < 1 || x > 365.0 * 86400)
			return desc_bad(err, key, value,
					"give seconds, or a number with "
					"s/m/h/d (\"90m\"), up to a year");
		d->time_limit = (long)ceil(x);
		return 0;
	} else if (strcmp(key, "retries") == 0) {
		if (nv_units_count(value, 100, &n))
			return desc_bad(err, key, value,
					"give a whole number of retries from "
					"0 to 100");
		d->retries = (int)n;
		return 0;
	} else if (strcmp(key, "retry_exit_codes") == 0) {
		return set_exit_codes(d, value, err);
	} else if (strcmp(key, "requeue_exit") == 0) {
		if (nv_units_count(value, 255, &n) || n < 1)
			return desc_bad(err, key, value,
					"give the launcher's requeue exit "
					"code, 1 to 255");
		d->requeue_exit = (int)n;
		return 0;
	} else if (strcmp(key, "suspend") == 0) {
		if (parse_flag(value, &d->suspend))
			return desc_bad(err, key, value, "give true or false");
		return 0;
	} else if (strcmp(key, "node") == 0) {
		if (!dns_ok(value, 253, 1))
			return desc_bad(err, key, value,
					"give a node's name as the cluster "
					"lists it (kubectl get nodes)");
		text = &d->node;
	} else if (strcmp(key, "image_pull_secret") == 0) {
		if (!dns_ok(value, 253, 1))
			return desc_bad(err, key, value,
					"give the name of a Secret of type "
					"kubernetes.io/dockerconfigjson in "
					"the namespace");
		text = &d->image_pull_secret;
	} else if (strcmp(key, "run") == 0 || strcmp(key, "project") == 0 ||
		   strcmp(key, "profile") == 0) {
		if (!label_value_ok(value))
			return desc_bad(err, key, value,
					"a Kubernetes label value: 1 to 63 "
					"letters, digits, '-', '_' and '.', a "
					"letter or digit at both ends");
		text = strcmp(key, "run") == 0       ? &d->run
		       : strcmp(key, "project") == 0 ? &d->project
						     : &d->profile;
	} else if (strcmp(key, "commit") == 0) {
		size_t len = strlen(value);

		if (len < 7 || len > 64 || !nv_hex_is_lower(value, len))
			return desc_bad(err, key, value,
					"give the commit's id in lowercase "
					"hex (7 to 64 digits)");
		if (set_text(&d->commit, value, err))
			return err->code;
		if (len > 12)
			d->commit[12] = '\0';
		return 0;
	} else if (strcmp(key, "member") == 0) {
		char label[64];

		if (strlen(value) > 256 ||
		    nv_utf8_invalid_at(value, strlen(value)) != NV_UTF8_VALID ||
		    !value[0])
			return desc_bad(err, key, value,
					"give the member's identity, 1 to 256 "
					"bytes of UTF-8 text");
		for (const char *p = value; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				return desc_bad(err, key, value,
						"no control character");
		member_label(value, label);
		if (set_text(&d->member, label, err) ||
		    set_text(&d->member_id, value, err))
			return err->code;
		return 0;
	} else if (strcmp(key, "task_ids") == 0) {
		if (!id_list_ok(value, NV_K8S_TASKS_MAX, &count))
			return desc_bad(err, key, value,
					"give the sweep's navette job ids in "
					"index order, separated by commas "
					"(at most 1000)");
		text = &d->task_ids;
	} else if (strcmp(key, "spec_sha256") == 0) {
		if (!nv_hex_is_lower(value, 64))
			return desc_bad(err, key, value,
					"give 64 lowercase hex digits");
		text = &d->spec_sha256;
	} else if (strcmp(key, "after") == 0) {
		if (!id_list_ok(value, NV_K8S_TASKS_MAX, &count))
			return desc_bad(err, key, value,
					"give the producers' navette job ids, "
					"separated by commas");
		text = &d->after;
	} else {
		return nv_err_unknown_key(err, "Kubernetes job setting", key,
					  desc_keys);
	}
	return set_text(text, value, err);
}

/* ---- env, secrets, launcher ------------------------------------------ */

static int env_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 128 ||
	    !(isalpha((unsigned char)name[0]) || name[0] == '_'))
		return 0;
	for (const char *p = name; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '_')
			return 0;
	return 1;
}

int nv_k8s_desc_setenv(nv_k8s_job_desc *d, const char *name, const char *value,
		       int secret, nv_err *err)
{
	char *n_copy, *v_copy, **names, **values;
	size_t vlen;

	if (!name || !env_name_ok(name))
		return nv_err_bad(err, "letters, digits and _",
				  "environment variable name", name, 64);
	if (secret || strncmp(name, "NAVETTE_SECRET", 14) == 0)
		return nv_err_set(
			err, NV_EREFUSED,
			"give it as one of the job's secrets: the Secret "
			"mounts it at " NV_K8S_SECRET_DIR
			"/secrets, while anyone who may read the Job reads "
			"its env",
			"environment variable %s holds a secret: it cannot "
			"go into a Kubernetes Job's env",
			name);
	for (int i = 0; reserved_env[i]; i++)
		if (strcmp(name, reserved_env[i]) == 0)
			return nv_err_set(err, NV_EINVAL,
					  "navette sets it in the Job itself: "
					  "choose another name",
					  "environment variable %s is "
					  "reserved",
					  name);
	if (!value)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "environment variable %s has no value", name);
	vlen = strlen(value);
	if (vlen > 64 * 1024 ||
	    nv_utf8_invalid_at(value, vlen) != NV_UTF8_VALID)
		return nv_err_set(err, NV_EINVAL,
				  "give UTF-8 text of at most 64 KiB",
				  "environment variable %s is over 64 KiB or "
				  "not UTF-8",
				  name);
	if (strcmp(name, "NAVETTE_JOB_ID") == 0 && nv_job_id_check(value, err))
		return err->code;
	v_copy = strdup(value);
	if (!v_copy)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	for (size_t i = 0; i < d->nenv; i++) {
		if (strcmp(d->env_names[i], name) == 0) {
			wipe_free(d->env_values[i], strlen(d->env_values[i]));
			d->env_values[i] = v_copy;
			return 0;
		}
	}
	if (d->nenv >= NV_K8S_ENV_MAX) {
		wipe_free(v_copy, vlen);
		return nv_err_set(err, NV_EINVAL, NULL,
				  "more than %d environment variables",
				  NV_K8S_ENV_MAX);
	}
	n_copy = strdup(name);
	names = realloc(d->env_names, (d->nenv + 1) * sizeof(*names));
	if (names)
		d->env_names = names;
	values = realloc(d->env_values, (d->nenv + 1) * sizeof(*values));
	if (values)
		d->env_values = values;
	if (!n_copy || !names || !values) {
		free(n_copy);
		wipe_free(v_copy, vlen);
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	}
	d->env_names[d->nenv] = n_copy;
	d->env_values[d->nenv] = v_copy;
	d->nenv++;
	return 0;
}

static int secret_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 200 || name[0] == '.')
		return 0;
	for (const char *p = name; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("_-.", *p))
			return 0;
	return 1;
}

/* A copy of len bytes, NUL-terminated, or NULL. */
static char *copy_bytes(const char *value, size_t len)
{
	char *copy = malloc(len + 1);

	if (copy) {
		memcpy(copy, value, len);
		copy[len] = '\0';
	}
	return copy;
}

static int text_value_check(const char *what, const char *name,
			    const char *value, size_t len, nv_err *err)
{
	if (!value || memchr(value, '\0', len) ||
	    nv_utf8_invalid_at(value, len) != NV_UTF8_VALID)
		return nv_err_set(err, NV_EINVAL,
				  "a Secret's stringData holds UTF-8 text "
				  "only: encode binary values (base64) first",
				  "%s %s is not UTF-8 text", what, name);
	return 0;
}

int nv_k8s_desc_add_secret(nv_k8s_job_desc *d, const char *name,
			   const char *value, size_t len, nv_err *err)
{
	char *n_copy, *v_copy, **names, **values;
	size_t *lens, at;

	if (!name || !secret_name_ok(name))
		return nv_err_bad(err,
				  "letters, digits, '_', '-' and '.', not "
				  "starting with '.', at most 200",
				  "secret name", name, 64);
	if (text_value_check("secret", name, value, len, err))
		return err->code;
	for (size_t i = 0; i < d->nsecrets; i++)
		if (strcmp(d->secret_names[i], name) == 0)
			return nv_err_set(err, NV_EINVAL,
					  "give each secret once",
					  "secret %s is given twice", name);
	if (d->nsecrets >= NV_K8S_SECRETS_MAX)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "more than %d secrets for one job",
				  NV_K8S_SECRETS_MAX);
	n_copy = strdup(name);
	v_copy = copy_bytes(value, len);
	names = realloc(d->secret_names, (d->nsecrets + 1) * sizeof(*names));
	if (names)
		d->secret_names = names;
	values = realloc(d->secret_values, (d->nsecrets + 1) * sizeof(*values));
	if (values)
		d->secret_values = values;
	lens = realloc(d->secret_lens, (d->nsecrets + 1) * sizeof(*lens));
	if (lens)
		d->secret_lens = lens;
	if (!n_copy || !v_copy || !names || !values || !lens) {
		free(n_copy);
		wipe_free(v_copy, len);
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	}
	/* kept sorted by name: one order whatever the caller's */
	at = 0;
	while (at < d->nsecrets && strcmp(d->secret_names[at], name) < 0)
		at++;
	for (size_t i = d->nsecrets; i > at; i--) {
		d->secret_names[i] = d->secret_names[i - 1];
		d->secret_values[i] = d->secret_values[i - 1];
		d->secret_lens[i] = d->secret_lens[i - 1];
	}
	d->secret_names[at] = n_copy;
	d->secret_values[at] = v_copy;
	d->secret_lens[at] = len;
	d->nsecrets++;
	return 0;
}

int nv_k8s_desc_set_launcher(nv_k8s_job_desc *d, const char *script, size_t len,
			     nv_err *err)
{
	char *copy;

	if (!script || len == 0)
		return nv_err_set(err, NV_EINVAL, NULL, "no launcher script");
	if (text_value_check("the launcher", "script", script, len, err))
		return err->code;
	copy = copy_bytes(script, len);
	if (!copy)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	wipe_free(d->launcher, d->launcher_len);
	d->launcher = copy;
	d->launcher_len = len;
	return 0;
}

/* ---- the Job ----------------------------------------------------------- */

/* Bytes as a quantity: the largest binary unit that divides them. */
static void memory_quantity(long long bytes, char out[32])
{
	static const char *const units[] = {"Ti", "Gi", "Mi", "Ki"};

	for (int i = 0; i < 4; i++) {
		long long unit = 1LL << (10 * (4 - i));

		if (bytes % unit == 0) {
			snprintf(out, 32, "%lld%s", bytes / unit, units[i]);
			return;
		}
	}
	snprintf(out, 32, "%lld", bytes);
}

static void cpu_quantity(long milli, char out[32])
{
	if (milli % 1000 == 0)
		snprintf(out, 32, "%ld", milli / 1000);
	else
		snprintf(out, 32, "%ldm", milli);
}

/* Adds what cJSON's Add* return; NULL anywhere makes the whole NULL. */
#define ADD(call)                                                              \
	do {                                                                   \
		if (!(call))                                                   \
			goto nomem;                                            \
	} while (0)

static cJSON *labels_of(const nv_k8s_job_desc *d)
{
	cJSON *l = cJSON_CreateObject();

	if (!l)
		return NULL;
	ADD(cJSON_AddStringToObject(l, LP "job", d->name));
	if (d->run)
		ADD(cJSON_AddStringToObject(l, LP "run", d->run));
	if (d->project)
		ADD(cJSON_AddStringToObject(l, LP "project", d->project));
	if (d->commit)
		ADD(cJSON_AddStringToObject(l, LP "commit", d->commit));
	if (d->member)
		ADD(cJSON_AddStringToObject(l, LP "member", d->member));
	if (d->profile)
		ADD(cJSON_AddStringToObject(l, LP "profile", d->profile));
	if (d->after)
		ADD(cJSON_AddStringToObject(l, LP "held", "after"));
	return l;
nomem:
	cJSON_Delete(l);
	return NULL;
}

static cJSON *exit_code_rule(const nv_k8s_job_desc *d, const char *action,
			     const char *operator)
{
	cJSON *rule = cJSON_CreateObject(), *on, *values;
	int codes[NV_K8S_EXIT_CODES_MAX + 2];
	size_t n = 0;

	if (!rule)
		return NULL;
	if (strcmp(operator, "NotIn") == 0)
		codes[n++] = 0;
	for (size_t i = 0; i < d->nexit_codes; i++)
		codes[n++] = d->exit_codes[i];
	if (d->requeue_exit) {
		/* into its place, once */
		size_t i = strcmp(operator, "NotIn") == 0 ? 1 : 0;
		while (i < n && codes[i] < d->requeue_exit)
			i++;
		if (i == n || codes[i] != d->requeue_exit) {
			memmove(codes + i + 1, codes + i,
				(n - i) * sizeof(*codes));
			codes[i] = d->requeue_exit;
			n++;
		}
	}
	ADD(cJSON_AddStringToObject(rule, "action", action));
	ADD(on = cJSON_AddObjectToObject(rule, "onExitCodes"));
	if (strcmp(operator, "NotIn") == 0)
		ADD(cJSON_AddStringToObject(on, "containerName", "job"));
	ADD(cJSON_AddStringToObject(on, "operator", operator));
	ADD(values = cJSON_AddArrayToObject(on, "values"));
	for (size_t i = 0; i < n; i++) {
		cJSON *v = cJSON_CreateNumber(codes[i]);
		if (!v || !cJSON_AddItemToArray(values, v)) {
			cJSON_Delete(v);
			goto nomem;
		}
	}
	return rule;
nomem:
	cJSON_Delete(rule);
	return NULL;
}

static int add_to_array(cJSON *array, cJSON *item)
{
	if (!item)
		return 0;
	if (!cJSON_AddItemToArray(array, item)) {
		cJSON_Delete(item);
		return 0;
	}
	return 1;
}

static cJSON *pod_failure_policy(const nv_k8s_job_desc *d)
{
	cJSON *pfp = cJSON_CreateObject(), *rules, *rule, *conds, *cond;

	if (!pfp)
		return NULL;
	ADD(rules = cJSON_AddArrayToObject(pfp, "rules"));
	/* a disruption (preemption, eviction, node lost) uses no retry */
	ADD(add_to_array(rules, rule = cJSON_CreateObject()));
	ADD(cJSON_AddStringToObject(rule, "action", "Ignore"));
	ADD(conds = cJSON_AddArrayToObject(rule, "onPodConditions"));
	ADD(add_to_array(conds, cond = cJSON_CreateObject()));
	ADD(cJSON_AddStringToObject(cond, "type", "DisruptionTarget"));
	ADD(cJSON_AddStringToObject(cond, "status", "True"));
	if (d->nexit_codes || d->requeue_exit)
		ADD(add_to_array(rules, exit_code_rule(d, "Count", "In")));
	ADD(add_to_array(
		rules, exit_code_rule(d, d->tasks > 1 ? "FailIndex" : "FailJob",
				      "NotIn")));
	return pfp;
nomem:
	cJSON_Delete(pfp);
	return NULL;
}

static int add_env_value(cJSON *env, const char *name, const char *value)
{
	cJSON *e = cJSON_CreateObject();

	if (!add_to_array(env, e))
		return 0;
	return cJSON_AddStringToObject(e, "name", name) &&
	       cJSON_AddStringToObject(e, "value", value);
}

static int add_env_field(cJSON *env, const char *name, const char *path)
{
	cJSON *e = cJSON_CreateObject(), *from, *ref;

	if (!add_to_array(env, e))
		return 0;
	return cJSON_AddStringToObject(e, "name", name) &&
	       (from = cJSON_AddObjectToObject(e, "valueFrom")) &&
	       (ref = cJSON_AddObjectToObject(from, "fieldRef")) &&
	       cJSON_AddStringToObject(ref, "fieldPath", path);
}

static cJSON *resources_of(const nv_k8s_job_desc *d)
{
	cJSON *list = cJSON_CreateObject();
	char q[32];

	if (!list)
		return NULL;
	if (d->cpu_milli) {
		cpu_quantity(d->cpu_milli, q);
		ADD(cJSON_AddStringToObject(list, "cpu", q));
	}
	if (d->memory_bytes) {
		memory_quantity(d->memory_bytes, q);
		ADD(cJSON_AddStringToObject(list, "memory", q));
	}
	if (d->gpus) {
		snprintf(q, sizeof(q), "%d", d->gpus);
		ADD(cJSON_AddStringToObject(list, "nvidia.com/gpu", q));
	}
	return list;
nomem:
	cJSON_Delete(list);
	return NULL;
}

static cJSON *container_of(const nv_k8s_job_desc *d)
{
	cJSON *c = cJSON_CreateObject(), *a, *env, *res, *mounts, *m, *sc;

	if (!c)
		return NULL;
	ADD(cJSON_AddStringToObject(c, "name", "job"));
	ADD(cJSON_AddStringToObject(c, "image", d->image));
	ADD(a = cJSON_AddArrayToObject(c, "command"));
	ADD(add_to_array(a, cJSON_CreateString("sh")));
	ADD(add_to_array(a,
			 cJSON_CreateString(NV_K8S_SECRET_DIR "/launcher.sh")));
	ADD(env = cJSON_AddArrayToObject(c, "env"));
	ADD(add_env_value(env, "NAVETTE_JOB_DIR", NV_K8S_WORK_DIR));
	if (d->nsecrets)
		ADD(add_env_value(env, "NAVETTE_SECRETS",
				  NV_K8S_SECRET_DIR "/secrets"));
	for (size_t i = 0; i < d->nenv; i++)
		ADD(add_env_value(env, d->env_names[i], d->env_values[i]));
	ADD(add_env_field(env, NV_K8S_ENV_FAILURES,
			  "metadata.annotations['batch.kubernetes.io/"
			  "job-index-failure-count']"));
	ADD(add_env_field(env, NV_K8S_ENV_NODE, "spec.nodeName"));
	if (d->cpu_milli || d->memory_bytes || d->gpus) {
		/* requests = limits: the pod is what the scheduler counted */
		ADD(res = cJSON_AddObjectToObject(c, "resources"));
		ADD(cJSON_AddItemToObject(res, "requests", resources_of(d)));
		ADD(cJSON_AddItemToObject(res, "limits", resources_of(d)));
	}
	ADD(mounts = cJSON_AddArrayToObject(c, "volumeMounts"));
	ADD(add_to_array(mounts, m = cJSON_CreateObject()));
	ADD(cJSON_AddStringToObject(m, "name", "secret"));
	ADD(cJSON_AddStringToObject(m, "mountPath", NV_K8S_SECRET_DIR));
	ADD(cJSON_AddTrueToObject(m, "readOnly"));
	ADD(add_to_array(mounts, m = cJSON_CreateObject()));
	ADD(cJSON_AddStringToObject(m, "name", "work"));
	ADD(cJSON_AddStringToObject(m, "mountPath", NV_K8S_WORK_DIR));
	ADD(sc = cJSON_AddObjectToObject(c, "securityContext"));
	ADD(cJSON_AddFalseToObject(sc, "allowPrivilegeEscalation"));
	ADD(a = cJSON_AddObjectToObject(sc, "capabilities"));
	ADD(a = cJSON_AddArrayToObject(a, "drop"));
	ADD(add_to_array(a, cJSON_CreateString("ALL")));
	ADD(a = cJSON_AddObjectToObject(sc, "seccompProfile"));
	ADD(cJSON_AddStringToObject(a, "type", "RuntimeDefault"));
	return c;
nomem:
	cJSON_Delete(c);
	return NULL;
}

static cJSON *volumes_of(const nv_k8s_job_desc *d)
{
	cJSON *vols = cJSON_CreateArray(), *v, *s, *items, *it;
	char key[256], path[256];

	if (!vols)
		return NULL;
	ADD(add_to_array(vols, v = cJSON_CreateObject()));
	ADD(cJSON_AddStringToObject(v, "name", "secret"));
	ADD(s = cJSON_AddObjectToObject(v, "secret"));
	ADD(cJSON_AddStringToObject(s, "secretName", d->name));
	ADD(cJSON_AddNumberToObject(s, "defaultMode", 0400));
	ADD(items = cJSON_AddArrayToObject(s, "items"));
	ADD(add_to_array(items, it = cJSON_CreateObject()));
	ADD(cJSON_AddStringToObject(it, "key", "launcher.sh"));
	ADD(cJSON_AddStringToObject(it, "path", "launcher.sh"));
	for (size_t i = 0; i < d->nsecrets; i++) {
		/* a key cannot hold '/': the volume puts it in a folder */
		snprintf(key, sizeof(key), "s.%s", d->secret_names[i]);
		snprintf(path, sizeof(path), "secrets/%s", d->secret_names[i]);
		ADD(add_to_array(items, it = cJSON_CreateObject()));
		ADD(cJSON_AddStringToObject(it, "key", key));
		ADD(cJSON_AddStringToObject(it, "path", path));
	}
	ADD(add_to_array(vols, v = cJSON_CreateObject()));
	ADD(cJSON_AddStringToObject(v, "name", "work"));
	ADD(cJSON_AddObjectToObject(v, "emptyDir"));
	return vols;
nomem:
	cJSON_Delete(vols);
	return NULL;
}

static int job_desc_check(const nv_k8s_job_desc *d, size_t *annotations,
			  nv_err *err)
{
	size_t count = 0, total = 0;

	if (!d->name || !d->ns || !d->image)
		return nv_err_set(err, NV_EINVAL,
				  "set name, namespace and image first",
				  "the Kubernetes job has no %s",
				  !d->name ? "name"
				  : !d->ns ? "namespace"
					   : "image");
	if (d->parallelism > d->tasks)
		return nv_err_set(err, NV_EINVAL,
				  "give a parallelism of at most the number "
				  "of tasks",
				  "parallelism %d is over the sweep's %d tasks",
				  d->parallelism, d->tasks);
	if (d->task_ids) {
		count = 1;
		for (const char *p = d->task_ids; *p; p++)
			count += *p == ',';
		total += strlen(LP "tasks") + strlen(d->task_ids);
	}
	if (d->tasks > 1 && count != (size_t)d->tasks)
		return nv_err_set(err, NV_EINVAL,
				  "give task_ids: one navette job id per "
				  "index, in index order",
				  "the sweep of %d tasks has %zu task ids",
				  d->tasks, count);
	if (d->spec_sha256)
		total += strlen(LP "spec-sha256") + 64;
	if (d->after)
		total += strlen(LP "after") + strlen(d->after);
	if (d->member_id)
		total += strlen(LP "member-id") + strlen(d->member_id);
	if (total > NV_K8S_ANNOTATIONS_MAX)
		return nv_err_set(err, NV_EINVAL,
				  "split the sweep, or shorten the ids",
				  "the Job's annotations hold %zu bytes, over "
				  "Kubernetes' 256 KiB",
				  total);
	*annotations = total;
	return 0;
}

int nv_k8s_job_manifest(const nv_k8s_job_desc *d, char **out, nv_err *err)
{
	cJSON *job = NULL, *meta, *ann, *spec, *tmpl, *tmeta, *pod, *list, *o;
	char *text = NULL;
	size_t annotations = 0;
	int parallelism = d->parallelism ? d->parallelism : d->tasks;

	*out = NULL;
	if (job_desc_check(d, &annotations, err))
		return err->code;
	ADD(job = cJSON_CreateObject());
	ADD(cJSON_AddStringToObject(job, "apiVersion", "batch/v1"));
	ADD(cJSON_AddStringToObject(job, "kind", "Job"));
	ADD(meta = cJSON_AddObjectToObject(job, "metadata"));
	ADD(cJSON_AddStringToObject(meta, "name", d->name));
	ADD(cJSON_AddStringToObject(meta, "namespace", d->ns));
	ADD(cJSON_AddItemToObject(meta, "labels", labels_of(d)));
	if (annotations) {
		ADD(ann = cJSON_AddObjectToObject(meta, "annotations"));
		if (d->task_ids)
			ADD(cJSON_AddStringToObject(ann, LP "tasks",
						    d->task_ids));
		if (d->spec_sha256)
			ADD(cJSON_AddStringToObject(ann, LP "spec-sha256",
						    d->spec_sha256));
		if (d->after)
			ADD(cJSON_AddStringToObject(ann, LP "after", d->after));
		if (d->member_id)
			ADD(cJSON_AddStringToObject(ann, LP "member-id",
						    d->member_id));
	}

	ADD(spec = cJSON_AddObjectToObject(job, "spec"));
	ADD(cJSON_AddStringToObject(spec, "completionMode", "Indexed"));
	ADD(cJSON_AddNumberToObject(spec, "completions", d->tasks));
	ADD(cJSON_AddNumberToObject(spec, "parallelism", parallelism));
	/* Per index, backoffLimitPerIndex decides; the Job-wide limit is
	 * every index's last failure, so it never ends a sweep early. */
	ADD(cJSON_AddNumberToObject(spec, "backoffLimit",
				    (double)(d->retries + 1) * d->tasks));
	ADD(cJSON_AddNumberToObject(spec, "backoffLimitPerIndex", d->retries));
	ADD(cJSON_AddStringToObject(spec, "podReplacementPolicy", "Failed"));
	if (d->time_limit)
		ADD(cJSON_AddNumberToObject(spec, "activeDeadlineSeconds",
					    (double)d->time_limit));
	ADD(cJSON_AddBoolToObject(spec, "suspend", d->suspend || d->after));
	ADD(cJSON_AddItemToObject(spec, "podFailurePolicy",
				  pod_failure_policy(d)));

	ADD(tmpl = cJSON_AddObjectToObject(spec, "template"));
	ADD(tmeta = cJSON_AddObjectToObject(tmpl, "metadata"));
	ADD(cJSON_AddItemToObject(tmeta, "labels", labels_of(d)));
	ADD(pod = cJSON_AddObjectToObject(tmpl, "spec"));
	ADD(cJSON_AddStringToObject(pod, "restartPolicy", "Never"));
	ADD(cJSON_AddFalseToObject(pod, "automountServiceAccountToken"));
	ADD(cJSON_AddFalseToObject(pod, "enableServiceLinks"));
	if (d->node) {
		ADD(o = cJSON_AddObjectToObject(pod, "nodeSelector"));
		ADD(cJSON_AddStringToObject(o, "kubernetes.io/hostname",
					    d->node));
	}
	if (d->image_pull_secret) {
		ADD(list = cJSON_AddArrayToObject(pod, "imagePullSecrets"));
		ADD(add_to_array(list, o = cJSON_CreateObject()));
		ADD(cJSON_AddStringToObject(o, "name", d->image_pull_secret));
	}
	ADD(list = cJSON_AddArrayToObject(pod, "containers"));
	ADD(add_to_array(list, container_of(d)));
	ADD(cJSON_AddItemToObject(pod, "volumes", volumes_of(d)));

	ADD(text = cJSON_PrintUnformatted(job));
	cJSON_Delete(job);
	if (strlen(text) > NV_K8S_JOB_BODY_MAX) {
		free(text);
		return nv_err_set(err, NV_EINVAL, "split the sweep",
				  "the Job's manifest is over 1 MiB");
	}
	if (nv_k8s_job_check(text, strlen(text), err)) {
		free(text);
		return err->code;
	}
	*out = text;
	return 0;
nomem:
	cJSON_Delete(job);
	return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
}

/* ---- the Secret ------------------------------------------------------- */

/* The bytes s[0..len) take as the inside of a JSON string. */
static size_t json_escaped_len(const char *s, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\' || c == '\n' || c == '\r' ||
		    c == '\t' || c == '\b' || c == '\f')
			n += 2;
		else if (c < 0x20 || c == 0x7f)
			n += 6;
		else
			n++;
	}
	return n;
}

static char *json_escape(char *to, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		const char *pair = NULL;

		switch (c) {
		case '"': pair = "\\\""; break;
		case '\\': pair = "\\\\"; break;
		case '\n': pair = "\\n"; break;
		case '\r': pair = "\\r"; break;
		case '\t': pair = "\\t"; break;
		case '\b': pair = "\\b"; break;
		case '\f': pair = "\\f"; break;
		default: break;
		}
		if (pair) {
			memcpy(to, pair, 2);
			to += 2;
		} else if (c < 0x20 || c == 0x7f) {
			snprintf(to, 7, "\\u%04x", c);
			to += 6;
		} else {
			*to++ = (char)c;
		}
	}
	return to;
}

void nv_k8s_secret_manifest_free(char *out)
{
	if (out)
		wipe_free(out, strlen(out));
}

int nv_k8s_secret_manifest(const nv_k8s_job_desc *d, const char *job_uid,
			   char **out, nv_err *err)
{
	cJSON *sec = NULL, *meta, *owners, *owner;
	char *head = NULL, *text, *at;
	size_t values, size, head_len;

	*out = NULL;
	if (!d->name || !d->ns)
		return nv_err_set(err, NV_EINVAL, "set name and namespace",
				  "the Kubernetes job has no %s",
				  d->name ? "namespace" : "name");
	if (!d->launcher)
		return nv_err_set(err, NV_EINVAL, "set the launcher script",
				  "the Secret of %s has no launcher", d->name);
	if (!job_uid || !job_uid[0] || strlen(job_uid) > 128)
		return nv_err_set(err, NV_EINVAL,
				  "create the Job first: its metadata.uid "
				  "makes it the Secret's owner",
				  "no uid for the Job %s", d->name);
	values = d->launcher_len;
	for (size_t i = 0; i < d->nsecrets; i++)
		values += d->secret_lens[i];
	if (values > NV_K8S_SECRET_MAX)
		return nv_err_set(
			err, NV_EREFUSED,
			"split the sweep into smaller ones (its launcher "
			"grows with the tasks), or keep large secrets in "
			"the store and give their names instead",
			"the Secret of %s would hold %zu bytes: over "
			"Kubernetes' limit of 1 MiB (launcher %zu bytes, %zu "
			"secrets)",
			d->name, values, d->launcher_len, d->nsecrets);

	ADD(sec = cJSON_CreateObject());
	ADD(cJSON_AddStringToObject(sec, "apiVersion", "v1"));
	ADD(cJSON_AddStringToObject(sec, "kind", "Secret"));
	ADD(meta = cJSON_AddObjectToObject(sec, "metadata"));
	ADD(cJSON_AddStringToObject(meta, "name", d->name));
	ADD(cJSON_AddStringToObject(meta, "namespace", d->ns));
	ADD(cJSON_AddItemToObject(meta, "labels", labels_of(d)));
	ADD(owners = cJSON_AddArrayToObject(meta, "ownerReferences"));
	ADD(add_to_array(owners, owner = cJSON_CreateObject()));
	ADD(cJSON_AddStringToObject(owner, "apiVersion", "batch/v1"));
	ADD(cJSON_AddStringToObject(owner, "kind", "Job"));
	ADD(cJSON_AddStringToObject(owner, "name", d->name));
	ADD(cJSON_AddStringToObject(owner, "uid", job_uid));
	/* no blockOwnerDeletion: it needs update rights on jobs/finalizers */
	ADD(cJSON_AddFalseToObject(owner, "controller"));
	ADD(cJSON_AddStringToObject(sec, "type", "Opaque"));
	ADD(head = cJSON_PrintUnformatted(sec));
	cJSON_Delete(sec);
	sec = NULL;

	/* head ends with '}': stringData goes in its place, by hand */
	head_len = strlen(head) - 1;
	size = head_len + strlen(",\"stringData\":{\"launcher.sh\":\"") +
	       json_escaped_len(d->launcher, d->launcher_len) + 1;
	for (size_t i = 0; i < d->nsecrets; i++)
		size += strlen(",\"s.\":\"\"") + strlen(d->secret_names[i]) +
			json_escaped_len(d->secret_values[i],
					 d->secret_lens[i]);
	size += strlen("}}") + 1;
	if (size > NV_K8S_SECRET_BODY_MAX) {
		free(head);
		return nv_err_set(err, NV_EREFUSED, "split the sweep",
				  "the Secret of %s is over 8 MiB as JSON",
				  d->name);
	}
	text = malloc(size);
	if (!text)
		goto nomem;
	memcpy(text, head, head_len);
	at = text + head_len;
	at += sprintf(at, ",\"stringData\":{\"launcher.sh\":\"");
	at = json_escape(at, d->launcher, d->launcher_len);
	*at++ = '"';
	for (size_t i = 0; i < d->nsecrets; i++) {
		at += sprintf(at, ",\"s.%s\":\"", d->secret_names[i]);
		at = json_escape(at, d->secret_values[i], d->secret_lens[i]);
		*at++ = '"';
	}
	memcpy(at, "}}", 3);
	free(head);
	*out = text;
	return 0;
nomem:
	cJSON_Delete(sec);
	free(head);
	return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
}

/* ---- patches and DeleteOptions ---------------------------------------- */

int nv_k8s_resume_patch(nv_buf *out, nv_err *err)
{
	if (nv_buf_puts(out, "{\"spec\":{\"suspend\":false}}"))
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	return 0;
}

int nv_k8s_ttl_patch(long seconds, nv_buf *out, nv_err *err)
{
	if (seconds < 0 || seconds > 2147483647L)
		return nv_err_set(err, NV_EINVAL,
				  "give seconds from 0 (at once) on",
				  "time to live %ld is not valid", seconds);
	if (nv_buf_printf(out, "{\"spec\":{\"ttlSecondsAfterFinished\":%ld}}",
			  seconds))
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	return 0;
}

int nv_k8s_delete_body(nv_buf *out, nv_err *err)
{
	if (nv_buf_puts(out, "{\"kind\":\"DeleteOptions\",\"apiVersion\":"
			     "\"v1\",\"propagationPolicy\":\"Background\"}"))
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	return 0;
}

/* ---- what the server enforces beyond the schema ------------------------ */

static const char *string_at(const cJSON *o, const char *const *path)
{
	for (; *path && o; path++)
		o = cJSON_GetObjectItemCaseSensitive(o, *path);
	return cJSON_IsString(o) ? o->valuestring : NULL;
}

int nv_k8s_job_check(const char *json, size_t len, nv_err *err)
{
	static const char *const restart[] = {"spec", "template", "spec",
					      "restartPolicy", NULL};
	static const char *const replace[] = {"spec", "podReplacementPolicy",
					      NULL};
	cJSON *job = cJSON_ParseWithLength(json, len), *spec, *containers, *c;
	const char *policy, *replacement;
	int rc = 0;

	if (!job)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "the Job's manifest is not JSON");
	spec = cJSON_GetObjectItemCaseSensitive(job, "spec");
	policy = string_at(job, restart);
	replacement = string_at(job, replace);
	if (!policy || strcmp(policy, "Never") != 0) {
		rc = nv_err_set(err, NV_EINVAL,
				"navette's Jobs run each attempt in a new pod "
				"(restartPolicy Never): their retries and "
				"failure rules need it, and the API server "
				"refuses the Job (422) otherwise",
				"the Job's pod has restartPolicy '%.32s'",
				policy ? policy : "(none)");
		goto done;
	}
	if (cJSON_GetObjectItemCaseSensitive(spec, "podFailurePolicy") &&
	    replacement && strcmp(replacement, "Failed") != 0) {
		rc = nv_err_set(err, NV_EINVAL,
				"a podFailurePolicy needs podReplacementPolicy "
				"Failed",
				"the Job has podReplacementPolicy '%.32s'",
				replacement);
		goto done;
	}
	containers = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(spec, "template"),
			"spec"),
		"containers");
	if (!cJSON_IsArray(containers) || cJSON_GetArraySize(containers) < 1) {
		rc = nv_err_set(err, NV_EINVAL, NULL,
				"the Job's pod has no container");
		goto done;
	}
	cJSON_ArrayForEach(c, containers)
	{
		cJSON *image = cJSON_GetObjectItemCaseSensitive(c, "image");

		if (!cJSON_IsString(image) || !image_ok(image->valuestring)) {
			rc = nv_err_set(err, NV_EINVAL,
					"give the image by digest, "
					"repo@sha256:<64 hex>",
					"the Job's image '%.200s' is not "
					"pinned by digest",
					cJSON_IsString(image)
						? image->valuestring
						: "(none)");
			goto done;
		}
	}
done:
	cJSON_Delete(job);
	return rc;
}
