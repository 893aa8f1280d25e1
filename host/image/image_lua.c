/* _navette.image: the Lua binding of the image primitive (reference.h,
 * registry.h, codelayer.h, builder.h), wrapped for recipes and the CLI by
 * lua/navette/image.lua.
 *
 * Registry access takes an options table:
 *   platform        "os/arch[/variant]" (default linux/amd64)
 *   registries      { [REGISTRY] = { credential = <handle>,
 *                     credential_host = "host[:port]", token_hosts = {...},
 *                     ca_bundle = PATH, pinned_pubkey = "sha256//...",
 *                     chunk_size = N } }
 *   docker_config   a path, or false: where to look for a registry without
 *                   a credential in `registries` (default: the Docker
 *                   config file; absent or without an entry: anonymous)
 *   progress        function(digest, done, total), called during uploads
 *   step            function(step, detail), as a code layer goes
 * Credentials stay in C: a handle's secret, or one read from the Docker
 * config file into C memory, never a Lua string.
 *
 * Every call opens its registry clients in a session userdata (created
 * before anything is allocated, freed at the end of the call, or by __gc
 * when something raises), so no C memory is held across a Lua call that
 * can raise. Callbacks run under lua_pcall: an error in one is ignored
 * rather than thrown through libcurl. Expected failures return nil, err. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <lua.h>

#include "core/clock.h"
#include "core/nv_lua.h"
#include "core/runtime.h"
#include "creds/creds_lua.h"
#include "image/builder.h"
#include "image/codelayer.h"
#include "image/debootstrap.h"
#include "image/dockercfg.h"
#include "image/layout.h"
#include "image/manifest.h"
#include "image/reference.h"
#include "image/registry.h"

#define SESSION_MT      "navette.image.session"
#define IMAGE_MT        "navette.image.resolved"
#define SESSION_CLIENTS 4
#define TOKEN_HOSTS_MAX 8
#define PROGRESS_EVERY  0.2 /* seconds between progress calls */

typedef struct session_client {
	char registry[NV_IMAGE_NAME_MAX + 1];
	nv_registry_config cfg;
	const char *token_hosts[TOKEN_HOSTS_MAX];
	nv_secret *owned; /* from the Docker config, wiped at release */
	nv_registry *client;
} session_client;

typedef struct session {
	session_client c[SESSION_CLIENTS];
	int n;
	lua_State *L;
	int progress_ref, step_ref;
	double last_progress;
} session;

static void session_release(session *s)
{
	for (int i = 0; i < s->n; i++) {
		nv_registry_free(s->c[i].client);
		nv_secret_free(s->c[i].owned);
		s->c[i].client = NULL;
		s->c[i].owned = NULL;
	}
	s->n = 0;
	if (s->L) {
		luaL_unref(s->L, LUA_REGISTRYINDEX, s->progress_ref);
		luaL_unref(s->L, LUA_REGISTRYINDEX, s->step_ref);
	}
	s->progress_ref = s->step_ref = LUA_NOREF;
}

static int l_image_gc(lua_State *L)
{
	nv_registry_image_free(luaL_checkudata(L, 1, IMAGE_MT));
	return 0;
}

static int l_session_gc(lua_State *L)
{
	session_release(luaL_checkudata(L, 1, SESSION_MT));
	return 0;
}

/* [.., session]: a new, empty session owned by the GC. */
static session *session_new(lua_State *L)
{
	session *s = lua_newuserdatauv(L, sizeof(*s), 0);

	memset(s, 0, sizeof(*s));
	s->progress_ref = s->step_ref = LUA_NOREF;
	luaL_setmetatable(L, SESSION_MT);
	s->L = L;
	return s;
}

static double mono_now(void)
{
	return nv_monotonic();
}

static void on_progress(void *payload, const char *digest, uint64_t done,
			uint64_t total)
{
	session *s = payload;
	lua_State *L = s->L;
	double now = mono_now();

	if (s->progress_ref == LUA_NOREF ||
	    (done < total && now - s->last_progress < PROGRESS_EVERY))
		return;
	s->last_progress = now;
	if (!lua_checkstack(L, 4))
		return;
	lua_rawgeti(L, LUA_REGISTRYINDEX, s->progress_ref);
	lua_pushstring(L, digest);
	lua_pushinteger(L, (lua_Integer)done);
	lua_pushinteger(L, (lua_Integer)total);
	if (lua_pcall(L, 3, 0, 0) != LUA_OK)
		lua_pop(L, 1); /* a broken progress bar is no reason to stop */
}

static void on_step(void *payload, const char *name, const char *detail)
{
	session *s = payload;
	lua_State *L = s->L;

	if (s->step_ref == LUA_NOREF || !lua_checkstack(L, 4))
		return;
	lua_rawgeti(L, LUA_REGISTRYINDEX, s->step_ref);
	lua_pushstring(L, name);
	lua_pushstring(L, detail ? detail : "");
	if (lua_pcall(L, 2, 0, 0) != LUA_OK)
		lua_pop(L, 1);
}

/* Keeps opts.progress / opts.step (functions) for the callbacks. */
static void session_callbacks(lua_State *L, session *s, int opts)
{
	if (!opts)
		return;
	lua_getfield(L, opts, "progress");
	if (lua_isfunction(L, -1))
		s->progress_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	else
		lua_pop(L, 1);
	lua_getfield(L, opts, "step");
	if (lua_isfunction(L, -1))
		s->step_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	else
		lua_pop(L, 1);
}

static const char *opt_string(lua_State *L, int t, const char *key)
{
	const char *v = NULL;

	if (!t)
		return NULL;
	lua_getfield(L, t, key);
	if (!lua_isnil(L, -1))
		v = luaL_checkstring(L, -1);
	/* opts stays on the stack for the whole call: the string with it */
	lua_pop(L, 1);
	return v;
}

/* The client for registry, opened once per session. Returns NULL with err
 * set on an expected failure; raises on misuse. */
static nv_registry *session_client_for(lua_State *L, session *s, int opts,
				       const char *registry, nv_err *err)
{
	session_client *c;
	const char *docker_path = NULL;
	int use_docker = 1, t = 0;

	for (int i = 0; i < s->n; i++)
		if (strcmp(s->c[i].registry, registry) == 0)
			return s->c[i].client;
	if (s->n >= SESSION_CLIENTS) {
		nv_err_set(err, NV_EINVAL, NULL, "too many registries");
		return NULL;
	}
	c = &s->c[s->n];
	memset(c, 0, sizeof(*c));
	snprintf(c->registry, sizeof(c->registry), "%s", registry);
	c->cfg.registry = c->registry;
	c->cfg.progress = on_progress;
	c->cfg.progress_payload = s;
	if (opts) {
		lua_getfield(L, opts, "docker_config"); // [.., dc]
		if (lua_isboolean(L, -1) && !lua_toboolean(L, -1))
			use_docker = 0;
		else if (lua_isstring(L, -1))
			docker_path = lua_tostring(L, -1);
		lua_pop(L, 1);
		lua_getfield(L, opts, "registries"); // [.., regs]
		if (lua_istable(L, -1)) {
			lua_getfield(L, -1, registry); // [.., regs, entry]
			if (lua_istable(L, -1))
				t = lua_gettop(L);
			else
				lua_pop(L, 1);
		}
		if (!t)
			lua_pop(L, 1);
	}
	/* From here the entry table (if any) and regs stay on the stack
	 * until the call returns: the strings read from them live on. */
	if (t) {
		lua_getfield(L, t, "credential");
		if (!lua_isnil(L, -1))
			c->cfg.credential = nv_creds_check(L, -1);
		lua_pop(L, 1);
		c->cfg.credential_host = opt_string(L, t, "credential_host");
		c->cfg.ca_bundle = opt_string(L, t, "ca_bundle");
		c->cfg.pinned_pubkey = opt_string(L, t, "pinned_pubkey");
		lua_getfield(L, t, "chunk_size");
		if (!lua_isnil(L, -1))
			c->cfg.chunk_size = (uint64_t)nv_lua_checkrange(
				L, -1, 0, (lua_Integer)1 << 40,
				"image: chunk_size");
		lua_pop(L, 1);
		lua_getfield(L, t, "token_hosts");
		if (lua_istable(L, -1)) {
			lua_Integer k, m = (lua_Integer)lua_rawlen(L, -1);

			for (k = 1; k <= m && k <= TOKEN_HOSTS_MAX; k++) {
				lua_rawgeti(L, -1, k);
				c->token_hosts[k - 1] = luaL_checkstring(L, -1);
				lua_pop(L, 1);
			}
			c->cfg.token_hosts = c->token_hosts;
			c->cfg.ntoken_hosts = (size_t)(k - 1);
		}
		lua_pop(L, 1);
	}
	s->n++; /* owned by the session from here */
	if (!c->cfg.credential && use_docker) {
		nv_err derr;
		int rc = nv_dockercfg_credential(docker_path, registry,
						 &c->owned, &derr);

		if (rc && rc != NV_ENOTFOUND) {
			*err = derr;
			return NULL;
		}
		c->cfg.credential = c->owned;
	}
	if (nv_registry_open(&c->client, &c->cfg, err))
		return NULL;
	return c->client;
}

static int parse_or_push(lua_State *L, const char *s, nv_image_ref *ref)
{
	nv_err err;

	if (nv_image_ref_parse(ref, s, &err))
		return nv_lua_push_error(L, &err);
	return 0;
}

static void push_ref(lua_State *L, const nv_image_ref *ref)
{
	char buf[NV_IMAGE_REF_MAX + 32];

	lua_createtable(L, 0, 8);
	lua_pushstring(L, ref->registry);
	lua_setfield(L, -2, "registry");
	lua_pushstring(L, ref->repository);
	lua_setfield(L, -2, "repository");
	if (ref->tag[0]) {
		lua_pushstring(L, ref->tag);
		lua_setfield(L, -2, "tag");
	}
	if (ref->digest[0]) {
		lua_pushstring(L, ref->digest);
		lua_setfield(L, -2, "digest");
	}
	lua_pushboolean(L, ref->implicit_tag);
	lua_setfield(L, -2, "implicit_tag");
	nv_image_ref_name(ref, buf, sizeof(buf));
	lua_pushstring(L, buf);
	lua_setfield(L, -2, "name");
	nv_image_ref_format(ref, 1, buf, sizeof(buf));
	lua_pushstring(L, buf);
	lua_setfield(L, -2, "full");
	nv_image_ref_api_base(ref, buf, sizeof(buf));
	lua_pushstring(L, buf);
	lua_setfield(L, -2, "api");
}

/* image.parse(ref) -> {registry, repository, tag, digest, name, full, api}
 * | nil, err */
static int l_image_parse(lua_State *L)
{
	nv_image_ref ref;
	int n = parse_or_push(L, luaL_checkstring(L, 1), &ref);

	if (n)
		return n;
	push_ref(L, &ref);
	return 1;
}

static int opts_index(lua_State *L, int idx)
{
	if (lua_isnoneornil(L, idx))
		return 0;
	luaL_checktype(L, idx, LUA_TTABLE);
	return idx;
}

static void push_descriptors(lua_State *L, const nv_oci_manifest *m)
{
	lua_createtable(L, (int)m->nentries, 0);
	for (size_t i = 0; i < m->nentries; i++) {
		const nv_oci_descriptor *d = &m->entries[i];

		lua_createtable(L, 0, 4);
		lua_pushstring(L, d->digest);
		lua_setfield(L, -2, "digest");
		lua_pushinteger(L, (lua_Integer)d->size);
		lua_setfield(L, -2, "size");
		lua_pushstring(L, d->media_type);
		lua_setfield(L, -2, "media_type");
		lua_rawseti(L, -2, (lua_Integer)i + 1);
	}
}

/* The body of resolve and inspect: [ref, opts] -> result table. */
static int resolve_common(lua_State *L, int with_config)
{
	const char *s = luaL_checkstring(L, 1);
	int opts = opts_index(L, 2), n;
	char name[NV_IMAGE_NAME_MAX + 1], buf[NV_IMAGE_REF_MAX + 32];
	const char *platform = opt_string(L, opts, "platform");
	nv_registry_image *img;
	nv_image_ref ref;
	nv_registry *r;
	session *ses;
	nv_err err;
	int rc;

	n = parse_or_push(L, s, &ref);
	if (n)
		return n;
	ses = session_new(L); // [ref, opts, ses]
	r = session_client_for(L, ses, opts, ref.registry, &err);
	if (!r) {
		session_release(ses);
		return nv_lua_push_error(L, &err);
	}
	/* the image result lives in a userdata too: freed by the GC if a
	 * push below raises (memory) */
	img = lua_newuserdatauv(L, sizeof(*img), 0);
	memset(img, 0, sizeof(*img));
	luaL_setmetatable(L, IMAGE_MT);
	rc = nv_registry_resolve(r, ref.repository,
				 ref.digest[0] ? ref.digest : ref.tag, platform,
				 with_config, img, &err);
	session_release(ses);
	if (rc)
		return nv_lua_push_error(L, &err);
	nv_image_ref_name(&ref, name, sizeof(name));
	lua_createtable(L, 0, 12);
	lua_pushstring(L, img->digest);
	lua_setfield(L, -2, "digest");
	snprintf(buf, sizeof(buf), "%.255s@%.71s", name, img->digest);
	lua_pushstring(L, buf);
	lua_setfield(L, -2, "reference");
	lua_pushstring(L, name);
	lua_setfield(L, -2, "name");
	if (ref.tag[0]) {
		lua_pushstring(L, ref.tag);
		lua_setfield(L, -2, "tag");
	}
	if (img->index_digest[0]) {
		lua_pushstring(L, img->index_digest);
		lua_setfield(L, -2, "index_digest");
	}
	lua_pushstring(L, img->parsed.media_type);
	lua_setfield(L, -2, "media_type");
	lua_pushstring(L, platform ? platform : NV_IMAGE_PLATFORM_DEFAULT);
	lua_setfield(L, -2, "platform");
	if (with_config) {
		nv_oci_config_info info;

		lua_pushlstring(L, img->manifest.body.data,
				img->manifest.body.len);
		lua_setfield(L, -2, "manifest_json");
		lua_pushlstring(L, img->config.data, img->config.len);
		lua_setfield(L, -2, "config_json");
		lua_pushstring(L, img->parsed.config.digest);
		lua_setfield(L, -2, "config_digest");
		push_descriptors(L, &img->parsed);
		lua_setfield(L, -2, "layers");
		if (nv_oci_config_info_parse(img->config.data, img->config.len,
					     &info, &err) == 0) {
			snprintf(buf, sizeof(buf), "%s/%s%s%s", info.os,
				 info.architecture, info.variant[0] ? "/" : "",
				 info.variant);
			lua_pushstring(L, buf);
			lua_setfield(L, -2, "platform");
		}
	}
	nv_registry_image_free(img);
	return 1;
}

/* image.resolve(ref, opts) -> {digest, reference, name, tag, media_type,
 * index_digest, platform} | nil, err */
static int l_image_resolve(lua_State *L)
{
	return resolve_common(L, 0);
}

/* image.inspect(ref, opts) -> resolve's fields + manifest_json,
 * config_json, config_digest, layers | nil, err */
static int l_image_inspect(lua_State *L)
{
	return resolve_common(L, 1);
}

/* image.exists(ref, opts) -> true | false | nil, err */
static int l_image_exists(lua_State *L)
{
	const char *s = luaL_checkstring(L, 1);
	int opts = opts_index(L, 2), n, rc;
	char digest[NV_IMAGE_DIGEST_LEN + 1];
	nv_image_ref ref;
	nv_registry *r;
	session *ses;
	nv_err err;

	n = parse_or_push(L, s, &ref);
	if (n)
		return n;
	ses = session_new(L);
	r = session_client_for(L, ses, opts, ref.registry, &err);
	if (!r) {
		session_release(ses);
		return nv_lua_push_error(L, &err);
	}
	rc = nv_registry_manifest_head(r, ref.repository,
				       ref.digest[0] ? ref.digest : ref.tag,
				       digest, NULL, NULL, &err);
	session_release(ses);
	if (rc == NV_ENOTFOUND) {
		lua_pushboolean(L, 0);
		return 1;
	}
	if (rc)
		return nv_lua_push_error(L, &err);
	lua_pushboolean(L, 1);
	lua_pushstring(L, digest);
	return 2;
}

/* image.ping(registry, opts) -> true | nil, err: GET /v2/ with the
 * registry's credential of opts (a token fetched first where the registry
 * asks for one); a 401 or 403 is err.code "refused". */
static int l_image_ping(lua_State *L)
{
	const char *registry = luaL_checkstring(L, 1);
	int opts = opts_index(L, 2), rc;
	nv_registry *r;
	session *ses;
	nv_err err;

	ses = session_new(L);
	r = session_client_for(L, ses, opts, registry, &err);
	if (!r) {
		session_release(ses);
		return nv_lua_push_error(L, &err);
	}
	rc = nv_registry_ping(r, &err);
	session_release(ses);
	return nv_lua_result(L, rc, &err);
}

static void push_code_result(lua_State *L, const nv_code_layer_result *r,
			     int pushed)
{
	lua_createtable(L, 0, 24);
#define SET_STR(field, value)                                                  \
	do {                                                                   \
		lua_pushstring(L, value);                                      \
		lua_setfield(L, -2, field);                                    \
	} while (0)
#define SET_INT(field, value)                                                  \
	do {                                                                   \
		lua_pushinteger(L, (lua_Integer)(value));                      \
		lua_setfield(L, -2, field);                                    \
	} while (0)
	SET_STR("commit", r->commit);
	SET_STR("diff_id", r->diff_id);
	SET_STR("layer_digest", r->layer_digest);
	SET_INT("layer_size", r->archive.size);
	SET_INT("tar_size", r->archive.tar_size);
	SET_INT("files", r->archive.files);
	SET_INT("dirs", r->archive.dirs);
	SET_INT("symlinks", r->archive.symlinks);
	SET_INT("submodules", r->archive.submodules);
	SET_INT("created", r->created);
	SET_STR("into", r->into);
	SET_STR("lockfile_hash", r->lockfile_hash);
	if (r->source[0])
		SET_STR("source", r->source);
	if (pushed) {
		SET_STR("reference", r->reference);
		SET_STR("tagged", r->tagged);
		SET_STR("digest", r->digest);
		SET_STR("tag", r->tag);
		SET_STR("media_type", r->media_type);
		SET_STR("base", r->base_reference);
		SET_STR("base_digest", r->base_digest);
		SET_STR("config_digest", r->config_digest);
		SET_INT("blobs_present", r->blobs_present);
		SET_INT("blobs_uploaded", r->blobs_uploaded);
		SET_INT("blobs_mounted", r->blobs_mounted);
		SET_INT("blobs_copied", r->blobs_copied);
		SET_INT("bytes_uploaded", r->bytes_uploaded);
		/* the secret scan: files read, and those a clean verdict of
		 * an earlier push let it skip */
		SET_INT("scan_files_read", r->scan_blobs_read);
		SET_INT("scan_files_cached", r->scan_blobs_cached);
	}
#undef SET_STR
#undef SET_INT
}

/* image.code_layer{repo=, commit=, base=, to=, into=, platform=, source=,
 * tmp_dir=, registries=, docker_config=, progress=, step=} -> result |
 * nil, err. In plan mode: recorded, nothing done, returns nil, "planned". */
static int l_image_code_layer(lua_State *L)
{
	nv_code_layer_opts o;
	nv_code_layer_result *res;
	nv_image_ref base, target;
	session *ses;
	nv_err err;
	int n, rc;

	luaL_checktype(L, 1, LUA_TTABLE);
	memset(&o, 0, sizeof(o));
	o.repo_path = opt_string(L, 1, "repo");
	o.commit = opt_string(L, 1, "commit");
	o.base = opt_string(L, 1, "base");
	o.target = opt_string(L, 1, "to");
	o.into = opt_string(L, 1, "into");
	o.platform = opt_string(L, 1, "platform");
	o.source = opt_string(L, 1, "source");
	o.tmp_dir = opt_string(L, 1, "tmp_dir");
	luaL_argcheck(L, o.base && o.target, 1, "base and to are required");
	lua_pushfstring(L, "%s/cache/layers", nv_lua_home(L));
	o.cache_dir = lua_tostring(L, -1); /* anchored on the stack */
	if (nv_plan_mode(L)) {
		lua_pushfstring(L, "%s on %s", o.target, o.base);
		nv_plan_record(L, "image", "push-code", lua_tostring(L, -1));
		/* the checking pass of a run checks all and computes the
		 * exact reference (the recipe and its jobs use it as in the
		 * real pass); a plan does nothing */
		if (!nv_checking_mode(L)) {
			lua_pushnil(L);
			lua_pushliteral(L, "planned");
			return 2;
		}
		o.check_only = true;
	}
	n = parse_or_push(L, o.base, &base);
	if (!n)
		n = parse_or_push(L, o.target, &target);
	if (n)
		return n;
	res = lua_newuserdatauv(L, sizeof(*res), 0); /* big: not the C stack */
	ses = session_new(L);
	session_callbacks(L, ses, 1);
	o.step = on_step;
	o.step_payload = ses;
	o.base_registry = session_client_for(L, ses, 1, base.registry, &err);
	if (o.base_registry)
		o.target_registry =
			session_client_for(L, ses, 1, target.registry, &err);
	if (!o.base_registry || !o.target_registry) {
		session_release(ses);
		return nv_lua_push_error(L, &err);
	}
	rc = nv_code_layer_push(&o, res, &err);
	session_release(ses);
	if (rc)
		return nv_lua_push_error(L, &err);
	push_code_result(L, res, 1); /* check_only: all but the counts */
	if (o.check_only) {
		lua_pushboolean(L, 1);
		lua_setfield(L, -2, "planned");
	}
	return 1;
}

/* image.pack{repo=, commit=, into=, output=} -> result | nil, err: the
 * layer a code_layer would push, written to output. */
static int l_image_pack(lua_State *L)
{
	nv_code_layer_result *res;
	const char *repo, *commit, *into, *out;
	nv_err err;

	luaL_checktype(L, 1, LUA_TTABLE);
	repo = opt_string(L, 1, "repo");
	commit = opt_string(L, 1, "commit");
	into = opt_string(L, 1, "into");
	out = opt_string(L, 1, "output");
	luaL_argcheck(L, out != NULL, 1, "output is required");
	if (nv_plan_mode(L))
		return nv_lua_planned_nil(L, "image", "pack", out);
	res = lua_newuserdatauv(L, sizeof(*res), 0);
	if (nv_code_layer_pack(repo, commit, into, out, res, &err))
		return nv_lua_push_error(L, &err);
	push_code_result(L, res, 0);
	return 1;
}

/* Strings of the array at field key of table t into out[max]. */
static size_t string_list(lua_State *L, int t, const char *key,
			  const char **out, size_t max)
{
	size_t n = 0;

	lua_getfield(L, t, key);
	if (lua_istable(L, -1)) {
		lua_Integer m = (lua_Integer)lua_rawlen(L, -1);

		luaL_argcheck(L, (size_t)m <= max, 1, "too many entries");
		for (lua_Integer k = 1; k <= m; k++) {
			lua_rawgeti(L, -1, k);
			out[n++] = luaL_checkstring(L, -1);
			lua_pop(L, 1);
		}
	}
	lua_pop(L, 1); /* the table stays reachable from opts */
	return n;
}

/* image.build{builder=, file=, context=, platform=, to=, build_args={},
 * labels={}, storage_root=, run_root=} -> {builder, digest} | nil, err */
static int l_image_build(lua_State *L)
{
	const char *args[NV_BUILD_ARGS_MAX], *labels[NV_BUILD_ARGS_MAX];
	nv_build_result res;
	nv_build_opts o;
	nv_err err;

	luaL_checktype(L, 1, LUA_TTABLE);
	memset(&o, 0, sizeof(o));
	o.builder = opt_string(L, 1, "builder");
	o.file = opt_string(L, 1, "file");
	o.context = opt_string(L, 1, "context");
	o.platform = opt_string(L, 1, "platform");
	o.target = opt_string(L, 1, "to");
	o.storage_root = opt_string(L, 1, "storage_root");
	o.run_root = opt_string(L, 1, "run_root");
	o.nbuild_args =
		string_list(L, 1, "build_args", args, NV_BUILD_ARGS_MAX / 2);
	o.build_args = args;
	o.nlabels = string_list(L, 1, "labels", labels, NV_BUILD_ARGS_MAX / 2);
	o.labels = labels;
	if (nv_plan_mode(L))
		return nv_lua_planned_nil(L, "image", "build",
					  o.target ? o.target : "");
	/* a builder is a program: a read-only command runs none */
	if (nv_exec_forbidden(L)) {
		nv_err_set(&err, NV_ENOTRUN,
			   "build with navette run or navette image build",
			   "the image builder was not run: read-only "
			   "commands run no program");
		return nv_lua_push_error(L, &err);
	}
	{
		nv_build_clock bc;
		int rc = nv_build_clock_stop(L, &bc, &err);

		if (!rc) {
			rc = nv_image_build(&o, &res, &err);
			nv_build_clock_resume(L, &bc);
		}
		if (rc)
			return nv_lua_push_error(L, &err);
	}
	lua_createtable(L, 0, 2);
	lua_pushstring(L, res.builder);
	lua_setfield(L, -2, "builder");
	lua_pushstring(L, res.digest);
	lua_setfield(L, -2, "digest");
	return 1;
}

/* image.builder([name]) -> name | nil, err: which builder would run. */
static int l_image_builder(lua_State *L)
{
	char name[16];
	nv_err err;
	int rc;

	rc = nv_build_pick(luaL_optstring(L, 1, NULL), name, &err);
	return nv_lua_string_result(L, rc, name, &err);
}

/* image.platform_check(config_json, platform, what) -> true | nil, err:
 * whether the image of that config runs on platform (nil: the default). */
static int l_image_platform_check(lua_State *L)
{
	size_t len;
	const char *config = luaL_checklstring(L, 1, &len);
	const char *platform = luaL_optstring(L, 2, NULL);
	const char *what = luaL_optstring(L, 3, NULL);
	nv_err err;
	int rc;

	rc = nv_image_platform_check(config, len, platform, what, &err);
	return nv_lua_result(L, rc, &err);
}

/* image.tag_of(commit) -> the tag a code layer of that commit gets */
static int l_image_tag_of(lua_State *L)
{
	char tag[NV_IMAGE_TAG_MAX + 1];

	nv_code_layer_tag(luaL_checkstring(L, 1), tag);
	lua_pushstring(L, tag);
	return 1;
}

/* The spec fields of a debootstrap call (table at t); packages into pk. */
static void deb_spec(lua_State *L, int t, nv_debootstrap_spec *s,
		     const char **pk)
{
	memset(s, 0, sizeof(*s));
	s->suite = opt_string(L, t, "suite");
	s->variant = opt_string(L, t, "variant");
	s->platform = opt_string(L, t, "platform");
	s->npackages = string_list(L, t, "packages", pk, NV_DEB_PACKAGES_MAX);
	s->packages = pk;
}

/* image.debootstrap_identity{suite=, variant=, platform=, packages=} ->
 * {hash, tag} | nil, err: what the image of that spec is tagged. */
static int l_image_debootstrap_identity(lua_State *L)
{
	const char *pk[NV_DEB_PACKAGES_MAX];
	char hash[65], tag[NV_IMAGE_TAG_MAX + 1];
	nv_debootstrap_spec s;
	nv_err err;

	luaL_checktype(L, 1, LUA_TTABLE);
	deb_spec(L, 1, &s, pk);
	if (nv_debootstrap_identity(&s, hash, tag, &err))
		return nv_lua_push_error(L, &err);
	lua_createtable(L, 0, 2);
	lua_pushstring(L, hash);
	lua_setfield(L, -2, "hash");
	lua_pushstring(L, tag);
	lua_setfield(L, -2, "tag");
	return 1;
}

/* image.apt_mirror(suite) -> url | nil, err: this machine's apt mirror. */
static int l_image_apt_mirror(lua_State *L)
{
	char url[NV_DEB_MIRROR_MAX + 1];
	nv_err err;
	int rc;

	rc = nv_apt_default_mirror(luaL_checkstring(L, 1), url, sizeof(url),
				   &err) ||
	     nv_deb_mirror_check(url, &err);
	return nv_lua_string_result(L, rc, url, &err);
}

/* image.debootstrap{suite=, variant=, platform=, packages={}, mirror=,
 * work_dir=, labels={}, storage_root=, run_root=} -> true | nil, err:
 * the image built into work_dir/layout. */
static int l_image_debootstrap(lua_State *L)
{
	const char *pk[NV_DEB_PACKAGES_MAX], *labels[NV_BUILD_ARGS_MAX];
	nv_debootstrap_opts o;
	nv_err err;

	luaL_checktype(L, 1, LUA_TTABLE);
	memset(&o, 0, sizeof(o));
	deb_spec(L, 1, &o.spec, pk);
	o.mirror = opt_string(L, 1, "mirror");
	o.work_dir = opt_string(L, 1, "work_dir");
	o.keyring = opt_string(L, 1, "keyring");
	o.storage_root = opt_string(L, 1, "storage_root");
	o.run_root = opt_string(L, 1, "run_root");
	o.nlabels = string_list(L, 1, "labels", labels, NV_BUILD_ARGS_MAX);
	o.labels = labels;
	if (nv_plan_mode(L)) {
		const char *shown = opt_string(L, 1, "to");

		return nv_lua_planned_nil(
			L, "image", "debootstrap",
			shown ? shown : (o.spec.suite ? o.spec.suite : ""));
	}
	if (nv_exec_forbidden(L)) {
		nv_err_set(&err, NV_ENOTRUN, "build it with navette run",
			   "debootstrap was not run: read-only commands run "
			   "no program");
		return nv_lua_push_error(L, &err);
	}
	{
		nv_build_clock bc;
		int rc = nv_build_clock_stop(L, &bc, &err);

		if (!rc) {
			rc = nv_image_debootstrap(&o, &err);
			nv_build_clock_resume(L, &bc);
		}
		if (rc)
			return nv_lua_push_error(L, &err);
	}
	lua_pushboolean(L, 1);
	return 1;
}

/* image.layout_push{layout=DIR, to="registry/repository", tags={...},
 * registries=, docker_config=} -> digest | nil, err: an OCI layout's one
 * image pushed under each tag. */
static int l_image_layout_push(lua_State *L)
{
	const char *tags[8];
	const char *dir, *to;
	nv_oci_layout layout;
	nv_image_ref ref;
	nv_registry *r;
	session *ses;
	size_t ntags;
	nv_err err;
	int n, rc;

	luaL_checktype(L, 1, LUA_TTABLE);
	dir = opt_string(L, 1, "layout");
	to = opt_string(L, 1, "to");
	ntags = string_list(L, 1, "tags", tags, 8);
	luaL_argcheck(L, dir && to && ntags > 0, 1,
		      "layout, to and tags are required");
	if (nv_plan_mode(L))
		return nv_lua_planned_nil(L, "image", "push", to);
	n = parse_or_push(L, to, &ref);
	if (n)
		return n;
	ses = session_new(L);
	r = session_client_for(L, ses, 1, ref.registry, &err);
	if (!r) {
		session_release(ses);
		return nv_lua_push_error(L, &err);
	}
	/* from here no Lua call until the layout is freed (no progress
	 * callback: the recipe's clock stops while the blobs go) */
	{
		nv_build_clock bc;

		rc = nv_build_clock_stop(L, &bc, &err);
		if (!rc)
			rc = nv_oci_layout_read(dir, &layout, &err);
		if (!rc) {
			rc = nv_oci_layout_push(r, ref.repository, dir, &layout,
						tags, ntags, &err);
			nv_build_clock_resume(L, &bc);
			if (!rc)
				lua_pushstring(L, layout.digest);
			nv_oci_layout_free(&layout);
		} else {
			nv_build_clock_resume(L, &bc);
		}
	}
	session_release(ses);
	if (rc)
		return nv_lua_push_error(L, &err);
	return 1;
}

/* image.retag(ref, tag, opts) -> digest | nil, err: the manifest of ref
 * (by digest) put under tag in its repository, byte for byte. */
static int l_image_retag(lua_State *L)
{
	const char *s = luaL_checkstring(L, 1), *tag = luaL_checkstring(L, 2);
	int opts = opts_index(L, 3), n, rc;
	char got[NV_IMAGE_DIGEST_LEN + 1];
	nv_registry_manifest m;
	nv_image_ref ref;
	nv_registry *r;
	session *ses;
	nv_err err;

	n = parse_or_push(L, s, &ref);
	if (n)
		return n;
	luaL_argcheck(L, ref.digest[0] != '\0', 1, "a reference by digest");
	if (nv_plan_mode(L))
		return nv_lua_planned_nil(L, "image", "tag", s);
	ses = session_new(L);
	r = session_client_for(L, ses, opts, ref.registry, &err);
	if (!r) {
		session_release(ses);
		return nv_lua_push_error(L, &err);
	}
	memset(&m, 0, sizeof(m));
	rc = nv_registry_manifest_get(r, ref.repository, ref.digest, &m, &err);
	if (!rc)
		rc = nv_registry_manifest_put(r, ref.repository, tag,
					      m.media_type, m.body.data,
					      m.body.len, got, &err);
	nv_registry_manifest_free(&m);
	session_release(ses);
	return nv_lua_string_result(L, rc, got, &err);
}

int luaopen_navette_image(lua_State *L)
{
	static const luaL_Reg fns[] = {
		{"parse", l_image_parse},
		{"resolve", l_image_resolve},
		{"inspect", l_image_inspect},
		{"exists", l_image_exists},
		{"ping", l_image_ping},
		{"code_layer", l_image_code_layer},
		{"pack", l_image_pack},
		{"build", l_image_build},
		{"builder", l_image_builder},
		{"tag_of", l_image_tag_of},
		{"platform_check", l_image_platform_check},
		{"debootstrap_identity", l_image_debootstrap_identity},
		{"apt_mirror", l_image_apt_mirror},
		{"debootstrap", l_image_debootstrap},
		{"layout_push", l_image_layout_push},
		{"retag", l_image_retag},
		{NULL, NULL}};

	nv_lua_new_box_type(L, SESSION_MT, l_session_gc);
	nv_lua_new_box_type(L, IMAGE_MT, l_image_gc);
	luaL_newlib(L, fns);
	return 1;
}
