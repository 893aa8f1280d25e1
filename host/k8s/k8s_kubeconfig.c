/* Kubeconfig files (see k8s_kubeconfig.h). Each file is parsed with
 * libyaml's event API into a small tree of maps, lists and scalars
 * (bounded, no aliases), the files are merged by name, and one context is
 * resolved. Every scalar of the tree is wiped when it is freed, since a
 * token or a key may be among them, and so are libyaml's buffers. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <yaml.h>

#include "core/fsutil.h"
#include "k8s/k8s_kubeconfig.h"
#include "ssh/ssh_key.h"

/* ---- a bounded YAML tree ------------------------------------------------ */

enum { Y_SCALAR = 1, Y_MAP, Y_LIST };

typedef struct ynode {
	int kind;
	char *key;   /* in a map: its key */
	char *value; /* scalar */
	size_t len;
	int quoted; /* scalar written in quotes (never a null or bool) */
	struct ynode *child, *last, *next;
} ynode;

typedef struct ydoc {
	ynode *root;
	char folder[NV_K8S_PATH_MAX]; /* for relative paths */
	char origin[NV_K8S_PATH_MAX];
} ydoc;

static void wipe_str(char *s)
{
	if (s) {
		OPENSSL_cleanse(s, strlen(s));
		free(s);
	}
}

static void ynode_free(ynode *n)
{
	while (n) {
		ynode *next = n->next;
		ynode_free(n->child);
		wipe_str(n->key);
		if (n->value) {
			OPENSSL_cleanse(n->value, n->len);
			free(n->value);
		}
		free(n);
		n = next;
	}
}

static void yparser_wipe(yaml_parser_t *p)
{
	if (p->buffer.start)
		OPENSSL_cleanse(p->buffer.start,
				(size_t)(p->buffer.end - p->buffer.start));
	if (p->raw_buffer.start)
		OPENSSL_cleanse(
			p->raw_buffer.start,
			(size_t)(p->raw_buffer.end - p->raw_buffer.start));
}

static void yevent_wipe(yaml_event_t *e)
{
	if (e->type == YAML_SCALAR_EVENT && e->data.scalar.value)
		OPENSSL_cleanse(e->data.scalar.value, e->data.scalar.length);
	yaml_event_delete(e);
}

static const char *yhint = "check the file with: kubectl config view "
			   "--kubeconfig FILE";

/* Parses text into *root (NULL for an empty file). Only the first
 * document is read. */
static int yparse(const char *text, size_t len, const char *origin,
		  ynode **root, nv_err *err)
{
	yaml_parser_t p;
	yaml_event_t e;
	ynode *stack[NV_K8S_KUBECONFIG_DEPTH_MAX + 1];
	char *pending_key = NULL; /* a map's key, waiting for its value */
	int depth = 0, nodes = 0, rc = 0, done = 0;

	*root = NULL;
	if (!yaml_parser_initialize(&p))
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	while (!done && rc == 0) {
		ynode *n = NULL;
		ynode *top = depth ? stack[depth - 1] : NULL;
		int want = 0;

		if (!yaml_parser_parse(&p, &e)) {
			rc = nv_err_set(err, NV_EINVAL, yhint,
					"%s: not YAML: %s at line %zu", origin,
					p.problem ? p.problem : "error",
					p.problem_mark.line + 1);
			break;
		}
		switch (e.type) {
		case YAML_ALIAS_EVENT:
			rc = nv_err_set(err, NV_EREFUSED,
					"write the value out where the alias "
					"(*name) stands",
					"%s: YAML aliases are not accepted "
					"(line %zu)",
					origin, e.start_mark.line + 1);
			break;
		case YAML_DOCUMENT_END_EVENT:
		case YAML_STREAM_END_EVENT: done = 1; break;
		case YAML_SCALAR_EVENT:
			if (top && top->kind == Y_MAP && !pending_key) {
				pending_key = strndup(
					(const char *)e.data.scalar.value,
					e.data.scalar.length);
				if (!pending_key)
					rc = nv_err_set(err, NV_ENOMEM, NULL,
							"out of memory");
				break;
			}
			want = 1;
			n = calloc(1, sizeof(*n));
			if (n) {
				n->kind = Y_SCALAR;
				n->len = e.data.scalar.length;
				n->quoted = e.data.scalar.style !=
					    YAML_PLAIN_SCALAR_STYLE;
				n->value = malloc(n->len + 1);
				if (n->value) {
					memcpy(n->value, e.data.scalar.value,
					       n->len);
					n->value[n->len] = '\0';
				}
			}
			break;
		case YAML_MAPPING_START_EVENT:
		case YAML_SEQUENCE_START_EVENT:
			if (top && top->kind == Y_MAP && !pending_key) {
				rc = nv_err_set(err, NV_EINVAL, yhint,
						"%s: a map key that is not a "
						"plain value (line %zu)",
						origin, e.start_mark.line + 1);
				break;
			}
			if (depth >= NV_K8S_KUBECONFIG_DEPTH_MAX) {
				rc = nv_err_set(err, NV_EINVAL, yhint,
						"%s: nested deeper than %d "
						"levels",
						origin,
						NV_K8S_KUBECONFIG_DEPTH_MAX);
				break;
			}
			want = 1;
			n = calloc(1, sizeof(*n));
			if (n)
				n->kind = e.type == YAML_MAPPING_START_EVENT
						  ? Y_MAP
						  : Y_LIST;
			break;
		case YAML_MAPPING_END_EVENT:
		case YAML_SEQUENCE_END_EVENT:
			if (depth > 0)
				depth--;
			if (depth == 0)
				done = 1;
			break;
		default: break;
		}
		if (rc == 0 && want) {
			if (!n || (n->kind == Y_SCALAR && !n->value)) {
				free(n);
				rc = nv_err_set(err, NV_ENOMEM, NULL,
						"out of memory");
			} else if (++nodes > NV_K8S_KUBECONFIG_NODES_MAX) {
				ynode_free(n);
				rc = nv_err_set(err, NV_EINVAL, yhint,
						"%s: more than %d values",
						origin,
						NV_K8S_KUBECONFIG_NODES_MAX);
			} else {
				if (top) {
					n->key = pending_key;
					pending_key = NULL;
					if (top->last)
						top->last->next = n;
					else
						top->child = n;
					top->last = n;
				} else {
					*root = n;
					if (n->kind == Y_SCALAR)
						done = 1;
				}
				if (n->kind != Y_SCALAR)
					stack[depth++] = n;
			}
		} else if (n) {
			ynode_free(n);
		}
		yevent_wipe(&e);
	}
	wipe_str(pending_key);
	yparser_wipe(&p);
	yaml_parser_delete(&p);
	if (rc) {
		ynode_free(*root);
		*root = NULL;
	}
	return rc;
}

/* ---- reading the tree ---------------------------------------------------- */

static const ynode *yget(const ynode *map, const char *key)
{
	if (!map || map->kind != Y_MAP)
		return NULL;
	for (const ynode *c = map->child; c; c = c->next)
		if (c->key && strcmp(c->key, key) == 0)
			return c;
	return NULL;
}

/* A YAML null (absent, ~, null, or empty and unquoted). */
static int yis_null(const ynode *n)
{
	return !n || (n->kind == Y_SCALAR && !n->quoted &&
		      (n->len == 0 || strcmp(n->value, "~") == 0 ||
		       strcmp(n->value, "null") == 0 ||
		       strcmp(n->value, "Null") == 0 ||
		       strcmp(n->value, "NULL") == 0));
}

/* The string at key: NULL when absent or null, "" never returned for a
 * null. NV_EINVAL when it is not a scalar. */
static int ystr(const ydoc *d, const ynode *map, const char *key,
		const char **out, nv_err *err)
{
	const ynode *n = yget(map, key);
	*out = NULL;
	if (yis_null(n))
		return 0;
	if (n->kind != Y_SCALAR)
		return nv_err_set(err, NV_EINVAL, yhint,
				  "%s: %s is not a single value", d->origin,
				  key);
	*out = n->value;
	return 0;
}

static int ytrue(const ynode *n)
{
	return n && n->kind == Y_SCALAR &&
	       (strcmp(n->value, "true") == 0 ||
		strcmp(n->value, "True") == 0 || strcmp(n->value, "TRUE") == 0);
}

/* ---- files, paths, bytes --------------------------------------------- */

/* path as kubectl reads it from a file in folder: ~ is $HOME, a relative
 * path is the folder's. */
static int resolve_path(const ydoc *d, const char *path, char *out, size_t cap,
			nv_err *err)
{
	int rc;
	if (path[0] == '~' && (path[1] == '/' || path[1] == '\0')) {
		const char *home = getenv("HOME");
		if (!home || !home[0])
			return nv_err_set(err, NV_EREFUSED,
					  "set HOME, or write the path in "
					  "full",
					  "%s: %s starts with ~ and HOME is "
					  "not set",
					  d->origin, path);
		rc = nv_pathf(out, cap, "%s%s", home, path + 1);
	} else if (path[0] == '/') {
		rc = nv_pathf(out, cap, "%s", path);
	} else {
		rc = nv_pathf(out, cap, "%s/%s", d->folder, path);
	}
	if (rc != 0)
		return nv_err_set(err, NV_EINVAL, NULL, "%s: path too long",
				  d->origin);
	return 0;
}

/* base64 (white space allowed, as Go's decoder allows newlines) into a
 * malloc'd buffer the caller wipes. */
static int b64_decode(const ydoc *d, const char *what, const char *b64,
		      unsigned char **out, size_t *len, nv_err *err)
{
	size_t n = strlen(b64), m = 0;
	char *clean = malloc(n + 1);
	unsigned char *bin = malloc(n / 4 * 3 + 4);
	long got = -1;

	*out = NULL;
	if (clean && bin) {
		for (size_t i = 0; i < n; i++)
			if (b64[i] != '\n' && b64[i] != '\r' && b64[i] != ' ' &&
			    b64[i] != '\t')
				clean[m++] = b64[i];
		got = nv_ssh_b64_decode(clean, m, bin, n / 4 * 3 + 4);
	}
	if (clean) {
		OPENSSL_cleanse(clean, m);
		free(clean);
	}
	if (!bin)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	if (got <= 0) {
		OPENSSL_cleanse(bin, n / 4 * 3 + 4);
		free(bin);
		return nv_err_set(err, NV_EINVAL,
				  "the -data fields hold base64 of the PEM "
				  "file (base64 -w0 FILE)",
				  "%s: %s is not base64", d->origin, what);
	}
	bin[got] = '\0';
	*out = bin;
	*len = (size_t)got;
	return 0;
}

static int read_referenced(const ydoc *d, const char *what, const char *path,
			   char **out, size_t *len, nv_err *err)
{
	char full[NV_K8S_PATH_MAX];
	nv_err why;
	int rc = resolve_path(d, path, full, sizeof(full), err);
	if (rc)
		return rc;
	rc = nv_read_file(out, len, full, NV_K8S_KUBECONFIG_FILE_MAX, &why);
	if (rc)
		return nv_err_set(err,
				  rc == NV_ENOMEM ? NV_EINVAL : NV_ENOTFOUND,
				  "check the path (relative paths are from the "
				  "kubeconfig's folder)",
				  "%s: %s %s cannot be read: %s", d->origin,
				  what, full, why.message);
	return 0;
}

/* The bytes of FIELD-data (base64) or FIELD (a file), data first as
 * kubectl does. *out NULL when neither is set. */
static int data_or_file(const ydoc *d, const ynode *map, const char *field,
			char **out, size_t *len, nv_err *err)
{
	char dkey[64];
	const char *data, *file;
	int rc;

	*out = NULL;
	*len = 0;
	snprintf(dkey, sizeof(dkey), "%s-data", field);
	if ((rc = ystr(d, map, dkey, &data, err)) != 0 ||
	    (rc = ystr(d, map, field, &file, err)) != 0)
		return rc;
	if (data && data[0])
		return b64_decode(d, dkey, data, (unsigned char **)out, len,
				  err);
	if (file && file[0])
		return read_referenced(d, field, file, out, len, err);
	return 0;
}

static void wipe_free(void *p, size_t len)
{
	if (p) {
		OPENSSL_cleanse(p, len);
		free(p);
	}
}

static int load_doc(const char *path, ydoc *d, nv_err *err)
{
	char *text;
	size_t len;
	const char *slash;
	nv_err why;
	int rc;

	memset(d, 0, sizeof(*d));
	snprintf(d->origin, sizeof(d->origin), "%s", path);
	slash = strrchr(path, '/');
	if (!slash)
		snprintf(d->folder, sizeof(d->folder), ".");
	else if (slash == path)
		snprintf(d->folder, sizeof(d->folder), "/");
	else
		snprintf(d->folder, sizeof(d->folder), "%.*s",
			 (int)(slash - path), path);
	rc = nv_read_file(&text, &len, path, NV_K8S_KUBECONFIG_FILE_MAX, &why);
	if (rc == NV_ENOMEM)
		return nv_err_set(err, NV_EINVAL,
				  "a kubeconfig is a few KiB: check the path",
				  "%s: larger than %zu bytes", path,
				  NV_K8S_KUBECONFIG_FILE_MAX);
	if (rc)
		return nv_err_set(err,
				  rc == NV_ENOTFOUND ? NV_ENOTFOUND : NV_EIO,
				  "check the file's rights", "%s", why.message);
	rc = yparse(text, len, d->origin, &d->root, err);
	wipe_free(text, len);
	if (rc == 0 && d->root && d->root->kind != Y_MAP) {
		ynode_free(d->root);
		d->root = NULL;
		rc = nv_err_set(err, NV_EINVAL, yhint,
				"%s: not a kubeconfig (no map at the top)",
				path);
	}
	return rc;
}

/* ---- merging ----------------------------------------------------------- */

typedef struct kentry {
	const char *name;
	const ynode *body; /* the entry's cluster/context/user map */
	const ydoc *doc;
} kentry;

typedef struct kmerged {
	ydoc docs[NV_K8S_KUBECONFIG_FILES_MAX];
	int ndocs;
	kentry *clusters, *contexts, *users;
	size_t nclusters, ncontexts, nusers;
	const char *current;
} kmerged;

static void merged_free(kmerged *m)
{
	for (int i = 0; i < m->ndocs; i++)
		ynode_free(m->docs[i].root);
	free(m->clusters);
	free(m->contexts);
	free(m->users);
	memset(m, 0, sizeof(*m));
}

static const kentry *find_entry(const kentry *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].name, name) == 0)
			return &v[i];
	return NULL;
}

/* Adds the entries of list (clusters, contexts, users) that earlier files
 * did not name. */
static int merge_list(const ydoc *d, const char *list, const char *inner,
		      kentry **v, size_t *n, nv_err *err)
{
	const ynode *l = yget(d->root, list);
	size_t count = 0;

	if (yis_null(l))
		return 0;
	if (l->kind != Y_LIST)
		return nv_err_set(err, NV_EINVAL, yhint, "%s: %s is not a list",
				  d->origin, list);
	for (const ynode *e = l->child; e; e = e->next) {
		const char *name;
		int rc;
		if (++count > NV_K8S_KUBECONFIG_ENTRIES_MAX)
			return nv_err_set(err, NV_EINVAL, yhint,
					  "%s: more than %d %s", d->origin,
					  NV_K8S_KUBECONFIG_ENTRIES_MAX, list);
		if (e->kind != Y_MAP)
			return nv_err_set(err, NV_EINVAL, yhint,
					  "%s: an entry of %s is not a map",
					  d->origin, list);
		if ((rc = ystr(d, e, "name", &name, err)) != 0)
			return rc;
		if (!name || !name[0])
			return nv_err_set(err, NV_EINVAL, yhint,
					  "%s: an entry of %s has no name",
					  d->origin, list);
		if (strlen(name) > NV_K8S_NAME_MAX)
			return nv_err_bad(err, NULL, "kubeconfig name", name,
					  64);
		if (find_entry(*v, *n, name))
			continue; /* the first file to name it wins */
		kentry *grown = realloc(*v, (*n + 1) * sizeof(**v));
		if (!grown)
			return nv_err_set(err, NV_ENOMEM, NULL,
					  "out of memory");
		*v = grown;
		(*v)[*n] = (kentry){name, yget(e, inner), d};
		(*n)++;
	}
	return 0;
}

static int merge_doc(kmerged *m, nv_err *err)
{
	const ydoc *d = &m->docs[m->ndocs - 1];
	const char *cur;
	int rc;

	if (!d->root)
		return 0;
	if ((rc = merge_list(d, "clusters", "cluster", &m->clusters,
			     &m->nclusters, err)) != 0 ||
	    (rc = merge_list(d, "contexts", "context", &m->contexts,
			     &m->ncontexts, err)) != 0 ||
	    (rc = merge_list(d, "users", "user", &m->users, &m->nusers, err)) !=
		    0 ||
	    (rc = ystr(d, d->root, "current-context", &cur, err)) != 0)
		return rc;
	if (!m->current && cur && cur[0])
		m->current = cur;
	return 0;
}

static int merge_files(const char *const *paths, size_t npaths, kmerged *m,
		       nv_err *err)
{
	int rc, tried = 0;

	memset(m, 0, sizeof(*m));
	for (size_t i = 0; i < npaths; i++) {
		if (!paths[i] || !paths[i][0])
			continue;
		tried++;
		if (m->ndocs == NV_K8S_KUBECONFIG_FILES_MAX) {
			merged_free(m);
			return nv_err_set(err, NV_EINVAL,
					  "merge fewer files (KUBECONFIG)",
					  "more than %d kubeconfig files",
					  NV_K8S_KUBECONFIG_FILES_MAX);
		}
		rc = load_doc(paths[i], &m->docs[m->ndocs], err);
		if (rc == NV_ENOTFOUND)
			continue; /* kubectl skips a missing file too */
		m->ndocs++;
		if (rc == 0)
			rc = merge_doc(m, err);
		if (rc) {
			merged_free(m);
			return rc;
		}
	}
	if (m->ndocs == 0) {
		merged_free(m);
		return nv_err_set(err, NV_ENOTFOUND,
				  "check KUBECONFIG or profile.kubernetes."
				  "kubeconfig (default ~/.kube/config)",
				  tried ? "no kubeconfig file found (first: "
					  "%s)"
					: "no kubeconfig file given%s",
				  tried ? paths[0] : "");
	}
	return 0;
}

/* ---- resolving --------------------------------------------------------- */

static const char *hint_context = "list them with: kubectl config "
				  "get-contexts";

static int refuse_key(const ydoc *d, const ynode *map, const char *key,
		      const char *what, const char *hint, nv_err *err)
{
	const ynode *n = yget(map, key);
	if (yis_null(n) || (n->kind == Y_SCALAR && n->len == 0))
		return 0;
	return nv_err_set(err, NV_EREFUSED, hint, "%s: %s", d->origin, what);
}

static int resolve_cluster(const kentry *c, nv_k8s_target *t, nv_err *err)
{
	const ydoc *d = c->doc;
	const char *server;
	int rc;

	if (!c->body || c->body->kind != Y_MAP)
		return nv_err_set(err, NV_EINVAL, yhint,
				  "%s: cluster %s has no cluster map",
				  d->origin, c->name);
	if (ytrue(yget(c->body, "insecure-skip-tls-verify")))
		return nv_err_set(err, NV_EREFUSED,
				  "give the cluster's CA instead "
				  "(certificate-authority or "
				  "certificate-authority-data)",
				  "%s: cluster %s turns TLS checks off "
				  "(insecure-skip-tls-verify: true)",
				  d->origin, c->name);
	if ((rc = refuse_key(d, c->body, "tls-server-name",
			     "tls-server-name is not supported yet",
			     "use a server URL whose host name the "
			     "certificate names",
			     err)) != 0 ||
	    (rc = refuse_key(d, c->body, "proxy-url",
			     "proxy-url is not supported yet",
			     "reach the API server directly (or through a "
			     "tunnel on a local port)",
			     err)) != 0)
		return rc;
	if ((rc = ystr(d, c->body, "server", &server, err)) != 0)
		return rc;
	if (!server || !server[0])
		return nv_err_set(err, NV_EINVAL, yhint,
				  "%s: cluster %s has no server", d->origin,
				  c->name);
	if (strncmp(server, "https://", 8) != 0)
		return nv_err_set(err, NV_EREFUSED,
				  "the API server must be reached over https "
				  "(https://HOST:PORT)",
				  "%s: cluster %s: server %.200s is not "
				  "https",
				  d->origin, c->name, server);
	if (strlen(server) >= sizeof(t->server) || !server[8])
		return nv_err_bad(err, NULL, "server", server, 200);
	snprintf(t->server, sizeof(t->server), "%s", server);
	return data_or_file(d, c->body, "certificate-authority", &t->ca_pem,
			    &t->ca_pem_len, err);
}

static int dup_str(const char *s, char **out, nv_err *err)
{
	*out = strdup(s ? s : "");
	return *out ? 0 : nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
}

static int resolve_exec(const ydoc *d, const char *user, const ynode *x,
			nv_k8s_exec_config *e, nv_err *err)
{
	const char *v;
	const ynode *l;
	int rc;

	if (x->kind != Y_MAP)
		return nv_err_set(err, NV_EINVAL, yhint,
				  "%s: user %s: exec is not a map", d->origin,
				  user);
	if ((rc = ystr(d, x, "apiVersion", &v, err)) != 0)
		return rc;
	if (!v || (strcmp(v, NV_K8S_EXEC_V1) != 0 &&
		   strcmp(v, NV_K8S_EXEC_V1BETA1) != 0))
		return nv_err_set(err, NV_EREFUSED,
				  "apiVersion: " NV_K8S_EXEC_V1 " (or v1beta1)",
				  "%s: user %s: exec apiVersion %.80s is not "
				  "supported",
				  d->origin, user, v ? v : "(none)");
	snprintf(e->api_version, sizeof(e->api_version), "%s", v);
	if ((rc = ystr(d, x, "interactiveMode", &v, err)) != 0)
		return rc;
	if (v && strcmp(v, "Always") == 0)
		return nv_err_set(err, NV_EREFUSED,
				  "navette runs the plugin with no terminal: "
				  "set interactiveMode: Never (or "
				  "IfAvailable), or log in first",
				  "%s: user %s: the exec plugin needs a "
				  "terminal (interactiveMode: Always)",
				  d->origin, user);
	snprintf(e->interactive_mode, sizeof(e->interactive_mode), "%s",
		 v && strcmp(v, "Never") == 0 ? "Never" : "IfAvailable");
	e->provide_cluster_info = ytrue(yget(x, "provideClusterInfo"));
	if ((rc = ystr(d, x, "command", &v, err)) != 0)
		return rc;
	if (!v || !v[0])
		return nv_err_set(err, NV_EINVAL, yhint,
				  "%s: user %s: exec has no command", d->origin,
				  user);
	if (strchr(v, '/') || v[0] == '~')
		rc = resolve_path(d, v, e->command, sizeof(e->command), err);
	else if (nv_pathf(e->command, sizeof(e->command), "%s", v) != 0)
		rc = nv_err_bad(err, NULL, "exec command", v, 80);
	if (rc)
		return rc;
	l = yget(x, "args");
	if (!yis_null(l)) {
		if (l->kind != Y_LIST)
			return nv_err_set(err, NV_EINVAL, yhint,
					  "%s: user %s: exec args is not a "
					  "list",
					  d->origin, user);
		for (const ynode *a = l->child; a; a = a->next) {
			if (a->kind != Y_SCALAR ||
			    e->nargs == NV_K8S_EXEC_ARGS_MAX)
				return nv_err_set(err, NV_EINVAL, yhint,
						  "%s: user %s: exec args: "
						  "more than %d, or not "
						  "strings",
						  d->origin, user,
						  NV_K8S_EXEC_ARGS_MAX);
			if ((rc = dup_str(a->value, &e->args[e->nargs], err)) !=
			    0)
				return rc;
			e->nargs++;
		}
	}
	l = yget(x, "env");
	if (!yis_null(l)) {
		if (l->kind != Y_LIST)
			return nv_err_set(err, NV_EINVAL, yhint,
					  "%s: user %s: exec env is not a "
					  "list",
					  d->origin, user);
		for (const ynode *a = l->child; a; a = a->next) {
			const char *name, *value;
			if (a->kind != Y_MAP || e->nenv == NV_K8S_EXEC_ENV_MAX)
				return nv_err_set(err, NV_EINVAL, yhint,
						  "%s: user %s: exec env: "
						  "more than %d, or not "
						  "{name, value}",
						  d->origin, user,
						  NV_K8S_EXEC_ENV_MAX);
			if ((rc = ystr(d, a, "name", &name, err)) != 0 ||
			    (rc = ystr(d, a, "value", &value, err)) != 0)
				return rc;
			if (!name || !name[0] || strchr(name, '='))
				return nv_err_set(err, NV_EINVAL, yhint,
						  "%s: user %s: exec env: a "
						  "bad name",
						  d->origin, user);
			if ((rc = dup_str(name, &e->env_names[e->nenv], err)) !=
				    0 ||
			    (rc = dup_str(value, &e->env_values[e->nenv],
					  err)) != 0) {
				e->nenv++; /* freed with the target */
				return rc;
			}
			e->nenv++;
		}
	}
	return 0;
}

static int secret_from(const char *user, nv_secret_kind kind,
		       const char *source, const char *origin,
		       const char *field, const void *value, size_t len,
		       nv_secret **out, nv_err *err)
{
	char name[NV_SECRET_NAME_MAX + 1];
	nv_secret *s;
	int rc;

	snprintf(name, sizeof(name), "k8s:%s", user);
	s = nv_secret_new(name, kind, source, err);
	if (!s)
		return err ? err->code : NV_ENOMEM;
	snprintf(s->origin, sizeof(s->origin), "%s", origin);
	rc = nv_secret_set(s, field, value, len, err);
	if (rc == 0)
		rc = nv_secret_complete(s, err);
	if (rc) {
		nv_secret_free(s);
		return rc;
	}
	nv_secret_announce(s);
	*out = s;
	return 0;
}

static int resolve_user(const kentry *u, nv_k8s_target *t, nv_err *err)
{
	const ydoc *d = u->doc;
	const ynode *b = u->body, *x;
	const char *token, *token_file;
	char *key = NULL;
	size_t key_len = 0;
	int rc, kinds = 0;

	snprintf(t->origin, sizeof(t->origin), "%s", d->origin);
	if (yis_null(b))
		return 0; /* a user with no credential: anonymous */
	if (b->kind != Y_MAP)
		return nv_err_set(err, NV_EINVAL, yhint,
				  "%s: user %s is not a map", d->origin,
				  u->name);
	if ((rc = refuse_key(d, b, "auth-provider",
			     "auth-provider plugins are not supported "
			     "(kubectl dropped them too)",
			     "use the provider's exec plugin instead (e.g. "
			     "gke-gcloud-auth-plugin, kubelogin)",
			     err)) != 0 ||
	    (rc = refuse_key(d, b, "username",
			     "username/password login is not supported",
			     "use a token, a client certificate or an exec "
			     "plugin",
			     err)) != 0 ||
	    (rc = refuse_key(d, b, "password",
			     "username/password login is not supported",
			     "use a token, a client certificate or an exec "
			     "plugin",
			     err)) != 0)
		return rc;
	if ((rc = ystr(d, b, "token", &token, err)) != 0 ||
	    (rc = ystr(d, b, "tokenFile", &token_file, err)) != 0)
		return rc;
	x = yget(b, "exec");
	kinds = (token || token_file) + !yis_null(x) +
		(!yis_null(yget(b, "client-certificate")) ||
		 !yis_null(yget(b, "client-certificate-data")) ||
		 !yis_null(yget(b, "client-key")) ||
		 !yis_null(yget(b, "client-key-data")));
	if (kinds > 1)
		return nv_err_set(err, NV_EREFUSED,
				  "keep one of token/tokenFile, "
				  "client-certificate + client-key, exec",
				  "%s: user %s has more than one kind of "
				  "credential",
				  d->origin, u->name);
	if (!yis_null(x)) {
		t->auth = NV_K8S_AUTH_EXEC;
		return resolve_exec(d, u->name, x, &t->exec, err);
	}
	if (token) {
		t->auth = NV_K8S_AUTH_TOKEN;
		return secret_from(u->name, NV_SECRET_BEARER, "file", d->origin,
				   "token", token, strlen(token), &t->token,
				   err);
	}
	if (token_file) {
		t->auth = NV_K8S_AUTH_TOKEN_FILE;
		return resolve_path(d, token_file, t->token_file,
				    sizeof(t->token_file), err);
	}
	if ((rc = data_or_file(d, b, "client-certificate", &t->client_cert_pem,
			       &t->client_cert_len, err)) != 0 ||
	    (rc = data_or_file(d, b, "client-key", &key, &key_len, err)) != 0)
		return rc;
	if (!t->client_cert_pem != !key) {
		wipe_free(key, key_len);
		return nv_err_set(err, NV_EINVAL,
				  "give both client-certificate(-data) and "
				  "client-key(-data)",
				  "%s: user %s has a client %s without its %s",
				  d->origin, u->name,
				  key ? "key" : "certificate",
				  key ? "certificate" : "key");
	}
	if (!key)
		return 0;
	t->auth = NV_K8S_AUTH_CLIENT_CERT;
	rc = secret_from(u->name, NV_SECRET_PEM, "file", d->origin, "key", key,
			 key_len, &t->client_key, err);
	wipe_free(key, key_len);
	return rc;
}

static int resolve(const kmerged *m, const char *context, nv_k8s_target *t,
		   nv_err *err)
{
	const kentry *ctx, *cluster, *user;
	const char *cname, *uname, *ns;
	const ydoc *d;
	int rc;

	if (!context || !context[0])
		context = m->current;
	if (!context)
		return nv_err_set(err, NV_ENOTFOUND,
				  "name one (profile.kubernetes.context), or "
				  "kubectl config use-context NAME",
				  "the kubeconfig sets no current-context");
	ctx = find_entry(m->contexts, m->ncontexts, context);
	if (!ctx)
		return nv_err_set(err, NV_ENOTFOUND, hint_context,
				  "kubeconfig: no context %.200s", context);
	d = ctx->doc;
	if (!ctx->body || ctx->body->kind != Y_MAP)
		return nv_err_set(err, NV_EINVAL, yhint,
				  "%s: context %s has no context map",
				  d->origin, ctx->name);
	if ((rc = ystr(d, ctx->body, "cluster", &cname, err)) != 0 ||
	    (rc = ystr(d, ctx->body, "user", &uname, err)) != 0 ||
	    (rc = ystr(d, ctx->body, "namespace", &ns, err)) != 0)
		return rc;
	snprintf(t->context, sizeof(t->context), "%s", ctx->name);
	if (!cname || !(cluster = find_entry(m->clusters, m->nclusters, cname)))
		return nv_err_set(err, NV_ENOTFOUND,
				  "check the context's cluster: kubectl config "
				  "view",
				  "%s: context %s: no cluster %.200s",
				  d->origin, ctx->name,
				  cname ? cname : "(none named)");
	if (!uname || !(user = find_entry(m->users, m->nusers, uname)))
		return nv_err_set(err, NV_ENOTFOUND,
				  "check the context's user: kubectl config "
				  "view",
				  "%s: context %s: no user %.200s", d->origin,
				  ctx->name, uname ? uname : "(none named)");
	if (ns && strlen(ns) > NV_K8S_NAME_MAX)
		return nv_err_bad(err, NULL, "namespace", ns, 64);
	snprintf(t->cluster, sizeof(t->cluster), "%s", cluster->name);
	snprintf(t->user, sizeof(t->user), "%s", user->name);
	snprintf(t->namespace_, sizeof(t->namespace_), "%s",
		 ns && ns[0] ? ns : "default");
	if ((rc = resolve_cluster(cluster, t, err)) != 0)
		return rc;
	return resolve_user(user, t, err);
}

/* ---- the public functions -------------------------------------------- */

void nv_k8s_target_free(nv_k8s_target *t)
{
	if (!t)
		return;
	free(t->ca_pem);
	free(t->client_cert_pem);
	nv_secret_free(t->token);
	nv_secret_free(t->client_key);
	for (int i = 0; i < t->exec.nargs; i++)
		wipe_str(t->exec.args[i]);
	for (int i = 0; i < t->exec.nenv; i++) {
		wipe_str(t->exec.env_names[i]);
		wipe_str(t->exec.env_values[i]);
	}
	memset(t, 0, sizeof(*t));
}

int nv_k8s_kubeconfig_load(const char *const *paths, size_t npaths,
			   const char *context, nv_k8s_target *out, nv_err *err)
{
	kmerged m;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = merge_files(paths, npaths, &m, err)) != 0)
		return rc;
	rc = resolve(&m, context, out, err);
	merged_free(&m);
	if (rc)
		nv_k8s_target_free(out);
	return rc;
}

int nv_k8s_kubeconfig_load_text(const char *text, size_t len,
				const char *folder, const char *origin,
				const char *context, nv_k8s_target *out,
				nv_err *err)
{
	kmerged m;
	int rc;

	memset(out, 0, sizeof(*out));
	memset(&m, 0, sizeof(m));
	snprintf(m.docs[0].folder, sizeof(m.docs[0].folder), "%s", folder);
	snprintf(m.docs[0].origin, sizeof(m.docs[0].origin), "%s", origin);
	m.ndocs = 1;
	rc = yparse(text, len, origin, &m.docs[0].root, err);
	if (rc == 0 && m.docs[0].root && m.docs[0].root->kind != Y_MAP)
		rc = nv_err_set(err, NV_EINVAL, yhint,
				"%s: not a kubeconfig (no map at the top)",
				origin);
	if (rc == 0)
		rc = merge_doc(&m, err);
	if (rc == 0)
		rc = resolve(&m, context, out, err);
	merged_free(&m);
	if (rc)
		nv_k8s_target_free(out);
	return rc;
}

int nv_k8s_kubeconfig_contexts(const char *const *paths, size_t npaths,
			       nv_k8s_context_info **out, size_t *count,
			       nv_err *err)
{
	kmerged m;
	int rc;

	*out = NULL;
	*count = 0;
	if ((rc = merge_files(paths, npaths, &m, err)) != 0)
		return rc;
	if (m.ncontexts) {
		*out = calloc(m.ncontexts, sizeof(**out));
		if (!*out) {
			merged_free(&m);
			return nv_err_set(err, NV_ENOMEM, NULL,
					  "out of memory");
		}
	}
	for (size_t i = 0; i < m.ncontexts; i++) {
		const kentry *c = &m.contexts[i];
		nv_k8s_context_info *o = &(*out)[i];
		const char *v;
		snprintf(o->name, sizeof(o->name), "%s", c->name);
		o->current = m.current && strcmp(m.current, c->name) == 0;
		if (ystr(c->doc, c->body, "cluster", &v, NULL) == 0 && v)
			snprintf(o->cluster, sizeof(o->cluster), "%s", v);
		if (ystr(c->doc, c->body, "user", &v, NULL) == 0 && v)
			snprintf(o->user, sizeof(o->user), "%s", v);
		if (ystr(c->doc, c->body, "namespace", &v, NULL) == 0 && v)
			snprintf(o->namespace_, sizeof(o->namespace_), "%s", v);
		/* (the server as written, for isolation: never dialled) */
		const kentry *cl =
			find_entry(m.clusters, m.nclusters, o->cluster);
		if (cl && cl->body && cl->body->kind == Y_MAP &&
		    ystr(cl->doc, cl->body, "server", &v, NULL) == 0 && v &&
		    strlen(v) < sizeof(o->server))
			snprintf(o->server, sizeof(o->server), "%s", v);
	}
	*count = m.ncontexts;
	merged_free(&m);
	return 0;
}

int nv_k8s_token_file_read(const char *path, const char *name, nv_secret **out,
			   nv_err *err)
{
	char *text;
	size_t len;
	nv_err why;
	int rc;

	*out = NULL;
	rc = nv_read_file(&text, &len, path, NV_SECRET_VALUE_MAX, &why);
	if (rc)
		return nv_err_set(
			err, rc == NV_ENOMEM ? NV_EINVAL : NV_ENOTFOUND,
			"check the token file's path and rights",
			"token file %s cannot be read: %s", path, why.message);
	size_t n = len;
	while (n && (text[n - 1] == '\n' || text[n - 1] == '\r' ||
		     text[n - 1] == ' ' || text[n - 1] == '\t'))
		n--;
	if (n == 0)
		rc = nv_err_set(err, NV_EREFUSED,
				"write the token into the file",
				"token file %s is empty", path);
	else
		rc = secret_from(name, NV_SECRET_BEARER, "file", path, "token",
				 text, n, out, err);
	wipe_free(text, len);
	return rc;
}

int nv_k8s_in_cluster_load(const char *root, nv_k8s_target *out, nv_err *err)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	char path[NV_K8S_PATH_MAX];
	char *ns = NULL;
	size_t ns_len;
	nv_err why;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!root)
		root = NV_K8S_IN_CLUSTER_ROOT;
	if (!host || !host[0] || !port || !port[0])
		return nv_err_set(err, NV_ENOTFOUND,
				  "in_cluster works inside a pod only; give a "
				  "kubeconfig elsewhere",
				  "not in a pod: KUBERNETES_SERVICE_HOST and "
				  "KUBERNETES_SERVICE_PORT are not set");
	if (strspn(port, "0123456789") != strlen(port) || strlen(port) > 5 ||
	    strpbrk(host, "/@?# "))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "bad KUBERNETES_SERVICE_HOST/PORT: %.100s "
				  "%.10s",
				  host, port);
	if (nv_pathf(out->server, sizeof(out->server),
		     strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s",
		     host, port) != 0 ||
	    nv_pathf(out->token_file, sizeof(out->token_file), "%s/token",
		     root) != 0 ||
	    nv_pathf(path, sizeof(path), "%s/ca.crt", root) != 0)
		return nv_err_set(err, NV_EINVAL, NULL, "path too long");
	snprintf(out->origin, sizeof(out->origin), "%s", root);
	snprintf(out->user, sizeof(out->user), "serviceaccount");
	out->auth = NV_K8S_AUTH_TOKEN_FILE;
	rc = nv_read_file(&out->ca_pem, &out->ca_pem_len, path,
			  NV_K8S_KUBECONFIG_FILE_MAX, &why);
	if (rc) {
		rc = nv_err_set(err, NV_ENOTFOUND,
				"is a service account token mounted in this "
				"pod (automountServiceAccountToken)?",
				"in-cluster: %s", why.message);
		goto out;
	}
	if ((rc = nv_k8s_token_file_read(out->token_file, "serviceaccount",
					 &out->token, err)) != 0)
		goto out;
	if (nv_pathf(path, sizeof(path), "%s/namespace", root) == 0 &&
	    nv_read_file(&ns, &ns_len, path, NV_K8S_NAME_MAX, &why) == 0) {
		while (ns_len &&
		       (ns[ns_len - 1] == '\n' || ns[ns_len - 1] == ' '))
			ns[--ns_len] = '\0';
	}
	snprintf(out->namespace_, sizeof(out->namespace_), "%s",
		 ns && ns[0] ? ns : "default");
	free(ns);
out:
	if (rc)
		nv_k8s_target_free(out);
	return rc;
}
