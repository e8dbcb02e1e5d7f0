/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * How long a recursive watch takes to be ready, against the raw kernel
 * interface in the same run: nftw(3) + inotify_add_watch(2) on every
 * directory (what a minimal C watcher does), then notifyx_add_watch with
 * NOTIFYX_WATCH_RECURSIVE.  Prints the median of several runs and the ratio.
 *
 *   bench/recursive-setup [DIRS [RUNS [fanotify]]]   (default 10000 directories, 5 runs)
 *
 * With "fanotify", the fanotify backend is measured too, in the same runs,
 * and its ratio to the inotify backend printed: with CAP_SYS_ADMIN its
 * recursive watch is one filesystem mark per filesystem, no walk.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <notifyx.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int raw_fd;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int add_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (type == FTW_D && inotify_add_watch(raw_fd, path, IN_ALL_EVENTS | IN_ONLYDIR) < 0)
		return -1;
	return 0;
}

/* A tree of n directories, 10 per directory (directory i lives in
 * directory (i - 1) / 10), with a file in each. */
static void make_tree(const char *root, int n)
{
	char **path = calloc(n, sizeof(*path)), file[4200];

	for (int i = 0; i < n; i++) {
		const char *parent = i ? path[(i - 1) / 10] : root;
		if (asprintf(&path[i], "%s/d%d", parent, i) < 0 || mkdir(path[i], 0755) < 0)
			exit(1);
		snprintf(file, sizeof(file), "%s/f", path[i]);
		fclose(fopen(file, "w"));
	}
	for (int i = 0; i < n; i++)
		free(path[i]);
	free(path);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10000, runs = argc > 2 ? atoi(argv[2]) : 5;
	char root[] = "/tmp/nx-bench.XXXXXX";
	double raw[64], lib[64], fan[64];
	int with_fan = argc > 3 && !strcmp(argv[3], "fanotify");

	if (!mkdtemp(root) || runs > 64)
		return 1;
	make_tree(root, n);
	for (int r = 0; r < runs; r++) {
		double t = now();
		raw_fd = inotify_init1(IN_CLOEXEC);
		if (nftw(root, add_one, 64, FTW_PHYS) < 0)
			return perror("nftw"), 1;
		raw[r] = now() - t;
		close(raw_fd);

		t = now();
		struct notifyx_config c = { .size = sizeof(c), .backend = NOTIFYX_BACKEND_INOTIFY };
		struct notifyx *nx = notifyx_open(&c);
		if (!nx || notifyx_add_watch(nx, root, NOTIFYX_ALL_EVENTS, NOTIFYX_WATCH_RECURSIVE) < 0)
			return perror("notifyx"), 1;
		lib[r] = now() - t;
		notifyx_close(nx);
		if (!with_fan)
			continue;
		t = now();
		c.backend = NOTIFYX_BACKEND_FANOTIFY;
		if (!(nx = notifyx_open(&c)) ||
		    notifyx_add_watch(nx, root, NOTIFYX_ALL_EVENTS, NOTIFYX_WATCH_RECURSIVE) < 0)
			return perror("notifyx fanotify"), 1;
		fan[r] = now() - t;
		notifyx_close(nx);
	}
	qsort(raw, runs, sizeof(double), cmp);
	qsort(lib, runs, sizeof(double), cmp);
	printf("recursive setup, %d directories, median of %d runs:\n", n, runs);
	printf("  raw nftw + inotify_add_watch  %8.1f ms\n", raw[runs / 2] * 1e3);
	printf("  notifyx inotify backend       %8.1f ms\n", lib[runs / 2] * 1e3);
	printf("  ratio notifyx / raw           %8.2f\n", lib[runs / 2] / raw[runs / 2]);
	if (with_fan) {
		qsort(fan, runs, sizeof(double), cmp);
		printf("  notifyx fanotify backend      %8.3f ms (%s)\n", fan[runs / 2] * 1e3,
		       geteuid() ? "inode marks" : "filesystem marks");
		printf("  ratio fanotify / inotify      %8.4f\n", fan[runs / 2] / lib[runs / 2]);
	}
	char cmd[64];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd) != 0;
}
