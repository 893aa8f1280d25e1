/* The top floor of libnavette (private to host/lib): what wires the
 * primitives together and stands under navette.h. The core knows no
 * primitive; this folder opens every primitive's natives into `_navette`,
 * puts the redactor in front of every sink, and holds the public C API
 * (api.c, agent_main.c). */
#ifndef NV_LIB_H
#define NV_LIB_H

#include <lua.h>

/* Opens the natives of the core and of every primitive into the trusted
 * global `_navette` (_navette.core, .git, .storage, ...). May raise
 * (memory). */
void nv_lib_open_natives(lua_State *L);

/* Routes the output module, the audit log and secret loading through the
 * redactor (navette_open does it). Process-wide; installing it again is
 * harmless. */
void nv_lib_install_redactor(void);

/* The binding of each native (natives.def; the core's own are also in
 * core/runtime.h). */
#define NV_NATIVE(name) int luaopen_navette_##name(lua_State *L);
#include "lib/natives.def"
#undef NV_NATIVE

#endif
