/* SPDX-License-Identifier: MIT */
/* Workload: 4 threads, each spinning in its own named function. */

/*
 * The main thread only waits in pthread_join, so (nearly) every sample
 * belongs to one of the four workers, and a worker's tid must map to
 * exactly one of wl_thread_alpha/beta/gamma/delta.
 */
#include <pthread.h>

#include "wl_common.h"

void *wl_thread_alpha(void *arg);
void *wl_thread_beta(void *arg);
void *wl_thread_gamma(void *arg);
void *wl_thread_delta(void *arg);

static double end_time;
static volatile unsigned sink;

#define WL_THREAD_BODY(seed)                                                   \
	do {                                                                   \
		volatile unsigned acc = (seed);                                \
		(void)arg;                                                     \
		while (wl_now() < end_time)                                    \
			WL_SPIN(acc);                                          \
		sink = acc;                                                    \
		return NULL;                                                   \
	} while (0)

WL_NAMED void *wl_thread_alpha(void *arg)
{
	WL_THREAD_BODY(1);
}

WL_NAMED void *wl_thread_beta(void *arg)
{
	WL_THREAD_BODY(2);
}

WL_NAMED void *wl_thread_gamma(void *arg)
{
	WL_THREAD_BODY(3);
}

WL_NAMED void *wl_thread_delta(void *arg)
{
	WL_THREAD_BODY(4);
}

int main(int argc, char **argv)
{
	void *(*const fns[4])(void *) = { wl_thread_alpha, wl_thread_beta,
					  wl_thread_gamma, wl_thread_delta };
	pthread_t tids[4];
	int i, n = 0, status = 0;

	end_time = wl_now() + wl_duration(argc, argv);
	for (; n < 4; n++)
		if (pthread_create(&tids[n], NULL, fns[n], NULL) != 0) {
			status = 1;
			break;
		}
	for (i = 0; i < n; i++)
		pthread_join(tids[i], NULL);
	return wl_finish(status);
}
