/* Name folding and volume detection for case-insensitive volumes (see
 * fsname.h for what the fold covers). */
#include "core/fsname.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* U+00C0..U+017F with a canonical decomposition: its base letter (lower
 * case) and mark (U+0300 + value); 0: none. Generated from the Unicode
 * Character Database (every decomposition here is one ASCII letter and one
 * mark). */
static const char latin_base[192] = {
	'a', 'a', 'a', 'a', 'a', 'a', 0,   'c', 'e', 'e', 'e', 'e', 'i', 'i',
	'i', 'i', 0,   'n', 'o', 'o', 'o', 'o', 'o', 0,   0,   'u', 'u', 'u',
	'u', 'y', 0,   0,   'a', 'a', 'a', 'a', 'a', 'a', 0,   'c', 'e', 'e',
	'e', 'e', 'i', 'i', 'i', 'i', 0,   'n', 'o', 'o', 'o', 'o', 'o', 0,
	0,   'u', 'u', 'u', 'u', 'y', 0,   'y', 'a', 'a', 'a', 'a', 'a', 'a',
	'c', 'c', 'c', 'c', 'c', 'c', 'c', 'c', 'd', 'd', 0,   0,   'e', 'e',
	'e', 'e', 'e', 'e', 'e', 'e', 'e', 'e', 'g', 'g', 'g', 'g', 'g', 'g',
	'g', 'g', 'h', 'h', 0,   0,   'i', 'i', 'i', 'i', 'i', 'i', 'i', 'i',
	'i', 0,   0,   0,   'j', 'j', 'k', 'k', 0,   'l', 'l', 'l', 'l', 'l',
	'l', 0,   0,   0,   0,   'n', 'n', 'n', 'n', 'n', 'n', 0,   0,   0,
	'o', 'o', 'o', 'o', 'o', 'o', 0,   0,   'r', 'r', 'r', 'r', 'r', 'r',
	's', 's', 's', 's', 's', 's', 's', 's', 't', 't', 't', 't', 0,   0,
	'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'w', 'w',
	'y', 'y', 'y', 'z', 'z', 'z', 'z', 'z', 'z', 0,
};
static const unsigned char latin_mark[192] = {
	0x00, 0x01, 0x02, 0x03, 0x08, 0x0a, 0x00, 0x27, 0x00, 0x01, 0x02, 0x08,
	0x00, 0x01, 0x02, 0x08, 0x00, 0x03, 0x00, 0x01, 0x02, 0x03, 0x08, 0x00,
	0x00, 0x00, 0x01, 0x02, 0x08, 0x01, 0x00, 0x00, 0x00, 0x01, 0x02, 0x03,
	0x08, 0x0a, 0x00, 0x27, 0x00, 0x01, 0x02, 0x08, 0x00, 0x01, 0x02, 0x08,
	0x00, 0x03, 0x00, 0x01, 0x02, 0x03, 0x08, 0x00, 0x00, 0x00, 0x01, 0x02,
	0x08, 0x01, 0x00, 0x08, 0x04, 0x04, 0x06, 0x06, 0x28, 0x28, 0x01, 0x01,
	0x02, 0x02, 0x07, 0x07, 0x0c, 0x0c, 0x0c, 0x0c, 0x00, 0x00, 0x04, 0x04,
	0x06, 0x06, 0x07, 0x07, 0x28, 0x28, 0x0c, 0x0c, 0x02, 0x02, 0x06, 0x06,
	0x07, 0x07, 0x27, 0x27, 0x02, 0x02, 0x00, 0x00, 0x03, 0x03, 0x04, 0x04,
	0x06, 0x06, 0x28, 0x28, 0x07, 0x00, 0x00, 0x00, 0x02, 0x02, 0x27, 0x27,
	0x00, 0x01, 0x01, 0x27, 0x27, 0x0c, 0x0c, 0x00, 0x00, 0x00, 0x00, 0x01,
	0x01, 0x27, 0x27, 0x0c, 0x0c, 0x00, 0x00, 0x00, 0x04, 0x04, 0x06, 0x06,
	0x0b, 0x0b, 0x00, 0x00, 0x01, 0x01, 0x27, 0x27, 0x0c, 0x0c, 0x01, 0x01,
	0x02, 0x02, 0x27, 0x27, 0x0c, 0x0c, 0x27, 0x27, 0x0c, 0x0c, 0x00, 0x00,
	0x03, 0x03, 0x04, 0x04, 0x06, 0x06, 0x0a, 0x0a, 0x0b, 0x0b, 0x28, 0x28,
	0x02, 0x02, 0x02, 0x02, 0x08, 0x01, 0x01, 0x07, 0x07, 0x0c, 0x0c, 0x00,
};
/* Capital letters of the range without a decomposition, and their
 * small letters. */
static const unsigned short latin_lower[][2] = {
	{0x00c6, 0x00e6}, /* latin capital letter ae */
	{0x00d0, 0x00f0}, /* latin capital letter eth */
	{0x00d8, 0x00f8}, /* latin capital letter o with stroke */
	{0x00de, 0x00fe}, /* latin capital letter thorn */
	{0x0110, 0x0111}, /* latin capital letter d with stroke */
	{0x0126, 0x0127}, /* latin capital letter h with stroke */
	{0x0132, 0x0133}, /* latin capital ligature ij */
	{0x013f, 0x0140}, /* latin capital letter l with middle dot */
	{0x0141, 0x0142}, /* latin capital letter l with stroke */
	{0x014a, 0x014b}, /* latin capital letter eng */
	{0x0152, 0x0153}, /* latin capital ligature oe */
	{0x0166, 0x0167}, /* latin capital letter t with stroke */
};

static int put_byte(char *out, size_t cap, size_t *n, unsigned char c)
{
	if (*n + 1 >= cap)
		return -1;
	out[(*n)++] = (char)c;
	return 0;
}

/* A code point below U+0800 as UTF-8. */
static int put_two(char *out, size_t cap, size_t *n, unsigned cp)
{
	if (put_byte(out, cap, n, (unsigned char)(0xc0 | (cp >> 6))) ||
	    put_byte(out, cap, n, (unsigned char)(0x80 | (cp & 0x3f))))
		return -1;
	return 0;
}

static unsigned lower_of(unsigned cp)
{
	size_t i;

	for (i = 0; i < sizeof(latin_lower) / sizeof(latin_lower[0]); i++)
		if (latin_lower[i][0] == cp)
			return latin_lower[i][1];
	return cp;
}

size_t nv_fsname_fold(const char *name, size_t len, char *out, size_t cap)
{
	const unsigned char *p = (const unsigned char *)name;
	size_t i = 0, n = 0;

	if (!out || cap == 0)
		return (size_t)-1;
	while (i < len) {
		unsigned char c = p[i];
		unsigned cp;
		int rc;

		if (c >= 'A' && c <= 'Z') {
			rc = put_byte(out, cap, &n, (unsigned char)(c + 32));
			i++;
		} else if (c >= 0xc3 && c <= 0xc5 && i + 1 < len &&
			   (p[i + 1] & 0xc0) == 0x80) {
			/* U+00C0..U+017F: the fold's range */
			cp = ((unsigned)(c & 0x1f) << 6) | (p[i + 1] & 0x3f);
			i += 2;
			if (cp >= 0xc0 && latin_base[cp - 0xc0]) {
				rc = put_byte(
					out, cap, &n,
					(unsigned char)latin_base[cp - 0xc0]);
				if (!rc)
					rc = put_two(
						out, cap, &n,
						0x300 + latin_mark[cp - 0xc0]);
			} else {
				rc = put_two(out, cap, &n, lower_of(cp));
			}
		} else {
			rc = put_byte(out, cap, &n, c);
			i++;
		}
		if (rc)
			return (size_t)-1;
	}
	out[n] = '\0';
	return n;
}

int nv_fsname_equal(const char *a, size_t alen, const char *b, size_t blen)
{
	char fa[NV_FSNAME_FOLD_CAP(NV_FSNAME_MAX)];
	char fb[NV_FSNAME_FOLD_CAP(NV_FSNAME_MAX)];
	size_t la, lb;

	if (alen > NV_FSNAME_MAX || blen > NV_FSNAME_MAX)
		return alen == blen && memcmp(a, b, alen) == 0;
	la = nv_fsname_fold(a, alen, fa, sizeof(fa));
	lb = nv_fsname_fold(b, blen, fb, sizeof(fb));
	return la == lb && la != (size_t)-1 && memcmp(fa, fb, la) == 0;
}

int nv_fsname_is_reserved(const char *name, size_t len, const char *reserved)
{
	while (len > 0 && (name[len - 1] == '.' || name[len - 1] == ' '))
		len--;
	return len > 0 &&
	       nv_fsname_equal(name, len, reserved, strlen(reserved));
}

#ifdef __APPLE__
/* macOS answers for its volumes: 0 from _PC_CASE_SENSITIVE means the
 * volume folds case (APFS and HFS+ by default); -1: it cannot say. */
static int apple_volume_folds(int dir_fd)
{
	long v = fpathconf(dir_fd, _PC_CASE_SENSITIVE);

	return v < 0 ? -1 : v == 0;
}
#endif

/* Creates a lower-case name and looks it up by its upper-case form. */
static int probe_volume_folds(int dir_fd)
{
	static unsigned long counter;
	char lower[96], upper[96];
	struct stat made, seen;
	size_t i;
	int fd, folds = 0;

	snprintf(lower, sizeof(lower), ".navette-case-probe.%ld.%lu",
		 (long)getpid(), ++counter);
	for (i = 0; lower[i]; i++)
		upper[i] = lower[i] >= 'a' && lower[i] <= 'z'
				   ? (char)(lower[i] - 32)
				   : lower[i];
	upper[i] = '\0';
	fd = openat(dir_fd, lower,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return 0;
	if (fstat(fd, &made) == 0 &&
	    fstatat(dir_fd, upper, &seen, AT_SYMLINK_NOFOLLOW) == 0)
		folds = made.st_ino == seen.st_ino &&
			made.st_dev == seen.st_dev;
	close(fd);
	unlinkat(dir_fd, lower, 0);
	return folds;
}

enum nv_fsname_volume nv_fsname_volume_of(int dir_fd)
{
	const char *force = getenv(NV_FSNAME_ENV);

	if (force && strcmp(force, "1") == 0)
		return NV_FSNAME_FORCED;
	if (force && strcmp(force, "0") == 0)
		return NV_FSNAME_SENSITIVE;
#ifdef __APPLE__
	{
		int v = apple_volume_folds(dir_fd);
		if (v >= 0)
			return v ? NV_FSNAME_FOLDING : NV_FSNAME_SENSITIVE;
	}
#endif
	return probe_volume_folds(dir_fd) ? NV_FSNAME_FOLDING
					  : NV_FSNAME_SENSITIVE;
}
