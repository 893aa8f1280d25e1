/* The HTTP test server of the unit tests (tests/data/http/server.py),
 * started on 127.0.0.1 on a port the OS picks: plain, or HTTPS with the
 * certificates tests/data/http/make_certs.sh made in cert_dir (it then asks
 * for an optional client certificate from ca_path's CA). For the tests of
 * host/net/http.c and of the clients built on it (host/k8s). */
#ifndef NAVETTE_HTTP_TEST_SERVER_H
#define NAVETTE_HTTP_TEST_SERVER_H

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

struct server {
	pid_t pid;
	int port;
};

static char data_dir[1024]; /* tests/data/http */
static char ca_path[600];   /* the test CA (make_certs.sh) */
static char cert_dir[512];  /* temp folder with the test PKI */

static inline void find_data_dir(void)
{
	const char *env = getenv("NAVETTE_TEST_DATA");
	char here[900], *slash;

	if (env) {
		snprintf(data_dir, sizeof(data_dir), "%s/http", env);
		return;
	}
	/* Run by hand: __FILE__ is tests/unit/http_test_server.h. */
	snprintf(here, sizeof(here), "%s", __FILE__);
	slash = strrchr(here, '/');
	if (slash)
		*slash = '\0';
	snprintf(data_dir, sizeof(data_dir), "%s/../data/http", here);
}

/* Starts server.py (HTTPS when cert is given) and reads its port. */
static inline int server_start(struct server *s, const char *name, int tls)
{
	char script[1200], cert[600], key[600], line[32];
	size_t used = 0;
	int fds[2];

	s->pid = -1;
	s->port = 0;
	snprintf(script, sizeof(script), "%s/server.py", data_dir);
	snprintf(cert, sizeof(cert), "%s/server.pem", cert_dir);
	snprintf(key, sizeof(key), "%s/server.key", cert_dir);
	if (pipe(fds))
		return -1;
	s->pid = fork();
	if (s->pid < 0)
		return -1;
	if (s->pid == 0) {
#if defined(__linux__)
		prctl(PR_SET_PDEATHSIG, SIGTERM);
#endif
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		if (tls)
			execlp("python3", "python3", script, "--name", name,
			       "--tls", cert, key, "--client-ca", ca_path,
			       (char *)NULL);
		else
			execlp("python3", "python3", script, "--name", name,
			       (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	while (used < sizeof(line) - 1) {
		struct pollfd p = {.fd = fds[0], .events = POLLIN};
		ssize_t n;

		if (poll(&p, 1, 15000) <= 0)
			break;
		n = read(fds[0], line + used, 1);
		if (n <= 0 || line[used] == '\n')
			break;
		used++;
	}
	line[used] = '\0';
	close(fds[0]);
	s->port = atoi(line);
	if (s->port <= 0) {
		fprintf(stderr, "server %s did not start\n", name);
		return -1;
	}
	return 0;
}

static inline void server_stop(struct server *s)
{
	if (s->pid > 0) {
		kill(s->pid, SIGTERM);
		waitpid(s->pid, NULL, 0);
	}
	s->pid = -1;
}

#endif
