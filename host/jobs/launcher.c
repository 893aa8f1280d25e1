/* Generates the launcher script (see launcher.h). Every value from the
 * recipe is single-quoted for sh; names are checked, never quoted. A local
 * launcher is generated whole here; a node launcher is a header of values and
 * small functions generated here, followed by the fixed part that
 * launcher_node.sh holds (compiled in as nv_launcher_node_body). */
#include "jobs/launcher.h"
#include "jobs/launcher_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fsname.h"
#include "core/jobid.h"
#include "image/reference.h"
#include "jobs/record.h"

extern const char nv_launcher_node_body[];
extern const size_t nv_launcher_node_body_len;
/* launcher_fingerprint.sh: navette_fingerprint, in every launcher */
extern const char nv_launcher_fingerprint_body[];
extern const size_t nv_launcher_fingerprint_body_len;

const char *nv_launcher_output_reserved(const char *output)
{
	size_t first = strcspn(output, "/");

	for (const char *const *r = nv_record_objects; *r; r++)
		if (nv_fsname_is_reserved(output, first, *r))
			return *r;
	return NULL;
}

/* Names navette sets, and names the shell or the dynamic loader give a
 * meaning to: a job's variable of that name would change how the launcher
 * runs (OPTIND kills it on dash) or what a process loads. */
static const char *const reserved_env[] = {"PATH",
					   "HOME",
					   "IFS",
					   "PS1",
					   "PS2",
					   "PS4",
					   "ENV",
					   "SHELL",
					   "USER",
					   "LOGNAME",
					   "OPTIND",
					   "OPTARG",
					   "OPTERR",
					   "PPID",
					   "PWD",
					   "OLDPWD",
					   "CDPATH",
					   "LINENO",
					   "MAIL",
					   "MAILPATH",
					   "MAILCHECK",
					   "BASH_ENV",
					   "BASHOPTS",
					   "SHELLOPTS",
					   "GLOBIGNORE",
					   "PROMPT_COMMAND",
					   "FUNCNEST",
					   "POSIXLY_CORRECT",
					   "GLIBC_TUNABLES",
					   "GCONV_PATH",
					   "NLSPATH",
					   "LOCPATH",
					   "HOSTALIASES",
					   "RES_OPTIONS",
					   NULL};
/* ... and whole families: the loaders' (LD_*, DYLD_*), bash's own and its
 * exported functions (BASH_*, BASH_FUNC_*), malloc tuning (MALLOC_*). */
static const char *const reserved_env_prefix[] = {
	"NAVETTE_", "LD_", "DYLD_", "BASH_", "MALLOC_", NULL};

const char *nv_launcher_env_name_problem(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len > 128)
		return "a name is 1 to 128 characters";
	if (!((name[0] >= 'A' && name[0] <= 'Z') ||
	      (name[0] >= 'a' && name[0] <= 'z') || name[0] == '_'))
		return "a name starts with a letter or '_'";
	for (const char *p = name; *p; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= '0' && *p <= '9') || *p == '_'))
			return "a name holds only letters, digits and '_'";
	if (strncmp(name, "NAVETTE_", 8) == 0)
		return "NAVETTE_* names are set by navette";
	for (const char *const *r = reserved_env_prefix; *r; r++)
		if (strncmp(name, *r, strlen(*r)) == 0)
			return "the shell or the dynamic loader gives this "
			       "family of names a meaning (LD_*, DYLD_*, "
			       "BASH_*, MALLOC_*)";
	for (const char *const *r = reserved_env; *r; r++)
		if (strcmp(name, *r) == 0)
			return "navette, the shell or the dynamic loader gives "
			       "this name a meaning (PATH, HOME, IFS, OPTIND, "
			       "ENV, GLIBC_TUNABLES...)";
	return NULL;
}

int nv_launcher_env_name_ok(const char *name)
{
	return nv_launcher_env_name_problem(name) == NULL;
}

static const char *string_field(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const cJSON *field(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

static double number_field(const cJSON *o, const char *key, double dflt)
{
	const cJSON *v = field(o, key);
	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

/* A byte count for the shell's arithmetic, as decimal text: a whole
 * number in 0..2^53 (every such double is exact, and a shell's integers
 * hold it); anything else (1e300, inf, a fraction) is refused, not
 * printed as a number the shell would overflow. */
static int bytes_text(const cJSON *o, const char *key, double dflt,
		      char out[32], const char *id, nv_err *err)
{
	const cJSON *v = o ? field(o, key) : NULL;
	double n = cJSON_IsNumber(v) ? v->valuedouble : dflt;

	if (!(n >= 0 && n <= 9007199254740992.0) || n != (double)(long long)n)
		return nv_err_set(err, NV_EINVAL,
				  "give a whole number of bytes up to 2^53",
				  "job %s: %s is not a byte count", id, key);
	snprintf(out, 32, "%lld", (long long)n);
	return 0;
}

/* NAME='value' on a line of its own. */
static void assign(nv_buf *out, const char *name, const char *value)
{
	nv_buf_printf(out, "%s=", name);
	nv_buf_sh_quote(out, value ? value : "");
	nv_buf_puts(out, "\n");
}

/* The variable that carries parameter `key` of a sweep's job (spec.params:
 * name -> text): NAVETTE_PARAM_ and the name in capitals. 0, or -1 when
 * the key is not a parameter name (a letter, then letters, digits and
 * '_', at most 32). */
static int param_env_name(const char *key, char *out, size_t cap)
{
	size_t n = key ? strlen(key) : 0;
	int len;

	if (n == 0 || n > 32 || !isalpha((unsigned char)key[0]))
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)key[i]) && key[i] != '_')
			return -1;
	len = snprintf(out, cap, "NAVETTE_PARAM_%s", key);
	if (len < 0 || (size_t)len >= cap)
		return -1;
	for (char *c = out; *c; c++)
		*c = (char)toupper((unsigned char)*c);
	return 0;
}

/* The parameters of a sweep's job, each exported under its variable. */
static int params_header(const cJSON *spec, const char *id, nv_buf *out,
			 nv_err *err)
{
	const cJSON *params = field(spec, "params");
	const cJSON *item;
	char name[64];

	if (!params || cJSON_IsNull(params))
		return 0;
	if (!cJSON_IsObject(params))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "job %s: params is not an object", id);
	if (params->child)
		nv_buf_puts(out, "# the parameters of the sweep's job\n");
	cJSON_ArrayForEach(item, params)
	{
		if (param_env_name(item->string, name, sizeof(name)) ||
		    !cJSON_IsString(item) ||
		    strlen(item->valuestring) > NV_LAUNCHER_PARAM_MAX)
			return nv_err_set(
				err, NV_EINVAL,
				"parameters are name = \"text\" (names: a "
				"letter, then letters, digits and '_')",
				"job %s: bad parameter '%s'", id,
				item->string ? item->string : "?");
		nv_buf_printf(out, "%s=", name);
		nv_buf_sh_quote(out, item->valuestring);
		nv_buf_printf(out, "; export %s\n", name);
	}
	return 0;
}

/* Python buffers stdout in blocks when it is not a terminal, and writes
 * stderr a line at a time: a job's log would hold them out of order. Set
 * on every backend (a container gets it too: container_env), unless the
 * job's env or the node's environment sets it. */
static void unbuffered_python(nv_buf *out)
{
	nv_buf_puts(out, "# Python writes as it goes: the log keeps stdout "
			 "and stderr in order\n"
			 "PYTHONUNBUFFERED=\"${PYTHONUNBUFFERED-1}\"; "
			 "export PYTHONUNBUFFERED\n");
}

/* The job's declared environment, each variable exported, then
 * PYTHONUNBUFFERED where it declares none. */
static int env_header(const cJSON *spec, const char *id, nv_buf *out,
		      nv_err *err)
{
	const cJSON *env = field(spec, "env");
	const cJSON *item;

	if (!cJSON_IsObject(env) || !env->child) {
		unbuffered_python(out);
		return 0;
	}
	nv_buf_puts(out, "# the job's environment, as declared "
			 "(never a secret)\n");
	cJSON_ArrayForEach(item, env)
	{
		if (!item->string || !nv_launcher_env_name_ok(item->string))
			return nv_err_set(err, NV_EINVAL,
					  "environment names are letters, "
					  "digits and '_', not NAVETTE_* or "
					  "PATH/HOME",
					  "job %s: bad environment name '%s'",
					  id,
					  item->string ? item->string : "?");
		if (!cJSON_IsString(item))
			return nv_err_set(err, NV_EINVAL, NULL,
					  "job %s: env %s is not a string", id,
					  item->string);
		nv_buf_printf(out, "%s=", item->string);
		nv_buf_sh_quote(out, item->valuestring);
		nv_buf_printf(out, "; export %s\n", item->string);
	}
	unbuffered_python(out);
	return 0;
}

/* The lines every launcher starts with: the job's identity and its
 * declared environment. */
static int common_header(const cJSON *spec, nv_buf *out, nv_err *err)
{
	const char *id = string_field(spec, "id");
	int rc;

	if (!id)
		return nv_err_set(err, NV_EINVAL, NULL, "job spec lacks an id");
	nv_buf_printf(out,
		      "#!/bin/sh\n"
		      "# navette launcher for job %s (generated; `navette "
		      "plan` shows it).\n",
		      id);
	nv_buf_puts(out, "set -u\n");
	assign(out, "NAVETTE_JOB_ID", id);
	assign(out, "NAVETTE_COMMIT", string_field(spec, "commit"));
	assign(out, "NAVETTE_PROJECT", string_field(spec, "project"));
	if ((rc = env_header(spec, id, out, err)) != 0)
		return rc;
	return params_header(spec, id, out, err);
}

/* How a container runtime is driven, from the name of its program:
 * podman, docker and their like take `pull` and `run`; apptainer (and
 * singularity) pull a SIF file and `exec` it; enroot imports a squashfs
 * image and `start`s it. */
typedef enum { RT_OCI, RT_DOCKER, RT_APPTAINER, RT_ENROOT } rt_family;

static rt_family runtime_family(const char *runtime, const char **env_prefix)
{
	const char *base = strrchr(runtime, '/');

	base = base ? base + 1 : runtime;
	*env_prefix = "APPTAINERENV_";
	if (strcmp(base, "apptainer") == 0)
		return RT_APPTAINER;
	if (strcmp(base, "singularity") == 0) {
		*env_prefix = "SINGULARITYENV_";
		return RT_APPTAINER;
	}
	if (strcmp(base, "enroot") == 0)
		return RT_ENROOT;
	if (strcmp(base, "docker") == 0)
		return RT_DOCKER;
	return RT_OCI;
}

/* Whether the job asked for GPUs (resources.gpus > 0, or a gres naming
 * gpu): the runtime then passes the node's GPUs into the container. */
static int wants_gpus(const cJSON *spec)
{
	const cJSON *r = field(spec, "resources");
	const char *gres = r ? string_field(r, "gres") : NULL;

	return (r && number_field(r, "gpus", 0) > 0) ||
	       (gres && strstr(gres, "gpu"));
}

#ifdef __APPLE__
/* On macOS a local container runs in the Linux VM of podman machine or
 * Docker Desktop: --network=host would be the VM's network, not this
 * machine's, and the VM has no GPUs to hand over. */
static int local_runtime_in_vm(void)
{
	return 1;
}
#else
/* Elsewhere the runtime is this machine's, unless a test says otherwise
 * (NAVETTE_LOCAL_RUNTIME_IN_VM=1 gives Linux the macOS rules). */
static int local_runtime_in_vm(void)
{
	const char *v = getenv("NAVETTE_LOCAL_RUNTIME_IN_VM");
	return v && strcmp(v, "1") == 0;
}
#endif

/* Whether the job's container would run in such a VM: a local job. */
static int container_in_vm(const cJSON *spec)
{
	const char *backend = string_field(spec, "backend");
	return backend && strcmp(backend, "local") == 0 &&
	       local_runtime_in_vm();
}

/* The image step, navette_image: nothing for a host job; for a job with
 * an image, the runtime is checked and the image pulled (by digest; to a
 * file in the job's folder for apptainer and enroot), a failure left in
 * nv_image_error. */
/* The spec's container part: 0 with *c NULL for a host job, 0 with *c,
 * its image and runtime set, or NV_EINVAL when either is missing. */
static int container_of(const cJSON *spec, const cJSON **c, const char **image,
			const char **runtime, nv_err *err)
{
	*c = field(spec, "container");
	if (!*c || cJSON_IsNull(*c)) {
		*c = NULL;
		return 0;
	}
	*image = string_field(*c, "image");
	*runtime = string_field(*c, "runtime");
	if (!*image || !*runtime || !(*image)[0] || !(*runtime)[0])
		return nv_err_set(err, NV_EINVAL, NULL,
				  "job %s: container needs image and runtime",
				  string_field(spec, "id"));
	return 0;
}

/* Whether the image's registry is on loopback (127.0.0.1:5000/...): its
 * API base is plain http there (nv_image_ref_api_base, as navette's own
 * client reaches it), and podman is told so (docker already assumes it). */
static int image_on_loopback(const char *image)
{
	char base[NV_IMAGE_NAME_MAX + 16];
	nv_image_ref ref;
	nv_err err;

	return nv_image_ref_parse(&ref, image, &err) == 0 &&
	       nv_image_ref_api_base(&ref, base, sizeof(base)) == 0 &&
	       strncmp(base, "http://", 7) == 0;
}

static int runtime_is(const char *runtime, const char *name)
{
	const char *base = strrchr(runtime, '/');

	return strcmp(base ? base + 1 : runtime, name) == 0;
}

static int image_function(const cJSON *spec, nv_buf *out, nv_err *err)
{
	const cJSON *c;
	const char *image = NULL, *runtime = NULL;
	const char *prefix;
	const char *slash;
	int rc = container_of(spec, &c, &image, &runtime, err);

	if (rc)
		return rc;
	if (!c) {
		nv_buf_puts(out, "navette_image() { :; }\n");
		return 0;
	}
	if (nv_launcher_in_container(spec)) {
		nv_buf_puts(out, "navette_image() { :; } # the launcher runs "
				 "in it\n");
		return 0;
	}
	assign(out, "NAVETTE_IMAGE", image);
	assign(out, "NAVETTE_RUNTIME", runtime);
	nv_buf_puts(
		out,
		"navette_image() {\n"
		"\tif ! command -v \"$NAVETTE_RUNTIME\" >/dev/null 2>&1; then\n"
		"\t\tnv_image_error=\"no container runtime '$NAVETTE_RUNTIME' "
		"on this machine\"\n"
		"\t\treturn 1\n"
		"\tfi\n"
		"\tcase $NAVETTE_JOB_DIR in *:* | *,*)\n"
		"\t\tnv_image_error=\"the job folder $NAVETTE_JOB_DIR holds "
		"':' or ',', which a bind mount cannot name\"\n"
		"\t\treturn 1 ;;\n"
		"\tesac\n"
		"\tif ! ");
	switch (runtime_family(runtime, &prefix)) {
	case RT_APPTAINER:
		nv_buf_puts(out, "\"$NAVETTE_RUNTIME\" pull --force "
				 "\"$NAVETTE_JOB_DIR/image.sif\" "
				 "\"docker://$NAVETTE_IMAGE\" ");
		break;
	case RT_ENROOT:
		/* enroot names a registry apart: docker://REGISTRY#REPO */
		slash = strchr(image, '/');
		if (!slash)
			return nv_err_set(err, NV_EINVAL, NULL,
					  "job %s: image %s has no registry",
					  string_field(spec, "id"), image);
		nv_buf_puts(out, "\"$NAVETTE_RUNTIME\" import -o "
				 "\"$NAVETTE_JOB_DIR/image.sqsh\" ");
		{
			nv_buf uri;

			nv_buf_init(&uri, 4096);
			nv_buf_printf(&uri, "docker://%.*s#%s",
				      (int)(slash - image), image, slash + 1);
			nv_buf_sh_quote(out, uri.data ? uri.data : "");
			nv_buf_free(&uri);
		}
		nv_buf_puts(out, " ");
		break;
	default:
		nv_buf_puts(out, "\"$NAVETTE_RUNTIME\" pull ");
		if (runtime_is(runtime, "podman") && image_on_loopback(image))
			nv_buf_puts(out, "--tls-verify=false ");
		nv_buf_puts(out, "\"$NAVETTE_IMAGE\" ");
	}
	nv_buf_puts(
		out,
		">\"$NAVETTE_JOB_DIR/image-pull.log\" 2>&1; then\n"
		"\t\tnv_image_error=\"cannot pull $NAVETTE_IMAGE: $(tail -n 3 "
		"\"$NAVETTE_JOB_DIR/image-pull.log\" | tr '\\n' ' ')\"\n"
		"\t\treturn 1\n"
		"\tfi\n"
		"}\n");
	/* a program of the image, for the fingerprint (an interpreter's
	 * version), with nothing of the job's mounted */
	switch (runtime_family(runtime, &prefix)) {
	case RT_APPTAINER:
		nv_buf_puts(out,
			    "navette_in_image() { \"$NAVETTE_RUNTIME\" exec "
			    "--containall \"$NAVETTE_JOB_DIR/image.sif\" "
			    "\"$@\"; }\n");
		break;
	case RT_ENROOT:
		nv_buf_puts(out, "navette_in_image() { return 1; }\n");
		break;
	default:
		nv_buf_puts(out,
			    "navette_in_image() { \"$NAVETTE_RUNTIME\" run "
			    "--rm --pull=never --network=none "
			    "\"$NAVETTE_IMAGE\" \"$@\"; }\n");
	}
	return 0;
}

/* The interpreter a command starts with (python3, node...: its version
 * goes in the fingerprint), or NULL. */
static const char *command_interpreter(const cJSON *spec)
{
	static const char *const names[] = {"python",  "perl",  "ruby", "node",
					    "Rscript", "julia", "java", NULL};
	const cJSON *first = cJSON_GetArrayItem(field(spec, "command"), 0);
	const char *cmd, *base;

	if (!cJSON_IsString(first))
		return NULL;
	cmd = first->valuestring;
	base = strrchr(cmd, '/');
	base = base ? base + 1 : cmd;
	for (int i = 0; names[i]; i++) {
		size_t n = strlen(names[i]);

		/* python, python3, python3.11 */
		if (strncmp(base, names[i], n) == 0 &&
		    (base[n] == '\0' ||
		     (i == 0 &&
		      strspn(base + n, "0123456789.") == strlen(base + n))))
			return cmd;
	}
	return NULL;
}

/* The variables a container gets, by name: navette's own, then the job's
 * (names were checked by common_header). */
static const char *const container_env[] = {"NAVETTE_JOB_ID",
					    "NAVETTE_COMMIT",
					    "NAVETTE_PROJECT",
					    "NAVETTE_INPUTS",
					    "NAVETTE_OUTPUTS",
					    "PYTHONUNBUFFERED",
					    NULL};

/* Writes, for each variable a container gets (container_env, then the
 * job's), "OPT NAME " (opt "-e", "--env"), or with by_value
 * "OPTNAME=\"$NAME\" " (opt a prefix such as "APPTAINERENV_"). */
static void pass_name(nv_buf *out, const char *name, const char *opt,
		      int by_value)
{
	if (by_value)
		nv_buf_printf(out, "%s%s=\"$%s\" ", opt, name, name);
	else
		nv_buf_printf(out, "%s %s ", opt, name);
}

static void pass_names(nv_buf *out, const cJSON *spec, const char *opt,
		       int by_value)
{
	const cJSON *item;
	char name[64];

	for (const char *const *n = container_env; *n; n++)
		pass_name(out, *n, opt, by_value);
	cJSON_ArrayForEach(item, field(spec, "env"))
	{
		/* (PYTHONUNBUFFERED is passed above) */
		if (item->string &&
		    strcmp(item->string, "PYTHONUNBUFFERED") != 0)
			pass_name(out, item->string, opt, by_value);
	}
	/* (checked by params_header) */
	cJSON_ArrayForEach(item, field(spec, "params"))
	{
		if (param_env_name(item->string, name, sizeof(name)) == 0)
			pass_name(out, name, opt, by_value);
	}
}

/* A job with a checkpoint: its folder, writable, at the same path. */
static void checkpoint_mount(nv_buf *out, const cJSON *spec, rt_family fam,
			     const char *prefix)
{
	if (!cJSON_IsObject(field(spec, "checkpoint")))
		return;
	if (fam == RT_APPTAINER)
		nv_buf_printf(out,
			      "--bind \"$NAVETTE_CHECKPOINT:$NAVETTE_"
			      "CHECKPOINT\" %sNAVETTE_CHECKPOINT=\"$NAVETTE_"
			      "CHECKPOINT\" ",
			      prefix);
	else if (fam == RT_ENROOT)
		nv_buf_puts(out, "--mount \"$NAVETTE_CHECKPOINT:$NAVETTE_"
				 "CHECKPOINT:none:x-create=dir,bind\" --env "
				 "NAVETTE_CHECKPOINT ");
	else
		nv_buf_puts(out, "-v \"$NAVETTE_CHECKPOINT:$NAVETTE_"
				 "CHECKPOINT\" -e NAVETTE_CHECKPOINT ");
}

/* The command's folder: a code layer's workdir, else the workspace. */
static void put_workdir(nv_buf *out, const char *workdir)
{
	if (workdir)
		nv_buf_sh_quote(out, workdir);
	else
		nv_buf_puts(out, "\"$NAVETTE_WORKSPACE\"");
}

/* The container part of run_command: the runtime's command line up to
 * the job's command. The workspace and inputs are mounted read-only at
 * the same paths, the outputs writable; a code layer's workdir replaces
 * the workspace mount. */
static void container_command(const cJSON *spec, const cJSON *c,
			      const char *runtime, int in_vm, nv_buf *out)
{
	const char *workdir = string_field(c, "workdir");
	const char *prefix;
	rt_family fam = runtime_family(runtime, &prefix);
	int gpus = wants_gpus(spec);

	if (fam == RT_APPTAINER) {
		/* --cleanenv: only what is passed as PREFIX+NAME enters */
		pass_names(out, spec, prefix, 1);
		checkpoint_mount(out, spec, fam, prefix);
		nv_buf_printf(out, "%sNAVETTE_WORKSPACE=", prefix);
		put_workdir(out, workdir);
		nv_buf_puts(out, " \\\n\t\t\"$NAVETTE_RUNTIME\" exec "
				 "--containall --cleanenv ");
		if (gpus)
			nv_buf_puts(out, "--nv ");
		nv_buf_puts(out, "\\\n\t\t--pwd ");
		put_workdir(out, workdir);
		if (!workdir)
			nv_buf_puts(out, " --bind "
					 "\"$NAVETTE_WORKSPACE:$NAVETTE_"
					 "WORKSPACE:ro\"");
		nv_buf_puts(out,
			    " \\\n\t\t--bind \"$NAVETTE_INPUTS:$NAVETTE_INPUTS:"
			    "ro\" \\\n"
			    "\t\t--bind \"$NAVETTE_OUTPUTS:$NAVETTE_OUTPUTS\" "
			    "\\\n\t\t\"$NAVETTE_JOB_DIR/image.sif\" ");
		return;
	}
	if (fam == RT_ENROOT) {
		nv_buf_puts(out, "\"$NAVETTE_RUNTIME\" start ");
		pass_names(out, spec, "--env", 0);
		checkpoint_mount(out, spec, fam, prefix);
		if (gpus)
			nv_buf_puts(out, "--env NVIDIA_VISIBLE_DEVICES=\"${"
					 "NVIDIA_VISIBLE_DEVICES:-${CUDA_"
					 "VISIBLE_DEVICES:-all}}\" ");
		nv_buf_puts(out, "--env NAVETTE_WORKSPACE=");
		put_workdir(out, workdir);
		nv_buf_puts(out, " \\\n");
		if (!workdir)
			nv_buf_puts(out, "\t\t--mount \"$NAVETTE_WORKSPACE:"
					 "$NAVETTE_WORKSPACE:none:x-create="
					 "dir,bind,ro\" \\\n");
		nv_buf_puts(
			out,
			"\t\t--mount \"$NAVETTE_INPUTS:$NAVETTE_INPUTS:none:"
			"x-create=dir,bind,ro\" \\\n"
			"\t\t--mount \"$NAVETTE_OUTPUTS:$NAVETTE_OUTPUTS:"
			"none:x-create=dir,bind\" \\\n"
			"\t\t\"$NAVETTE_JOB_DIR/image.sqsh\" \\\n"
			/* enroot has no workdir option */
			"\t\tsh -c 'cd \"$1\" && shift && exec \"$@\"' sh ");
		put_workdir(out, workdir);
		nv_buf_puts(out, " ");
		return;
	}
	nv_buf_puts(out, "\"$NAVETTE_RUNTIME\" run --rm --pull=never ");
	if (!in_vm)
		nv_buf_puts(out, "--network=host ");
	if (gpus)
		nv_buf_puts(out, fam == RT_DOCKER
					 ? "--gpus all "
					 : "--device nvidia.com/gpu=all ");
	nv_buf_puts(out, "\\\n");
	if (workdir) {
		nv_buf_puts(out, "\t\t-w ");
		put_workdir(out, workdir);
		nv_buf_puts(out, " -e NAVETTE_WORKSPACE=");
		put_workdir(out, workdir);
		nv_buf_puts(out, " \\\n");
	} else {
		nv_buf_puts(out, "\t\t-v "
				 "\"$NAVETTE_WORKSPACE:$NAVETTE_WORKSPACE:"
				 "ro\" \\\n"
				 "\t\t-w \"$NAVETTE_WORKSPACE\" -e "
				 "NAVETTE_WORKSPACE \\\n");
	}
	nv_buf_puts(out,
		    "\t\t-v \"$NAVETTE_INPUTS:$NAVETTE_INPUTS:ro\" \\\n"
		    "\t\t-v \"$NAVETTE_OUTPUTS:$NAVETTE_OUTPUTS\" \\\n\t\t");
	checkpoint_mount(out, spec, fam, prefix);
	pass_names(out, spec, "-e", 0);
	nv_buf_puts(out, "\\\n\t\t\"$NAVETTE_IMAGE\" ");
}

/* The command as a function; its exit status goes to the status file. In
 * a container: see container_command; in the container that started the
 * launcher (spec.launch.in_container), in a code layer's workdir. */
static int command_function(const cJSON *spec, nv_buf *out, nv_err *err)
{
	const cJSON *item, *c;
	const char *image = NULL, *runtime = NULL;
	int rc = container_of(spec, &c, &image, &runtime, err);

	if (rc)
		return rc;
	if (c && wants_gpus(spec) && container_in_vm(spec))
		return nv_err_set(err, NV_EREFUSED,
				  "run it on a profile whose nodes have GPUs, "
				  "or drop resources.gpus for a local run",
				  "job %s asks for GPUs, but this machine's "
				  "containers run in a VM (podman machine, "
				  "Docker Desktop) that has none",
				  string_field(spec, "id"));
	nv_buf_puts(out, "run_command() {\n\t");
	if (c && nv_launcher_in_container(spec) && string_field(c, "workdir")) {
		nv_buf_puts(out, "cd ");
		put_workdir(out, string_field(c, "workdir"));
		nv_buf_puts(out, " && NAVETTE_WORKSPACE=");
		put_workdir(out, string_field(c, "workdir"));
		nv_buf_puts(out, " ");
	} else if (c && !nv_launcher_in_container(spec)) {
		container_command(spec, c, runtime, container_in_vm(spec), out);
	}
	cJSON_ArrayForEach(item, field(spec, "command"))
	{
		if (!cJSON_IsString(item))
			return nv_err_set(err, NV_EINVAL, NULL,
					  "job %s: command items must be "
					  "strings",
					  string_field(spec, "id"));
		nv_buf_sh_quote(out, item->valuestring);
		nv_buf_puts(out, " ");
	}
	/* the exit status twice: a line of the status file (the phases'
	 * stream), and a file of its own, replaced whole, which the backend
	 * reads first: a status file cut or emptied while the job ran does
	 * not turn an exit 0 into a failure */
	nv_buf_puts(out, "< /dev/null\n"
			 "\tnv_command_status=$?\n"
			 "\tprintf '%s\\n' \"$nv_command_status\" > "
			 "\"$NAVETTE_STATUS.code\"\n"
			 "\tprintf 'exit %s\\n' \"$nv_command_status\" >> "
			 "\"$NAVETTE_STATUS\"\n"
			 "}\n");
	if ((rc = image_function(spec, out, err)) != 0)
		return rc;
	if (command_interpreter(spec))
		assign(out, "NAVETTE_INTERPRETER", command_interpreter(spec));
	nv_buf_append(out, nv_launcher_fingerprint_body,
		      nv_launcher_fingerprint_body_len);
	return 0;
}

/* The job's secrets (spec.secrets: {name, credential, kind} each, never
 * a value): NAVETTE_SECRETS, the folder of their files (dir, a shell
 * word: the local backend's folder, or the node launcher's), and
 * NAME_FILE for each, the file that holds it. dir is not checked here:
 * the launcher refuses to start without it. */
static int secrets_header(const cJSON *spec, const char *id, const char *dir,
			  nv_buf *out, nv_err *err)
{
	const cJSON *list = field(spec, "secrets");
	const cJSON *item;
	char file_var[160];

	if (!cJSON_IsArray(list) || !list->child)
		return 0;
	nv_buf_puts(out, "# the job's secrets: files, never values here\n");
	nv_buf_printf(out, "NAVETTE_SECRETS=%s; export NAVETTE_SECRETS\n", dir);
	cJSON_ArrayForEach(item, list)
	{
		const char *name = string_field(item, "name");
		if (!name || !nv_launcher_env_name_ok(name) ||
		    snprintf(file_var, sizeof(file_var), "%s_FILE", name) >=
			    (int)sizeof(file_var) ||
		    !nv_launcher_env_name_ok(file_var))
			return nv_err_set(err, NV_EINVAL,
					  "a secret's name is a variable name "
					  "(letters, digits and '_'), not a "
					  "reserved one",
					  "job %s: bad secret name '%s'", id,
					  name ? name : "?");
		nv_buf_printf(out, "%s=\"$NAVETTE_SECRETS/%s\"; export %s\n",
			      file_var, name, file_var);
	}
	return 0;
}

static int local_script(const cJSON *spec, nv_buf *out, nv_err *err)
{
	int rc;

	if ((rc = common_header(spec, out, err)) != 0)
		return rc;
	nv_buf_puts(out,
		    "# Needs only sh: reports phases, runs the command in the "
		    "workspace,\n"
		    "# keeps its log, records the exit status.\n"
		    ": \"${NAVETTE_JOB_DIR:?the backend sets "
		    "NAVETTE_JOB_DIR}\"\n");
	nv_buf_puts(out, "NAVETTE_WORKSPACE=\"$NAVETTE_JOB_DIR/workspace\"\n"
			 "NAVETTE_INPUTS=\"$NAVETTE_JOB_DIR/inputs\"\n"
			 "NAVETTE_OUTPUTS=\"$NAVETTE_JOB_DIR/outputs\"\n"
			 "NAVETTE_LOG=\"$NAVETTE_JOB_DIR/log\"\n"
			 "NAVETTE_STATUS=\"$NAVETTE_JOB_DIR/status\"\n"
			 "export NAVETTE_JOB_ID NAVETTE_COMMIT NAVETTE_PROJECT "
			 "NAVETTE_WORKSPACE NAVETTE_INPUTS NAVETTE_OUTPUTS\n"
			 "report() { printf '%s\\n' \"$1\" >> "
			 "\"$NAVETTE_STATUS\"; }\n");
	/* written by `navette run`, mounted read-only by the agent, which
	 * names their folder */
	if ((rc = secrets_header(spec, string_field(spec, "id"),
				 "\"${NAVETTE_SECRETS:?the backend sets "
				 "NAVETTE_SECRETS}\"",
				 out, err)) != 0)
		return rc;
	/* restored and saved by the backend (agent_checkpoint.c) */
	if (cJSON_IsObject(field(spec, "checkpoint")))
		nv_buf_puts(out, "NAVETTE_CHECKPOINT=\"$NAVETTE_JOB_DIR/"
				 "checkpoint\"\nexport NAVETTE_CHECKPOINT\n");
	if ((rc = command_function(spec, out, err)) != 0)
		return rc;
	/* the image step and the phases it holds back (the backend staged
	 * the data before it, but reports it after: see agent.c) */
	if (field(spec, "container") && !cJSON_IsNull(field(spec, "container")))
		nv_buf_printf(out,
			      "if ! navette_image; then\n"
			      "\treport \"image_failed $nv_image_error\"\n"
			      "\texit 125\n"
			      "fi\n"
			      "report %s\n"
			      "report %s\n",
			      nv_record_phase_name(NV_PHASE_IMAGE_READY),
			      nv_record_phase_name(NV_PHASE_DATA_READY));
	nv_buf_puts(out, "navette_fingerprint\n");
	nv_buf_printf(out,
		      "cd \"$NAVETTE_WORKSPACE\" || { report 'exit 127'; "
		      "exit 127; }\n"
		      "report %s\n"
		      ": >> \"$NAVETTE_LOG\"\n"
		      "report %s\n",
		      nv_record_phase_name(NV_PHASE_RUNNING),
		      nv_record_phase_name(NV_PHASE_LOGS_VISIBLE));
	/* The output goes through the backend's redacting filter when it
	 * gives one (NAVETTE_REDACT), so the log is masked before it is
	 * written; the exit status travels through the status file. A log
	 * the filter could not write whole (a full disk) is reported with the
	 * filter's reason (log_cut): the backend never calls it whole. */
	nv_buf_puts(
		out,
		"if [ -n \"${NAVETTE_REDACT:-}\" ]; then\n"
		"\tif ! nv_log_error=$( { run_command 2>&1 | "
		"\"$NAVETTE_REDACT\" redact-stream >> \"$NAVETTE_LOG\"; } "
		"2>&1 ); then\n"
		"\t\treport \"log_cut ${nv_log_error:-the log could not be "
		"written}\"\n"
		"\tfi\n"
		"else\n"
		"\trun_command >> \"$NAVETTE_LOG\" 2>&1\n"
		"fi\n"
		"code=$(sed -n 's/^exit //p' \"$NAVETTE_STATUS\" | tail -n 1)\n"
		"exit \"${code:-1}\"\n");
	return 0;
}

/* The run record's fixed part: the spec's fields, as a JSON object
 * missing its closing brace (the launcher appends what it learns). */
static int record_head(const cJSON *spec, nv_buf *out, nv_err *err)
{
	cJSON *head = cJSON_CreateObject();
	char *text;
	size_t len;

	if (!head)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	cJSON_AddNumberToObject(head, "navette_run_record", 1);
	for (const char *const *k = nv_record_spec_fields; *k; k++) {
		const cJSON *v = field(spec, *k);
		/* inputs as the node checked them: the launcher fills them */
		if (v && strcmp(*k, "inputs") != 0)
			cJSON_AddItemToObject(head, *k, cJSON_Duplicate(v, 1));
	}
	text = cJSON_PrintUnformatted(head);
	cJSON_Delete(head);
	if (!text)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	len = strlen(text);
	text[len - 1] = '\0'; /* the closing brace */
	assign(out, "NAVETTE_RECORD_HEAD", text);
	cJSON_free(text);
	return 0;
}

/* Where a node launcher reads the attempts list of a job that retries
 * (a job's own: in an array, each task's branch has its task's). */
static void attempts_header(const cJSON *transfer, nv_buf *out)
{
	const char *get = string_field(field(transfer, "attempts"), "get");

	if (get)
		assign(out, "NAVETTE_ATTEMPTS_GET", get);
}

/* A job's checkpoint, in a node launcher (where it restores it from,
 * how often it saves it) and its retries (the most attempts it runs). */
static void retry_header(const cJSON *spec, const cJSON *transfer, nv_buf *out)
{
	const cJSON *c = field(transfer, "checkpoint");
	const cJSON *r = field(spec, "retries");
	const cJSON *max = r ? field(r, "max") : NULL;
	char num[32];

	if (cJSON_IsObject(c) && string_field(c, "get")) {
		assign(out, "NAVETTE_CHECKPOINT_GET", string_field(c, "get"));
		snprintf(num, sizeof(num), "%.0f",
			 number_field(c, "every", 300));
		assign(out, "NAVETTE_CHECKPOINT_EVERY", num);
	}
	if (cJSON_IsNumber(max)) {
		snprintf(num, sizeof(num), "%.0f", max->valuedouble);
		assign(out, "NAVETTE_RETRY_MAX", num);
	}
}

/* fn() { each 'a' 'b' ...; ... :; } from a list of string lists. */
static void list_function(nv_buf *out, const char *fn, const char *each,
			  const cJSON *items, const char *const *keys)
{
	const cJSON *item;

	nv_buf_printf(out, "%s() {\n", fn);
	cJSON_ArrayForEach(item, items)
	{
		nv_buf_printf(out, "\t%s", each);
		for (const char *const *k = keys; *k; k++) {
			const cJSON *v = **k ? field(item, *k) : item;
			char num[32];
			nv_buf_puts(out, " ");
			if (cJSON_IsNumber(v)) {
				snprintf(num, sizeof(num), "%.0f",
					 v->valuedouble);
				nv_buf_sh_quote(out, num);
			} else {
				nv_buf_sh_quote(out, cJSON_IsString(v)
							     ? v->valuestring
							     : "");
			}
		}
		nv_buf_puts(out, "\n");
	}
	nv_buf_puts(out, "\t:\n}\n");
}

/* Whether the code is in the job's image (a code layer): nothing to
 * fetch then. */
static int code_in_image(const cJSON *spec)
{
	const cJSON *c = field(spec, "container");
	return c && string_field(c, "workdir") != NULL;
}

static int node_check(const cJSON *spec, const cJSON *transfer, nv_err *err)
{
	const cJSON *code = field(transfer, "code");
	const cJSON *post = field(transfer, "post");
	const cJSON *fields = post ? field(post, "fields") : NULL;

	if (!string_field(transfer, "prefix") ||
	    !string_field(transfer, "output_url") ||
	    (!code_in_image(spec) &&
	     (!cJSON_IsObject(code) || !string_field(code, "url") ||
	      !string_field(code, "sha256"))) ||
	    !post || !string_field(post, "url") || !cJSON_IsObject(fields))
		return nv_err_set(err, NV_EINVAL,
				  "submit the job again with this version "
				  "of navette",
				  "job %s: incomplete transfer section",
				  string_field(spec, "id"));
	return 0;
}

/* What every task of a job shares: where it publishes, its exit codes,
 * log and output bounds (not its own prefix: see node_script). */
static int node_settings(const cJSON *spec, const cJSON *transfer, nv_buf *out,
			 nv_err *err)
{
	const char *id = string_field(spec, "id");
	const cJSON *success = field(spec, "success");
	const cJSON *failure = field(spec, "failure_condition");
	const cJSON *logs = field(spec, "logs");
	const cJSON *codes = success ? field(success, "exit_codes") : NULL;
	const cJSON *pub = logs ? field(logs, "publish") : NULL;
	const cJSON *item;
	nv_buf names;
	char num[32];
	int rc, n = 0;

	assign(out, "NAVETTE_TRANSFER", "s3");
	nv_buf_init(&names, 256);
	for (const char *const *r = nv_record_objects; *r; r++)
		nv_buf_printf(&names, "%s%s", names.len ? " " : "", *r);
	assign(out, "NAVETTE_RESERVED", names.data ? names.data : "");
	nv_buf_free(&names);
	assign(out, "NAVETTE_POST_URL",
	       string_field(field(transfer, "post"), "url"));
	nv_buf_puts(out, "NAVETTE_EXIT_CODES='");
	/* exit statuses are 0..255; anything else never matches */
	cJSON_ArrayForEach(item, codes) if (cJSON_IsNumber(item) &&
					    item->valuedouble >= 0 &&
					    item->valuedouble <= 255)
		nv_buf_printf(out, "%s%d", n++ ? " " : "",
			      (int)item->valuedouble);
	nv_buf_puts(out, n ? "'\n" : "0'\n");
	if ((rc = bytes_text(logs, "max_bytes", 64.0 * 1024 * 1024, num, id,
			     err)) != 0)
		return rc;
	assign(out, "NAVETTE_LOG_MAX", num);
	assign(out, "NAVETTE_LOG_PUBLISH", cJSON_IsFalse(pub) ? "0" : "1");
	if ((rc = bytes_text(transfer, "max_output_bytes",
			     5.0 * 1024 * 1024 * 1024, num, id, err)) != 0)
		return rc;
	assign(out, "NAVETTE_OUTPUT_MAX", num);
	nv_buf_puts(out, "NAVETTE_LOG_INTERVAL=${NAVETTE_LOG_INTERVAL:-5}\n");
	assign(out, "NAVETTE_FAILURE_HINT",
	       failure ? string_field(failure, "hint") : NULL);
	return 0;
}

/* The transfer's inputs that are (with_from) or are not another job's
 * output, as a list of references (cJSON_Delete frees the list only). */
static cJSON *inputs_of(const cJSON *transfer, int with_from)
{
	cJSON *list = cJSON_CreateArray();
	const cJSON *item;

	cJSON_ArrayForEach(item, field(transfer, "inputs"))
	{
		if ((string_field(item, "from") != NULL) == with_from && list)
			cJSON_AddItemReferenceToArray(list, (cJSON *)item);
	}
	return list;
}

/* navette_secrets: the job's secrets fetched, deleted and decrypted
 * (launcher_node.sh: fetch_secret) with spec.secrets_delivery, which the
 * backend adds to the launcher it sends and no record keeps ({name, get,
 * delete, password} each); without it (a plan, the launcher kept in
 * jobs.db) the function says so and fails the job. */
static int node_secrets_function(const cJSON *spec, nv_buf *out, nv_err *err)
{
	const cJSON *list = field(spec, "secrets");
	const cJSON *delivery = field(spec, "secrets_delivery");
	const cJSON *item, *d;
	const char *id = string_field(spec, "id");

	if (!cJSON_IsArray(list) || !list->child) {
		nv_buf_puts(out, "navette_secrets() { :; }\n");
		return 0;
	}
	nv_buf_puts(out, "navette_secrets() {\n\tnv_secrets_open || return\n");
	cJSON_ArrayForEach(item, list)
	{
		const char *name = string_field(item, "name");
		const char *get = NULL, *del = NULL, *pass = NULL;
		char file_var[160];
		if (!name || !nv_launcher_env_name_ok(name) ||
		    snprintf(file_var, sizeof(file_var), "%s_FILE", name) >=
			    (int)sizeof(file_var) ||
		    !nv_launcher_env_name_ok(file_var))
			return nv_err_set(err, NV_EINVAL, NULL,
					  "job %s: bad secret name", id);
		cJSON_ArrayForEach(d, delivery)
		{
			const char *n = string_field(d, "name");
			if (n && strcmp(n, name) == 0) {
				get = string_field(d, "get");
				del = string_field(d, "delete");
				pass = string_field(d, "password");
			}
		}
		if (!get || !del || !pass) {
			nv_buf_printf(
				out,
				"\t# %s: its URLs and password are "
				"written when navette sends the job\n"
				"\tnv_fail %s \"this launcher was made "
				"without its secrets\" \"submit the job "
				"with navette run\"\n"
				"\treturn 1\n",
				name,
				nv_record_phase_name(NV_PHASE_DATA_READY));
			break;
		}
		nv_buf_printf(out, "\tfetch_secret %s ", name);
		nv_buf_sh_quote(out, get);
		nv_buf_puts(out, " ");
		nv_buf_sh_quote(out, del);
		nv_buf_puts(out, " ");
		nv_buf_sh_quote(out, pass);
		nv_buf_puts(out, " || return\n");
		nv_buf_printf(out,
			      "\t%s_FILE=\"$NAVETTE_SECRETS/%s\"; export "
			      "%s_FILE\n",
			      name, name, name);
	}
	nv_buf_puts(out, "}\n");
	return 0;
}

/* The job's steps as functions: the command, the image, the code, the
 * inputs (from the store, and other jobs' outputs checked against their
 * producers' run records), the failure patterns, the required outputs. */
static int node_functions(const cJSON *spec, const cJSON *transfer, nv_buf *out,
			  nv_err *err)
{
	static const char *const input_keys[] = {"name",   "url",  "get",
						 "sha256", "size", NULL};
	static const char *const output_keys[] = {
		"name", "url", "get", "record_get", "from", "output", NULL};
	static const char *const self[] = {"", NULL};
	const cJSON *success = field(spec, "success");
	const cJSON *failure = field(spec, "failure_condition");
	const cJSON *code = field(transfer, "code");
	cJSON *plain, *produced;
	int rc;

	if ((rc = command_function(spec, out, err)) != 0)
		return rc;
	if (code_in_image(spec)) {
		nv_buf_puts(out, "navette_code() { :; } # in the image\n");
	} else {
		nv_buf_puts(out, "navette_code() {\n\tfetch_code ");
		nv_buf_sh_quote(out, string_field(code, "url"));
		nv_buf_puts(out, " ");
		nv_buf_sh_quote(out, string_field(code, "sha256"));
		nv_buf_puts(out, "\n}\n");
	}
	plain = inputs_of(transfer, 0);
	produced = inputs_of(transfer, 1);
	if (!plain || !produced) {
		cJSON_Delete(plain);
		cJSON_Delete(produced);
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	}
	list_function(out, "navette_inputs", "fetch_input", plain, input_keys);
	list_function(out, "navette_output_inputs", "fetch_output", produced,
		      output_keys);
	cJSON_Delete(plain);
	cJSON_Delete(produced);
	if ((rc = node_secrets_function(spec, out, err)) != 0)
		return rc;
	list_function(out, "navette_failure_patterns", "check_pattern",
		      failure ? field(failure, "log_patterns") : NULL, self);
	list_function(out, "navette_required_outputs", "check_required",
		      success ? field(success, "outputs") : NULL, self);
	return 0;
}

/* A POST field's name as a shell variable of an array's task
 * (nv_post_x_amz_signature): the name was checked, [A-Za-z0-9-]. */
static void post_variable(nv_buf *out, const char *name)
{
	nv_buf_puts(out, "nv_post_");
	for (const char *c = name; *c; c++)
		nv_buf_printf(out, "%c", *c == '-' ? '_' : *c);
}

static int post_name_ok(const char *name)
{
	return name && name[0] &&
	       strspn(name,
		      "abcdefghijklmnopqrstuvwxyz"
		      "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") == strlen(name);
}

/* post_object KEY FILE SHA256: the signed form, the file last (S3
 * ignores fields after it). --form-string takes values literally. A
 * field named in `varying` (an array's) takes its task's variable. */
static int post_function(const cJSON *fields, const cJSON *varying,
			 const char *id, nv_buf *out, nv_err *err)
{
	const cJSON *item;

	nv_buf_puts(
		out,
		"post_object() {\n"
		"\tcurl -sS --retry 5 --retry-connrefused --connect-timeout "
		"20 \\\n"
		"\t\t--speed-limit 1 --speed-time 120 \\\n"
		"\t\t-o \"$nv_work/post.body\" -D \"$nv_work/post.head\" "
		"-w '%{http_code}' \\\n"
		"\t\t--form-string \"key=$1\" \\\n");
	cJSON_ArrayForEach(item, fields)
	{
		if (!item->string || !cJSON_IsString(item) ||
		    strcmp(item->string, "key") == 0)
			continue;
		if (!post_name_ok(item->string))
			return nv_err_set(err, NV_EINVAL, NULL,
					  "job %s: bad POST field name", id);
		nv_buf_printf(out, "\t\t--form-string '%s='", item->string);
		if (varying && field(varying, item->string)) {
			nv_buf_puts(out, "\"$");
			post_variable(out, item->string);
			nv_buf_puts(out, "\"");
		} else {
			nv_buf_sh_quote(out, item->valuestring);
		}
		nv_buf_puts(out, " \\\n");
	}
	nv_buf_puts(out, "\t\t--form-string \"x-amz-meta-sha256=$3\" \\\n"
			 "\t\t-F \"file=@\\\"$2\\\"\" \"$NAVETTE_POST_URL\"\n"
			 "}\n");
	return 0;
}

static int node_script(const cJSON *spec, const cJSON *transfer, nv_buf *out,
		       nv_err *err)
{
	const char *id = string_field(spec, "id");
	const cJSON *post = field(transfer, "post");
	int rc;

	if ((rc = node_check(spec, transfer, err)) != 0 ||
	    (rc = common_header(spec, out, err)) != 0)
		return rc;
	nv_buf_puts(
		out,
		"# Node launcher: fetches code and inputs, runs the command, "
		"publishes\n# outputs, log and run record with "
		"presigned URLs and a POST policy.\n");
	nv_buf_puts(out, "# where the job publishes, and how\n");
	assign(out, "NAVETTE_PREFIX", string_field(transfer, "prefix"));
	assign(out, "NAVETTE_OUTPUT_URL", string_field(transfer, "output_url"));
	if ((rc = node_settings(spec, transfer, out, err)) != 0 ||
	    (rc = record_head(spec, out, err)) != 0)
		return rc;
	retry_header(spec, transfer, out);
	attempts_header(transfer, out);
	if ((rc = nv_launcher_launch_header(spec, out, err)) != 0 ||
	    (rc = node_functions(spec, transfer, out, err)) != 0 ||
	    (rc = post_function(field(post, "fields"), NULL, id, out, err)) !=
		    0)
		return rc;
	return nv_record_fill(out, nv_launcher_node_body,
			      nv_launcher_node_body_len, err);
}

/* ---- a job array's launcher ------------------------------------------ */

/* The spec fields that the tasks of one array share (they differ only in
 * their id, name, parameters, prefix and signed forms). */
static const char *const array_same[] = {
	"commit",    "project", "backend",           "image",
	"container", "inputs",  "command",           "env",
	"resources", "success", "failure_condition", "logs",
	"launch",    NULL};

/* Whether two fields are alike (both absent, or equal). */
static int same_field(const cJSON *a, const cJSON *b)
{
	return (!a && !b) || (a && b && cJSON_Compare(a, b, 1));
}

/* Refuses task k unless it differs from the first only where tasks may. */
static int array_task_check(const cJSON *first, const cJSON *spec, int k,
			    nv_err *err)
{
	const cJSON *t0 = field(first, "transfer"),
		    *t = field(spec, "transfer");
	const char *id = string_field(spec, "id");
	int rc;

	if (!id || nv_job_id_check(id, err))
		return id ? err->code
			  : nv_err_set(err, NV_EINVAL, NULL,
				       "task %d of the array has no id", k);
	if (!cJSON_IsObject(t))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "job %s: an array's tasks publish to S3", id);
	if ((rc = node_check(spec, t, err)) != 0)
		return rc;
	for (const char *const *key = array_same; *key; key++) {
		if (!same_field(field(first, *key), field(spec, *key)))
			return nv_err_set(err, NV_EINVAL,
					  "submit such jobs one by one",
					  "job %s differs from the array's "
					  "first task in %s",
					  id, *key);
	}
	if (!same_field(field(t0, "max_output_bytes"),
			field(t, "max_output_bytes")) ||
	    strcmp(string_field(field(t0, "post"), "url"),
		   string_field(field(t, "post"), "url")) != 0)
		return nv_err_set(err, NV_EINVAL, "submit such jobs one by one",
				  "job %s publishes otherwise than the "
				  "array's first task",
				  id);
	return 0;
}

/* Whether field key of every task equals the first's. */
static int all_same(const cJSON *specs, const char *key)
{
	const cJSON *first = cJSON_GetArrayItem(specs, 0), *spec;
	const cJSON *value = field(first, key); /* (looked up once) */

	cJSON_ArrayForEach(spec, specs)
	{
		if (!same_field(value, field(spec, key)))
			return 0;
	}
	return 1;
}

/* The record fields (nv_record_spec_fields) that every task has alike:
 * shared[k] for the k-th. */
#define RECORD_FIELDS_MAX 64
static void record_fields_shared(const cJSON *specs,
				 int shared[RECORD_FIELDS_MAX])
{
	for (int k = 0; nv_record_spec_fields[k] && k < RECORD_FIELDS_MAX; k++)
		shared[k] = all_same(specs, nv_record_spec_fields[k]);
}

/* The record fields that a task's object holds apart from the shared
 * ones, as the JSON members without braces: "id":"...","name":"...". */
static int record_task_part(const cJSON *spec,
			    const int shared[RECORD_FIELDS_MAX], nv_buf *out,
			    nv_err *err)
{
	cJSON *part = cJSON_CreateObject();
	char *text;
	size_t len;

	if (!part)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	for (int k = 0; nv_record_spec_fields[k] && k < RECORD_FIELDS_MAX;
	     k++) {
		const char *key = nv_record_spec_fields[k];
		const cJSON *v = field(spec, key);
		if (v && strcmp(key, "inputs") != 0 && !shared[k])
			cJSON_AddItemToObject(part, key, cJSON_Duplicate(v, 1));
	}
	text = cJSON_PrintUnformatted(part);
	cJSON_Delete(part);
	if (!text)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	len = strlen(text);
	text[len - 1] = '\0';
	assign(out, "nv_record_task", text + 1);
	cJSON_free(text);
	return 0;
}

/* The record's head shared by every task: the fields all tasks have
 * alike, as an object missing its closing brace. */
static int record_shared_part(const cJSON *first,
			      const int shared[RECORD_FIELDS_MAX], nv_buf *out,
			      nv_err *err)
{
	cJSON *head = cJSON_CreateObject();
	char *text;

	if (!head)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	cJSON_AddNumberToObject(head, "navette_run_record", 1);
	for (int k = 0; nv_record_spec_fields[k] && k < RECORD_FIELDS_MAX;
	     k++) {
		const char *key = nv_record_spec_fields[k];
		const cJSON *v = field(first, key);
		if (v && strcmp(key, "inputs") != 0 && shared[k])
			cJSON_AddItemToObject(head, key, cJSON_Duplicate(v, 1));
	}
	text = cJSON_PrintUnformatted(head);
	cJSON_Delete(head);
	if (!text)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	text[strlen(text) - 1] = '\0';
	assign(out, "nv_record_shared", text);
	cJSON_free(text);
	return 0;
}

/* The POST fields whose values differ between tasks: {name: true}. */
static cJSON *varying_post_fields(const cJSON *specs)
{
	const cJSON *first = cJSON_GetArrayItem(specs, 0), *spec, *item;
	const cJSON *fields0 =
		field(field(field(first, "transfer"), "post"), "fields");
	cJSON *varying = cJSON_CreateObject();

	cJSON_ArrayForEach(spec, specs)
	{
		const cJSON *fields =
			field(field(field(spec, "transfer"), "post"), "fields");
		cJSON_ArrayForEach(item, fields0)
		{
			if (varying && item->string &&
			    !field(varying, item->string) &&
			    !cJSON_Compare(item, field(fields, item->string),
					   1))
				cJSON_AddTrueToObject(varying, item->string);
		}
	}
	return varying;
}

/* One task's branch of the case on its index (spec.launch.array_index). */
static int array_task(const cJSON *spec, int k,
		      const int shared[RECORD_FIELDS_MAX], const cJSON *varying,
		      nv_buf *out, nv_err *err)
{
	const cJSON *t = field(spec, "transfer");
	const cJSON *fields = field(field(t, "post"), "fields");
	const cJSON *item;
	int rc;

	nv_buf_printf(out, "%d)\n", k);
	assign(out, "NAVETTE_JOB_ID", string_field(spec, "id"));
	if ((rc = params_header(spec, string_field(spec, "id"), out, err)) != 0)
		return rc;
	assign(out, "NAVETTE_PREFIX", string_field(t, "prefix"));
	assign(out, "NAVETTE_OUTPUT_URL", string_field(t, "output_url"));
	if ((rc = record_task_part(spec, shared, out, err)) != 0)
		return rc;
	attempts_header(t, out);
	cJSON_ArrayForEach(item, fields)
	{
		if (!item->string || !field(varying, item->string))
			continue;
		if (!post_name_ok(item->string) || !cJSON_IsString(item))
			return nv_err_set(err, NV_EINVAL, NULL,
					  "job %s: bad POST field",
					  string_field(spec, "id"));
		post_variable(out, item->string);
		nv_buf_puts(out, "=");
		nv_buf_sh_quote(out, item->valuestring);
		nv_buf_puts(out, "\n");
	}
	nv_buf_puts(out, ";;\n");
	return 0;
}

/* The tasks' branches, then what they share. */
static int array_body(const cJSON *specs, const cJSON *varying, nv_buf *out,
		      nv_err *err)
{
	const cJSON *first = cJSON_GetArrayItem(specs, 0), *spec;
	const cJSON *t0 = field(first, "transfer");
	int shared[RECORD_FIELDS_MAX] = {0};
	const char *index = nv_launcher_array_index(first);
	int k = 0, rc;

	/* (the name is checked before it is written) */
	if ((rc = nv_launcher_launch_header(first, out, err)) != 0)
		return rc;
	if (!index)
		return nv_err_set(err, NV_EINVAL,
				  "submit the jobs one by one, or on a backend "
				  "whose prepare names it",
				  "job %s: a job array needs the variable of "
				  "its task's index (spec.launch.array_index)",
				  string_field(first, "id"));
	record_fields_shared(specs, shared);
	nv_buf_printf(out, "case ${%s:-} in\n", index);
	cJSON_ArrayForEach(spec, specs)
	{
		if ((rc = array_task(spec, k++, shared, varying, out, err)) !=
		    0)
			return rc;
	}
	nv_buf_printf(out,
		      "*)\n\techo \"navette: this job array has no task "
		      "'${%s:-}'\" >&2\n\texit 125\n\t;;\n"
		      "esac\n",
		      index);
	if ((rc = record_shared_part(first, shared, out, err)) != 0)
		return rc;
	nv_buf_puts(out, "NAVETTE_RECORD_HEAD=\"$nv_record_shared"
			 "${nv_record_task:+,$nv_record_task}\"\n");
	/* the checkpoint's URLs are a job's own: such jobs go one by one
	 * (runner.array_group) */
	if (field(t0, "checkpoint"))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "job %s: a job array's tasks have no "
				  "checkpoint",
				  string_field(first, "id"));
	if ((rc = node_settings(first, t0, out, err)) != 0)
		return rc;
	retry_header(first, t0, out);
	if ((rc = node_functions(first, t0, out, err)) != 0 ||
	    (rc = post_function(field(field(t0, "post"), "fields"), varying,
				string_field(first, "id"), out, err)) != 0)
		return rc;
	return nv_record_fill(out, nv_launcher_node_body,
			      nv_launcher_node_body_len, err);
}

int nv_launcher_array_script(const cJSON *specs, nv_buf *out, nv_err *err)
{
	const cJSON *first = cJSON_GetArrayItem(specs, 0), *spec;
	cJSON *varying = NULL;
	int n = cJSON_GetArraySize(specs), k = 0, rc;

	if (!cJSON_IsArray(specs) || n < 1 || n > NV_LAUNCHER_ARRAY_TASKS)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "a job array has 1 to %d tasks",
				  NV_LAUNCHER_ARRAY_TASKS);
	cJSON_ArrayForEach(spec, specs)
	{
		if ((rc = array_task_check(first, spec, k++, err)) != 0)
			return rc;
	}
	if (!(varying = varying_post_fields(specs)))
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	nv_buf_printf(out,
		      "#!/bin/sh\n"
		      "# navette launcher for a job array of %d tasks, the "
		      "first job %s (generated).\n"
		      "set -u\n",
		      n, string_field(first, "id"));
	assign(out, "NAVETTE_COMMIT", string_field(first, "commit"));
	assign(out, "NAVETTE_PROJECT", string_field(first, "project"));
	rc = env_header(first, string_field(first, "id"), out, err);
	if (rc == 0)
		rc = array_body(specs, varying, out, err);
	cJSON_Delete(varying);
	if (rc == 0 && out->failed)
		rc = nv_err_set(err, NV_EINVAL,
				"split the sweep into smaller ones",
				"the launcher of a job array of %d tasks is "
				"larger than %zu bytes",
				n, out->max);
	return rc;
}

int nv_launcher_script(const cJSON *spec, nv_buf *out, nv_err *err)
{
	const char *id = string_field(spec, "id");
	const cJSON *command = field(spec, "command");
	const cJSON *env = field(spec, "env");
	const cJSON *transfer = field(spec, "transfer");
	int rc;

	if (!id || !string_field(spec, "commit") ||
	    !string_field(spec, "project"))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "job spec lacks id, commit or project");
	/* the launcher makes folders, keys and log lines of it */
	if (nv_job_id_check(id, err))
		return err->code;
	if (!cJSON_IsArray(command) || cJSON_GetArraySize(command) == 0)
		return nv_err_set(err, NV_EINVAL,
				  "command is a list of strings: { \"sh\", "
				  "\"run.sh\" }",
				  "job %s has no command", id);
	if (env && !cJSON_IsObject(env) && !cJSON_IsNull(env))
		return nv_err_set(err, NV_EINVAL,
				  "env is a table of NAME = \"value\"",
				  "job %s: env is not an object", id);
	if (transfer && !cJSON_IsNull(transfer)) {
		if (!cJSON_IsObject(transfer))
			return nv_err_set(err, NV_EINVAL, NULL,
					  "job %s: transfer is not an object",
					  id);
		rc = node_script(spec, transfer, out, err);
	} else {
		rc = local_script(spec, out, err);
	}
	if (rc)
		return rc;
	if (out->failed)
		return nv_err_set(err, NV_ENOMEM, NULL,
				  "job %s: launcher larger than %zu bytes", id,
				  NV_LAUNCHER_MAX);
	return 0;
}
