/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The dnotify backend on a large tree: a recursive watch of DIRS directories
 * (fanout 10, one file each), then COUNT files created one every INTERVAL ms
 * in directories picked at random (the same sequence for every watcher).
 * For each watcher (dnotify, and inotify as the reference, in the same run,
 * the order reversed every other round): the median and 99th percentile of
 * the time from a file's creation to its line read from the watcher's pipe,
 * the watcher's CPU time over the creations (from /proc, all its threads)
 * against the wall time they took, and the files never reported (a watcher
 * gets 5 s after the last creation).  A backend that scanned the whole tree
 * on each signal could not keep up: its latency would grow with the tree.
 *
 *   bench/dnotify-scale [DIRS [COUNT [INTERVAL_MS [ROUNDS]]]]
 *                       (default 10000 directories, 250 files, 20 ms, 1 round)
 * Target: dnotify median latency <= 50 ms.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

/* The paths (relative to the root) of make_tree's directories. */
static char **tree_dirs(int n)
{
	char **p = calloc(n, sizeof(*p));

	for (int i = 0; i < n; i++)
		if (asprintf(&p[i], "%s%sd%d", i ? p[(i - 1) / 10] : "", i ? "/" : "", i) < 0)
			exit(1);
	return p;
}

struct result {
	double *lat;
	int n, lost;
	double cpu, wall;
};

static void one(const struct watcher *w, const char *root, char **dirs, int ndirs, int count,
		double interval, int round, struct result *res)
{
	static struct wproc p;
	struct wopts o = { .dir = root, .events = B_CREATE, .recursive = 1, .lines = 1 };
	double *t0 = calloc(count, sizeof(double)), start, next, cpu0, end;
	char *seen = calloc(count, 1), *l;
	unsigned seed = 1234 + round;
	int made = 0, got = 0;

	if (wp_start(&p, w, &o) < 0 || wp_ready(&p, root, 120) < 0) {
		fprintf(stderr, "dnotify-scale: %s did not start\n", w->name);
		res->lost += count;
		goto out;
	}
	cpu0 = wp_cpu(&p);
	start = next = now();
	while (got < count) {
		double wait;

		if (made < count && now() >= next) {
			char path[4200];
			snprintf(path, sizeof(path), "%s/%s", root, dirs[rand_r(&seed) % ndirs]);
			char name[48];
			snprintf(name, sizeof(name), "S%d_%d_%s", made, round, w->name);
			t0[made++] = now();
			touch(path, name);
			next += interval;
		}
		wait = made < count ? next - now() : start + count * interval + 5 - now();
		if (made == count && wait <= 0)
			break;
		if (!(l = wp_line(&p, wait > 0 ? wait : 0)))
			continue;
		const char *base = strrchr(l, '/');
		int k;
		if (sscanf(base ? base + 1 : l, "S%d_", &k) == 1 && k >= 0 && k < made && !seen[k]) {
			seen[k] = 1;
			res->lat[res->n++] = now() - t0[k];
			got++;
		}
	}
	end = now();
	res->cpu += wp_cpu(&p) - cpu0;
	res->wall += end - start;
	res->lost += count - got;
out:
	wp_stop(&p);
	free(t0);
	free(seen);
}

int main(int argc, char **argv)
{
	int ndirs = argc > 1 ? atoi(argv[1]) : 10000, count = argc > 2 ? atoi(argv[2]) : 250;
	double interval = (argc > 3 ? atoi(argv[3]) : 20) / 1000.0;
	int rounds = argc > 4 ? atoi(argv[4]) : 1;
	static const char *const names[] = { "inotify", "dnotify" };
	const struct watcher *sel[2] = { NULL, NULL };
	struct result res[2];
	struct watcher *w;
	int nw = watchers_all(&w);
	char *root, **dirs;

	if (ndirs < 1 || count < 1 || interval <= 0 || rounds < 1)
		return fprintf(stderr, "usage: %s [DIRS [COUNT [INTERVAL_MS [ROUNDS]]]]\n", argv[0]), 2;
	pin_cpu();
	for (int i = 0; i < nw; i++)
		for (int j = 0; j < 2; j++)
			if (!strcmp(w[i].name, names[j]))
				sel[j] = &w[i];
	memset(res, 0, sizeof(res));
	for (int j = 0; j < 2; j++)
		res[j].lat = calloc((size_t)count * rounds, sizeof(double));
	root = mktemp_dir();
	free(make_tree(root, ndirs));
	dirs = tree_dirs(ndirs);
	for (int r = 0; r < rounds; r++)
		for (int jj = 0; jj < 2; jj++) {
			int j = r % 2 ? 1 - jj : jj;
			if (sel[j] && !sel[j]->absent)
				one(sel[j], root, dirs, ndirs, count, interval, r, &res[j]);
		}
	rm_tree(root);

	printf("dnotify-scale: a recursive watch of %d directories, a file created every %.0f ms "
	       "in a random one, %d files x %d rounds\n", ndirs, interval * 1e3, count, rounds);
	printf("  %-10s %8s %12s %12s %10s %8s %6s\n", "watcher", "samples", "median ms", "p99 ms",
	       "CPU s", "CPU %", "lost");
	double med[2] = { -1, -1 };
	for (int j = 0; j < 2; j++) {
		if (!sel[j] || sel[j]->absent || !res[j].n) {
			printf("  %-10s %s\n", names[j], !sel[j] ? "unknown" : sel[j]->absent ? sel[j]->absent : "failed");
			continue;
		}
		double p99 = pctl(res[j].lat, res[j].n, 0.99) * 1e3;
		med[j] = median(res[j].lat, res[j].n) * 1e3;
		printf("  %-10s %8d %12.2f %12.2f %10.3f %8.2f %6d\n", names[j], res[j].n, med[j], p99,
		       res[j].cpu, 100 * res[j].cpu / res[j].wall, res[j].lost);
		tsv("dnotify-scale", ndirs, names[j], "median_ms", med[j]);
		tsv("dnotify-scale", ndirs, names[j], "p99_ms", p99);
		tsv("dnotify-scale", ndirs, names[j], "cpu_s", res[j].cpu);
		tsv("dnotify-scale", ndirs, names[j], "lost", res[j].lost);
	}
	if (med[1] >= 0)
		printf("target: dnotify median <= 50 ms: %.2f ms (%.2fx inotify) %s\n", med[1],
		       med[0] > 0 ? med[1] / med[0] : 0, med[1] <= 50 && !res[1].lost ? "MET" : "MISSED");
	return 0;
}
