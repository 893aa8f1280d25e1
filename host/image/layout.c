/* OCI image layouts: read, checked, pushed (see layout.h). */
#include "image/layout.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "core/fsutil.h"
#include "core/sha256.h"

int nv_oci_layout_index_parse(const char *text, size_t len,
			      char media_type[NV_OCI_MEDIA_MAX],
			      char digest[NV_IMAGE_DIGEST_LEN + 1],
			      int64_t *size, nv_err *err)
{
	const char *hint = "write the layout again (buildah commit IMAGE "
			   "oci:DIR)";
	cJSON *root, *list, *m, *mt, *dg, *sz, *ver;
	int rc = 0;

	if (len > NV_OCI_LAYOUT_INDEX_MAX)
		return nv_err_set(err, NV_EINVAL, hint,
				  "index.json is over %zu bytes",
				  NV_OCI_LAYOUT_INDEX_MAX);
	root = cJSON_ParseWithLength(text, len);
	if (!root || !cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return nv_err_set(err, NV_EINVAL, hint,
				  "index.json is not a JSON object");
	}
	ver = cJSON_GetObjectItemCaseSensitive(root, "schemaVersion");
	list = cJSON_GetObjectItemCaseSensitive(root, "manifests");
	if (!cJSON_IsNumber(ver) || ver->valuedouble != 2) {
		rc = nv_err_set(err, NV_EINVAL, hint,
				"index.json: schemaVersion is not 2");
		goto out;
	}
	if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) != 1) {
		rc = nv_err_set(err, NV_EINVAL, hint,
				"index.json names %d images; one is pushed "
				"at a time",
				cJSON_IsArray(list) ? cJSON_GetArraySize(list)
						    : 0);
		goto out;
	}
	m = cJSON_GetArrayItem(list, 0);
	mt = cJSON_GetObjectItemCaseSensitive(m, "mediaType");
	dg = cJSON_GetObjectItemCaseSensitive(m, "digest");
	sz = cJSON_GetObjectItemCaseSensitive(m, "size");
	if (!cJSON_IsString(mt) ||
	    (strcmp(mt->valuestring, NV_OCI_MT_MANIFEST) != 0 &&
	     strcmp(mt->valuestring, NV_DOCKER_MT_MANIFEST) != 0)) {
		rc = nv_err_set(err, NV_EINVAL, hint,
				"index.json: the entry is not an image "
				"manifest (%.80s)",
				cJSON_IsString(mt) ? mt->valuestring
						   : "no mediaType");
		goto out;
	}
	if (!cJSON_IsString(dg) || !nv_image_digest_valid(dg->valuestring)) {
		rc = nv_err_set(err, NV_EINVAL, hint,
				"index.json: the entry has no sha256 digest");
		goto out;
	}
	if (!cJSON_IsNumber(sz) || sz->valuedouble < 2 ||
	    sz->valuedouble > (double)NV_OCI_MANIFEST_MAX ||
	    sz->valuedouble != (double)(int64_t)sz->valuedouble) {
		rc = nv_err_set(err, NV_EINVAL, hint,
				"index.json: the entry's size is not a whole "
				"number of bytes between 2 and %zu",
				NV_OCI_MANIFEST_MAX);
		goto out;
	}
	snprintf(media_type, NV_OCI_MEDIA_MAX, "%s", mt->valuestring);
	memcpy(digest, dg->valuestring, NV_IMAGE_DIGEST_LEN + 1);
	*size = (int64_t)sz->valuedouble;
out:
	cJSON_Delete(root);
	return rc;
}

/* dir/blobs/sha256/HEX of a checked digest. */
static int blob_path(char *out, size_t cap, const char *dir, const char *digest,
		     nv_err *err)
{
	if (!nv_image_digest_valid(digest))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "not a sha256 digest: %.80s", digest);
	if (nv_pathf(out, cap, "%s/blobs/sha256/%s", dir, digest + 7))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "the layout's path is too long");
	return 0;
}

/* The blob is a regular file of the size the manifest says. */
static int blob_check(const char *dir, const nv_oci_descriptor *d, nv_err *err)
{
	char path[4200];
	struct stat st;
	int rc = blob_path(path, sizeof(path), dir, d->digest, err);

	if (rc)
		return rc;
	if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return nv_err_set(err, NV_EINVAL, "write the layout again",
				  "the layout lacks the blob %s", d->digest);
	if ((int64_t)st.st_size != d->size)
		return nv_err_set(err, NV_EINVAL, "write the layout again",
				  "the blob %s is %lld bytes; the manifest "
				  "says %lld",
				  d->digest, (long long)st.st_size,
				  (long long)d->size);
	return 0;
}

void nv_oci_layout_free(nv_oci_layout *l)
{
	nv_buf_free(&l->manifest);
	nv_oci_manifest_free(&l->parsed);
}

int nv_oci_layout_read(const char *dir, nv_oci_layout *out, nv_err *err)
{
	char path[4200], hex[NV_SHA256_HEX_LEN + 1];
	char *text = NULL;
	size_t len = 0, i;
	int64_t size = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	nv_buf_init(&out->manifest, NV_OCI_MANIFEST_MAX);
	if (nv_pathf(path, sizeof(path), "%s/index.json", dir))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "the layout's path is too long");
	rc = nv_read_file(&text, &len, path, NV_OCI_LAYOUT_INDEX_MAX, err);
	if (!rc)
		rc = nv_oci_layout_index_parse(text, len, out->media_type,
					       out->digest, &size, err);
	free(text);
	text = NULL;
	if (!rc)
		rc = blob_path(path, sizeof(path), dir, out->digest, err);
	if (!rc)
		rc = nv_read_file(&text, &len, path, NV_OCI_MANIFEST_MAX, err);
	if (rc)
		goto fail;
	if ((int64_t)len != size) {
		rc = nv_err_set(err, NV_EINVAL, "write the layout again",
				"the manifest is %zu bytes; index.json says "
				"%lld",
				len, (long long)size);
		goto fail;
	}
	rc = nv_sha256_bytes(text, len, hex, err);
	if (!rc && strcmp(hex, out->digest + 7) != 0)
		rc = nv_err_set(err, NV_EINVAL, "write the layout again",
				"the manifest's bytes are not %s", out->digest);
	if (!rc && nv_buf_append(&out->manifest, text, len))
		rc = nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	if (!rc)
		rc = nv_oci_manifest_parse(&out->parsed, text, len,
					   out->media_type, err);
	if (rc)
		goto fail;
	if (out->parsed.kind == NV_OCI_IMAGE &&
	    strcmp(out->parsed.media_type, out->media_type) != 0) {
		rc = nv_err_set(err, NV_EINVAL, "write the layout again",
				"the manifest is %.80s; index.json says %.80s",
				out->parsed.media_type, out->media_type);
		goto fail;
	}
	if (out->parsed.kind != NV_OCI_IMAGE) {
		rc = nv_err_set(err, NV_EINVAL, NULL,
				"the layout's manifest is a list, not an "
				"image");
		goto fail;
	}
	rc = blob_check(dir, &out->parsed.config, err);
	for (i = 0; !rc && i < out->parsed.nentries; i++)
		rc = blob_check(dir, &out->parsed.entries[i], err);
	if (rc)
		goto fail;
	free(text);
	return 0;
fail:
	free(text);
	nv_oci_layout_free(out);
	return rc;
}

/* Present in the repository (HEAD), else uploaded from its file. */
static int push_blob(nv_registry *r, const char *repository, const char *dir,
		     const nv_oci_descriptor *d, nv_err *err)
{
	char path[4200];
	int64_t have = -1;
	int rc = nv_registry_blob_head(r, repository, d->digest, &have, err);

	if (rc == 0 && have == d->size)
		return 0;
	if (rc && rc != NV_ENOTFOUND)
		return rc;
	rc = blob_path(path, sizeof(path), dir, d->digest, err);
	if (!rc)
		rc = nv_registry_blob_upload_file(r, repository, d->digest,
						  path, err);
	return rc;
}

int nv_oci_layout_push(nv_registry *r, const char *repository, const char *dir,
		       const nv_oci_layout *l, const char *const *tags,
		       size_t ntags, nv_err *err)
{
	char got[NV_IMAGE_DIGEST_LEN + 1];
	size_t i;
	int rc;

	if (ntags == 0)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "layout push: no tag to push to");
	rc = push_blob(r, repository, dir, &l->parsed.config, err);
	for (i = 0; !rc && i < l->parsed.nentries; i++)
		rc = push_blob(r, repository, dir, &l->parsed.entries[i], err);
	for (i = 0; !rc && i < ntags; i++) {
		rc = nv_registry_manifest_put(r, repository, tags[i],
					      l->media_type, l->manifest.data,
					      l->manifest.len, got, err);
		if (!rc && strcmp(got, l->digest) != 0)
			rc = nv_err_set(err, NV_EBACKEND, NULL,
					"the registry stored %s as %s, not %s",
					tags[i], got, l->digest);
	}
	return rc;
}
