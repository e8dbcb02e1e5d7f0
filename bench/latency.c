/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Latency: one file created, then the time until the watcher's line for it
 * reaches the benchmark, COUNT times per watcher and round; each watcher
 * writes one line per event to a pipe (the raw reader and the library as the
 * tools do).  Rounds interleave the watchers so that load on the machine
 * falls on all of them.  Median and 99th percentile; ratios against the raw
 * inotify reader of the same run.  Then the same for a file moved in from a
 * directory beside the watched one: a lone arrival (inotify IN_MOVED_TO),
 * which may be the first half of an exchange with that place, whose second
 * half the library waits for (API.md's hold) when the move is the last
 * record it read.
 *
 *   bench/latency [COUNT [ROUNDS]]   (default 200 changes, 3 rounds; at most
 *                                     10 s per watcher and round)
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

/* What is timed: a file made in the watched directory, or made beside it
 * and moved in. */
struct kind {
	const char *what, *workload;
	unsigned events;
	bool move_in;
};

static const struct kind kinds[] = {
	{ "a file created", "latency", B_CREATE, false },
	/* (CREATE too: the command-line watchers' readiness probe is a file made) */
	{ "a file moved in from beside the watch", "latency-move-in", B_CREATE | B_MOVED, true },
};

/* One change of kind k named name in dir (outside: where a move comes from). */
static void change(const struct kind *k, const char *dir, const char *outside, const char *name)
{
	char from[4200], to[4200];

	if (!k->move_in) {
		touch(dir, name);
		return;
	}
	snprintf(from, sizeof(from), "%s/%s", outside, name);
	snprintf(to, sizeof(to), "%s/%s", dir, name);
	if (rename(from, to) < 0)
		perror("latency: rename");
}

static void measure(const struct kind *k, struct watcher *w, int nw, int count, int rounds)
{
	double **lat = calloc(nw, sizeof(*lat)), med[16] = { 0 }, p99[16] = { 0 };
	int *n = calloc(nw, sizeof(int)), *lost = calloc(nw, sizeof(int));
	static struct wproc p;

	for (int i = 0; i < nw; i++)
		lat[i] = calloc((size_t)count * rounds, sizeof(double));
	for (int r = 0; r < rounds; r++) {
		for (int j = 0; j < nw; j++) {
			int i = r % 2 ? nw - 1 - j : j; /* order changes run by run */
			struct wopts o = { .events = k->events, .lines = 1 };
			char *outside;

			if (w[i].absent)
				continue;
			o.dir = mktemp_dir();
			outside = mktemp_dir();
			if (wp_start(&p, &w[i], &o) < 0 || wp_ready(&p, o.dir, 10) < 0) {
				fprintf(stderr, "latency: %s did not start\n", w[i].name);
				goto next;
			}
			double budget = now() + 10;
			for (int c = 0; c < count && now() < budget; c++) {
				char name[32], path[4200], *l;

				snprintf(name, sizeof(name), "L%02d_%06d", r, c);
				if (k->move_in)
					touch(outside, name);
				double t0 = now();
				change(k, o.dir, outside, name);
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
			rm_tree(outside);
			free((char *)o.dir);
			free(outside);
		}
	}

	printf("latency: %s to its event read from the watcher's pipe, up to %d per watcher in "
	       "each of %d rounds\n", k->what, count, rounds);
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
		tsv(k->workload, count, w[i].name, "median_us", med[i]);
		tsv(k->workload, count, w[i].name, "p99_us", p99[i]);
		tsv(k->workload, count, w[i].name, "median_ratio_raw", med[0] ? med[i] / med[0] : 0);
		tsv(k->workload, count, w[i].name, "p99_ratio_raw", p99[0] ? p99[i] / p99[0] : 0);
	}
	if (med[0] && med[1]) {
		int met = med[1] / med[0] <= 1.2 && p99[1] / p99[0] <= 1.2;
		printf("target: inotify backend median and p99 <= 1.2x raw: median %.2fx, p99 %.2fx %s\n",
		       med[1] / med[0], p99[1] / p99[0], met ? "MET" : "MISSED");
	}
	for (int i = 0; i < nw; i++)
		free(lat[i]);
	free(lat);
	free(n);
	free(lost);
}

int main(int argc, char **argv)
{
	int count = argc > 1 ? atoi(argv[1]) : 200, rounds = argc > 2 ? atoi(argv[2]) : 3;
	struct watcher *w;
	int nw = watchers_all(&w);

	pin_cpu();
	if (count < 1 || rounds < 1)
		return fprintf(stderr, "usage: %s [COUNT [ROUNDS]]\n", argv[0]), 2;
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		measure(&kinds[k], w, nw, count, rounds);
	return 0;
}
