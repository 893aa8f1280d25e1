/* _navette.record: the job record (record.h) for the Lua side, so that a
 * backend written in Lua names a job's objects and phases, and decides
 * how a job ended, the way the local agent does.
 *
 *   record.phases   {"submitted", ..., "outputs_published"}, in order
 *   record.states   {"succeeded", "failed", "cancelled"}
 *   record.names    {log, log_chunks (a folder: ends in "/"), status,
 *                    run_record, checkpoint_archive, attempts,
 *                    log_chunk_digits}
 *   record.outcome(text|nil, ended) -> state, failure|nil, exit_code|nil
 *
 * text is the run record a launcher left (nil: none found); ended is the
 * backend's own word: {state, phase, reason, hint, stopped,
 * phase_from_record, exit_code, missing_reason, missing_hint} (see
 * nv_record_verdict). failure is {phase, reason, hint}, hint absent when
 * the backend gave none. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "jobs/record.h"

/* ended[key] as a string, or NULL when absent; a non-string raises. The
 * string stays on the stack, so the pointer lives until the call returns
 * (at most 6 of them: LUA_MINSTACK has room). */
static const char *ended_string(lua_State *L, const char *key)
{
	lua_getfield(L, 2, key); // [text, ended, ..., v]
	if (lua_isnil(L, -1)) {
		lua_pop(L, 1);
		return NULL;
	}
	if (lua_type(L, -1) != LUA_TSTRING)
		luaL_error(L, "record.outcome: ended.%s must be a string", key);
	return lua_tostring(L, -1);
}

static int ended_flag(lua_State *L, const char *key)
{
	int on;

	lua_getfield(L, 2, key); // [text, ended, ..., v]
	on = lua_toboolean(L, -1);
	lua_pop(L, 1);
	return on;
}

/* The backend's word (ended, argument 2) into v; misuse raises. */
static void check_ended(lua_State *L, nv_record_verdict *v)
{
	const char *state = ended_string(L, "state");
	const char *phase, *reason, *hint;

	nv_record_outcome_init(&v->said);
	if (nv_record_state_find(state, &v->said.state) != 0)
		luaL_error(L, "record.outcome: ended.state must be succeeded, "
			      "failed or cancelled");
	if (v->said.state != NV_STATE_SUCCEEDED) {
		phase = ended_string(L, "phase");
		if (nv_record_phase_find(phase, &v->said.phase) != 0)
			luaL_error(L, "record.outcome: ended.phase must be a "
				      "phase (record.phases)");
		reason = ended_string(L, "reason");
		hint = ended_string(L, "hint");
		snprintf(v->said.reason, sizeof(v->said.reason), "%s",
			 reason ? reason : "");
		snprintf(v->said.hint, sizeof(v->said.hint), "%s",
			 hint ? hint : "");
		v->said.no_hint = hint == NULL;
	}
	lua_getfield(L, 2, "exit_code"); // [text, ended, ..., code]
	if (!lua_isnil(L, -1)) {
		int exact;
		lua_Integer code = lua_tointegerx(L, -1, &exact);
		if (!exact || code < INT_MIN || code > INT_MAX)
			luaL_error(L, "record.outcome: ended.exit_code must be "
				      "a whole number");
		v->said.have_exit = 1;
		v->said.exit_code = (int)code;
	}
	lua_pop(L, 1);
	v->stopped = ended_flag(L, "stopped");
	v->phase_from_record = ended_flag(L, "phase_from_record");
	v->missing_reason = ended_string(L, "missing_reason");
	v->missing_hint = ended_string(L, "missing_hint");
}

static int l_record_outcome(lua_State *L)
{
	size_t len = 0;
	const char *text = luaL_optlstring(L, 1, NULL, &len);
	nv_record_verdict v;
	nv_record_outcome out;

	luaL_checktype(L, 2, LUA_TTABLE);
	lua_settop(L, 2);
	memset(&v, 0, sizeof(v));
	check_ended(L, &v);
	nv_record_decide(text, len, &v, &out);
	lua_pushstring(L, nv_record_state_name(out.state)); // [.., state]
	if (out.state == NV_STATE_SUCCEEDED) {
		lua_pushnil(L);
	} else {
		lua_createtable(L, 0, 3); // [.., state, failure]
		lua_pushstring(L, nv_record_phase_name(out.phase));
		lua_setfield(L, -2, "phase");
		lua_pushstring(L, out.reason);
		lua_setfield(L, -2, "reason");
		if (!out.no_hint) {
			lua_pushstring(L, out.hint);
			lua_setfield(L, -2, "hint");
		}
	}
	if (out.have_exit)
		lua_pushinteger(L, out.exit_code);
	else
		lua_pushnil(L); // [.., state, failure, code]
	return 3;
}

static void push_list(lua_State *L, const char *(*name)(int), int count)
{
	lua_createtable(L, count, 0);
	for (int i = 0; i < count; i++) {
		lua_pushstring(L, name(i));
		lua_rawseti(L, -2, i + 1);
	}
}

static const char *phase_at(int i)
{
	return nv_record_phase_name((nv_record_phase)i);
}

static const char *state_at(int i)
{
	return nv_record_state_name((nv_record_state)i);
}

int luaopen_navette_record(lua_State *L)
{
	static const luaL_Reg fns[] = {{"outcome", l_record_outcome},
				       {NULL, NULL}};

	luaL_newlib(L, fns); // [record]
	push_list(L, phase_at, NV_PHASE_COUNT);
	lua_setfield(L, -2, "phases");
	push_list(L, state_at, NV_STATE_COUNT);
	lua_setfield(L, -2, "states");
	lua_createtable(L, 0, 8); // [record, names]
	lua_pushliteral(L, NV_RECORD_LOG);
	lua_setfield(L, -2, "log");
	lua_pushliteral(L, NV_RECORD_LOG_CHUNKS "/");
	lua_setfield(L, -2, "log_chunks");
	lua_pushliteral(L, NV_RECORD_STATUS);
	lua_setfield(L, -2, "status");
	lua_pushliteral(L, NV_RECORD_RUN_RECORD);
	lua_setfield(L, -2, "run_record");
	lua_pushliteral(L,
			NV_RECORD_CHECKPOINT "/" NV_RECORD_CHECKPOINT_ARCHIVE);
	lua_setfield(L, -2, "checkpoint_archive");
	lua_pushliteral(L, NV_RECORD_CHECKPOINT "/" NV_RECORD_ATTEMPTS);
	lua_setfield(L, -2, "attempts");
	lua_pushinteger(L, NV_RECORD_LOG_CHUNK_DIGITS);
	lua_setfield(L, -2, "log_chunk_digits");
	lua_setfield(L, -2, "names");
	return 1;
}
