/* Docker client config credentials (see dockercfg.h). */
#include "image/dockercfg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "core/fsutil.h"
#include "image/protocol.h"

static const char HINT_LOGIN[] =
	"log in (docker login / podman login HOST) or declare the registry "
	"credential in navette.lua";

int nv_dockercfg_default_path(char *out, size_t cap, nv_err *err)
{
	const char *dir = getenv("DOCKER_CONFIG");
	const char *home = getenv("HOME");
	int n;

	if (dir && dir[0])
		n = snprintf(out, cap, "%s/config.json", dir);
	else
		n = snprintf(out, cap, "%s/.docker/config.json",
			     home && home[0] ? home : ".");
	if (n < 0 || (size_t)n >= cap)
		return nv_err_set(err, NV_ENOMEM, NULL,
				  "Docker config path too long");
	return 0;
}

/* Does an "auths" key name this registry? Keys may be bare hosts or URLs
 * ("https://host/v1/"). */
static int key_matches(const char *key, const char *registry)
{
	const char *p = key;
	size_t n;

	if (strncmp(p, "https://", 8) == 0)
		p += 8;
	else if (strncmp(p, "http://", 7) == 0)
		p += 7;
	n = strcspn(p, "/");
	if (strlen(registry) == n && strncasecmp(p, registry, n) == 0)
		return 1;
	if (strcmp(registry, "docker.io") == 0)
		return (n == 15 &&
			strncasecmp(p, "index.docker.io", 15) == 0) ||
		       (n == 20 &&
			strncasecmp(p, "registry-1.docker.io", 20) == 0);
	return 0;
}

/* base64 "user:password" into the secret. */
static int decode_auth(nv_secret *s, const char *b64, const char *where,
		       nv_err *err)
{
	size_t len = strlen(b64), pad = 0, out_len;
	unsigned char *buf;
	unsigned char *colon;
	int n, rc;

	if (len == 0 || len % 4 != 0 || len > 16384)
		return nv_err_set(err, NV_EINVAL, HINT_LOGIN,
				  "%s: the \"auth\" entry is not base64",
				  where);
	buf = malloc(len / 4 * 3 + 1);
	if (!buf)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	n = EVP_DecodeBlock(buf, (const unsigned char *)b64, (int)len);
	if (n < 0) {
		free(buf);
		return nv_err_set(err, NV_EINVAL, HINT_LOGIN,
				  "%s: the \"auth\" entry is not base64",
				  where);
	}
	while (pad < 2 && len > pad && b64[len - 1 - pad] == '=')
		pad++;
	out_len = (size_t)n - pad;
	colon = memchr(buf, ':', out_len);
	if (!colon || colon == buf) {
		OPENSSL_cleanse(buf, out_len);
		free(buf);
		return nv_err_set(err, NV_EINVAL, HINT_LOGIN,
				  "%s: the \"auth\" entry is not user:password",
				  where);
	}
	rc = nv_secret_set(s, "user", buf, (size_t)(colon - buf), err);
	if (!rc)
		rc = nv_secret_set(s, "password", colon + 1,
				   out_len - (size_t)(colon - buf) - 1, err);
	OPENSSL_cleanse(buf, out_len);
	free(buf);
	return rc;
}

int nv_dockercfg_credential(const char *path, const char *registry,
			    nv_secret **out, nv_err *err)
{
	char def[4096], where[4200];
	const cJSON *auths, *entry = NULL, *e, *helpers, *store;
	nv_secret *s = NULL;
	cJSON *doc = NULL;
	char *text = NULL;
	size_t len = 0;
	int rc;

	*out = NULL;
	if (!path) {
		rc = nv_dockercfg_default_path(def, sizeof(def), err);
		if (rc)
			return rc;
		path = def;
	}
	snprintf(where, sizeof(where), "%s", path);
	rc = nv_read_file(&text, &len, path, NV_DOCKERCFG_MAX, err);
	if (rc == NV_ENOTFOUND)
		return nv_err_set(err, NV_ENOTFOUND, HINT_LOGIN,
				  "no credential for %s: %s does not exist",
				  registry, where);
	if (rc)
		return rc;
	doc = cJSON_ParseWithLength(text, len);
	OPENSSL_cleanse(text, len);
	free(text);
	if (!cJSON_IsObject(doc)) {
		cJSON_Delete(doc);
		return nv_err_set(err, NV_EINVAL, "fix or remove the file",
				  "%s is not a JSON object", where);
	}
	auths = cJSON_GetObjectItemCaseSensitive(doc, "auths");
	cJSON_ArrayForEach(e, auths)
	{
		if (e->string && key_matches(e->string, registry)) {
			entry = e;
			break;
		}
	}
	if (!cJSON_IsObject(entry)) {
		helpers = cJSON_GetObjectItemCaseSensitive(doc, "credHelpers");
		store = cJSON_GetObjectItemCaseSensitive(doc, "credsStore");
		rc = nv_err_set(
			err, NV_ENOTFOUND,
			cJSON_IsString(store) || cJSON_IsObject(helpers)
				? "credential helpers (credsStore, "
				  "credHelpers) are not run by navette: "
				  "declare the credential in navette.lua"
				: HINT_LOGIN,
			"no credential for %s in %s", registry, where);
		goto out;
	}
	s = nv_secret_new(registry, NV_SECRET_BASIC, "file", err);
	if (!s) {
		rc = err ? err->code : NV_ENOMEM;
		goto out;
	}
	snprintf(s->origin, sizeof(s->origin), "%.180s (auths.%.60s)", where,
		 registry);
	{
		const char *auth = NULL, *user = NULL, *pass = NULL;
		const cJSON *v;

		v = cJSON_GetObjectItemCaseSensitive(entry, "auth");
		if (cJSON_IsString(v) && v->valuestring[0])
			auth = v->valuestring;
		v = cJSON_GetObjectItemCaseSensitive(entry, "username");
		if (cJSON_IsString(v))
			user = v->valuestring;
		v = cJSON_GetObjectItemCaseSensitive(entry, "password");
		if (cJSON_IsString(v))
			pass = v->valuestring;
		if (auth) {
			rc = decode_auth(s, auth, where, err);
		} else if (user && pass && user[0]) {
			rc = nv_secret_set(s, "user", user, strlen(user), err);
			if (!rc)
				rc = nv_secret_set(s, "password", pass,
						   strlen(pass), err);
		} else {
			rc = nv_err_set(err, NV_EINVAL, HINT_LOGIN,
					"%s: the entry for %s has no \"auth\" "
					"(identity tokens are not supported)",
					where, registry);
		}
	}
	if (!rc)
		rc = nv_secret_complete(s, err);
out:
	return nv_reg_secret_finish(rc, s, doc, out);
}
