/* _navette.net: one HTTP request with navette's TLS policy (verification
 * always on, optional CA bundle and public-key pin), a credential bound to
 * its host, bounded bodies. Side effects (anything but GET/HEAD) honour
 * plan mode. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "core/nv_lua.h"
#include "creds/creds_lua.h"
#include "net/hostname.h"
#include "net/http.h"

#define NET_HEADERS_MAX 64
/* What a GET sent under plan may bring back, whatever it asked for: a
 * plan reads to show, not to download. */
#define NET_PLAN_MAX_BODY ((size_t)4 << 20)

/* The response lives in a userdata while it is turned into Lua values, so
 * a memory error in between frees it (__gc). */
typedef struct response_box {
	nv_http_response response;
	int live;
} response_box;

static int box_gc(lua_State *L)
{
	response_box *box = lua_touserdata(L, 1);
	if (box->live) {
		nv_http_response_free(&box->response);
		box->live = 0;
	}
	return 0;
}

/* A redirect_check of Lua: fn(url) -> true | nil, message [, hint],
 * called protected (an error in it refuses the redirect too; so does a
 * memory error while the URL is pushed, which must not unwind through
 * nv_http_perform). */
typedef struct redirect_hook {
	lua_State *L;
	int fn;
} redirect_hook;

/* [fn, url as a light userdata] -> fn(url)'s three results */
static int call_redirect_check(lua_State *L)
{
	lua_pushstring(L, (const char *)lua_touserdata(L, 2));
	lua_replace(L, 2);
	lua_call(L, 1, 3);
	return 3;
}

static int redirect_check_lua(void *payload, const char *url, nv_err *err)
{
	redirect_hook *h = payload;
	lua_State *L = h->L;
	int top = lua_gettop(L), rc = 0;

	if (!lua_checkstack(L, 4))
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	lua_pushcfunction(L, call_redirect_check);
	lua_pushvalue(L, h->fn);
	lua_pushlightuserdata(L, (void *)url);
	if (lua_pcall(L, 2, 3, 0) != LUA_OK) {
		const char *m = lua_tostring(L, -1);
		rc = nv_err_set(err, NV_EREFUSED, NULL,
				"a redirect was refused: %s",
				m ? m : "the check failed");
	} else if (!lua_toboolean(L, -3)) {
		const char *m = lua_tostring(L, -2);
		rc = nv_err_set(err, NV_EREFUSED, lua_tostring(L, -1), "%s",
				m ? m : "redirect refused");
	}
	lua_settop(L, top);
	return rc;
}

static const char *opt_string(lua_State *L, int t, const char *key)
{
	lua_getfield(L, t, key); /* left on the stack: anchors the string */
	return lua_isnil(L, -1) ? NULL : luaL_checkstring(L, -1);
}

/* net.request{url=, method=, headers={"Name: value", ...}, body=,
 * credential=handle, credential_host=, max_redirects=, redirect_check=fn,
 * ca_bundle=, pin=, timeout_ms=, max_body=} -> {status, body, headers,
 * effective_url, redirects} | nil, err. redirect_check(url) -> true | nil,
 * message, hint: asked before each redirect is followed. */
static int l_net_request(lua_State *L)
{
	nv_http_policy policy;
	nv_http_request req;
	const char *headers[NET_HEADERS_MAX];
	size_t body_len = 0;
	nv_err err;

	luaL_checktype(L, 1, LUA_TTABLE);
	luaL_checkstack(L, NET_HEADERS_MAX + 24, "http request");
	memset(&policy, 0, sizeof(policy));
	memset(&req, 0, sizeof(req));
	req.url = opt_string(L, 1, "url");
	luaL_argcheck(L, req.url != NULL, 1, "url is required");
	req.method = opt_string(L, 1, "method");
	policy.ca_bundle = opt_string(L, 1, "ca_bundle");
	policy.pinned_pubkey = opt_string(L, 1, "pin");
	lua_getfield(L, 1, "timeout_ms");
	policy.total_timeout_ms = (long)nv_lua_optrange(
		L, -1, 0, (lua_Integer)7 * 24 * 3600 * 1000, 0,
		"http: timeout_ms");
	lua_getfield(L, 1, "max_body");
	policy.max_body = (size_t)nv_lua_optrange(
		L, -1, 0, (lua_Integer)1 << 40, 0, "http: max_body");
	lua_getfield(L, 1, "max_redirects");
	req.max_redirects =
		(int)nv_lua_optrange(L, -1, 0, 100, 0, "http: max_redirects");
	redirect_hook hook = {L, 0};
	lua_getfield(L, 1, "redirect_check");
	if (!lua_isnil(L, -1)) {
		luaL_checktype(L, -1, LUA_TFUNCTION);
		hook.fn = lua_gettop(L);
		req.redirect_check = redirect_check_lua;
		req.redirect_payload = &hook;
	}
	lua_getfield(L, 1, "body");
	if (!lua_isnil(L, -1)) {
		req.body = luaL_checklstring(L, -1, &body_len);
		req.body_len = body_len;
	}
	lua_getfield(L, 1, "headers");
	if (lua_istable(L, -1)) {
		int t = lua_gettop(L);
		size_t n = lua_rawlen(L, t);
		luaL_argcheck(L, n <= NET_HEADERS_MAX, 1, "too many headers");
		for (size_t i = 0; i < n; i++) {
			lua_rawgeti(L, t, (lua_Integer)i + 1);
			headers[i] = luaL_checkstring(L, -1);
		}
		req.headers = headers;
		req.nheaders = n;
	}
	lua_getfield(L, 1, "credential");
	if (!lua_isnil(L, -1)) {
		/* (under plan a request with a credential is recorded, never
		 * sent: a plan's stand-in is then accepted) */
		req.credential =
			nv_plan_mode(L)
				? nv_creds_check_planned(L, lua_gettop(L))
				: nv_creds_check(L, lua_gettop(L));
		req.credential_host = opt_string(L, 1, "credential_host");
		luaL_argcheck(L, req.credential_host != NULL, 1,
			      "a credential is sent only to the host it is "
			      "bound to: give credential_host");
	}
	/* The method is decided here, before the plan's rule reads it (the
	 * transfer would make a request with a body a POST). */
	if (!req.method)
		req.method = req.body ? "POST" : "GET";
	if (nv_plan_mode(L)) {
		/* Under plan only a read that carries nothing of the user's is
		 * sent (a GET or HEAD with no body and no credential), its
		 * answer bounded as it streams; in a run's checking pass
		 * nothing is, since the pass that submits makes the same
		 * requests. The plan lists each request, sent or not. */
		bool read = (strcmp(req.method, "GET") == 0 ||
			     strcmp(req.method, "HEAD") == 0) &&
			    !req.body && !req.credential;
		if (nv_checking_mode(L) || !read) {
			nv_plan_record(L, "net", req.method, req.url);
			lua_createtable(L, 0, 1);
			lua_pushboolean(L, 1);
			lua_setfield(L, -2, "planned");
			return 1;
		}
		nv_plan_record(L, "net",
			       strcmp(req.method, "GET") == 0 ? "GET (sent)"
							      : "HEAD (sent)",
			       req.url);
		if (!policy.max_body || policy.max_body > NET_PLAN_MAX_BODY)
			policy.max_body = NET_PLAN_MAX_BODY;
	}

	response_box *box = lua_newuserdatauv(L, sizeof(*box), 0);
	memset(box, 0, sizeof(*box));
	lua_createtable(L, 0, 1);
	lua_pushcfunction(L, box_gc);
	lua_setfield(L, -2, "__gc");
	lua_setmetatable(L, -2);
	box->live = 1;
	int rc = nv_http_perform(&policy, &req, &box->response, &err);
	if (rc) {
		nv_http_response_free(&box->response);
		box->live = 0;
		return nv_lua_push_error(L, &err);
	}
	nv_http_response *r = &box->response;
	lua_createtable(L, 0, 5);
	lua_pushinteger(L, r->status);
	lua_setfield(L, -2, "status");
	lua_pushlstring(L, r->body.data ? r->body.data : "", r->body.len);
	lua_setfield(L, -2, "body");
	lua_pushstring(L, r->effective_url ? r->effective_url : "");
	lua_setfield(L, -2, "effective_url");
	lua_pushinteger(L, r->redirects);
	lua_setfield(L, -2, "redirects");
	lua_createtable(L, 0, (int)r->nheaders);
	for (size_t i = 0; i < r->nheaders; i++) {
		/* lowercase names: HTTP header names are case-insensitive */
		luaL_Buffer b;
		luaL_buffinit(L, &b);
		for (const char *p = r->headers[i].name; *p; p++)
			luaL_addchar(&b, (char)(*p >= 'A' && *p <= 'Z' ? *p + 32
								       : *p));
		luaL_pushresult(&b);
		lua_pushstring(L, r->headers[i].value);
		lua_settable(L, -3);
	}
	lua_setfield(L, -2, "headers");
	nv_http_response_free(&box->response);
	box->live = 0;
	return 1;
}

static int l_net_pin(lua_State *L)
{
	char pin[NV_HTTP_PIN_MAX];
	nv_err err;
	int rc;

	rc = nv_http_pin_from_pem(luaL_checkstring(L, 1), pin, &err);
	return nv_lua_string_result(L, rc, pin, &err);
}

/* net.host(text) -> {canonical, kind = "name"|"ipv4"|"ipv6", loopback}
 * | nil, err: a URL's host in canonical form (net/hostname.h). */
static int l_net_host(lua_State *L)
{
	size_t len;
	const char *text = luaL_checklstring(L, 1, &len);
	static const char *const kinds[] = {"name", "ipv4", "ipv6"};
	nv_host host;
	nv_err err;

	if (nv_host_canonical(text, len, &host, &err) != 0)
		return nv_lua_push_error(L, &err);
	lua_createtable(L, 0, 3); // [t]
	lua_pushstring(L, host.canonical);
	lua_setfield(L, -2, "canonical");
	lua_pushstring(L, kinds[host.kind]);
	lua_setfield(L, -2, "kind");
	lua_pushboolean(L, host.loopback);
	lua_setfield(L, -2, "loopback");
	return 1;
}

int luaopen_navette_net(lua_State *L)
{
	static const luaL_Reg fns[] = {{"request", l_net_request},
				       {"pin", l_net_pin},
				       {"host", l_net_host},
				       {NULL, NULL}};
	luaL_newlib(L, fns);
	return 1;
}
