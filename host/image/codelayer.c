/* The code layer push (see codelayer.h for the steps and guarantees). */
#include "image/codelayer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/fsutil.h"
#include "git/pgzip.h"
#include "creds/scan.h"
#include "git/git.h"
#include "image/manifest.h"
#include "core/sha256.h"

#define SHOWN_FINDINGS 8

void nv_code_layer_tag(const char *commit, char tag[NV_IMAGE_TAG_MAX + 1])
{
	snprintf(tag, NV_IMAGE_TAG_MAX + 1, "%.*s", NV_CODE_LAYER_TAG_LEN,
		 commit);
}

static void step(const nv_code_layer_opts *o, const char *name,
		 const char *detail)
{
	if (o && o->step)
		o->step(o->step_payload, name, detail);
}

/* ---- the secret scan ---- */

struct scan_report {
	char text[NV_ERR_MESSAGE_MAX - 200];
	size_t used, count;
};

static int on_finding(const nv_scan_finding *f, void *payload)
{
	struct scan_report *s = payload;
	int n;

	s->count++;
	if (s->count > SHOWN_FINDINGS || s->used >= sizeof(s->text))
		return 0;
	if (f->line)
		n = snprintf(s->text + s->used, sizeof(s->text) - s->used,
			     "\n  %.120s:%zu: %.80s [%s]", f->path, f->line,
			     f->reason, f->rule);
	else
		n = snprintf(s->text + s->used, sizeof(s->text) - s->used,
			     "\n  %.120s: %.80s [%s]", f->path, f->reason,
			     f->rule);
	if (n > 0)
		s->used += (size_t)n < sizeof(s->text) - s->used
				   ? (size_t)n
				   : sizeof(s->text) - s->used;
	return 0;
}

/* Scans the commit's tree; verdicts_path (may be NULL) keeps the clean
 * verdicts of its blobs between pushes (creds/scan.h), so an unchanged blob
 * is not read again. stats may be NULL. */
static int scan_tree(const char *workdir, const char *commit,
		     const char *verdicts_path, nv_scan_stats *stats,
		     nv_err *err)
{
	struct scan_report rep;
	nv_scan_verdicts *verdicts = NULL;
	nv_scan_stats local, *st = stats ? stats : &local;
	nv_err ignored;
	int rc;

	memset(&rep, 0, sizeof(rep));
	if (verdicts_path &&
	    nv_scan_verdicts_load(&verdicts, verdicts_path, &ignored))
		verdicts = NULL; /* out of memory: a full scan */
	rc = nv_scan_commit_cached(workdir, commit, verdicts, on_finding, &rep,
				   st, err);
	if (rc >= 0 && verdicts)
		nv_scan_verdicts_save(verdicts, &ignored); /* a cache */
	nv_scan_verdicts_free(verdicts);
	if (rc < 0)
		return rc;
	if (st->findings == 0)
		return 0;
	return nv_err_set(err, NV_EREFUSED,
			  "remove them from the repository (and rotate them), "
			  "or exempt a path with a written reason in "
			  ".navette-secrets-allow",
			  "commit %.12s holds what looks like secrets; no code "
			  "layer is made of it:%s%s",
			  commit, rep.text,
			  rep.count > SHOWN_FINDINGS ? "\n  ..." : "");
}

/* The scan of a push runs in a thread of its own while the base is
 * resolved and the layer packed (both only read, and write a temp file):
 * its verdict is awaited before anything is sent. It calls no Lua and
 * shares nothing with the push but this struct, read after the join. */
struct layer_stream;

struct scan_job {
	struct layer_stream *notify; /* told the verdict; may be NULL */
	char workdir[4096];
	char commit[NV_GIT_OID_HEX_LEN + 1];
	char verdicts[4200]; /* "": no verdict cache */
	pthread_t thread;
	int running; /* started and not joined yet */
	int rc;
	nv_scan_stats stats;
	nv_err err;
};

static void stream_verdict(struct layer_stream *st, int clean);

static void *scan_job_main(void *arg)
{
	struct scan_job *j = arg;

	j->rc = scan_tree(j->workdir, j->commit,
			  j->verdicts[0] ? j->verdicts : NULL, &j->stats,
			  &j->err);
	if (j->notify)
		stream_verdict(j->notify, j->rc == 0);
	return NULL;
}

/* Starts the scan; without a thread, scans at once (the same verdict). */
static void scan_job_start(struct scan_job *j, const char *workdir,
			   const char *commit, const char *cache_dir)
{
	snprintf(j->workdir, sizeof(j->workdir), "%s", workdir);
	snprintf(j->commit, sizeof(j->commit), "%s", commit);
	if (!cache_dir || nv_pathf(j->verdicts, sizeof(j->verdicts), "%s/%s",
				   cache_dir, NV_SCAN_VERDICTS_FILE))
		j->verdicts[0] = '\0';
	nv_err_clear(&j->err);
	if (pthread_create(&j->thread, NULL, scan_job_main, j) == 0)
		j->running = 1;
	else
		scan_job_main(j);
}

/* Joins the scan (harmless when not running) and gives its verdict: 0, or
 * its error copied into err. */
static int scan_job_wait(struct scan_job *j, nv_err *err)
{
	if (j->running) {
		pthread_join(j->thread, NULL);
		j->running = 0;
	}
	if (j->rc && err)
		*err = j->err;
	return j->rc;
}

/* ---- steps 1, 2 and the layer ---- */

/* "/opt//app/" -> prefix "opt/app" and folder "/opt/app". */
static int normalise_into(const char *into, char *folder, size_t cap,
			  nv_err *err)
{
	size_t n = 0;
	const char *p = into && into[0] ? into : "/workspace";

	while (*p) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		if (n + 2 >= cap)
			return nv_err_set(err, NV_EINVAL, NULL,
					  "folder '%.100s' too long", into);
		folder[n++] = '/';
		while (*p && *p != '/' && n + 1 < cap)
			folder[n++] = *p++;
	}
	if (n == 0)
		folder[n++] = '/';
	folder[n] = '\0';
	return 0;
}

struct prepared {
	nv_git_repo *repo;
	char workdir[4096];
	nv_git_commit info;
};

static int prepare(const char *repo_path, const char *commit,
		   const nv_code_layer_opts *o, struct prepared *p,
		   nv_code_layer_result *res, nv_err *err)
{
	int rc;

	rc = nv_git_open(&p->repo, repo_path ? repo_path : ".", err);
	if (rc)
		return rc;
	snprintf(p->workdir, sizeof(p->workdir), "%s", nv_git_workdir(p->repo));
	rc = nv_git_resolve(p->repo, commit ? commit : "HEAD", res->commit,
			    err);
	if (!rc)
		rc = nv_git_commit_info(p->repo, res->commit, &p->info, err);
	if (!rc)
		rc = nv_git_lockfile_hash(p->repo, res->commit,
					  res->lockfile_hash, err);
	if (rc)
		return rc;
	res->created = p->info.time;
	if (o && o->source)
		snprintf(res->source, sizeof(res->source), "%s", o->source);
	else if (nv_git_remote_url(p->repo, NULL, res->source,
				   sizeof(res->source), err))
		res->source[0] = '\0'; /* no origin: no source label */
	return 0;
}

static int pack(struct prepared *p, const char *out_path,
		nv_code_layer_result *res, nv_err *err)
{
	nv_archive_opts ao;
	int rc;

	memset(&ao, 0, sizeof(ao));
	ao.prefix = res->into;
	ao.gzip = 1;
	rc = nv_archive_commit_file(p->repo, res->commit, &ao, out_path,
				    &res->archive, err);
	if (rc)
		return rc;
	snprintf(res->diff_id, sizeof(res->diff_id), "sha256:%s",
		 res->archive.tar_sha256);
	snprintf(res->layer_digest, sizeof(res->layer_digest), "sha256:%s",
		 res->archive.sha256);
	return 0;
}

int nv_image_platform_check(const char *config, size_t len,
			    const char *platform, const char *what, nv_err *err)
{
	char os[32], arch[32], variant[32];
	nv_oci_config_info info;
	int rc;

	if (!platform)
		platform = NV_IMAGE_PLATFORM_DEFAULT;
	rc = nv_oci_platform_parse(platform, os, arch, variant, err);
	if (!rc)
		rc = nv_oci_config_info_parse(config, len, &info, err);
	if (rc)
		return rc;
	if (strcmp(info.os, os) == 0 && strcmp(info.architecture, arch) == 0 &&
	    (!variant[0] || !info.variant[0] ||
	     strcmp(info.variant, variant) == 0))
		return 0;
	return nv_err_set(
		err, NV_EREFUSED,
		"build or choose the image for the nodes' platform (a "
		"multi-platform index is resolved to it), or set the "
		"profile's platform if its nodes really are that one",
		"%.300s is %s/%s%s%s, not %s: its programs would fail on the "
		"nodes with 'exec format error'",
		what ? what : "the image", info.os[0] ? info.os : "(no os)",
		info.architecture[0] ? info.architecture : "(no architecture)",
		info.variant[0] ? "/" : "", info.variant, platform);
}

int nv_code_layer_pack(const char *repo_path, const char *commit,
		       const char *into, const char *out_path,
		       nv_code_layer_result *res, nv_err *err)
{
	struct prepared p;
	int rc;

	memset(res, 0, sizeof(*res));
	memset(&p, 0, sizeof(p));
	rc = normalise_into(into, res->into, sizeof(res->into), err);
	if (!rc)
		rc = prepare(repo_path, commit, NULL, &p, res, err);
	if (!rc)
		rc = scan_tree(p.workdir, res->commit, NULL, NULL, err);
	if (!rc)
		rc = pack(&p, out_path, res, err);
	nv_git_free(p.repo);
	return rc;
}

/* ---- the layer, uploaded while it is packed ---- */

/* The pack writes the layer file; a sender thread PATCHes what is written
 * to an upload session of the target (registry.h), a bounded chunk at a
 * time read back from the file, and PUTs the digest once the pack is done.
 * The sender sends nothing before the scan has passed the tree: a secret
 * never leaves the machine, not even into an upload session. It stops, and
 * the session is cancelled, when the scan refuses, the pack fails or the
 * push gives up; any failure of its own leaves the layer to be sent whole
 * afterwards (a registry that refuses chunks, say). While it runs, nothing
 * else uses the target's client. */
#define STREAM_CHUNK ((uint64_t)16 * 1024 * 1024)

struct layer_stream {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int fd;           /* the layer file */
	uint64_t written; /* bytes of it the pack has written */
	int packed;       /* 1: done, digest set; -1: the pack failed */
	int verdict;      /* the scan's: 0 not yet, 1 clean, -1 not */
	int stop;         /* the push gives up */
	char digest[NV_IMAGE_DIGEST_LEN + 1];
	nv_registry *registry;
	const char *repository;
	pthread_t thread;
	int running;
	/* the sender's: sent under mu as it goes, the rest read after the
	 * join */
	uint64_t sent;
	int over;     /* the sender has ended */
	int uploaded; /* the blob is in the target */
};

static void stream_init(struct layer_stream *st)
{
	memset(st, 0, sizeof(*st));
	st->fd = -1;
	pthread_mutex_init(&st->mu, NULL);
	pthread_cond_init(&st->cv, NULL);
}

static void stream_set(struct layer_stream *st, int *field, int value)
{
	pthread_mutex_lock(&st->mu);
	*field = value;
	pthread_cond_broadcast(&st->cv);
	pthread_mutex_unlock(&st->mu);
}

static void stream_verdict(struct layer_stream *st, int clean)
{
	stream_set(st, &st->verdict, clean ? 1 : -1);
}

/* Waits for the scan's verdict; 1 when the sender may go on. */
static int stream_wait_clean(struct layer_stream *st)
{
	int go;

	pthread_mutex_lock(&st->mu);
	while (!st->verdict && !st->stop && st->packed >= 0)
		pthread_cond_wait(&st->cv, &st->mu);
	go = st->verdict == 1 && !st->stop && st->packed >= 0;
	pthread_mutex_unlock(&st->mu);
	return go;
}

static void stream_set_sent(struct layer_stream *st, uint64_t sent)
{
	pthread_mutex_lock(&st->mu);
	st->sent = sent;
	pthread_cond_broadcast(&st->cv);
	pthread_mutex_unlock(&st->mu);
}

static void *stream_main(void *arg)
{
	struct layer_stream *st = arg;
	char digest[NV_IMAGE_DIGEST_LEN + 1];
	nv_registry_upload *up = NULL;
	uint64_t sent = 0, n;
	int uploaded = 0, packed;
	nv_err err;

	/* every way out goes through the end below, which tells the
	 * waiting push that the sender is over */
	if (!stream_wait_clean(st) ||
	    nv_registry_upload_open(&up, st->registry, st->repository, &err))
		goto over;
	for (;;) {
		pthread_mutex_lock(&st->mu);
		while (!st->stop && !st->packed &&
		       st->written - sent < STREAM_CHUNK)
			pthread_cond_wait(&st->cv, &st->mu);
		packed = st->stop ? -1 : st->packed;
		n = st->written - sent;
		memcpy(digest, st->digest, sizeof(digest));
		pthread_mutex_unlock(&st->mu);
		if (packed < 0)
			break;
		if (n == 0 && packed == 1) {
			uploaded = !nv_registry_upload_commit(up, digest, &err);
			break;
		}
		if (nv_registry_upload_write_fd(
			    up, st->fd, sent,
			    n < STREAM_CHUNK ? n : STREAM_CHUNK, &err))
			break;
		sent = nv_registry_upload_sent(up);
		stream_set_sent(st, sent);
	}
over:
	nv_registry_upload_free(up); /* cancels a session left open */
	pthread_mutex_lock(&st->mu);
	st->uploaded = uploaded;
	st->sent = sent;
	st->over = 1;
	pthread_cond_broadcast(&st->cv);
	pthread_mutex_unlock(&st->mu);
	return NULL;
}

/* Once the layer is packed and clean: waits for the sender to end, showing
 * its progress from this thread (progress functions may call Lua). */
static void stream_finish(struct layer_stream *st, nv_registry *r,
			  const char *digest, uint64_t total)
{
	uint64_t shown = 0, sent;
	int over = 0;

	while (st->running && !over) {
		pthread_mutex_lock(&st->mu);
		while (!st->over && st->sent == shown)
			pthread_cond_wait(&st->cv, &st->mu);
		sent = st->sent;
		over = st->over;
		pthread_mutex_unlock(&st->mu);
		if (sent != shown && sent < total)
			nv_registry_progress_report(r, digest, sent, total);
		shown = sent;
	}
	if (st->running) {
		pthread_join(st->thread, NULL);
		st->running = 0;
	}
	if (st->uploaded)
		nv_registry_progress_report(r, digest, total, total);
}

/* Stops the sender unless the layer is complete and clean, and joins it;
 * harmless when it never started. */
static void stream_join(struct layer_stream *st, int give_up)
{
	if (give_up)
		stream_set(st, &st->stop, 1);
	if (st->running) {
		pthread_join(st->thread, NULL);
		st->running = 0;
	}
}

static void stream_dispose(struct layer_stream *st)
{
	stream_join(st, 1);
	if (st->fd >= 0)
		close(st->fd);
	st->fd = -1;
	pthread_cond_destroy(&st->cv);
	pthread_mutex_destroy(&st->mu);
}

struct stream_sink {
	struct layer_stream *st;
	const char *path;
	nv_err *err;
};

static int stream_write(void *payload, const void *data, size_t len)
{
	struct stream_sink *k = payload;
	struct layer_stream *st = k->st;
	int refused;

	if (nv_write_all(st->fd, data, len)) {
		nv_err_set_errno(k->err, NV_EIO, errno,
				 "check the free space and rights",
				 "archive: cannot write '%s'", k->path);
		return -1;
	}
	pthread_mutex_lock(&st->mu);
	st->written += len;
	refused = st->verdict < 0; /* no use packing a refused tree */
	if (st->written % STREAM_CHUNK < len || refused)
		pthread_cond_broadcast(&st->cv);
	pthread_mutex_unlock(&st->mu);
	return refused ? -1 : 0;
}

/* The pack of a push: into path (created), the sender fed as it goes
 * when stream is on. */
static int pack_streamed(struct prepared *p, const char *path,
			 struct layer_stream *st, int stream,
			 nv_code_layer_result *res, nv_err *err)
{
	struct stream_sink k;
	nv_archive_opts ao;
	int rc;

	st->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (st->fd < 0)
		return nv_err_set_errno(err, NV_EIO, errno, NULL,
					"cannot create '%s'", path);
	if (stream && pthread_create(&st->thread, NULL, stream_main, st) == 0)
		st->running = 1;
	memset(&ao, 0, sizeof(ao));
	ao.prefix = res->into;
	ao.gzip = 1;
	k.st = st;
	k.path = path;
	k.err = err;
	rc = nv_archive_commit(p->repo, res->commit, &ao, stream_write, &k,
			       &res->archive, err);
	if (!rc) {
		snprintf(res->diff_id, sizeof(res->diff_id), "sha256:%s",
			 res->archive.tar_sha256);
		snprintf(res->layer_digest, sizeof(res->layer_digest),
			 "sha256:%s", res->archive.sha256);
		pthread_mutex_lock(&st->mu);
		memcpy(st->digest, res->layer_digest, sizeof(st->digest));
		pthread_mutex_unlock(&st->mu);
	}
	stream_set(st, &st->packed, rc ? -1 : 1);
	return rc;
}

/* ---- the layer cache ---- */

/* A pushed layer's facts, kept per commit and folder so that a second push
 * of the same commit does not pack it again when the registry has it. The
 * key covers everything the bytes depend on, the deflate engine and its
 * version included (another engine makes other bytes). */
static int cache_path(const char *dir, const nv_code_layer_result *res,
		      char *out, size_t cap)
{
	char key[NV_ARCHIVE_PATH_MAX + 200], hex[NV_SHA256_HEX_LEN + 1];
	nv_err ignored;
	int n;

	n = snprintf(key, sizeof(key),
		     "navette code layer 1|%s|%s|%d|%zu|%d|%s", res->commit,
		     res->into, NV_ARCHIVE_GZIP_LEVEL, NV_PGZIP_BLOCK,
		     NV_ARCHIVE_GZIP_OS, nv_pgzip_engine());
	if (n < 0 || (size_t)n >= sizeof(key) ||
	    nv_sha256_bytes(key, (size_t)n, hex, &ignored))
		return -1;
	return nv_pathf(out, cap, "%s/%s.json", dir, hex);
}

static int cache_load(const char *dir, nv_code_layer_result *res)
{
	char path[4200], *text = NULL;
	const cJSON *v;
	nv_err ignored;
	size_t len;
	cJSON *doc;
	int ok = 0;

	if (!dir || cache_path(dir, res, path, sizeof(path)) ||
	    nv_read_file(&text, &len, path, 4096, &ignored))
		return 0;
	doc = cJSON_ParseWithLength(text, len);
	free(text);
	v = cJSON_GetObjectItemCaseSensitive(doc, "diff_id");
	if (cJSON_IsString(v) && nv_image_digest_valid(v->valuestring))
		snprintf(res->diff_id, sizeof(res->diff_id), "%s",
			 v->valuestring);
	v = cJSON_GetObjectItemCaseSensitive(doc, "layer_digest");
	if (cJSON_IsString(v) && nv_image_digest_valid(v->valuestring))
		snprintf(res->layer_digest, sizeof(res->layer_digest), "%s",
			 v->valuestring);
#define NUM(field, key)                                                        \
	v = cJSON_GetObjectItemCaseSensitive(doc, key);                        \
	if (cJSON_IsNumber(v) && v->valuedouble >= 0 &&                        \
	    v->valuedouble < 18446744073709551616.0) /* 2^64: no UB cast */    \
		res->archive.field = (uint64_t)v->valuedouble;
	NUM(size, "size")
	NUM(tar_size, "tar_size")
	NUM(files, "files")
	NUM(dirs, "dirs")
	NUM(symlinks, "symlinks")
	NUM(submodules, "submodules")
	NUM(file_bytes, "file_bytes")
#undef NUM
	if (res->diff_id[0] && res->layer_digest[0] && res->archive.size) {
		snprintf(res->archive.tar_sha256,
			 sizeof(res->archive.tar_sha256), "%s",
			 res->diff_id + 7);
		snprintf(res->archive.sha256, sizeof(res->archive.sha256), "%s",
			 res->layer_digest + 7);
		res->archive.mtime = res->created;
		ok = 1;
	} else {
		res->diff_id[0] = res->layer_digest[0] = '\0';
		memset(&res->archive, 0, sizeof(res->archive));
	}
	cJSON_Delete(doc);
	return ok;
}

static void cache_store(const char *dir, const nv_code_layer_result *res)
{
	char path[4200], text[1024];
	nv_err ignored;
	int n;

	if (!dir || cache_path(dir, res, path, sizeof(path)) ||
	    nv_mkdir_p(dir, 0700, &ignored))
		return;
	n = snprintf(
		text, sizeof(text),
		"{\"diff_id\":\"%s\",\"layer_digest\":\"%s\",\"size\":%llu,"
		"\"tar_size\":%llu,\"files\":%llu,\"dirs\":%llu,"
		"\"symlinks\":%llu,\"submodules\":%llu,\"file_bytes\":%llu}\n",
		res->diff_id, res->layer_digest,
		(unsigned long long)res->archive.size,
		(unsigned long long)res->archive.tar_size,
		(unsigned long long)res->archive.files,
		(unsigned long long)res->archive.dirs,
		(unsigned long long)res->archive.symlinks,
		(unsigned long long)res->archive.submodules,
		(unsigned long long)res->archive.file_bytes);
	if (n > 0 && (size_t)n < sizeof(text))
		nv_write_file_atomic(path, text, (size_t)n, 0600, &ignored);
}

/* ---- step 5: blobs ---- */

static int same_registry(const nv_code_layer_opts *o, const nv_image_ref *a,
			 const nv_image_ref *b)
{
	return o->base_registry == o->target_registry ||
	       strcmp(a->registry, b->registry) == 0;
}

/* 1 when the target repository has digest (counted), 0 when not, or an
 * NV_E* code. HEAD comes first for every blob: what is there is never
 * sent again. */
static int target_has(const nv_code_layer_opts *o, const nv_image_ref *target,
		      const char *digest, nv_code_layer_result *res,
		      nv_err *err)
{
	int rc = nv_registry_blob_head(o->target_registry, target->repository,
				       digest, NULL, err);

	if (rc == 0) {
		res->blobs_present++;
		return 1;
	}
	return rc == NV_ENOTFOUND ? 0 : rc;
}

static int ensure_base_blob(const nv_code_layer_opts *o,
			    const nv_image_ref *base,
			    const nv_image_ref *target, const char *digest,
			    const char *tmp, nv_code_layer_result *res,
			    nv_err *err)
{
	char path[4200];
	int mounted = 0, rc;

	rc = target_has(o, target, digest, res, err);
	if (rc)
		return rc < 0 ? rc : 0;
	if (same_registry(o, base, target)) {
		rc = nv_registry_blob_mount(o->target_registry,
					    target->repository, digest,
					    base->repository, &mounted, err);
		if (rc)
			return rc;
		if (mounted) {
			res->blobs_mounted++;
			return 0;
		}
	}
	/* another registry (or a declined mount): through a verified file */
	if (nv_pathf(path, sizeof(path), "%s/blob-%s", tmp, digest + 7))
		return nv_err_set(err, NV_EINVAL, NULL, "temp path too long");
	rc = nv_registry_blob_get_file(o->base_registry, base->repository,
				       digest, path, err);
	if (!rc)
		rc = nv_registry_blob_upload_file(o->target_registry,
						  target->repository, digest,
						  path, err);
	unlink(path);
	if (!rc)
		res->blobs_copied++;
	return rc;
}

/* Uploads our own blob (the file at path, or len bytes of data) unless the
 * target has it. */
static int ensure_blob(const nv_code_layer_opts *o, const nv_image_ref *target,
		       const char *digest, const char *path, const char *data,
		       size_t len, nv_code_layer_result *res, nv_err *err)
{
	int rc = target_has(o, target, digest, res, err);

	if (rc)
		return rc < 0 ? rc : 0;
	rc = path ? nv_registry_blob_upload_file(o->target_registry,
						 target->repository, digest,
						 path, err)
		  : nv_registry_blob_upload_bytes(o->target_registry,
						  target->repository, digest,
						  data, len, err);
	if (!rc)
		res->blobs_uploaded++;
	return rc;
}

static int make_tmp(const char *base, char *out, size_t cap, nv_err *err)
{
	const char *t = base && base[0] ? base : getenv("TMPDIR");

	if (!t || !t[0])
		t = "/tmp";
	if (nv_pathf(out, cap, "%s/navette-layer-XXXXXX", t))
		return nv_err_set(err, NV_EINVAL, NULL, "temp path too long");
	if (!mkdtemp(out))
		return nv_err_set_errno(err, NV_EIO, errno,
					"check TMPDIR and its free space",
					"cannot create a folder under %s", t);
	return 0;
}

/* ---- the push, step by step ---- */

/* What the steps of one push hand to each other. */
struct push {
	const nv_code_layer_opts *o;
	nv_code_layer_result *res;
	nv_image_ref base, target;
	nv_registry_image img; /* the base, pinned */
	struct prepared p;
	char tmp[4096], layer_path[4200];
	int have_tmp, layer_present, packed;
	struct layer_stream stream; /* the layer's upload while packed */
	char *config, *manifest;
	size_t config_len, manifest_len;
};

/* The options: base and target parsed, the target without a digest. */
static int push_check(struct push *s, nv_err *err)
{
	const nv_code_layer_opts *o = s->o;
	int rc;

	if (!o || !o->base || !o->target || !o->base_registry ||
	    !o->target_registry)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "code layer: base, target and their "
				  "registries are required");
	rc = nv_image_ref_parse(&s->base, o->base, err);
	if (!rc)
		rc = nv_image_ref_parse(&s->target, o->target, err);
	if (rc)
		return rc;
	if (s->target.digest[0])
		return nv_err_set(
			err, NV_EINVAL,
			"give the repository to push to, e.g. "
			"127.0.0.1:5000/team/app",
			"the target '%s' names a digest: the digest is "
			"what the push produces",
			o->target);
	return normalise_into(o->into, s->res->into, sizeof(s->res->into), err);
}

/* 3: the base, pinned to its digest for the platform. */
static int push_base(struct push *s, nv_err *err)
{
	const nv_code_layer_opts *o = s->o;
	nv_code_layer_result *res = s->res;
	char name[NV_IMAGE_NAME_MAX + 1];
	int rc;

	step(o, "base", o->base);
	rc = nv_registry_resolve(o->base_registry, s->base.repository,
				 s->base.digest[0] ? s->base.digest
						   : s->base.tag,
				 o->platform, 1, &s->img, err);
	if (!rc)
		rc = nv_image_platform_check(s->img.config.data,
					     s->img.config.len, o->platform,
					     o->base, err);
	if (rc)
		return rc;
	memcpy(res->base_digest, s->img.digest, sizeof(res->base_digest));
	nv_image_ref_name(&s->base, name, sizeof(name));
	snprintf(res->base_reference, sizeof(res->base_reference),
		 "%.255s@%.71s", name, s->img.digest);
	return 0;
}

/* 4, the layer: from the cache when the target has it, packed otherwise. */
static int push_layer(struct push *s, nv_err *err)
{
	nv_code_layer_result *res = s->res;
	char detail[600];
	int rc;

	rc = make_tmp(s->o->tmp_dir, s->tmp, sizeof(s->tmp), err);
	if (rc)
		return rc;
	s->have_tmp = 1;
	if (nv_pathf(s->layer_path, sizeof(s->layer_path), "%s/layer.tar.gz",
		     s->tmp))
		return nv_err_set(err, NV_EINVAL, NULL, "temp path too long");
	/* a layer the target already has need not be packed again */
	if (cache_load(s->o->cache_dir, res)) {
		rc = target_has(s->o, &s->target, res->layer_digest, res, err);
		if (rc < 0)
			return rc;
		s->layer_present = rc;
		if (!s->layer_present) {
			res->diff_id[0] = res->layer_digest[0] = '\0';
			memset(&res->archive, 0, sizeof(res->archive));
		}
	}
	if (s->layer_present)
		return 0;
	snprintf(detail, sizeof(detail), "%.12s into %.500s", res->commit,
		 res->into);
	step(s->o, "pack", detail);
	s->stream.registry = s->o->target_registry;
	s->stream.repository = s->target.repository;
	rc = pack_streamed(&s->p, s->layer_path, &s->stream, !s->o->check_only,
			   res, err);
	if (rc)
		return rc;
	s->packed = 1; /* cached once the scan has passed the tree */
	return 0;
}

/* 4, the config and the manifest over the base's. */
static int push_documents(struct push *s, nv_err *err)
{
	nv_code_layer_result *res = s->res;
	nv_code_layer_meta meta;
	char created_by[400], hex[65];
	int rc;

	snprintf(created_by, sizeof(created_by),
		 "navette code layer: commit %s into %.300s", res->commit,
		 res->into);
	memset(&meta, 0, sizeof(meta));
	meta.diff_id = res->diff_id;
	meta.created = res->created;
	meta.revision = res->commit;
	meta.source = res->source;
	meta.lockfile_hash = res->lockfile_hash;
	meta.into = strcmp(res->into, "/") == 0 ? NULL : res->into;
	meta.created_by = created_by;
	rc = nv_oci_code_config(s->img.config.data, s->img.config.len,
				s->img.parsed.nentries, &meta, &s->config,
				&s->config_len, err);
	if (rc)
		return rc;
	rc = nv_sha256_bytes(s->config, s->config_len, hex, err);
	if (rc)
		return rc;
	snprintf(res->config_digest, sizeof(res->config_digest), "sha256:%s",
		 hex);
	return nv_oci_code_manifest(
		s->img.manifest.body.data, s->img.manifest.body.len,
		res->config_digest, (int64_t)s->config_len, res->layer_digest,
		(int64_t)res->archive.size, NULL, s->img.digest, &s->manifest,
		&s->manifest_len, res->media_type, err);
}

/* The references the result carries, once its digest is known. */
static void push_name(struct push *s)
{
	nv_code_layer_result *res = s->res;
	char name[NV_IMAGE_NAME_MAX + 1];

	nv_image_ref_name(&s->target, name, sizeof(name));
	snprintf(res->reference, sizeof(res->reference), "%.255s@%.71s", name,
		 res->digest);
	snprintf(res->tagged, sizeof(res->tagged), "%.255s:%.128s", name,
		 res->tag);
}

/* check_only: what the push would make, exactly; nothing is sent. */
static int push_digest_only(struct push *s, nv_err *err)
{
	char hex[65];
	int rc = nv_sha256_bytes(s->manifest, s->manifest_len, hex, err);

	if (rc)
		return rc;
	snprintf(s->res->digest, sizeof(s->res->digest), "sha256:%s", hex);
	push_name(s);
	return 0;
}

/* 5: blobs, HEAD first. */
static int push_blobs(struct push *s, nv_err *err)
{
	const nv_code_layer_opts *o = s->o;
	nv_code_layer_result *res = s->res;
	char detail[600];
	uint64_t before;
	int rc = 0;

	snprintf(detail, sizeof(detail), "%s/%s", s->target.registry,
		 s->target.repository);
	step(o, "push", detail);
	before = nv_registry_stats_get(o->target_registry)->bytes_uploaded;
	for (size_t i = 0; i < s->img.parsed.nentries && !rc; i++)
		rc = ensure_base_blob(o, &s->base, &s->target,
				      s->img.parsed.entries[i].digest, s->tmp,
				      res, err);
	if (!rc && s->stream.uploaded)
		res->blobs_uploaded++; /* sent while packed */
	else if (!rc && !s->layer_present)
		rc = ensure_blob(o, &s->target, res->layer_digest,
				 s->layer_path, NULL, 0, res, err);
	if (!rc)
		rc = ensure_blob(o, &s->target, res->config_digest, NULL,
				 s->config, s->config_len, res, err);
	res->bytes_uploaded =
		nv_registry_stats_get(o->target_registry)->bytes_uploaded -
		before + s->stream.sent;
	return rc;
}

/* 6: the manifest, under the tag. */
static int push_manifest(struct push *s, nv_err *err)
{
	nv_code_layer_result *res = s->res;
	int rc;

	step(s->o, "manifest", res->tag);
	rc = nv_registry_manifest_put(s->o->target_registry,
				      s->target.repository, res->tag,
				      res->media_type, s->manifest,
				      s->manifest_len, res->digest, err);
	if (rc)
		return rc;
	push_name(s);
	return 0;
}

int nv_code_layer_push(const nv_code_layer_opts *o, nv_code_layer_result *res,
		       nv_err *err)
{
	struct scan_job scan;
	struct push s;
	int rc, scan_rc;

	memset(res, 0, sizeof(*res));
	memset(&s, 0, sizeof(s));
	memset(&scan, 0, sizeof(scan));
	s.o = o;
	s.res = res;
	rc = push_check(&s, err);
	if (rc)
		return rc;
	stream_init(&s.stream);
	scan.notify = &s.stream;

	/* 1: commit, facts */
	rc = prepare(o->repo_path, o->commit, o, &s.p, res, err);
	if (rc)
		goto out;
	if (s.target.implicit_tag)
		nv_code_layer_tag(res->commit, res->tag);
	else
		snprintf(res->tag, sizeof(res->tag), "%s", s.target.tag);
	/* 2, while 3 and 4's layer go on: nothing is sent before its verdict,
	 * which wins over their errors as when it ran first */
	step(o, "scan", res->commit);
	scan_job_start(&scan, s.p.workdir, res->commit, o->cache_dir);
	rc = push_base(&s, err);
	if (!rc)
		rc = push_layer(&s, err);
	scan_rc = scan_job_wait(&scan, err);
	res->scan_blobs_read = scan.stats.files + scan.stats.skipped_binary +
			       scan.stats.skipped_large;
	res->scan_blobs_cached = scan.stats.cached;
	if (scan_rc)
		rc = scan_rc;
	/* the sender ends its upload, or gives up when the push does */
	if (rc)
		stream_join(&s.stream, 1);
	else
		stream_finish(&s.stream, o->target_registry, res->layer_digest,
			      res->archive.size);
	if (!rc && s.packed)
		cache_store(o->cache_dir, res);
	if (!rc)
		rc = push_documents(&s, err);
	if (!rc && o->check_only)
		rc = push_digest_only(&s, err);
	else if (!rc)
		rc = push_blobs(&s, err);
	if (!rc && !o->check_only)
		rc = push_manifest(&s, err);
out:
	scan_job_wait(&scan, NULL); /* joined on every path */
	stream_dispose(&s.stream);  /* idem, the session cancelled */
	if (s.have_tmp) {
		nv_err ignored;
		nv_remove_tree(s.tmp, &ignored);
	}
	free(s.config);
	free(s.manifest);
	nv_registry_image_free(&s.img);
	nv_git_free(s.p.repo);
	return rc;
}
