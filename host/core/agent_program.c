/* Which program runs the local agent (navette.h, "The local agent"): the
 * host's choice, NAVETTE_BIN, the program itself when it dispatches
 * `agent`, the navette installed beside libnavette or in its prefix, or
 * navette on PATH. A host program is never re-executed unless it said it
 * answers `agent`: it would not, and the agent would never start. */
#define _GNU_SOURCE /* dladdr and Dl_info in glibc's dlfcn.h */

#include "core/agent_program.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef __APPLE__
#include <mach-o/dyld.h>
#endif

#include "core/fsutil.h"

#ifndef NAVETTE_INSTALL_BINDIR
#define NAVETTE_INSTALL_BINDIR "/usr/local/bin"
#endif
#ifndef NAVETTE_LIBDIR_TO_BINDIR
#define NAVETTE_LIBDIR_TO_BINDIR "../bin"
#endif

#define PROGRAM_CAP NV_AGENT_PROGRAM_MAX

static char configured_program[PROGRAM_CAP];
static int configured_self;

void nv_agent_set_program(const char *program, int self)
{
	nv_pathf(configured_program, sizeof(configured_program), "%s",
		 program ? program : "");
	configured_self = self;
}

static int is_executable_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	       access(path, X_OK) == 0;
}

/* The running executable's path. */
static int self_path(char *out, size_t cap)
{
#ifdef __APPLE__
	char raw[PATH_MAX];
	uint32_t size = sizeof(raw);
	char real[PATH_MAX];
	if (_NSGetExecutablePath(raw, &size) != 0 || !realpath(raw, real))
		return -1;
	return nv_pathf(out, cap, "%s", real);
#else
	ssize_t n = readlink("/proc/self/exe", out, cap - 1);
	if (n <= 0 || (size_t)n >= cap - 1)
		return -1;
	out[n] = '\0';
	return 0;
#endif
}

int nv_agent_library(char *loaded, char *real, size_t cap)
{
	Dl_info info;
	char self[PROGRAM_CAP];

	if (!dladdr((void *)nv_agent_set_program, &info) || !info.dli_fname ||
	    info.dli_fname[0] != '/' || cap < PATH_MAX ||
	    nv_pathf(loaded, cap, "%s", info.dli_fname) != 0 ||
	    !realpath(info.dli_fname, real))
		return -1;
	if (self_path(self, sizeof(self)) == 0 && strcmp(self, real) == 0)
		return -1;
	return 0;
}

/* bindir/navette of the shared libnavette this code is in; -1 when it is
 * linked into the executable (a static libnavette). */
static int beside_library(char *out, size_t cap)
{
	char loaded[PATH_MAX], lib[PATH_MAX];

	if (nv_agent_library(loaded, lib, sizeof(lib)) != 0)
		return -1;
	char *slash = strrchr(lib, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	if (nv_pathf(out, cap, "%s/%s/navette", lib,
		     NAVETTE_LIBDIR_TO_BINDIR) != 0)
		return -1;
	return is_executable_file(out) ? 0 : -1;
}

int nv_agent_program(char *out, size_t cap, nv_err *err)
{
	const char *env = getenv("NAVETTE_BIN");

	if (configured_program[0])
		return nv_pathf(out, cap, "%s", configured_program) == 0
			       ? 0
			       : nv_err_set(err, NV_EINVAL, NULL,
					    "agent program path too long");
	if (env && *env)
		return nv_pathf(out, cap, "%s", env) == 0
			       ? 0
			       : nv_err_set(err, NV_EINVAL, NULL,
					    "NAVETTE_BIN too long");
	if (configured_self) {
		if (self_path(out, cap) == 0)
			return 0;
		return nv_err_set(err, NV_EBACKEND,
				  "set NAVETTE_BIN to the navette program",
				  "cannot find this program's own path to "
				  "start the agent");
	}
	if (beside_library(out, cap) == 0)
		return 0;
	if (nv_pathf(out, cap, "%s/navette", NAVETTE_INSTALL_BINDIR) == 0 &&
	    is_executable_file(out))
		return 0;
	if (nv_which("navette", out, cap) == 0)
		return 0;
	out[0] = '\0';
	return nv_err_set(err, NV_EBACKEND,
			  "install navette (bin/ beside libnavette, or on "
			  "PATH), set NAVETTE_BIN, or give the runtime an "
			  "agent_program (navette.h)",
			  "cannot find the navette program that runs the "
			  "local agent");
}
