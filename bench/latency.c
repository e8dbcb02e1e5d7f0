/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Latency: one file created, then the time until the watcher's line for it
 * reaches the benchmark, COUNT times per watcher and round; each watcher
 * writes one line per event to a pipe (the raw reader and the library as the
 * tools do).  Rounds interleave the watchers so that load on the machine
 * falls on all of them.  Median and 99th percentile; ratios against the raw
 * inotify reader of the same run.
 *
 *   bench/latency [COUNT [ROUNDS]]   (default 200 changes, 3 rounds; at most
 *                                     10 s per watcher and round)
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv)
{
	int count = argc > 1 ? atoi(argv[1]) : 200, rounds = argc > 2 ? atoi(argv[2]) : 3;
	struct watcher *w;
	int nw = watchers_all(&w);
	double **lat = calloc(nw, sizeof(*lat));
	int *n = calloc(nw, sizeof(int)), *lost = calloc(nw, sizeof(int));
	static struct wproc p;

	pin_cpu();

	if (count < 1 || rounds < 1)
		return fprintf(stderr, "usage: %s [COUNT [ROUNDS]]\n", argv[0]), 2;
	for (int i = 0; i < nw; i++)
		lat[i] = calloc((size_t)count * rounds, sizeof(double));
	for (int r = 0; r < rounds; r++) {
		for (int j = 0; j < nw; j++) {
			int i = r % 2 ? nw - 1 - j : j; /* order changes run by run */
			struct wopts o = { .events = B_CREATE, .lines = 1 };

			if (w[i].absent)
				continue;
			o.dir = mktemp_dir();
			if (wp_start(&p, &w[i], &o) < 0 || wp_ready(&p, o.dir, 10) < 0) {
				fprintf(stderr, "latency: %s did not start\n", w[i].name);
				goto next;
			}
			double budget = now() + 10;
			for (int k = 0; k < count && now() < budget; k++) {
				char name[32], path[4200], *l;

				snprintf(name, sizeof(name), "L%02d_%06d", r, k);
				double t0 = now();
				touch(o.dir, name);
				while ((l = wp_line(&p, 5)) && !strstr(l, name))
					;
				if (l)
					lat[i][n[i]++] = now() - t0;
				else
					lost[i]++;
				snprintf(path, sizeof(path), "%s/%s", o.dir, name);
				unlink(path);
			}
next:
			wp_stop(&p);
			rm_tree(o.dir);
			free((char *)o.dir);
		}
	}

	double med[16] = { 0 }, p99[16] = { 0 };
	printf("latency: a file created to its event read from the watcher's pipe, up to %d per "
	       "watcher in each of %d rounds\n", count, rounds);
	printf("  %-14s %8s %12s %8s %12s %8s %6s\n", "watcher", "samples", "median us", "x raw",
	       "p99 us", "x raw", "lost");
	for (int i = 0; i < nw; i++) {
		if (w[i].absent || !n[i]) {
			printf("  %-14s %s\n", w[i].name, w[i].absent ? w[i].absent : "failed");
			continue;
		}
		p99[i] = pctl(lat[i], n[i], 0.99) * 1e6;
		med[i] = median(lat[i], n[i]) * 1e6;
		printf("  %-14s %8d %12.1f %8.2f %12.1f %8.2f %6d\n", w[i].name, n[i], med[i],
		       med[0] ? med[i] / med[0] : 0, p99[i], p99[0] ? p99[i] / p99[0] : 0, lost[i]);
		tsv("latency", count, w[i].name, "median_us", med[i]);
		tsv("latency", count, w[i].name, "p99_us", p99[i]);
		tsv("latency", count, w[i].name, "median_ratio_raw", med[0] ? med[i] / med[0] : 0);
		tsv("latency", count, w[i].name, "p99_ratio_raw", p99[0] ? p99[i] / p99[0] : 0);
	}
	if (med[0] && med[1]) {
		int met = med[1] / med[0] <= 1.2 && p99[1] / p99[0] <= 1.2;
		printf("target: inotify backend median and p99 <= 1.2x raw: median %.2fx, p99 %.2fx %s\n",
		       med[1] / med[0], p99[1] / p99[0], met ? "MET" : "MISSED");
	}
	return 0;
}
