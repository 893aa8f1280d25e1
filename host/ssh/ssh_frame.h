/* The frame around a remote command's output. A login node's shell
 * profile may print before the command runs (a banner, "stty: not a
 * tty") or after it ends; the command that ssh_cmd.h builds prints
 *
 *   \nNAVETTE-BEGIN-<nonce>\n  OUTPUT  \nNAVETTE-END-<nonce> <status>\n
 *
 * (the first newline ends a line that the profile left open)
 * with a nonce drawn for the call, which no profile can guess. The parser
 * finds the first BEGIN line and the last END line of that nonce and
 * returns what is between them (less the one newline the END line adds)
 * and the status; what is outside is kept only to explain a refusal. No
 * Lua, no allocation: the results point into the caller's buffer. */
#ifndef NV_SSH_FRAME_H
#define NV_SSH_FRAME_H

#include <stddef.h>

#include "core/nv_err.h"

/* What a refusal shows of what the login node printed instead. */
#define NV_SSH_FRAME_SHOW_MAX 200

/* Why a frame was refused. */
typedef enum nv_ssh_frame_problem {
	NV_SSH_FRAME_OK = 0,
	NV_SSH_FRAME_NO_BEGIN, /* the command never ran */
	NV_SSH_FRAME_NO_END,   /* it began, and the output stops short */
	NV_SSH_FRAME_TOO_BIG   /* over max_output */
} nv_ssh_frame_problem;

typedef struct nv_ssh_frame {
	nv_ssh_frame_problem problem;
	const char *output; /* between the lines, into the parsed buffer */
	size_t output_len;
	int status;         /* the remote command's, as sh's $? says it */
	const char *before; /* what came before the BEGIN line */
	size_t before_len;
	const char *after; /* what came after the END line */
	size_t after_len;
} nv_ssh_frame;

/* Finds the frame of nonce (NV_SSH_NONCE_LEN hex digits) in buf[0..len).
 * cut: the capture stopped before the end of what came (it was over its
 * cap); max_output: the most output taken. 0 and f filled; else
 * f->problem says which of these and
 * NV_EBACKEND with a message for: no BEGIN line (the command never ran;
 * what came instead, shortened and escaped), no END line after it (the
 * connection was lost, or the capture cut), or output over max_output
 * (NV_ENOMEM then, naming the limit). */
int nv_ssh_frame_parse(const char *buf, size_t len, const char *nonce, int cut,
		       size_t max_output, nv_ssh_frame *f, nv_err *err);

#endif
