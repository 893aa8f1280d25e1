/* The unit tests' data files (tests/data/SUB/...): found through
 * NAVETTE_TEST_DATA, which ctest sets, or next to this file when a test is
 * run by hand. One folder per test program. */
#ifndef NAVETTE_TEST_DATA_H
#define NAVETTE_TEST_DATA_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fsutil.h"

static char data_dir[900];

/* data_dir := tests/data/SUB */
static inline void find_data_dir_of(const char *sub)
{
	const char *env = getenv("NAVETTE_TEST_DATA");
	char here[800], *slash;

	if (env) {
		snprintf(data_dir, sizeof(data_dir), "%s/%s", env, sub);
		return;
	}
	/* Run by hand: __FILE__ is tests/unit/test_data.h. */
	snprintf(here, sizeof(here), "%s", __FILE__);
	slash = strrchr(here, '/');
	if (slash)
		*slash = '\0';
	snprintf(data_dir, sizeof(data_dir), "%s/../data/%s", here, sub);
}

/* A file of data_dir, whole (at most 1 MiB; caller frees), or NULL with
 * *len 0, said on stderr. */
static inline char *load(const char *name, size_t *len)
{
	char path[1300], *data = NULL;

	snprintf(path, sizeof(path), "%s/%s", data_dir, name);
	if (nv_read_file(&data, len, path, 1 << 20, NULL)) {
		fprintf(stderr, "cannot read %s\n", path);
		*len = 0;
		return NULL;
	}
	return data;
}

#endif
