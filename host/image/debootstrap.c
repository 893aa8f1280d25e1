/* Debian base images by debootstrap and buildah (see debootstrap.h). */
#include "image/debootstrap.h"

#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/mount.h>
#endif

#include "core/buf.h"
#include "core/fsutil.h"
#include "image/builder.h"
#include "image/codelayer.h"
#include "image/manifest.h"
#include "core/sha256.h"

#define DEB_ARGV_MAX (24 + NV_BUILD_ARGS_MAX * 2)

int nv_deb_package_valid(const char *name)
{
	size_t i, n = name ? strlen(name) : 0;

	if (n < 2 || n > NV_DEB_NAME_MAX)
		return 0;
	for (i = 0; i < n; i++) {
		char c = name[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');

		if (!alnum && (i == 0 || (c != '+' && c != '-' && c != '.')))
			return 0;
	}
	return 1;
}

/* A suite's name: lowercase letters, digits and '-', a letter first. */
static int suite_valid(const char *s)
{
	size_t i, n = s ? strlen(s) : 0;

	if (n == 0 || n > NV_DEB_NAME_MAX || s[0] < 'a' || s[0] > 'z')
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return 0;
	return 1;
}

static const struct {
	const char *platform, *arch, *machine;
} ARCHES[] = {
	{"linux/amd64", "amd64", "x86_64"},
	{"linux/arm64", "arm64", "aarch64"},
	{"linux/arm64/v8", "arm64", "aarch64"},
	{"linux/arm/v7", "armhf", "armv7l"},
	{"linux/386", "i386", "i686"},
	{"linux/ppc64le", "ppc64el", "ppc64le"},
	{"linux/s390x", "s390x", "s390x"},
	{NULL, NULL, NULL},
};

int nv_deb_arch(const char *platform, char arch[16], nv_err *err)
{
	const char *p = platform ? platform : NV_IMAGE_PLATFORM_DEFAULT;

	for (int i = 0; ARCHES[i].platform; i++)
		if (strcmp(p, ARCHES[i].platform) == 0) {
			snprintf(arch, 16, "%s", ARCHES[i].arch);
			return 0;
		}
	return nv_err_set(err, NV_EINVAL,
			  "linux/amd64, linux/arm64, linux/arm/v7, "
			  "linux/386, linux/ppc64le or linux/s390x",
			  "Debian has no port for the platform '%.40s'", p);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int nv_debootstrap_identity(const nv_debootstrap_spec *s, char hash[65],
			    char tag[NV_IMAGE_TAG_MAX + 1], nv_err *err)
{
	const char *sorted[NV_DEB_PACKAGES_MAX];
	const char *variant = s->variant ? s->variant : "minbase";
	char arch[16];
	nv_buf text;
	size_t i;
	int rc;

	if (!suite_valid(s->suite))
		return nv_err_set(err, NV_EINVAL,
				  "a Debian suite: bookworm, trixie...",
				  "'%.40s' is not a suite's name",
				  s->suite ? s->suite : "");
	if (strcmp(variant, "minbase") != 0 && strcmp(variant, "buildd") != 0)
		return nv_err_set(err, NV_EINVAL, "minbase or buildd",
				  "unknown debootstrap variant '%.40s'",
				  variant);
	rc = nv_deb_arch(s->platform, arch, err);
	if (rc)
		return rc;
	if (s->npackages > NV_DEB_PACKAGES_MAX)
		return nv_err_set(err, NV_EINVAL, NULL, "more than %d packages",
				  NV_DEB_PACKAGES_MAX);
	for (i = 0; i < s->npackages; i++) {
		if (!nv_deb_package_valid(s->packages[i]))
			return nv_err_set(
				err, NV_EINVAL,
				"a Debian package's name: lowercase letters, "
				"digits, + - and . (apt-cache search finds it)",
				"'%.64s' is not a package's name",
				s->packages[i]);
		sorted[i] = s->packages[i];
	}
	qsort(sorted, s->npackages, sizeof(sorted[0]), cmp_str);
	nv_buf_init(&text, 64 * 1024);
	nv_buf_printf(&text,
		      "navette debootstrap 1\nsuite %s\nvariant %s\n"
		      "platform %s\n",
		      s->suite, variant,
		      s->platform ? s->platform : NV_IMAGE_PLATFORM_DEFAULT);
	for (i = 0; i < s->npackages; i++)
		if (i == 0 || strcmp(sorted[i], sorted[i - 1]) != 0)
			nv_buf_printf(&text, "package %s\n", sorted[i]);
	if (text.failed)
		rc = nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	else
		rc = nv_sha256_bytes(text.data, text.len, hash, err);
	nv_buf_free(&text);
	if (!rc)
		snprintf(tag, NV_IMAGE_TAG_MAX + 1, "%s-%.12s", s->suite, hash);
	return rc;
}

int nv_deb_mirror_check(const char *url, nv_err *err)
{
	const char *host, *end;
	size_t n = url ? strlen(url) : 0;

	if (n == 0 || n > NV_DEB_MIRROR_MAX)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "the mirror's URL is empty or over %d "
				  "characters",
				  NV_DEB_MIRROR_MAX);
	if (strncmp(url, "http://", 7) == 0)
		host = url + 7;
	else if (strncmp(url, "https://", 8) == 0)
		host = url + 8;
	else
		return nv_err_set(err, NV_EINVAL,
				  "give the http:// or https:// URL of a "
				  "Debian mirror",
				  "the mirror '%.80s' is not an http(s) URL",
				  url);
	for (const char *p = url; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return nv_err_set(err, NV_EINVAL, NULL,
					  "the mirror's URL holds a space or "
					  "a control character");
	end = host + strcspn(host, "/?#");
	if (end == host)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "the mirror '%.80s' names no host", url);
	if (memchr(host, '@', (size_t)(end - host)))
		return nv_err_set(err, NV_EINVAL,
				  "give the mirror without credentials: the "
				  "URL is written into the image's "
				  "sources.list",
				  "the mirror's URL holds a user or password");
	return 0;
}

/* The next line of text (without its newline) into line; 0 at the end. */
static int next_line(const char **p, const char *end, char *line, size_t cap)
{
	const char *s = *p, *nl;
	size_t n;

	if (s >= end)
		return 0;
	nl = memchr(s, '\n', (size_t)(end - s));
	if (!nl)
		nl = end;
	n = (size_t)(nl - s);
	if (n >= cap)
		n = cap - 1;
	memcpy(line, s, n);
	line[n] = '\0';
	line[strcspn(line, "\r")] = '\0';
	*p = nl < end ? nl + 1 : end;
	return 1;
}

/* Whether the space-separated list holds word. */
static int has_word(const char *list, const char *word)
{
	size_t w = strlen(word);

	while (*list) {
		size_t n;

		list += strspn(list, " \t");
		n = strcspn(list, " \t");
		if (n == w && strncmp(list, word, n) == 0)
			return 1;
		list += n;
	}
	return 0;
}

/* The first http(s) word of list into out. */
static int first_http(const char *list, char *out, size_t cap)
{
	while (*list) {
		size_t n;

		list += strspn(list, " \t");
		n = strcspn(list, " \t");
		if (n > 0 && n < cap &&
		    (strncmp(list, "http://", 7) == 0 ||
		     strncmp(list, "https://", 8) == 0)) {
			memcpy(out, list, n);
			out[n] = '\0';
			return 0;
		}
		list += n;
	}
	return -1;
}

/* apt's false: no, false, off, without, disable (any case). */
static int bool_false(const char *v)
{
	static const char *const words[] = {"no",      "false",   "off",
					    "without", "disable", NULL};
	size_t n;

	v += strspn(v, " \t");
	n = strcspn(v, " \t");
	for (int i = 0; words[i]; i++)
		if (n == strlen(words[i]) && strncasecmp(v, words[i], n) == 0)
			return 1;
	return 0;
}

/* A continuation line (it starts with a space) added to its field. */
static void append_field(char *field, size_t cap, const char *line)
{
	size_t have = strlen(field), add = strlen(line);

	if (have + add + 1 < cap) {
		memcpy(field + have, line, add + 1);
	}
}

static int find_deb822(const char *text, size_t len, const char *suite,
		       char *out, size_t cap)
{
	const char *p = text, *end = text + len;
	char line[2048], types[2048] = "", uris[2048] = "", suites[2048] = "";
	char *last = NULL; /* the field a continuation line adds to */
	int more, disabled = 0;

	do {
		more = next_line(&p, end, line, sizeof(line));
		if (more && line[0] == '#') /* a comment, not a blank line */
			continue;
		if (!more || line[strspn(line, " \t")] == '\0') {
			if (!disabled && has_word(types, "deb") &&
			    has_word(suites, suite) &&
			    first_http(uris, out, cap) == 0)
				return 0;
			types[0] = uris[0] = suites[0] = '\0';
			disabled = 0;
			last = NULL;
			continue;
		}
		if (line[0] != ' ' && line[0] != '\t')
			last = NULL; /* a field of its own */
		if (strncasecmp(line, "Types:", 6) == 0)
			snprintf(last = types, sizeof(types), "%s", line + 6);
		else if (strncasecmp(line, "URIs:", 5) == 0)
			snprintf(last = uris, sizeof(uris), "%s", line + 5);
		else if (strncasecmp(line, "Suites:", 7) == 0)
			snprintf(last = suites, sizeof(suites), "%s", line + 7);
		else if (strncasecmp(line, "Enabled:", 8) == 0)
			disabled = bool_false(line + 8);
		else if ((line[0] == ' ' || line[0] == '\t') && last)
			append_field(last, sizeof(uris), line);
	} while (more);
	return -1;
}

static int find_one_line(const char *text, size_t len, const char *suite,
			 char *out, size_t cap)
{
	const char *p = text, *end = text + len;
	char line[2048];

	while (next_line(&p, end, line, sizeof(line))) {
		char *s = line + strspn(line, " \t"), *url, *st;
		size_t n;

		line[strcspn(line, "#")] = '\0';
		if (strncmp(s, "deb", 3) != 0 || (s[3] != ' ' && s[3] != '\t'))
			continue;
		s += 3 + strspn(s + 3, " \t");
		if (*s == '[') { /* options */
			char *close = strchr(s, ']');

			if (!close)
				continue;
			s = close + 1 + strspn(close + 1, " \t");
		}
		url = s;
		n = strcspn(url, " \t");
		st = url + n + strspn(url + n, " \t");
		if (strncmp(st, suite, strlen(suite)) != 0 ||
		    (st[strlen(suite)] != ' ' && st[strlen(suite)] != '\t' &&
		     st[strlen(suite)] != '\0'))
			continue;
		if (n >= cap || (strncmp(url, "http://", 7) != 0 &&
				 strncmp(url, "https://", 8) != 0))
			continue;
		memcpy(out, url, n);
		out[n] = '\0';
		return 0;
	}
	return -1;
}

int nv_apt_mirror_find(const char *text, size_t len, int deb822,
		       const char *suite, char *out, size_t cap)
{
	if (!text || !suite || !suite[0] || cap == 0)
		return -1;
	return deb822 ? find_deb822(text, len, suite, out, cap)
		      : find_one_line(text, len, suite, out, cap);
}

static int mirror_in_file(const char *path, int deb822, const char *suite,
			  char *out, size_t cap)
{
	char *text = NULL;
	size_t len = 0;
	nv_err ignored;
	int rc = -1;

	if (nv_read_file(&text, &len, path, 1024 * 1024, &ignored) == 0)
		rc = nv_apt_mirror_find(text, len, deb822, suite, out, cap);
	free(text);
	return rc;
}

int nv_apt_default_mirror(const char *suite, char *out, size_t cap, nv_err *err)
{
	static const char *const patterns[] = {
		"/etc/apt/sources.list.d/*.sources",
		"/etc/apt/sources.list.d/*.list", NULL};

	for (int k = 0; patterns[k]; k++) {
		glob_t g;

		if (glob(patterns[k], 0, NULL, &g) != 0)
			continue;
		for (size_t i = 0; i < g.gl_pathc; i++)
			if (mirror_in_file(g.gl_pathv[i], k == 0, suite, out,
					   cap) == 0) {
				globfree(&g);
				return 0;
			}
		globfree(&g);
	}
	if (mirror_in_file("/etc/apt/sources.list", 0, suite, out, cap) == 0)
		return 0;
	return nv_err_set(
		err, NV_ENOTFOUND, "give `mirror`, the URL of a Debian mirror",
		"this machine's apt sources name no mirror for %s", suite);
}

#ifdef __APPLE__
/* macOS has no debootstrap, and its buildah is a client of a VM. */
static int host_can_build(const char *arch, nv_err *err)
{
	(void)arch;
	return nv_err_set(err, NV_EREFUSED,
			  "build it from a Linux machine (a CI job or a "
			  "node): the image is pushed to the registry, and "
			  "this Mac's jobs use it from there",
			  "a Debian image is built by debootstrap and "
			  "buildah, which run on Linux only");
}
#else
static int host_can_build(const char *arch, nv_err *err)
{
	struct utsname u;
	const char *here = NULL;

	if (geteuid() != 0)
		return nv_err_set(err, NV_EREFUSED,
				  "run it as root (on a build machine or "
				  "in CI)",
				  "debootstrap runs as root only (it "
				  "makes device nodes and chroots)");
	if (uname(&u) == 0)
		for (int i = 0; ARCHES[i].platform; i++)
			if (strcmp(u.machine, ARCHES[i].machine) == 0)
				here = ARCHES[i].arch;
	if (!here || strcmp(here, arch) != 0)
		return nv_err_set(err, NV_EREFUSED,
				  "build it on a machine of that platform "
				  "(navette uses no emulation)",
				  "this machine (%s) cannot build %s "
				  "packages' image",
				  u.machine, arch);
	return 0;
}
#endif

/* The .deb files and package lists debootstrap leaves: not in the image. */
static void remove_files_in(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		char path[4200];
		struct stat st;
		size_t n = strlen(e->d_name), k = suffix ? strlen(suffix) : 0;

		if (e->d_name[0] == '.' || strcmp(e->d_name, "lock") == 0)
			continue;
		if (suffix && (n < k || strcmp(e->d_name + n - k, suffix)))
			continue;
		if (nv_pathf(path, sizeof(path), "%s/%s", dir, e->d_name) ==
			    0 &&
		    lstat(path, &st) == 0 && S_ISREG(st.st_mode))
			unlink(path);
	}
	closedir(d);
}

/* What debootstrap may leave mounted in the root when it stops early. */
static void unmount_rootfs(const char *rootfs)
{
#ifdef __linux__
	static const char *const under[] = {"dev/pts", "dev", "proc", "sys",
					    NULL};

	for (int i = 0; under[i]; i++) {
		char path[4200];

		if (nv_pathf(path, sizeof(path), "%s/%s", rootfs, under[i]) ==
		    0)
			umount2(path, MNT_DETACH);
	}
#else
	(void)rootfs;
#endif
}

/* buildah [--root R --runroot R] --storage-driver vfs */
static int buildah_argv(const nv_debootstrap_opts *o, const char **argv)
{
	argv[0] = "buildah";
	return nv_build_storage_args(o->storage_root, o->run_root, argv, 1);
}

/* Runs a buildah subcommand with one argument, capturing its one line. */
static int buildah_line(const nv_debootstrap_opts *o, const char *sub,
			const char *arg, char *out, size_t cap, nv_err *err)
{
	const char *argv[16];
	int n = buildah_argv(o, argv), rc;

	argv[n++] = sub;
	argv[n++] = arg;
	argv[n] = NULL;
	rc = nv_build_run(argv, out, cap, err);
	if (!rc) {
		out[strcspn(out, "\r\n")] = '\0';
		if (!out[0])
			rc = nv_err_set(err, NV_EBACKEND, NULL,
					"buildah %s printed nothing", sub);
	}
	return rc;
}

static int make_image(const nv_debootstrap_opts *o, const char *rootfs,
		      const char *layout, char *cid, size_t cidcap, nv_err *err)
{
	const char *argv[DEB_ARGV_MAX];
	char mnt[4096], from[4200], dest[4300];
	char os[32], arch[32], variant[32];
	int n, rc;
	size_t i;

	/* the image config's platform, as OCI names it (not Debian's) */
	rc = nv_oci_platform_parse(o->spec.platform ? o->spec.platform
						    : NV_IMAGE_PLATFORM_DEFAULT,
				   os, arch, variant, err);
	if (rc)
		return rc;
	rc = buildah_line(o, "from", "scratch", cid, cidcap, err);
	if (rc)
		return rc;
	rc = buildah_line(o, "mount", cid, mnt, sizeof(mnt), err);
	if (rc)
		return rc;
	if (nv_pathf(from, sizeof(from), "%s/.", rootfs))
		return nv_err_set(err, NV_EINVAL, NULL, "path too long");
	{
		const char *cp[] = {"cp", "-a", "--", from, mnt, NULL};

		rc = nv_build_run(cp, NULL, 0, err);
		if (rc)
			return rc;
	}
	n = buildah_argv(o, argv);
	argv[n++] = "config";
	argv[n++] = "--os";
	argv[n++] = os;
	argv[n++] = "--arch";
	argv[n++] = arch;
	if (variant[0]) {
		argv[n++] = "--variant";
		argv[n++] = variant;
	}
	argv[n++] = "--env";
	argv[n++] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:"
		    "/sbin:/bin";
	argv[n++] = "--env";
	argv[n++] = "LANG=C.UTF-8";
	argv[n++] = "--cmd";
	argv[n++] = "/bin/bash";
	for (i = 0; i < o->nlabels && i < NV_BUILD_ARGS_MAX; i++) {
		argv[n++] = "--label";
		argv[n++] = o->labels[i];
	}
	argv[n++] = cid;
	argv[n] = NULL;
	rc = nv_build_run(argv, NULL, 0, err);
	if (rc)
		return rc;
	if (nv_pathf(dest, sizeof(dest), "oci:%s", layout))
		return nv_err_set(err, NV_EINVAL, NULL, "path too long");
	n = buildah_argv(o, argv);
	argv[n++] = "commit";
	argv[n++] = "--quiet";
	argv[n++] = "--format";
	argv[n++] = "oci";
	argv[n++] = "--disable-compression=false";
	argv[n++] = "--timestamp";
	argv[n++] = "0";
	argv[n++] = cid;
	argv[n++] = dest;
	argv[n] = NULL;
	return nv_build_run(argv, NULL, 0, err);
}

int nv_image_debootstrap(const nv_debootstrap_opts *o, nv_err *err)
{
	const char *argv[DEB_ARGV_MAX];
	char hash[65], tag[NV_IMAGE_TAG_MAX + 1], arch[16];
	char rootfs[4096], layout[4096], path[4200], cid[256] = "";
	char keyring[4200], archopt[32];
	nv_buf include;
	struct stat st;
	int n = 0, rc;
	size_t i;

	if (!o || !o->mirror || !o->work_dir)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "debootstrap: mirror and work_dir are "
				  "required");
	if (o->nlabels > NV_BUILD_ARGS_MAX)
		return nv_err_set(err, NV_EINVAL, NULL, "more than %d labels",
				  NV_BUILD_ARGS_MAX);
	rc = nv_debootstrap_identity(&o->spec, hash, tag, err);
	if (!rc)
		rc = nv_deb_mirror_check(o->mirror, err);
	if (!rc)
		rc = nv_deb_arch(o->spec.platform, arch, err);
	if (!rc)
		rc = host_can_build(arch, err);
	if (rc)
		return rc;
	if (!nv_build_on_path("debootstrap") || !nv_build_on_path("buildah"))
		return nv_err_set(err, NV_EREFUSED,
				  "install them (Debian: apt-get install "
				  "debootstrap buildah)",
				  "debootstrap and buildah are needed to "
				  "build a Debian image");
	if (stat(o->keyring ? o->keyring : NV_DEB_KEYRING, &st) != 0)
		return nv_err_set(err, NV_EREFUSED,
				  "install debian-archive-keyring: without "
				  "it nothing downloaded can be checked",
				  "no keyring at %s",
				  o->keyring ? o->keyring : NV_DEB_KEYRING);
	if (nv_pathf(rootfs, sizeof(rootfs), "%s/rootfs", o->work_dir) ||
	    nv_pathf(layout, sizeof(layout), "%s/layout", o->work_dir) ||
	    nv_pathf(keyring, sizeof(keyring), "--keyring=%s",
		     o->keyring ? o->keyring : NV_DEB_KEYRING))
		return nv_err_set(err, NV_EINVAL, NULL, "path too long");
	snprintf(archopt, sizeof(archopt), "--arch=%s", arch);
	nv_buf_init(&include, 64 * 1024);
	nv_buf_puts(&include, "--include=");
	for (i = 0; i < o->spec.npackages; i++)
		nv_buf_printf(&include, "%s%s", i ? "," : "",
			      o->spec.packages[i]);
	if (include.failed) {
		nv_buf_free(&include);
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	}
	argv[n++] = "debootstrap";
	argv[n++] = o->spec.variant && strcmp(o->spec.variant, "buildd") == 0
			    ? "--variant=buildd"
			    : "--variant=minbase";
	argv[n++] = archopt;
	argv[n++] = keyring;
	argv[n++] = "--force-check-gpg";
	argv[n++] = "--components=main";
	if (o->spec.npackages)
		argv[n++] = include.data;
	argv[n++] = o->spec.suite;
	argv[n++] = rootfs;
	argv[n++] = o->mirror;
	argv[n] = NULL;
	rc = nv_build_run(argv, NULL, 0, err);
	nv_buf_free(&include);
	unmount_rootfs(rootfs);
	if (!rc) {
		nv_pathf(path, sizeof(path), "%s/var/cache/apt/archives",
			 rootfs);
		remove_files_in(path, ".deb");
		nv_pathf(path, sizeof(path), "%s/var/lib/apt/lists", rootfs);
		remove_files_in(path, NULL);
		rc = make_image(o, rootfs, layout, cid, sizeof(cid), err);
	}
	if (cid[0]) {
		const char *rm[16];
		char ignored[256];
		int k = buildah_argv(o, rm);
		nv_err e2;

		rm[k++] = "rm";
		rm[k++] = cid;
		rm[k] = NULL;
		nv_build_run(rm, ignored, sizeof(ignored), &e2);
	}
	{
		nv_err e2;

		nv_remove_tree(rootfs, &e2);
	}
	return rc;
}
