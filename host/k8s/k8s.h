/* Kubernetes API client: a session to one API server (kube-apiserver), over
 * nv_http. The server's URL, its trust anchors (the kubeconfig's CA, as a
 * file or as PEM text), an optional pin and client identity come from the
 * caller (host/k8s/k8s_kubeconfig.h reads them); the bearer token is an
 * opaque secret, sent only to that server's host and port, never after a
 * redirect (none is followed). Answers come back whatever their status:
 * k8s_parse.h reads the objects and the Status of an error. 429 and 503
 * answers that ask to wait (Retry-After, up to NV_K8S_RETRY_AFTER_MAX s)
 * are tried again, up to NV_K8S_RETRIES times.
 *
 * A watch (?watch=1) is a stream: nv_k8s_stream hands each chunk to a sink
 * as it arrives (k8s_parse.h's nv_k8s_watch_feed splits it into events),
 * for at most the seconds asked, plus a margin. */
#ifndef NAVETTE_K8S_H
#define NAVETTE_K8S_H

#include <stddef.h>

#include "core/nv_err.h"
#include "creds/secret.h"
#include "net/http.h"

/* An answer's body, a page of a LIST included (the caller asks with limit=
 * for pages under it). */
#define NV_K8S_REPLY_MAX ((size_t)64 * 1024 * 1024)
/* A request's path and query. */
#define NV_K8S_PATH_MAX        4096
#define NV_K8S_RETRIES         3
#define NV_K8S_RETRY_AFTER_MAX 10
/* A watch lasts at most this long (the caller resumes it). */
#define NV_K8S_WATCH_MAX_S 600

typedef struct nv_k8s_config {
	const char *server; /* https://HOST[:PORT][/PATH] */
	/* trust anchors, pin, client identity and timeouts; the PEM text
	 * and the key must outlive the session */
	nv_http_policy policy;
	const nv_secret *token; /* kind bearer, or NULL: no Authorization */
} nv_k8s_config;

typedef struct nv_k8s nv_k8s;

/* NV_EINVAL a bad server URL (http:// to a host other than loopback is
 * refused, as are user info and a query) or token kind; NV_ENOMEM. */
int nv_k8s_open(nv_k8s **out, const nv_k8s_config *cfg, nv_err *err);
void nv_k8s_close(nv_k8s *k);

/* Replaces the bearer token (an exec plugin's new one); NULL: none. The
 * secret must outlive its use. */
int nv_k8s_set_token(nv_k8s *k, const nv_secret *token, nv_err *err);

/* One request: METHOD PATH (absolute, e.g. /apis/batch/v1/namespaces/NS/
 * jobs?labelSelector=...), with an optional JSON body of that content type
 * (application/json, application/merge-patch+json...). 0 with
 * resp->status set whatever it is (the caller reads a Status body), or a
 * transport error (NV_EBACKEND, NV_EREFUSED untrusted server...). max: the
 * body cap (0: NV_K8S_REPLY_MAX). */
int nv_k8s_call(nv_k8s *k, const char *method, const char *path,
		const char *content_type, const char *body, size_t max,
		nv_http_response *resp, nv_err *err);

/* A watch: GET PATH (it holds watch=1 and timeoutSeconds=SECONDS), the
 * body handed to sink chunk by chunk while the status is 2xx. *status is
 * the answer's status; a non-2xx body is in resp->body. The request ends
 * when the server closes it, SECONDS + 15 s later at most, or when sink
 * returns -1 (NV_EIO, which the caller may have asked for). */
int nv_k8s_stream(nv_k8s *k, const char *path, long seconds,
		  nv_http_sink_fn sink, void *payload, nv_http_response *resp,
		  nv_err *err);

/* Requests sent, and connections opened, by this session. */
long nv_k8s_requests(const nv_k8s *k);
long nv_k8s_connections(const nv_k8s *k);
const char *nv_k8s_server(const nv_k8s *k);

#endif
