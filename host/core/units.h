/* Numbers as a recipe writes them in a job's description (the values a
 * backend's C client checks key by key): counts, durations and sizes.
 * Pure C. Each returns 0, or -1 when the text is not one (the caller says
 * which key and what it takes). */
#ifndef NAVETTE_CORE_UNITS_H
#define NAVETTE_CORE_UNITS_H

/* A whole non-negative decimal number, at most max: "0", "16". */
int nv_units_count(const char *v, long long max, long long *out);

/* Seconds: "3600", "90s", "30m", "2h", "1d", "1.5h"; not negative. */
int nv_units_seconds(const char *v, double *out);

/* Bytes: "4294967296", "512M", "4GiB", "1.5G", "2kb" (K, M, G, T are
 * powers of 1024); not negative. */
int nv_units_bytes(const char *v, double *out);

#endif
