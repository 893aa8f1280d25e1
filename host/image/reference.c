/* Image reference parsing and formatting (see reference.h for the grammar).
 * The parser splits from the right, as the grammar allows: "@digest" first,
 * then a ":tag" after the last '/', then the domain before the first '/';
 * each part is then checked on its own so the error can name it. */
#include "image/reference.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fsutil.h"
#include "core/hex.h"
#include "net/http.h"

static const char HINT_REF[] =
	"write it as [registry[:port]/]repository[:tag][@sha256:<64 hex>], "
	"repository in lowercase, e.g. 127.0.0.1:5000/team/app:v1";

static int is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static int is_alnum(char c)
{
	return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

int nv_image_digest_valid(const char *s)
{
	return s && strncmp(s, "sha256:", 7) == 0 && nv_hex_is_lower(s + 7, 64);
}

/* One path component of [a-z0-9]+ joined by ".", "_", "__" or "-"+. */
static int component_ok(const char *s, size_t len)
{
	size_t i = 0;

	if (len == 0 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[len - 1]))
		return 0;
	while (i < len) {
		size_t sep = 0;

		while (i < len && is_lower_alnum(s[i]))
			i++;
		if (i == len)
			break;
		if (s[i] == '.') {
			sep = 1;
		} else if (s[i] == '_') {
			sep = (i + 1 < len && s[i + 1] == '_') ? 2 : 1;
		} else if (s[i] == '-') {
			while (i + sep < len && s[i + sep] == '-')
				sep++;
		} else {
			return 0;
		}
		i += sep;
		if (i >= len || !is_lower_alnum(s[i]))
			return 0;
	}
	return 1;
}

/* host[:port]: DNS labels of [A-Za-z0-9-] (no leading or trailing '-'),
 * or a bracketed IPv6 literal; port 1..65535. */
static int domain_check(const char *d, size_t len, nv_err *err,
			const char *whole)
{
	size_t i = 0, hlen;
	const char *colon = NULL;

	if (len > 0 && d[0] == '[') {
		const char *close = memchr(d, ']', len);

		if (!close || close == d + 1)
			goto bad_host;
		for (const char *p = d + 1; p < close; p++)
			if (!(isxdigit((unsigned char)*p) || *p == ':' ||
			      *p == '.'))
				goto bad_host;
		hlen = (size_t)(close - d) + 1;
		if (hlen < len) {
			if (d[hlen] != ':')
				goto bad_host;
			colon = d + hlen;
		}
	} else {
		colon = memchr(d, ':', len);
		hlen = colon ? (size_t)(colon - d) : len;
		if (hlen == 0)
			goto bad_host;
		while (i < hlen) {
			size_t start = i;

			while (i < hlen && (is_alnum(d[i]) || d[i] == '-'))
				i++;
			if (i == start || d[start] == '-' || d[i - 1] == '-')
				goto bad_host;
			if (i < hlen) {
				if (d[i] != '.' || i + 1 == hlen)
					goto bad_host;
				i++;
			}
		}
	}
	if (colon) {
		const char *p = colon + 1, *end = d + len;
		long port = 0;

		if (p == end || end - p > 5)
			goto bad_port;
		for (; p < end; p++) {
			if (*p < '0' || *p > '9')
				goto bad_port;
			port = port * 10 + (*p - '0');
		}
		if (port < 1 || port > 65535)
			goto bad_port;
	}
	return 0;
bad_host:
	return nv_err_set(err, NV_EINVAL, HINT_REF,
			  "image reference '%.300s': registry host '%.*s' is "
			  "not a valid host name or address",
			  whole, (int)len, d);
bad_port:
	return nv_err_set(err, NV_EINVAL, HINT_REF,
			  "image reference '%.300s': registry port in '%.*s' "
			  "is not a number from 1 to 65535",
			  whole, (int)len, d);
}

static int tag_ok(const char *t, size_t len)
{
	size_t i;

	if (len == 0 || len > NV_IMAGE_TAG_MAX)
		return 0;
	if (!(is_alnum(t[0]) || t[0] == '_'))
		return 0;
	for (i = 1; i < len; i++)
		if (!(is_alnum(t[i]) || t[i] == '_' || t[i] == '.' ||
		      t[i] == '-'))
			return 0;
	return 1;
}

static int name_too_long(const char *s, nv_err *err)
{
	return nv_err_set(err, NV_EINVAL, HINT_REF,
			  "image reference '%.300s': the name is longer than "
			  "%d characters",
			  s, NV_IMAGE_NAME_MAX);
}

/* A part of the name (the whole name, or the path after the registry)
 * of len bytes: not empty (missing says what is missing then), not over
 * NV_IMAGE_NAME_MAX. */
static int name_part_check(const char *s, size_t len, const char *missing,
			   nv_err *err)
{
	if (len == 0)
		return nv_err_set(err, NV_EINVAL, HINT_REF,
				  "image reference '%.300s' has no repository "
				  "%s",
				  s, missing);
	if (len > NV_IMAGE_NAME_MAX)
		return name_too_long(s, err);
	return 0;
}

/* Not empty, not too long, printable ASCII without spaces. */
static int ref_chars_check(const char *s, nv_err *err)
{
	size_t i;

	if (!s || !s[0])
		return nv_err_set(err, NV_EINVAL, HINT_REF,
				  "empty image reference");
	if (strlen(s) > NV_IMAGE_REF_MAX)
		return nv_err_set(err, NV_EINVAL, HINT_REF,
				  "image reference '%.80s...' is longer than "
				  "%d characters",
				  s, NV_IMAGE_REF_MAX);
	for (i = 0; s[i]; i++)
		if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f)
			return nv_err_set(err, NV_EINVAL, HINT_REF,
					  "image reference '%.300s' holds a "
					  "space or a non-ASCII character at "
					  "offset %zu",
					  s, i);
	return 0;
}

/* "@digest", at the '@' of s, into out->digest. */
static int ref_digest(nv_image_ref *out, const char *s, const char *at,
		      nv_err *err)
{
	const char *d = at + 1;

	if (strchr(d, '@'))
		return nv_err_set(err, NV_EINVAL, HINT_REF,
				  "image reference '%.300s' has more than one "
				  "'@'",
				  s);
	if (strncmp(d, "sha256:", 7) != 0)
		return nv_err_set(err, NV_EINVAL,
				  "pin images with a sha256 digest",
				  "image reference '%.300s': digest '%.100s' "
				  "is not sha256:<hex>",
				  s, d);
	if (!nv_image_digest_valid(d))
		return nv_err_set(err, NV_EINVAL, HINT_REF,
				  "image reference '%.300s': digest '%.100s' "
				  "is not 64 lowercase hex digits after "
				  "sha256:",
				  s, d);
	memcpy(out->digest, d, NV_IMAGE_DIGEST_LEN + 1);
	return 0;
}

/* ":tag", after the last '/' of the name s..*name_end only (a ':' before
 * it is a port), into out->tag; *name_end moves to the ':'. */
static int ref_tag(nv_image_ref *out, const char *s, const char **name_end,
		   nv_err *err)
{
	const char *last_slash = NULL, *colon = NULL;
	size_t tlen;

	for (const char *p = s; p < *name_end; p++)
		if (*p == '/')
			last_slash = p;
	for (const char *p = last_slash ? last_slash : s; p < *name_end; p++)
		if (*p == ':')
			colon = p;
	if (!(colon && (!last_slash || colon > last_slash)))
		return 0;
	/* "host:5000" with no '/' is a name and a tag, as in Docker */
	tlen = (size_t)(*name_end - colon - 1);
	if (!tag_ok(colon + 1, tlen))
		return nv_err_set(err, NV_EINVAL, HINT_REF,
				  "image reference '%.300s': tag '%.*s' must "
				  "be 1 to 128 of [A-Za-z0-9_.-], not starting "
				  "with '.' or '-'",
				  s, (int)(tlen > 140 ? 140 : tlen), colon + 1);
	memcpy(out->tag, colon + 1, tlen);
	out->tag[tlen] = '\0';
	*name_end = colon;
	return 0;
}

/* The registry: the first component of the name s (name_len long) when it
 * looks like a domain, docker.io otherwise; *path is where the repository
 * starts. */
static int ref_domain(nv_image_ref *out, const char *s, size_t name_len,
		      const char **path, nv_err *err)
{
	const char *slash = memchr(s, '/', name_len);

	*path = s;
	if (slash) {
		size_t dlen = (size_t)(slash - s);
		int is_domain = dlen == 9 && strncmp(s, "localhost", 9) == 0;

		for (size_t i = 0; i < dlen && !is_domain; i++)
			if (s[i] == '.' || s[i] == ':' ||
			    (s[i] >= 'A' && s[i] <= 'Z'))
				is_domain = 1;
		if (is_domain) {
			int rc = domain_check(s, dlen, err, s);

			if (rc)
				return rc;
			if (dlen == 15 &&
			    strncmp(s, "index.docker.io", 15) == 0)
				snprintf(out->registry, sizeof(out->registry),
					 "%s", NV_IMAGE_DEFAULT_REGISTRY);
			else {
				memcpy(out->registry, s, dlen);
				out->registry[dlen] = '\0';
			}
			*path = slash + 1;
		}
	}
	if (!out->registry[0])
		snprintf(out->registry, sizeof(out->registry), "%s",
			 NV_IMAGE_DEFAULT_REGISTRY);
	return 0;
}

/* Why component p (clen long) of the reference s is refused. */
static int component_error(const char *s, const char *p, size_t clen,
			   nv_err *err)
{
	int upper = 0;

	for (size_t i = 0; i < clen; i++)
		if (p[i] >= 'A' && p[i] <= 'Z')
			upper = 1;
	return nv_err_set(err, NV_EINVAL, HINT_REF,
			  "image reference '%.300s': repository component "
			  "'%.*s' %s",
			  s, (int)(clen > 140 ? 140 : clen), p,
			  upper       ? "must be lowercase"
			  : clen == 0 ? "is empty (a '/' too many)"
				      : "must be [a-z0-9] words joined by '.', "
					"'_', '__' or '-'");
}

/* The repository path..name_end, component by component, into
 * out->repository ("library/" in front of a one-component docker.io
 * name). */
static int ref_path(nv_image_ref *out, const char *s, const char *path,
		    const char *name_end, nv_err *err)
{
	const char *p = path;
	size_t plen = (size_t)(name_end - path);
	int rc = name_part_check(s, plen, "after the registry", err);

	if (rc)
		return rc;
	while (p < name_end) {
		const char *e = memchr(p, '/', (size_t)(name_end - p));
		size_t clen = e ? (size_t)(e - p) : (size_t)(name_end - p);

		if (!component_ok(p, clen))
			return component_error(s, p, clen, err);
		p += clen;
		if (p < name_end)
			p++; /* the '/' */
		if (e && p == name_end)
			return nv_err_set(err, NV_EINVAL, HINT_REF,
					  "image reference '%.300s' ends its "
					  "name with '/'",
					  s);
	}
	if (strcmp(out->registry, NV_IMAGE_DEFAULT_REGISTRY) == 0 &&
	    !memchr(path, '/', plen)) {
		if (plen + 8 > NV_IMAGE_NAME_MAX)
			return name_too_long(s, err);
		snprintf(out->repository, sizeof(out->repository),
			 "library/%.*s", (int)plen, path);
	} else {
		memcpy(out->repository, path, plen);
		out->repository[plen] = '\0';
	}
	return 0;
}

int nv_image_ref_parse(nv_image_ref *out, const char *s, nv_err *err)
{
	const char *at, *name_end, *path;
	size_t name_len;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = ref_chars_check(s, err);
	if (rc)
		return rc;
	at = strchr(s, '@');
	name_end = at ? at : s + strlen(s);
	if (at) {
		rc = ref_digest(out, s, at, err);
		if (rc)
			return rc;
	}
	rc = ref_tag(out, s, &name_end, err);
	if (rc)
		return rc;
	name_len = (size_t)(name_end - s);
	rc = name_part_check(s, name_len, "name", err);
	if (rc)
		return rc;
	rc = ref_domain(out, s, name_len, &path, err);
	if (rc)
		return rc;
	rc = ref_path(out, s, path, name_end, err);
	if (rc)
		return rc;
	if (strlen(out->registry) + 1 + strlen(out->repository) >
	    NV_IMAGE_NAME_MAX)
		return name_too_long(s, err);
	if (!out->tag[0] && !out->digest[0]) {
		snprintf(out->tag, sizeof(out->tag), "latest");
		out->implicit_tag = 1;
	}
	return 0;
}

int nv_image_ref_format(const nv_image_ref *ref, int with_tag, char *buf,
			size_t cap)
{
	int tag = ref->tag[0] && (with_tag || !ref->digest[0]);

	if (nv_pathf(buf, cap, "%s/%s%s%s%s%s", ref->registry, ref->repository,
		     tag ? ":" : "", tag ? ref->tag : "",
		     ref->digest[0] ? "@" : "", ref->digest))
		return NV_ENOMEM;
	return 0;
}

int nv_image_ref_name(const nv_image_ref *ref, char *buf, size_t cap)
{
	if (nv_pathf(buf, cap, "%s/%s", ref->registry, ref->repository))
		return NV_ENOMEM;
	return 0;
}

int nv_image_ref_api_host(const nv_image_ref *ref, char *buf, size_t cap)
{
	const char *host = ref->registry;

	if (strcmp(host, NV_IMAGE_DEFAULT_REGISTRY) == 0)
		host = NV_IMAGE_DOCKER_HUB_API;
	if (nv_pathf(buf, cap, "%s", host))
		return NV_ENOMEM;
	return 0;
}

int nv_image_ref_api_base(const nv_image_ref *ref, char *buf, size_t cap)
{
	char host[NV_IMAGE_NAME_MAX + 1], bare[NV_IMAGE_NAME_MAX + 1];
	size_t hlen;

	if (nv_image_ref_api_host(ref, host, sizeof(host)))
		return NV_ENOMEM;
	/* the host without its port, for the loopback test */
	if (host[0] == '[') {
		char *close = strchr(host, ']');
		hlen = close ? (size_t)(close - host) + 1 : strlen(host);
	} else {
		char *colon = strchr(host, ':');
		hlen = colon ? (size_t)(colon - host) : strlen(host);
	}
	memcpy(bare, host, hlen);
	bare[hlen] = '\0';
	if (nv_pathf(buf, cap, "%s://%s",
		     nv_http_host_is_loopback(bare) ? "http" : "https", host))
		return NV_ENOMEM;
	return 0;
}
