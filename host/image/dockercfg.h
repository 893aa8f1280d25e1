/* Registry credentials from the conventional Docker client file
 * (~/.docker/config.json, or $DOCKER_CONFIG/config.json; podman's
 * auth.json has the same form): the "auths" entry of a registry, its
 * "auth" (base64 of user:password) or "username"/"password", decoded
 * straight into an nv_secret of kind basic. Every copy of the file, of the
 * parsed JSON and of the decoded bytes is wiped. Credential helpers
 * ("credsStore", "credHelpers") are not run. Pure C. */
#ifndef NV_IMAGE_DOCKERCFG_H
#define NV_IMAGE_DOCKERCFG_H

#include "core/nv_err.h"
#include "creds/secret.h"

#define NV_DOCKERCFG_MAX ((size_t)1024 * 1024)

/* The default path: $DOCKER_CONFIG/config.json, else
 * $HOME/.docker/config.json. NV_ENOMEM when it does not fit. */
int nv_dockercfg_default_path(char *out, size_t cap, nv_err *err);

/* The credential for registry ("127.0.0.1:5001", "docker.io"; entries
 * keyed "https://host/..." match too, and docker.io matches Docker Hub's
 * historical keys) from the file at path (NULL: the default). No file, or
 * no entry: NV_ENOTFOUND (saying so when a credential helper holds it).
 * A malformed entry: NV_EINVAL. *out is named after the registry, source
 * "file"; the caller frees it. */
int nv_dockercfg_credential(const char *path, const char *registry,
			    nv_secret **out, nv_err *err);

#endif
