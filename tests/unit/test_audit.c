/* Unit tests of the audit log (host/audit/audit.c): the hash chain a user
 * relies on to prove what navette did, and that every kind of tampering
 * with a copy of the log (an edited, removed or swapped line, a cut end, a
 * replaced genesis) is named by verify at the right line. Also concurrent
 * appends from several processes, the filter hook, and the mirror into a
 * file:// store. Works in a fresh folder under $TMPDIR (or /tmp). */
#include "audit/audit.h"
#include "core/fsutil.h"
#include "core/sha256.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "nv_test.h"

#define MAX_LINES 256

static char base[512]; /* the temp folder of this run */
static int home_count;

/* A fresh NAVETTE_HOME under base. */
static void new_home(char *out, size_t cap)
{
	if (nv_pathf(out, cap, "%s/home%d", base, ++home_count) ||
	    nv_mkdir_p(out, 0700, NULL))
		abort(); /* a test bug, not an audit failure */
}

static void audit_file(char *out, size_t cap, const char *home,
		       const char *name)
{
	if (nv_pathf(out, cap, "%s/audit/%s", home, name))
		abort();
}

static char *slurp(const char *home, const char *name, size_t *len)
{
	char path[1024], *data = NULL;
	size_t n = 0;

	audit_file(path, sizeof(path), home, name);
	if (nv_read_file(&data, &n, path, 64 * 1024 * 1024, NULL))
		return NULL;
	if (len)
		*len = n;
	return data;
}

static int spit(const char *home, const char *name, const char *data,
		size_t len)
{
	char path[1024];

	audit_file(path, sizeof(path), home, name);
	return nv_write_file_atomic(path, data, len, 0600, NULL);
}

/* A new home holding a copy of src's audit files. */
static void clone_home(char *out, size_t cap, const char *src)
{
	static const char *const names[] = {"audit.jsonl", "genesis.json",
					    "head"};
	char dir[1024];

	new_home(out, cap);
	if (nv_pathf(dir, sizeof(dir), "%s/audit", out) ||
	    nv_mkdir_p(dir, 0700, NULL))
		abort();
	for (size_t i = 0; i < 3; i++) {
		size_t len;
		char *data = slurp(src, names[i], &len);
		if (!data || spit(out, names[i], data, len))
			abort();
		free(data);
	}
}

/* Splits text into lines (pointers into text, newlines replaced by NUL). */
static int split_lines(char *text, char **lines, int max)
{
	int n = 0;

	for (char *p = text; *p && n < max;) {
		char *nl = strchr(p, '\n');
		lines[n++] = p;
		if (!nl)
			break;
		*nl = '\0';
		p = nl + 1;
	}
	return n;
}

/* Writes lines[0..n) back, each followed by a newline. */
static void write_lines(const char *home, char **lines, int n)
{
	size_t total = 0;

	for (int i = 0; i < n; i++)
		total += strlen(lines[i]) + 1;
	char *out = malloc(total + 1), *p = out;
	for (int i = 0; i < n; i++) {
		size_t len = strlen(lines[i]);
		memcpy(p, lines[i], len);
		p[len] = '\n';
		p += len + 1;
	}
	if (spit(home, "audit.jsonl", out, total))
		abort();
	free(out);
}

static int append(const char *home, const char *action, const char *target,
		  const char *job, uint64_t *seq)
{
	nv_audit_entry e = {
		.credential = "deploy-key",
		.profile = "validation",
		.action = action,
		.target = target,
		.job = job,
		.commit = "0123abcd",
		.result = "ok",
	};
	nv_err err;
	int rc = nv_audit_append(home, &e, seq, &err);

	if (rc)
		fprintf(stderr, "append: %s\n", err.message);
	return rc;
}

static void verify(const char *home, nv_audit_report *r)
{
	nv_err err;

	memset(r, 0xff, sizeof(*r)); /* verify must set every field */
	CHECK(nv_audit_verify(home, r, &err) == 0);
	if (!r->ok)
		fprintf(stderr, "  verify: %s at line %lu: %s\n", r->kind,
			(unsigned long)r->line, r->message);
}

static void expect_bad(const char *home, const char *kind, uint64_t line)
{
	nv_audit_report r;

	verify(home, &r);
	CHECK(!r.ok);
	CHECK_STR(r.kind, kind);
	CHECK(r.line == line);
	CHECK(r.message[0] != '\0');
}

/* ---- the chain ---------------------------------------------------------- */

static const char *const line_keys[] = {
	"seq",    "time", "identity", "credential", "profile", "action",
	"target", "job",  "commit",   "result",     "prev",
};

static void test_append_chain(const char *home)
{
	char target[32], genesis_hash[65], hash[65] = "";
	uint64_t seq = 0;

	for (int i = 1; i <= 5; i++) {
		snprintf(target, sizeof(target), "target-%d", i);
		CHECK(append(home, "submit", target, i % 2 ? "job-a" : NULL,
			     &seq) == 0);
		CHECK(seq == (uint64_t)i);
	}

	size_t glen;
	char *genesis = slurp(home, "genesis.json", &glen);
	CHECK(genesis != NULL);
	if (!genesis)
		return;
	cJSON *g = cJSON_Parse(genesis);
	CHECK(cJSON_IsString(cJSON_GetObjectItem(g, "nonce")));
	CHECK(cJSON_IsString(cJSON_GetObjectItem(g, "identity")));
	cJSON_Delete(g);
	nv_sha256_bytes(genesis, glen, genesis_hash, NULL);
	free(genesis);

	char *text = slurp(home, "audit.jsonl", NULL), *lines[MAX_LINES];
	CHECK(text != NULL);
	if (!text)
		return;
	int n = split_lines(text, lines, MAX_LINES);
	CHECK(n == 5);
	const char *prev = genesis_hash;
	for (int i = 0; i < n; i++) {
		cJSON *doc = cJSON_Parse(lines[i]);
		CHECK(cJSON_IsObject(doc));
		/* keys in the fixed order, detail left out when NULL */
		const cJSON *item = doc ? doc->child : NULL;
		for (size_t k = 0; k < sizeof(line_keys) / sizeof(*line_keys);
		     k++, item = item ? item->next : NULL)
			CHECK(item && !strcmp(item->string, line_keys[k]));
		CHECK(item == NULL);
		CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(doc, "seq")) ==
		      i + 1);
		CHECK_STR(
			cJSON_GetStringValue(cJSON_GetObjectItem(doc, "prev")),
			prev);
		CHECK_STR(cJSON_GetStringValue(
				  cJSON_GetObjectItem(doc, "credential")),
			  "deploy-key");
		CHECK(strchr(cJSON_GetStringValue(
				     cJSON_GetObjectItem(doc, "identity")),
			     '@') != NULL);
		const char *t =
			cJSON_GetStringValue(cJSON_GetObjectItem(doc, "time"));
		CHECK(t && strlen(t) == 24 && t[23] == 'Z');
		CHECK((i % 2 == 0) ==
		      cJSON_IsString(cJSON_GetObjectItem(doc, "job")));
		cJSON_Delete(doc);
		nv_sha256_bytes(lines[i], strlen(lines[i]), hash, NULL);
		strcpy(genesis_hash, hash); /* prev points here */
	}
	/* head records the last line */
	char *head = slurp(home, "head", NULL);
	cJSON *h = head ? cJSON_Parse(head) : NULL;
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(h, "seq")) == 5);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(h, "hash")), hash);
	cJSON_Delete(h);
	free(head);
	free(text);

	nv_audit_report r;
	verify(home, &r);
	CHECK(r.ok);
	CHECK(r.lines == 5);
	CHECK(r.last_seq == 5);
	CHECK_STR(r.kind, "");
}

/* ---- tampering, each on a copy ------------------------------------------ */

typedef void (*tamper_fn)(char **lines, int *n);

static void edit_value(char **lines, int *n)
{
	(void)n;
	char *p = strstr(lines[2], "target-3"); /* still valid JSON */
	if (p)
		p[3] = 'X';
}

static void edit_syntax(char **lines, int *n)
{
	(void)n;
	lines[2][0] = '[';
}

static void edit_prev(char **lines, int *n)
{
	(void)n;
	char *p = strstr(lines[2], "\"prev\":\"");
	if (p)
		p[8] = p[8] == '0' ? '1' : '0';
}

static void edit_last(char **lines, int *n)
{
	char *p = strstr(lines[*n - 1], "target-5");
	if (p)
		p[0] = 'T';
}

static void delete_third(char **lines, int *n)
{
	memmove(lines + 2, lines + 3, (size_t)(*n - 3) * sizeof(*lines));
	(*n)--;
}

static void swap_second_third(char **lines, int *n)
{
	(void)n;
	char *t = lines[1];
	lines[1] = lines[2];
	lines[2] = t;
}

static void drop_last(char **lines, int *n)
{
	(void)lines;
	(*n)--;
}

static void drop_all(char **lines, int *n)
{
	(void)lines;
	*n = 0;
}

static void tampered(const char *src, tamper_fn fn, const char *kind,
		     uint64_t line, const char *what)
{
	char home[1024], *lines[MAX_LINES];
	int n;

	fprintf(stderr, "tamper: %s\n", what);
	clone_home(home, sizeof(home), src);
	char *text = slurp(home, "audit.jsonl", NULL);
	n = split_lines(text, lines, MAX_LINES);
	fn(lines, &n);
	write_lines(home, lines, n);
	free(text);
	expect_bad(home, kind, line);

	/* an append never papers over what verify found */
	if (strcmp(kind, "truncated") == 0) {
		nv_err err;
		nv_audit_entry e = {.action = "cancel", .result = "ok"};
		CHECK(nv_audit_append(home, &e, NULL, &err) == NV_EREFUSED);
		expect_bad(home, kind, line);
	}
}

static void test_tampering(const char *src)
{
	char home[1024];
	size_t len;

	tampered(src, edit_value, "edited", 3, "a value in line 3");
	tampered(src, edit_syntax, "edited", 3, "line 3 made invalid JSON");
	tampered(src, edit_prev, "edited", 3, "the prev of line 3");
	tampered(src, edit_last, "edited", 5, "the last line");
	tampered(src, delete_third, "removed", 3, "line 3 deleted");
	tampered(src, swap_second_third, "reordered", 2, "lines 2, 3 swapped");
	tampered(src, drop_last, "truncated", 5, "last line dropped");
	tampered(src, drop_all, "truncated", 1, "every line dropped");

	fprintf(stderr, "tamper: cut mid-line\n");
	clone_home(home, sizeof(home), src);
	char *text = slurp(home, "audit.jsonl", &len);
	spit(home, "audit.jsonl", text, len - 10);
	free(text);
	expect_bad(home, "truncated", 5);
	nv_audit_entry e = {.action = "cancel", .result = "ok"};
	CHECK(nv_audit_append(home, &e, NULL, NULL) == NV_EREFUSED);

	fprintf(stderr, "tamper: genesis replaced\n");
	clone_home(home, sizeof(home), src);
	const char *fake = "{\"kind\":\"navette-audit-genesis\",\"version\":1,"
			   "\"nonce\":\"00000000000000000000000000000000\","
			   "\"created\":\"2026-01-01T00:00:00.000Z\","
			   "\"identity\":\"mallory@host\"}\n";
	spit(home, "genesis.json", fake, strlen(fake));
	expect_bad(home, "genesis", 0);
	CHECK(nv_audit_append(home, &e, NULL, NULL) == NV_EREFUSED);

	fprintf(stderr, "tamper: genesis and head rewritten together\n");
	{
		char hex[65], headtext[256];
		nv_sha256_bytes(fake, strlen(fake), hex, NULL);
		char *head = slurp(home, "head", NULL);
		char *g = head ? strstr(head, "\"genesis\":\"") : NULL;
		if (g) {
			memcpy(g + 11, hex, 64);
			snprintf(headtext, sizeof(headtext), "%s", head);
			spit(home, "head", headtext, strlen(headtext));
		}
		free(head);
		expect_bad(home, "genesis", 0);
	}

	fprintf(stderr, "tamper: genesis removed\n");
	clone_home(home, sizeof(home), src);
	char path[1024];
	audit_file(path, sizeof(path), home, "genesis.json");
	unlink(path);
	expect_bad(home, "genesis", 0);

	fprintf(stderr, "tamper: head removed\n");
	clone_home(home, sizeof(home), src);
	audit_file(path, sizeof(path), home, "head");
	unlink(path);
	expect_bad(home, "truncated", 6);
	CHECK(nv_audit_append(home, &e, NULL, NULL) == NV_EREFUSED);
}

/* ---- a fresh home, bounds, the filter, listing --------------------------- */

static void test_fresh_home(void)
{
	char home[1024];
	nv_audit_report r;
	nv_err err;

	new_home(home, sizeof(home));
	verify(home, &r);
	CHECK(r.ok);
	CHECK(r.lines == 0);
	CHECK(nv_audit_mirror(home, base, &err) == NV_ENOTFOUND);

	nv_audit_entry e = {.action = "submit", .result = "maybe"};
	CHECK(nv_audit_append(home, &e, NULL, &err) == NV_EINVAL);
	e.result = "ok";
	e.action = NULL;
	CHECK(nv_audit_append(home, &e, NULL, &err) == NV_EINVAL);
}

static void test_bounds(void)
{
	char home[1024];
	char *big = malloc(10000);
	uint64_t seq;

	new_home(home, sizeof(home));
	memset(big, 'a', 9999);
	big[9999] = '\0';
	big[2046] = (char)0xC3; /* a 2-byte character across the cut */
	big[2047] = (char)0xA9;
	nv_audit_entry e = {.action = "upload",
			    .target = big,
			    .result = "failed",
			    .detail = "bad \xff byte and a\nnewline"};
	CHECK(nv_audit_append(home, &e, &seq, NULL) == 0);
	free(big);

	char *text = slurp(home, "audit.jsonl", NULL);
	char *lines[2];
	CHECK(text && split_lines(text, lines, 2) == 1);
	cJSON *doc = text ? cJSON_Parse(lines[0]) : NULL;
	const char *target =
		cJSON_GetStringValue(cJSON_GetObjectItem(doc, "target"));
	CHECK(target && strlen(target) == 2048);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(doc, "detail")),
		  "bad ? byte and a\nnewline");
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(doc, "credential")));
	cJSON_Delete(doc);
	free(text);

	nv_audit_report r;
	verify(home, &r);
	CHECK(r.ok && r.lines == 1);
}

static int redact(const char *line, size_t len, nv_buf *out, void *payload)
{
	const char *secret = payload;
	size_t slen = strlen(secret);

	for (size_t i = 0; i < len;) {
		if (i + slen <= len && !memcmp(line + i, secret, slen)) {
			nv_buf_puts(out, "<redacted>");
			i += slen;
		} else {
			nv_buf_append(out, line + i, 1);
			i++;
		}
	}
	return 0;
}

static int break_shape(const char *line, size_t len, nv_buf *out, void *payload)
{
	(void)line;
	(void)len;
	(void)payload;
	return nv_buf_puts(out, "{\"seq\":99}");
}

static int count_line(const char *line, size_t len, uint64_t no, void *p)
{
	int *count = p;

	(void)line;
	(void)len;
	(void)no;
	(*count)++;
	return 0;
}

static void test_filter_and_each(void)
{
	char home[1024], secret[] = "hunter2-s3cr3t";
	nv_err err;
	int count = 0;

	new_home(home, sizeof(home));
	nv_audit_set_filter(redact, secret);
	CHECK(append(home, "submit", "token=hunter2-s3cr3t", "job-a", NULL) ==
	      0);
	nv_audit_set_filter(break_shape, NULL);
	CHECK(append(home, "submit", "x", "job-b", NULL) != 0);
	nv_audit_set_filter(NULL, NULL);
	CHECK(append(home, "cancel", "x", "job-b", NULL) == 0);
	CHECK(append(home, "cancel", "y", "job-a", NULL) == 0);

	char *text = slurp(home, "audit.jsonl", NULL);
	CHECK(text && !strstr(text, "hunter2") && strstr(text, "<redacted>"));
	free(text);
	nv_audit_report r;
	verify(home, &r);
	CHECK(r.ok && r.lines == 3);

	CHECK(nv_audit_each(home, NULL, count_line, &count, &err) == 0);
	CHECK(count == 3);
	count = 0;
	CHECK(nv_audit_each(home, "job-a", count_line, &count, &err) == 0);
	CHECK(count == 2);
	count = 0;
	CHECK(nv_audit_each(home, "job-zzz", count_line, &count, &err) == 0);
	CHECK(count == 0);
}

/* ---- concurrency -------------------------------------------------------- */

static int seq_check(const char *line, size_t len, uint64_t no, void *p)
{
	int *bad = p;
	cJSON *doc = cJSON_ParseWithLength(line, len);

	if (cJSON_GetNumberValue(cJSON_GetObjectItem(doc, "seq")) != (double)no)
		(*bad)++;
	cJSON_Delete(doc);
	return 0;
}

static void test_concurrent(void)
{
	char home[1024];
	pid_t kids[4];
	int bad = 0;

	new_home(home, sizeof(home));
	for (int k = 0; k < 4; k++) {
		kids[k] = fork();
		if (kids[k] == 0) {
			char target[32];
			int fails = 0;
			for (int i = 0; i < 50; i++) {
				snprintf(target, sizeof(target), "w%d-%d", k,
					 i);
				fails += append(home, "upload", target, NULL,
						NULL) != 0;
			}
			_exit(fails ? 1 : 0);
		}
		CHECK(kids[k] > 0);
	}
	for (int k = 0; k < 4; k++) {
		int status = -1;
		if (kids[k] > 0)
			waitpid(kids[k], &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	nv_audit_report r;
	verify(home, &r);
	CHECK(r.ok);
	CHECK(r.lines == 200);
	CHECK(r.last_seq == 200);
	CHECK(nv_audit_each(home, NULL, seq_check, &bad, NULL) == 0);
	CHECK(bad == 0);
}

/* ---- mirror ------------------------------------------------------------- */

static void test_mirror(const char *src)
{
	static const char *const names[] = {"audit.jsonl", "genesis.json",
					    "head"};
	char store[1024], prefix[256], home[1024], path[2048], dir[1100];
	nv_err err;

	if (nv_pathf(store, sizeof(store), "%s/store", base))
		abort();
	CHECK(nv_audit_mirror(src, store, &err) == 0);
	CHECK(nv_audit_mirror_prefix(src, prefix, sizeof(prefix), &err) == 0);
	CHECK(strncmp(prefix, "_audit/", 7) == 0 && strchr(prefix, '@'));

	/* the copy in the store verifies on its own */
	new_home(home, sizeof(home));
	snprintf(dir, sizeof(dir), "%s/audit", home);
	nv_mkdir_p(dir, 0700, NULL);
	for (size_t i = 0; i < 3; i++) {
		char *data = NULL;
		size_t len = 0;
		snprintf(path, sizeof(path), "%s/%s/%s", store, prefix,
			 names[i]);
		CHECK(nv_read_file(&data, &len, path, 1 << 20, NULL) == 0);
		if (data)
			spit(home, names[i], data, len);
		free(data);
	}
	nv_audit_report r;
	verify(home, &r);
	CHECK(r.ok);
	CHECK(r.lines == 5);

	/* mirroring again after an append replaces the copy */
	CHECK(append(src, "delete", "obj", NULL, NULL) == 0);
	char url[1100];
	snprintf(url, sizeof(url), "file://%s", store);
	CHECK(nv_audit_mirror(src, url, &err) == 0);
	snprintf(path, sizeof(path), "%s/%s/head", store, prefix);
	char *head = NULL;
	size_t len;
	CHECK(nv_read_file(&head, &len, path, 4096, NULL) == 0);
	CHECK(head && strstr(head, "\"seq\":6,"));
	free(head);
}

/* Several entries as one write (a job array's tasks): consecutive lines,
 * chained like single appends; a bad entry among them writes none. */
static void test_append_many(void)
{
	char home[1024];
	nv_audit_report r;
	nv_err err;
	uint64_t seq = 0;
	nv_audit_entry many[3] = {
		{.action = "job.submit",
		 .target = "t0",
		 .job = "j-0",
		 .result = "ok"},
		{.action = "job.submit",
		 .target = "t1",
		 .job = "j-1",
		 .result = "ok"},
		{.action = "job.submit",
		 .target = "t2",
		 .job = "j-2",
		 .result = "ok"},
	};

	new_home(home, sizeof(home));
	CHECK(append(home, "first", "x", NULL, &seq) == 0 && seq == 1);
	CHECK(nv_audit_append_many(home, many, 3, &seq, &err) == 0);
	CHECK(seq == 2);
	CHECK(append(home, "after", "y", NULL, &seq) == 0 && seq == 5);
	verify(home, &r);
	CHECK(r.ok && r.lines == 5 && r.last_seq == 5);
	char *text = slurp(home, "audit.jsonl", NULL), *lines[MAX_LINES];
	int n = text ? split_lines(text, lines, MAX_LINES) : 0;
	CHECK(n == 5);
	for (int i = 1; i <= 3 && i < n; i++) {
		char want[16];
		snprintf(want, sizeof(want), "\"j-%d\"", i - 1);
		CHECK(strstr(lines[i], want) != NULL);
	}
	free(text);
	many[1].action = NULL;
	CHECK(nv_audit_append_many(home, many, 3, &seq, &err) == NV_EINVAL);
	verify(home, &r);
	CHECK(r.ok && r.lines == 5);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	char home[1024];

	snprintf(base, sizeof(base), "%s/nv-audit-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(base)) {
		perror("mkdtemp");
		return 1;
	}
	new_home(home, sizeof(home));
	test_append_chain(home);
	test_tampering(home);
	test_fresh_home();
	test_append_many();
	test_bounds();
	test_filter_and_each();
	test_concurrent();
	test_mirror(home);
	nv_remove_tree(base, NULL);
	return nv_test_done();
}
