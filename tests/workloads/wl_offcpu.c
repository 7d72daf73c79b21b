/* SPDX-License-Identifier: MIT */
/* Workload: threads that wait, with a known split of running and waiting. */

/*
 * wl_offcpu SECONDS KIND, KIND one of
 *   sleep  the main thread alternates 5 ms of spinning and 5 ms of
 *          nanosleep (compute 50 %, sleep 50 %)
 *   pipe   a thread blocks in read() on a pipe the main thread writes
 *          to every 50 ms
 *   mutex  two threads take turns on one mutex, each holding it for
 *          2 ms of spinning
 *   fsync  the main thread writes a block and fsyncs a temporary file
 *
 * With WL_REPORT_FILE set, each thread that does the work writes a line
 * "tid start_s end_s waited_s cpu_s" there: CLOCK_MONOTONIC (the clock of perf
 * timestamps) at its start and end, and how much of that it spent off
 * the CPU in the waiting call (wall time around the call less the
 * thread's CPU time in it: fsync, say, also runs in the kernel) and its
 * CPU time between start and end (CLOCK_THREAD_CPUTIME_ID; the main
 * thread's start-up, the loader's work, is not in it).
 */
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "wl_common.h"

void wl_off_spin(double seconds);
void wl_off_sleep(double seconds);
void *wl_pipe_reader(void *arg);
void *wl_mutex_worker(void *arg);
void wl_fsync_loop(double end);

static double end_time;
static volatile unsigned sink;
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t fight = PTHREAD_MUTEX_INITIALIZER;
static int pipe_fd[2];

static double thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Off-CPU time since (@t, @c): wall time less this thread's CPU time. */
static double off_since(double t, double c)
{
	return (wl_now() - t) - (thread_cpu() - c);
}

static void report(double start, double cpu0, double waited)
{
	const char *path = getenv("WL_REPORT_FILE");
	FILE *f;

	if (!path)
		return;
	pthread_mutex_lock(&report_lock);
	f = fopen(path, "a");
	if (f) {
		fprintf(f, "%ld %.6f %.6f %.6f %.6f\n",
			(long)syscall(SYS_gettid), start, wl_now(), waited,
			thread_cpu() - cpu0);
		fclose(f);
	}
	pthread_mutex_unlock(&report_lock);
}

WL_NAMED void wl_off_spin(double seconds)
{
	double end = wl_now() + seconds;
	volatile unsigned acc = 7;

	while (wl_now() < end)
		for (unsigned i = 0; i < 20000; i++)
			acc = acc * 1664525u + 1013904223u;
	sink = acc;
}

WL_NAMED void wl_off_sleep(double seconds)
{
	struct timespec ts = { 0, (long)(seconds * 1e9) };

	nanosleep(&ts, NULL);
}

WL_NAMED void *wl_pipe_reader(void *arg)
{
	double start = wl_now(), cpu0 = thread_cpu(), waited = 0, t, c;
	char ch;

	(void)arg;
	for (;;) {
		ssize_t n;

		t = wl_now();
		c = thread_cpu();
		n = read(pipe_fd[0], &ch, 1);
		waited += off_since(t, c);
		if (n <= 0 || ch == 'q')
			break;
	}
	report(start, cpu0, waited);
	return NULL;
}

WL_NAMED void *wl_mutex_worker(void *arg)
{
	double start = wl_now(), cpu0 = thread_cpu(), waited = 0, t, c;

	(void)arg;
	while (wl_now() < end_time) {
		t = wl_now();
		c = thread_cpu();
		pthread_mutex_lock(&fight);
		waited += off_since(t, c);
		wl_off_spin(0.002);
		pthread_mutex_unlock(&fight);
	}
	report(start, cpu0, waited);
	return NULL;
}

WL_NAMED void wl_fsync_loop(double end)
{
	char path[] = "/tmp/wl_offcpu_XXXXXX", block[4096];
	double start = wl_now(), cpu0 = thread_cpu(), waited = 0, t, c;
	int fd = mkstemp(path);

	if (fd < 0)
		return;
	unlink(path);
	memset(block, 'x', sizeof(block));
	while (wl_now() < end) {
		if (write(fd, block, sizeof(block)) < 0)
			break;
		t = wl_now();
		c = thread_cpu();
		fsync(fd);
		waited += off_since(t, c);
	}
	close(fd);
	report(start, cpu0, waited);
}

static int run_sleep(void)
{
	double start = wl_now(), cpu0 = thread_cpu(), waited = 0, t, c;

	while (wl_now() < end_time) {
		wl_off_spin(0.005);
		t = wl_now();
		c = thread_cpu();
		wl_off_sleep(0.005);
		waited += off_since(t, c);
	}
	report(start, cpu0, waited);
	return 0;
}

static int run_pipe(void)
{
	pthread_t th;

	if (pipe(pipe_fd) || pthread_create(&th, NULL, wl_pipe_reader, NULL))
		return 1;
	while (wl_now() < end_time) {
		wl_off_sleep(0.05);
		if (write(pipe_fd[1], "x", 1) != 1)
			return 1;
	}
	if (write(pipe_fd[1], "q", 1) != 1)
		return 1;
	return pthread_join(th, NULL) != 0;
}

static int run_mutex(void)
{
	pthread_t a, b;

	if (pthread_create(&a, NULL, wl_mutex_worker, NULL) ||
	    pthread_create(&b, NULL, wl_mutex_worker, NULL))
		return 1;
	return pthread_join(a, NULL) || pthread_join(b, NULL);
}

int main(int argc, char **argv)
{
	const char *kind = argc > 2 ? argv[2] : "sleep";

	end_time = wl_now() + wl_duration(argc, argv);
	if (strcmp(kind, "sleep") == 0)
		return wl_finish(run_sleep());
	if (strcmp(kind, "pipe") == 0)
		return wl_finish(run_pipe());
	if (strcmp(kind, "mutex") == 0)
		return wl_finish(run_mutex());
	if (strcmp(kind, "fsync") == 0) {
		wl_fsync_loop(end_time);
		return wl_finish(0);
	}
	return 2;
}
