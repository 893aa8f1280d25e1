/* The error slot: bounded, allocation-free formatting of messages. */
#include "core/nv_err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void nv_err_clear(nv_err *err)
{
	if (!err)
		return;
	err->code = 0;
	err->message[0] = '\0';
	err->hint[0] = '\0';
}

/* Fills a slot (not NULL): code, the formatted message, the hint. */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 0)))
#endif
static void
set_message(nv_err *err, int code, const char *hint, const char *fmt,
	    va_list ap)
{
	err->code = code;
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	if (hint)
		snprintf(err->hint, sizeof(err->hint), "%s", hint);
	else
		err->hint[0] = '\0';
}

int nv_err_set(nv_err *err, int code, const char *hint, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	va_start(ap, fmt);
	set_message(err, code, hint, fmt, ap);
	va_end(ap);
	return code;
}

int nv_err_bad(nv_err *err, const char *hint, const char *what,
	       const char *value, int max)
{
	return nv_err_set(err, NV_EINVAL, hint, "bad %s '%.*s'", what, max,
			  value ? value : "");
}

int nv_err_unknown_key(nv_err *err, const char *what, const char *key,
		       const char *const *known)
{
	char list[512];
	size_t used = 0;

	list[0] = '\0';
	for (int i = 0; known && known[i] && used < sizeof(list); i++)
		used += (size_t)snprintf(list + used, sizeof(list) - used,
					 "%s%s", i ? ", " : "", known[i]);
	return nv_err_set(err, NV_EINVAL, list,
			  "unknown %s '%.64s'; known: see the hint", what,
			  key ? key : "");
}

int nv_err_set_errno(nv_err *err, int code, int errnum, const char *hint,
		     const char *fmt, ...)
{
	va_list ap;
	size_t used;

	if (!err)
		return code;
	va_start(ap, fmt);
	set_message(err, code, hint, fmt, ap);
	va_end(ap);
	used = strlen(err->message);
	snprintf(err->message + used, sizeof(err->message) - used, ": %s",
		 strerror(errnum));
	return code;
}

const char *nv_err_code_name(int code)
{
	switch (code) {
	case NV_OK: return "ok";
	case NV_EINVAL: return "invalid";
	case NV_ENOTFOUND: return "not_found";
	case NV_EREFUSED: return "refused";
	case NV_EIO: return "io";
	case NV_EBACKEND: return "backend";
	case NV_ENOMEM: return "no_memory";
	case NV_EFAILED: return "failed";
	case NV_ENOTRUN: return "not_run";
	default: return "error";
	}
}

int nv_err_exit_status(int code)
{
	switch (code) {
	case NV_OK: return 0;
	case NV_EFAILED: return 1;
	case NV_EINVAL: return 2;
	case NV_ENOTFOUND: return 2;
	case NV_EREFUSED: return 3;
	case NV_EBACKEND: return 4;
	case NV_ENOTRUN: return 3;
	default: return 4;
	}
}
