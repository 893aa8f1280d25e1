/* Image references ("busybox", "127.0.0.1:5000/team/app:v1",
 * "ghcr.io/o/r@sha256:..."), parsed as the Docker/OCI distribution grammar
 * defines them, in pure C.
 *
 *   reference  := name [ ":" tag ] [ "@" digest ]
 *   name       := [ domain "/" ] path          (at most 255 characters)
 *   domain     := host [ ":" port ]            host: DNS labels, IPv4, [IPv6]
 *   path       := component ( "/" component )*
 *   component  := [a-z0-9]+ ( ( "." | "_" | "__" | "-"+ ) [a-z0-9]+ )*
 *   tag        := [A-Za-z0-9_] [A-Za-z0-9_.-]{0,127}
 *   digest     := "sha256:" 64 lowercase hex   (the only algorithm used here)
 *
 * The first component is the registry when it holds a '.' or a ':', is
 * "localhost", or has an uppercase letter; otherwise the registry is
 * docker.io, where a one-component path gets "library/" in front (so
 * "busybox" is docker.io/library/busybox). "index.docker.io" is docker.io.
 * Without tag or digest the tag is "latest" (ref.implicit_tag says so).
 * A malformed reference is NV_EINVAL with a message naming the bad part. */
#ifndef NV_IMAGE_REFERENCE_H
#define NV_IMAGE_REFERENCE_H

#include <stddef.h>

#include "core/nv_err.h"

#define NV_IMAGE_NAME_MAX   255 /* registry + "/" + repository */
#define NV_IMAGE_TAG_MAX    128
#define NV_IMAGE_DIGEST_LEN 71 /* "sha256:" + 64 hex */
#define NV_IMAGE_REF_MAX                                                       \
	(NV_IMAGE_NAME_MAX + 1 + NV_IMAGE_TAG_MAX + 1 + NV_IMAGE_DIGEST_LEN)
#define NV_IMAGE_DEFAULT_REGISTRY "docker.io"
/* Where docker.io's registry API answers. */
#define NV_IMAGE_DOCKER_HUB_API "registry-1.docker.io"

typedef struct nv_image_ref {
	char registry[NV_IMAGE_NAME_MAX + 1];   /* "docker.io", "host:5000" */
	char repository[NV_IMAGE_NAME_MAX + 1]; /* "library/busybox" */
	char tag[NV_IMAGE_TAG_MAX + 1];         /* "" when only a digest */
	char digest[NV_IMAGE_DIGEST_LEN + 1];   /* "sha256:..." or "" */
	int implicit_tag;                       /* "latest" was filled in */
} nv_image_ref;

/* Parses s into *out. */
int nv_image_ref_parse(nv_image_ref *out, const char *s, nv_err *err);

/* Writes the full form "registry/repository[:tag][@digest]" (the implicit
 * tag included) into buf. Returns 0, or NV_ENOMEM when cap is too small.
 * with_tag 0 leaves the tag out when there is a digest ("repo@sha256:..."),
 * the form a job pins. */
int nv_image_ref_format(const nv_image_ref *ref, int with_tag, char *buf,
			size_t cap);

/* "registry/repository", the name without tag or digest. */
int nv_image_ref_name(const nv_image_ref *ref, char *buf, size_t cap);

/* The registry's API base URL: "https://HOST[:PORT]" (docker.io's is
 * NV_IMAGE_DOCKER_HUB_API), or "http://..." for a loopback host, which is
 * where tests run their registries (the HTTP client accepts plain http
 * only there). */
int nv_image_ref_api_base(const nv_image_ref *ref, char *buf, size_t cap);

/* The host[:port] a credential for this registry is bound to (the API
 * host: registry-1.docker.io for docker.io). */
int nv_image_ref_api_host(const nv_image_ref *ref, char *buf, size_t cap);

/* 1 when s is "sha256:" followed by 64 lowercase hex digits. */
int nv_image_digest_valid(const char *s);

#endif
