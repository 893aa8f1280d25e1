/* The code layer, daemonless: a commit's tree becomes one deterministic
 * gzip tar layer (host/git/archive.h) added on top of a base image pinned
 * by digest, and the new image is pushed to a registry under a tag derived
 * from the commit. No Docker, no emulation: nothing is run, only bytes are
 * written, so an amd64 image is built the same way on any laptop.
 *
 * Steps (a failure stops them; nothing is sent before the scan of step 2
 * has passed the tree):
 *  1. resolve the commit; its time, the remote URL and the lock-file hash
 *  2. scan the commit's tree for secrets (host/creds/scan.h), in a thread
 *     of its own while steps 3 and 4 go on: a finding refuses the push
 *     (NV_EREFUSED, the findings listed) whatever they did. The clean
 *     verdicts of blobs are kept in cache_dir: an unchanged blob is not
 *     read again
 *  3. resolve the base to one platform: its manifest digest and config,
 *     whose os/architecture must be that platform (nv_image_platform_check)
 *  4. write the layer (once the scan has passed the tree, uploaded in
 *     chunks while it is written; its digest closes the upload), then the
 *     new config and manifest (manifest.h)
 *  5. make every blob present in the target repository, HEAD first: a
 *     blob the registry has is never sent again; a base layer missing
 *     there is mounted from the base repository (same registry) or copied
 *     from the base registry (another one), verified on the way
 *  6. PUT the manifest under the tag
 * The same commit, base digest, folder and source URL give the same
 * digest on every machine (the base's name, which depends on where it was
 * pulled from, is left out on purpose: the base.digest annotation pins it).
 * Pure C, no Lua. */
#ifndef NV_IMAGE_CODELAYER_H
#define NV_IMAGE_CODELAYER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/nv_err.h"
#include "git/archive.h"
#include "image/reference.h"
#include "image/registry.h"

#define NV_CODE_LAYER_TAG_LEN 12 /* hex digits of the commit in the tag */

/* Called as each step starts ("scan", "base", "pack", "push", "manifest")
 * with a detail for a human. */
typedef void (*nv_code_layer_step_fn)(void *payload, const char *step,
				      const char *detail);

typedef struct nv_code_layer_opts {
	const char *repo_path; /* a path in the repository */
	const char *commit;    /* a revision; NULL: HEAD */
	const char *base;      /* the base image reference */
	/* The target: "registry/repository" or with a ":tag" (the tag then
	 * replaces the one derived from the commit). A digest is refused. */
	const char *target;
	const char *into; /* folder of the tree in the image; NULL:
			     "/workspace" */
	/* of the base (an index's entry is chosen for it, and the base must
	 * be it); NULL: NV_IMAGE_PLATFORM_DEFAULT */
	const char *platform;
	const char *source;  /* the source label; NULL: origin's URL */
	const char *tmp_dir; /* for the layer file; NULL: $TMPDIR, /tmp */
	/* Where a pushed layer's digests are kept per commit and folder, so
	 * a second push of the commit skips packing when the target has the
	 * layer (HEAD), and the scan's clean verdicts per blob
	 * (NV_SCAN_VERDICTS_FILE); NULL: no cache. */
	const char *cache_dir;
	/* Clients of the base's and the target's registries (the same one
	 * when they are the same registry). */
	nv_registry *base_registry;
	nv_registry *target_registry;
	nv_code_layer_step_fn step;
	void *step_payload;
	/* Steps 1-4 only (the checking pass of a run): every check and the
	 * exact reference the push would make, with nothing sent. */
	bool check_only;
} nv_code_layer_opts;

typedef struct nv_code_layer_result {
	char commit[NV_GIT_OID_HEX_LEN + 1];
	char reference[NV_IMAGE_REF_MAX + 1]; /* "registry/repo@sha256:..." */
	char tagged[NV_IMAGE_REF_MAX + 1];    /* "registry/repo:tag" */
	char digest[NV_IMAGE_DIGEST_LEN + 1];
	char tag[NV_IMAGE_TAG_MAX + 1];
	char media_type[NV_OCI_MEDIA_MAX];
	char base_reference[NV_IMAGE_REF_MAX + 1]; /* base name@digest */
	char base_digest[NV_IMAGE_DIGEST_LEN + 1];
	char layer_digest[NV_IMAGE_DIGEST_LEN + 1];
	char diff_id[NV_IMAGE_DIGEST_LEN + 1];
	char config_digest[NV_IMAGE_DIGEST_LEN + 1];
	char lockfile_hash[NV_GIT_SHA256_HEX + 1];
	char source[1024];
	char into[NV_ARCHIVE_PATH_MAX];
	int64_t created; /* commit time */
	nv_archive_result archive;
	unsigned blobs_present, blobs_uploaded, blobs_mounted, blobs_copied;
	uint64_t bytes_uploaded; /* blob bytes sent to the target */
	/* the secret scan: blobs read, and those skipped for a clean verdict
	 * of an earlier push (kept in cache_dir) */
	size_t scan_blobs_read, scan_blobs_cached;
} nv_code_layer_result;

/* Builds and pushes the code layer image (steps above). */
int nv_code_layer_push(const nv_code_layer_opts *opts,
		       nv_code_layer_result *res, nv_err *err);

/* Steps 1, 2 and 4's layer only, into the file out_path: what would be
 * pushed, without a registry. res gets commit, diff_id, layer_digest,
 * archive. */
int nv_code_layer_pack(const char *repo_path, const char *commit,
		       const char *into, const char *out_path,
		       nv_code_layer_result *res, nv_err *err);

/* The tag of a commit: its first NV_CODE_LAYER_TAG_LEN hex digits. */
void nv_code_layer_tag(const char *commit, char tag[NV_IMAGE_TAG_MAX + 1]);

/* The platform nodes run when a profile does not say (images built on an
 * Apple Silicon Mac would otherwise be arm64 and fail on amd64 nodes with
 * "exec format error"). */
#define NV_IMAGE_PLATFORM_DEFAULT "linux/amd64"

/* Whether the image whose config is config[0..len) runs on platform
 * (NULL: NV_IMAGE_PLATFORM_DEFAULT): its os and architecture equal, and
 * its variant when both name one. Otherwise NV_EREFUSED naming what (the
 * image, for the message), its platform and the one wanted; a config that
 * names no os or architecture is refused too. A malformed platform:
 * NV_EINVAL; a malformed config: NV_EBACKEND. */
int nv_image_platform_check(const char *config, size_t len,
			    const char *platform, const char *what,
			    nv_err *err);

#endif
