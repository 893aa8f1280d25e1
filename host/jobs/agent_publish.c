/* The local agent's publication (see agent_internal.h): a job's outputs,
 * its log and its run record, into the output store under the job's
 * prefix. What is published must be what the job wrote: a symlink, a
 * special file or a name that is not UTF-8 is refused, a partial
 * publication rolled back, the log and the record masked once more. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/fsutil.h"
#include "core/utf8.h"
#include "creds/redact.h"
#include "jobs/agent_internal.h"
#include "jobs/launcher.h"

/* ---- the outputs --------------------------------------------------------- */

static int list_add(file_list *l, const char *rel)
{
	if (l->count == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		char **p = realloc(l->paths, cap * sizeof(char *));
		if (!p)
			return -1;
		l->paths = p;
		l->cap = cap;
	}
	l->paths[l->count] = strdup(rel);
	if (!l->paths[l->count])
		return -1;
	l->count++;
	return 0;
}

void agent_file_list_free(file_list *l)
{
	for (size_t i = 0; i < l->count; i++)
		free(l->paths[i]);
	free(l->paths);
	memset(l, 0, sizeof(*l));
}

static int walk_outputs(const char *root, const char *rel, file_list *l,
			int depth)
{
	char path[PATH_CAP];
	DIR *d;
	struct dirent *e;

	if (depth > 64) {
		snprintf(l->bad, sizeof(l->bad), "%s: folders nested too deep",
			 rel);
		return -1;
	}
	nv_pathf(path, sizeof(path), "%s%s%s", root, rel[0] ? "/" : "", rel);
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char child[PATH_CAP], full[PATH_CAP];
		struct stat st;
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		/* a name that is not UTF-8 would make the run record invalid
		 * JSON (and no store shows it the same way twice) */
		size_t bad_at =
			nv_utf8_invalid_at(e->d_name, strlen(e->d_name));
		if (bad_at != NV_UTF8_VALID) {
			char shown[400];
			nv_utf8_show(shown, sizeof(shown), e->d_name,
				     strlen(e->d_name));
			snprintf(l->bad, sizeof(l->bad),
				 "output name '%s%s%s' is not UTF-8 text (byte "
				 "0x%02x at offset %zu): name outputs in UTF-8",
				 rel, rel[0] ? "/" : "", shown,
				 (unsigned char)e->d_name[bad_at], bad_at);
			closedir(d);
			return -1;
		}
		nv_pathf(child, sizeof(child), "%s%s%s", rel, rel[0] ? "/" : "",
			 e->d_name);
		nv_pathf(full, sizeof(full), "%s/%s", root, child);
		if (lstat(full, &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			if (walk_outputs(root, child, l, depth + 1) != 0) {
				closedir(d);
				return -1;
			}
		} else if (S_ISREG(st.st_mode)) {
			if (list_add(l, child) != 0) {
				closedir(d);
				return -1;
			}
		} else {
			snprintf(l->bad, sizeof(l->bad),
				 "%.900s is not a regular file (symlinks and "
				 "special files are not published)",
				 child);
			closedir(d);
			return -1;
		}
	}
	closedir(d);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int agent_walk_files(const char *root, file_list *l)
{
	if (walk_outputs(root, "", l, 0) != 0)
		return -1;
	if (l->count > 1) /* paths is NULL when empty */
		qsort(l->paths, l->count, sizeof(char *), cmp_str);
	return 0;
}

/* One output into the store, its entry into published. */
static int publish_one(nv_filestore *store, const char *prefix,
		       const char *outdir, const char *name, cJSON *published,
		       nv_record_outcome *o)
{
	char key[NV_FILESTORE_KEY_MAX + 64];
	char src[PATH_CAP], url[NV_FILESTORE_PATH_MAX + 64];
	nv_object_info info;
	nv_err err;
	cJSON *entry;

	nv_pathf(key, sizeof(key), "%s%s", prefix, name);
	nv_pathf(src, sizeof(src), "%s/%s", outdir, name);
	/* in any case: a folding volume (APFS) would let the log overwrite
	 * an output named Navette.log */
	const char *taken = nv_launcher_output_reserved(name);
	if (taken) {
		nv_record_fail(o, NV_STATE_FAILED, NV_PHASE_OUTPUTS_PUBLISHED,
			       NV_RECORD_RESERVED_HINT,
			       "output '%s' has a reserved name (navette's "
			       "'%s', in any case)",
			       name, taken);
		return -1;
	}
	if (nv_filestore_put_file(store, key, src, &info, &err) != 0) {
		nv_record_fail(o, NV_STATE_FAILED, NV_PHASE_OUTPUTS_PUBLISHED,
			       err.hint[0] ? err.hint
					   : "check the store's rights and "
					     "free space",
			       "cannot publish '%s': %s", name, err.message);
		return -1;
	}
	entry = cJSON_CreateObject();
	cJSON_AddStringToObject(entry, "name", name);
	cJSON_AddStringToObject(entry, "key", key);
	if (nv_filestore_url(url, sizeof(url), store, key, &err) == 0)
		cJSON_AddStringToObject(entry, "url", url);
	cJSON_AddNumberToObject(entry, "size", (double)info.size);
	cJSON_AddStringToObject(entry, "sha256", info.sha256);
	cJSON_AddItemToArray(published, entry);
	return 0;
}

void agent_publish_outputs(nv_filestore *store, const char *prefix,
			   const char *outdir, cJSON *published,
			   nv_record_outcome *o)
{
	file_list files = {0};
	size_t npublished = 0;
	nv_err err;

	if (agent_walk_files(outdir, &files) != 0)
		nv_record_fail(o, NV_STATE_FAILED, NV_PHASE_OUTPUTS_PUBLISHED,
			       "write plain files into $NAVETTE_OUTPUTS", "%s",
			       files.bad[0] ? files.bad : "out of memory");
	for (size_t i = 0; o->state == NV_STATE_SUCCEEDED && i < files.count;
	     i++) {
		if (publish_one(store, prefix, outdir, files.paths[i],
				published, o) != 0)
			break;
		npublished++;
	}
	if (o->state != NV_STATE_SUCCEEDED) {
		/* a partial publication is rolled back */
		for (size_t i = 0; i < npublished; i++) {
			char key[NV_FILESTORE_KEY_MAX + 64];
			nv_pathf(key, sizeof(key), "%s%s", prefix,
				 files.paths[i]);
			nv_filestore_delete(store, key, &err);
		}
		while (cJSON_GetArraySize(published) > 0)
			cJSON_DeleteItemFromArray(published, 0);
	}
	agent_file_list_free(&files);
}

/* ---- the store and the log ----------------------------------------------- */

nv_filestore *agent_output_store(const cJSON *spec, nv_err *err)
{
	const cJSON *outputs = ofield(spec, "outputs");
	const char *root = outputs ? sfield(outputs, "store") : NULL;
	nv_filestore *store = NULL;
	char path[PATH_CAP];

	if (!root) {
		nv_err_set(err, NV_EINVAL, NULL,
			   "job spec has no output store");
		return NULL;
	}
	if (nv_filestore_path_from_url(path, sizeof(path), root, err) != 0)
		return NULL;
	if (nv_filestore_open(&store, path, 1, err) != 0)
		return NULL;
	return store;
}

/* The log was masked as it was written, by a stream; once the job is over
 * it is passed once more, whole, through a redactor holding the
 * submitter's fingerprints, and replaced atomically: whatever a stream's
 * cut points let through does not stay on disk or get published. Every
 * write of the copy is checked: a copy that could not be written whole (a
 * full disk) is dropped, never renamed over the log. */
typedef struct log_copy {
	FILE *f;
	int failed; /* errno of the first write that failed; 0: none */
} log_copy;

static void write_copy(const char *buf, size_t len, void *payload)
{
	log_copy *c = payload;

	if (c->failed || len == 0)
		return;
	errno = 0;
	if (fwrite(buf, 1, len, c->f) != len)
		c->failed = errno ? errno : EIO;
}

int agent_reredact_log(const cJSON *spec, const char *logpath, nv_err *err)
{
	char tmp[PATH_CAP];
	char buf[65536];
	FILE *in;
	log_copy copy = {NULL, 0};
	nv_redactor *r;
	nv_redact_stream *s;
	const char *fp = sfield(spec, "redact_fingerprints");
	int rc = 0;

	if (nv_pathf(tmp, sizeof(tmp), "%s.redacting", logpath) != 0)
		return nv_err_set(err, NV_EIO, NULL, "log path too long");
	in = fopen(logpath, "rb");
	if (!in)
		return 0; /* no log: nothing to mask */
	copy.f = fopen(tmp, "wb");
	r = nv_redactor_new();
	if (!copy.f || !r) {
		int e = errno;
		if (copy.f)
			fclose(copy.f);
		fclose(in);
		nv_redactor_free(r);
		unlink(tmp);
		return nv_err_set_errno(err, NV_EIO, e, NULL,
					"cannot rewrite the log %s", logpath);
	}
	if (fp)
		nv_redact_add_fingerprints(r, fp, strlen(fp), err);
	s = nv_redact_stream_new(r, write_copy, &copy);
	if (!s) {
		rc = nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	} else {
		size_t n;
		while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
			nv_redact_stream_write(s, buf, n);
		if (ferror(in) && !copy.failed)
			copy.failed = EIO;
		nv_redact_stream_flush(s);
		nv_redact_stream_free(s);
	}
	fclose(in);
	if (!copy.failed && (fflush(copy.f) != 0 || ferror(copy.f) ||
			     fsync(fileno(copy.f)) != 0))
		copy.failed = errno ? errno : EIO;
	if (fclose(copy.f) != 0 && !copy.failed)
		copy.failed = errno ? errno : EIO;
	nv_redactor_free(r);
	if (rc == 0 && copy.failed)
		rc = nv_err_set_errno(err, NV_EIO, copy.failed, NULL,
				      "cannot rewrite the log %s", logpath);
	if (rc == 0 && rename(tmp, logpath) != 0)
		rc = nv_err_set_errno(err, NV_EIO, errno, NULL,
				      "cannot replace the log");
	if (rc)
		unlink(tmp);
	return rc;
}

/* Publishes the (capped) log and returns its size. */
int agent_publish_log(nv_filestore *store, const char *prefix,
		      const char *logpath, long long max_bytes, int cut,
		      cJSON *record_log, nv_err *err)
{
	char key[NV_FILESTORE_KEY_MAX + 64];
	char *data = NULL;
	size_t len = 0;
	struct stat st;
	int truncated = 0;
	int rc;

	nv_record_key(key, sizeof(key), prefix, NV_RECORD_LOG);
	if (stat(logpath, &st) == 0 && st.st_size > max_bytes) {
		/* Keep the end of the log: that is where failures are. */
		FILE *f = fopen(logpath, "rb");
		data = malloc((size_t)max_bytes + 128);
		if (!f || !data) {
			if (f)
				fclose(f);
			free(data);
			return nv_err_set(err, NV_ENOMEM, NULL,
					  "cannot read the log");
		}
		len = (size_t)snprintf(data, 128,
				       "[navette: log truncated to its last "
				       "%lld bytes]\n",
				       max_bytes);
		fseeko(f, st.st_size - max_bytes, SEEK_SET);
		len += fread(data + len, 1, (size_t)max_bytes, f);
		fclose(f);
		truncated = 1;
		rc = nv_filestore_put_bytes(store, key, data, len, NULL, err);
		free(data);
	} else if (stat(logpath, &st) == 0) {
		rc = nv_filestore_put_file(store, key, logpath, NULL, err);
		len = (size_t)st.st_size;
	} else {
		rc = nv_filestore_put_bytes(store, key, "", 0, NULL, err);
	}
	if (rc == 0) {
		char url[NV_FILESTORE_PATH_MAX + 64];
		if (nv_filestore_url(url, sizeof(url), store, key, err) == 0)
			cJSON_AddStringToObject(record_log, "url", url);
		cJSON_AddStringToObject(record_log, "key", key);
		cJSON_AddNumberToObject(record_log, "bytes", (double)len);
		cJSON_AddBoolToObject(record_log, "truncated",
				      truncated || cut);
	}
	return rc;
}

/* ---- the run record ------------------------------------------------------ */

int agent_publish_record(nv_filestore *store, const cJSON *spec,
			 const char *prefix, const cJSON *record, char *url,
			 size_t cap, nv_err *err)
{
	char key[NV_FILESTORE_KEY_MAX + 64];
	char *raw = cJSON_Print(record);
	char *text = NULL;
	nv_buf clean;
	int rc = 0;

	nv_buf_init(&clean, NV_RECORD_MAX * 2);
	/* shapes, and the submitter's secrets through their fingerprints,
	 * in a redactor of this job */
	nv_redactor *r = nv_redactor_new();
	const char *fp = sfield(spec, "redact_fingerprints");
	if (r && fp)
		nv_redact_add_fingerprints(r, fp, strlen(fp), err);
	if (r && raw && nv_redact_buffer(r, raw, strlen(raw), &clean) == 0 &&
	    clean.data)
		text = strdup(clean.data);
	nv_redactor_free(r);
	nv_buf_free(&clean);
	free(raw);
	nv_record_key(key, sizeof(key), prefix, NV_RECORD_RUN_RECORD);
	if (!text || strlen(text) >= NV_RECORD_MAX)
		rc = nv_err_set(err, NV_ENOMEM, NULL,
				"the record could not be masked, or is larger "
				"than %zu bytes",
				NV_RECORD_MAX);
	else if ((rc = nv_filestore_put_bytes(store, key, text, strlen(text),
					      NULL, err)) == 0)
		nv_filestore_url(url, cap, store, key, err);
	free(text);
	return rc;
}
