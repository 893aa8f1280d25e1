/* Fuzz target: a kubeconfig file (host/k8s/k8s_kubeconfig.c) as a user's
 * ~/.kube/config or a downloaded one hands it to navette, resolved for its
 * current context and for a context named "a"; and the same bytes as an
 * exec plugin's output (k8s_exec.c). Checks invariants, not just the
 * absence of crashes: a refusal says why and leaves nothing behind; a
 * resolved target has an https server, a namespace, the credential its
 * kind promises, and an exec plugin's KUBERNETES_EXEC_INFO is JSON. File
 * references are resolved against a folder that does not exist. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "k8s/k8s_exec.h"
#include "k8s/k8s_kubeconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_target(int rc, const nv_k8s_target *t, const nv_err *err)
{
	if (rc != 0) {
		if (!err->message[0] || t->token || t->ca_pem ||
		    t->client_key || t->client_cert_pem || t->exec.nargs)
			abort();
		return;
	}
	if (strncmp(t->server, "https://", 8) != 0 || !t->server[8] ||
	    !t->namespace_[0] || !t->context[0])
		abort();
	switch (t->auth) {
	case NV_K8S_AUTH_TOKEN:
		if (!t->token || !nv_secret_get(t->token, "token"))
			abort();
		break;
	case NV_K8S_AUTH_TOKEN_FILE:
		if (!t->token_file[0])
			abort();
		break;
	case NV_K8S_AUTH_CLIENT_CERT:
		if (!t->client_cert_pem || !t->client_key)
			abort();
		break;
	case NV_K8S_AUTH_EXEC: {
		char *info = NULL;
		nv_err e2;
		cJSON *j;
		if (!t->exec.command[0] ||
		    (strcmp(t->exec.api_version, NV_K8S_EXEC_V1) != 0 &&
		     strcmp(t->exec.api_version, NV_K8S_EXEC_V1BETA1) != 0) ||
		    strcmp(t->exec.interactive_mode, "Always") == 0)
			abort();
		if (nv_k8s_exec_info(t, &info, &e2) != 0)
			abort();
		j = cJSON_Parse(info);
		if (!j)
			abort();
		cJSON_Delete(j);
		free(info);
		break;
	}
	case NV_K8S_AUTH_NONE:
		if (t->token || t->client_key)
			abort();
		break;
	default: abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	nv_k8s_target t;
	nv_k8s_credential c;
	nv_err err;
	int rc;

	rc = nv_k8s_kubeconfig_load_text(text, size,
					 "/nonexistent-navette-fuzz",
					 "fuzz.yaml", NULL, &t, &err);
	check_target(rc, &t, &err);
	nv_k8s_target_free(&t);
	rc = nv_k8s_kubeconfig_load_text(text, size,
					 "/nonexistent-navette-fuzz",
					 "fuzz.yaml", "a", &t, &err);
	check_target(rc, &t, &err);
	nv_k8s_target_free(&t);

	rc = nv_k8s_exec_parse(NV_K8S_EXEC_V1, "fuzz", text, size, 0, &c, &err);
	if (rc != 0) {
		if (!err.message[0] || c.token || c.client_key)
			abort();
	} else if (!c.token == !c.client_key ||
		   (c.client_key && !c.client_cert_pem)) {
		abort();
	}
	nv_k8s_credential_free(&c);
	return 0;
}
