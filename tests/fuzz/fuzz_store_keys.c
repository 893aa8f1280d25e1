/* Fuzz target: the file store's key rules and URL parsing, which take
 * strings straight from recipes and job specs. Checks invariants, not just
 * the absence of crashes: an accepted key never escapes (no ".." segment,
 * not absolute, its first segment never folds to the store's marker), an
 * accepted URL yields an absolute path, and the name fold of
 * core/fsname.c is idempotent and within its bound. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/fsname.h"
#include "storage/filestore.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char text[2048];
	char path[NV_FILESTORE_PATH_MAX];
	char fold[NV_FSNAME_FOLD_CAP(2048)], again[NV_FSNAME_FOLD_CAP(3072)];
	size_t n, m;
	nv_err err;

	if (size >= sizeof(text))
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';

	if (nv_filestore_key_check_len(text, size, &err) == 0) {
		if (text[0] == '/' || strstr(text, "/../") ||
		    strncmp(text, "../", 3) == 0 || strcmp(text, "..") == 0 ||
		    (size >= 3 && strcmp(text + size - 3, "/..") == 0) ||
		    memchr(text, '\0', size))
			abort();
		n = strcspn(text, "/");
		if (nv_fsname_is_reserved(text, n, NV_FILESTORE_MARKER))
			abort();
	}
	n = nv_fsname_fold(text, size, fold, sizeof(fold));
	if (n == (size_t)-1 || n >= sizeof(fold))
		abort();
	m = nv_fsname_fold(fold, n, again, sizeof(again));
	if (m != n || memcmp(fold, again, n) != 0)
		abort();
	if (nv_filestore_path_from_url(path, sizeof(path), text, &err) == 0) {
		if (path[0] != '/' || strstr(path, "/../") ||
		    (strlen(path) >= 3 &&
		     strcmp(path + strlen(path) - 3, "/..") == 0))
			abort();
	}
	return 0;
}
