/* Redactor throughput: 1,000 random secrets (16..64 bytes) loaded, a
 * stream of realistic log text (timestamps, paths, numbers, JSON, a few
 * planted secrets, presigned URLs and tokens) pushed through a redactor
 * stream in 4 KiB and 64 KiB writes. Peers measured on the same input in
 * the same run: a memchr/memcpy line copy (the floor), `grep -F -f` with
 * the secrets (a literal multi-pattern matcher) and `sed` with one
 * fixed-string substitution per secret (on a prefix: it is slow).
 *
 * Usage: redact_bench [MiB]   (default 256) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "creds/redact.h"

#define NSECRETS 1000

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static unsigned rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Alphabet sed and grep read literally (no BRE specials). */
static const char alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuv"
			    "wxyz0123456789-_+/=";
static char secrets[NSECRETS][65];

struct sink {
	size_t bytes;
	size_t redacted;
	char *copy; /* emitted bytes land here, as a real writer would */
	size_t cap, at;
};

static void sink_emit(const char *buf, size_t len, void *payload)
{
	struct sink *s = payload;

	if (len >= 10 && memcmp(buf, "<redacted:", 10) == 0)
		s->redacted++;
	if (s->at + len > s->cap)
		s->at = 0;
	memcpy(s->copy + s->at, buf, len < s->cap ? len : s->cap);
	s->at += len < s->cap ? len : 0;
	s->bytes += len;
}

static size_t make_text(char *t, size_t size, size_t *planted)
{
	static const char *const levels[] = {"INFO", "DEBUG", "WARN", "INFO"};
	size_t n = 0, line = 0;

	*planted = 0;
	while (n + 512 < size) {
		unsigned kind = rnd(100);
		int h = (int)(line / 3600 % 24), m = (int)(line / 60 % 60),
		    sec = (int)(line % 60);
		char *p = t + n;
		int w;
		if (kind < 45) {
			w = sprintf(p,
				    "2024-05-01T%02d:%02d:%02d.%06uZ %s "
				    "[worker-%u] step=%zu loss=%.5f lr=%.2e "
				    "path=/data/shards/shard-%05u.tar\n",
				    h, m, sec, rnd(1000000), levels[rnd(4)],
				    rnd(8), line, rnd(100000) / 1e5,
				    rnd(1000) / 1e7, rnd(100000));
		} else if (kind < 80) {
			w = sprintf(p,
				    "{\"ts\": %u.%03u, \"level\": \"info\", "
				    "\"msg\": \"saved checkpoint\", \"path\": "
				    "\"s3://bucket/run-%u/ckpt-%04u.pt\", "
				    "\"bytes\": %u, \"sha\": \"%08x%08x\"}\n",
				    1714567890 + (unsigned)line, rnd(1000),
				    rnd(100), rnd(10000), rnd(1u << 30),
				    rnd(1u << 31), rnd(1u << 31));
		} else if (kind < 97) {
			w = sprintf(p,
				    "%02d:%02d:%02d epoch %u batch %u/%u "
				    "throughput %u samples/s gpu0 %u%% mem "
				    "%u MiB /home/user/.cache/torch/kernels\n",
				    h, m, sec, rnd(100), rnd(5000), 5000,
				    rnd(20000), rnd(100), rnd(80000));
		} else if (kind < 99) {
			w = sprintf(
				p,
				"GET https://bucket.s3.amazonaws.com/k/%u?"
				"X-Amz-Algorithm=AWS4-HMAC-SHA256&"
				"X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%%2F"
				"20240501%%2Fus-east-1%%2Fs3%%2Faws4_request&"
				"X-Amz-Signature=%08x%08x%08x 200\n",
				rnd(1000), rnd(1u << 31), rnd(1u << 31),
				rnd(1u << 31));
		} else {
			w = sprintf(p, "env token=%s ok\n",
				    secrets[rnd(NSECRETS)]);
			(*planted)++;
		}
		n += (size_t)w;
		line++;
	}
	return n;
}

static double run_stream(nv_redactor *r, const char *t, size_t len,
			 size_t chunk, struct sink *s)
{
	nv_redact_stream *st = nv_redact_stream_new(r, sink_emit, s);
	double t0 = now();

	for (size_t off = 0; off < len; off += chunk)
		nv_redact_stream_write(st, t + off,
				       len - off < chunk ? len - off : chunk);
	nv_redact_stream_flush(st);
	double dt = now() - t0;
	nv_redact_stream_free(st);
	return dt;
}

static double run_copy(const char *t, size_t len, char *out)
{
	double t0 = now();
	size_t at = 0;

	for (size_t off = 0; off < len;) {
		const char *nl = memchr(t + off, '\n', len - off);
		size_t n = nl ? (size_t)(nl - (t + off)) + 1 : len - off;
		memcpy(out + at, t + off, n);
		at += n;
		off += n;
	}
	if (at != len)
		fprintf(stderr, "copy mismatch\n");
	return now() - t0;
}

static double run_cmd(const char *cmd)
{
	double t0 = now();
	int rc = system(cmd);

	if (rc == -1 || (WIFEXITED(rc) && WEXITSTATUS(rc) > 1)) {
		fprintf(stderr, "failed: %s\n", cmd);
		return -1;
	}
	return now() - t0;
}

static double mbps(size_t bytes, double s)
{
	return s > 0 ? (double)bytes / 1e6 / s : 0;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? (size_t)atoi(argv[1]) : 256;
	size_t size = mib << 20, planted, sed_len;
	char dir[] = "/tmp/redact-bench-XXXXXX", path[256], cmd[1024];
	nv_redactor *r = nv_redactor_new();
	nv_err err;
	FILE *f;

	for (int i = 0; i < NSECRETS; i++) {
		size_t n = 16 + rnd(49);
		char name[16];
		for (size_t k = 0; k < n; k++)
			secrets[i][k] = alpha[rnd(sizeof(alpha) - 1)];
		secrets[i][n] = '\0';
		snprintf(name, sizeof(name), "secret%d", i);
		if (nv_redact_add_secret(r, name, secrets[i], n, &err) != 0) {
			fprintf(stderr, "add: %s\n", err.message);
			return 1;
		}
	}
	char *text = malloc(size), *out = malloc(size);
	if (!text || !out)
		return 1;
	size_t len = make_text(text, size, &planted);
	printf("input: %.1f MiB of log text, %zu planted secrets, %d "
	       "secrets loaded\n",
	       (double)len / (1 << 20), planted, NSECRETS);

	/* the automaton is built on first use: time it apart */
	struct sink s = {0, 0, out, size, 0};
	double t0 = now();
	run_stream(r, "warm-up\n", 8, 8, &s);
	printf("automaton build: %.3f s\n", now() - t0);

	double best[2] = {0, 0};
	size_t chunks[2] = {4096, 65536};
	for (int c = 0; c < 2; c++) {
		for (int rep = 0; rep < 2; rep++) {
			s = (struct sink){0, 0, out, size, 0};
			double dt = run_stream(r, text, len, chunks[c], &s);
			if (mbps(len, dt) > best[c])
				best[c] = mbps(len, dt);
		}
		printf("redactor, %5zu-byte writes: %8.1f MB/s (%zu "
		       "redactions, out %zu bytes)\n",
		       chunks[c], best[c], s.redacted, s.bytes);
	}
	double copy = mbps(len, run_copy(text, len, out));
	printf("memchr/memcpy line copy:     %8.1f MB/s\n", copy);

	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/secrets.txt", dir);
	f = fopen(path, "w");
	for (int i = 0; f && i < NSECRETS; i++)
		fprintf(f, "%s\n", secrets[i]);
	if (f)
		fclose(f);
	snprintf(path, sizeof(path), "%s/script.sed", dir);
	f = fopen(path, "w");
	for (int i = 0; f && i < NSECRETS; i++)
		fprintf(f, "s|%s|<redacted:secret%d>|g\n", secrets[i], i);
	if (f)
		fclose(f);
	snprintf(path, sizeof(path), "%s/input.log", dir);
	f = fopen(path, "w");
	if (!f || fwrite(text, 1, len, f) != len)
		return 1;
	fclose(f);
	sed_len = len < (1u << 20) ? len : (1u << 20);
	snprintf(path, sizeof(path), "%s/head.log", dir);
	f = fopen(path, "w");
	if (!f || fwrite(text, 1, sed_len, f) != sed_len)
		return 1;
	fclose(f);

	snprintf(cmd, sizeof(cmd),
		 /* into a file: with its output on /dev/null, GNU grep
		  * stops at the first match, even with -c */
		 "LC_ALL=C grep -F -c -f %s/secrets.txt %s/input.log "
		 ">%s/grep.count",
		 dir, dir, dir);
	double grep = mbps(len, run_cmd(cmd));
	printf("grep -F -f (1,000 literals): %8.1f MB/s\n", grep);
	snprintf(cmd, sizeof(cmd),
		 "LC_ALL=C sed -f %s/script.sed %s/head.log >/dev/null", dir,
		 dir);
	double sed = mbps(sed_len, run_cmd(cmd));
	printf("sed, 1,000 s|lit|..|g:       %8.1f MB/s (on the first %zu "
	       "MiB)\n",
	       sed, sed_len >> 20);
	printf("ratios (redactor 64 KiB / peer): copy %.3f, grep -F %.2f, "
	       "sed %.1f\n",
	       copy > 0 ? best[1] / copy : 0, grep > 0 ? best[1] / grep : 0,
	       sed > 0 ? best[1] / sed : 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	free(text);
	free(out);
	nv_redactor_free(r);
	return 0;
}
