/* Fuzz target: a job declaration as a recipe writes it, Lua source such
 * as `return { name = "x", command = { "true" } }`, evaluated in the
 * recipe sandbox under the runtime's limits and passed to the runner's
 * validation (navette.job's job.validate). Invariants: no crash, no Lua
 * error at a line of the library, a validated job has a valid name,
 * command, outputs and env, round-trips through JSON unchanged (what was
 * validated is what is submitted) and the launcher takes it; the trusted
 * state is unchanged after every input. See recipe_harness.h. */
#include "recipe_harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	harness_run("job", data, size);
	return 0;
}
