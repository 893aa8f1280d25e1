/* External image builders for projects with a Dockerfile/Containerfile:
 * buildah, podman or docker, run as the installed command (never through a
 * shell), building the file, pushing the result and reporting the digest
 * the push produced. buildah and podman run daemonless, with vfs storage
 * and chroot isolation, so they work without privileges or a daemon
 * (STACK.md); docker needs its daemon. Their output goes to our stderr.
 * Pure C, no Lua. */
#ifndef NV_IMAGE_BUILDER_H
#define NV_IMAGE_BUILDER_H

#include <stddef.h>

#include "core/nv_err.h"
#include "image/reference.h"

#define NV_BUILD_ARGS_MAX 64 /* build args and labels, together */

typedef struct nv_build_opts {
	const char *builder; /* "buildah", "podman", "docker"; NULL: the
				first of them installed */
	const char *file;    /* the Containerfile/Dockerfile */
	const char *context; /* the build context folder */
	/* always passed: NULL is NV_IMAGE_PLATFORM_DEFAULT (linux/amd64),
	 * never the builder's own default (this machine's) */
	const char *platform;
	const char *target; /* full reference to tag and push, with a tag */
	/* "KEY=VALUE" each */
	const char *const *build_args;
	size_t nbuild_args;
	const char *const *labels;
	size_t nlabels;
	/* buildah/podman storage (--root, --runroot); NULL: theirs */
	const char *storage_root;
	const char *run_root;
} nv_build_opts;

typedef struct nv_build_result {
	char builder[16];
	char digest[NV_IMAGE_DIGEST_LEN + 1]; /* of the pushed manifest */
} nv_build_result;

/* Which builder would run: opts->builder if installed, else the first
 * installed; none: NV_EREFUSED naming what to install. */
int nv_build_pick(const char *builder, char out[16], nv_err *err);

/* Whether name is an executable file in a folder of PATH. */
int nv_build_on_path(const char *name);

/* Runs argv (no shell; stdin /dev/null); its stdout goes to our stderr,
 * or into capture (bounded, also echoed to stderr). A program that exits
 * non-zero: NV_EFAILED naming it and its status. */
int nv_build_run(const char *const *argv, char *capture, size_t cap,
		 nv_err *err);

/* Appends buildah/podman's global storage flags to argv at n (--root,
 * --runroot when given, then --storage-driver vfs) -> the new count. */
int nv_build_storage_args(const char *storage_root, const char *run_root,
			  const char **argv, int n);

/* Builds and pushes. A builder that fails: NV_EFAILED with its exit
 * status (its own messages are on stderr). Plain-http registries are
 * accepted (--tls-verify=false) only on loopback hosts. */
int nv_image_build(const nv_build_opts *opts, nv_build_result *res,
		   nv_err *err);

#endif
