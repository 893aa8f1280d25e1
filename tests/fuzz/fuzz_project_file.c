/* Fuzz target: a project file (navette.lua) as Lua source, loaded by the
 * project loader the CLI uses (navette.project's project.load: the
 * sandboxed, bounded evaluation, then the project, profile, S3, Slurm and
 * credential validators). Invariants: no crash, no Lua error at a line
 * of the library, a loaded project has a slug name, a declared default
 * profile, known backends and storage URLs and bounded durations; the
 * trusted state is unchanged after every input. See recipe_harness.h. */
#include "recipe_harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	harness_run("project", data, size);
	return 0;
}
