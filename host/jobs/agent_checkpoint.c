/* The local agent's checkpoints (see agent_internal.h): a job's
 * $NAVETTE_CHECKPOINT folder, saved into its output store under
 * PREFIX/navette-checkpoint/ while it runs and when it ends, and restored
 * from there before each attempt starts. Each file is stored once under
 * its sha256 (objects/SHA256); manifest.json, put last and atomically,
 * names the files of the latest checkpoint, so a reader never sees half
 * of one. The folder belongs to the job's id, that is its lineage: every
 * attempt of the job reads and writes the same one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/fsutil.h"
#include "jobs/agent_internal.h"
#include "core/sha256.h"

#define CKPT_DIR          "checkpoint" /* in the job folder */
#define CKPT_MANIFEST     NV_RECORD_CHECKPOINT "/manifest.json"
#define CKPT_OBJECTS      NV_RECORD_CHECKPOINT "/objects/"
#define CKPT_STAGING      NV_RECORD_CHECKPOINT "/staging"
#define CKPT_MANIFEST_MAX ((size_t)4 * 1024 * 1024)
#define CKPT_FILES_MAX    10000
#define CKPT_WRITTEN_KEPT 100 /* the record keeps the last ones */

typedef char ckpt_key[NV_FILESTORE_KEY_MAX + 64];

void agent_checkpoint_init(job *j)
{
	const cJSON *c = j->spec ? ofield(j->spec, "checkpoint") : NULL;
	const cJSON *every = c ? ofield(c, "every") : NULL;

	j->ckpt_every = cJSON_IsNumber(every) && every->valuedouble >= 1
				? every->valuedouble
				: 0;
}

static const char *job_prefix(const job *j)
{
	const cJSON *outputs = ofield(j->spec, "outputs");
	const char *prefix = outputs ? sfield(outputs, "prefix") : NULL;

	return prefix ? prefix : "";
}

/* A path of a manifest: relative, no empty, '.' or '..' segment. */
static int path_ok(const char *p)
{
	size_t n = strlen(p);

	if (n == 0 || n > 900 || p[0] == '/' || strstr(p, "//"))
		return 0;
	for (const char *s = p; *s; s++)
		if ((unsigned char)*s < 32 || *s == '\\')
			return 0;
	for (const char *seg = p; seg; seg = strchr(seg, '/')) {
		if (*seg == '/')
			seg++;
		if (strncmp(seg, "./", 2) == 0 || strncmp(seg, "../", 3) == 0 ||
		    strcmp(seg, ".") == 0 || strcmp(seg, "..") == 0 || !*seg)
			return 0;
	}
	return 1;
}

static void ckpt_folder(const job *j, char *out, size_t cap)
{
	agent_job_path(j, CKPT_DIR, out, cap);
}

/* One file of a manifest into the folder, checked against its sha256. */
static int restore_file(nv_filestore *store, const job *j, const cJSON *f,
			const char *folder, nv_err *err)
{
	const char *path = sfield(f, "path"), *sha = sfield(f, "sha256");
	char dest[PATH_CAP], parent[PATH_CAP];
	ckpt_key key;
	nv_object_info info;

	if (!path || !sha || !path_ok(path) || strlen(sha) != 64)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "the checkpoint's manifest names '%.200s', "
				  "which is not a file of a checkpoint",
				  path ? path : "?");
	nv_pathf(key, sizeof(key), "%s" CKPT_OBJECTS "%s", job_prefix(j), sha);
	nv_pathf(dest, sizeof(dest), "%s/%s", folder, path);
	nv_pathf(parent, sizeof(parent), "%s", dest);
	*strrchr(parent, '/') = '\0';
	if (nv_mkdir_p(parent, 0700, err) != 0 ||
	    nv_filestore_get_file(store, key, dest, &info, err) != 0)
		return err->code;
	if (strcmp(info.sha256, sha) != 0)
		return nv_err_set(err, NV_EIO, NULL,
				  "checkpoint file '%s' has sha256 %s, its "
				  "manifest says %s",
				  path, info.sha256, sha);
	return 0;
}

/* What the record says of a checkpoint: when, by which attempt, its
 * size. */
static cJSON *summary(const cJSON *manifest, int attempt, double bytes)
{
	cJSON *s = cJSON_CreateObject();
	const cJSON *files = ofield(manifest, "files");
	const char *at = sfield(manifest, "written_at");
	const cJSON *by = ofield(manifest, "attempt");

	cJSON_AddNumberToObject(s, "attempt", attempt);
	cJSON_AddStringToObject(s, "written_at", at ? at : "");
	cJSON_AddNumberToObject(s, "written_by_attempt",
				cJSON_IsNumber(by) ? by->valuedouble : 0);
	cJSON_AddNumberToObject(s, "files", cJSON_GetArraySize(files));
	cJSON_AddNumberToObject(s, "bytes", bytes);
	return s;
}

int agent_checkpoint_restore(job *j, nv_err *err)
{
	char folder[PATH_CAP];
	ckpt_key key;
	char *text = NULL;
	size_t len;
	nv_filestore *store = NULL;
	cJSON *manifest = NULL;
	const cJSON *f;
	double bytes = 0;
	int rc;

	if (j->ckpt_every <= 0)
		return 0;
	ckpt_folder(j, folder, sizeof(folder));
	if ((rc = nv_mkdir_p(folder, 0700, err)) != 0)
		return rc;
	if (!(store = agent_output_store(j->spec, err)))
		return err->code;
	nv_pathf(key, sizeof(key), "%s" CKPT_MANIFEST, job_prefix(j));
	rc = nv_filestore_read(store, key, CKPT_MANIFEST_MAX, &text, &len, NULL,
			       err);
	if (rc == NV_ENOTFOUND) { /* the first attempt: nothing yet */
		rc = 0;
		goto out;
	}
	if (rc)
		goto out;
	if (!(manifest = cJSON_Parse(text)) ||
	    !cJSON_IsArray(ofield(manifest, "files"))) {
		rc = nv_err_set(err, NV_EIO, NULL,
				"the checkpoint's manifest %s is not one", key);
		goto out;
	}
	cJSON_ArrayForEach(f, ofield(manifest, "files"))
	{
		if ((rc = restore_file(store, j, f, folder, err)) != 0)
			goto out;
		const cJSON *size = ofield(f, "size");
		bytes += cJSON_IsNumber(size) ? size->valuedouble : 0;
	}
	cJSON_AddItemToArray(j->ckpt_restored,
			     summary(manifest, j->attempt, bytes));
	cJSON_Delete(j->ckpt_files);
	j->ckpt_files = cJSON_DetachItemFromObject(manifest, "files");
out:
	cJSON_Delete(manifest);
	free(text);
	nv_filestore_free(store);
	return rc;
}

/* One file of the folder into the store (unless its bytes are there);
 * its manifest entry into files. Through a staging key, so that what is
 * stored is named by the sha256 of what was read, even if the command
 * changes the file meanwhile. */
static int save_file(nv_filestore *store, const job *j, const char *folder,
		     const char *path, cJSON *files, int *added, nv_err *err)
{
	char src[PATH_CAP], sha[NV_SHA256_HEX_LEN + 1];
	ckpt_key key, staging;
	nv_object_info info;
	uint64_t size = 0;
	cJSON *entry;

	nv_pathf(src, sizeof(src), "%s/%s", folder, path);
	if (nv_sha256_file(src, sha, &size, err) != 0)
		return err->code;
	nv_pathf(key, sizeof(key), "%s" CKPT_OBJECTS "%s", job_prefix(j), sha);
	if (nv_filestore_head(store, key, &info, err) != 0) {
		nv_pathf(staging, sizeof(staging), "%s" CKPT_STAGING,
			 job_prefix(j));
		if (nv_filestore_put_file(store, staging, src, &info, err) != 0)
			return err->code;
		nv_pathf(key, sizeof(key), "%s" CKPT_OBJECTS "%s",
			 job_prefix(j), info.sha256);
		if (nv_filestore_copy(store, staging, key, &info, err) != 0)
			return err->code;
		nv_filestore_delete(store, staging, err);
		(*added)++;
	}
	entry = cJSON_CreateObject();
	cJSON_AddStringToObject(entry, "path", path);
	cJSON_AddStringToObject(entry, "sha256", info.sha256);
	cJSON_AddNumberToObject(entry, "size", (double)info.size);
	cJSON_AddItemToArray(files, entry);
	return 0;
}

/* The manifest of files (taken) into the store. */
static int put_manifest(nv_filestore *store, const job *j, cJSON *files,
			nv_err *err)
{
	cJSON *m = cJSON_CreateObject();
	char at[32], *text;
	ckpt_key key;
	int rc;

	nv_iso8601(nv_now(), at);
	cJSON_AddNumberToObject(m, "navette_checkpoint", 1);
	cJSON_AddStringToObject(m, "job", j->id);
	cJSON_AddNumberToObject(m, "attempt", j->attempt);
	cJSON_AddStringToObject(m, "written_at", at);
	cJSON_AddItemToObject(m, "files", files);
	text = cJSON_PrintUnformatted(m);
	cJSON_Delete(m);
	if (!text)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	nv_pathf(key, sizeof(key), "%s" CKPT_MANIFEST, job_prefix(j));
	rc = nv_filestore_put_bytes(store, key, text, strlen(text), NULL, err);
	cJSON_free(text);
	return rc;
}

static void note_written(job *j, const cJSON *files, int added)
{
	cJSON *w = cJSON_CreateObject();
	const cJSON *f;
	double bytes = 0;
	char at[32];

	cJSON_ArrayForEach(f, files)
	{
		const cJSON *size = ofield(f, "size");
		bytes += cJSON_IsNumber(size) ? size->valuedouble : 0;
	}
	nv_iso8601(nv_now(), at);
	cJSON_AddNumberToObject(w, "attempt", j->attempt);
	cJSON_AddStringToObject(w, "written_at", at);
	cJSON_AddNumberToObject(w, "files", cJSON_GetArraySize(files));
	cJSON_AddNumberToObject(w, "bytes", bytes);
	cJSON_AddNumberToObject(w, "files_uploaded", added);
	cJSON_AddItemToArray(j->ckpt_written, w);
	while (cJSON_GetArraySize(j->ckpt_written) > CKPT_WRITTEN_KEPT)
		cJSON_DeleteItemFromArray(j->ckpt_written, 0);
}

/* The objects a listing found that the manifest's files do not name. */
typedef struct unused {
	const cJSON *files;
	size_t prefix_len; /* of ".../objects/" */
	char keys[64][NV_FILESTORE_KEY_MAX + 1];
	int count;
} unused;

static int collect_unused(const nv_object_info *info, void *payload)
{
	unused *u = payload;
	const char *sha = info->key + u->prefix_len;
	const cJSON *f;

	cJSON_ArrayForEach(f, u->files)
	{
		const char *named = sfield(f, "sha256");
		if (named && strcmp(named, sha) == 0)
			return 0;
	}
	snprintf(u->keys[u->count++], sizeof(u->keys[0]), "%s", info->key);
	return u->count == 64; /* a full page: deleted, then listed again */
}

/* Removes the objects of earlier checkpoints that the latest no longer
 * names (a restore only ever reads the latest); best effort. */
static void prune(nv_filestore *store, const job *j, const cJSON *files)
{
	ckpt_key prefix;
	nv_err err;
	unused *u = calloc(1, sizeof(*u));

	if (!u)
		return;
	nv_pathf(prefix, sizeof(prefix), "%s" CKPT_OBJECTS, job_prefix(j));
	u->files = files;
	u->prefix_len = strlen(prefix);
	for (int pass = 0; pass < 1000; pass++) {
		u->count = 0;
		if (nv_filestore_list(store, prefix, NULL, 0, collect_unused, u,
				      NULL, &err) < 0 ||
		    u->count == 0)
			break;
		for (int i = 0; i < u->count; i++)
			if (nv_filestore_delete(store, u->keys[i], &err) != 0)
				pass = 1000; /* (listed again, forever) */
	}
	free(u);
}

/* The files of the latest checkpoint in the store, or NULL (none, or it
 * cannot be read: the save then writes one). */
static cJSON *latest_files(nv_filestore *store, const job *j)
{
	ckpt_key key;
	char *text = NULL;
	size_t len;
	cJSON *manifest, *files = NULL;
	nv_err err;

	nv_pathf(key, sizeof(key), "%s" CKPT_MANIFEST, job_prefix(j));
	if (nv_filestore_read(store, key, CKPT_MANIFEST_MAX, &text, &len, NULL,
			      &err) != 0)
		return NULL;
	manifest = cJSON_Parse(text);
	free(text);
	if (manifest && cJSON_IsArray(ofield(manifest, "files")))
		files = cJSON_DetachItemFromObject(manifest, "files");
	cJSON_Delete(manifest);
	return files;
}

/* Saves the folder as the job's latest checkpoint, unless its files are
 * those of the last one: the one this agent wrote or restored, or, for a
 * job it adopted from an agent that stopped, the one in the store. */
static int save(job *j, nv_err *err)
{
	char folder[PATH_CAP];
	file_list list = {0};
	nv_filestore *store = NULL;
	cJSON *files = cJSON_CreateArray();
	int rc = 0, added = 0;

	ckpt_folder(j, folder, sizeof(folder));
	if (agent_walk_files(folder, &list) != 0 ||
	    list.count > CKPT_FILES_MAX) {
		rc = nv_err_set(err, NV_EINVAL,
				"keep plain files in $NAVETTE_CHECKPOINT", "%s",
				list.bad[0] ? list.bad
					    : "too many files (or out "
					      "of memory)");
		goto out;
	}
	if (!(store = agent_output_store(j->spec, err))) {
		rc = err->code;
		goto out;
	}
	if (!j->ckpt_files)
		j->ckpt_files = latest_files(store, j);
	for (size_t i = 0; i < list.count && !rc; i++)
		rc = save_file(store, j, folder, list.paths[i], files, &added,
			       err);
	if (rc || (list.count == 0 && !j->ckpt_files) ||
	    (j->ckpt_files && cJSON_Compare(files, j->ckpt_files, 1)))
		goto out; /* nothing new */
	cJSON_Delete(j->ckpt_files);
	j->ckpt_files = cJSON_Duplicate(files, 1);
	rc = put_manifest(store, j, files, err);
	files = NULL; /* (taken) */
	if (rc == 0) {
		note_written(j, j->ckpt_files, added);
		prune(store, j, j->ckpt_files);
	} else { /* the next save tries again */
		cJSON_Delete(j->ckpt_files);
		j->ckpt_files = NULL;
	}
out:
	cJSON_Delete(files);
	nv_filestore_free(store);
	agent_file_list_free(&list);
	return rc;
}

void agent_checkpoint_tick(job *j, int force)
{
	nv_err err;

	if (j->ckpt_every <= 0 ||
	    (!force && nv_monotonic() - j->ckpt_saved < j->ckpt_every))
		return;
	int before = cJSON_GetArraySize(j->ckpt_written);
	cJSON *last = cJSON_GetArrayItem(j->ckpt_written, before - 1);

	j->ckpt_saved = nv_monotonic();
	if (save(j, &err) != 0)
		agent_log("job %s: cannot save its checkpoint: %s", j->id,
			  err.message);
	else if (cJSON_GetArrayItem(j->ckpt_written,
				    cJSON_GetArraySize(j->ckpt_written) - 1) !=
		 last)
		agent_attempts_save(j); /* (an agent that adopts it knows) */
}

void agent_checkpoint_record(const job *j, cJSON *record)
{
	cJSON *c;

	if (j->ckpt_every <= 0)
		return;
	c = cJSON_AddObjectToObject(record, "checkpoints");
	cJSON_AddNumberToObject(c, "every", j->ckpt_every);
	cJSON_AddItemToObject(c, "restored",
			      cJSON_Duplicate(j->ckpt_restored, 1));
	cJSON_AddItemToObject(c, "written",
			      cJSON_Duplicate(j->ckpt_written, 1));
}
