/* SPDX-License-Identifier: MIT */
/* Workload: many mostly sleeping threads (a target that is slow to attach). */

/*
 * argv[1] seconds, argv[2] threads (default 500). Each thread naps 20 ms
 * at a time, so the process costs little CPU, yet attaching to it means
 * two perf events per thread and CPU: the stop-while-attaching window is
 * long enough that a test can kill the recorder inside it (issue 20
 * item 5). It prints "ready" on stdout once every thread runs.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "wl_common.h"

#define WL_MAX_THREADS 4096

static double end_time;

static void *napper(void *arg)
{
	struct timespec nap = { 0, 20000000 };

	(void)arg;
	while (wl_now() < end_time)
		nanosleep(&nap, NULL);
	return NULL;
}

int main(int argc, char **argv)
{
	static pthread_t tids[WL_MAX_THREADS];
	pthread_attr_t attr;
	int n = argc > 2 ? atoi(argv[2]) : 500, i, made = 0;

	if (n < 1 || n > WL_MAX_THREADS)
		n = 500;
	end_time = wl_now() + wl_duration(argc, argv);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (i = 0; i < n; i++)
		if (pthread_create(&tids[made], &attr, napper, NULL) == 0)
			made++;
	printf("ready %d\n", made);
	fflush(stdout);
	napper(NULL);
	for (i = 0; i < made; i++)
		pthread_join(tids[i], NULL);
	return wl_finish(made == n ? 0 : 1);
}
