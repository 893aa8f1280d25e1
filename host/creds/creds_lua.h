/* For C modules that take a credential from Lua: the secret behind a
 * handle (raises when the argument is not a live handle). */
#ifndef NV_CREDS_LUA_H
#define NV_CREDS_LUA_H

#include <lua.h>

#include "creds/secret.h"

#define NV_SECRET_MT "navette.secret"

const nv_secret *nv_creds_check(lua_State *L, int idx);

/* The same for a request that plan mode records instead of sending: a
 * plan's stand-in (creds.not_run) is accepted, since its value is never
 * read. */
const nv_secret *nv_creds_check_planned(lua_State *L, int idx);

/* Pushes a new handle, closed, and returns where its secret goes: a C
 * call that makes a secret writes it there, so that nothing can raise
 * between its making and the handle owning it (left NULL: the handle
 * stays closed, the caller pops it). */
nv_secret **nv_creds_push_slot(lua_State *L);

#endif
