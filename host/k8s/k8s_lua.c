/* _navette.k8s: the Lua binding of the Kubernetes API client (k8s.h) and
 * of what goes with it: kubeconfig files and in-cluster configuration
 * (k8s_kubeconfig.h), exec credential plugins (k8s_exec.h), the readers of
 * answers (k8s_parse.h), the state map (k8s_state.h) and the manifests
 * (k8s_manifest.h). Thin: it checks arguments and converts; what to do
 * with the answers is the C files' (or the backend's).
 *
 * A session is a full userdata (liolib style: created closed before it is
 * filled, closing twice is harmless, use after close raises). It owns the
 * resolved context: its CA, a client certificate and key, a token (from
 * the kubeconfig, a token file read at open, or an exec plugin, whose
 * credential is kept until 10 s before it expires and asked for again
 * once after a 401). A credential handle given to open replaces the
 * kubeconfig's user; it lives in the session's user value and is looked
 * up again at every call, so closing it makes the next call raise.
 *
 * Misuse raises; expected failures return nil, {code, message, hint},
 * and an API server's refusal also status, reason and causes. The body of
 * a Secret (it holds the launcher and the job's secrets) never becomes a
 * Lua string: secret_manifest returns a box that session:request sends. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <lauxlib.h>
#include <lua.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/nv_err.h"
#include "core/nv_lua.h"
#include "creds/creds_lua.h"
#include "k8s/k8s.h"
#include "k8s/k8s_exec.h"
#include "k8s/k8s_kubeconfig.h"
#include "k8s/k8s_manifest.h"
#include "k8s/k8s_parse.h"
#include "k8s/k8s_state.h"

#define K8S_SESSION_MT "navette.k8s.session"
#define K8S_DESC_MT    "navette.k8s.desc"
#define K8S_BODY_MT    "navette.k8s.body"
#define K8S_LOOK_MT    "navette.k8s.look"

/* An exec credential is asked for again this long before it expires. */
#define K8S_EXEC_MARGIN_S 10.0
/* LIST pages */
#define K8S_PAGE_LIMIT 500
/* A watch's seconds, per call (the caller resumes it). */
#define K8S_WATCH_SECONDS_MAX 300
#define K8S_LOG_MAX           ((lua_Integer)16 * 1024 * 1024)

enum l_k8s_auth {
	AUTH_NONE = 0,
	AUTH_TOKEN,
	AUTH_TOKEN_FILE,
	AUTH_CLIENT_CERT,
	AUTH_EXEC,
	AUTH_CREDENTIAL
};

static const char *const auth_names[] = {"none",       "token",
					 "token-file", "client-certificate",
					 "exec",       "credential"};

typedef struct l_k8s_session {
	nv_k8s *k;
	int open;
	int auth; /* enum l_k8s_auth */
	nv_k8s_target target;
	nv_secret *file_token;  /* AUTH_TOKEN_FILE: read at open */
	nv_k8s_credential cred; /* AUTH_EXEC: the plugin's last */
	char pin[NV_HTTP_PIN_MAX];
	long timeout_ms;
	long exec_runs;
	/* counts of the sessions closed when an exec plugin's client
	 * certificate replaced the identity */
	long requests_before, connections_before;
} l_k8s_session;

/* A Secret's body (or any body holding secret values), wiped when
 * collected. */
typedef struct l_k8s_body {
	char *json;
} l_k8s_body;

/* What a look holds while it turns into Lua tables. */
typedef struct l_k8s_look {
	nv_k8s_job *jobs;
	size_t njobs;
	nv_k8s_pod *pods;
	size_t npods;
	nv_k8s_event *events;
	size_t nevents;
} l_k8s_look_box;

#define SET_STR(k, v)  nv_lua_set_str(L, k, (v))
#define SET_INT(k, v)  nv_lua_set_int(L, k, (lua_Integer)(v))
#define SET_BOOL(k, v) nv_lua_set_bool(L, k, (v))

/* ---- boxes ----------------------------------------------------------- */

static int l_k8s_desc_gc(lua_State *L)
{
	nv_k8s_desc_free(luaL_checkudata(L, 1, K8S_DESC_MT));
	return 0;
}

static int l_k8s_body_gc(lua_State *L)
{
	l_k8s_body *b = luaL_checkudata(L, 1, K8S_BODY_MT);

	nv_k8s_secret_manifest_free(b->json);
	b->json = NULL;
	return 0;
}

static int l_k8s_body_tostring(lua_State *L)
{
	l_k8s_body *b = luaL_checkudata(L, 1, K8S_BODY_MT);

	if (!b->json)
		lua_pushliteral(L, "k8s secret body (freed)");
	else
		lua_pushfstring(L, "k8s secret body (%I bytes, not shown)",
				(lua_Integer)strlen(b->json));
	return 1;
}

static void look_free(l_k8s_look_box *l)
{
	for (size_t i = 0; i < l->njobs; i++)
		nv_k8s_job_free(&l->jobs[i]);
	for (size_t i = 0; i < l->npods; i++)
		nv_k8s_pod_free(&l->pods[i]);
	for (size_t i = 0; i < l->nevents; i++)
		nv_k8s_event_free(&l->events[i]);
	free(l->jobs);
	free(l->pods);
	free(l->events);
	memset(l, 0, sizeof(*l));
}

static int l_k8s_look_gc(lua_State *L)
{
	look_free(luaL_checkudata(L, 1, K8S_LOOK_MT));
	return 0;
}

/* ---- values in ------------------------------------------------------- */

/* The string at idx, which must hold no NUL; what names the argument. */
static const char *check_text(lua_State *L, int idx, const char *what)
{
	size_t len;
	const char *s;

	if (lua_type(L, idx) != LUA_TSTRING)
		luaL_error(L, "k8s: %s must be a string (got %s)", what,
			   luaL_typename(L, idx));
	s = lua_tolstring(L, idx, &len);
	if (strlen(s) != len)
		luaL_error(L, "k8s: %s holds a NUL byte", what);
	return s;
}

/* A field of the table at t as a string, or NULL when nil. The string
 * stays on the stack (anchored) when fetched: the caller pops. Returns
 * with one value pushed either way. */
static const char *opt_field(lua_State *L, int t, const char *k,
			     const char *what)
{
	if (lua_getfield(L, t, k) == LUA_TNIL)
		return NULL;
	return check_text(L, -1, what);
}

/* A name that goes into a request's path: a DNS-1123 subdomain (letters
 * a-z, digits, '-', '.'), at most 253 bytes. Anything else raises: it
 * could walk out of the path. */
static const char *check_name(lua_State *L, int idx, const char *what)
{
	const char *s = check_text(L, idx, what);
	size_t n = strlen(s);

	if (n == 0 || n > 253)
		luaL_error(L, "k8s: %s must be 1 to 253 characters", what);
	for (const char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		      *p == '-' || *p == '.'))
			luaL_error(L,
				   "k8s: %s '%s' is not a Kubernetes name "
				   "(lowercase letters, digits, '-' and '.')",
				   what, s);
	if (strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		luaL_error(L, "k8s: %s '%s' is not a Kubernetes name", what, s);
	return s;
}

/* Percent-encodes s (everything but unreserved characters) into b. */
static void add_encoded(luaL_Buffer *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' ||
		    *p == '.' || *p == '~') {
			luaL_addchar(b, (char)*p);
		} else {
			luaL_addchar(b, '%');
			luaL_addchar(b, hex[*p >> 4]);
			luaL_addchar(b, hex[*p & 15]);
		}
	}
}

/* ---- sessions: the credential ---------------------------------------- */

static l_k8s_session *to_session(lua_State *L)
{
	return luaL_checkudata(L, 1, K8S_SESSION_MT);
}

/* The policy of the session's current identity. */
static nv_http_policy session_policy(const l_k8s_session *s)
{
	nv_http_policy p;

	memset(&p, 0, sizeof(p));
	p.ca_pem = s->target.ca_pem;
	p.ca_pem_len = s->target.ca_pem_len;
	p.pinned_pubkey = s->pin[0] ? s->pin : NULL;
	p.total_timeout_ms = s->timeout_ms;
	if (s->auth == AUTH_CLIENT_CERT && s->target.client_key) {
		const nv_secret_field *f =
			nv_secret_get(s->target.client_key, "key");
		p.client_cert_pem = s->target.client_cert_pem;
		p.client_cert_len = s->target.client_cert_len;
		p.client_key_pem = f ? f->value : NULL;
		p.client_key_len = f ? f->len : 0;
	} else if (s->auth == AUTH_EXEC && s->cred.client_key) {
		const nv_secret_field *f =
			nv_secret_get(s->cred.client_key, "key");
		p.client_cert_pem = s->cred.client_cert_pem;
		p.client_cert_len = s->cred.client_cert_len;
		p.client_key_pem = f ? f->value : NULL;
		p.client_key_len = f ? f->len : 0;
	}
	return p;
}

/* (Re)opens the nv_k8s under the session's current identity (an exec
 * plugin's new client certificate needs a new one: the policy is the
 * session's). token: the bearer token to send, or NULL. */
static int session_connect(l_k8s_session *s, const nv_secret *token,
			   nv_err *err)
{
	nv_k8s_config cfg;

	if (s->k) {
		s->requests_before += nv_k8s_requests(s->k);
		s->connections_before += nv_k8s_connections(s->k);
		nv_k8s_close(s->k);
		s->k = NULL;
	}
	memset(&cfg, 0, sizeof(cfg));
	cfg.server = s->target.server;
	cfg.policy = session_policy(s);
	cfg.token = token;
	return nv_k8s_open(&s->k, &cfg, err);
}

/* Runs the exec plugin when there is no credential, when it expires
 * within K8S_EXEC_MARGIN_S, or when force is set (a 401), and puts its
 * credential in use. */
static int exec_refresh(lua_State *L, l_k8s_session *s, int force, nv_err *err)
{
	nv_k8s_credential fresh;
	double now = nv_now();
	int had_cert, rc;

	if (s->auth != AUTH_EXEC)
		return 0;
	if (!force && (s->cred.token || s->cred.client_key) &&
	    (s->cred.expires_at <= 0 ||
	     now < s->cred.expires_at - K8S_EXEC_MARGIN_S))
		return 0;
	if (nv_exec_forbidden(L))
		return nv_err_set(
			err, NV_ENOTRUN,
			"run it without plan mode, or give the "
			"profile a credential",
			"the kubeconfig's user %s gets its credential "
			"from a program, which may not run now",
			s->target.user);
	rc = nv_k8s_exec_run(&s->target, now, 0, &fresh, err);
	s->exec_runs++;
	if (rc)
		return rc;
	had_cert = s->cred.client_key != NULL;
	/* the old credential goes only once nothing points at it */
	if (fresh.client_key || had_cert) {
		nv_k8s_credential old = s->cred;

		s->cred = fresh;
		rc = session_connect(s, s->cred.token, err);
		nv_k8s_credential_free(&old);
		return rc;
	}
	rc = nv_k8s_set_token(s->k, fresh.token, err);
	if (rc) {
		nv_k8s_credential_free(&fresh);
		return rc;
	}
	nv_k8s_credential_free(&s->cred);
	s->cred = fresh;
	return 0;
}

/* The open session at 1, its credential handle (if one was given) looked
 * up now: raises when the session or the handle was closed. */
static l_k8s_session *check_session(lua_State *L)
{
	l_k8s_session *s = to_session(L);
	nv_err err;

	nv_lua_check_open(L, s->open, K8S_SESSION_MT);
	if (s->auth == AUTH_CREDENTIAL) {
		const nv_secret *cred;

		lua_getiuservalue(L, 1, 1);        // [.., uv]
		lua_getfield(L, -1, "credential"); // [.., uv, handle]
		cred = nv_creds_check(L, -1);
		lua_pop(L, 2); // [..] the user value keeps it alive
		if (nv_k8s_set_token(s->k, cred, &err))
			luaL_error(L, "%s", err.message);
	}
	return s;
}

/* One request through the session: the exec credential renewed first
 * when due, and once more, with the request sent again, after a 401. */
static int session_call(lua_State *L, l_k8s_session *s, const char *method,
			const char *path, const char *ctype, const char *body,
			size_t max, nv_http_response *resp, nv_err *err)
{
	int rc = exec_refresh(L, s, 0, err);

	memset(resp, 0, sizeof(*resp));
	if (rc)
		return rc;
	rc = nv_k8s_call(s->k, method, path, ctype, body, max, resp, err);
	if (rc || resp->status != 401 || s->auth != AUTH_EXEC)
		return rc;
	rc = exec_refresh(L, s, 1, err);
	if (rc)
		return rc;
	nv_http_response_free(resp);
	return nv_k8s_call(s->k, method, path, ctype, body, max, resp, err);
}

/* ---- errors of the API ----------------------------------------------- */

/* Pushes nil and the error of an answer that is not 2xx: {code, status,
 * reason, message, causes, hint}, from its Status body when it has one.
 * verb and resource name the request in a 403's hint. */
static int push_api_error(lua_State *L, const l_k8s_session *s, long status,
			  const nv_buf *body, const char *verb,
			  const char *resource)
{
	nv_k8s_status st;
	nv_err perr;
	const char *code = "backend";
	char message[NV_ERR_MESSAGE_MAX + 128], hint[NV_ERR_HINT_MAX];
	int parsed;

	memset(&st, 0, sizeof(st));
	parsed = body->len > 0 &&
		 nv_k8s_parse_status(body->data, body->len, &st, &perr) == 0;
	hint[0] = '\0';
	if (parsed && st.message[0])
		snprintf(message, sizeof(message), "%s", st.message);
	else
		snprintf(message, sizeof(message),
			 "the Kubernetes API server answered HTTP %ld to %s "
			 "%s",
			 status, verb, resource);
	switch (status) {
	case 401:
		code = "refused";
		snprintf(message, sizeof(message),
			 "the cluster refused the credential of %s (HTTP 401%s"
			 "%.600s)",
			 s->auth == AUTH_CREDENTIAL ? "the profile"
						    : s->target.user,
			 parsed && st.message[0] ? ": " : "",
			 parsed ? st.message : "");
		snprintf(hint, sizeof(hint),
			 "has the token expired, or been revoked? %s; check "
			 "with `kubectl auth whoami`",
			 s->auth == AUTH_EXEC
				 ? "the exec plugin's new credential was "
				   "refused too"
				 : "renew the credential");
		break;
	case 403:
		code = "refused";
		snprintf(hint, sizeof(hint),
			 "ask the cluster's admin for the right to %s %s; "
			 "check with `kubectl auth can-i %s %s -n NAMESPACE`",
			 verb, resource, verb, resource);
		break;
	case 404:
		code = "not_found";
		snprintf(hint, sizeof(hint),
			 "check the namespace and the name (%s)", resource);
		break;
	case 409: code = "refused"; break;
	case 410:
		code = "expired";
		snprintf(hint, sizeof(hint),
			 "the resource version is too old: list again");
		break;
	case 422:
		code = "invalid";
		snprintf(hint, sizeof(hint),
			 "the API server refused the object for certain: see "
			 "causes");
		break;
	default: break;
	}
	lua_pushnil(L);
	lua_createtable(L, 0, 7); // [.., nil, err]
	SET_STR("code", code);
	SET_INT("status", status);
	if (parsed && st.reason[0])
		SET_STR("reason", st.reason);
	SET_STR("message", message);
	if (hint[0])
		SET_STR("hint", hint);
	lua_createtable(L, (int)st.ncauses, 0); // [.., nil, err, causes]
	for (size_t i = 0; parsed && i < st.ncauses; i++) {
		lua_createtable(L, 0, 3);
		SET_STR("field", st.causes[i].field);
		SET_STR("reason", st.causes[i].reason);
		SET_STR("message", st.causes[i].message);
		lua_rawseti(L, -2, (lua_Integer)i + 1);
	}
	lua_setfield(L, -2, "causes");
	return 2;
}

/* ---- sessions: open, close ------------------------------------------- */

/* The list of paths at idx (a string is a list of one) into paths[],
 * anchored on the stack by the caller's table. */
static size_t check_paths(lua_State *L, int idx, const char **paths)
{
	size_t n = 0;

	if (lua_type(L, idx) == LUA_TSTRING) {
		paths[0] = check_text(L, idx, "kubeconfig");
		return 1;
	}
	luaL_checktype(L, idx, LUA_TTABLE);
	for (lua_Integer i = 1;; i++) {
		if (lua_rawgeti(L, idx, i) == LUA_TNIL) {
			lua_pop(L, 1);
			break;
		}
		if (n == NV_K8S_KUBECONFIG_FILES_MAX)
			luaL_error(L, "k8s: at most %d kubeconfig files",
				   NV_K8S_KUBECONFIG_FILES_MAX);
		/* the table keeps the string alive */
		paths[n++] = check_text(L, -1, "a kubeconfig path");
		lua_pop(L, 1);
	}
	if (n == 0)
		luaL_error(L, "k8s: the kubeconfig list is empty");
	return n;
}

static void session_free(l_k8s_session *s)
{
	if (s->open || s->k || s->file_token) {
		nv_k8s_close(s->k);
		s->k = NULL;
		nv_k8s_target_free(&s->target);
		nv_secret_free(s->file_token);
		s->file_token = NULL;
		nv_k8s_credential_free(&s->cred);
		s->open = 0;
	}
}

static int l_k8s_close(lua_State *L)
{
	session_free(to_session(L));
	return 0;
}

/* open{kubeconfig=, context=, in_cluster=, in_cluster_root=,
 * credential=, pin=, timeout=} -> session, info | nil, err */
static int l_k8s_open(lua_State *L)
{
	const char *paths[NV_K8S_KUBECONFIG_FILES_MAX];
	const char *context, *pin, *root;
	const nv_secret *token = NULL;
	l_k8s_session *s;
	size_t npaths = 0;
	int in_cluster, rc;
	lua_Number timeout;
	nv_err err;

	luaL_checktype(L, 1, LUA_TTABLE);
	lua_settop(L, 1);
	/* created closed: if anything below raises, __gc frees what is set */
	s = lua_newuserdatauv(L, sizeof(*s), 1); // [opts, session]
	memset(s, 0, sizeof(*s));
	luaL_setmetatable(L, K8S_SESSION_MT);
	lua_createtable(L, 0, 1); // [opts, session, uv]
	lua_getfield(L, 1, "in_cluster");
	in_cluster = lua_toboolean(L, -1);
	lua_getfield(L, 1, "kubeconfig"); // [.., in_cluster, kubeconfig]
	if (!lua_isnil(L, -1))
		npaths = check_paths(L, lua_gettop(L), paths);
	context = opt_field(L, 1, "context", "context");
	root = opt_field(L, 1, "in_cluster_root", "in_cluster_root");
	pin = opt_field(L, 1, "pin", "pin");
	lua_getfield(L, 1, "timeout");
	timeout = nv_lua_optrangef(L, -1, 1, 24 * 3600, 300, "k8s: timeout");
	if (in_cluster == (npaths > 0))
		return luaL_error(L, "k8s.open: give kubeconfig = {paths} or "
				     "in_cluster = true (one of them)");
	if (pin) {
		if (strncmp(pin, "sha256//", 8) != 0 ||
		    strlen(pin) >= sizeof(s->pin))
			return luaL_error(L, "k8s.open: pin must be "
					     "\"sha256//BASE64\"");
		snprintf(s->pin, sizeof(s->pin), "%s", pin);
	}
	s->timeout_ms = (long)(timeout * 1000);
	if (lua_getfield(L, 1, "credential") != LUA_TNIL) { // [.., handle]
		token = nv_creds_check(L, -1);
		lua_pushvalue(L, -1);
		lua_setfield(L, 3, "credential");
	}
	lua_pushvalue(L, 3);
	lua_setiuservalue(L, 2, 1);

	rc = in_cluster ? nv_k8s_in_cluster_load(root, &s->target, &err)
			: nv_k8s_kubeconfig_load(paths, npaths, context,
						 &s->target, &err);
	if (rc)
		return nv_lua_push_error(L, &err);
	s->open = 1; /* from here, close frees what the session holds */
	if (token) {
		s->auth = AUTH_CREDENTIAL;
	} else {
		switch (s->target.auth) {
		case NV_K8S_AUTH_TOKEN:
			s->auth = AUTH_TOKEN;
			token = s->target.token;
			break;
		case NV_K8S_AUTH_TOKEN_FILE:
			s->auth = AUTH_TOKEN_FILE;
			if (s->target.token) { /* in-cluster: read just now */
				token = s->target.token;
				break;
			}
			if (nv_k8s_token_file_read(s->target.token_file,
						   s->target.user,
						   &s->file_token, &err))
				goto failed;
			token = s->file_token;
			break;
		case NV_K8S_AUTH_CLIENT_CERT: s->auth = AUTH_CLIENT_CERT; break;
		case NV_K8S_AUTH_EXEC: s->auth = AUTH_EXEC; break;
		default: s->auth = AUTH_NONE; break;
		}
	}
	if (session_connect(s, token, &err) || exec_refresh(L, s, 0, &err))
		goto failed;
	lua_settop(L, 2); // [opts, session]
	lua_createtable(L, 0, 8);
	SET_STR("server", s->target.server);
	SET_STR("context", s->target.context);
	SET_STR("cluster", s->target.cluster);
	SET_STR("user", s->target.user);
	SET_STR("namespace", s->target.namespace_);
	SET_STR("auth", auth_names[s->auth]);
	if (s->auth == AUTH_EXEC && s->cred.expires_at > 0) {
		lua_pushnumber(L, s->cred.expires_at);
		lua_setfield(L, -2, "expires");
	}
	return 2;
failed:
	session_free(s);
	return nv_lua_push_error(L, &err);
}

static int l_k8s_tostring(lua_State *L)
{
	l_k8s_session *s = to_session(L);

	return nv_lua_push_handle_name(L, "k8s session",
				       s->open ? s->target.server : NULL);
}

/* session:stats() -> {requests, connections, exec_runs} */
static int l_k8s_stats(lua_State *L)
{
	l_k8s_session *s = check_session(L);

	lua_createtable(L, 0, 3);
	SET_INT("requests", s->requests_before + nv_k8s_requests(s->k));
	SET_INT("connections",
		s->connections_before + nv_k8s_connections(s->k));
	SET_INT("exec_runs", s->exec_runs);
	return 1;
}

/* ---- sessions: requests ---------------------------------------------- */

/* session:request(method, path [, body [, content_type]]) -> status,
 * body | nil, err. body: a string, or a box of secret_manifest. Any
 * status comes back as it is; transport failures are errors. */
static int l_k8s_request(lua_State *L)
{
	l_k8s_session *s = check_session(L);
	const char *method = check_text(L, 2, "method");
	const char *path = check_text(L, 3, "path");
	const char *body = NULL, *ctype;
	nv_http_response resp;
	nv_err err;
	int rc;

	if (strcmp(method, "GET") && strcmp(method, "POST") &&
	    strcmp(method, "PUT") && strcmp(method, "PATCH") &&
	    strcmp(method, "DELETE"))
		return luaL_error(L,
				  "k8s: method %s is not GET, POST, PUT, "
				  "PATCH or DELETE",
				  method);
	if (lua_type(L, 4) == LUA_TUSERDATA) {
		l_k8s_body *b = luaL_checkudata(L, 4, K8S_BODY_MT);

		if (!b->json)
			return luaL_error(L, "k8s: that body was freed");
		body = b->json;
	} else if (!lua_isnoneornil(L, 4)) {
		body = check_text(L, 4, "body");
	}
	ctype = lua_isnoneornil(L, 5) ? (body ? "application/json" : NULL)
				      : check_text(L, 5, "content type");
	if (nv_plan_mode(L) && strcmp(method, "GET") != 0)
		return nv_lua_planned_nil(L, "k8s", method, path);
	rc = session_call(L, s, method, path, ctype, body, 0, &resp, &err);
	if (rc) {
		nv_http_response_free(&resp);
		return nv_lua_push_error(L, &err);
	}
	lua_pushinteger(L, resp.status);
	lua_pushlstring(L, resp.body.data ? resp.body.data : "", resp.body.len);
	nv_http_response_free(&resp);
	return 2;
}

/* session:api_error(status, body, verb, resource) -> err: the error of an
 * answer that request returned (not 2xx), as the session's own methods
 * give it: {code, status, reason, message, causes, hint}. */
static int l_k8s_api_error(lua_State *L)
{
	l_k8s_session *s = check_session(L);
	lua_Integer status = nv_lua_checkrange(L, 2, 100, 599, "k8s: status");
	size_t len;
	const char *text = luaL_optlstring(L, 3, "", &len);
	const char *verb = check_text(L, 4, "verb");
	const char *resource = check_text(L, 5, "resource");
	nv_buf body;

	memset(&body, 0, sizeof(body));
	body.data = (char *)text;
	body.len = len;
	push_api_error(L, s, (long)status, &body, verb, resource);
	return 1; /* the error table alone */
}

/* GET path into resp, an error pushed (nil, err: returns 2) when it
 * fails or is not 2xx, else 0. */
static int get_ok(lua_State *L, l_k8s_session *s, const char *path, size_t max,
		  const char *resource, nv_http_response *resp)
{
	nv_err err;

	if (session_call(L, s, "GET", path, NULL, NULL, max, resp, &err)) {
		nv_http_response_free(resp);
		return nv_lua_push_error(L, &err);
	}
	if (resp->status / 100 != 2) {
		push_api_error(L, s, resp->status, &resp->body, "list",
			       resource);
		nv_http_response_free(resp);
		return 2;
	}
	return 0;
}

/* Appends n items of size sz to *arr (count *have), moving them. */
static int append_items(void **arr, size_t *have, void *items, size_t n,
			size_t sz)
{
	void *p;

	if (n == 0)
		return 0;
	if (*have + n > NV_K8S_ITEMS_MAX * 10)
		return -1;
	p = realloc(*arr, (*have + n) * sz);
	if (!p)
		return -1;
	memcpy((char *)p + *have * sz, items, n * sz);
	*arr = p;
	*have += n;
	return 0;
}

enum { LIST_JOBS, LIST_PODS, LIST_EVENTS };

/* One LIST of a kind, every page (following continue; a 410 on a stale
 * continue starts it again, once), into the look box. rv: the list's
 * resourceVersion. Returns 0, or 2 with nil, err pushed. */
static int list_all(lua_State *L, l_k8s_session *s, l_k8s_look_box *box,
		    int kind, const char *ns, const char *selector,
		    char rv[NV_K8S_RV_MAX])
{
	static const char *const what[] = {"jobs", "pods", "events"};
	char cont[NV_K8S_CONTINUE_MAX] = "";
	int restarted = 0;
	nv_err err;

	for (;;) {
		nv_http_response resp;
		nv_k8s_list_meta meta;
		luaL_Buffer b;
		const char *path;
		int rc;

		memset(&meta, 0, sizeof(meta));
		luaL_buffinit(L, &b);
		luaL_addstring(&b, kind == LIST_JOBS ? "/apis/batch/v1"
						     : "/api/v1");
		luaL_addstring(&b, "/namespaces/");
		luaL_addstring(&b, ns);
		luaL_addchar(&b, '/');
		luaL_addstring(&b, what[kind]);
		lua_pushfstring(L, "?limit=%d", K8S_PAGE_LIMIT);
		luaL_addvalue(&b);
		if (kind == LIST_EVENTS) {
			luaL_addstring(&b, "&fieldSelector=");
			add_encoded(&b, "involvedObject.kind=Job,"
					"reason=FailedCreate");
		} else if (selector) {
			luaL_addstring(&b, "&labelSelector=");
			add_encoded(&b, selector);
		}
		if (cont[0]) {
			luaL_addstring(&b, "&continue=");
			add_encoded(&b, cont);
		}
		luaL_pushresult(&b); // [.., path]
		path = lua_tostring(L, -1);
		if (session_call(L, s, "GET", path, NULL, NULL, 0, &resp,
				 &err)) {
			nv_http_response_free(&resp);
			return nv_lua_push_error(L, &err);
		}
		lua_pop(L, 1);
		if (resp.status == 410 && cont[0] && !restarted) {
			/* a stale continue token: the whole list again */
			nv_http_response_free(&resp);
			restarted = 1;
			cont[0] = '\0';
			if (kind == LIST_JOBS) {
				for (size_t i = 0; i < box->njobs; i++)
					nv_k8s_job_free(&box->jobs[i]);
				box->njobs = 0;
			} else if (kind == LIST_PODS) {
				for (size_t i = 0; i < box->npods; i++)
					nv_k8s_pod_free(&box->pods[i]);
				box->npods = 0;
			} else {
				for (size_t i = 0; i < box->nevents; i++)
					nv_k8s_event_free(&box->events[i]);
				box->nevents = 0;
			}
			continue;
		}
		if (resp.status / 100 != 2) {
			push_api_error(L, s, resp.status, &resp.body, "list",
				       what[kind]);
			nv_http_response_free(&resp);
			return 2;
		}
		if (kind == LIST_JOBS) {
			nv_k8s_job_list l;

			rc = nv_k8s_parse_job_list(resp.body.data,
						   resp.body.len, &l, &err);
			if (!rc &&
			    append_items((void **)&box->jobs, &box->njobs,
					 l.items, l.nitems, sizeof(*l.items))) {
				nv_k8s_job_list_free(&l);
				rc = nv_err_set(&err, NV_ENOMEM, NULL,
						"too many Jobs listed");
			} else if (!rc) {
				meta = l.meta;
				free(l.items); /* the items moved */
			}
		} else if (kind == LIST_PODS) {
			nv_k8s_pod_list l;

			rc = nv_k8s_parse_pod_list(resp.body.data,
						   resp.body.len, &l, &err);
			if (!rc &&
			    append_items((void **)&box->pods, &box->npods,
					 l.items, l.nitems, sizeof(*l.items))) {
				nv_k8s_pod_list_free(&l);
				rc = nv_err_set(&err, NV_ENOMEM, NULL,
						"too many pods listed");
			} else if (!rc) {
				meta = l.meta;
				free(l.items);
			}
		} else {
			nv_k8s_event_list l;

			rc = nv_k8s_parse_event_list(resp.body.data,
						     resp.body.len,
						     "FailedCreate", &l, &err);
			if (!rc &&
			    append_items((void **)&box->events, &box->nevents,
					 l.items, l.nitems, sizeof(*l.items))) {
				nv_k8s_event_list_free(&l);
				rc = nv_err_set(&err, NV_ENOMEM, NULL,
						"too many events listed");
			} else if (!rc) {
				meta = l.meta;
				free(l.items);
			}
		}
		nv_http_response_free(&resp);
		if (rc)
			return nv_lua_push_error(L, &err);
		if (rv)
			snprintf(rv, NV_K8S_RV_MAX, "%s",
				 meta.resource_version);
		if (!meta.continue_token[0])
			return 0;
		snprintf(cont, sizeof(cont), "%s", meta.continue_token);
	}
}

static void push_view(lua_State *L, const nv_k8s_view *v)
{
	lua_createtable(L, 0, 10);
	SET_STR("phase", v->phase ? v->phase : "accepted");
	SET_BOOL("done", v->done);
	SET_BOOL("blocked", v->blocked);
	SET_BOOL("preempted", v->preempted);
	if (v->exit_code >= 0)
		SET_INT("exit_code", v->exit_code);
	if (v->reason[0])
		SET_STR("reason", v->reason);
	if (v->hint[0])
		SET_STR("hint", v->hint);
	if (v->pod[0])
		SET_STR("pod", v->pod);
	SET_BOOL("pod_live", v->pod_live);
	if (v->node[0])
		SET_STR("node", v->node);
}

static void push_look_job(lua_State *L, const l_k8s_look_box *box,
			  const nv_k8s_job *j)
{
	long tasks = j->completions > 0 ? j->completions : 1;

	if (tasks > NV_K8S_TASKS_MAX)
		tasks = NV_K8S_TASKS_MAX;
	lua_createtable(L, 0, 8); // [.., job]
	SET_STR("uid", j->uid);
	SET_STR("resource_version", j->resource_version);
	lua_createtable(L, 0, 1);
	if (j->navette_job[0])
		SET_STR(NV_K8S_LABEL_PREFIX "/job", j->navette_job);
	lua_setfield(L, -2, "labels");
	lua_createtable(L, 0, 3);
	if (j->tasks)
		SET_STR(NV_K8S_LABEL_PREFIX "/tasks", j->tasks);
	if (j->after)
		SET_STR(NV_K8S_LABEL_PREFIX "/after", j->after);
	if (j->spec_sha256)
		SET_STR(NV_K8S_LABEL_PREFIX "/spec-sha256", j->spec_sha256);
	lua_setfield(L, -2, "annotations");
	SET_BOOL("suspended", j->suspend);
	SET_BOOL("deleting", j->deleting);
	SET_INT("tasks", tasks);
	lua_createtable(L, 0, (int)tasks); // [.., job, rows]
	for (long i = 0; i < tasks; i++) {
		nv_k8s_view v;

		nv_k8s_view_of(j, box->pods, box->npods, box->events,
			       box->nevents, j->indexed ? i : -1, &v);
		push_view(L, &v);
		lua_rawseti(L, -2, i);
	}
	lua_setfield(L, -2, "rows");
}

/* session:look{namespace=, selector=, events=} -> {resource_version=,
 * pods_resource_version=, jobs = {[name] = job}} | nil, err */
static int l_k8s_look(lua_State *L)
{
	l_k8s_session *s = check_session(L);
	char rv[NV_K8S_RV_MAX] = "", pods_rv[NV_K8S_RV_MAX] = "";
	const char *ns, *selector;
	l_k8s_look_box *box;
	int events;

	luaL_checktype(L, 2, LUA_TTABLE);
	lua_settop(L, 2);
	lua_getfield(L, 2, "namespace"); // [.., 3]
	ns = check_name(L, 3, "namespace");
	selector = opt_field(L, 2, "selector", "selector"); // [.., 4]
	lua_getfield(L, 2, "events");
	events = lua_toboolean(L, -1);
	box = lua_newuserdatauv(L, sizeof(*box), 0); // [.., box]
	memset(box, 0, sizeof(*box));
	luaL_setmetatable(L, K8S_LOOK_MT);
	if (list_all(L, s, box, LIST_JOBS, ns, selector, rv) ||
	    list_all(L, s, box, LIST_PODS, ns, selector, pods_rv) ||
	    (events && list_all(L, s, box, LIST_EVENTS, ns, NULL, NULL)))
		return 2;
	lua_createtable(L, 0, 3); // [.., box, look]
	SET_STR("resource_version", rv);
	SET_STR("pods_resource_version", pods_rv);
	lua_createtable(L, 0, (int)box->njobs);
	for (size_t i = 0; i < box->njobs; i++) {
		push_look_job(L, box, &box->jobs[i]);
		lua_setfield(L, -2, box->jobs[i].name);
	}
	lua_setfield(L, -2, "jobs");
	return 1; /* the box is collected with what it holds */
}

/* ---- watch ------------------------------------------------------------ */

typedef struct watch_ctx {
	lua_State *L;
	int fn; /* stack index of on_event */
	nv_k8s_watch w;
	nv_err err;
	int failed;           /* a feed error (err) */
	int raised;           /* on_event raised: its error is on the stack */
	int stopped;          /* on_event returned false */
	int expired;          /* an ERROR event with code 410 */
	nv_k8s_status status; /* that ERROR's Status */
	const nv_k8s_watch_event *ev;
} watch_ctx;

static const char *const watch_types[] = {"",        "ADDED",    "MODIFIED",
					  "DELETED", "BOOKMARK", "ERROR"};

/* on_event(type, name, rv), run under lua_pcall: allocations raise there
 * and never through the HTTP client. */
static int watch_call(lua_State *L)
{
	watch_ctx *c = lua_touserdata(L, 1);
	const nv_k8s_watch_event *ev = c->ev;
	const char *name =
		ev->job ? ev->job->name : (ev->pod ? ev->pod->name : "");

	lua_pushvalue(L, 2); /* on_event */
	lua_pushstring(L, watch_types[ev->type]);
	lua_pushstring(L, name);
	lua_pushstring(L, ev->resource_version ? ev->resource_version : "");
	lua_call(L, 3, 1);
	return 1;
}

static int watch_event(void *payload, const nv_k8s_watch_event *ev, nv_err *err)
{
	watch_ctx *c = payload;
	lua_State *L = c->L;
	int rc;

	if (ev->type == NV_K8S_BOOKMARK)
		return 0;
	if (ev->type == NV_K8S_ERROR) {
		if (ev->status)
			c->status = *ev->status;
		if (ev->status && ev->status->code == 410) {
			c->expired = 1;
			return 1;
		}
		return nv_err_set(err, NV_EBACKEND, NULL,
				  "the watch ended in an error: %s",
				  ev->status ? ev->status->message : "");
	}
	if (!lua_checkstack(L, 8))
		return nv_err_set(err, NV_ENOMEM, NULL, "Lua stack full");
	c->ev = ev;
	lua_pushcfunction(L, watch_call);
	lua_pushlightuserdata(L, c);
	lua_pushvalue(L, c->fn);
	rc = lua_pcall(L, 2, 1, 0);
	c->ev = NULL;
	if (rc != LUA_OK) {
		c->raised = 1; /* the error stays on the stack */
		return 1;
	}
	if (lua_isboolean(L, -1) && !lua_toboolean(L, -1))
		c->stopped = 1;
	lua_pop(L, 1);
	return c->stopped ? 1 : 0;
}

static int watch_sink(void *payload, const char *data, size_t len)
{
	watch_ctx *c = payload;
	int rc = nv_k8s_watch_feed(&c->w, data, len, watch_event, c, &c->err);

	if (rc == 0)
		return 0;
	if (rc < 0)
		c->failed = 1;
	return -1;
}

static int watch_push_expired(lua_State *L, const watch_ctx *c)
{
	lua_pushnil(L);
	lua_createtable(L, 0, 5);
	SET_STR("code", "expired");
	SET_INT("status", 410);
	SET_STR("reason", c->status.reason[0] ? c->status.reason : "Expired");
	SET_STR("message", c->status.message[0]
				   ? c->status.message
				   : "the watch's resource version is too old");
	SET_STR("hint", "list again, then watch from the list's "
			"resource_version");
	return 2;
}

/* session:watch{namespace=, kind="jobs"|"pods", selector=,
 * resource_version=, seconds=, on_event=function(type, name, rv)} ->
 * last resource_version | nil, err (code "expired", status 410: list
 * again). on_event returning false ends the watch early. */
static int l_k8s_watch(lua_State *L)
{
	l_k8s_session *s = check_session(L);
	const char *ns, *kind, *selector, *rv, *path;
	watch_ctx *c;
	nv_http_response resp;
	lua_Integer seconds;
	luaL_Buffer b;
	nv_err err;
	int rc, k;

	luaL_checktype(L, 2, LUA_TTABLE);
	lua_settop(L, 2);
	lua_getfield(L, 2, "namespace"); // 3
	ns = check_name(L, 3, "namespace");
	lua_getfield(L, 2, "kind"); // 4
	kind = check_text(L, 4, "kind");
	if (strcmp(kind, "jobs") == 0)
		k = NV_K8S_JOB;
	else if (strcmp(kind, "pods") == 0)
		k = NV_K8S_POD;
	else
		return luaL_error(L, "k8s: kind must be \"jobs\" or \"pods\"");
	selector = opt_field(L, 2, "selector", "selector");           // 5
	rv = opt_field(L, 2, "resource_version", "resource_version"); // 6
	lua_getfield(L, 2, "seconds");                                // 7
	seconds = nv_lua_checkrange(L, 7, 1, K8S_WATCH_SECONDS_MAX,
				    "k8s: watch seconds");
	lua_getfield(L, 2, "on_event"); // 8
	luaL_argcheck(L, lua_isfunction(L, 8), 2,
		      "on_event must be a function");
	if (!rv || !rv[0])
		return luaL_error(L, "k8s: a watch starts from a "
				     "resource_version (a look's)");

	luaL_buffinit(L, &b);
	luaL_addstring(&b, k == NV_K8S_JOB ? "/apis/batch/v1" : "/api/v1");
	luaL_addstring(&b, "/namespaces/");
	luaL_addstring(&b, ns);
	luaL_addstring(&b, k == NV_K8S_JOB ? "/jobs" : "/pods");
	luaL_addstring(&b, "?watch=1&allowWatchBookmarks=true");
	if (selector) {
		luaL_addstring(&b, "&labelSelector=");
		add_encoded(&b, selector);
	}
	luaL_addstring(&b, "&resourceVersion=");
	add_encoded(&b, rv);
	lua_pushfstring(L, "&timeoutSeconds=%I", seconds);
	luaL_addvalue(&b);
	luaL_pushresult(&b); // 9
	path = lua_tostring(L, 9);

	/* the context lives in a userdata: a raise frees the watch's line
	 * buffer through no __gc, so free it on every way out below */
	c = lua_newuserdatauv(L, sizeof(*c), 0); // 10
	memset(c, 0, sizeof(*c));
	c->L = L;
	c->fn = 8;
	nv_k8s_watch_init(&c->w, k);
	rc = exec_refresh(L, s, 0, &err);
	if (!rc)
		rc = nv_k8s_stream(s->k, path, (long)seconds, watch_sink, c,
				   &resp, &err);
	else
		memset(&resp, 0, sizeof(resp));
	if (!rc && resp.status == 401 && s->auth == AUTH_EXEC) {
		nv_http_response_free(&resp);
		rc = exec_refresh(L, s, 1, &err);
		if (!rc)
			rc = nv_k8s_stream(s->k, path, (long)seconds,
					   watch_sink, c, &resp, &err);
	}
	if (c->raised) {
		nv_http_response_free(&resp);
		nv_k8s_watch_free(&c->w);
		return lua_error(L); /* on_event's error, on the top */
	}
	if (c->expired) {
		nv_http_response_free(&resp);
		nv_k8s_watch_free(&c->w);
		return watch_push_expired(L, c);
	}
	if (c->failed) {
		nv_http_response_free(&resp);
		nv_k8s_watch_free(&c->w);
		return nv_lua_push_error(L, &c->err);
	}
	if (rc && !c->stopped) {
		nv_http_response_free(&resp);
		nv_k8s_watch_free(&c->w);
		return nv_lua_push_error(L, &err);
	}
	if (!c->stopped && resp.status / 100 != 2) {
		int n;

		nv_k8s_watch_free(&c->w);
		n = push_api_error(L, s, resp.status, &resp.body, "watch",
				   kind);
		nv_http_response_free(&resp);
		return n;
	}
	nv_http_response_free(&resp);
	if (!c->stopped) {
		rc = nv_k8s_watch_finish(&c->w, watch_event, c, &c->err);
		if (c->raised) {
			nv_k8s_watch_free(&c->w);
			return lua_error(L);
		}
		if (c->expired) {
			nv_k8s_watch_free(&c->w);
			return watch_push_expired(L, c);
		}
		if (rc < 0) {
			nv_k8s_watch_free(&c->w);
			return nv_lua_push_error(L, &c->err);
		}
	}
	lua_pushstring(L,
		       c->w.resource_version[0] ? c->w.resource_version : rv);
	nv_k8s_watch_free(&c->w);
	return 1;
}

/* ---- log, access review ----------------------------------------------- */

/* session:log{namespace=, pod=, container="job", limit_bytes=} -> text |
 * nil, err */
static int l_k8s_log(lua_State *L)
{
	l_k8s_session *s = check_session(L);
	const char *ns, *pod, *container;
	nv_http_response resp;
	lua_Integer limit;
	int n;

	luaL_checktype(L, 2, LUA_TTABLE);
	lua_settop(L, 2);
	lua_getfield(L, 2, "namespace"); // 3
	ns = check_name(L, 3, "namespace");
	lua_getfield(L, 2, "pod"); // 4
	pod = check_name(L, 4, "pod");
	lua_getfield(L, 2, "container"); // 5
	container = lua_isnil(L, 5) ? "job" : check_name(L, 5, "container");
	lua_getfield(L, 2, "limit_bytes"); // 6
	limit = nv_lua_optrange(L, 6, 1, K8S_LOG_MAX, 1024 * 1024,
				"k8s: limit_bytes");
	lua_pushfstring(L,
			"/api/v1/namespaces/%s/pods/%s/log?container=%s"
			"&limitBytes=%I",
			ns, pod, container, limit);
	n = get_ok(L, s, lua_tostring(L, -1), (size_t)limit + 4096, "pods/log",
		   &resp);
	if (n)
		return n;
	lua_pushlstring(L, resp.body.data ? resp.body.data : "", resp.body.len);
	nv_http_response_free(&resp);
	return 1;
}

/* session:access_review{namespace=, verb=, group=, resource=} ->
 * allowed, reason | nil, err (a SelfSubjectAccessReview) */
static int l_k8s_access_review(lua_State *L)
{
	l_k8s_session *s = check_session(L);
	const char *ns, *verb, *group, *resource;
	cJSON *req, *attrs, *ans;
	nv_http_response resp;
	char *body;
	nv_err err;
	int rc, allowed;

	luaL_checktype(L, 2, LUA_TTABLE);
	lua_settop(L, 2);
	lua_getfield(L, 2, "namespace");
	ns = check_name(L, 3, "namespace");
	lua_getfield(L, 2, "verb");
	verb = check_text(L, 4, "verb");
	group = opt_field(L, 2, "group", "group");
	lua_getfield(L, 2, "resource");
	resource = check_text(L, 6, "resource");

	req = cJSON_CreateObject();
	attrs = cJSON_CreateObject();
	if (!req || !attrs ||
	    !cJSON_AddStringToObject(req, "apiVersion",
				     "authorization.k8s.io/v1") ||
	    !cJSON_AddStringToObject(req, "kind", "SelfSubjectAccessReview") ||
	    !cJSON_AddStringToObject(attrs, "namespace", ns) ||
	    !cJSON_AddStringToObject(attrs, "verb", verb) ||
	    !cJSON_AddStringToObject(attrs, "group", group ? group : "") ||
	    !cJSON_AddStringToObject(attrs, "resource", resource)) {
		cJSON_Delete(req);
		cJSON_Delete(attrs);
		return luaL_error(L, "k8s: out of memory");
	}
	{
		cJSON *spec = cJSON_AddObjectToObject(req, "spec");

		if (!spec) {
			cJSON_Delete(req);
			cJSON_Delete(attrs);
			return luaL_error(L, "k8s: out of memory");
		}
		cJSON_AddItemToObject(spec, "resourceAttributes", attrs);
	}
	body = cJSON_PrintUnformatted(req);
	cJSON_Delete(req);
	if (!body)
		return luaL_error(L, "k8s: out of memory");
	rc = session_call(L, s, "POST",
			  "/apis/authorization.k8s.io/v1/"
			  "selfsubjectaccessreviews",
			  "application/json", body, 0, &resp, &err);
	free(body);
	if (rc) {
		nv_http_response_free(&resp);
		return nv_lua_push_error(L, &err);
	}
	if (resp.status / 100 != 2) {
		int n = push_api_error(L, s, resp.status, &resp.body, "create",
				       "selfsubjectaccessreviews");
		nv_http_response_free(&resp);
		return n;
	}
	ans = cJSON_ParseWithLength(resp.body.data ? resp.body.data : "",
				    resp.body.len);
	nv_http_response_free(&resp);
	{
		cJSON *st = cJSON_GetObjectItemCaseSensitive(ans, "status");
		cJSON *a = cJSON_GetObjectItemCaseSensitive(st, "allowed");
		cJSON *r = cJSON_GetObjectItemCaseSensitive(st, "reason");

		if (!cJSON_IsBool(a)) {
			cJSON_Delete(ans);
			nv_err_set(&err, NV_EBACKEND, NULL,
				   "the API server's SelfSubjectAccessReview "
				   "answer has no status.allowed");
			return nv_lua_push_error(L, &err);
		}
		allowed = cJSON_IsTrue(a);
		lua_pushboolean(L, allowed);
		if (cJSON_IsString(r))
			lua_pushstring(L, r->valuestring);
		else
			lua_pushliteral(L, "");
	}
	cJSON_Delete(ans);
	return 2;
}

/* ---- manifests --------------------------------------------------------- */

/* A description's value as nv_k8s_desc_set takes it: strings as they
 * are, integers in decimal, booleans true/false, a list of strings joined
 * with commas. Pushes it. */
static const char *value_text(lua_State *L, int idx, const char *key)
{
	idx = lua_absindex(L, idx);
	switch (lua_type(L, idx)) {
	case LUA_TSTRING: lua_pushvalue(L, idx); break;
	case LUA_TNUMBER:
		if (!lua_isinteger(L, idx))
			luaL_error(L,
				   "k8s.manifest: %s must be a whole "
				   "number or a string",
				   key);
		lua_pushfstring(L, "%I", lua_tointeger(L, idx));
		break;
	case LUA_TBOOLEAN:
		lua_pushstring(L, lua_toboolean(L, idx) ? "true" : "false");
		break;
	case LUA_TTABLE: {
		luaL_Buffer b;
		lua_Integer n = (lua_Integer)lua_rawlen(L, idx);

		luaL_buffinit(L, &b);
		for (lua_Integer i = 1; i <= n; i++) {
			if (lua_rawgeti(L, idx, i) != LUA_TNUMBER &&
			    lua_type(L, -1) != LUA_TSTRING)
				luaL_error(L,
					   "k8s.manifest: the list %s "
					   "holds only strings and "
					   "numbers",
					   key);
			if (i > 1)
				luaL_addchar(&b, ',');
			luaL_addvalue(&b);
		}
		luaL_pushresult(&b);
		break;
	}
	default:
		luaL_error(L, "k8s.manifest: %s has a value of type %s", key,
			   luaL_typename(L, idx));
	}
	return check_text(L, -1, key);
}

/* A credential's value as a job reads it (host/jobs/secrets.c writes the
 * same for Slurm): a token, user:password, a key. */
static int secret_value(const nv_secret *h, nv_buf *out, nv_err *err)
{
	const nv_secret_field *a = NULL, *b = NULL;

	switch (h->kind) {
	case NV_SECRET_BEARER: a = nv_secret_get(h, "token"); break;
	case NV_SECRET_BASIC:
		a = nv_secret_get(h, "user");
		b = nv_secret_get(h, "password");
		break;
	case NV_SECRET_HS256:
	case NV_SECRET_PEM:
	case NV_SECRET_SSH_CERT: a = nv_secret_get(h, "key"); break;
	default:
		return nv_err_set(err, NV_EREFUSED,
				  "give the job this credential's parts as "
				  "their own secrets, or use a Slurm profile",
				  "credential %s (%s) cannot be a Kubernetes "
				  "job's secret yet",
				  h->name, nv_secret_kind_name(h->kind));
	}
	if ((a && nv_buf_append(out, a->value, a->len)) ||
	    (b && (nv_buf_append(out, ":", 1) ||
		   nv_buf_append(out, b->value, b->len))))
		return nv_err_set(err, NV_ENOMEM, NULL,
				  "credential %s is too large", h->name);
	return 0;
}

/* Builds the description box from (desc, launcher, secrets) at 1..3.
 * Returns 0 with the box pushed, or 2 with nil, err pushed. */
static int build_desc(lua_State *L, nv_k8s_job_desc **out)
{
	nv_k8s_job_desc *d;
	size_t llen;
	const char *launcher;
	nv_err err;
	int box;

	luaL_checktype(L, 1, LUA_TTABLE);
	launcher =
		lua_isnoneornil(L, 2) ? NULL : luaL_checklstring(L, 2, &llen);
	if (!lua_isnoneornil(L, 3))
		luaL_checktype(L, 3, LUA_TTABLE);
	d = lua_newuserdatauv(L, sizeof(*d), 0); // [.., box]
	nv_k8s_desc_init(d);
	luaL_setmetatable(L, K8S_DESC_MT);
	box = lua_gettop(L);
	lua_pushnil(L);
	while (lua_next(L, 1)) { // [.., box, key, value]
		const char *key;

		if (lua_type(L, -2) != LUA_TSTRING)
			return luaL_error(L, "k8s.manifest: description "
					     "keys are strings");
		key = lua_tostring(L, -2);
		if (strcmp(key, "env") == 0) {
			int env = lua_gettop(L);

			luaL_checktype(L, env, LUA_TTABLE);
			lua_pushnil(L);
			while (lua_next(L, env)) {
				const char *n = check_text(L, -2, "env name");
				const char *v = check_text(L, -1, "env value");

				if (nv_k8s_desc_setenv(d, n, v, 0, &err))
					return nv_lua_push_error(L, &err);
				lua_pop(L, 1);
			}
			lua_pop(L, 1);
			continue;
		}
		if (nv_k8s_desc_set(d, key, value_text(L, -1, key), &err))
			return nv_lua_push_error(L, &err);
		lua_pop(L, 2); // [.., box, key]
	}
	if (launcher && nv_k8s_desc_set_launcher(d, launcher, llen, &err))
		return nv_lua_push_error(L, &err);
	if (!lua_isnoneornil(L, 3)) {
		lua_pushnil(L);
		while (lua_next(L, 3)) { // [.., box, name, handle]
			const char *name = check_text(L, -2, "secret name");
			const nv_secret *h = nv_creds_check(L, -1);
			nv_buf v;
			int rc;

			nv_buf_init(&v, NV_K8S_SECRET_MAX);
			rc = secret_value(h, &v, &err);
			if (!rc)
				rc = nv_k8s_desc_add_secret(
					d, name, v.data ? v.data : "", v.len,
					&err);
			if (v.data)
				memset(v.data, 0, v.cap);
			nv_buf_free(&v);
			if (rc)
				return nv_lua_push_error(L, &err);
			lua_pop(L, 1);
		}
	}
	lua_settop(L, box);
	*out = d;
	return 0;
}

/* manifest(desc, launcher?, secrets?) -> job_json | nil, err */
static int l_k8s_manifest(lua_State *L)
{
	nv_k8s_job_desc *d;
	char *json = NULL;
	nv_err err;
	int n;

	lua_settop(L, 3);
	n = build_desc(L, &d);
	if (n)
		return n;
	if (nv_k8s_job_manifest(d, &json, &err))
		return nv_lua_push_error(L, &err);
	lua_pushstring(L, json);
	free(json);
	return 1;
}

/* secret_manifest(desc, launcher, secrets, job_uid) -> body | nil, err:
 * the Secret's JSON in a box that session:request sends (its values never
 * become a Lua string) */
static int l_k8s_secret_manifest(lua_State *L)
{
	nv_k8s_job_desc *d;
	l_k8s_body *b;
	const char *uid;
	nv_err err;
	int n;

	lua_settop(L, 4);
	uid = check_text(L, 4, "job_uid");
	n = build_desc(L, &d); // [.., box]
	if (n)
		return n;
	b = lua_newuserdatauv(L, sizeof(*b), 0); // [.., box, body]
	b->json = NULL;
	luaL_setmetatable(L, K8S_BODY_MT);
	if (nv_k8s_secret_manifest(d, uid, &b->json, &err))
		return nv_lua_push_error(L, &err);
	return 1;
}

static int push_buf_result(lua_State *L, int rc, nv_buf *b, nv_err *err)
{
	if (rc) {
		nv_buf_free(b);
		return nv_lua_push_error(L, err);
	}
	lua_pushlstring(L, b->data ? b->data : "", b->len);
	nv_buf_free(b);
	return 1;
}

static int l_k8s_resume_patch(lua_State *L)
{
	nv_buf b;
	nv_err err;

	nv_buf_init(&b, 4096);
	return push_buf_result(L, nv_k8s_resume_patch(&b, &err), &b, &err);
}

static int l_k8s_ttl_patch(lua_State *L)
{
	lua_Integer n = nv_lua_checkrange(L, 1, 0, 100L * 365 * 86400,
					  "k8s: ttl seconds");
	nv_buf b;
	nv_err err;

	nv_buf_init(&b, 4096);
	return push_buf_result(L, nv_k8s_ttl_patch((long)n, &b, &err), &b,
			       &err);
}

static int l_k8s_delete_body(lua_State *L)
{
	nv_buf b;
	nv_err err;

	nv_buf_init(&b, 4096);
	return push_buf_result(L, nv_k8s_delete_body(&b, &err), &b, &err);
}

/* desc_keys() -> {"name", ...} */
static int l_k8s_desc_keys(lua_State *L)
{
	nv_lua_push_strings(L, nv_k8s_desc_keys());
	return 1;
}

/* contexts(paths) -> {{name, cluster, user, namespace, current, server},
 * ...} | nil, err */
static int l_k8s_contexts(lua_State *L)
{
	const char *paths[NV_K8S_KUBECONFIG_FILES_MAX];
	nv_k8s_context_info *list = NULL;
	size_t npaths, count = 0;
	nv_err err;

	lua_settop(L, 1);
	npaths = check_paths(L, 1, paths);
	if (nv_k8s_kubeconfig_contexts(paths, npaths, &list, &count, &err))
		return nv_lua_push_error(L, &err);
	/* (nothing below raises but for memory: the list is copied first) */
	lua_createtable(L, (int)count, 0);
	for (size_t i = 0; i < count; i++) {
		lua_createtable(L, 0, 6);
		SET_STR("name", list[i].name);
		SET_STR("cluster", list[i].cluster);
		SET_STR("user", list[i].user);
		SET_STR("namespace", list[i].namespace_);
		SET_BOOL("current", list[i].current);
		SET_STR("server", list[i].server);
		lua_rawseti(L, -2, (lua_Integer)i + 1);
	}
	free(list);
	return 1;
}

#undef SET_STR
#undef SET_INT
#undef SET_BOOL

int luaopen_navette_k8s(lua_State *L)
{
	static const luaL_Reg methods[] = {
		{"request", l_k8s_request},
		{"look", l_k8s_look},
		{"watch", l_k8s_watch},
		{"log", l_k8s_log},
		{"access_review", l_k8s_access_review},
		{"api_error", l_k8s_api_error},
		{"stats", l_k8s_stats},
		{"close", l_k8s_close},
		{NULL, NULL}};
	static const luaL_Reg meta[] = {{"__gc", l_k8s_close},
					{"__close", l_k8s_close},
					{"__tostring", l_k8s_tostring},
					{NULL, NULL}};
	static const luaL_Reg body_meta[] = {
		{"__gc", l_k8s_body_gc},
		{"__tostring", l_k8s_body_tostring},
		{NULL, NULL}};
	static const luaL_Reg fns[] = {
		{"open", l_k8s_open},
		{"manifest", l_k8s_manifest},
		{"secret_manifest", l_k8s_secret_manifest},
		{"resume_patch", l_k8s_resume_patch},
		{"ttl_patch", l_k8s_ttl_patch},
		{"delete_body", l_k8s_delete_body},
		{"desc_keys", l_k8s_desc_keys},
		{"contexts", l_k8s_contexts},
		{NULL, NULL}};

	nv_lua_new_handle_type(L, K8S_SESSION_MT, meta, methods);
	nv_lua_new_handle_type(L, K8S_BODY_MT, body_meta, NULL);
	nv_lua_new_box_type(L, K8S_DESC_MT, l_k8s_desc_gc);
	nv_lua_new_box_type(L, K8S_LOOK_MT, l_k8s_look_gc);
	luaL_newlib(L, fns);
	return 1;
}
