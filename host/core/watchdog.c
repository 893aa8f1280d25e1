/* See watchdog.h. One thread per runtime, started on the first bounded
 * call; it polls the monotonic clock every 50 ms while armed and sleeps
 * on a condition variable otherwise (pthread_condattr_setclock, which a
 * timed wait on the monotonic clock needs, is missing on macOS). */
#include "core/watchdog.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"

#define WATCHDOG_POLL_NS (50L * 1000 * 1000)

struct nv_watchdog {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int armed;
	int stop;
	double kill_at;
	char message[1024];
	size_t message_len;
	char note[1024]; /* said instead of message when note_len > 0 */
	size_t note_len;
};

static void *watch(void *arg)
{
	nv_watchdog *w = arg;
	struct timespec poll = {0, WATCHDOG_POLL_NS};

	pthread_mutex_lock(&w->mu);
	while (!w->stop) {
		if (!w->armed) {
			pthread_cond_wait(&w->cv, &w->mu);
			continue;
		}
		if (nv_monotonic() >= w->kill_at) {
			/* write(2) and _exit(2) only: the other thread is
			 * stuck in arbitrary C code */
			ssize_t n = w->note_len
					    ? write(STDERR_FILENO, w->note,
						    w->note_len)
					    : write(STDERR_FILENO, w->message,
						    w->message_len);
			(void)n;
			_exit(2);
		}
		pthread_mutex_unlock(&w->mu);
		nanosleep(&poll, NULL);
		pthread_mutex_lock(&w->mu);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

int nv_watchdog_arm(nv_watchdog **wp, double kill_at, const char *message)
{
	nv_watchdog *w = *wp;

	if (!w) {
		w = calloc(1, sizeof(*w));
		if (!w)
			return -1;
		pthread_mutex_init(&w->mu, NULL);
		pthread_cond_init(&w->cv, NULL);
		if (pthread_create(&w->thread, NULL, watch, w) != 0) {
			pthread_cond_destroy(&w->cv);
			pthread_mutex_destroy(&w->mu);
			free(w);
			return -1;
		}
		*wp = w;
	}
	pthread_mutex_lock(&w->mu);
	snprintf(w->message, sizeof(w->message), "%s", message);
	w->message_len = strlen(w->message);
	w->note_len = 0;
	w->kill_at = kill_at;
	w->armed = 1;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	return 0;
}

void nv_watchdog_note(nv_watchdog *w, const char *note)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	if (note)
		snprintf(w->note, sizeof(w->note), "%s", note);
	w->note_len = note ? strlen(w->note) : 0;
	pthread_mutex_unlock(&w->mu);
}

void nv_watchdog_pause(nv_watchdog *w)
{
	nv_watchdog_disarm(w);
}

void nv_watchdog_resume(nv_watchdog *w, double kill_at)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->note_len = 0;
	w->kill_at = kill_at;
	w->armed = 1;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

void nv_watchdog_disarm(nv_watchdog *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->armed = 0;
	pthread_mutex_unlock(&w->mu);
}

void nv_watchdog_free(nv_watchdog *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = 1;
	w->armed = 0;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	free(w);
}
