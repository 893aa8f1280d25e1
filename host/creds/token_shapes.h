/* Token shapes: the one table of credentials recognised by their form
 * alone (GitHub, GitLab, Slack, Google and Stripe tokens, AWS access key
 * ids, JSON Web Tokens, OpenSSH certificates), shared by the log redactor
 * (creds/redact_shapes.c), which masks them, and the tree scanner
 * (creds/scan.c), which reports them, so that what one knows the other
 * knows. Pure C, no allocation.
 *
 * A shape is a case-sensitive prefix followed by a run of one character
 * class whose length lies in [min, max]. It starts only where the byte
 * before is not a letter, a digit, '_' or a character of its class, and
 * the byte after its run must not be a letter or a digit. The JWT is the
 * one structured shape: "eyJ" header (10+ characters), '.', payload (8+),
 * then optionally '.' and a signature, all base64url.
 *
 * The decision needs at most NV_TOKEN_DECIDE_MAX bytes from the start, so
 * a stream can hold back a bounded window; the run itself may be of any
 * length: once a shape is found, nv_token_continues() follows its run byte
 * by byte without keeping it. */
#ifndef NV_TOKEN_SHAPES_H
#define NV_TOKEN_SHAPES_H

#include <stddef.h>

enum nv_token_charset {
	NV_TOKEN_ALNUM,            /* [A-Za-z0-9] */
	NV_TOKEN_ALNUM_UNDERSCORE, /* [A-Za-z0-9_] */
	NV_TOKEN_ALNUM_DASH,       /* [A-Za-z0-9-] */
	NV_TOKEN_B64URL,           /* [A-Za-z0-9_-] */
	NV_TOKEN_UPPER_DIGIT,      /* [A-Z0-9] */
	NV_TOKEN_B64,              /* [A-Za-z0-9+/] */
	NV_TOKEN_JWT               /* base64url segments joined by '.' */
};

typedef struct nv_token_shape {
	const char *prefix; /* case-sensitive, 3+ characters */
	enum nv_token_charset charset;
	size_t min, max;  /* length of the run after the prefix; max 0: none */
	const char *rule; /* scanner rule id; the redactor's <redacted:RULE> */
	const char *reason; /* one line for a human */
} nv_token_shape;

#define NV_TOKEN_SHAPE_COUNT 26
extern const nv_token_shape nv_token_shapes[NV_TOKEN_SHAPE_COUNT];

/* Most bytes from a shape's start that nv_token_match() reads before it
 * answers FOUND, NONE or LONG. */
#define NV_TOKEN_DECIDE_MAX 4096

enum nv_token_result {
	NV_TOKEN_NONE,  /* no shape starts here */
	NV_TOKEN_FOUND, /* a token: *shape, *len */
	NV_TOKEN_SHORT, /* the bytes end before the answer: give more */
	NV_TOKEN_LONG   /* a JWT header of NV_TOKEN_DECIDE_MAX bytes with no
			   '.' yet: undecidable within the bound. *shape and
			   *len are set as for FOUND; the redactor masks it,
			   the scanner does not report it */
};

/* Where a token's run stands, to follow it past the bytes seen. */
typedef struct nv_token_run {
	const nv_token_shape *shape;
	unsigned dots; /* NV_TOKEN_JWT: dots taken so far */
} nv_token_run;

/* Whether a shape starts at s[0..n). prev is the byte before s, -1 when s
 * starts the text. With complete, nothing follows s[n-1] and the answer is
 * never NV_TOKEN_SHORT; without, more bytes may follow. On FOUND or LONG,
 * *shape is the row, *len the length of the token within s (== n when it
 * runs to the end of s: then it may go on, and *run, the state after those
 * bytes, is what nv_token_continues() takes). shape, len and run may not
 * be NULL. */
enum nv_token_result nv_token_match(const unsigned char *s, size_t n, int prev,
				    int complete, const nv_token_shape **shape,
				    size_t *len, nv_token_run *run);

/* 1 when byte ch continues the run (and advances *run), 0 when the run
 * ended before it. */
int nv_token_continues(nv_token_run *run, unsigned ch);

/* 1 when a shape may start with byte ch (a quick filter). */
int nv_token_may_start(unsigned ch);
/* The same for every byte value at once: a table of 256 (0 or 1). */
const unsigned char *nv_token_starts(void);

#endif
