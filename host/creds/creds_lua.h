/* For C modules that take a credential from Lua: the secret behind a
 * handle (raises when the argument is not a live handle). */
#ifndef NV_CREDS_LUA_H
#define NV_CREDS_LUA_H

#include <lua.h>

#include "creds/secret.h"

#define NV_SECRET_MT "navette.secret"

const nv_secret *nv_creds_check(lua_State *L, int idx);

#endif
