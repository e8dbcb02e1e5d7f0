/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * New-directory race: `mkdir -p rI/a/b/c/d` and a file FI.x made inside at
 * once, COUNT times in a row, under a recursive watch; then the share of
 * files each watcher reported exactly once (a file made before the watcher
 * watched its new directory is missed by a naive reader).  The raw reader is
 * the naive one: it watches a new directory when it reads its CREATE.
 *
 *   bench/race [COUNT [RUNS]]   (default 200 trees, 3 runs)
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common.h"

/* Counts each "FN.x" the line names (a path component of its own). */
static void scan_line(const char *line, int *seen, int count)
{
	for (const char *s = line; (s = strchr(s, 'F')); s++) {
		char *e;
		long v;

		if (s > line && s[-1] != '/' && s[-1] != ' ' && s[-1] != '"')
			continue;
		v = strtol(s + 1, &e, 10);
		if (e > s + 1 && e[0] == '.' && e[1] == 'x' && !isalnum((unsigned char)e[2]) &&
		    v >= 0 && v < count)
			seen[v]++;
	}
}

int main(int argc, char **argv)
{
	int count = argc > 1 ? atoi(argv[1]) : 200, runs = argc > 2 ? atoi(argv[2]) : 3;
	struct watcher *w;
	int nw = watchers_all(&w);
	int *seen = calloc(count > 0 ? count : 1, sizeof(int));
	long (*tot)[3] = calloc(nw, sizeof(*tot)); /* exactly once, missed, more than once */
	static struct wproc p;

	if (count < 1 || runs < 1)
		return fprintf(stderr, "usage: %s [COUNT [RUNS]]\n", argv[0]), 2;
	for (int r = 0; r < runs; r++) {
		for (int i = 0; i < nw; i++) {
			struct wopts o = { .events = B_CREATE | B_MOVED, .recursive = 1, .lines = 1 };
			char *l;

			if (w[i].absent)
				continue;
			o.dir = mktemp_dir();
			if (wp_start(&p, &w[i], &o) < 0 || wp_ready(&p, o.dir, 10) < 0) {
				fprintf(stderr, "race: %s did not start\n", w[i].name);
				goto next;
			}
			memset(seen, 0, count * sizeof(int));
			for (int k = 0; k < count; k++) {
				char d[4200], f[32];
				int len = snprintf(d, sizeof(d), "%s/r%d", o.dir, k);

				mkdir(d, 0755);
				for (const char *c = "abcd"; *c; c++) {
					len += snprintf(d + len, sizeof(d) - len, "/%c", *c);
					mkdir(d, 0755);
				}
				snprintf(f, sizeof(f), "F%d.x", k);
				touch(d, f);
			}
			touch(o.dir, "STOP");
			while ((l = wp_line(&p, 10)) && !strstr(l, "STOP"))
				scan_line(l, seen, count);
			if (!l)
				fprintf(stderr, "race: %s: no STOP within 10 s\n", w[i].name);
			/* A scan reports what it found in no particular order: the
			 * rest of the batch that held STOP still counts (and so
			 * does a late duplicate, for every watcher). */
			while (l && (l = wp_line(&p, 0.3)))
				scan_line(l, seen, count);
			for (int k = 0; k < count; k++)
				tot[i][seen[k] == 1 ? 0 : seen[k] == 0 ? 1 : 2]++;
next:
			wp_stop(&p);
			rm_tree(o.dir);
			free((char *)o.dir);
		}
	}

	printf("new-directory race: mkdir -p rI/a/b/c/d + a file inside, %d times, %d runs\n",
	       count, runs);
	printf("  %-14s %14s %10s %14s\n", "watcher", "exactly once", "missed", "more than once");
	for (int i = 0; i < nw; i++) {
		long all = tot[i][0] + tot[i][1] + tot[i][2];

		if (w[i].absent || !all) {
			printf("  %-14s %s\n", w[i].name, w[i].absent ? w[i].absent : "failed");
			continue;
		}
		printf("  %-14s %13.1f%% %9.1f%% %13.1f%%\n", w[i].name, 100.0 * tot[i][0] / all,
		       100.0 * tot[i][1] / all, 100.0 * tot[i][2] / all);
		tsv("race", count, w[i].name, "exactly_once_pct", 100.0 * tot[i][0] / all);
		tsv("race", count, w[i].name, "missed_pct", 100.0 * tot[i][1] / all);
		tsv("race", count, w[i].name, "duplicate_pct", 100.0 * tot[i][2] / all);
	}
	for (int i = 0; i < nw; i++) {
		long all = tot[i][0] + tot[i][1] + tot[i][2];

		if (w[i].kind == W_LIB && all)
			printf("target: %s backend 100%% exactly once: %.1f%% %s\n", w[i].name,
			       100.0 * tot[i][0] / all, tot[i][0] == all ? "MET" : "MISSED");
	}
	return 0;
}
