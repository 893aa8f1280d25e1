/* Keys and URLs of the file:// store (see filestore.h): the key rule,
 * a job's output prefix, file:// URLs to paths and back, and finding the
 * store that holds a path. Pure string work, besides looking for the
 * marker folder; fuzzed by tests/fuzz/fuzz_store_keys.c. */
#include "storage/filestore.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "core/fsname.h"
#include "core/hex.h"
#include "core/jobid.h"
#include "storage/filestore_internal.h"

/* ---- keys and URLs ---------------------------------------------------- */

int nv_filestore_key_check_len(const char *key, size_t len, nv_err *err)
{
	size_t i, seg_start = 0;

	if (!key || len == 0)
		return nv_err_set(err, NV_EINVAL, KEY_HINT,
				  "invalid key '': a key cannot be empty");
	if (len > NV_FILESTORE_KEY_MAX)
		return nv_err_set(err, NV_EINVAL, KEY_HINT,
				  "invalid key '%.40s...': %zu bytes, the "
				  "limit is %d",
				  key, len, NV_FILESTORE_KEY_MAX);
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)key[i];
		if (c == 0)
			return nv_err_set(err, NV_EINVAL, KEY_HINT,
					  "invalid key '%s': NUL byte at "
					  "offset %zu",
					  key, i);
		if (c < 0x20 || c == 0x7f)
			return nv_err_set(err, NV_EINVAL, KEY_HINT,
					  "invalid key '%.*s': control "
					  "character 0x%02x at offset %zu",
					  (int)i, key, c, i);
		if (c == '\\')
			return nv_err_set(err, NV_EINVAL, KEY_HINT,
					  "invalid key '%s': backslash at "
					  "offset %zu (use '/' between "
					  "segments)",
					  key, i);
	}
	if (key[0] == '/')
		return nv_err_set(err, NV_EINVAL, KEY_HINT,
				  "invalid key '%s': a key is relative to the "
				  "store and cannot start with '/'",
				  key);
	if (key[len - 1] == '/')
		return nv_err_set(err, NV_EINVAL, KEY_HINT,
				  "invalid key '%s': a key names an object and "
				  "cannot end with '/'",
				  key);
	for (i = 0; i <= len; i++) {
		size_t seg_len;
		if (i < len && key[i] != '/')
			continue;
		seg_len = i - seg_start;
		if (seg_len == 0)
			return nv_err_set(err, NV_EINVAL, KEY_HINT,
					  "invalid key '%s': empty segment "
					  "('//') at offset %zu",
					  key, seg_start);
		if ((seg_len == 1 && key[seg_start] == '.') ||
		    (seg_len == 2 && key[seg_start] == '.' &&
		     key[seg_start + 1] == '.'))
			return nv_err_set(err, NV_EINVAL, KEY_HINT,
					  "invalid key '%s': '%.*s' segment "
					  "at offset %zu",
					  key, (int)seg_len, key + seg_start,
					  seg_start);
		if (seg_len > SEGMENT_MAX)
			return nv_err_set(err, NV_EINVAL, KEY_HINT,
					  "invalid key '%.60s...': a segment "
					  "is %zu bytes, a file name holds at "
					  "most %d",
					  key, seg_len, SEGMENT_MAX);
		/* Any case or form of the marker: a folding volume would
		 * take it for the marker, so it is refused everywhere. */
		if (seg_start == 0 &&
		    nv_fsname_is_reserved(key, seg_len, NV_FILESTORE_MARKER))
			return nv_err_set(err, NV_EINVAL, KEY_HINT,
					  "invalid key '%s': '%.*s' is "
					  "reserved for the store's own "
					  "records ('%s', in any case)",
					  key, (int)seg_len, key,
					  NV_FILESTORE_MARKER);
		seg_start = i + 1;
	}
	return 0;
}

int nv_filestore_key_check(const char *key, nv_err *err)
{
	return nv_filestore_key_check_len(key, key ? strlen(key) : 0, err);
}

int nv_filestore_job_prefix(char *out, size_t cap, const char *template_text,
			    const char *project, const char *id, nv_err *err)
{
	size_t o = 0;

	if (nv_job_id_check(id, err))
		return err->code;
	if (!project || !*project || strchr(project, '/'))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "job %s: bad project name for its prefix",
				  id);
	if (!template_text || cap == 0)
		return nv_err_set(err, NV_EINVAL, NULL, "no output prefix");
	for (const char *p = template_text; *p;) {
		const char *with = NULL;
		size_t skip = 1, n;

		if (strncmp(p, "{project}", 9) == 0)
			with = project, skip = 9;
		else if (strncmp(p, "{id}", 4) == 0)
			with = id, skip = 4;
		n = with ? strlen(with) : 1;
		if (o + n >= cap || o + n > NV_FILESTORE_KEY_MAX)
			return nv_err_set(err, NV_EINVAL, KEY_HINT,
					  "job %s: output prefix longer than "
					  "%d bytes",
					  id, NV_FILESTORE_KEY_MAX);
		memcpy(out + o, with ? with : p, n);
		o += n;
		p += skip;
	}
	out[o] = '\0';
	/* "a/b/" is checked as the key "a/b" */
	return nv_filestore_key_check_len(
		out, o && out[o - 1] == '/' ? o - 1 : o, err);
}

static int starts_with_scheme(const char *s)
{
	const char *p = s;

	if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
		return 0;
	while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
	       (*p >= '0' && *p <= '9') || *p == '+' || *p == '-' || *p == '.')
		p++;
	return *p == ':';
}

#define URL_HINT                                                               \
	"use an absolute path or a URL like 'file:///abs/path' with "          \
	"reserved characters percent-encoded"

int nv_filestore_path_from_url(char *path_out, size_t path_cap,
			       const char *url_or_path, nv_err *err)
{
	const char *p = url_or_path;
	size_t n = 0, seg_start;
	int is_url = 0;

	if (!p || !path_out || path_cap < 2)
		return nv_err_set(err, NV_EINVAL, URL_HINT, "no path given");
	if (strncmp(p, "file:", 5) == 0) {
		is_url = 1;
		if (strncmp(p, "file://", 7) != 0)
			return nv_err_set(err, NV_EINVAL, URL_HINT,
					  "'%s' is not a file:// URL "
					  "(expected 'file:///abs/path')",
					  url_or_path);
		p += 7;
		if (strncmp(p, "localhost/", 10) == 0)
			p += 9;
		else if (*p != '/')
			return nv_err_set(err, NV_EINVAL,
					  "a file:// URL names the local "
					  "machine: 'file:///abs/path'",
					  "'%s' names another host; only local "
					  "files are served",
					  url_or_path);
	} else if (starts_with_scheme(p)) {
		return nv_err_set(err, NV_EINVAL,
				  "this store serves file:// URLs; s3:// URLs "
				  "go to the S3 backend",
				  "'%s' is not a file:// URL", url_or_path);
	} else if (*p != '/') {
		return nv_err_set(err, NV_EINVAL, URL_HINT,
				  "'%s' is not an absolute path", url_or_path);
	}
	for (; *p; p++) {
		char c = *p;
		if (is_url && (c == '?' || c == '#'))
			return nv_err_set(err, NV_EINVAL, URL_HINT,
					  "'%s' has a query or fragment; "
					  "encode '?' as %%3F and '#' as %%23",
					  url_or_path);
		if (is_url && c == '%') {
			int hi = nv_hex_value((unsigned char)p[1]);
			int lo =
				hi < 0 ? -1 : nv_hex_value((unsigned char)p[2]);
			if (lo < 0)
				return nv_err_set(err, NV_EINVAL, URL_HINT,
						  "'%s': bad percent escape "
						  "'%.3s'",
						  url_or_path, p);
			c = (char)(hi * 16 + lo);
			if (c == '\0' || c == '/')
				return nv_err_set(err, NV_EINVAL, URL_HINT,
						  "'%s': '%.3s' would put a "
						  "%s inside a path segment",
						  url_or_path, p,
						  c ? "'/'" : "NUL");
			p += 2;
		}
		if (n + 1 >= path_cap)
			return nv_err_set(err, NV_EINVAL, URL_HINT,
					  "'%.80s...' is longer than %zu "
					  "bytes",
					  url_or_path, path_cap - 1);
		path_out[n++] = c;
	}
	path_out[n] = '\0';
	if (n > 1 && path_out[n - 1] == '/')
		path_out[--n] = '\0';
	/* Segments are checked after decoding: "%2E%2E" is still "..". */
	seg_start = 1;
	for (size_t i = 1; i <= n; i++) {
		size_t len;
		if (i < n && path_out[i] != '/')
			continue;
		len = i - seg_start;
		if (n > 1 &&
		    (len == 0 || (len == 1 && path_out[seg_start] == '.') ||
		     (len == 2 && path_out[seg_start] == '.' &&
		      path_out[seg_start + 1] == '.')))
			return nv_err_set(err, NV_EINVAL, URL_HINT,
					  "'%s': empty, '.' or '..' segment in "
					  "the path",
					  url_or_path);
		seg_start = i + 1;
	}
	return 0;
}

static int is_store_root(const char *path)
{
	char marker[NV_FILESTORE_PATH_MAX];
	struct stat st;
	int len;

	len = snprintf(marker, sizeof(marker), "%s/%s",
		       strcmp(path, "/") == 0 ? "" : path, NV_FILESTORE_MARKER);
	if (len < 0 || (size_t)len >= sizeof(marker))
		return 0;
	return lstat(marker, &st) == 0 && S_ISDIR(st.st_mode);
}

int nv_filestore_find(char *root_out, size_t root_cap, char *key_out,
		      size_t key_cap, const char *url_or_path, nv_err *err)
{
	char path[NV_FILESTORE_PATH_MAX];
	size_t cut;
	int rc;

	rc = nv_filestore_path_from_url(path, sizeof(path), url_or_path, err);
	if (rc)
		return rc;
	cut = strlen(path);
	for (;;) {
		char saved = path[cut];
		int found;
		const char *key;

		path[cut] = '\0';
		found = is_store_root(cut ? path : "/");
		path[cut] = saved;
		if (found) {
			key = path[cut] ? path + cut + 1 : "";
			if (*key) {
				rc = nv_filestore_key_check(key, err);
				if (rc)
					return rc;
			}
			if (cut + 1 > root_cap || strlen(key) + 1 > key_cap)
				return nv_err_set(err, NV_EINVAL, NULL,
						  "'%.80s': root or key longer "
						  "than the caller's buffer",
						  url_or_path);
			memcpy(root_out, cut ? path : "/", cut ? cut : 1);
			root_out[cut ? cut : 1] = '\0';
			memcpy(key_out, key, strlen(key) + 1);
			return 0;
		}
		if (cut == 0)
			break;
		while (cut > 0 && path[cut - 1] != '/')
			cut--;
		if (cut > 0)
			cut--; /* drop the slash too */
	}
	return nv_err_set(err, NV_ENOTFOUND,
			  "a store is a folder holding '" NV_FILESTORE_MARKER
			  "/'; create one with open(path, create=true)",
			  "no navette store at or above '%s'", path);
}

static int url_unreserved(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	       c == '~' || c == '/';
}

int nv_filestore_url(char *url_out, size_t url_cap, const nv_filestore *store,
		     const char *key, nv_err *err)
{
	static const char hex[] = "0123456789ABCDEF";
	char path[NV_FILESTORE_PATH_MAX];
	size_t n, i;
	int rc, len;

	rc = nv_filestore_key_check(key, err);
	if (rc)
		return rc;
	len = snprintf(path, sizeof(path), "%s/%s",
		       strcmp(store->root, "/") == 0 ? "" : store->root, key);
	if (len < 0 || (size_t)len >= sizeof(path))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "path of key '%s' is too long", key);
	if (url_cap < 8)
		return nv_err_set(err, NV_EINVAL, NULL, "URL buffer too small");
	memcpy(url_out, "file://", 7);
	n = 7;
	for (i = 0; path[i]; i++) {
		unsigned char c = (unsigned char)path[i];
		if (n + 4 > url_cap)
			return nv_err_set(err, NV_EINVAL, NULL,
					  "URL of key '%s' is longer than %zu "
					  "bytes",
					  key, url_cap - 1);
		if (url_unreserved(c)) {
			url_out[n++] = (char)c;
		} else {
			url_out[n++] = '%';
			url_out[n++] = hex[c >> 4];
			url_out[n++] = hex[c & 0xf];
		}
	}
	url_out[n] = '\0';
	return 0;
}
