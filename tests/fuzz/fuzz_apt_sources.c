/* Fuzz target: the apt sources readers of host/image/debootstrap.c (the
 * one-line sources.list and the deb822 .sources forms), which read files
 * of the machine that builds an image. The text is handed over in a buffer
 * of exactly its length, not NUL-terminated, so a read past it is seen.
 * Checks invariants, not just the absence of crashes: a mirror found is an
 * http(s) URL without blanks that fits the output and appears in the
 * text; the output's size never changes which mirror is found, only
 * whether one that does not fit is skipped. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "image/debootstrap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SMALL_CAP 24

/* Whether the found URL is a well-formed part of the text. */
static int found_ok(const char *text, size_t len, const char *out, size_t cap)
{
	size_t n = strnlen(out, cap);

	if (n >= cap)
		return 0;
	if (strncmp(out, "http://", 7) != 0 && strncmp(out, "https://", 8) != 0)
		return 0;
	if (out[strcspn(out, " \t\r\n")] != '\0')
		return 0;
	for (size_t i = 0; i + n <= len; i++)
		if (memcmp(text + i, out, n) == 0)
			return 1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char large[NV_DEB_MIRROR_MAX + 1], small[SMALL_CAP];
	char *text;

	if (size > 1 << 20)
		return 0;
	text = malloc(size ? size : 1);
	if (!text)
		return 0;
	if (size)
		memcpy(text, data, size);
	for (int deb822 = 0; deb822 <= 1; deb822++) {
		int big_rc = nv_apt_mirror_find(text, size, deb822, "bookworm",
						large, sizeof(large));
		int small_rc = nv_apt_mirror_find(
			text, size, deb822, "bookworm", small, sizeof(small));

		if (big_rc != 0 && big_rc != -1)
			abort();
		if (small_rc != 0 && small_rc != -1)
			abort();
		if (big_rc == 0 && !found_ok(text, size, large, sizeof(large)))
			abort();
		if (small_rc == 0 &&
		    !found_ok(text, size, small, sizeof(small)))
			abort();
		/* a mirror that fits the small output is found by both */
		if (big_rc == 0 && strlen(large) < sizeof(small) &&
		    (small_rc != 0 || strcmp(small, large) != 0))
			abort();
		if (small_rc == 0 && big_rc != 0)
			abort();
	}
	free(text);
	return 0;
}
