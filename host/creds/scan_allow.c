/* The allow-list of the secret scanner (.navette-secrets-allow, see
 * scan.h): parsing it, and matching a path against its globs. */
#include "creds/scan.h"
#include "creds/scan_internal.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GLOB_MAX      1024
#define GLOB_MAX_SEGS 64
#define PATH_MAX_SEGS 256

/* ---- allow-list --------------------------------------------------------- */

struct allow_entry {
	char *glob;
	char *reason;
};

struct nv_scan_allowlist {
	struct allow_entry *e;
	size_t n;
};

void nv_scan_allowlist_free(nv_scan_allowlist *al)
{
	size_t i;

	if (!al)
		return;
	for (i = 0; i < al->n; i++) {
		free(al->e[i].glob);
		free(al->e[i].reason);
	}
	free(al->e);
	free(al);
}

/* Splits s in place on '/'; returns the number of parts, or 0 when there
 * are more than max or an empty one. */
static size_t split_path(char *s, char **parts, size_t max)
{
	size_t n = 0;
	char *p = s;

	for (;;) {
		char *slash = strchr(p, '/');

		if (n == max)
			return 0;
		parts[n++] = p;
		if (!slash)
			break;
		*slash = '\0';
		p = slash + 1;
	}
	for (max = 0; max < n; max++)
		if (!parts[max][0])
			return 0;
	return n;
}

/* Whole-path glob match, component by component: "**" matches any number
 * of components, other components go to fnmatch. Dynamic programming over
 * (pattern part, path part), so the cost is bounded whatever the stars. */
static int glob_match(const char *glob, const char *path)
{
	char gbuf[GLOB_MAX + 4], pbuf[PATH_CAP];
	char *gp[GLOB_MAX_SEGS], *pp[PATH_MAX_SEGS];
	unsigned char row[PATH_MAX_SEGS + 1], next[PATH_MAX_SEGS + 1];
	size_t gn, pn, i, j;

	if (strlen(glob) >= sizeof(gbuf) || strlen(path) >= sizeof(pbuf))
		return 0;
	memcpy(gbuf, glob, strlen(glob) + 1);
	memcpy(pbuf, path, strlen(path) + 1);
	gn = split_path(gbuf, gp, GLOB_MAX_SEGS);
	pn = split_path(pbuf, pp, PATH_MAX_SEGS);
	if (!gn || !pn)
		return 0;
	/* next[j]: parts gp[i+1..] match pp[j..] */
	for (j = 0; j <= pn; j++)
		next[j] = j == pn;
	for (i = gn; i-- > 0;) {
		int any = strcmp(gp[i], "**") == 0;

		row[pn] = any ? next[pn] : 0;
		for (j = pn; j-- > 0;) {
			if (any)
				row[j] = next[j] || row[j + 1];
			else
				row[j] = next[j + 1] &&
					 fnmatch(gp[i], pp[j], 0) == 0;
		}
		memcpy(next, row, pn + 1);
	}
	return next[0];
}

const char *nv_scan_allowlist_match(const nv_scan_allowlist *al,
				    const char *path)
{
	size_t i;

	if (!al || !path)
		return NULL;
	for (i = 0; i < al->n; i++)
		if (glob_match(al->e[i].glob, path))
			return al->e[i].reason;
	return NULL;
}

static char *dup_range(const char *s, size_t n, const char *suffix)
{
	size_t sl = suffix ? strlen(suffix) : 0;
	char *d = malloc(n + sl + 1);

	if (!d)
		return NULL;
	memcpy(d, s, n);
	memcpy(d + n, suffix ? suffix : "", sl);
	d[n + sl] = '\0';
	return d;
}

/* Returns nonzero only when the callback asked to stop: a full findings
 * cap must not drop the entries that follow. */
static int bad_allow_line(struct scan_ctx *c, size_t line, const char *why)
{
	char reason[REASON_MAX];

	snprintf(reason, sizeof(reason), "allow-list line ignored: %s", why);
	scan_report(c, line, RULE_ALLOWLIST, reason, NULL, 0);
	return c->stop;
}

int scan_allowlist_load(struct scan_ctx *c, nv_scan_allowlist **out,
			const char *text, size_t len, nv_err *err)
{
	nv_scan_allowlist *al;
	const char *p = text, *end = text + len;
	size_t line = 0;

	*out = NULL;
	al = calloc(1, sizeof(*al));
	if (!al)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	c->path = NV_SCAN_ALLOW_FILE;
	c->allowed = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end, *g, *ge, *r, *re;
		struct allow_entry *e;
		const char *slash = "";

		line++;
		for (g = p;
		     g < le && (is_blank((unsigned char)*g) || *g == '\r'); g++)
			;
		for (re = le; re > g && (is_blank((unsigned char)re[-1]) ||
					 re[-1] == '\r');
		     re--)
			;
		p = nl ? nl + 1 : end;
		if (g == re || *g == '#')
			continue;
		for (ge = g; ge < re && !is_blank((unsigned char)*ge); ge++)
			;
		/* "@library URL GLOB REASON": what the project grants a
		 * library (library.lua reads it), not a path of its own */
		if ((size_t)(ge - g) == sizeof(NV_SCAN_ALLOW_LIBRARY) - 1 &&
		    memcmp(g, NV_SCAN_ALLOW_LIBRARY, (size_t)(ge - g)) == 0)
			continue;
		for (r = ge; r < re && is_blank((unsigned char)*r); r++)
			;
		if (memchr(g, '\0', (size_t)(re - g))) {
			if (bad_allow_line(c, line, "it holds a NUL byte"))
				goto stop;
			continue;
		}
		if (r == re) {
			if (bad_allow_line(c, line,
					   "write why this path may hold a "
					   "secret after the glob"))
				goto stop;
			continue;
		}
		/* Globs are relative to the root: "/x" and "./x" mean "x";
		 * "dir/" means everything below dir. */
		if (*g == '/')
			g++;
		else if (ge - g >= 2 && g[0] == '.' && g[1] == '/')
			g += 2;
		if (ge > g && ge[-1] == '/')
			slash = "**";
		if (ge == g || (size_t)(ge - g) > GLOB_MAX) {
			if (bad_allow_line(c, line, "empty or too long glob"))
				goto stop;
			continue;
		}
		if (al->n == NV_SCAN_ALLOW_MAX) {
			nv_scan_allowlist_free(al);
			return nv_err_set(
				err, NV_EINVAL, "use ** globs to cover folders",
				"%s has more than %d entries",
				NV_SCAN_ALLOW_FILE, NV_SCAN_ALLOW_MAX);
		}
		if (al->n % 16 == 0) {
			e = realloc(al->e, (al->n + 16) * sizeof(*e));
			if (!e)
				goto nomem;
			al->e = e;
		}
		e = &al->e[al->n];
		e->glob = dup_range(g, (size_t)(ge - g), slash);
		e->reason = dup_range(r, (size_t)(re - r), NULL);
		al->n++;
		if (!e->glob || !e->reason)
			goto nomem;
	}
	*out = al;
	return 0;

nomem:
	nv_scan_allowlist_free(al);
	return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
stop:
	nv_scan_allowlist_free(al);
	return c->stop;
}

int nv_scan_allowlist_load(nv_scan_allowlist **out, const char *text,
			   size_t len, nv_scan_cb cb, void *payload,
			   nv_scan_stats *stats, nv_err *err)
{
	struct scan_ctx c;
	nv_scan_stats local;

	memset(&c, 0, sizeof(c));
	c.cb = cb;
	c.payload = payload;
	c.st = scan_stats_or(stats, &local);
	return scan_allowlist_load(&c, out, text ? text : "", text ? len : 0,
				   err);
}
