/* External builders (see builder.h). Each step is one argv, run by
 * core/proc: no shell, so no quoting can go wrong. */
#include "image/builder.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fsutil.h"
#include "core/proc.h"
#include "image/codelayer.h"
#include "net/http.h"

#define ARGV_MAX (40 + 2 * NV_BUILD_ARGS_MAX)

static const char *const BUILDERS[] = {"buildah", "podman", "docker", NULL};

int nv_build_on_path(const char *name)
{
	const char *path = getenv("PATH");
	char dir[4096], full[4200];

	if (!path)
		path = "/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");

		if (n > 0 && n < sizeof(dir)) {
			memcpy(dir, path, n);
			dir[n] = '\0';
			if (nv_pathf(full, sizeof(full), "%s/%s", dir, name) ==
				    0 &&
			    access(full, X_OK) == 0)
				return 1;
		}
		path += n;
		if (*path == ':')
			path++;
	}
	return 0;
}

int nv_build_pick(const char *builder, char out[16], nv_err *err)
{
	size_t i;

	out[0] = '\0';
	if (builder && builder[0]) {
		for (i = 0; BUILDERS[i]; i++)
			if (strcmp(builder, BUILDERS[i]) == 0)
				break;
		if (!BUILDERS[i])
			return nv_err_set(
				err, NV_EINVAL,
				"builder is buildah, podman or docker",
				"unknown builder '%.40s'", builder);
		if (!nv_build_on_path(builder))
			return nv_err_set(
				err, NV_EREFUSED,
				"install it (Debian: apt-get install "
				"buildah/podman/docker.io; macOS: brew install "
				"podman), or choose another builder",
				"builder '%s' is not installed (not found on "
				"PATH)",
				builder);
		snprintf(out, 16, "%s", builder);
		return 0;
	}
	for (i = 0; BUILDERS[i]; i++)
		if (nv_build_on_path(BUILDERS[i])) {
			snprintf(out, 16, "%s", BUILDERS[i]);
			return 0;
		}
	return nv_err_set(err, NV_EREFUSED,
			  "install buildah or podman (Debian: apt-get install "
			  "buildah; macOS: brew install podman), or use "
			  "image.code_layer, which needs no builder",
			  "no image builder installed (buildah, podman or "
			  "docker)");
}

int nv_build_run(const char *const *argv, char *capture, size_t cap,
		 nv_err *err)
{
	nv_proc_opts o = {0};
	nv_proc_result r;
	int rc, why;

	o.argv = argv;
	o.search_path = 1;
	/* its messages go where ours do; its stdout too, or kept and
	 * echoed there */
	o.err.to = NV_PROC_INHERIT;
	if (capture)
		o.out = (nv_proc_stream){NV_PROC_CAPTURE, capture, cap, 1};
	else
		o.out.to = NV_PROC_TO_STDERR;
	rc = nv_proc_run(&o, &r, &why, err);
	if (rc != 0 && why != 0)
		return nv_err_set_errno(err, NV_EREFUSED, why,
					"check that it is installed",
					"cannot start %s", argv[0]);
	if (rc != 0)
		return rc;
	if (r.exited && r.exit_status == 0)
		return 0;
	return nv_err_set(err, NV_EFAILED, "read its messages above",
			  "%s%s%s failed (%s %d)", argv[0],
			  argv[1] && argv[1][0] != '-' ? " " : "",
			  argv[1] && argv[1][0] != '-' ? argv[1] : "",
			  r.exited ? "exit status" : "signal",
			  r.exited ? r.exit_status : r.signal);
}

/* "digest: sha256:<64 hex>" in docker push's output. */
static int find_digest(const char *text, char out[NV_IMAGE_DIGEST_LEN + 1])
{
	const char *p = text;

	while ((p = strstr(p, "sha256:")) != NULL) {
		char cand[NV_IMAGE_DIGEST_LEN + 1];

		if (strlen(p) >= NV_IMAGE_DIGEST_LEN) {
			memcpy(cand, p, NV_IMAGE_DIGEST_LEN);
			cand[NV_IMAGE_DIGEST_LEN] = '\0';
			if (nv_image_digest_valid(cand) && p >= text + 8 &&
			    strncmp(p - 8, "digest: ", 8) == 0) {
				memcpy(out, cand, sizeof(cand));
				return 0;
			}
		}
		p += 7;
	}
	return -1;
}

#ifdef __APPLE__
/* podman on macOS is a client of the Linux VM that `podman machine` runs:
 * storage and isolation are the VM's, and the client refuses their flags. */
static int builder_is_remote_client(const char *builder)
{
	return strcmp(builder, "podman") == 0;
}
#else
static int builder_is_remote_client(const char *builder)
{
	(void)builder;
	return 0;
}
#endif

int nv_build_storage_args(const char *storage_root, const char *run_root,
			  const char **argv, int n)
{
	if (storage_root) {
		argv[n++] = "--root";
		argv[n++] = storage_root;
	}
	if (run_root) {
		argv[n++] = "--runroot";
		argv[n++] = run_root;
	}
	argv[n++] = "--storage-driver";
	argv[n++] = "vfs";
	return n;
}

int nv_image_build(const nv_build_opts *o, nv_build_result *res, nv_err *err)
{
	const char *argv[ARGV_MAX];
	char tmp[4096], digest_file[4200], dest[NV_IMAGE_REF_MAX + 16];
	char host[NV_IMAGE_NAME_MAX + 1];
	nv_image_ref ref;
	int n = 0, rc, daemonless, own_storage, insecure;
	size_t i;

	memset(res, 0, sizeof(*res));
	if (!o || !o->file || !o->context || !o->target)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "build: file, context and target are "
				  "required");
	if (o->nbuild_args + o->nlabels > NV_BUILD_ARGS_MAX)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "build: more than %d build args and labels",
				  NV_BUILD_ARGS_MAX);
	rc = nv_image_ref_parse(&ref, o->target, err);
	if (rc)
		return rc;
	if (ref.digest[0] || ref.implicit_tag)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "build: the target '%s' needs a tag and no "
				  "digest",
				  o->target);
	rc = nv_build_pick(o->builder, res->builder, err);
	if (rc)
		return rc;
	daemonless = strcmp(res->builder, "docker") != 0;
	/* storage and isolation flags: only for a builder working here */
	own_storage = daemonless && !builder_is_remote_client(res->builder);
	snprintf(host, sizeof(host), "%s", ref.registry);
	if (host[0] == '[')
		host[strcspn(host, "]") + 1] = '\0';
	else
		host[strcspn(host, ":")] = '\0';
	insecure = nv_http_host_is_loopback(host);

	/* build */
	argv[n++] = res->builder;
	if (own_storage)
		n = nv_build_storage_args(o->storage_root, o->run_root, argv,
					  n);
	argv[n++] = strcmp(res->builder, "buildah") == 0 ? "bud" : "build";
	if (own_storage) {
		argv[n++] = "--isolation";
		argv[n++] = "chroot";
	}
	/* always: the builder's own default is this machine's platform,
	 * arm64 on an Apple Silicon Mac, which amd64 nodes cannot run */
	argv[n++] = "--platform";
	argv[n++] = o->platform ? o->platform : NV_IMAGE_PLATFORM_DEFAULT;
	argv[n++] = "-f";
	argv[n++] = o->file;
	argv[n++] = "-t";
	argv[n++] = o->target;
	for (i = 0; i < o->nbuild_args; i++) {
		argv[n++] = "--build-arg";
		argv[n++] = o->build_args[i];
	}
	for (i = 0; i < o->nlabels; i++) {
		argv[n++] = "--label";
		argv[n++] = o->labels[i];
	}
	argv[n++] = o->context;
	argv[n] = NULL;
	rc = nv_build_run(argv, NULL, 0, err);
	if (rc)
		return rc;

	/* push */
	n = 0;
	argv[n++] = res->builder;
	if (!daemonless) {
		char out[16384];

		argv[n++] = "push";
		argv[n++] = o->target;
		argv[n] = NULL;
		rc = nv_build_run(argv, out, sizeof(out), err);
		if (rc)
			return rc;
		if (find_digest(out, res->digest))
			return nv_err_set(err, NV_EBACKEND,
					  "check the docker version",
					  "docker push printed no digest");
		return 0;
	}
	{
		const char *t = getenv("TMPDIR");

		if (nv_pathf(tmp, sizeof(tmp), "%s/navette-build-XXXXXX",
			     t && t[0] ? t : "/tmp") ||
		    !mkdtemp(tmp))
			return nv_err_set_errno(err, NV_EIO, errno, NULL,
						"cannot create a temp folder");
	}
	nv_pathf(digest_file, sizeof(digest_file), "%s/digest", tmp);
	snprintf(dest, sizeof(dest), "docker://%s", o->target);
	if (own_storage)
		n = nv_build_storage_args(o->storage_root, o->run_root, argv,
					  n);
	argv[n++] = "push";
	if (insecure)
		argv[n++] = "--tls-verify=false";
	argv[n++] = "--digestfile";
	argv[n++] = digest_file;
	argv[n++] = o->target;
	argv[n++] = dest;
	argv[n] = NULL;
	rc = nv_build_run(argv, NULL, 0, err);
	if (!rc) {
		char *text = NULL;
		size_t len = 0;

		rc = nv_read_file(&text, &len, digest_file, 256, err);
		if (!rc) {
			text[strcspn(text, " \r\n")] = '\0';
			if (!nv_image_digest_valid(text))
				rc = nv_err_set(err, NV_EBACKEND, NULL,
						"%s wrote no digest",
						res->builder);
			else
				memcpy(res->digest, text, sizeof(res->digest));
		}
		free(text);
	}
	{
		nv_err ignored;
		nv_remove_tree(tmp, &ignored);
	}
	return rc;
}
