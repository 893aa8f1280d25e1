/* Kubernetes exec credential plugins (client.authentication.k8s.io v1 and
 * v1beta1): the KUBERNETES_EXEC_INFO a plugin is given, running it as
 * kubectl does (its configured args and env added to ours, no terminal,
 * stdin at end of file) but bounded (NV_K8S_EXEC_TIMEOUT_S, output capped),
 * and reading the ExecCredential it prints: a bearer token, or a client
 * certificate and key, and when they expire. Pure C. */
#ifndef NV_K8S_EXEC_H
#define NV_K8S_EXEC_H

#include <stddef.h>

#include "core/nv_err.h"
#include "creds/secret.h"
#include "k8s/k8s_kubeconfig.h"

#define NV_K8S_EXEC_TIMEOUT_S  30
#define NV_K8S_EXEC_OUTPUT_MAX ((size_t)64 * 1024)

/* What a plugin gave. Exactly one of token, client_key is set. */
typedef struct nv_k8s_credential {
	nv_secret *token;      /* kind bearer */
	char *client_cert_pem; /* malloc'd, with client_key (kind pem) */
	size_t client_cert_len;
	nv_secret *client_key;
	double expires_at; /* epoch seconds; 0: the plugin gave none */
} nv_k8s_credential;

/* The KUBERNETES_EXEC_INFO JSON for t's plugin (t->exec), with the
 * cluster's server and CA when provideClusterInfo is set. *out is
 * malloc'd, NUL-terminated; the caller frees it. */
int nv_k8s_exec_info(const nv_k8s_target *t, char **out, nv_err *err);

/* Reads a plugin's stdout (len bytes): an ExecCredential of api_version
 * with status.token or status.clientCertificateData + clientKeyData, and
 * status.expirationTimestamp (RFC 3339) if any. Refused (NV_EREFUSED)
 * when it is not JSON, of another kind or apiVersion, gives no
 * credential, or has expired by now. user names the secrets. *out is
 * zeroed first; on failure it holds nothing. */
int nv_k8s_exec_parse(const char *api_version, const char *user,
		      const char *json, size_t len, double now,
		      nv_k8s_credential *out, nv_err *err);

/* Runs t's plugin and reads what it printed (as above). timeout_s <= 0:
 * NV_K8S_EXEC_TIMEOUT_S. NV_ENOTFOUND when the program is not there;
 * NV_EREFUSED when it failed (its exit status and the last line of its
 * stderr), timed out or printed too much. */
int nv_k8s_exec_run(const nv_k8s_target *t, double now, double timeout_s,
		    nv_k8s_credential *out, nv_err *err);

/* "2026-12-06T21:00:00Z", with a fraction or a +hh:mm offset -> epoch
 * seconds; -1 when malformed. */
double nv_k8s_parse_rfc3339(const char *text);

/* Frees and wipes what *c holds, and zeroes it. NULL is fine. */
void nv_k8s_credential_free(nv_k8s_credential *c);

#endif
