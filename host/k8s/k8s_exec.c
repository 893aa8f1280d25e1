/* Exec credential plugins (see k8s_exec.h). The plugin runs through
 * nv_proc_run, the runner of every credential command: an argv, never a
 * shell; stdin /dev/null; stdout and stderr captured up to a cap; killed
 * past its time limit. Its output may hold a secret: every buffer that
 * held it is wiped. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <openssl/crypto.h>

#include "core/proc.h"
#include "k8s/k8s_exec.h"
#include "ssh/ssh_key.h"

extern char **environ;

#define EXEC_STDERR_MAX 8192
#define EXEC_ENV_MAX    1024

static const char *plugin_hint = "run the plugin by hand (the command and "
				 "args of the kubeconfig's exec entry)";

void nv_k8s_credential_free(nv_k8s_credential *c)
{
	if (!c)
		return;
	nv_secret_free(c->token);
	nv_secret_free(c->client_key);
	free(c->client_cert_pem);
	memset(c, 0, sizeof(*c));
}

static int digits(const char *p, int n)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)p[i]))
			return -1;
		v = v * 10 + (p[i] - '0');
	}
	return v;
}

double nv_k8s_parse_rfc3339(const char *s)
{
	struct tm tm;
	int y, mo, d, h, mi, sec, off = 0;
	double frac = 0;
	const char *p;

	if (!s || strlen(s) < 20 || s[4] != '-' || s[7] != '-' ||
	    (s[10] != 'T' && s[10] != 't') || s[13] != ':' || s[16] != ':')
		return -1;
	y = digits(s, 4);
	mo = digits(s + 5, 2);
	d = digits(s + 8, 2);
	h = digits(s + 11, 2);
	mi = digits(s + 14, 2);
	sec = digits(s + 17, 2);
	if (y < 0 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 ||
	    mi < 0 || mi > 59 || sec < 0 || sec > 60)
		return -1;
	p = s + 19;
	if (*p == '.') {
		double scale = 0.1;
		if (!isdigit((unsigned char)p[1]))
			return -1;
		for (p++; isdigit((unsigned char)*p); p++, scale /= 10)
			frac += (*p - '0') * scale;
	}
	if ((*p == 'Z' || *p == 'z') && p[1] == '\0') {
		off = 0;
	} else if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':') {
		int oh = digits(p + 1, 2), om = digits(p + 4, 2);
		if (oh < 0 || oh > 23 || om < 0 || om > 59)
			return -1;
		off = (oh * 60 + om) * 60 * (*p == '-' ? -1 : 1);
	} else {
		return -1;
	}
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	return (double)timegm(&tm) - off + frac;
}

int nv_k8s_exec_info(const nv_k8s_target *t, char **out, nv_err *err)
{
	cJSON *root = cJSON_CreateObject(), *spec, *cluster;
	char *b64 = NULL;

	*out = NULL;
	if (!root)
		goto oom;
	if (!cJSON_AddStringToObject(root, "apiVersion", t->exec.api_version) ||
	    !cJSON_AddStringToObject(root, "kind", "ExecCredential") ||
	    !(spec = cJSON_AddObjectToObject(root, "spec")))
		goto oom;
	if (t->exec.provide_cluster_info) {
		if (!(cluster = cJSON_AddObjectToObject(spec, "cluster")) ||
		    !cJSON_AddStringToObject(cluster, "server", t->server))
			goto oom;
		if (t->ca_pem) {
			b64 = malloc(4 * ((t->ca_pem_len + 2) / 3) + 1);
			if (!b64)
				goto oom;
			nv_ssh_b64_encode((const unsigned char *)t->ca_pem,
					  t->ca_pem_len, b64, 1);
			if (!cJSON_AddStringToObject(
				    cluster, "certificate-authority-data", b64))
				goto oom;
		}
	}
	/* navette never has a terminal to lend the plugin */
	if (!cJSON_AddBoolToObject(spec, "interactive", 0))
		goto oom;
	*out = cJSON_PrintUnformatted(root);
	if (!*out)
		goto oom;
	free(b64);
	cJSON_Delete(root);
	return 0;
oom:
	free(b64);
	cJSON_Delete(root);
	return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
}

static void wipe_json(cJSON *o)
{
	for (cJSON *c = o; c; c = c->next) {
		if (cJSON_IsString(c) && c->valuestring)
			OPENSSL_cleanse(c->valuestring, strlen(c->valuestring));
		wipe_json(c->child);
	}
}

static const char *json_str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int secret_of(const char *user, nv_secret_kind kind, const char *field,
		     const char *value, nv_secret **out, nv_err *err)
{
	char name[NV_SECRET_NAME_MAX + 1];
	nv_secret *s;

	snprintf(name, sizeof(name), "k8s-exec:%s", user);
	s = nv_secret_new(name, kind, "command", err);
	if (!s)
		return err ? err->code : NV_ENOMEM;
	if (nv_secret_set(s, field, value, strlen(value), err) != 0 ||
	    nv_secret_complete(s, err) != 0) {
		nv_secret_free(s);
		return err ? err->code : NV_EINVAL;
	}
	nv_secret_announce(s);
	*out = s;
	return 0;
}

static int parse_status(const char *api_version, const char *user,
			const cJSON *doc, double now, nv_k8s_credential *out,
			nv_err *err)
{
	const char *kind = json_str(doc, "kind");
	const char *version = json_str(doc, "apiVersion");
	const cJSON *status = cJSON_GetObjectItemCaseSensitive(doc, "status");
	const char *token, *cert, *key, *exp;

	if (!cJSON_IsObject(doc) || !kind || strcmp(kind, "ExecCredential"))
		return nv_err_set(err, NV_EREFUSED, plugin_hint,
				  "exec plugin of user %s: its output is not "
				  "an ExecCredential (kind %.60s)",
				  user, kind ? kind : "missing");
	if (!version || strcmp(version, api_version) != 0)
		return nv_err_set(err, NV_EREFUSED,
				  "set the kubeconfig's exec apiVersion to the "
				  "one the plugin speaks",
				  "exec plugin of user %s: it answered "
				  "apiVersion %.80s, navette asked for %s",
				  user, version ? version : "(none)",
				  api_version);
	if (!cJSON_IsObject(status))
		return nv_err_set(err, NV_EREFUSED, plugin_hint,
				  "exec plugin of user %s: its ExecCredential "
				  "has no status",
				  user);
	token = json_str(status, "token");
	cert = json_str(status, "clientCertificateData");
	key = json_str(status, "clientKeyData");
	exp = json_str(status, "expirationTimestamp");
	if (exp) {
		out->expires_at = nv_k8s_parse_rfc3339(exp);
		if (out->expires_at < 0)
			return nv_err_set(err, NV_EREFUSED, plugin_hint,
					  "exec plugin of user %s: bad "
					  "expirationTimestamp '%.40s'",
					  user, exp);
		if (out->expires_at <= now)
			return nv_err_set(err, NV_EREFUSED,
					  "check the plugin's own login (and "
					  "this machine's clock)",
					  "exec plugin of user %s: its "
					  "credential expired on arrival "
					  "(%.40s)",
					  user, exp);
	}
	if (token && token[0])
		return secret_of(user, NV_SECRET_BEARER, "token", token,
				 &out->token, err);
	if (!cert || !cert[0] || !key || !key[0])
		return nv_err_set(err, NV_EREFUSED, plugin_hint,
				  "exec plugin of user %s: no status.token, "
				  "nor clientCertificateData with "
				  "clientKeyData",
				  user);
	out->client_cert_pem = strdup(cert);
	if (!out->client_cert_pem)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	out->client_cert_len = strlen(cert);
	return secret_of(user, NV_SECRET_PEM, "key", key, &out->client_key,
			 err);
}

int nv_k8s_exec_parse(const char *api_version, const char *user,
		      const char *json, size_t len, double now,
		      nv_k8s_credential *out, nv_err *err)
{
	cJSON *doc;
	int rc;

	memset(out, 0, sizeof(*out));
	if (len > NV_K8S_EXEC_OUTPUT_MAX)
		return nv_err_set(err, NV_EREFUSED, plugin_hint,
				  "exec plugin of user %s: output over %zu "
				  "bytes",
				  user, NV_K8S_EXEC_OUTPUT_MAX);
	doc = cJSON_ParseWithLength(json, len);
	if (!doc)
		return nv_err_set(err, NV_EREFUSED, plugin_hint,
				  "exec plugin of user %s: its output is not "
				  "JSON",
				  user);
	rc = parse_status(api_version, user, doc, now, out, err);
	wipe_json(doc);
	cJSON_Delete(doc);
	if (rc)
		nv_k8s_credential_free(out);
	return rc;
}

/* The last non-empty line of text (cut at 300 bytes) into out. */
static void last_line(const char *text, size_t len, char *out, size_t cap)
{
	size_t end = len, start;
	while (end && (text[end - 1] == '\n' || text[end - 1] == '\r' ||
		       text[end - 1] == ' '))
		end--;
	start = end;
	while (start && text[start - 1] != '\n')
		start--;
	if (end - start > 300)
		end = start + 300;
	snprintf(out, cap, "%.*s", (int)(end - start), text + start);
	for (char *p = out; *p; p++)
		if ((unsigned char)*p < 0x20)
			*p = ' ';
}

int nv_k8s_exec_run(const nv_k8s_target *t, double now, double timeout_s,
		    nv_k8s_credential *out, nv_err *err)
{
	const nv_k8s_exec_config *x = &t->exec;
	const char *argv[NV_K8S_EXEC_ARGS_MAX + 2];
	char *envp[EXEC_ENV_MAX + NV_K8S_EXEC_ENV_MAX + 2];
	char *info = NULL, *info_var = NULL;
	char *outbuf = NULL, errbuf[EXEC_STDERR_MAX], line[320];
	const size_t cap = NV_K8S_EXEC_OUTPUT_MAX + 1;
	nv_proc_opts o = {0};
	nv_proc_result r;
	int rc, why, n = 0, extra = 0, first = 0;

	memset(out, 0, sizeof(*out));
	if (t->auth != NV_K8S_AUTH_EXEC || !x->command[0])
		return nv_err_set(err, NV_EINVAL, NULL,
				  "user %s has no exec plugin", t->user);
	if (timeout_s <= 0)
		timeout_s = NV_K8S_EXEC_TIMEOUT_S;
	argv[0] = x->command;
	for (int i = 0; i < x->nargs; i++)
		argv[i + 1] = x->args[i];
	argv[x->nargs + 1] = NULL;
	if ((rc = nv_k8s_exec_info(t, &info, err)) != 0)
		return rc;
	size_t info_cap = strlen(info) + sizeof("KUBERNETES_EXEC_INFO=");
	info_var = malloc(info_cap);
	outbuf = calloc(1, cap);
	if (!info_var || !outbuf) {
		rc = nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
		goto out;
	}
	snprintf(info_var, info_cap, "KUBERNETES_EXEC_INFO=%s", info);
	/* ours, less what the kubeconfig sets, then its env, then the info */
	for (char **e = environ; e && *e && n < EXEC_ENV_MAX; e++) {
		int skip = strncmp(*e, "KUBERNETES_EXEC_INFO=", 21) == 0;
		for (int i = 0; i < x->nenv && !skip; i++) {
			size_t l = strlen(x->env_names[i]);
			skip = strncmp(*e, x->env_names[i], l) == 0 &&
			       (*e)[l] == '=';
		}
		if (!skip)
			envp[n++] = *e;
	}
	first = n;
	for (int i = 0; i < x->nenv; i++) {
		size_t l =
			strlen(x->env_names[i]) + strlen(x->env_values[i]) + 2;
		char *v = malloc(l);
		if (!v) {
			rc = nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
			goto out;
		}
		snprintf(v, l, "%s=%s", x->env_names[i], x->env_values[i]);
		envp[n++] = v;
		extra++;
	}
	envp[n++] = info_var;
	envp[n] = NULL;
	o.argv = argv;
	o.search_path = strchr(x->command, '/') == NULL;
	o.envp = envp;
	o.out = (nv_proc_stream){NV_PROC_CAPTURE, outbuf, cap, 0};
	o.err = (nv_proc_stream){NV_PROC_CAPTURE, errbuf, sizeof(errbuf), 0};
	o.timeout_s = timeout_s;
	o.own_group = 1;
	o.stop_at_cap = 1;
	rc = nv_proc_run(&o, &r, &why, err);
	if (rc == NV_ENOTFOUND)
		rc = nv_err_set(err, NV_ENOTFOUND,
				"install it, or fix the exec command in the "
				"kubeconfig (a bare name is looked up in "
				"PATH)",
				"exec plugin of user %s: %s not found", t->user,
				x->command);
	else if (rc != 0)
		; /* nv_proc_run said why */
	else if (r.timed_out)
		rc = nv_err_set(err, NV_EREFUSED,
				"a plugin that waits for a login in a browser "
				"or terminal: log in first",
				"exec plugin of user %s: %s did not finish "
				"within %.0f s",
				t->user, x->command, timeout_s);
	else if (r.over_cap)
		rc = nv_err_set(err, NV_EREFUSED, plugin_hint,
				"exec plugin of user %s: %s printed more than "
				"%zu bytes",
				t->user, x->command, NV_K8S_EXEC_OUTPUT_MAX);
	else if (!r.exited || r.exit_status != 0) {
		last_line(errbuf, r.err_len, line, sizeof(line));
		rc = nv_err_set(err, NV_EREFUSED, plugin_hint,
				"exec plugin of user %s: %s failed (status "
				"%d)%s%s",
				t->user, x->command, nv_proc_status(&r),
				line[0] ? ": " : "", line);
	} else {
		rc = nv_k8s_exec_parse(x->api_version, t->user, outbuf,
				       r.out_len, now, out, err);
	}
out:
	for (int i = 0; i < extra; i++) {
		char *v = envp[first + i];
		OPENSSL_cleanse(v, strlen(v));
		free(v);
	}
	if (outbuf) {
		OPENSSL_cleanse(outbuf, cap);
		free(outbuf);
	}
	OPENSSL_cleanse(errbuf, sizeof(errbuf));
	free(info_var);
	free(info);
	return rc;
}
