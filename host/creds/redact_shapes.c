/* The credential shapes the redactor masks without knowing the secret:
 * X-Amz-* query parameters and headers, Authorization and Bearer values,
 * private-key blocks (also with prefixed lines), AWS secret keys, URL
 * passwords and the table of token shapes (creds/token_shapes.h). A
 * scanner runs only at the byte pairs where a shape may start; a shape
 * that outgrows the window leaves a continuation state (struct cont) that
 * drops its rest from the next writes. */
#include "creds/redact.h"
#include "creds/redact_internal.h"

#include <string.h>

/* A PEM body run: this many base64 characters in a row. */
#define PEM_RUN_MIN 16

/* ---- shapes ---- */

static const char *const shape_labels[SH_COUNT] = {
	"<redacted:x-amz-signature>",
	"<redacted:x-amz-credential>",
	"<redacted:x-amz-security-token>",
	"<redacted:authorization>",
	"<redacted:bearer>",
	"<redacted:private-key>",
	"<redacted:aws-secret-key>",
	"<redacted:url-password>",
	"<redacted:url-userinfo>",
};

/* 1: p[i..] starts with lit; 0: it does not; -1: the window ends first.
 * With fold, p is lowercased (lit must be lowercase). */
static int has_prefix(const unsigned char *p, size_t len, size_t i,
		      const char *lit, int fold)
{
	for (size_t k = 0; lit[k]; k++) {
		if (i + k >= len)
			return -1;
		unsigned c = fold ? to_lower(p[i + k]) : p[i + k];
		if (c != (unsigned char)lit[k])
			return 0;
	}
	return 1;
}

/* Returns from a scanner when a prefix test did not say yes. */
#define NEED(r)                                                                \
	do {                                                                   \
		int need_ = (r);                                               \
		if (need_ < 0)                                                 \
			return at_end ? SCAN_NONE : SCAN_MORE;                 \
		if (need_ == 0)                                                \
			return SCAN_NONE;                                      \
	} while (0)

static int hit_set(struct hit *h, size_t start, size_t end, enum shape shape,
		   int open, enum cont_mode cont)
{
	if (end <= start)
		return SCAN_NONE;
	h->start = start;
	h->end = end;
	h->id = -(int32_t)shape - 1;
	h->open = open;
	h->cont = cont;
	h->lines = PEM_LINES_NONE;
	h->mark = h->tail = 0;
	return SCAN_MATCH;
}

/* Skips spaces and tabs; -1 if the window ends. */
static int skip_spaces(const unsigned char *p, size_t len, size_t *j)
{
	while (*j < len && is_space(p[*j]))
		(*j)++;
	return *j < len ? 1 : -1;
}

/* A value after "Name:" up to the end of the line, or inside quotes. */
static int header_value(const unsigned char *p, size_t len, size_t j,
			int at_end, enum shape shape, struct hit *h)
{
	size_t k;
	int quoted;

	NEED(skip_spaces(p, len, &j));
	quoted = p[j] == '"';
	if (quoted)
		j++;
	for (k = j; k < len; k++) {
		if (is_eol(p[k]) || (quoted && p[k] == '"'))
			return hit_set(h, j, k, shape, 0, CONT_NONE);
	}
	if (!at_end)
		return SCAN_MORE;
	return hit_set(h, j, len, shape, 1, CONT_EOL);
}

/* X-Amz-Signature=..., X-Amz-Credential=..., X-Amz-Security-Token=...
 * (query parameters, any case) and the same names as headers. */
static int scan_x_amz(const unsigned char *p, size_t len, size_t i, int at_end,
		      struct hit *h)
{
	static const struct {
		const char *name;
		enum shape shape;
	} names[] = {{"signature", SH_X_AMZ_SIGNATURE},
		     {"credential", SH_X_AMZ_CREDENTIAL},
		     {"security-token", SH_X_AMZ_TOKEN}};
	size_t j = i + 6, k;
	size_t n;

	NEED(has_prefix(p, len, i, "x-amz-", 1));
	for (n = 0; n < 3; n++) {
		int r = has_prefix(p, len, j, names[n].name, 1);
		if (r < 0)
			return at_end ? SCAN_NONE : SCAN_MORE;
		if (r > 0)
			break;
	}
	if (n == 3)
		return SCAN_NONE;
	j += strlen(names[n].name);
	if (j >= len)
		return at_end ? SCAN_NONE : SCAN_MORE;
	if (p[j] == ':' || (p[j] == '"' && j + 1 < len && p[j + 1] == ':'))
		return header_value(p, len, j + (p[j] == '"' ? 2 : 1), at_end,
				    names[n].shape, h);
	if (p[j] != '=')
		return SCAN_NONE;
	for (k = ++j; k < len; k++) {
		if (is_query_stop(p[k]))
			return hit_set(h, j, k, names[n].shape, 0, CONT_NONE);
	}
	if (!at_end)
		return SCAN_MORE;
	return hit_set(h, j, len, names[n].shape, 1, CONT_QUERY);
}

/* Authorization: VALUE (also Proxy-Authorization, "authorization": "..."). */
static int scan_authorization(const unsigned char *p, size_t len, size_t i,
			      int prev, int at_end, struct hit *h)
{
	size_t j = i + 13;

	if (prev >= 0 && (is_alnum((unsigned)prev) || prev == '_'))
		return SCAN_NONE;
	NEED(has_prefix(p, len, i, "authorization", 1));
	if (j < len && (p[j] == '"' || p[j] == '\''))
		j++;
	NEED(skip_spaces(p, len, &j));
	if (p[j] != ':')
		return SCAN_NONE;
	return header_value(p, len, j + 1, at_end, SH_AUTHORIZATION, h);
}

/* Bearer TOKEN: the token must look like one (8+ chars, and a digit, a
 * symbol or 20+ chars), so "Bearer authentication" stays readable. */
static int scan_bearer(const unsigned char *p, size_t len, size_t i, int prev,
		       int at_end, struct hit *h)
{
	size_t j = i + 6, k;
	int mixed = 0;

	if (prev >= 0 && is_alnum((unsigned)prev))
		return SCAN_NONE;
	NEED(has_prefix(p, len, i, "bearer", 1));
	if (j < len && !is_space(p[j]))
		return SCAN_NONE;
	NEED(skip_spaces(p, len, &j));
	for (k = j; k < len && is_token68(p[k]); k++)
		mixed |= !is_upper(p[k]) && !is_lower(p[k]);
	if (k == len && !at_end)
		return SCAN_MORE;
	if (k - j < 8 || (!mixed && k - j < 20))
		return SCAN_NONE;
	return hit_set(h, j, k, SH_BEARER, k == len, CONT_TOKEN);
}

/* How much of "KEY-----" the window ends with, so a PEM continuation can
 * find the end line even when it straddles two writes. */
int redact_pem_tail(const unsigned char *p, size_t len)
{
	static const char end[] = "KEY-----";

	for (size_t m = 7; m > 0; m--) {
		if (len >= m && memcmp(p + len - m, end, m) == 0)
			return (int)m;
	}
	return 0;
}

static int is_pem_run(unsigned c)
{
	return is_b64(c) || c == '=';
}

/* "-----END [A-Z ]-----" at p[k] (the closing dashes may be missing):
 * 1 (*end past it), 0 no, -1 the window ends first. */
static int pem_end_line(const unsigned char *p, size_t len, size_t k,
			size_t *end)
{
	size_t m;
	int r = has_prefix(p, len, k, "-----END ", 0);

	if (r <= 0)
		return r;
	for (m = k + 9;
	     m < len && m - k < 80 && (is_upper(p[m]) || p[m] == ' '); m++)
		;
	r = has_prefix(p, len, m, "-----", 0);
	*end = r ? m + 5 : m;
	return r < 0 ? -1 : 1;
}

static int pem_lines_hit(struct hit *h, size_t start, size_t mark, size_t tail,
			 size_t end, enum pem_lines_kind kind)
{
	hit_set(h, start, end, SH_PRIVATE_KEY, 0, CONT_NONE);
	h->lines = kind;
	h->mark = mark;
	h->tail = tail;
	return SCAN_MATCH;
}

/* -----BEGIN ... PRIVATE KEY----- through -----END ... KEY-----. A block
 * of PEM characters only is one span. Any other byte in it is taken for a
 * per-line prefix ("stderr| ", a timestamp): the block is then masked run
 * by run (PEM_LINES_*), prefixes kept, up to the END line if it comes
 * within NV_REDACT_SHAPE_MAX, else line by line while lines carry runs. */
static int scan_pem(const unsigned char *p, size_t len, size_t i, int at_end,
		    struct hit *h)
{
	size_t j = i + 11, k, m, mark;
	int r, clean = 1;

	NEED(has_prefix(p, len, i, "-----BEGIN ", 0));
	while (j < len && j - i < 80 &&
	       (is_upper(p[j]) || is_digit(p[j]) || p[j] == ' '))
		j++;
	NEED(has_prefix(p, len, j, "-----", 0));
	if (j - (i + 11) < 11 || memcmp(p + j - 11, "PRIVATE KEY", 11) != 0)
		return SCAN_NONE; /* certificates and public keys stay */
	mark = j + 5;
	for (k = mark; k < len; k++) {
		if (p[k] == '-' && (r = pem_end_line(p, len, k, &m)) != 0) {
			if (r < 0)
				break;
			if (clean)
				return hit_set(h, i, m, SH_PRIVATE_KEY, 0,
					       CONT_NONE);
			return pem_lines_hit(h, i, mark, k, m,
					     PEM_LINES_CLOSED);
		}
		if (!is_pem_body(p[k]))
			clean = 0;
		if (!clean && k - i >= NV_REDACT_SHAPE_MAX)
			return pem_lines_hit(h, i, mark, mark, mark,
					     PEM_LINES_OPEN);
	}
	if (!at_end)
		return SCAN_MORE;
	if (clean)
		return hit_set(h, i, len, SH_PRIVATE_KEY, 1, CONT_PEM);
	return pem_lines_hit(h, i, mark, mark, mark, PEM_LINES_OPEN);
}

/* A row of the table of token shapes (creds/token_shapes.h): GitHub,
 * GitLab, Slack, Google and Stripe tokens, AWS access key ids, JWTs. A run
 * still going at the window's end is a hit open on CONT_SHAPE, which
 * follows the same run into the next writes, so a token of any length is
 * masked whole. */
static int scan_token(const unsigned char *p, size_t len, size_t i, int prev,
		      int at_end, struct hit *h)
{
	const nv_token_shape *t;
	size_t n;
	nv_token_run run;
	enum nv_token_result r =
		nv_token_match(p + i, len - i, prev, at_end, &t, &n, &run);

	if (r == NV_TOKEN_SHORT)
		return SCAN_MORE;
	if (r == NV_TOKEN_NONE)
		return SCAN_NONE;
	if (i + n == len && !at_end)
		return SCAN_MORE; /* its end may come within the window */
	hit_set(h, i, i + n, SH_COUNT, i + n == len, CONT_SHAPE);
	h->id = -(int32_t)(SH_COUNT + (size_t)(t - nv_token_shapes)) - 1;
	h->token = run;
	return SCAN_MATCH;
}

/* 40 base64 characters assigned to a name containing "secret"
 * (aws_secret_access_key = ..., "SecretAccessKey": "...", secret: ...). */
static int scan_aws_secret(const unsigned char *p, size_t len, size_t i,
			   int at_end, struct hit *h)
{
	size_t j = i + 6, k;

	NEED(has_prefix(p, len, i, "secret", 1));
	while (j < len && j - i < 40 &&
	       (is_alnum(p[j]) || p[j] == '_' || p[j] == '-'))
		j++;
	if (j < len && (p[j] == '"' || p[j] == '\''))
		j++;
	NEED(skip_spaces(p, len, &j));
	if (p[j] != ':' && p[j] != '=')
		return SCAN_NONE;
	j++;
	NEED(skip_spaces(p, len, &j));
	if (p[j] == '"' || p[j] == '\'')
		j++;
	for (k = j; k < len && k - j <= 40 && is_b64(p[k]); k++)
		;
	if (k == len && !at_end)
		return SCAN_MORE;
	if (k - j != 40 || (k < len && p[k] == '='))
		return SCAN_NONE;
	return hit_set(h, j, k, SH_AWS_SECRET, 0, CONT_NONE);
}

/* scheme://user:password@host: the password; scheme://token@host: the
 * whole userinfo when it is long enough to be a token. */
static int scan_url(const unsigned char *p, size_t len, size_t i, int prev,
		    int at_end, struct hit *h)
{
	size_t a = i + 3, k, colon = 0;

	if (prev < 0 || !is_alnum((unsigned)prev))
		return SCAN_NONE;
	NEED(has_prefix(p, len, i, "://", 0));
	for (k = a; k < len && k - a <= 512; k++) {
		unsigned c = p[k];
		if (c == '@')
			break;
		if (c == '/' || c == '?' || c == '#' || is_space(c) ||
		    is_eol(c) || c == '"' || c == '\'' || c == '<' || c == '>')
			return SCAN_NONE;
		if (c == ':' && !colon)
			colon = k;
	}
	if (k == len)
		return at_end ? SCAN_NONE : SCAN_MORE;
	if (p[k] != '@')
		return SCAN_NONE;
	if (colon)
		return hit_set(h, colon + 1, k, SH_URL_PASSWORD, 0, CONT_NONE);
	if (k - a >= 16)
		return hit_set(h, a, k, SH_URL_USERINFO, 0, CONT_NONE);
	return SCAN_NONE;
}

/* The first word of each scanner above: the has_prefix() its NEED tests
 * first (fold: any case), then every token prefix. An engine that finds
 * these words may skip every other offset but the window's last ones
 * (redact_vectorscan.c); keep this list in step with the scanners. */
size_t redact_shape_triggers(redact_trigger_fn fn, void *ctx)
{
	static const struct {
		const char *word;
		int fold;
	} first[] = {{"x-amz-", 1},      {"authorization", 1}, {"bearer", 1},
		     {"-----BEGIN ", 0}, {"secret", 1},        {"://", 0}};
	size_t longest = 0, n;

	for (size_t i = 0; i < sizeof(first) / sizeof(*first); i++) {
		n = strlen(first[i].word);
		if (fn(ctx, first[i].word, n, first[i].fold) != 0)
			return 0;
		longest = n > longest ? n : longest;
	}
	for (size_t k = 0; k < NV_TOKEN_SHAPE_COUNT; k++) {
		n = strlen(nv_token_shapes[k].prefix);
		if (fn(ctx, nv_token_shapes[k].prefix, n, 0) != 0)
			return 0;
		longest = n > longest ? n : longest;
	}
	return longest;
}

/* The byte pairs at which a shape may start (a bit per pair): testing
 * two bytes keeps common letters such as 'a', 'e' or 's' cheap. */
static uint64_t shape_pairs[65536 / 64];
static pthread_once_t shape_pairs_once = PTHREAD_ONCE_INIT;

static void shape_pair_add(unsigned a, unsigned b)
{
	unsigned v = a | b << 8;

	shape_pairs[v >> 6] |= (uint64_t)1 << (v & 63);
}

static void shape_pairs_init(void)
{
	static const char *const pairs[] = {"x-", "au", "be", "se", "--", ":/"};

	for (size_t k = 0; k < NV_TOKEN_SHAPE_COUNT; k++) {
		const char *prefix = nv_token_shapes[k].prefix; /* 3+ bytes */
		shape_pair_add((unsigned char)prefix[0],
			       (unsigned char)prefix[1]);
	}
	for (size_t i = 0; i < sizeof(pairs) / sizeof(*pairs); i++) {
		unsigned a = (unsigned char)pairs[i][0];
		unsigned b = (unsigned char)pairs[i][1];
		shape_pair_add(a, b);
		if (is_lower(a)) {
			/* case-insensitive names */
			unsigned ua = a - ('a' - 'A');
			unsigned ub = is_lower(b) ? b - ('a' - 'A') : b;
			shape_pair_add(ua, b);
			shape_pair_add(a, ub);
			shape_pair_add(ua, ub);
		}
	}
}

/* Whether a shape may start at p[i] (always at the window's last byte). */
int redact_shape_candidate(const unsigned char *p, size_t len, size_t i)
{
	if (i + 1 >= len)
		return 1;
	unsigned v = p[i] | (unsigned)p[i + 1] << 8;
	return (int)((shape_pairs[v >> 6] >> (v & 63)) & 1u);
}

int redact_scan_shape(const unsigned char *p, size_t len, size_t i, int prev,
		      int at_end, struct hit *h)
{
	int r;

	switch (p[i]) {
	case 'x':
	case 'X': r = scan_x_amz(p, len, i, at_end, h); break;
	case 'a':
	case 'A': r = scan_authorization(p, len, i, prev, at_end, h); break;
	case 'b':
	case 'B': r = scan_bearer(p, len, i, prev, at_end, h); break;
	case '-': r = scan_pem(p, len, i, at_end, h); break;
	case 's':
	case 'S': r = scan_aws_secret(p, len, i, at_end, h); break;
	case ':': r = scan_url(p, len, i, prev, at_end, h); break;
	default: r = SCAN_NONE; break;
	}
	/* no token starts inside a word (the common "gh" of "night") */
	if (r != SCAN_NONE ||
	    (prev >= 0 && (is_alnum((unsigned)prev) || prev == '_')) ||
	    !nv_token_may_start(p[i]))
		return r;
	return scan_token(p, len, i, prev, at_end, h);
}

void redact_shapes_init(void)
{
	pthread_once(&shape_pairs_once, shape_pairs_init);
}

/* ---- what outgrows a window ---- */

/* Runs of PEM_RUN_MIN+ base64 characters in p[from..to). */
int redact_pem_push_runs(struct spans *out, const unsigned char *p, size_t from,
			 size_t to)
{
	size_t k = from, a;

	while (k < to) {
		if (!is_pem_run(p[k])) {
			k++;
			continue;
		}
		for (a = k; k < to && is_pem_run(p[k]); k++)
			;
		if (k - a >= PEM_RUN_MIN &&
		    redact_spans_push(out, a, k, PEM_SPAN_ID) != 0)
			return -1;
	}
	return 0;
}

/* The CONT_PEM_LINES state machine over p[from..to) of a window of len
 * bytes: a PEM block with prefixed lines, past its BEGIN line, whose END
 * line did not come within NV_REDACT_SHAPE_MAX. Runs of PEM_RUN_MIN+
 * base64 characters go to out (when not NULL; a run still going at `to`
 * is masked up to cut); the END line ends the mode, masked, and so does a
 * line without such a run, left alone. *end gets where the mode ended (to
 * while it goes on); *hold the first byte a non-final pass must keep: an
 * unfinished short run, END line or run-less line. Replaying the machine
 * from the same state up to any offset gives the state there, which is
 * how a stream resumes at the offset a pass stopped at. */
int redact_pem_lines(struct cont *c, const unsigned char *p, size_t from,
		     size_t to, size_t len, size_t cut, struct spans *out,
		     size_t *end, size_t *hold)
{
	size_t k, run_start = from, line_start = from, m;
	int r;

	*hold = len;
	for (k = from; k < to; k++) {
		unsigned ch = p[k];
		if (is_pem_run(ch)) {
			if (c->run == 0)
				run_start = k;
			if (c->run < PEM_RUN_MIN)
				c->run++;
			continue;
		}
		if (c->run >= PEM_RUN_MIN) {
			/* k == run_start: it ended where an earlier pass did */
			if (out && k > run_start &&
			    redact_spans_push(out, run_start, k, PEM_SPAN_ID) !=
				    0)
				return -1;
			c->line_run = 1;
		}
		c->run = 0;
		if (ch == '\n') {
			if (!c->line_run) {
				*end = line_start;
				goto done;
			}
			c->line_run = 0;
			line_start = k + 1;
		} else if (ch == '-' && (r = pem_end_line(p, len, k, &m))) {
			if (r < 0) {
				*hold = k; /* len == to: a later write says */
				break;
			}
			if (out &&
			    redact_spans_push(out, k, m, PEM_SPAN_ID) != 0)
				return -1;
			*end = m;
			goto done;
		}
	}
	*end = to;
	if (c->run >= PEM_RUN_MIN) {
		size_t stop = cut < to ? cut : to;
		if (out && stop > run_start &&
		    redact_spans_push(out, run_start, stop, PEM_SPAN_ID) != 0)
			return -1;
		if (stop < *hold)
			*hold = stop > run_start ? stop : run_start;
	} else if (c->run > 0 && run_start < *hold) {
		*hold = run_start;
	}
	if (!c->line_run && line_start < *hold &&
	    to - line_start <= NV_REDACT_SHAPE_MAX)
		*hold = line_start;
	return 0;
done:
	memset(c, 0, sizeof(*c));
	return 0;
}

/* Drops the rest of a shape masked by an earlier pass; returns where
 * normal scanning resumes (len if the shape goes on). */
size_t redact_cont_skip(struct cont *c, const unsigned char *p, size_t len)
{
	static const char end[] = "KEY-----";
	size_t i;

	for (i = 0; i < len; i++) {
		unsigned ch = p[i];
		switch (c->mode) {
		case CONT_EOL:
			if (is_eol(ch))
				goto done;
			break;
		case CONT_QUERY:
			if (is_query_stop(ch))
				goto done;
			break;
		case CONT_TOKEN:
			if (!is_token68(ch))
				goto done;
			break;
		case CONT_PEM:
			if (!is_pem_body(ch))
				goto done;
			if (ch == (unsigned char)end[c->matched])
				c->matched++;
			else
				c->matched = ch == 'K';
			if (c->matched == 8) {
				i++;
				goto done;
			}
			break;
		case CONT_SHAPE:
			if (!nv_token_continues(&c->token, ch))
				goto done;
			break;
		case CONT_NONE:
		case CONT_PEM_LINES: goto done;
		}
	}
	return len;
done:
	memset(c, 0, sizeof(*c));
	return i;
}

/* "<redacted:KIND>" for shape k (an enum shape, then the table's rows). */
void redact_emit_shape_label(int32_t k, nv_redact_emit_fn emit, void *payload)
{
	const char *rule;

	if (k < SH_COUNT) {
		emit(shape_labels[k], strlen(shape_labels[k]), payload);
		return;
	}
	rule = nv_token_shapes[k - SH_COUNT].rule;
	emit("<redacted:", 10, payload);
	emit(rule, strlen(rule), payload);
	emit(">", 1, payload);
}
