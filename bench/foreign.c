/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Foreign load: a recursive watch on a tree of DIRS directories while OPS
 * files are created, written and deleted in a sibling directory on the same
 * filesystem.  None of it concerns the watcher: the CPU it spends meanwhile
 * is the cost of activity elsewhere (nothing for inotify; filtering for a
 * filesystem-wide fanotify mark; scans for the scanning backends).  Shown
 * against the CPU of the process making the load, in the same run.
 *
 *   bench/foreign [OPS [RUNS [DIRS]]]   (default 20000 files, 3 runs, 1000 dirs)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

#define MAX_RUNS 64

static double self_cpu(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

static void load(const char *dir, int n)
{
	int dfd = open(dir, O_PATH | O_DIRECTORY);
	char name[32], data[64];

	memset(data, 'x', sizeof(data));
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "o%d", i % 100);
		int fd = openat(dfd, name, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0 || write(fd, data, sizeof(data)) != sizeof(data))
			exit(1);
		close(fd);
		if (i % 100 == 99)
			for (int k = 0; k < 100; k++) {
				snprintf(name, sizeof(name), "o%d", k);
				unlinkat(dfd, name, 0);
			}
	}
	close(dfd);
}

int main(int argc, char **argv)
{
	int ops = argc > 1 ? atoi(argv[1]) : 20000, runs = argc > 2 ? atoi(argv[2]) : 3;
	int dirs = argc > 3 ? atoi(argv[3]) : 1000;
	struct watcher *w;
	int nw = watchers_all(&w);
	double (*share)[MAX_RUNS] = calloc(nw, sizeof(*share)), (*cpu)[MAX_RUNS] = calloc(nw, sizeof(*cpu));
	int *ok = calloc(nw, sizeof(int));
	long *lines = calloc(nw, sizeof(long));
	char *root = mktemp_dir(), watched[4200], other[4200];
	static struct wproc p;

	if (ops < 1 || runs < 1 || runs > MAX_RUNS || dirs < 1)
		return fprintf(stderr, "usage: %s [OPS [RUNS [DIRS]]]\n", argv[0]), 2;
	snprintf(watched, sizeof(watched), "%s/watched", root);
	snprintf(other, sizeof(other), "%s/other", root);
	mkdir(watched, 0755);
	mkdir(other, 0755);
	char *last = make_tree(watched, dirs);
	for (int r = 0; r < runs; r++) {
		for (int i = 0; i < nw; i++) {
			struct wopts o = { .dir = watched, .events = B_CREATE | B_MODIFY | B_DELETE,
					   .recursive = 1, .lines = 1 };

			if (w[i].absent)
				continue;
			if (wp_start(&p, &w[i], &o) < 0 || wp_ready(&p, last, 30) < 0) {
				fprintf(stderr, "foreign: %s did not start\n", w[i].name);
				wp_stop(&p);
				continue;
			}
			double c0 = wp_cpu(&p), s0 = self_cpu();
			load(other, ops);
			double s1 = self_cpu();
			while (wp_line(&p, 0.3)) /* anything it reports, and time to catch up */
				lines[i]++;
			cpu[i][ok[i]] = wp_cpu(&p) - c0;
			share[i][ok[i]] = cpu[i][ok[i]] / (s1 - s0);
			ok[i]++;
			wp_stop(&p);
		}
	}
	rm_tree(root);

	printf("foreign load: %d files created, written, deleted beside a watched tree of %d "
	       "directories; median of %d runs\n", ops, dirs, runs);
	printf("  %-14s %12s %18s %10s\n", "watcher", "CPU ms", "x load's own CPU", "reported");
	for (int i = 0; i < nw; i++) {
		if (w[i].absent || !ok[i]) {
			printf("  %-14s %s\n", w[i].name, w[i].absent ? w[i].absent : "failed");
			continue;
		}
		double c = median(cpu[i], ok[i]), s = median(share[i], ok[i]);
		printf("  %-14s %12.2f %18.4f %10ld\n", w[i].name, c * 1e3, s, lines[i]);
		tsv("foreign", ops, w[i].name, "cpu_ms", c * 1e3);
		tsv("foreign", ops, w[i].name, "ratio_load_cpu", s);
	}
	printf("  (CPU of the watcher during the load and 0.3 s after it; reported: lines it printed,\n"
	       "   which should be none)\n");
	return 0;
}
