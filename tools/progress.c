/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* notifyx watch: the progress line of a recursive setup (see tool.h). */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <notifyx.h>

#include "tool.h"

/* ---- progress of a recursive setup (a terminal on stderr only) ------------ */

/*
 * The library has no progress callback: adding a recursive watch is one call.
 * While it runs, a thread counts the kernel watches behind the handle's
 * descriptor, which is an epoll set (its /proc fdinfo lists "tfd:" lines)
 * of the backend's descriptors (inotify's fdinfo has one "inotify wd:" line
 * per kernel watch, fanotify's one "fanotify" line per mark).  Where there
 * is nothing to count (the scanning backends), the elapsed time is shown.
 */
struct progress {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int done;
	int fd;
	const char *path;
	struct timespec start;
};

static long count_lines(const char *file, const char *prefix, long (*each)(const char *))
{
	char line[256];
	size_t n = strlen(prefix);
	long count = 0;
	FILE *f = fopen(file, "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, prefix, n) == 0)
			count += each ? each(line + n) : 1;
	fclose(f);
	return count;
}

static long count_target(const char *tfd)
{
	char file[64];

	snprintf(file, sizeof(file), "/proc/self/fdinfo/%d", atoi(tfd));
	return count_lines(file, "inotify wd:", NULL) + count_lines(file, "fanotify ", NULL);
}

/* Kernel watches and marks behind the epoll descriptor fd. */
static long kernel_watches(int fd)
{
	char file[64];

	snprintf(file, sizeof(file), "/proc/self/fdinfo/%d", fd);
	return count_lines(file, "tfd:", count_target);
}

static void progress_line(struct progress *p, int final)
{
	struct timespec now;
	long n = kernel_watches(p->fd);
	double secs;

	clock_gettime(CLOCK_MONOTONIC, &now);
	secs = (double)(now.tv_sec - p->start.tv_sec) + (now.tv_nsec - p->start.tv_nsec) / 1e9;
	/* \r and "erase to the end of the line": one line that updates itself */
	fprintf(stderr, "\r%s: %s %s: ", progname, final ? "watching" : "setting up", p->path);
	if (n > 0)
		fprintf(stderr, "%ld director%s%s, ", n, n == 1 ? "y" : "ies",
			final ? "" : " so far");
	fprintf(stderr, "%.1f s\033[K%s", secs, final ? "\n" : "");
	fflush(stderr);
}

static void *progress_main(void *arg)
{
	struct progress *p = arg;
	struct timespec until;

	pthread_mutex_lock(&p->lock);
	while (!p->done) {
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 200 * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&p->cond, &p->lock, &until);
		if (!p->done)
			progress_line(p, 0);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int add_watch_progress(struct notifyx *nx, const char *path, uint32_t events,
			      uint32_t flags)
{
	struct progress p = {
		.lock = PTHREAD_MUTEX_INITIALIZER,
		.cond = PTHREAD_COND_INITIALIZER,
		.fd = notifyx_fd(nx),
		.path = path,
	};
	pthread_t thread;
	int wd, err, started;

	clock_gettime(CLOCK_MONOTONIC, &p.start);
	started = pthread_create(&thread, NULL, progress_main, &p) == 0;
	wd = notifyx_add_watch(nx, path, events, flags);
	err = errno;
	if (started) {
		pthread_mutex_lock(&p.lock);
		p.done = 1;
		pthread_cond_signal(&p.cond);
		pthread_mutex_unlock(&p.lock);
		pthread_join(thread, NULL);
	}
	if (wd >= 0)
		progress_line(&p, 1);
	else if (started)
		fputs("\r\033[K", stderr); /* the error message takes the line */
	errno = err;
	return wd;
}
