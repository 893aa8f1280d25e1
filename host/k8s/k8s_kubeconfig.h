/* Kubernetes client configuration, read as kubectl reads it: kubeconfig
 * files merged in order (the first file that names a cluster, context or
 * user, or sets current-context, wins), then one context resolved to its
 * cluster (server, CA) and user (token, token file, client certificate, or
 * an exec plugin) and namespace. Also the in-cluster configuration of a
 * pod's service account. YAML is read with libyaml, bounded: files of
 * NV_K8S_KUBECONFIG_FILE_MAX bytes at most, nesting, node and entry counts
 * capped, and aliases refused (no "billion laughs"). Tokens and private
 * keys go straight into nv_secrets; every other copy of them is wiped.
 * What navette does not support yet, or never will (TLS checks turned off,
 * passwords, auth-provider, interactive plugins), is refused with what to
 * do instead. Pure C. */
#ifndef NV_K8S_KUBECONFIG_H
#define NV_K8S_KUBECONFIG_H

#include <stddef.h>

#include "core/nv_err.h"
#include "creds/secret.h"

#define NV_K8S_KUBECONFIG_FILE_MAX  ((size_t)1024 * 1024)
#define NV_K8S_KUBECONFIG_FILES_MAX 16
#define NV_K8S_KUBECONFIG_DEPTH_MAX 24
#define NV_K8S_KUBECONFIG_NODES_MAX 65536
/* clusters, contexts or users of one file */
#define NV_K8S_KUBECONFIG_ENTRIES_MAX 1024
#define NV_K8S_NAME_MAX               253
#define NV_K8S_SERVER_MAX             2048
#define NV_K8S_PATH_MAX               4096
#define NV_K8S_EXEC_ARGS_MAX          64
#define NV_K8S_EXEC_ENV_MAX           64
#define NV_K8S_EXEC_V1                "client.authentication.k8s.io/v1"
#define NV_K8S_EXEC_V1BETA1           "client.authentication.k8s.io/v1beta1"
/* the service account's files, in a pod */
#define NV_K8S_IN_CLUSTER_ROOT "/var/run/secrets/kubernetes.io/serviceaccount"

typedef enum nv_k8s_auth {
	NV_K8S_AUTH_NONE = 0,    /* no user credential (anonymous) */
	NV_K8S_AUTH_TOKEN,       /* token: a bearer secret */
	NV_K8S_AUTH_TOKEN_FILE,  /* tokenFile: read anew for each session */
	NV_K8S_AUTH_CLIENT_CERT, /* client certificate and key */
	NV_K8S_AUTH_EXEC         /* a credential plugin (k8s_exec.h) */
} nv_k8s_auth;

typedef struct nv_k8s_exec_config {
	char api_version[64]; /* NV_K8S_EXEC_V1 or NV_K8S_EXEC_V1BETA1 */
	/* the program: an absolute path, or a bare name looked up in PATH
	 * (a relative path holding '/' is made absolute from the
	 * kubeconfig's folder, as kubectl does) */
	char command[NV_K8S_PATH_MAX];
	char *args[NV_K8S_EXEC_ARGS_MAX]; /* malloc'd */
	int nargs;
	char *env_names[NV_K8S_EXEC_ENV_MAX]; /* malloc'd, env_values beside */
	char *env_values[NV_K8S_EXEC_ENV_MAX];
	int nenv;
	int provide_cluster_info;
	char interactive_mode[16]; /* "Never" or "IfAvailable" */
} nv_k8s_exec_config;

/* A resolved context. Filled by the functions below; the caller frees
 * what it holds with nv_k8s_target_free (the struct itself is the
 * caller's). */
typedef struct nv_k8s_target {
	char context[NV_K8S_NAME_MAX + 1]; /* "" in-cluster */
	char cluster[NV_K8S_NAME_MAX + 1];
	char user[NV_K8S_NAME_MAX + 1];
	char server[NV_K8S_SERVER_MAX];       /* https://host[:port][/path] */
	char namespace_[NV_K8S_NAME_MAX + 1]; /* "default" when none */
	/* the cluster's CA certificates (PEM, malloc'd; not secret), or
	 * NULL: none given, the system's trust store */
	char *ca_pem;
	size_t ca_pem_len;
	/* where the user's entry was read (a kubeconfig file, or the
	 * in-cluster folder): for messages */
	char origin[NV_K8S_PATH_MAX];
	nv_k8s_auth auth;
	nv_secret *token;                 /* TOKEN: kind bearer */
	char token_file[NV_K8S_PATH_MAX]; /* TOKEN_FILE: absolute */
	char *client_cert_pem;            /* CLIENT_CERT: malloc'd */
	size_t client_cert_len;
	nv_secret *client_key;   /* CLIENT_CERT: kind pem */
	nv_k8s_exec_config exec; /* EXEC */
} nv_k8s_target;

/* One context of the merged files, as `kubectl config get-contexts` shows
 * it. */
typedef struct nv_k8s_context_info {
	char name[NV_K8S_NAME_MAX + 1];
	char cluster[NV_K8S_NAME_MAX + 1];
	char user[NV_K8S_NAME_MAX + 1];
	char namespace_[NV_K8S_NAME_MAX +
			1];             /* "" when the context sets none */
	int current;                    /* it is current-context */
	char server[NV_K8S_SERVER_MAX]; /* its cluster's; "" when unknown */
} nv_k8s_context_info;

/* Merges the files paths[0..npaths) (KUBECONFIG split on ':' by the
 * caller; empty entries and missing files are skipped, as kubectl does,
 * but at least one must exist) and resolves context (NULL or "": the
 * merged current-context) into *out (zeroed first). NV_ENOTFOUND: no file,
 * or the context, its cluster or its user is not there; NV_EREFUSED:
 * something navette will not use (the message says what, the hint what to
 * do); NV_EINVAL: a file that is not a kubeconfig. On failure *out holds
 * nothing to free. */
int nv_k8s_kubeconfig_load(const char *const *paths, size_t npaths,
			   const char *context, nv_k8s_target *out,
			   nv_err *err);

/* The same from a file's bytes (fuzzing, tests): folder stands for the
 * file's folder (relative paths), origin names it in messages. */
int nv_k8s_kubeconfig_load_text(const char *text, size_t len,
				const char *folder, const char *origin,
				const char *context, nv_k8s_target *out,
				nv_err *err);

/* The contexts of the merged files, in the order they were first named:
 * *out (malloc'd, the caller frees) gets *count entries. */
int nv_k8s_kubeconfig_contexts(const char *const *paths, size_t npaths,
			       nv_k8s_context_info **out, size_t *count,
			       nv_err *err);

/* The in-cluster configuration: token, ca.crt and namespace under root
 * (NULL: NV_K8S_IN_CLUSTER_ROOT), the server from KUBERNETES_SERVICE_HOST
 * and KUBERNETES_SERVICE_PORT. The token is read into an nv_secret now
 * (auth TOKEN_FILE, token_file set too: it is rotated, read it again for
 * a new session). NV_ENOTFOUND when not in a pod. */
int nv_k8s_in_cluster_load(const char *root, nv_k8s_target *out, nv_err *err);

/* Reads a token file (at most 64 KiB; one trailing newline or blanks
 * dropped) into a new bearer secret called name. */
int nv_k8s_token_file_read(const char *path, const char *name, nv_secret **out,
			   nv_err *err);

/* Frees and wipes what *t holds, and zeroes it. NULL is fine. */
void nv_k8s_target_free(nv_k8s_target *t);

#endif
