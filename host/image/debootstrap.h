/* A Debian base image, built daemonless: debootstrap writes a minimal root
 * file system with the packages asked (every Release file checked against
 * Debian's archive keyring), buildah makes it the one layer of an image
 * from scratch (vfs storage, no daemon) and commits it, compressed, to an
 * OCI layout (layout.h pushes it with navette's registry client).
 *
 * What the image is made of (suite, variant, platform, the package list
 * sorted and without duplicates) has one hash; its tag is the suite and
 * the hash's first 12 hex digits, so a registry that has the tag has the
 * image of that list, and only a changed list builds again.
 *
 * Linux only, as root (debootstrap makes device nodes and chroots); on
 * macOS NV_EREFUSED says where to build instead. Programs are run with
 * argv, never a shell; every name passed to them is checked first.
 * Pure C, no Lua. */
#ifndef NV_IMAGE_DEBOOTSTRAP_H
#define NV_IMAGE_DEBOOTSTRAP_H

#include <stddef.h>

#include "core/nv_err.h"
#include "image/reference.h"

#define NV_DEB_PACKAGES_MAX 256
#define NV_DEB_NAME_MAX     64  /* a package's or a suite's name */
#define NV_DEB_MIRROR_MAX   512 /* a mirror's URL */
#define NV_DEB_KEYRING      "/usr/share/keyrings/debian-archive-keyring.gpg"

typedef struct nv_debootstrap_spec {
	const char *suite;    /* "bookworm" */
	const char *variant;  /* "minbase" (NULL) or "buildd" */
	const char *platform; /* NULL: NV_IMAGE_PLATFORM_DEFAULT */
	const char *const *packages;
	size_t npackages;
} nv_debootstrap_spec;

/* A Debian package name (policy 5.6.1: lowercase letters, digits, + - .,
 * starting with a letter or digit, two characters at least). */
int nv_deb_package_valid(const char *name);

/* debootstrap's --arch for an OCI platform ("linux/amd64" -> "amd64",
 * "linux/arm/v7" -> "armhf"); NV_EINVAL for a platform Debian lacks. */
int nv_deb_arch(const char *platform, char arch[16], nv_err *err);

/* Checks the spec; hash receives the sha256 of its canonical text and tag
 * "<suite>-<12 hex of hash>". */
int nv_debootstrap_identity(const nv_debootstrap_spec *s, char hash[65],
			    char tag[NV_IMAGE_TAG_MAX + 1], nv_err *err);

/* A mirror's URL is http:// or https://, a host, no user or password in
 * it (it is written into the image's sources.list), no space. */
int nv_deb_mirror_check(const char *url, nv_err *err);

/* The mirror apt uses for suite, from the text of a one-line-style
 * sources.list ("deb [opts] URL SUITE COMPONENTS") or, deb822 nonzero, a
 * .sources file ("Types: deb", "URIs:", "Suites:"): the first http(s)
 * URL of a deb entry listing suite. 0 and out set, or -1. */
int nv_apt_mirror_find(const char *text, size_t len, int deb822,
		       const char *suite, char *out, size_t cap);

/* The mirror this machine's apt uses for suite (/etc/apt/sources.list.d/
 * *.sources and *.list, then /etc/apt/sources.list); none: NV_ENOTFOUND
 * asking for one. */
int nv_apt_default_mirror(const char *suite, char *out, size_t cap,
			  nv_err *err);

typedef struct nv_debootstrap_opts {
	nv_debootstrap_spec spec;
	const char *mirror;   /* checked with nv_deb_mirror_check */
	const char *keyring;  /* NULL: NV_DEB_KEYRING */
	const char *work_dir; /* an empty folder: rootfs/ and layout/ */
	/* "KEY=VALUE" labels of the image config */
	const char *const *labels;
	size_t nlabels;
	/* buildah's storage (--root, --runroot); NULL: its own */
	const char *storage_root;
	const char *run_root;
} nv_debootstrap_opts;

/* Builds the image into work_dir/layout (an OCI layout with one image);
 * the root file system and buildah's container are removed whatever
 * happens. A program that fails: NV_EFAILED naming it (its own messages
 * went to stderr). */
int nv_image_debootstrap(const nv_debootstrap_opts *o, nv_err *err);

#endif
