/* The secrets a job declares (`secrets = { HF_TOKEN = "hub" }`), as the
 * job gets them: one file per variable, mode 0400, in a folder that lives
 * as long as the job. What a file holds per kind of credential, where the
 * folder of a local job is made (a tmpfs where the system has one) and
 * how it is removed. Pure C: the values come from an nv_secret and are
 * written straight to the file, never through a string of Lua. */
#ifndef NV_JOB_SECRETS_H
#define NV_JOB_SECRETS_H

#include <stddef.h>

#include "core/nv_err.h"
#include "creds/secret.h"

/* The most secrets one job declares (job.lua checks it first). */
#define NV_JOB_SECRETS_MAX 32

/* The folder of the local jobs' secret folders, made (0700, the user's,
 * no link) if needed, into out: $XDG_RUNTIME_DIR/navette-secrets when it
 * is set and the user's, else /dev/shm/navette-secrets-UID, else
 * HOME/secrets (navette's home: on disk, still 0700). */
int nv_job_secrets_root(const char *home, char *out, size_t cap, nv_err *err);

/* The folders nv_job_secrets_root may have made that exist now (none is
 * made), into roots[0..*count). */
int nv_job_secrets_roots(const char *home, char roots[][4096], int cap,
			 int *count);

/* ROOT/ID, made empty (0700) into out: a folder left by an earlier try of
 * the same submission is emptied first. */
int nv_job_secrets_dir_make(const char *root, const char *id, char *out,
			    size_t cap, nv_err *err);

/* Writes the file DIR/NAME (mode 0400, created, never through a link)
 * holding what a job reads for s: a bearer's token, "user:password" for
 * basic, an hs256 key's bytes, a PEM key's text, and for s3 one line of
 * JSON in the form of AWS's credential_process: {"Version":1,
 * "AccessKeyId":...,"SecretAccessKey":...[,"SessionToken":...]}. */
int nv_job_secret_write(const char *dir, const char *name, const nv_secret *s,
			nv_err *err);

/* Whether path may be a job's secrets folder: ".../navette-secrets(-UID)
 * /ID" or ".../secrets/ID" with ID a job id and id when given. */
int nv_job_secrets_dir_ok(const char *path, const char *id);

/* Removes a job's secrets folder (missing is fine); refuses a path that is
 * not one (nv_job_secrets_dir_ok). */
int nv_job_secrets_remove(const char *path, const char *id, nv_err *err);

/* For a job on another machine (Slurm): the value of s, as the file would
 * hold it, encrypted into path in the format of `openssl enc
 * -aes-256-ctr -pbkdf2 -md sha256 -iter NV_JOB_SECRET_ITER` ("Salted__",
 * 8 bytes of salt, the cipher text), with a password drawn here: 64 hex
 * characters written into pass_hex (65 bytes), which only the job's
 * launcher carries; the node decrypts with `openssl enc -d ... -pass
 * env:VAR`. The object alone tells nothing. */
#define NV_JOB_SECRET_PASS_BYTES 32
#define NV_JOB_SECRET_ITER       10000
int nv_job_secret_seal(const nv_secret *s, const char *path, char *pass_hex,
		       nv_err *err);

#endif
