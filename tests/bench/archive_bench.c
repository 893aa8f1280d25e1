/* Benchmark of the code-layer writer (host/git/archive.c): the time to turn
 * a commit's tree into its tar stream and hash it (the diff_id), and the
 * same with deterministic gzip and both hashes (what a push computes),
 * the output discarded. Optionally writes the uncompressed tar to a file,
 * so a peer (sha256sum) can be timed over the very same bytes.
 *
 *   archive_bench REPO COMMIT [TAR_OUT]
 *
 * ARCHIVE_THREADS=N sets the gzip threads (default: the online cores).
 * Prints one line per mode: bytes, best-of-3 seconds, MB/s (10^6 B/s). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "git/archive.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int discard(void *payload, const void *data, size_t len)
{
	(void)payload;
	(void)data;
	(void)len;
	return 0;
}

static int run(nv_git_repo *repo, const char *commit, int gzip,
	       const char *label)
{
	const char *t = getenv("ARCHIVE_THREADS");
	nv_archive_opts opts = {"workspace", gzip, t ? atoi(t) : 0};
	nv_archive_result res;
	double best = 1e9;
	nv_err err;

	for (int i = 0; i < 3; i++) {
		double t0 = now(), dt;

		if (nv_archive_commit(repo, commit, &opts, discard, NULL, &res,
				      &err)) {
			fprintf(stderr, "archive_bench: %s\n", err.message);
			return 1;
		}
		dt = now() - t0;
		if (dt < best)
			best = dt;
	}
	printf("%-22s tar %llu B, out %llu B, %.3f s, %.1f MB/s (of the tar)\n",
	       label, (unsigned long long)res.tar_size,
	       (unsigned long long)res.size, best,
	       (double)res.tar_size / best / 1e6);
	return 0;
}

int main(int argc, char **argv)
{
	nv_git_repo *repo = NULL;
	nv_err err;
	int rc;

	if (argc < 3) {
		fprintf(stderr, "usage: %s REPO COMMIT [TAR_OUT]\n", argv[0]);
		return 2;
	}
	if (nv_git_open(&repo, argv[1], &err)) {
		fprintf(stderr, "archive_bench: %s\n", err.message);
		return 1;
	}
	rc = run(repo, argv[2], 0, "tar+sha256");
	if (!rc)
		rc = run(repo, argv[2], 1, "tar+gzip+2x sha256");
	if (!rc && argc > 3) {
		nv_archive_opts opts = {"workspace", 0, 0};

		rc = nv_archive_commit_file(repo, argv[2], &opts, argv[3], NULL,
					    &err);
		if (rc)
			fprintf(stderr, "archive_bench: %s\n", err.message);
	}
	nv_git_free(repo);
	return rc ? 1 : 0;
}
