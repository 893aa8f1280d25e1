/* slurmrestd client (see slurm.h): sessions. A session discovers the API
 * version, holds the identity (a pre-issued token, or JWTs minted from
 * the cluster's key and renewed before they expire) and makes the calls:
 * submit, job, jobs, find, cancel, requeue. The JSON of each version is
 * slurm_protocol.c's, job descriptions slurm_desc.c's. Answers are
 * hostile input. Pure C, no Lua. */
#include "jobs/slurm.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "core/clock.h"
#include "creds/jwt.h"
#include "jobs/slurm_internal.h"

#define URL_MAX       2048
#define LIST_BODY_MAX ((size_t)64 * 1024 * 1024)
#define TOKEN_RENEW_MARGIN                                                     \
	30.0             /* seconds before exp a minted token is renewed */
#define CLOCK_SLACK 60.0 /* seconds of skew tolerated on a token's life */

/* ---- sessions ----------------------------------------------------------- */

struct nv_slurm {
	char *endpoint; /* no trailing slash */
	char *user;
	char bound_host[300]; /* host[:port] the token is bound to */
	const struct slurm_api *api;
	nv_http_session *http;
	nv_http_policy policy;
	const nv_secret *credential;
	nv_secret *minted; /* owned: the current minted token */
	double lifespan, max;
	double token_exp; /* 0: unknown */
	long requests;
	long last_status; /* HTTP status of the last call; 0: no answer */
};

/* Reads exp and sun from a JWT's payload (not verified: slurmctld does
 * that); both optional. */
static void jwt_claims(const nv_secret *token, double *exp, char *sun,
		       size_t cap)
{
	const nv_secret_field *f = nv_secret_get(token, "token");
	const char *a, *b;
	unsigned char *raw = NULL;
	char *b64 = NULL;
	size_t n, padded;
	int out;
	cJSON *claims;

	*exp = 0;
	sun[0] = '\0';
	if (!f || !(a = memchr(f->value, '.', f->len)))
		return;
	a++;
	b = memchr(a, '.', f->len - (size_t)(a - (const char *)f->value));
	if (!b || b == a || b - a > 8192)
		return;
	n = (size_t)(b - a);
	padded = (n + 3) / 4 * 4;
	b64 = malloc(padded + 1);
	raw = malloc(padded + 1);
	if (!b64 || !raw)
		goto out;
	for (size_t i = 0; i < padded; i++)
		b64[i] = i < n ? (a[i] == '-'   ? '+'
				  : a[i] == '_' ? '/'
						: a[i])
			       : '=';
	b64[padded] = '\0';
	out = EVP_DecodeBlock(raw, (const unsigned char *)b64, (int)padded);
	if (out <= 0)
		goto out;
	while (out > 0 && raw[out - 1] == '\0')
		out--; /* padding bytes decoded as zeros */
	claims = cJSON_ParseWithLength((const char *)raw, (size_t)out);
	if (cJSON_IsObject(claims)) {
		*exp = slurm_number_in(
			cJSON_GetObjectItemCaseSensitive(claims, "exp"), 1,
			1e11, 0);
		slurm_copy_text(
			sun, cap,
			cJSON_GetObjectItemCaseSensitive(claims, "sun"));
		if (!sun[0])
			slurm_copy_text(sun, cap,
					cJSON_GetObjectItemCaseSensitive(
						claims, "username"));
	}
	cJSON_Delete(claims);
out:
	if (b64)
		OPENSSL_cleanse(b64, padded);
	if (raw)
		OPENSSL_cleanse(raw, padded);
	free(b64);
	free(raw);
}

static void iso_or_unknown(double t, char out[32])
{
	if (t > 0)
		nv_iso8601(t, out);
	else
		snprintf(out, 32, "unknown");
}

/* The token to send now: a pre-issued one, or a minted one renewed when
 * it is about to expire. An expired pre-issued token is refused here. */
static int current_token(nv_slurm *s, const nv_secret **out, nv_err *err)
{
	double now = nv_now();
	char when[32];

	*out = NULL;
	if (s->credential->kind == NV_SECRET_BEARER) {
		if (s->token_exp > 0 && s->token_exp <= now) {
			iso_or_unknown(s->token_exp, when);
			return nv_err_set(err, NV_EREFUSED,
					  "issue a new token (scontrol token "
					  "lifespan=SECONDS) or let navette "
					  "mint them from the cluster's key",
					  "the Slurm token %s expired at %s",
					  s->credential->name, when);
		}
		*out = s->credential;
		return 0;
	}
	if (!s->minted || s->minted->expires_at - now <
				  fmin(TOKEN_RENEW_MARGIN, s->lifespan / 4)) {
		cJSON *claims = cJSON_CreateObject();
		char *text = NULL, name[NV_SECRET_NAME_MAX + 1];
		nv_secret *fresh = NULL;
		int rc;

		if (!claims ||
		    !cJSON_AddStringToObject(claims, "sun", s->user) ||
		    !(text = cJSON_PrintUnformatted(claims))) {
			cJSON_Delete(claims);
			return nv_err_set(err, NV_ENOMEM, NULL,
					  "out of memory");
		}
		cJSON_Delete(claims);
		snprintf(name, sizeof(name), "slurm-jwt:%.40s", s->user);
		rc = nv_jwt_mint_hs256(s->credential, name, text, s->lifespan,
				       &fresh, err);
		free(text);
		if (rc)
			return rc;
		nv_secret_free(s->minted);
		s->minted = fresh;
		s->token_exp = fresh->expires_at;
	}
	*out = s->minted;
	return 0;
}

/* Adds what is known of the token to an identity error's message. */
static void identity_detail(nv_slurm *s, nv_err *err)
{
	char when[32];
	size_t used = strlen(err->message);

	iso_or_unknown(s->token_exp, when);
	snprintf(err->message + used, sizeof(err->message) - used,
		 " [slurmrestd %s, user %s, %s token %s valid until %s]",
		 s->endpoint, s->user,
		 s->credential->kind == NV_SECRET_HS256 ? "minted" : "given",
		 s->credential->kind == NV_SECRET_HS256 ? s->minted->name
							: s->credential->name,
		 when);
}

/* One request: path under the endpoint, optional JSON body. On 0, *resp
 * holds a 2xx answer (the caller frees it); otherwise resp is freed and
 * err says why. *slurm_errno: the first Slurm error number, if any. */
static int call(nv_slurm *s, const char *method, const char *path,
		const char *body, const char *what, size_t max_body,
		nv_http_response *resp, int *slurm_errno, nv_err *err)
{
	char url[URL_MAX], user_header[200];
	const char *headers[3];
	const nv_secret *token;
	nv_http_policy policy = s->policy;
	nv_http_request req;
	int rc, n = 0;

	/* slurmrestd answers in well under a second: one that sends nothing
	 * for 20 s is stalled, and the caller says so (and what to check)
	 * instead of waiting for the total timeout */
	policy.stall_timeout_ms = 20000;

	memset(resp, 0, sizeof(*resp));
	if (slurm_errno)
		*slurm_errno = 0;
	rc = current_token(s, &token, err);
	if (rc)
		return rc;
	if ((size_t)snprintf(url, sizeof(url), "%s%s", s->endpoint, path) >=
	    sizeof(url))
		return nv_err_set(err, NV_EINVAL, NULL, "URL too long");
	snprintf(user_header, sizeof(user_header), "X-SLURM-USER-NAME: %s",
		 s->user);
	headers[n++] = user_header;
	headers[n++] = "Accept: application/json";
	if (body)
		headers[n++] = "Content-Type: application/json";
	if (max_body)
		policy.max_body = max_body;
	memset(&req, 0, sizeof(req));
	req.method = method;
	req.url = url;
	req.headers = headers;
	req.nheaders = (size_t)n;
	req.body = body;
	req.body_len = body ? strlen(body) : 0;
	req.credential = token;
	req.credential_host = s->bound_host;
	req.credential_header = "X-SLURM-USER-TOKEN";
	req.max_redirects = 0; /* a redirect is an error, never followed */
	s->requests++;
	s->last_status = 0;
	rc = nv_http_session_perform(s->http, &policy, &req, resp, err);
	if (rc == 0)
		s->last_status = resp->status;
	if (rc) {
		nv_http_response_free(resp);
		return rc;
	}
	rc = nv_slurm_classify(resp->status, resp->body.data, resp->body.len,
			       what, slurm_errno, err);
	if (rc) {
		if (rc == NV_EREFUSED &&
		    strcmp(err->hint, slurm_identity_hint) == 0)
			identity_detail(s, err);
		nv_http_response_free(resp);
	}
	return rc;
}

/* endpoint -> the host[:port] a token is bound to, and the base URL. */
static int endpoint_parse(nv_slurm *s, const char *endpoint, nv_err *err)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL;
	size_t n;
	int rc = 0;

	if (!u)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	if (curl_url_set(u, CURLUPART_URL, endpoint, 0) ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) ||
	    (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)) {
		rc = nv_err_bad(err, "give https://HOST:PORT of slurmrestd",
				"Slurm REST endpoint", endpoint, 200);
		goto out;
	}
	if (curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT))
		port = NULL;
	if (curl_url_get(u, CURLUPART_QUERY, &path, 0) == CURLUE_OK ||
	    (curl_url_get(u, CURLUPART_USER, &path, 0) == CURLUE_OK)) {
		rc = nv_err_set(err, NV_EINVAL,
				"give https://HOST:PORT[/PATH] only",
				"the Slurm REST endpoint may not carry a query "
				"or user info");
		goto out;
	}
	snprintf(s->bound_host, sizeof(s->bound_host), "%s%s%s", host,
		 port ? ":" : "", port ? port : "");
	s->endpoint = strdup(endpoint);
	if (!s->endpoint) {
		rc = nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
		goto out;
	}
	n = strlen(s->endpoint);
	while (n > 0 && s->endpoint[n - 1] == '/')
		s->endpoint[--n] = '\0';
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_free(path);
	curl_url_cleanup(u);
	return rc;
}

/* The versions slurmrestd says it serves (from /openapi/v3), for the
 * message when none of ours is among them. */
static void served_versions(nv_slurm *s, char *out, size_t cap)
{
	nv_http_response resp;
	nv_err ignored;
	const char *p;
	size_t used = 0;

	snprintf(out, cap, "unknown");
	if (call(s, "GET", "/openapi/v3", NULL, "OpenAPI query", 0, &resp, NULL,
		 &ignored))
		return;
	out[0] = '\0';
	for (p = resp.body.data; p && (p = strstr(p, "slurm\\/v"));) {
		const char *v = p + 7, *end = v;

		while (*end && (isalnum((unsigned char)*end) || *end == '.'))
			end++;
		if (end - v < 16 && used + (size_t)(end - v) + 3 < cap) {
			char one[20];

			snprintf(one, sizeof(one), "%.*s", (int)(end - v), v);
			if (!strstr(out, one))
				used += (size_t)snprintf(out + used, cap - used,
							 "%s%s",
							 used ? ", " : "", one);
		}
		p = end;
	}
	if (!out[0])
		snprintf(out, cap, "none listed");
	nv_http_response_free(&resp);
}

static int discover(nv_slurm *s, const char *wanted, nv_err *err)
{
	char path[64], served[200];
	nv_http_response resp;
	int rc;

	for (size_t i = 0; i < slurm_api_count; i++) {
		if (wanted && strcmp(wanted, slurm_apis[i].name) != 0)
			continue;
		snprintf(path, sizeof(path), "/slurm/%s/ping",
			 slurm_apis[i].name);
		s->api = &slurm_apis[i];
		rc = call(s, "GET", path, NULL, "ping", 0, &resp, NULL, err);
		if (rc == 0) {
			nv_http_response_free(&resp);
			return 0;
		}
		if (rc != NV_ENOTFOUND)
			return rc; /* identity, network: the same for all */
	}
	s->api = NULL;
	served_versions(s, served, sizeof(served));
	return nv_err_set(err, NV_EBACKEND,
			  "navette speaks v0.0.38; start slurmrestd with one "
			  "of them (-s), or upgrade navette",
			  "slurmrestd at %s serves no API version navette "
			  "speaks (it serves: %s)",
			  s->endpoint, served);
}

int nv_slurm_open(nv_slurm **out, const nv_slurm_config *cfg, nv_err *err)
{
	nv_slurm *s;
	char sun[64];
	int rc;

	*out = NULL;
	if (!cfg || !cfg->endpoint || !cfg->user || !cfg->credential)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "a Slurm session needs an endpoint, a user "
				  "and a credential");
	if (!slurm_word_ok(cfg->user, "@") || strlen(cfg->user) > 63)
		return nv_err_bad(err, NULL, "Slurm user name", cfg->user, 64);
	if (cfg->credential->kind != NV_SECRET_BEARER &&
	    cfg->credential->kind != NV_SECRET_HS256)
		return nv_err_set(err, NV_EINVAL,
				  "give a token (kind bearer) or the cluster's "
				  "JWT key (kind hs256)",
				  "credential %s (%s) cannot authenticate to "
				  "slurmrestd",
				  cfg->credential->name,
				  nv_secret_kind_name(cfg->credential->kind));
	if (cfg->token_lifespan_s < 0 || cfg->token_max_s < 0 ||
	    !isfinite(cfg->token_lifespan_s) || !isfinite(cfg->token_max_s))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "token lifespans are seconds >= 0");
	if (cfg->api_version && !slurm_api_find(cfg->api_version, err))
		return NV_EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	s->credential = cfg->credential;
	s->policy = cfg->policy;
	if (!s->policy.max_body)
		s->policy.max_body = NV_HTTP_MAX_BODY_DEFAULT;
	s->max = cfg->token_max_s > 0 ? cfg->token_max_s
				      : NV_SLURM_TOKEN_MAX_DEFAULT;
	s->lifespan = cfg->token_lifespan_s > 0
			      ? cfg->token_lifespan_s
			      : NV_SLURM_TOKEN_LIFESPAN_DEFAULT;
	if (s->lifespan > s->max)
		s->lifespan = s->max;
	s->user = strdup(cfg->user);
	if (!s->user) {
		rc = nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
		goto fail;
	}
	rc = endpoint_parse(s, cfg->endpoint, err);
	if (rc)
		goto fail;
	if (s->credential->kind == NV_SECRET_BEARER) {
		jwt_claims(s->credential, &s->token_exp, sun, sizeof(sun));
		if (s->token_exp > 0 &&
		    s->token_exp - nv_now() > s->max + CLOCK_SLACK) {
			rc = nv_err_set(err, NV_EREFUSED,
					"issue a shorter token (scontrol token "
					"lifespan=SECONDS)",
					"the Slurm token %s lives %.0f s more, "
					"over the profile's maximum of %.0f s",
					s->credential->name,
					s->token_exp - nv_now(), s->max);
			goto fail;
		}
		s->lifespan = 0;
	} else if (!nv_secret_get(s->credential, "key")) {
		rc = nv_err_set(err, NV_EINVAL, NULL,
				"credential %s holds no key",
				s->credential->name);
		goto fail;
	}
	s->http = nv_http_session_new(err);
	if (!s->http) {
		rc = err ? err->code : NV_ENOMEM;
		goto fail;
	}
	rc = discover(s, cfg->api_version, err);
	if (rc)
		goto fail;
	*out = s;
	return 0;
fail:
	nv_slurm_close(s);
	return rc;
}

void nv_slurm_close(nv_slurm *s)
{
	if (!s)
		return;
	nv_http_session_free(s->http);
	nv_secret_free(s->minted);
	free(s->endpoint);
	free(s->user);
	free(s);
}

int nv_slurm_set_credential(nv_slurm *s, const nv_secret *credential,
			    nv_err *err)
{
	char sun[64];

	if (!credential || credential->kind != s->credential->kind)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "a Slurm session keeps the kind of "
				  "credential it was opened with");
	if (credential != s->credential && credential->kind == NV_SECRET_BEARER)
		jwt_claims(credential, &s->token_exp, sun, sizeof(sun));
	s->credential = credential;
	return 0;
}

const char *nv_slurm_version(const nv_slurm *s)
{
	return s && s->api ? s->api->name : NULL;
}

double nv_slurm_token_lifespan(const nv_slurm *s)
{
	return s ? s->lifespan : 0;
}

long nv_slurm_connections(const nv_slurm *s)
{
	return s ? nv_http_session_connections(s->http) : 0;
}

long nv_slurm_requests(const nv_slurm *s)
{
	return s ? s->requests : 0;
}

int nv_slurm_submit(nv_slurm *s, const char *script, const nv_slurm_job_desc *d,
		    long long *job_id, nv_err *err)
{
	char path[64], *json = NULL;
	nv_http_response resp;
	int rc;

	*job_id = 0;
	rc = nv_slurm_build_submit(s->api->name, script, d, &json, err);
	if (rc)
		return rc;
	snprintf(path, sizeof(path), "/slurm/%s/job/submit", s->api->name);
	rc = call(s, "POST", path, json, "submit", 0, &resp, NULL, err);
	/* the body may hold presigned URLs in the environment */
	OPENSSL_cleanse(json, strlen(json));
	free(json);
	if (rc)
		return rc;
	rc = nv_slurm_parse_submit(s->api->name, resp.body.data, resp.body.len,
				   job_id, err);
	nv_http_response_free(&resp);
	return rc;
}

int nv_slurm_submit_refused(const nv_slurm *s)
{
	return s->last_status >= 400 && s->last_status < 500;
}

int nv_slurm_job_get(nv_slurm *s, long long job_id, nv_slurm_job *job,
		     nv_err *err)
{
	char path[80];
	nv_http_response resp;
	nv_slurm_job *jobs = NULL;
	size_t n = 0;
	int rc;

	memset(job, 0, sizeof(*job));
	if (job_id <= 0)
		return nv_err_set(err, NV_EINVAL, NULL, "bad Slurm job id");
	snprintf(path, sizeof(path), "/slurm/%s/job/%lld", s->api->name,
		 job_id);
	rc = call(s, "GET", path, NULL, "job query", 0, &resp, NULL, err);
	if (rc)
		return rc;
	rc = nv_slurm_parse_jobs(s->api->name, resp.body.data, resp.body.len,
				 16, &jobs, &n, err);
	nv_http_response_free(&resp);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++) {
		if (jobs[i].job_id == job_id) {
			*job = jobs[i];
			free(jobs);
			return 0;
		}
	}
	free(jobs);
	return nv_err_set(err, NV_ENOTFOUND, NULL,
			  "slurmrestd's answer does not hold job %lld", job_id);
}

int nv_slurm_jobs(nv_slurm *s, nv_slurm_job **jobs, size_t *njobs, nv_err *err)
{
	char path[64];
	nv_http_response resp;
	size_t n = 0, kept = 0;
	int rc;

	*jobs = NULL;
	*njobs = 0;
	snprintf(path, sizeof(path), "/slurm/%s/jobs", s->api->name);
	rc = call(s, "GET", path, NULL, "job listing", LIST_BODY_MAX, &resp,
		  NULL, err);
	if (rc)
		return rc;
	rc = nv_slurm_parse_jobs(s->api->name, resp.body.data, resp.body.len, 0,
				 jobs, &n, err);
	nv_http_response_free(&resp);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++)
		if (strcmp((*jobs)[i].user, s->user) == 0)
			(*jobs)[kept++] = (*jobs)[i];
	*njobs = kept;
	return 0;
}

int nv_slurm_find(nv_slurm *s, const char *name, const char *comment,
		  nv_slurm_job *job, int *matches, nv_err *err)
{
	nv_slurm_job *jobs = NULL;
	size_t n = 0;
	int count = 0, rc;
	long long best = 0;

	memset(job, 0, sizeof(*job));
	if (matches)
		*matches = 0;
	if (!name && !comment)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "find a Slurm job by name or comment");
	rc = nv_slurm_jobs(s, &jobs, &n, err);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++) {
		if ((name && strcmp(jobs[i].name, name) != 0) ||
		    (comment && strcmp(jobs[i].comment, comment) != 0))
			continue;
		count++;
		if (jobs[i].job_id > best) {
			best = jobs[i].job_id;
			*job = jobs[i];
		}
	}
	free(jobs);
	if (matches)
		*matches = count;
	if (!count)
		return nv_err_set(
			err, NV_ENOTFOUND, NULL,
			"no Slurm job of user %s named '%.80s'%s%.80s%s",
			s->user, name ? name : "*",
			comment ? " with comment '" : "",
			comment ? comment : "", comment ? "'" : "");
	return 0;
}

/* DELETE of path (a job, or a task of an array): Slurm's refusal with
 * one of the errnos done_errnos lists (0 ends the list) means it had
 * already ended, which is no error (*was_done set). */
static int cancel_path(nv_slurm *s, const char *path, const int *done_errnos,
		       int *was_done, nv_err *err)
{
	nv_http_response resp;
	int rc, slurm_errno = 0;

	rc = call(s, "DELETE", path, NULL, "cancel", 0, &resp, &slurm_errno,
		  err);
	for (size_t i = 0; rc == NV_EREFUSED && done_errnos[i]; i++) {
		if (slurm_errno != done_errnos[i])
			continue;
		if (was_done)
			*was_done = 1;
		nv_err_clear(err);
		return 0;
	}
	if (rc)
		return rc;
	nv_http_response_free(&resp);
	return 0;
}

int nv_slurm_cancel(nv_slurm *s, long long job_id, int *was_done, nv_err *err)
{
	static const int done[] = {NV_SLURM_ERRNO_ALREADY_DONE, 0};
	char path[80];

	if (was_done)
		*was_done = 0;
	if (job_id <= 0)
		return nv_err_set(err, NV_EINVAL, NULL, "bad Slurm job id");
	snprintf(path, sizeof(path), "/slurm/%s/job/%lld", s->api->name,
		 job_id);
	return cancel_path(s, path, done, was_done, err);
}

int nv_slurm_requeue(nv_slurm *s, long long job_id, nv_err *err)
{
	if (job_id <= 0)
		return nv_err_set(err, NV_EINVAL, NULL, "bad Slurm job id");
	if (s->api->requeue)
		return s->api->requeue(s, job_id, err);
	return nv_err_set(err, NV_EREFUSED, s->api->no_requeue,
			  "slurmrestd %s cannot requeue job %lld", s->api->name,
			  job_id);
}

/* ---- accounting --------------------------------------------------------- */

static int db_path_ok(const char *path)
{
	size_t n = path ? strlen(path) : 0;

	if (n == 0 || n > 200 || strstr(path, ".."))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)path[i]) &&
		    !strchr("_/.-?=&,", path[i]))
			return 0;
	return 1;
}

int nv_slurm_db(nv_slurm *s, const char *method, const char *path,
		const char *body, char **out, nv_err *err)
{
	char url[300], what[260];
	nv_http_response resp;
	int rc;

	*out = NULL;
	if (!db_path_ok(path))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "slurmdb: a path of [A-Za-z0-9_/.-?=&,], "
				  "without '..'");
	if (strcmp(method, "GET") != 0 && strcmp(method, "POST") != 0 &&
	    strcmp(method, "DELETE") != 0)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "slurmdb: GET, POST or DELETE");
	snprintf(url, sizeof(url), "/slurmdb/%s/%s", s->api->name, path);
	snprintf(what, sizeof(what), "accounting request %s %s", method, path);
	rc = call(s, method, url, body, what, NV_SLURM_DB_MAX, &resp, NULL,
		  err);
	if (rc)
		return rc;
	*out = malloc(resp.body.len + 1);
	if (!*out) {
		nv_http_response_free(&resp);
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	}
	memcpy(*out, resp.body.data ? resp.body.data : "", resp.body.len);
	(*out)[resp.body.len] = '\0';
	nv_http_response_free(&resp);
	return 0;
}

/* ---- job arrays ------------------------------------------------------- */

int nv_slurm_task_listed(const char *tasks, long task)
{
	const char *p = tasks;

	while (p && *p) {
		char *end;
		long lo = strtol(p, &end, 10), hi = lo, step = 1;

		if (end == p)
			return 0;
		if (*end == '-')
			hi = strtol(end + 1, &end, 10);
		if (*end == ':')
			step = strtol(end + 1, &end, 10);
		if (step < 1)
			step = 1;
		if (task >= lo && task <= hi && (task - lo) % step == 0)
			return 1;
		p = strchr(end, ',');
		if (p)
			p++;
	}
	return 0;
}

/* One GET of path; its jobs, at most max. */
static int get_jobs(nv_slurm *s, const char *path, size_t max,
		    nv_slurm_job **jobs, size_t *n, nv_err *err)
{
	nv_http_response resp;
	int rc = call(s, "GET", path, NULL, "job query", LIST_BODY_MAX, &resp,
		      NULL, err);

	if (rc)
		return rc;
	rc = nv_slurm_parse_jobs(s->api->name, resp.body.data, resp.body.len,
				 max, jobs, n, err);
	nv_http_response_free(&resp);
	return rc;
}

int nv_slurm_task_pick(const nv_slurm_job *jobs, size_t n, long long array_id,
		       long task, nv_slurm_job *job)
{
	const nv_slurm_job *waiting = NULL;

	for (size_t i = 0; i < n; i++) {
		if (jobs[i].array_job_id != array_id)
			continue;
		if (jobs[i].array_task_id == task) {
			*job = jobs[i];
			return 0;
		}
		if (jobs[i].array_task_id < 0 &&
		    nv_slurm_task_listed(jobs[i].array_tasks, task))
			waiting = &jobs[i];
	}
	if (waiting) {
		*job = *waiting;
		job->array_task_id = task;
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (jobs[i].array_job_id != array_id)
			continue;
		*job = jobs[i];
		job->array_task_id = task;
		job->job_id = array_id;
		snprintf(job->state, sizeof(job->state), "CANCELLED");
		snprintf(job->reason, sizeof(job->reason), "None");
		job->nodes[0] = '\0';
		job->start_time = job->end_time = 0;
		job->exit_code = job->exit_signal = 0;
		return 0;
	}
	return -1;
}

int nv_slurm_task_get(nv_slurm *s, long long array_id, long task,
		      nv_slurm_job *job, nv_err *err)
{
	char path[96];
	nv_slurm_job *jobs = NULL;
	size_t n = 0;
	int rc;

	memset(job, 0, sizeof(*job));
	if (array_id <= 0 || task < 0)
		return nv_err_set(err, NV_EINVAL, NULL, "bad Slurm task id");
	/* a started task answers alone; a waiting one only in its array */
	snprintf(path, sizeof(path), "/slurm/%s/job/%lld_%ld", s->api->name,
		 array_id, task);
	rc = get_jobs(s, path, 16, &jobs, &n, err);
	if (rc == 0 && nv_slurm_task_pick(jobs, n, array_id, task, job) == 0 &&
	    job->array_task_id == task && strcmp(job->state, "CANCELLED"))
		goto out;
	free(jobs);
	jobs = NULL;
	snprintf(path, sizeof(path), "/slurm/%s/job/%lld", s->api->name,
		 array_id);
	rc = get_jobs(s, path, 0, &jobs, &n, err);
	if (rc)
		goto out;
	if (nv_slurm_task_pick(jobs, n, array_id, task, job))
		rc = nv_err_set(err, NV_ENOTFOUND, NULL,
				"Slurm has no task %ld of job array %lld", task,
				array_id);
out:
	free(jobs);
	return rc;
}

int nv_slurm_task_cancel(nv_slurm *s, long long array_id, long task,
			 int *was_done, nv_err *err)
{
	/* (a task cancelled before it started is no job any more) */
	static const int done[] = {NV_SLURM_ERRNO_ALREADY_DONE,
				   NV_SLURM_ERRNO_INVALID_JOB_ID, 0};
	char path[96];

	if (was_done)
		*was_done = 0;
	if (array_id <= 0 || task < 0)
		return nv_err_set(err, NV_EINVAL, NULL, "bad Slurm task id");
	snprintf(path, sizeof(path), "/slurm/%s/job/%lld_%ld", s->api->name,
		 array_id, task);
	return cancel_path(s, path, done, was_done, err);
}
