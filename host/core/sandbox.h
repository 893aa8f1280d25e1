/* The sandbox of recipes and project files, and the sealed objects the
 * public API hands them (host/core/sandbox.c). */
#ifndef NV_SANDBOX_H
#define NV_SANDBOX_H

#include <lua.h>

/* core.sandbox(dir [, opts]) -> env */
int nv_core_sandbox(lua_State *L);

/* core.seal(...) -> read-only deep copies; core.copy(...) -> plain deep
 * copies read with raw access (metatables dropped). */
int nv_core_seal(lua_State *L);
int nv_core_copy(lua_State *L);

/* True when the value at idx is a sealed object. */
int nv_sandbox_is_sealed(lua_State *L, int idx);

#endif
