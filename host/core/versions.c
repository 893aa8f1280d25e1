/* `navette version`: the versions of navette and of every library it runs
 * on, as linked (not as compiled against), for bug reports. The navette
 * program loads libcurl, libgit2 and libcrypto on first use
 * (host/cli/lazy_libs.c); asking them would load them, so unless the
 * caller wants them loaded they are given as built against, marked so. */
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <expat.h>
#include <git2.h>
#include <lauxlib.h>
#include <lua.h>
#include <openssl/crypto.h>
#include <sqlite3.h>
#include <stdio.h>
#include <zlib.h>

#include "core/runtime.h"

int nv_core_versions(lua_State *L);

#define BUILT_AGAINST " (as built; loaded on first use)"

#if defined(__ELF__)
/* Defined by the navette program when it loads libraries lazily; absent
 * (NULL) in libnavette used alone, where every library is linked. */
int nv_lazy_pending(const char *symbol) __attribute__((weak));

static int pending(const char *symbol)
{
	return nv_lazy_pending && nv_lazy_pending(symbol);
}
#else
static int pending(const char *symbol)
{
	(void)symbol;
	return 0;
}
#endif

/* _navette.core.versions([load]) -> table; load: ask every library, even
 * one not loaded yet */
int nv_core_versions(lua_State *L)
{
	char buf[64];
	int major, minor, rev;
	int load = lua_toboolean(L, 1);

	lua_createtable(L, 0, 9);
	lua_pushstring(L, navette_version());
	lua_setfield(L, -2, "navette");
	lua_pushstring(L, &LUA_RELEASE[4]); /* "Lua 5.4.4" -> "5.4.4" */
	lua_setfield(L, -2, "lua");
	if (!load && pending("git_libgit2_version"))
		lua_pushstring(L, LIBGIT2_VERSION BUILT_AGAINST);
	else {
		git_libgit2_version(&major, &minor, &rev);
		snprintf(buf, sizeof(buf), "%d.%d.%d", major, minor, rev);
		lua_pushstring(L, buf);
	}
	lua_setfield(L, -2, "libgit2");
	if (!load && pending("curl_version_info")) {
		lua_pushstring(L, LIBCURL_VERSION BUILT_AGAINST);
		lua_setfield(L, -2, "libcurl");
	} else {
		curl_version_info_data *curl =
			curl_version_info(CURLVERSION_NOW);
		if (curl) {
			snprintf(buf, sizeof(buf), "%s (%s)", curl->version,
				 curl->ssl_version ? curl->ssl_version
						   : "no TLS");
			lua_pushstring(L, buf);
			lua_setfield(L, -2, "libcurl");
		}
	}
	lua_pushstring(L, sqlite3_libversion());
	lua_setfield(L, -2, "sqlite");
	if (!load && pending("OpenSSL_version"))
		lua_pushstring(L, OPENSSL_VERSION_TEXT BUILT_AGAINST);
	else
		lua_pushstring(L, OpenSSL_version(OPENSSL_VERSION));
	lua_setfield(L, -2, "openssl");
	lua_pushstring(L, cJSON_Version());
	lua_setfield(L, -2, "cjson");
	lua_pushstring(L, zlibVersion());
	lua_setfield(L, -2, "zlib");
	lua_pushstring(L, XML_ExpatVersion());
	lua_setfield(L, -2, "expat");
	return 1;
}
