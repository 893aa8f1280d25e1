/* The audit log (see audit.h): appending under flock, verifying the hash
 * chain, listing lines and mirroring the files into a file:// store.
 * Verification reads line by line with a bounded buffer and a one-line
 * lookahead, which is what lets it tell an edited line from the one after
 * it, and a swapped pair from a removed line. */
#include "audit/audit.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/clock.h"
#include "core/fault.h"
#include "core/fsutil.h"
#include "core/hex.h"
#include "storage/filestore.h"
#include "core/sha256.h"

#define AUDIT_PATH_MAX 4096
#define SMALL_FILE_MAX 4096                /* genesis.json and head */
#define SEQ_MAX        ((uint64_t)1 << 53) /* exact in a JSON number */
#define HASH_HEX       (NV_SHA256_HEX_LEN + 1)
#define HINT_VERIFY    "run `navette audit verify` to see what changed"
#define GENESIS_KIND   "navette-audit-genesis"

static nv_audit_filter_fn audit_filter;
static void *audit_filter_payload;

void nv_audit_set_filter(nv_audit_filter_fn filter, void *payload)
{
	audit_filter = filter;
	audit_filter_payload = payload;
}

void nv_audit_identity(char out[NV_AUDIT_IDENTITY_MAX])
{
	char host[256] = "localhost";
	struct passwd *pw = getpwuid(getuid());
	const char *user = pw ? pw->pw_name : getenv("USER");

	if (gethostname(host, sizeof(host) - 1) != 0)
		strcpy(host, "localhost");
	host[sizeof(host) - 1] = '\0';
	snprintf(out, NV_AUDIT_IDENTITY_MAX, "%.60s@%.255s",
		 user && *user ? user : "unknown", host);
}

/* ---- paths and files ---------------------------------------------------- */

typedef struct audit_paths {
	char dir[AUDIT_PATH_MAX];
	char log[AUDIT_PATH_MAX];
	char genesis[AUDIT_PATH_MAX];
	char head[AUDIT_PATH_MAX];
	char lock[AUDIT_PATH_MAX];
	char anchor[AUDIT_PATH_MAX]; /* outside audit/ */
} audit_paths;

static int paths_init(audit_paths *p, const char *home, nv_err *err)
{
	if (!home || !*home)
		return nv_err_set(err, NV_EINVAL, "set NAVETTE_HOME",
				  "no navette home folder for the audit log");
	if (nv_pathf(p->dir, sizeof(p->dir), "%s/audit", home) ||
	    nv_pathf(p->log, sizeof(p->log), "%s/audit.jsonl", p->dir) ||
	    nv_pathf(p->genesis, sizeof(p->genesis), "%s/genesis.json",
		     p->dir) ||
	    nv_pathf(p->head, sizeof(p->head), "%s/head", p->dir) ||
	    nv_pathf(p->lock, sizeof(p->lock), "%s/lock", p->dir) ||
	    nv_pathf(p->anchor, sizeof(p->anchor), "%s/audit.anchor", home))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "navette home path too long: %s", home);
	return 0;
}

static int file_exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* Opens and flocks the lock file; returns the fd (closing it unlocks). */
static int lock_open(const audit_paths *p, int op, nv_err *err)
{
	int fd = open(p->lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0)
		return nv_err_set_errno(err, NV_EIO, errno,
					"check the audit folder's permissions",
					"cannot open %s", p->lock);
	while (flock(fd, op) != 0) {
		if (errno == EINTR)
			continue;
		int e = errno;
		close(fd);
		return nv_err_set_errno(err, NV_EIO, e, NULL, "cannot lock %s",
					p->lock);
	}
	return fd;
}

static void fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0) {
		(void)fsync(fd); /* best effort: durability of a new name */
		close(fd);
	}
}

static int is_hex64(const char *s)
{
	return nv_hex_is_lower(s, NV_SHA256_HEX_LEN);
}

/* A JSON number that is a whole seq in 0..2^53. */
static int json_seq(const cJSON *item, uint64_t *out)
{
	double d;

	if (!cJSON_IsNumber(item))
		return -1;
	d = item->valuedouble;
	if (!(d >= 0 && d <= (double)SEQ_MAX) || d != (double)(uint64_t)d)
		return -1;
	*out = (uint64_t)d;
	return 0;
}

/* ---- genesis and head --------------------------------------------------- */

/* Reads the small record file at path into *data (the caller frees it)
 * and parses it into *doc (NULL when it is not JSON, for the caller to
 * refuse): NV_ENOTFOUND when missing, NV_EINVAL when too large. */
static int record_read(const char *path, char **data, size_t *len, cJSON **doc,
		       nv_err *err)
{
	int rc = nv_read_file(data, len, path, SMALL_FILE_MAX, err);

	if (rc)
		return rc == NV_ENOMEM ? nv_err_set(err, NV_EINVAL, NULL,
						    "%s is too large", path)
				       : rc;
	*doc = cJSON_ParseWithLength(*data, *len);
	return 0;
}

typedef struct genesis_info {
	char hash[HASH_HEX];
	char identity[NV_AUDIT_IDENTITY_MAX];
} genesis_info;

/* Reads genesis.json: NV_ENOTFOUND when missing, NV_EINVAL when it is not
 * a genesis record. */
static int genesis_read(const audit_paths *p, genesis_info *g, nv_err *err)
{
	char *data;
	size_t len;
	cJSON *doc;
	int rc = record_read(p->genesis, &data, &len, &doc, err);

	if (rc)
		return rc;
	const cJSON *kind = cJSON_GetObjectItemCaseSensitive(doc, "kind");
	const cJSON *nonce = cJSON_GetObjectItemCaseSensitive(doc, "nonce");
	const cJSON *ident = cJSON_GetObjectItemCaseSensitive(doc, "identity");

	if (!cJSON_IsObject(doc) || !cJSON_IsString(kind) ||
	    strcmp(kind->valuestring, GENESIS_KIND) != 0 ||
	    !cJSON_IsString(nonce) || strlen(nonce->valuestring) < 32 ||
	    !cJSON_IsString(ident)) {
		rc = nv_err_set(err, NV_EINVAL, HINT_VERIFY,
				"%s is not an audit genesis record",
				p->genesis);
		goto out;
	}
	snprintf(g->identity, sizeof(g->identity), "%s", ident->valuestring);
	rc = nv_sha256_bytes(data, len, g->hash, err);
out:
	cJSON_Delete(doc);
	free(data);
	return rc;
}

typedef struct head_info {
	uint64_t seq;
	char hash[HASH_HEX];
	char genesis[HASH_HEX];
} head_info;

/* Reads head: NV_ENOTFOUND when missing, NV_EINVAL when malformed. */
static int head_read(const audit_paths *p, head_info *h, nv_err *err)
{
	char *data;
	size_t len;
	cJSON *doc;
	int rc = record_read(p->head, &data, &len, &doc, err);

	if (rc)
		return rc;
	const cJSON *hash = cJSON_GetObjectItemCaseSensitive(doc, "hash");
	const cJSON *gen = cJSON_GetObjectItemCaseSensitive(doc, "genesis");

	if (!cJSON_IsObject(doc) ||
	    json_seq(cJSON_GetObjectItemCaseSensitive(doc, "seq"), &h->seq) ||
	    !cJSON_IsString(hash) || !is_hex64(hash->valuestring) ||
	    !cJSON_IsString(gen) || !is_hex64(gen->valuestring)) {
		rc = nv_err_set(err, NV_EINVAL, HINT_VERIFY,
				"%s is not an audit head record", p->head);
	} else {
		memcpy(h->hash, hash->valuestring, HASH_HEX);
		memcpy(h->genesis, gen->valuestring, HASH_HEX);
	}
	cJSON_Delete(doc);
	free(data);
	return rc;
}

static int head_write(const audit_paths *p, uint64_t seq, const char *hash,
		      const char *genesis, nv_err *err)
{
	char text[256];
	int n = snprintf(text, sizeof(text),
			 "{\"seq\":%" PRIu64
			 ",\"hash\":\"%s\",\"genesis\":\"%s\"}\n",
			 seq, hash, genesis);

	return nv_write_file_atomic(p->head, text, (size_t)n, 0600, err);
}

/* Writes genesis.json and a head at seq 0. Called under the lock. */
static int genesis_create(const audit_paths *p, nv_err *err)
{
	char nonce[33], when[32], ident[NV_AUDIT_IDENTITY_MAX];
	genesis_info g;
	int rc;

	if ((rc = nv_random_hex(nonce, 16, err)))
		return rc;
	nv_iso8601(nv_now(), when);
	nv_audit_identity(ident);

	cJSON *doc = cJSON_CreateObject();
	char *text = NULL;
	if (!doc || !cJSON_AddStringToObject(doc, "kind", GENESIS_KIND) ||
	    !cJSON_AddNumberToObject(doc, "version", 1) ||
	    !cJSON_AddStringToObject(doc, "nonce", nonce) ||
	    !cJSON_AddStringToObject(doc, "created", when) ||
	    !cJSON_AddStringToObject(doc, "identity", ident) ||
	    !(text = cJSON_PrintUnformatted(doc))) {
		rc = nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
		goto out;
	}
	size_t len = strlen(text);
	char *line = malloc(len + 2);
	if (!line) {
		rc = nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
		goto out;
	}
	memcpy(line, text, len);
	line[len] = '\n';
	rc = nv_write_file_atomic(p->genesis, line, len + 1, 0600, err);
	free(line);
	if (rc)
		goto out;
	if ((rc = genesis_read(p, &g, err)))
		goto out;
	rc = head_write(p, 0, g.hash, g.hash, err);
	fsync_dir(p->dir);
out:
	cJSON_free(text);
	cJSON_Delete(doc);
	return rc;
}

/* ---- the anchor ---------------------------------------------------------- */

/* HOME/audit.anchor, outside audit/: the genesis of this home's chain, so
 * that deleting or emptying the folder is seen (verify names it, an append
 * refuses to start a new chain over it) instead of looking like a home
 * that never had a log. */
typedef struct anchor_info {
	char genesis[HASH_HEX];
	char identity[NV_AUDIT_IDENTITY_MAX];
} anchor_info;

static void key_segment(char *out, size_t cap, const char *identity);

/* NV_ENOTFOUND when missing, NV_EINVAL when it is not an anchor. */
static int anchor_read(const audit_paths *p, anchor_info *a, nv_err *err)
{
	char *data;
	size_t len;
	cJSON *doc;
	int rc = record_read(p->anchor, &data, &len, &doc, err);

	if (rc)
		return rc;
	const cJSON *gen = cJSON_GetObjectItemCaseSensitive(doc, "genesis");
	const cJSON *ident = cJSON_GetObjectItemCaseSensitive(doc, "identity");

	if (!cJSON_IsString(gen) || !is_hex64(gen->valuestring) ||
	    !cJSON_IsString(ident)) {
		rc = nv_err_set(err, NV_EINVAL, HINT_VERIFY,
				"%s is not an audit anchor record", p->anchor);
	} else {
		memcpy(a->genesis, gen->valuestring, HASH_HEX);
		snprintf(a->identity, sizeof(a->identity), "%s",
			 ident->valuestring);
	}
	cJSON_Delete(doc);
	free(data);
	return rc;
}

static int anchor_write(const audit_paths *p, const genesis_info *g,
			nv_err *err)
{
	cJSON *doc = cJSON_CreateObject();
	char *text = NULL;
	int rc;

	if (!doc || !cJSON_AddStringToObject(doc, "genesis", g->hash) ||
	    !cJSON_AddStringToObject(doc, "identity", g->identity) ||
	    !(text = cJSON_PrintUnformatted(doc))) {
		cJSON_Delete(doc);
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	}
	rc = nv_write_file_atomic(p->anchor, text, strlen(text), 0600, err);
	cJSON_free(text);
	cJSON_Delete(doc);
	return rc;
}

#define ANCHOR_GONE_FMT                                                        \
	"the audit folder %s is gone or empty, but %s records the chain "      \
	"that began with genesis %.12s: its lines were deleted"
#define ANCHOR_GONE_HINT_FMT                                                   \
	"restore genesis.json, audit.jsonl and head into "                     \
	"NAVETTE_HOME/audit/ from the mirror _audit/%s/ in the profile's "     \
	"store; or, to start a new chain (the old one is then not proven "     \
	"here), move NAVETTE_HOME/audit.anchor aside"

static int folder_gone(const audit_paths *p, const anchor_info *a, nv_err *err)
{
	char segment[160], hint[NV_ERR_HINT_MAX];

	key_segment(segment, sizeof(segment), a->identity);
	snprintf(hint, sizeof(hint), ANCHOR_GONE_HINT_FMT, segment);
	return nv_err_set(err, NV_EREFUSED, hint, ANCHOR_GONE_FMT, p->dir,
			  p->anchor, a->genesis);
}

/* ---- reading the last line ---------------------------------------------- */

typedef struct last_line {
	uint64_t seq; /* 0: the log is empty */
	char hash[HASH_HEX];
} last_line;

/* Reads the last line of the log's first size bytes. When they end with
 * a partial line (bytes after the last newline), *whole (may be NULL: then
 * that is refused) gets where it starts and the line before it is read;
 * otherwise *whole is size. */
static int read_last_line(int fd, const audit_paths *p, off_t file_size,
			  last_line *last, off_t *whole, nv_err *err)
{
	char *buf = NULL;
	int rc = 0;

	last->seq = 0;
	if (whole)
		*whole = file_size;
	if (file_size == 0)
		return 0;
	/* the last line, its newline, and the newline before it */
	size_t size = (size_t)file_size;
	size_t window =
		size < NV_AUDIT_LINE_MAX + 2 ? size : NV_AUDIT_LINE_MAX + 2;
	off_t from = (off_t)(size - window);

	buf = malloc(window);
	if (!buf)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	size_t got = 0;
	while (got < window) {
		ssize_t n =
			pread(fd, buf + got, window - got, from + (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = nv_err_set_errno(err, NV_EIO, n < 0 ? errno : EIO,
					      NULL, "cannot read %s", p->log);
			goto out;
		}
		got += (size_t)n;
	}
	if (buf[window - 1] != '\n') {
		size_t cut = window;
		while (cut > 0 && buf[cut - 1] != '\n')
			cut--;
		if (!whole || (cut == 0 && from != 0)) {
			rc = nv_err_set(err, NV_EREFUSED, HINT_VERIFY,
					"the audit log ends with a partial "
					"line");
			goto out;
		}
		free(buf);
		rc = read_last_line(fd, p, from + (off_t)cut, last, NULL, err);
		*whole = from + (off_t)cut;
		return rc;
	}
	size_t start = window - 1;
	while (start > 0 && buf[start - 1] != '\n')
		start--;
	if (start == 0 && from != 0) {
		rc = nv_err_set(err, NV_EREFUSED, HINT_VERIFY,
				"the last audit line is longer than %d bytes",
				NV_AUDIT_LINE_MAX);
		goto out;
	}
	size_t len = window - 1 - start;
	cJSON *doc = cJSON_ParseWithLength(buf + start, len);
	if (!cJSON_IsObject(doc) ||
	    json_seq(cJSON_GetObjectItemCaseSensitive(doc, "seq"),
		     &last->seq) ||
	    last->seq == 0) {
		cJSON_Delete(doc);
		last->seq = 0;
		rc = nv_err_set(err, NV_EREFUSED, HINT_VERIFY,
				"the last audit line is not a valid record");
		goto out;
	}
	cJSON_Delete(doc);
	rc = nv_sha256_bytes(buf + start, len, last->hash, err);
out:
	free(buf);
	return rc;
}

/* ---- building a line ---------------------------------------------------- */

/* Copies at most max bytes of s into out (cap > max), at a UTF-8 boundary,
 * with each byte that is not part of valid UTF-8 replaced by '?', so the
 * JSON stays valid UTF-8 whatever the caller passed. */
static void copy_bounded(char *out, size_t cap, const char *s, size_t max)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, o = 0;

	if (max >= cap)
		max = cap - 1;
	while (u[i] && o < max) {
		size_t n = u[i] < 0x80             ? 1
			   : (u[i] & 0xE0) == 0xC0 ? 2
			   : (u[i] & 0xF0) == 0xE0 ? 3
			   : (u[i] & 0xF8) == 0xF0 ? 4
						   : 0;
		size_t k;

		for (k = 1; k < n; k++)
			if ((u[i + k] & 0xC0) != 0x80)
				break;
		if (n == 0 || k < n || (n == 2 && u[i] < 0xC2)) {
			out[o++] = '?';
			i++;
			continue;
		}
		if (o + n > max)
			break;
		memcpy(out + o, s + i, n);
		o += n;
		i += n;
	}
	out[o] = '\0';
}

/* Adds key: the bounded string, or null when s is NULL. */
static int add_string(cJSON *doc, const char *key, const char *s, size_t max)
{
	char value[NV_AUDIT_VALUE_MAX + 1];

	if (!s)
		return cJSON_AddNullToObject(doc, key) ? 0 : -1;
	copy_bounded(value, sizeof(value), s, max);
	return cJSON_AddStringToObject(doc, key, value) ? 0 : -1;
}

/* The line for entry at seq, chained to prev, in a malloc'd string. */
static int build_line(char **out, const nv_audit_entry *e, uint64_t seq,
		      const char *prev, nv_err *err)
{
	char when[32], ident[NV_AUDIT_IDENTITY_MAX];
	cJSON *doc = cJSON_CreateObject();
	int bad = !doc;

	*out = NULL;
	nv_iso8601(nv_now(), when);
	if (!e->identity)
		nv_audit_identity(ident);
	bad = bad || !cJSON_AddNumberToObject(doc, "seq", (double)seq);
	bad = bad || !cJSON_AddStringToObject(doc, "time", when);
	bad = bad ||
	      add_string(doc, "identity", e->identity ? e->identity : ident,
			 NV_AUDIT_NAME_MAX);
	bad = bad ||
	      add_string(doc, "credential", e->credential, NV_AUDIT_NAME_MAX);
	bad = bad || add_string(doc, "profile", e->profile, NV_AUDIT_NAME_MAX);
	bad = bad || add_string(doc, "action", e->action, NV_AUDIT_NAME_MAX);
	bad = bad || add_string(doc, "target", e->target, NV_AUDIT_VALUE_MAX);
	bad = bad || add_string(doc, "job", e->job, NV_AUDIT_NAME_MAX);
	bad = bad || add_string(doc, "commit", e->commit, NV_AUDIT_NAME_MAX);
	bad = bad || add_string(doc, "result", e->result, NV_AUDIT_NAME_MAX);
	if (e->detail)
		bad = bad ||
		      add_string(doc, "detail", e->detail, NV_AUDIT_VALUE_MAX);
	bad = bad || !cJSON_AddStringToObject(doc, "prev", prev);
	if (!bad)
		*out = cJSON_PrintUnformatted(doc);
	cJSON_Delete(doc);
	if (!*out)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	return 0;
}

/* Runs the filter, then checks that what it kept is still the same record
 * (one JSON object, same seq and prev, no newline, bounded). */
static int apply_filter(const char *line, nv_buf *out, uint64_t seq,
			const char *prev, nv_err *err)
{
	int rc;

	if (!audit_filter)
		return nv_buf_puts(out, line) ? nv_err_set(err, NV_ENOMEM, NULL,
							   "audit line too "
							   "long")
					      : 0;
	rc = audit_filter(line, strlen(line), out, audit_filter_payload);
	if (rc)
		return nv_err_set(err, rc < 0 ? rc : NV_EREFUSED, NULL,
				  "the audit filter refused the line");
	if (out->failed || out->len == 0 || memchr(out->data, '\n', out->len) ||
	    memchr(out->data, '\0', out->len))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "the audit filter returned a bad line");
	cJSON *doc = cJSON_ParseWithLength(out->data, out->len);
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(doc, "prev");
	uint64_t s = 0;
	int same =
		cJSON_IsObject(doc) &&
		!json_seq(cJSON_GetObjectItemCaseSensitive(doc, "seq"), &s) &&
		s == seq && cJSON_IsString(p) &&
		strcmp(p->valuestring, prev) == 0;
	cJSON_Delete(doc);
	if (!same)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "the audit filter changed the record's "
				  "shape, seq or prev");
	return 0;
}

static int check_entry(const nv_audit_entry *e, nv_err *err)
{
	if (!e || !e->action || !*e->action)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "an audit entry needs an action");
	if (!e->result || (strcmp(e->result, "ok") != 0 &&
			   strcmp(e->result, "refused") != 0 &&
			   strcmp(e->result, "failed") != 0))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "audit result must be ok, refused or failed, "
				  "not '%s'",
				  e->result ? e->result : "(none)");
	return 0;
}

/* ---- append ------------------------------------------------------------- */

/* An append in progress: the log locked and open, its last line and
 * genesis read and checked against the head record. */
typedef struct appender {
	audit_paths p;
	genesis_info g;
	last_line last; /* the last line written, this append's included */
	off_t size;     /* the log's length, up to the end of that line */
	int lock_fd, log_fd;
} appender;

static int append_begin(appender *a, const char *home, nv_err *err)
{
	head_info h;
	anchor_info anchor;
	struct stat st;
	off_t whole;
	nv_err local;
	int rc, anchored;

	a->lock_fd = a->log_fd = -1;
	if ((rc = paths_init(&a->p, home, err)) ||
	    (rc = nv_mkdir_p(a->p.dir, 0700, err)))
		return rc;
	if ((a->lock_fd = lock_open(&a->p, LOCK_EX, err)) < 0)
		return a->lock_fd;
	a->log_fd = open(a->p.log,
			 O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
			 0600);
	if (a->log_fd < 0)
		return nv_err_set_errno(err, NV_EIO, errno, NULL,
					"cannot open %s", a->p.log);
	if (fstat(a->log_fd, &st) != 0)
		return nv_err_set_errno(err, NV_EIO, errno, NULL,
					"cannot stat %s", a->p.log);
	if ((rc = read_last_line(a->log_fd, &a->p, st.st_size, &a->last, &whole,
				 err)))
		return rc;
	anchored = anchor_read(&a->p, &anchor, &local);
	if (anchored != 0 && anchored != NV_ENOTFOUND)
		return nv_err_set(err, NV_EREFUSED, HINT_VERIFY, "%s",
				  local.message);
	rc = genesis_read(&a->p, &a->g, &local);
	if (rc == NV_ENOTFOUND && st.st_size == 0 && !file_exists(a->p.head)) {
		/* a new chain, unless this home had one: then audit/ was
		 * deleted or emptied, and a new chain would hide that */
		if (anchored == 0)
			return folder_gone(&a->p, &anchor, err);
		if ((rc = genesis_create(&a->p, err)) ||
		    (rc = genesis_read(&a->p, &a->g, err)))
			return rc;
	} else if (rc) {
		return nv_err_set(err, NV_EREFUSED, HINT_VERIFY,
				  "the audit genesis record is missing or "
				  "damaged: %s",
				  local.message);
	}
	if (anchored == 0 && strcmp(anchor.genesis, a->g.hash) != 0)
		return nv_err_set(err, NV_EREFUSED, HINT_VERIFY,
				  "audit/genesis.json is not the genesis that "
				  "%s records: the audit log was replaced",
				  a->p.anchor);
	/* Never let an append paper over a cut or a replaced genesis. */
	if (head_read(&a->p, &h, err))
		return nv_err_set(err, NV_EREFUSED, HINT_VERIFY,
				  "the audit head record is missing or "
				  "damaged");
	if (strcmp(h.genesis, a->g.hash) != 0 || h.seq > a->last.seq ||
	    (h.seq == a->last.seq && a->last.seq > 0 &&
	     strcmp(h.hash, a->last.hash) != 0))
		return nv_err_set(err, NV_EREFUSED, HINT_VERIFY,
				  "the audit log does not match its head "
				  "record (log at seq %" PRIu64
				  ", head at %" PRIu64 ")",
				  a->last.seq, h.seq);
	/* (a home of an earlier navette gets its anchor now; on a full
	 * disk, at a later append) */
	if (anchored == NV_ENOTFOUND)
		(void)anchor_write(&a->p, &a->g, NULL);
	/* Bytes after the last whole line, which head does not record: an
	 * append that failed part way (a full disk) or was killed. Never part
	 * of the chain, so cut back before the next line. */
	if (whole < st.st_size &&
	    (ftruncate(a->log_fd, whole) != 0 || nv_fsync_durable(a->log_fd)))
		return nv_err_set_errno(
			err, NV_EIO, errno, "check free disk space",
			"cannot cut the partial line at the end "
			"of %s",
			a->p.log);
	a->size = whole;
	return 0;
}

/* Writes one line after the last (not yet synced). */
static int append_line(appender *a, const nv_audit_entry *entry,
		       uint64_t *seq_out, nv_err *err)
{
	nv_buf line;
	char *json = NULL;
	uint64_t seq = a->last.seq + 1;
	const char *prev = a->last.seq ? a->last.hash : a->g.hash;
	char hash[HASH_HEX];
	int rc;

	if (a->last.seq >= SEQ_MAX)
		return nv_err_set(err, NV_EREFUSED, NULL, "audit log is full");
	nv_buf_init(&line, NV_AUDIT_LINE_MAX + 1);
	if ((rc = check_entry(entry, err)) ||
	    (rc = build_line(&json, entry, seq, prev, err)) ||
	    (rc = apply_filter(json, &line, seq, prev, err)))
		goto out;
	if (line.len > NV_AUDIT_LINE_MAX) {
		rc = nv_err_set(err, NV_ENOMEM, NULL, "audit line too long");
		goto out;
	}
	if ((rc = nv_sha256_bytes(line.data, line.len, hash, err)))
		goto out;
	/* one write, so a reader never sees half of a line */
	line.data[line.len] = '\n';
	if (nv_fault_selected("audit-half-line", entry->action)) {
		(void)nv_write_all(a->log_fd, line.data, (line.len + 1) / 2);
		nv_fault_point("audit-half-line", entry->action);
	}
	if (nv_write_all(a->log_fd, line.data, line.len + 1) != 0) {
		int e = errno;
		/* a full disk may take part of the line: cut it back, so the
		 * chain stays whole and the next append goes on from it */
		int cut = ftruncate(a->log_fd, a->size);
		rc = nv_err_set_errno(err, NV_EIO, e, "check free disk space",
				      "cannot append to %s%s", a->p.log,
				      cut == 0 ? ""
					       : " (its partial line "
						 "is cut at the next "
						 "append)");
		goto out;
	}
	a->size += (off_t)line.len + 1;
	a->last.seq = seq;
	memcpy(a->last.hash, hash, HASH_HEX);
	if (seq_out)
		*seq_out = seq;
out:
	cJSON_free(json);
	nv_buf_free(&line);
	return rc;
}

/* Syncs what was written (written: its first seq, 0 when nothing was),
 * moves the head record to it, and unlocks. */
static int append_end(appender *a, uint64_t first, int rc, nv_err *err)
{
	if (first && fsync(a->log_fd) != 0 && rc == 0)
		rc = nv_err_set_errno(err, NV_EIO, errno,
				      "check free disk space",
				      "cannot append to %s", a->p.log);
	if (first == 1)
		fsync_dir(a->p.dir);
	/* A failure here leaves head behind, which verify accepts and the
	 * next append repairs: the lines themselves are recorded. */
	if (first)
		(void)head_write(&a->p, a->last.seq, a->last.hash, a->g.hash,
				 NULL);
	if (a->log_fd >= 0)
		close(a->log_fd);
	if (a->lock_fd >= 0)
		close(a->lock_fd);
	return rc;
}

int nv_audit_append(const char *home, const nv_audit_entry *entry,
		    uint64_t *seq_out, nv_err *err)
{
	return nv_audit_append_many(home, entry, 1, seq_out, err);
}

int nv_audit_append_many(const char *home, const nv_audit_entry *entries,
			 size_t n, uint64_t *first_seq, nv_err *err)
{
	appender a;
	uint64_t first = 0, seq = 0;
	int rc = 0;

	for (size_t i = 0; i < n && rc == 0; i++)
		rc = check_entry(&entries[i], err);
	if (rc)
		return rc;
	if ((rc = append_begin(&a, home, err)) != 0)
		return append_end(&a, 0, rc, err);
	for (size_t i = 0; i < n && rc == 0; i++) {
		rc = append_line(&a, &entries[i], &seq, err);
		if (rc == 0 && !first)
			first = seq;
	}
	rc = append_end(&a, first, rc, err);
	if (rc == 0 && first_seq)
		*first_seq = first;
	return rc;
}

/* ---- reading lines ------------------------------------------------------ */

enum read_status {
	READ_EOF,
	READ_LINE,    /* a line ending with a newline */
	READ_PARTIAL, /* the last bytes, with no newline */
	READ_TOO_LONG,
	READ_ERROR
};

typedef struct line_reader {
	FILE *file;
	char *buf; /* NV_AUDIT_LINE_MAX + 1 bytes */
	size_t len;
} line_reader;

static enum read_status reader_next(line_reader *r)
{
	int c;

	r->len = 0;
	while ((c = getc_unlocked(r->file)) != EOF) {
		if (c == '\n') {
			r->buf[r->len] = '\0';
			return READ_LINE;
		}
		if (r->len == NV_AUDIT_LINE_MAX)
			return READ_TOO_LONG;
		r->buf[r->len++] = (char)c;
	}
	r->buf[r->len] = '\0';
	if (ferror(r->file))
		return READ_ERROR;
	return r->len ? READ_PARTIAL : READ_EOF;
}

/* Opens the log for reading; a missing log leaves r->file NULL. */
static int reader_open(line_reader *r, const char *path, nv_err *err)
{
	r->len = 0;
	r->buf = NULL;
	r->file = fopen(path, "rbe");
	if (!r->file)
		return errno == ENOENT
			       ? 0
			       : nv_err_set_errno(err, NV_EIO, errno, NULL,
						  "cannot open %s", path);
	r->buf = malloc(NV_AUDIT_LINE_MAX + 1);
	if (!r->buf) {
		fclose(r->file);
		r->file = NULL;
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	}
	return 0;
}

static void reader_close(line_reader *r)
{
	if (r->file)
		fclose(r->file);
	free(r->buf);
	r->file = NULL;
	r->buf = NULL;
}

/* ---- verify ------------------------------------------------------------- */

enum line_state {
	LINE_OK,
	LINE_PARTIAL,
	LINE_TOO_LONG,
	LINE_EMPTY,
	LINE_NOT_JSON,
	LINE_BAD_SHAPE
};

typedef struct checked_line {
	int present;
	enum line_state state;
	uint64_t seq;
	char prev[HASH_HEX];
	char hash[HASH_HEX];
} checked_line;

static int nullable_string(const cJSON *doc, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, key);

	return cJSON_IsString(v) || cJSON_IsNull(v);
}

static void check_record(checked_line *c, const char *text, size_t len)
{
	static const char *const required[] = {"time", "identity", "action",
					       "result"};
	static const char *const nullable[] = {"credential", "profile",
					       "target", "job", "commit"};
	cJSON *doc = cJSON_ParseWithLength(text, len);
	const cJSON *prev = cJSON_GetObjectItemCaseSensitive(doc, "prev");

	c->state = LINE_OK;
	if (!cJSON_IsObject(doc)) {
		c->state = LINE_NOT_JSON;
		goto out;
	}
	if (json_seq(cJSON_GetObjectItemCaseSensitive(doc, "seq"), &c->seq) ||
	    c->seq == 0 || !cJSON_IsString(prev) ||
	    !is_hex64(prev->valuestring)) {
		c->state = LINE_BAD_SHAPE;
		goto out;
	}
	memcpy(c->prev, prev->valuestring, HASH_HEX);
	for (size_t i = 0; i < sizeof(required) / sizeof(*required); i++)
		if (!cJSON_IsString(
			    cJSON_GetObjectItemCaseSensitive(doc, required[i])))
			c->state = LINE_BAD_SHAPE;
	for (size_t i = 0; i < sizeof(nullable) / sizeof(*nullable); i++)
		if (!nullable_string(doc, nullable[i]))
			c->state = LINE_BAD_SHAPE;
out:
	cJSON_Delete(doc);
}

/* Reads and checks the next line into c; I/O errors are returned. */
static int next_checked(line_reader *r, checked_line *c, const char *path,
			nv_err *err)
{
	memset(c, 0, sizeof(*c));
	if (!r->file)
		return 0;
	switch (reader_next(r)) {
	case READ_EOF: return 0;
	case READ_ERROR:
		return nv_err_set(err, NV_EIO, NULL, "cannot read %s", path);
	case READ_TOO_LONG:
		c->present = 1;
		c->state = LINE_TOO_LONG;
		return 0;
	case READ_PARTIAL:
		c->present = 1;
		c->state = LINE_PARTIAL;
		return 0;
	case READ_LINE: break;
	}
	c->present = 1;
	if (r->len == 0) {
		c->state = LINE_EMPTY;
		return 0;
	}
	if (nv_sha256_bytes(r->buf, r->len, c->hash, err))
		return err ? err->code : NV_EIO;
	check_record(c, r->buf, r->len);
	return 0;
}

static void report_set(nv_audit_report *out, const char *kind, uint64_t line,
		       const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 4, 5)))
#endif
	;

static void report_set(nv_audit_report *out, const char *kind, uint64_t line,
		       const char *fmt, ...)
{
	va_list ap;

	out->ok = 0;
	out->line = line;
	snprintf(out->kind, sizeof(out->kind), "%s", kind);
	va_start(ap, fmt);
	vsnprintf(out->message, sizeof(out->message), fmt, ap);
	va_end(ap);
}

/* Walks the lines; stops at the first problem (out->ok becomes 0). */
static int verify_lines(line_reader *r, const audit_paths *p,
			const char *genesis_hash, const head_info *head,
			nv_audit_report *out, nv_err *err)
{
	checked_line cur, next;
	char prev_hash[HASH_HEX];
	uint64_t prev_seq = 0, no = 0;
	int rc;

	memcpy(prev_hash, genesis_hash, HASH_HEX);
	if ((rc = next_checked(r, &next, p->log, err)))
		return rc;
	while (next.present) {
		cur = next;
		no++;
		if ((rc = next_checked(r, &next, p->log, err)))
			return rc;
		switch (cur.state) {
		case LINE_OK: break;
		case LINE_PARTIAL:
			report_set(out, "truncated", no,
				   "line %" PRIu64 " is cut short (no newline "
				   "at the end of the log)",
				   no);
			return 0;
		case LINE_NOT_JSON:
			report_set(out, "edited", no,
				   "line %" PRIu64 " is not valid JSON", no);
			return 0;
		case LINE_TOO_LONG:
		case LINE_EMPTY:
		case LINE_BAD_SHAPE:
			report_set(out, "malformed", no,
				   "line %" PRIu64 " is %s", no,
				   cur.state == LINE_EMPTY ? "empty"
				   : cur.state == LINE_TOO_LONG
					   ? "too long"
					   : "not an audit record");
			return 0;
		}
		if (cur.seq <= prev_seq) {
			report_set(out, "reordered", no,
				   "line %" PRIu64 " has seq %" PRIu64
				   " after seq %" PRIu64,
				   no, cur.seq, prev_seq);
			return 0;
		}
		if (cur.seq > prev_seq + 1) {
			/* the missing seq right after: a swapped pair */
			if (next.present && next.state == LINE_OK &&
			    next.seq == prev_seq + 1)
				report_set(out, "reordered", no,
					   "line %" PRIu64 " has seq %" PRIu64
					   " before seq %" PRIu64,
					   no, cur.seq, next.seq);
			else
				report_set(out, "removed", no,
					   "seq jumps from %" PRIu64
					   " to %" PRIu64 " at line %" PRIu64
					   ": %" PRIu64 " line(s) removed",
					   prev_seq, cur.seq, no,
					   cur.seq - prev_seq - 1);
			return 0;
		}
		if (strcmp(cur.prev, prev_hash) != 0) {
			/* Either the line before changed, or this line's own
			 * bytes did: what the following line (or head)
			 * recorded for this one tells which. */
			const char *recorded = NULL;
			if (next.present && next.state == LINE_OK)
				recorded = next.prev;
			else if (!next.present && head && head->seq == cur.seq)
				recorded = head->hash;
			int intact = recorded && !strcmp(recorded, cur.hash);
			if (no == 1 && intact)
				report_set(out, "genesis", 0,
					   "line 1 does not chain to "
					   "genesis.json: the genesis record "
					   "was replaced or edited");
			else if (intact)
				report_set(out, "edited", no - 1,
					   "line %" PRIu64 " does not match "
					   "the hash line %" PRIu64
					   " recorded for it",
					   no - 1, no);
			else
				report_set(out, "edited", no,
					   "line %" PRIu64 " does not chain "
					   "to the line before it",
					   no);
			return 0;
		}
		if (head && cur.seq == head->seq &&
		    strcmp(cur.hash, head->hash) != 0) {
			report_set(out, "edited", no,
				   "line %" PRIu64 " does not match the hash "
				   "recorded in audit/head",
				   no);
			return 0;
		}
		memcpy(prev_hash, cur.hash, HASH_HEX);
		prev_seq = cur.seq;
		out->lines = no;
		out->last_seq = cur.seq;
	}
	if (!head) {
		report_set(out, "truncated", no + 1,
			   "audit/head is missing, so lines cut off the end "
			   "cannot be ruled out");
		return 0;
	}
	if (prev_seq < head->seq)
		report_set(out, "truncated", no + 1,
			   "the log ends at seq %" PRIu64
			   " but audit/head records seq %" PRIu64
			   ": lines were cut off the end",
			   prev_seq, head->seq);
	return 0;
}

int nv_audit_verify(const char *home, nv_audit_report *out, nv_err *err)
{
	audit_paths p;
	genesis_info g;
	head_info h;
	line_reader r;
	nv_err local;
	int rc, have_head;

	memset(out, 0, sizeof(*out));
	out->ok = 1;
	if ((rc = paths_init(&p, home, err)))
		return rc;
	if ((rc = reader_open(&r, p.log, err)))
		return rc;

	anchor_info anchor;
	int anchored = anchor_read(&p, &anchor, &local);
	if (anchored == NV_EINVAL) {
		report_set(out, "malformed", 0, "%s", local.message);
		goto out;
	}
	rc = genesis_read(&p, &g, &local);
	if (rc == NV_ENOTFOUND) {
		struct stat st;
		int empty = !r.file || (fstat(fileno(r.file), &st) == 0 &&
					st.st_size == 0);
		rc = 0;
		if (!empty || file_exists(p.head)) {
			report_set(out, "genesis", 0,
				   "audit/genesis.json is missing");
		} else if (anchored == 0) {
			char segment[160];
			key_segment(segment, sizeof(segment), anchor.identity);
			report_set(out, "removed", 0, ANCHOR_GONE_FMT, p.dir,
				   p.anchor, anchor.genesis);
			snprintf(out->hint, sizeof(out->hint),
				 ANCHOR_GONE_HINT_FMT, segment);
		}
		goto out;
	}
	if (rc == NV_EINVAL) {
		rc = 0;
		report_set(out, "genesis", 0, "%s", local.message);
		goto out;
	}
	if (rc) {
		if (err)
			*err = local;
		goto out;
	}

	rc = head_read(&p, &h, &local);
	have_head = rc == 0;
	if (rc == NV_EINVAL) {
		rc = 0;
		report_set(out, "malformed", 0, "%s", local.message);
		goto out;
	}
	if (rc && rc != NV_ENOTFOUND) {
		if (err)
			*err = local;
		goto out;
	}
	rc = 0;
	if (anchored == 0 && strcmp(anchor.genesis, g.hash) != 0) {
		report_set(out, "genesis", 0,
			   "audit/genesis.json is not the genesis that %s "
			   "records: the audit log was replaced",
			   p.anchor);
		goto out;
	}
	if (have_head && strcmp(h.genesis, g.hash) != 0) {
		report_set(out, "genesis", 0,
			   "audit/genesis.json does not match the genesis "
			   "hash recorded in audit/head");
		goto out;
	}
	rc = verify_lines(&r, &p, g.hash, have_head ? &h : NULL, out, err);
out:
	reader_close(&r);
	return rc;
}

/* ---- each --------------------------------------------------------------- */

static int job_matches(const char *line, size_t len, const char *job)
{
	cJSON *doc = cJSON_ParseWithLength(line, len);
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, "job");
	int match = cJSON_IsString(v) && strcmp(v->valuestring, job) == 0;

	cJSON_Delete(doc);
	return match;
}

int nv_audit_each(const char *home, const char *job, nv_audit_line_cb cb,
		  void *payload, nv_err *err)
{
	audit_paths p;
	line_reader r;
	uint64_t no = 0;
	int rc;

	if ((rc = paths_init(&p, home, err)) ||
	    (rc = reader_open(&r, p.log, err)))
		return rc;
	while (r.file) {
		enum read_status s = reader_next(&r);
		if (s == READ_EOF)
			break;
		if (s == READ_ERROR || s == READ_TOO_LONG) {
			rc = s == READ_ERROR
				     ? nv_err_set(err, NV_EIO, NULL,
						  "cannot read %s", p.log)
				     : nv_err_set(err, NV_EINVAL, HINT_VERIFY,
						  "line %" PRIu64
						  " of %s is too long",
						  no + 1, p.log);
			break;
		}
		no++;
		if (job && !job_matches(r.buf, r.len, job))
			continue;
		if ((rc = cb(r.buf, r.len, no, payload)))
			break;
	}
	reader_close(&r);
	return rc;
}

/* ---- mirror ------------------------------------------------------------- */

/* A key segment from identity: [A-Za-z0-9._@-], others become '_'. */
static void key_segment(char *out, size_t cap, const char *identity)
{
	size_t o = 0;

	for (const char *s = identity; *s && o + 1 < cap && o < 128; s++) {
		char c = *s;
		int keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			   (c >= '0' && c <= '9') || c == '.' || c == '_' ||
			   c == '@' || c == '-';
		out[o] = keep && !(o == 0 && c == '.') ? c : '_';
		o++;
	}
	out[o] = '\0';
	if (o == 0)
		snprintf(out, cap, "unknown");
}

int nv_audit_mirror_prefix(const char *home, char *out, size_t cap, nv_err *err)
{
	audit_paths p;
	genesis_info g;
	char segment[160];
	int rc;

	if ((rc = paths_init(&p, home, err)) ||
	    (rc = genesis_read(&p, &g, err)))
		return rc;
	key_segment(segment, sizeof(segment), g.identity);
	if (nv_pathf(out, cap, "_audit/%s", segment))
		return nv_err_set(err, NV_EINVAL, NULL, "buffer too small");
	return 0;
}

#define MIRROR_KEPT_HINT                                                       \
	"if this home's audit folder was deleted or cut, restore it from "     \
	"that mirror (genesis.json, audit.jsonl and head into "                \
	"NAVETTE_HOME/audit/); if "                                            \
	"this home's chain is meant to replace it, move the mirror aside "     \
	"in the store first"

int nv_audit_mirror_check(const char *home, const char *head_text, size_t len,
			  nv_err *err)
{
	audit_paths p;
	head_info ours;
	uint64_t seq = 0;
	int rc;

	if ((rc = paths_init(&p, home, err)))
		return rc;
	if (!head_text)
		return 0;
	if ((rc = head_read(&p, &ours, err)))
		return nv_err_set(err, NV_EREFUSED, HINT_VERIFY,
				  "the store's audit mirror is left as it "
				  "is: this home's audit head cannot be "
				  "read");
	cJSON *doc = cJSON_ParseWithLength(head_text, len);
	const cJSON *gen = cJSON_GetObjectItemCaseSensitive(doc, "genesis");

	if (!cJSON_IsObject(doc) ||
	    json_seq(cJSON_GetObjectItemCaseSensitive(doc, "seq"), &seq) ||
	    !cJSON_IsString(gen) || !is_hex64(gen->valuestring))
		rc = nv_err_set(err, NV_EREFUSED,
				"check the mirror's head record in the store",
				"the store's audit mirror is left as it is: "
				"its head record is not one navette writes");
	else if (strcmp(gen->valuestring, ours.genesis) != 0)
		rc = nv_err_set(
			err, NV_EREFUSED, MIRROR_KEPT_HINT,
			"the store's audit mirror is left as it is: "
			"it holds another chain (genesis %.12s, %" PRIu64
			" lines) than this home's (genesis %.12s, %" PRIu64
			" lines)",
			gen->valuestring, seq, ours.genesis, ours.seq);
	else if (seq > ours.seq)
		rc = nv_err_set(err, NV_EREFUSED, MIRROR_KEPT_HINT,
				"the store's audit mirror is left as it is: "
				"it records %" PRIu64 " lines, this home's "
				"log only %" PRIu64,
				seq, ours.seq);
	cJSON_Delete(doc);
	return rc;
}

int nv_audit_mirror(const char *home, const char *store_root, nv_err *err)
{
	static const char *const names[] = {"genesis.json", "audit.jsonl",
					    "head"};
	audit_paths p;
	char root[NV_FILESTORE_PATH_MAX], prefix[200];
	char key[NV_FILESTORE_KEY_MAX + 1], src[AUDIT_PATH_MAX];
	nv_filestore *store = NULL;
	int lock_fd, rc;

	if ((rc = paths_init(&p, home, err)))
		return rc;
	if (!file_exists(p.log) || !file_exists(p.genesis))
		return nv_err_set(err, NV_ENOTFOUND, NULL, "no audit log in %s",
				  p.dir);
	if ((rc = nv_filestore_path_from_url(root, sizeof(root), store_root,
					     err)))
		return rc;
	/* shared: appenders wait, so the three files agree */
	if ((lock_fd = lock_open(&p, LOCK_SH, err)) < 0)
		return lock_fd;
	if ((rc = nv_audit_mirror_prefix(home, prefix, sizeof(prefix), err)) ||
	    (rc = nv_filestore_open(&store, root, 1, err)))
		goto out;
	/* never a shorter log, or another chain, over the copy kept there */
	if (nv_pathf(key, sizeof(key), "%s/head", prefix)) {
		rc = nv_err_set(err, NV_EINVAL, NULL, "path too long");
		goto out;
	}
	{
		char *stored = NULL;
		size_t len = 0;
		rc = nv_filestore_read(store, key, SMALL_FILE_MAX, &stored,
				       &len, NULL, err);
		if (rc == 0 || rc == NV_ENOTFOUND)
			rc = nv_audit_mirror_check(home, stored, len, err);
		free(stored);
		if (rc)
			goto out;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
		if (nv_pathf(key, sizeof(key), "%s/%s", prefix, names[i]) ||
		    nv_pathf(src, sizeof(src), "%s/%s", p.dir, names[i])) {
			rc = nv_err_set(err, NV_EINVAL, NULL, "path too long");
			goto out;
		}
		if ((rc = nv_filestore_put_file(store, key, src, NULL, err)))
			goto out;
	}
out:
	nv_filestore_free(store);
	close(lock_fd);
	return rc;
}
