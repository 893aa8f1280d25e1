/* Job id grammar (see jobid.h): one check shared by the job database, the
 * agent, the launcher, the stores and the Slurm backend. */
#include "core/jobid.h"

#include <stdio.h>
#include <string.h>

#define ID_HINT                                                                \
	"a job id is 2 to 63 characters: lowercase letters, digits and "       \
	"'-', starting and ending with a letter or a digit, as navette "       \
	"makes them (list jobs with `navette jobs`)"

/* What the message shows of an untrusted id: printable ASCII as it is,
 * other bytes as \xNN, at most 64 bytes of it then "...". */
static void show_id(char *out, size_t cap, const char *id)
{
	size_t o = 0, i;

	for (i = 0; id[i] && i < 64 && o + 5 < cap; i++) {
		unsigned char c = (unsigned char)id[i];
		if (c >= 0x20 && c < 0x7f && c != '\\') {
			out[o++] = (char)c;
		} else {
			snprintf(out + o, cap - o, "\\x%02x", c);
			o += 4;
		}
	}
	if (id[i] && o + 4 < cap) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
}

static int id_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}

static int refuse(nv_err *err, const char *what, const char *id,
		  const char *why, size_t at)
{
	char shown[64 * 4 + 8];

	show_id(shown, sizeof(shown), id);
	if (at == (size_t)-1)
		return nv_err_set(err, NV_EINVAL, ID_HINT, "bad %s '%s': %s",
				  what, shown, why);
	return nv_err_set(err, NV_EINVAL, ID_HINT,
			  "bad %s '%s': %s (byte 0x%02x at offset %zu)", what,
			  shown, why, (unsigned char)id[at], at);
}

static int check(const char *id, int prefix, nv_err *err)
{
	const char *what = prefix ? "job id or prefix" : "job id";
	size_t len;

	if (!id)
		return nv_err_set(err, NV_EINVAL, ID_HINT, "no %s given", what);
	len = strnlen(id, NV_JOB_ID_MAX + 1);
	if (len == 0)
		return nv_err_set(err, NV_EINVAL, ID_HINT, "empty %s", what);
	if (len > NV_JOB_ID_MAX)
		return refuse(err, what, id, "longer than 63 characters",
			      (size_t)-1);
	for (size_t i = 0; i < len; i++)
		if (!id_char((unsigned char)id[i]))
			return refuse(err, what, id,
				      "only lowercase letters, digits and "
				      "'-' are allowed",
				      i);
	if (id[0] == '-')
		return refuse(err, what, id, "it starts with '-'", 0);
	if (!prefix && len < 2)
		return refuse(err, what, id, "shorter than 2 characters",
			      (size_t)-1);
	if (!prefix && id[len - 1] == '-')
		return refuse(err, what, id, "it ends with '-'", len - 1);
	return 0;
}

int nv_job_id_check(const char *id, nv_err *err)
{
	return check(id, 0, err);
}

int nv_job_id_prefix_check(const char *prefix, nv_err *err)
{
	return check(prefix, 1, err);
}
