/* The secret scanner over whole trees, for the precision benchmark
 * (tests/bench/scan_precision.sh): each argument is scanned the way navette
 * scans a job's code, and every finding is printed with its path, line and
 * rule (never the value), then one summary line per tree.
 *
 *   scan_tree DIR...             plain folders (nv_scan_dir)
 *   scan_tree --commit REPO OID  one commit's tree (nv_scan_commit), what
 *                                runner.lua and image.lua check
 *
 * Output lines, tab-separated:
 *   finding  TREE  PATH:LINE  RULE  REASON
 *   tree     TREE  files=N findings=N allowed=N binary=N large=N
 * Exit status: 0 when every tree was scanned (findings or not), 1 on an
 * error, 2 on misuse. */
#include "creds/scan.h"

#include <stdio.h>
#include <string.h>

struct tree {
	const char *name;
};

static int print_finding(const nv_scan_finding *f, void *payload)
{
	const struct tree *t = payload;

	printf("finding\t%s\t%s:%zu\t%s\t%s\n", t->name, f->path, f->line,
	       f->rule, f->reason);
	return 0;
}

static void print_tree(const char *name, const nv_scan_stats *st)
{
	printf("tree\t%s\tfiles=%zu findings=%zu allowed=%zu binary=%zu "
	       "large=%zu%s\n",
	       name, st->files, st->findings, st->allowed, st->skipped_binary,
	       st->skipped_large, st->truncated ? " truncated" : "");
}

int main(int argc, char **argv)
{
	nv_scan_stats st;
	struct tree t;
	nv_err err;
	int i, rc, failed = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: scan_tree DIR... | scan_tree --commit "
				"REPO OID\n");
		return 2;
	}
	if (strcmp(argv[1], "--commit") == 0) {
		if (argc != 4) {
			fprintf(stderr, "usage: scan_tree --commit REPO OID\n");
			return 2;
		}
		t.name = argv[2];
		rc = nv_scan_commit(argv[2], argv[3], print_finding, &t, &st,
				    &err);
		if (rc) {
			fprintf(stderr, "scan_tree: %s\n", err.message);
			return 1;
		}
		print_tree(argv[2], &st);
		return 0;
	}
	for (i = 1; i < argc; i++) {
		t.name = argv[i];
		rc = nv_scan_dir(argv[i], print_finding, &t, &st, &err);
		if (rc) {
			fprintf(stderr, "scan_tree: %s\n", err.message);
			failed = 1;
			continue;
		}
		print_tree(argv[i], &st);
	}
	return failed;
}
