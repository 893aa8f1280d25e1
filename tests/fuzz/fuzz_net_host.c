/* Fuzz target: a URL's host in canonical form (host/net/hostname.c),
 * which reads hosts from recipes and project files. Checks invariants,
 * not just the absence of crashes: a refusal carries a message; an
 * accepted host has a canonical form within the bound that reads back
 * as itself with the same kind and loopback flag. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/hostname.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	nv_host h, again;
	nv_err err;
	size_t n;

	if (nv_host_canonical((const char *)data, size, &h, &err) != 0) {
		if (err.code != NV_EINVAL || !err.message[0])
			abort();
		return 0;
	}
	n = strnlen(h.canonical, sizeof(h.canonical));
	if (n == 0 || n >= sizeof(h.canonical))
		abort();
	if (nv_host_canonical(h.canonical, n, &again, &err) != 0 ||
	    strcmp(again.canonical, h.canonical) != 0 ||
	    again.loopback != h.loopback || again.kind != h.kind)
		abort();
	return 0;
}
