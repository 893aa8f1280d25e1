/* Manifest, index and config reading and code-layer writing (see
 * manifest.h). Reading copies what it needs into fixed-size structs and
 * refuses what does not fit; writing edits the base's parsed JSON in place
 * and prints it unformatted, which keeps the member order of the base. */
#include "image/manifest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

static const char HINT_BAD[] =
	"the registry sent a manifest navette cannot read; check the "
	"reference and the registry";

static const char *jstr(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* *doc from a document the registry sent (what names it), which must be a
 * JSON object of 1 to max bytes: 0, or NV_EBACKEND and *doc NULL. */
static int parse_object(cJSON **doc, const char *body, size_t len, size_t max,
			const char *what, nv_err *err)
{
	*doc = NULL;
	if (!body || len == 0 || len > max)
		return nv_err_set(err, NV_EBACKEND, HINT_BAD,
				  "%s of %zu bytes (the limit is %zu)", what,
				  len, max);
	*doc = cJSON_ParseWithLength(body, len);
	if (cJSON_IsObject(*doc))
		return 0;
	cJSON_Delete(*doc);
	*doc = NULL;
	return nv_err_set(err, NV_EBACKEND, HINT_BAD,
			  "the %s is not a JSON object", what);
}

static int copy_field(char *dst, size_t cap, const char *src)
{
	size_t n = src ? strlen(src) : 0;

	if (n >= cap)
		return -1;
	memcpy(dst, src ? src : "", n + 1);
	return 0;
}

static int parse_descriptor(const cJSON *o, nv_oci_descriptor *d, int list,
			    nv_err *err)
{
	const cJSON *size = cJSON_GetObjectItemCaseSensitive(o, "size");
	const char *digest = jstr(o, "digest");

	memset(d, 0, sizeof(*d));
	if (!cJSON_IsObject(o))
		return nv_err_set(err, NV_EBACKEND, HINT_BAD,
				  "a descriptor of the manifest is not an "
				  "object");
	if (!digest || !nv_image_digest_valid(digest))
		return nv_err_set(err, NV_EBACKEND, HINT_BAD,
				  "a descriptor of the manifest has no "
				  "sha256 digest ('%.80s')",
				  digest ? digest : "");
	memcpy(d->digest, digest, NV_IMAGE_DIGEST_LEN + 1);
	if (!cJSON_IsNumber(size) || size->valuedouble < 0 ||
	    size->valuedouble > 9007199254740992.0 ||
	    size->valuedouble != (double)(int64_t)size->valuedouble)
		return nv_err_set(err, NV_EBACKEND, HINT_BAD,
				  "descriptor %s has no valid size", d->digest);
	d->size = (int64_t)size->valuedouble;
	if (copy_field(d->media_type, sizeof(d->media_type),
		       jstr(o, "mediaType")))
		return nv_err_set(err, NV_EBACKEND, HINT_BAD,
				  "descriptor %s has a media type too long",
				  d->digest);
	if (list) {
		const cJSON *p =
			cJSON_GetObjectItemCaseSensitive(o, "platform");

		if (cJSON_IsObject(p) &&
		    (copy_field(d->os, sizeof(d->os), jstr(p, "os")) ||
		     copy_field(d->architecture, sizeof(d->architecture),
				jstr(p, "architecture")) ||
		     copy_field(d->variant, sizeof(d->variant),
				jstr(p, "variant"))))
			return nv_err_set(err, NV_EBACKEND, HINT_BAD,
					  "index entry %s has a platform field "
					  "too long",
					  d->digest);
	}
	return 0;
}

int nv_oci_manifest_parse(nv_oci_manifest *out, const char *body, size_t len,
			  const char *content_type, nv_err *err)
{
	const cJSON *arr, *item;
	const char *mt;
	cJSON *doc;
	size_t i, n;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	rc = parse_object(&doc, body, len, NV_OCI_MANIFEST_MAX, "manifest",
			  err);
	if (rc)
		return rc;
	mt = jstr(doc, "mediaType");
	if (!mt && content_type && content_type[0]) {
		/* Content-Type may carry parameters */
		size_t k = strcspn(content_type, "; ");

		if (k < NV_OCI_MEDIA_MAX) {
			memcpy(out->media_type, content_type, k);
			out->media_type[k] = '\0';
		}
	} else if (mt &&
		   copy_field(out->media_type, sizeof(out->media_type), mt)) {
		rc = nv_err_set(err, NV_EBACKEND, HINT_BAD,
				"manifest media type too long");
		goto out;
	}
	if (!out->media_type[0] ||
	    strcmp(out->media_type, "application/json") == 0) {
		/* OCI allows no mediaType: tell by the members */
		if (cJSON_GetObjectItemCaseSensitive(doc, "manifests"))
			snprintf(out->media_type, sizeof(out->media_type), "%s",
				 NV_OCI_MT_INDEX);
		else
			snprintf(out->media_type, sizeof(out->media_type), "%s",
				 NV_OCI_MT_MANIFEST);
	}
	mt = out->media_type;
	if (strcmp(mt, NV_OCI_MT_MANIFEST) == 0 ||
	    strcmp(mt, NV_DOCKER_MT_MANIFEST) == 0) {
		out->kind = NV_OCI_IMAGE;
		out->docker = strcmp(mt, NV_DOCKER_MT_MANIFEST) == 0;
		rc = parse_descriptor(
			cJSON_GetObjectItemCaseSensitive(doc, "config"),
			&out->config, 0, err);
		if (rc)
			goto out;
		arr = cJSON_GetObjectItemCaseSensitive(doc, "layers");
	} else if (strcmp(mt, NV_OCI_MT_INDEX) == 0 ||
		   strcmp(mt, NV_DOCKER_MT_LIST) == 0) {
		out->kind = NV_OCI_LIST;
		out->docker = strcmp(mt, NV_DOCKER_MT_LIST) == 0;
		arr = cJSON_GetObjectItemCaseSensitive(doc, "manifests");
	} else {
		rc = nv_err_set(err, NV_EREFUSED,
				"navette reads OCI images and indexes and "
				"Docker schema2 manifests and lists; push the "
				"image again with a current tool",
				"unsupported manifest type '%s'", mt);
		goto out;
	}
	if (!cJSON_IsArray(arr)) {
		rc = nv_err_set(err, NV_EBACKEND, HINT_BAD,
				"the manifest has no %s list",
				out->kind == NV_OCI_IMAGE ? "layers"
							  : "manifests");
		goto out;
	}
	n = (size_t)cJSON_GetArraySize(arr);
	if (n > NV_OCI_ENTRIES_MAX) {
		rc = nv_err_set(err, NV_EBACKEND, HINT_BAD,
				"the manifest lists %zu entries (the limit is "
				"%d)",
				n, NV_OCI_ENTRIES_MAX);
		goto out;
	}
	out->entries = calloc(n ? n : 1, sizeof(*out->entries));
	if (!out->entries) {
		rc = nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
		goto out;
	}
	i = 0;
	cJSON_ArrayForEach(item, arr)
	{
		if (i >= n)
			break;
		rc = parse_descriptor(item, &out->entries[i],
				      out->kind == NV_OCI_LIST, err);
		if (rc)
			goto out;
		i++;
	}
	out->nentries = i;
out:
	cJSON_Delete(doc);
	if (rc)
		nv_oci_manifest_free(out);
	return rc;
}

void nv_oci_manifest_free(nv_oci_manifest *m)
{
	if (!m)
		return;
	free(m->entries);
	m->entries = NULL;
	m->nentries = 0;
}

int nv_oci_platform_parse(const char *platform, char os[32], char arch[32],
			  char variant[32], nv_err *err)
{
	const char *p = platform ? platform : "";
	char *fields[3] = {os, arch, variant};
	int i;

	os[0] = arch[0] = variant[0] = '\0';
	for (i = 0; i < 3 && *p; i++) {
		size_t n = strcspn(p, "/");

		if (n == 0 || n >= 32)
			break;
		for (size_t k = 0; k < n; k++)
			if (!((p[k] >= 'a' && p[k] <= 'z') ||
			      (p[k] >= '0' && p[k] <= '9') || p[k] == '_' ||
			      p[k] == '.' || p[k] == '-'))
				goto bad;
		memcpy(fields[i], p, n);
		fields[i][n] = '\0';
		p += n;
		if (*p == '/') {
			p++;
			if (!*p)
				goto bad;
		}
	}
	if (*p || !os[0] || !arch[0])
		goto bad;
	return 0;
bad:
	return nv_err_bad(err,
			  "write the platform as OS/ARCH[/VARIANT], e.g. "
			  "linux/amd64 or linux/arm64/v8",
			  "platform", platform, 100);
}

int nv_oci_index_select(const nv_oci_manifest *index, const char *platform,
			size_t *pos, nv_err *err)
{
	char os[32], arch[32], variant[32], have[512];
	size_t i, used = 0;
	int rc;

	rc = nv_oci_platform_parse(platform, os, arch, variant, err);
	if (rc)
		return rc;
	have[0] = '\0';
	for (i = 0; i < index->nentries; i++) {
		const nv_oci_descriptor *d = &index->entries[i];
		int w;

		if (strcmp(d->os, os) == 0 &&
		    strcmp(d->architecture, arch) == 0 &&
		    (!variant[0] || !d->variant[0] ||
		     strcmp(d->variant, variant) == 0)) {
			*pos = i;
			return 0;
		}
		if (d->os[0] && used < sizeof(have)) {
			w = snprintf(have + used, sizeof(have) - used,
				     "%s%s/%s%s%s", used ? ", " : "", d->os,
				     d->architecture, d->variant[0] ? "/" : "",
				     d->variant);
			if (w > 0)
				used += (size_t)w;
		}
	}
	return nv_err_set(err, NV_ENOTFOUND,
			  "choose one of the platforms the image has "
			  "(--platform OS/ARCH)",
			  "the image has no %s entry (it has: %s)", platform,
			  have[0] ? have : "none");
}

int nv_oci_config_info_parse(const char *body, size_t len,
			     nv_oci_config_info *info, nv_err *err)
{
	const cJSON *rootfs, *ids;
	cJSON *doc;
	int rc;

	memset(info, 0, sizeof(*info));
	rc = parse_object(&doc, body, len, NV_OCI_CONFIG_MAX, "image config",
			  err);
	if (rc)
		return rc;
	if (copy_field(info->os, sizeof(info->os), jstr(doc, "os")) ||
	    copy_field(info->architecture, sizeof(info->architecture),
		       jstr(doc, "architecture")) ||
	    copy_field(info->variant, sizeof(info->variant),
		       jstr(doc, "variant"))) {
		cJSON_Delete(doc);
		return nv_err_set(err, NV_EBACKEND, HINT_BAD,
				  "the image config has a platform field too "
				  "long");
	}
	rootfs = cJSON_GetObjectItemCaseSensitive(doc, "rootfs");
	ids = rootfs ? cJSON_GetObjectItemCaseSensitive(rootfs, "diff_ids")
		     : NULL;
	if (cJSON_IsArray(ids))
		info->ndiff_ids = (size_t)cJSON_GetArraySize(ids);
	cJSON_Delete(doc);
	return 0;
}

void nv_oci_time(int64_t t, char out[32])
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!gmtime_r(&tt, &tm)) {
		snprintf(out, 32, "1970-01-01T00:00:00Z");
		return;
	}
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Sets o[key] = string value, replacing what is there. */
static int set_string(cJSON *o, const char *key, const char *value)
{
	cJSON *v = cJSON_CreateString(value);

	if (!v)
		return -1;
	if (cJSON_GetObjectItemCaseSensitive(o, key))
		return cJSON_ReplaceItemInObjectCaseSensitive(o, key, v) ? 0
									 : -1;
	return cJSON_AddItemToObject(o, key, v) ? 0 : -1;
}

/* o[key] as an object, created (or replacing a null/non-object). */
static cJSON *object_member(cJSON *o, const char *key)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (cJSON_IsObject(v))
		return v;
	v = cJSON_CreateObject();
	if (!v)
		return NULL;
	if (cJSON_GetObjectItemCaseSensitive(o, key)) {
		if (!cJSON_ReplaceItemInObjectCaseSensitive(o, key, v))
			return NULL;
	} else if (!cJSON_AddItemToObject(o, key, v)) {
		return NULL;
	}
	return v;
}

static int print_out(cJSON *doc, char **out, size_t *out_len, nv_err *err)
{
	*out = cJSON_PrintUnformatted(doc);
	if (!*out)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	*out_len = strlen(*out);
	return 0;
}

int nv_oci_code_config(const char *base_config, size_t len, size_t base_layers,
		       const nv_code_layer_meta *meta, char **out,
		       size_t *out_len, nv_err *err)
{
	cJSON *doc, *rootfs, *ids, *history, *entry, *config, *labels;
	char created[32];
	int rc = 0;

	*out = NULL;
	*out_len = 0;
	rc = parse_object(&doc, base_config, len, NV_OCI_CONFIG_MAX,
			  "base image config", err);
	if (rc)
		return rc;
	rootfs = cJSON_GetObjectItemCaseSensitive(doc, "rootfs");
	ids = cJSON_IsObject(rootfs)
		      ? cJSON_GetObjectItemCaseSensitive(rootfs, "diff_ids")
		      : NULL;
	if (!cJSON_IsArray(ids) ||
	    (size_t)cJSON_GetArraySize(ids) != base_layers) {
		rc = nv_err_set(err, NV_EREFUSED,
				"the base image is inconsistent; rebuild or "
				"choose another base",
				"the base config lists %d diff_ids for %zu "
				"layers",
				cJSON_IsArray(ids) ? cJSON_GetArraySize(ids)
						   : -1,
				base_layers);
		goto out;
	}
	nv_oci_time(meta->created, created);
	if (!cJSON_AddItemToArray(ids, cJSON_CreateString(meta->diff_id)))
		goto nomem;
	history = cJSON_GetObjectItemCaseSensitive(doc, "history");
	if (!cJSON_IsArray(history)) {
		history = cJSON_CreateArray();
		if (!history)
			goto nomem;
		if (cJSON_GetObjectItemCaseSensitive(doc, "history"))
			cJSON_ReplaceItemInObjectCaseSensitive(doc, "history",
							       history);
		else
			cJSON_AddItemToObject(doc, "history", history);
	}
	entry = cJSON_CreateObject();
	if (!entry || !cJSON_AddItemToArray(history, entry) ||
	    set_string(entry, "created", created) ||
	    set_string(entry, "created_by",
		       meta->created_by ? meta->created_by : "navette") ||
	    set_string(entry, "comment", "navette code layer"))
		goto nomem;
	if (set_string(doc, "created", created))
		goto nomem;
	config = object_member(doc, "config");
	labels = config ? object_member(config, "Labels") : NULL;
	if (!labels)
		goto nomem;
	if (set_string(labels, "org.opencontainers.image.revision",
		       meta->revision) ||
	    set_string(labels, "org.opencontainers.image.created", created))
		goto nomem;
	if (meta->source && meta->source[0] &&
	    set_string(labels, "org.opencontainers.image.source", meta->source))
		goto nomem;
	if (meta->lockfile_hash && meta->lockfile_hash[0] &&
	    set_string(labels, NV_CODE_LAYER_LOCK_LABEL, meta->lockfile_hash))
		goto nomem;
	if (meta->into && meta->into[0] &&
	    set_string(config, "WorkingDir", meta->into))
		goto nomem;
	rc = print_out(doc, out, out_len, err);
	goto out;
nomem:
	rc = nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
out:
	cJSON_Delete(doc);
	return rc;
}

int nv_oci_code_manifest(const char *base_manifest, size_t len,
			 const char *config_digest, int64_t config_size,
			 const char *layer_digest, int64_t layer_size,
			 const char *base_name, const char *base_digest,
			 char **out, size_t *out_len,
			 char media_type[NV_OCI_MEDIA_MAX], nv_err *err)
{
	nv_oci_manifest parsed;
	cJSON *doc, *config, *layers, *layer;
	int rc;

	*out = NULL;
	*out_len = 0;
	rc = nv_oci_manifest_parse(&parsed, base_manifest, len, NULL, err);
	if (rc)
		return rc;
	nv_oci_manifest_free(&parsed);
	if (parsed.kind != NV_OCI_IMAGE)
		return nv_err_set(err, NV_EINVAL,
				  "resolve the base to one platform first",
				  "the base manifest is an index");
	snprintf(media_type, NV_OCI_MEDIA_MAX, "%s", parsed.media_type);
	doc = cJSON_ParseWithLength(base_manifest, len);
	if (!doc)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	config = cJSON_GetObjectItemCaseSensitive(doc, "config");
	layers = cJSON_GetObjectItemCaseSensitive(doc, "layers");
	cJSON_DeleteItemFromObjectCaseSensitive(config, "data");
	if (set_string(config, "digest", config_digest) ||
	    !cJSON_ReplaceItemInObjectCaseSensitive(
		    config, "size", cJSON_CreateNumber((double)config_size)))
		goto nomem;
	layer = cJSON_CreateObject();
	if (!layer || !cJSON_AddItemToArray(layers, layer) ||
	    set_string(layer, "mediaType",
		       parsed.docker ? NV_DOCKER_MT_LAYER_GZ
				     : NV_OCI_MT_LAYER_GZ) ||
	    set_string(layer, "digest", layer_digest) ||
	    !cJSON_AddNumberToObject(layer, "size", (double)layer_size))
		goto nomem;
	if (!parsed.docker) {
		cJSON *ann;

		cJSON_DeleteItemFromObjectCaseSensitive(doc, "subject");
		ann = object_member(doc, "annotations");
		if (!ann ||
		    (base_name &&
		     set_string(ann, "org.opencontainers.image.base.name",
				base_name)) ||
		    (base_digest &&
		     set_string(ann, "org.opencontainers.image.base.digest",
				base_digest)))
			goto nomem;
	}
	rc = print_out(doc, out, out_len, err);
	cJSON_Delete(doc);
	return rc;
nomem:
	cJSON_Delete(doc);
	return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
}
