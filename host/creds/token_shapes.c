/* The table of token shapes and its matcher (see token_shapes.h). Adding
 * a row here teaches both the redactor and the scanner; tests/unit/
 * test_redact.c and test_scan.c walk the whole table. */
#include "creds/token_shapes.h"

#include <pthread.h>
#include <string.h>

/* A JWT's header run at which the matcher gives up waiting for its '.'
 * (LONG), leaving room for the payload it must then see. */
#define JWT_HEADER_MIN  10
#define JWT_PAYLOAD_MIN 8
#define JWT_HEADER_MAX  (NV_TOKEN_DECIDE_MAX - JWT_PAYLOAD_MIN - 1)

/* GitHub documents its tokens as up to 255 characters and others give no
 * bound: those runs are taken whole, at any length. Rows that share a
 * first byte are kept together (the matcher looks at that group only). */
const nv_token_shape nv_token_shapes[] = {
	{"ghp_", NV_TOKEN_ALNUM, 30, 0, "github-token",
	 "GitHub personal token"},
	{"gho_", NV_TOKEN_ALNUM, 30, 0, "github-token", "GitHub OAuth token"},
	{"ghs_", NV_TOKEN_ALNUM, 30, 0, "github-token", "GitHub app token"},
	{"ghu_", NV_TOKEN_ALNUM, 30, 0, "github-token", "GitHub user token"},
	{"ghr_", NV_TOKEN_ALNUM, 30, 0, "github-token", "GitHub refresh token"},
	{"github_pat_", NV_TOKEN_ALNUM_UNDERSCORE, 22, 0, "github-token",
	 "GitHub fine-grained token"},
	{"glpat-", NV_TOKEN_B64URL, 20, 0, "gitlab-token",
	 "GitLab personal token"},
	{"xoxb-", NV_TOKEN_ALNUM_DASH, 10, 0, "slack-token", "Slack bot token"},
	{"xoxa-", NV_TOKEN_ALNUM_DASH, 10, 0, "slack-token", "Slack app token"},
	{"xoxp-", NV_TOKEN_ALNUM_DASH, 10, 0, "slack-token",
	 "Slack user token"},
	{"xoxr-", NV_TOKEN_ALNUM_DASH, 10, 0, "slack-token",
	 "Slack refresh token"},
	{"xoxs-", NV_TOKEN_ALNUM_DASH, 10, 0, "slack-token", "Slack token"},
	{"xoxe-", NV_TOKEN_ALNUM_DASH, 10, 0, "slack-token",
	 "Slack configuration token"},
	{"sk_live_", NV_TOKEN_ALNUM, 16, 0, "stripe-key",
	 "Stripe live secret key"},
	{"rk_live_", NV_TOKEN_ALNUM, 16, 0, "stripe-key",
	 "Stripe live restricted key"},
	{"AIza", NV_TOKEN_B64URL, 35, 35, "google-api-key", "Google API key"},
	{"AKIA", NV_TOKEN_UPPER_DIGIT, 16, 16, "aws-access-key-id",
	 "AWS access key id"},
	{"ASIA", NV_TOKEN_UPPER_DIGIT, 16, 16, "aws-access-key-id",
	 "AWS temporary access key id"},
	/* an OpenSSH certificate's base64: its type as an SSH string (the
	 * whole 3-byte groups of it), then the nonce, key, signature... */
	{"AAAAIHNzaC1lZDI1NTE5LWNlcnQtdjAxQG9wZW5zc2guY29t", NV_TOKEN_B64, 100,
	 0, "ssh-certificate", "OpenSSH ssh-ed25519 certificate"},
	{"AAAAHHNzaC1yc2EtY2VydC12MDFAb3BlbnNzaC5j", NV_TOKEN_B64, 100, 0,
	 "ssh-certificate", "OpenSSH ssh-rsa certificate"},
	{"AAAAKGVjZHNhLXNoYTItbmlzdHAyNTYtY2VydC12MDFAb3BlbnNzaC5j",
	 NV_TOKEN_B64, 100, 0, "ssh-certificate",
	 "OpenSSH ecdsa-sha2-nistp256 certificate"},
	{"AAAAKGVjZHNhLXNoYTItbmlzdHAzODQtY2VydC12MDFAb3BlbnNzaC5j",
	 NV_TOKEN_B64, 100, 0, "ssh-certificate",
	 "OpenSSH ecdsa-sha2-nistp384 certificate"},
	{"AAAAKGVjZHNhLXNoYTItbmlzdHA1MjEtY2VydC12MDFAb3BlbnNzaC5j",
	 NV_TOKEN_B64, 100, 0, "ssh-certificate",
	 "OpenSSH ecdsa-sha2-nistp521 certificate"},
	{"AAAAI3NrLXNzaC1lZDI1NTE5LWNlcnQtdjAxQG9wZW5zc2guY29t", NV_TOKEN_B64,
	 100, 0, "ssh-certificate", "OpenSSH sk-ssh-ed25519 certificate"},
	{"AAAAK3NrLWVjZHNhLXNoYTItbmlzdHAyNTYtY2VydC12MDFAb3BlbnNzaC5j",
	 NV_TOKEN_B64, 100, 0, "ssh-certificate",
	 "OpenSSH sk-ecdsa-sha2-nistp256 certificate"},
	{"eyJ", NV_TOKEN_JWT, JWT_HEADER_MIN - 3, 0, "jwt", "JSON Web Token"},
};

_Static_assert(sizeof(nv_token_shapes) / sizeof(nv_token_shapes[0]) ==
		       NV_TOKEN_SHAPE_COUNT,
	       "NV_TOKEN_SHAPE_COUNT is the number of rows");
_Static_assert(NV_TOKEN_SHAPE_COUNT < 256, "row indexes fit a byte");

static int is_upper(unsigned c)
{
	return c >= 'A' && c <= 'Z';
}

static int is_digit(unsigned c)
{
	return c >= '0' && c <= '9';
}

static int is_alnum(unsigned c)
{
	return is_upper(c) || (c >= 'a' && c <= 'z') || is_digit(c);
}

static int in_charset(enum nv_token_charset cs, unsigned c)
{
	switch (cs) {
	case NV_TOKEN_ALNUM: return is_alnum(c);
	case NV_TOKEN_ALNUM_UNDERSCORE: return is_alnum(c) || c == '_';
	case NV_TOKEN_ALNUM_DASH: return is_alnum(c) || c == '-';
	case NV_TOKEN_B64URL:
	case NV_TOKEN_JWT: return is_alnum(c) || c == '-' || c == '_';
	case NV_TOKEN_UPPER_DIGIT: return is_upper(c) || is_digit(c);
	case NV_TOKEN_B64: return is_alnum(c) || c == '+' || c == '/';
	}
	return 0;
}

/* A shape does not start inside a word or inside a longer run. */
static int starts_here(const nv_token_shape *t, int prev)
{
	unsigned p = (unsigned)prev;

	if (prev < 0)
		return 1;
	if (is_alnum(p) || p == '_' || in_charset(t->charset, p))
		return 0;
	return !(t->charset == NV_TOKEN_JWT && p == '.');
}

/* Per byte value, the rows whose prefix starts with it: [first, end). */
static struct {
	unsigned char first, end;
} groups[256];
static pthread_once_t groups_once = PTHREAD_ONCE_INIT;
/* 1 per byte value a row's prefix starts with (for scanners' loops). */
static unsigned char starts[256];

static void groups_init(void)
{
	for (size_t k = NV_TOKEN_SHAPE_COUNT; k-- > 0;) {
		unsigned c = (unsigned char)nv_token_shapes[k].prefix[0];
		if (groups[c].end == 0)
			groups[c].end = (unsigned char)(k + 1);
		groups[c].first = (unsigned char)k;
		starts[c] = 1;
	}
}

const unsigned char *nv_token_starts(void)
{
	pthread_once(&groups_once, groups_init);
	return starts;
}

int nv_token_may_start(unsigned ch)
{
	pthread_once(&groups_once, groups_init);
	return ch < 256 && groups[ch].end != 0;
}

int nv_token_continues(nv_token_run *run, unsigned ch)
{
	const nv_token_shape *t = run->shape;

	if (in_charset(t->charset, ch))
		return 1;
	if (t->charset == NV_TOKEN_JWT && ch == '.' && run->dots < 2) {
		run->dots++;
		return 1;
	}
	return 0;
}

/* Follows the run from s[from] on: where it ends within s[0..n). */
static size_t run_end(nv_token_run *run, const unsigned char *s, size_t from,
		      size_t n)
{
	while (from < n && nv_token_continues(run, s[from]))
		from++;
	return from;
}

/* A prefix and a run of one class. */
static enum nv_token_result match_run(const nv_token_shape *t,
				      const unsigned char *s, size_t n,
				      int complete, size_t *len)
{
	size_t pl = strlen(t->prefix), j = pl, got;

	while (j < n && in_charset(t->charset, s[j]) &&
	       (t->max == 0 || j - pl <= t->max))
		j++;
	got = j - pl;
	if (t->max && got > t->max)
		return NV_TOKEN_NONE;
	if (j == n && !complete) {
		/* a bounded shape must be seen to end; an unbounded one is
		 * a token once min characters came, however long it goes */
		if (t->max || got < t->min)
			return NV_TOKEN_SHORT;
	} else if (got < t->min || (j < n && is_alnum(s[j]))) {
		return NV_TOKEN_NONE;
	}
	*len = j;
	return NV_TOKEN_FOUND;
}

/* "eyJ" header '.' payload ['.' signature]. */
static enum nv_token_result match_jwt(const unsigned char *s, size_t n,
				      int complete, size_t *len,
				      nv_token_run *run)
{
	size_t j = 3, p;

	while (j < n && in_charset(NV_TOKEN_JWT, s[j])) {
		if (++j >= JWT_HEADER_MAX) {
			*len = run_end(run, s, j, n);
			return NV_TOKEN_LONG;
		}
	}
	if (j == n)
		return complete ? NV_TOKEN_NONE : NV_TOKEN_SHORT;
	if (s[j] != '.' || j < JWT_HEADER_MIN)
		return NV_TOKEN_NONE;
	for (p = j + 1; p < n && p - j - 1 < JWT_PAYLOAD_MIN &&
			in_charset(NV_TOKEN_JWT, s[p]);
	     p++)
		;
	if (p - j - 1 < JWT_PAYLOAD_MIN) {
		if (p == n && !complete)
			return NV_TOKEN_SHORT;
		return NV_TOKEN_NONE;
	}
	run->dots = 1;
	*len = run_end(run, s, p, n);
	return NV_TOKEN_FOUND;
}

enum nv_token_result nv_token_match(const unsigned char *s, size_t n, int prev,
				    int complete, const nv_token_shape **shape,
				    size_t *len, nv_token_run *run)
{
	enum nv_token_result best = NV_TOKEN_NONE, r;

	if (n == 0)
		return complete ? NV_TOKEN_NONE : NV_TOKEN_SHORT;
	/* inside a word: no row starts (see starts_here()) */
	if (prev >= 0 && (is_alnum((unsigned)prev) || prev == '_'))
		return NV_TOKEN_NONE;
	if (!nv_token_may_start(s[0]))
		return NV_TOKEN_NONE;
	for (size_t k = groups[s[0]].first; k < groups[s[0]].end; k++) {
		const nv_token_shape *t = &nv_token_shapes[k];
		size_t m = 0;

		while (t->prefix[m] && m < n &&
		       (unsigned char)t->prefix[m] == s[m])
			m++;
		if ((t->prefix[m] && m < n) || !starts_here(t, prev))
			continue;
		if (t->prefix[m]) { /* s ends inside the prefix */
			if (!complete)
				best = NV_TOKEN_SHORT;
			continue;
		}
		run->shape = t;
		run->dots = 0;
		r = t->charset == NV_TOKEN_JWT
			    ? match_jwt(s, n, complete, len, run)
			    : match_run(t, s, n, complete, len);
		if (r == NV_TOKEN_FOUND || r == NV_TOKEN_LONG) {
			*shape = t;
			return r;
		}
		if (r == NV_TOKEN_SHORT)
			best = r;
	}
	return best;
}
