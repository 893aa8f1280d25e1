/* Standalone replay driver for the fuzz targets: runs every file given (or
 * every file of the folders given) through LLVMFuzzerTestOneInput, so CI
 * replays the saved corpus with any compiler, no libFuzzer needed. A file
 * named NAME.hex holds its input as hex digits (an input that looks like
 * a secret to navette's scan is kept so: a project that brings this
 * repository as a library scans it with no allow-list); its bytes are
 * decoded first, so the target gets the same input. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/hex.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REPLAY_MAX_INPUT ((size_t)1 << 20)

static int is_hex_name(const char *path)
{
	size_t n = strlen(path);
	return n > 4 && strcmp(path + n - 4, ".hex") == 0;
}

/* Decodes buf's n hex digits in place (white space skipped). -> 0, or -1
 * on anything else or an odd count. */
static int hex_decode(uint8_t *buf, size_t *n)
{
	size_t out = 0;
	int high = -1;

	for (size_t i = 0; i < *n; i++) {
		int d;
		if (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\r' ||
		    buf[i] == '\t')
			continue;
		d = nv_hex_value(buf[i]);
		if (d < 0)
			return -1;
		if (high < 0) {
			high = d;
		} else {
			buf[out++] = (uint8_t)(high << 4 | d);
			high = -1;
		}
	}
	if (high >= 0)
		return -1;
	*n = out;
	return 0;
}

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	size_t n;

	if (!f) {
		fprintf(stderr, "cannot open %s\n", path);
		return 1;
	}
	buf = malloc(REPLAY_MAX_INPUT);
	if (!buf) {
		fclose(f);
		return 1;
	}
	n = fread(buf, 1, REPLAY_MAX_INPUT, f);
	fclose(f);
	if (is_hex_name(path) && hex_decode(buf, &n) != 0) {
		fprintf(stderr, "%s: not hex digits\n", path);
		free(buf);
		return 1;
	}
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int count = 0, failures = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "no such corpus: %s\n", argv[i]);
			failures++;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			failures += replay_file(argv[i]);
			count++;
			continue;
		}
		DIR *d = opendir(argv[i]);
		struct dirent *e;
		while (d && (e = readdir(d))) {
			char path[4096];
			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i],
				 e->d_name);
			failures += replay_file(path);
			count++;
		}
		if (d)
			closedir(d);
	}
	printf("%d passed, %d failed\n", count - failures, failures);
	return failures || count == 0 ? 1 : 0;
}
