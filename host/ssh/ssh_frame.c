/* See ssh_frame.h. Lines are found by their newline: the BEGIN line
 * starts the buffer or follows a '\n'; the END line is preceded by the
 * '\n' its printf writes, so it is found even after output with no
 * final newline. The last END line is taken: output quoting the
 * command's own text (a `ps` listing) cannot end the frame early. */
#include "ssh/ssh_frame.h"

#include <stdio.h>
#include <string.h>

#include "core/hex.h"
#include "core/utf8.h"
#include "ssh/ssh_cmd.h"

#define BEGIN_WORD "NAVETTE-BEGIN-"
#define END_WORD   "NAVETTE-END-"
#define STATUS_MAX 99999

/* Offset of the first line of buf equal to line (len bytes, newline not
 * included), or -1. */
static long find_first_line(const char *buf, size_t len, const char *line,
			    size_t n)
{
	size_t at = 0;

	while (at + n < len) {
		const char *nl;

		if (memcmp(buf + at, line, n) == 0 && buf[at + n] == '\n')
			return (long)at;
		nl = memchr(buf + at, '\n', len - at);
		if (!nl)
			break;
		at = (size_t)(nl - buf) + 1;
	}
	return -1;
}

/* The last "\nEND-nonce STATUS\n" in buf[from..len): its offset (of the
 * leading '\n') and status, or -1. */
static long find_last_end(const char *buf, size_t from, size_t len,
			  const char *head, size_t n, int *status)
{
	long found = -1;
	size_t at = from;

	while (at < len) {
		const char *nl = memchr(buf + at, '\n', len - at);
		size_t p, digits = 0;
		long v = 0;

		if (!nl)
			break;
		at = (size_t)(nl - buf) + 1;
		if (len - at < n + 2 || memcmp(buf + at, head, n) != 0)
			continue;
		for (p = at + n;
		     p < len && buf[p] >= '0' && buf[p] <= '9' && digits < 6;
		     p++, digits++)
			v = v * 10 + (buf[p] - '0');
		if (digits == 0 || p >= len || buf[p] != '\n' || v > STATUS_MAX)
			continue;
		found = (long)(nl - buf);
		*status = (int)v;
	}
	return found;
}

int nv_ssh_frame_parse(const char *buf, size_t len, const char *nonce, int cut,
		       size_t max_output, nv_ssh_frame *f, nv_err *err)
{
	char begin[sizeof(BEGIN_WORD) + NV_SSH_NONCE_LEN];
	char end[sizeof(END_WORD) + NV_SSH_NONCE_LEN + 1];
	char shown[NV_SSH_FRAME_SHOW_MAX * 4 + 8];
	size_t body;
	long b, e;
	int status = -1;

	memset(f, 0, sizeof(*f));
	if (!nonce || strlen(nonce) != NV_SSH_NONCE_LEN ||
	    !nv_hex_is_lower(nonce, NV_SSH_NONCE_LEN))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "ssh: a frame's nonce is %d hex digits",
				  NV_SSH_NONCE_LEN);
	snprintf(begin, sizeof(begin), "%s%s", BEGIN_WORD, nonce);
	snprintf(end, sizeof(end), "%s%s ", END_WORD, nonce);
	b = find_first_line(buf, len, begin, strlen(begin));
	if (b < 0) {
		f->problem = NV_SSH_FRAME_NO_BEGIN;
		nv_utf8_show(shown, sizeof(shown), buf,
			     len < NV_SSH_FRAME_SHOW_MAX
				     ? len
				     : NV_SSH_FRAME_SHOW_MAX);
		if (!len)
			shown[0] = '\0';
		return nv_err_set(
			err, NV_EBACKEND,
			"the login node ran something else than the command: "
			"check its shell (a ForceCommand, a menu or a "
			"restricted shell) with a plain ssh login",
			"ssh: the command did not run; the login node printed "
			"%s%s%s",
			len ? "'" : "nothing", shown, len ? "'" : "");
	}
	f->problem = NV_SSH_FRAME_TOO_BIG;
	if (cut) /* a capture cut short may end in a line that looks like END */
		return nv_err_set(err, NV_ENOMEM,
				  "ask for less (fewer jobs, a narrower "
				  "query) or raise max_output",
				  "ssh: the command's output is over the limit "
				  "of %zu bytes",
				  max_output);
	body = (size_t)b + strlen(begin) + 1;
	f->before = buf;
	f->before_len = (size_t)b;
	/* the END line's own '\n' may be the BEGIN line's: empty output
	 * prints BEGIN\n\nEND, so the search starts at BEGIN's newline */
	e = find_last_end(buf, body - 1, len, end, strlen(end), &status);
	f->problem = NV_SSH_FRAME_NO_END;
	if (e < 0)
		return nv_err_set(err, NV_EBACKEND,
				  "the connection was lost or the login node "
				  "ended the session: run it again, and check "
				  "the node's limits if it goes on",
				  "ssh: the command's output stops short after "
				  "%zu bytes (no end of frame)",
				  len - body);
	f->output = buf + body;
	/* (e is body - 1 only for "BEGIN\nEND": no output) */
	f->output_len = (size_t)e >= body ? (size_t)e - body : 0;
	f->status = status;
	{
		const char *nl = memchr(buf + e + 1, '\n', len - (size_t)e - 1);
		size_t after = (size_t)(nl - buf) + 1;

		f->after = buf + after;
		f->after_len = len - after;
	}
	f->problem = NV_SSH_FRAME_TOO_BIG;
	if (f->output_len > max_output)
		return nv_err_set(err, NV_ENOMEM,
				  "ask for less (fewer jobs, a narrower "
				  "query) or raise max_output",
				  "ssh: the command's output is over the limit "
				  "of %zu bytes",
				  max_output);
	f->problem = NV_SSH_FRAME_OK;
	return 0;
}
