/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The fanotify backend against the inotify backend, in the same run (medians
 * of several runs, ratios printed):
 *
 * 1. burst: a thread creates N files in a watched directory (recursive
 *    watch, CREATE) as fast as it can while the main thread reads; the time
 *    until the last CREATE is read gives events per second;
 * 2. foreign: the same N creations in a directory outside the watched tree
 *    but on the same filesystem, and a marker in the tree at the end; the CPU
 *    time of the reading thread until the marker is read is the cost of
 *    activity elsewhere (with filesystem marks every such event reaches the
 *    library, which filters it out), reported per 100,000 events.
 *
 *   bench/fanotify-events [N [RUNS]]    (default 100000 files, 5 runs)
 *
 * Run it in a filesystem of its own to keep other programs' activity out:
 *   top_builddir=. tests/fanotify-private-tmp.sh bench/fanotify-events
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <notifyx.h>
#include <poll.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct job {
	const char *dir;
	int n;
};

static volatile int creator_done;

static void *creator(void *arg)
{
	const struct job *j = arg;
	char p[4200];

	for (int i = 0; i < j->n; i++) {
		snprintf(p, sizeof(p), "%s/f%d", j->dir, i);
		close(open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
	}
	snprintf(p, sizeof(p), "%s/../tree/zz-marker", j->dir);
	close(open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
	__atomic_store_n(&creator_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Reads until count CREATEs (or the marker) are read; returns wall seconds,
 * *cpu the reading thread's CPU seconds, *lost the OVERFLOWs. */
static double run(uint32_t backend, const char *root, const char *where, int n, bool marker,
		  double *cpu, int *lost)
{
	struct notifyx_config c = { .size = sizeof(c), .backend = backend,
				    .flags = NOTIFYX_NONBLOCK, .queue_max = 4 * (uint32_t)n };
	static char buf[1 << 20];
	char tree[4200];
	struct notifyx *nx = notifyx_open(&c);
	struct job j = { where, n };
	pthread_t th;
	int got = 0;
	double t0, c0;

	snprintf(tree, sizeof(tree), "%s/tree", root);
	if (!nx || notifyx_add_watch(nx, tree, NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE) < 0) {
		perror("notifyx");
		exit(1);
	}
	*lost = 0;
	t0 = clock_s(CLOCK_MONOTONIC);
	c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
	creator_done = 0;
	pthread_create(&th, NULL, creator, &j);
	while (marker ? got < 1 : got < n) {
		struct pollfd p = { .fd = notifyx_fd(nx), .events = POLLIN };
		ssize_t len;
		if (poll(&p, 1, 5000) == 0) {
			if (!__atomic_load_n(&creator_done, __ATOMIC_ACQUIRE))
				continue; /* a slow machine: the creations are not done */
			fprintf(stderr, "timeout: %d of %d events\n", got, n);
			break;
		}
		while ((len = notifyx_read(nx, buf, sizeof(buf))) > 0) {
			for (const struct notifyx_event *e = (const void *)buf;
			     (const char *)e < buf + len; e = notifyx_event_next(e)) {
				if (e->mask == NOTIFYX_OVERFLOW)
					++*lost;
				else if (e->mask == NOTIFYX_CREATE &&
					 (!marker || !strcmp(notifyx_event_path(e), "zz-marker")))
					got++;
			}
		}
		if (*lost && !marker)
			break; /* counted lost: the burst is not measured */
	}
	double t = clock_s(CLOCK_MONOTONIC) - t0;
	*cpu = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
	pthread_join(th, NULL);
	notifyx_close(nx);
	return t;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void clean(const char *dir)
{
	char cmd[3 * 2048 + 64];

	snprintf(cmd, sizeof(cmd), "rm -rf %s/* && mkdir %s/tree %s/other", dir, dir, dir);
	if (system(cmd) != 0)
		exit(1);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100000, runs = argc > 2 ? atoi(argv[2]) : 5;
	static const uint32_t be[2] = { NOTIFYX_BACKEND_INOTIFY, NOTIFYX_BACKEND_FANOTIFY };
	double rate[2][64], fcpu[2][64], cpu;
	char root[2048], tree[4200], other[4200];
	int lost, lost_total[2] = { 0, 0 };

	/* TMPDIR: a filesystem of its own (tests/fanotify-private-tmp.sh) keeps
	 * the activity of other programs out of the figures. */
	snprintf(root, sizeof(root), "%s/nx-bench-ev.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(root) || runs > 64 || n < 1)
		return 1;
	snprintf(tree, sizeof(tree), "%s/tree", root);
	snprintf(other, sizeof(other), "%s/other", root);
	for (int r = 0; r < runs; r++) {
		for (int b = 0; b < 2; b++) {
			clean(root);
			double t = run(be[b], root, tree, n, false, &cpu, &lost);
			rate[b][r] = lost ? 0 : n / t;
			lost_total[b] += lost;
			clean(root);
			run(be[b], root, other, n, true, &cpu, &lost);
			fcpu[b][r] = cpu * 100000.0 / n;
		}
	}
	for (int b = 0; b < 2; b++) {
		qsort(rate[b], runs, sizeof(double), cmp);
		qsort(fcpu[b], runs, sizeof(double), cmp);
	}
	printf("burst of %d creations in a recursive watch, median of %d runs (%s):\n", n, runs,
	       geteuid() ? "fanotify: inode marks" : "fanotify: filesystem marks");
	printf("  inotify backend   %10.0f events/s%s\n", rate[0][runs / 2],
	       lost_total[0] ? " (runs with OVERFLOW count as 0)" : "");
	printf("  fanotify backend  %10.0f events/s%s\n", rate[1][runs / 2],
	       lost_total[1] ? " (runs with OVERFLOW count as 0)" : "");
	printf("  ratio fanotify / inotify  %.2f\n",
	       rate[0][runs / 2] ? rate[1][runs / 2] / rate[0][runs / 2] : 0);
	printf("activity elsewhere on the filesystem, %d creations outside the tree:\n", n);
	printf("  inotify backend   %8.4f CPU s per 100k foreign events\n", fcpu[0][runs / 2]);
	printf("  fanotify backend  %8.4f CPU s per 100k foreign events\n", fcpu[1][runs / 2]);
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd) != 0;
}
