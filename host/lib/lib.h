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

/* The binding of each primitive, one per host/<prim>/ *_lua.c file (the
 * core's own are in core/runtime.h). */
int luaopen_navette_git(lua_State *L);
int luaopen_navette_storage(lua_State *L);
int luaopen_navette_jobs(lua_State *L);
int luaopen_navette_jobdb(lua_State *L);
int luaopen_navette_creds(lua_State *L);
int luaopen_navette_audit(lua_State *L);
int luaopen_navette_net(lua_State *L);
int luaopen_navette_s3(lua_State *L);
int luaopen_navette_image(lua_State *L);
int luaopen_navette_slurm(lua_State *L);
int luaopen_navette_record(lua_State *L);
int luaopen_navette_tasks(lua_State *L);

#endif
