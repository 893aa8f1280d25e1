/* Which program runs the local agent (navette.h, "The local agent"), for
 * the floors that start it (jobs/: the agent, tasks/: the service
 * manager's units) without one depending on the other. Process-wide; no
 * Lua. */
#ifndef NV_AGENT_PROGRAM_H
#define NV_AGENT_PROGRAM_H

#include <stddef.h>

#include "core/nv_err.h"

/* The program nv_agent_ensure() runs as `PROGRAM agent` (and the launcher
 * pipes job logs through as `PROGRAM redact-stream`): process-wide.
 * program NULL or "": found (agent_program.c); self: this executable
 * answers `agent` itself (navette_agent_main). A program path is shorter
 * than NV_AGENT_PROGRAM_MAX bytes (navette_open refuses a longer one). */
#define NV_AGENT_PROGRAM_MAX 4096
void nv_agent_set_program(const char *program, int self);
/* The path of that program into out, or an error saying how to give one. */
int nv_agent_program(char *out, size_t cap, nv_err *err);
/* The shared libnavette this code is in: the path the loader opened
 * (loaded) and its real path (real), each of cap bytes; -1 when libnavette
 * is linked into the executable. A sandboxed job's redactor needs it. */
int nv_agent_library(char *loaded, char *real, size_t cap);

#endif
