/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Moves out: FILES files moved, one rename after another and as fast as the
 * kernel takes them, from a watched directory to one beside it that no watch
 * covers (a trash directory), the watcher running meanwhile.  Each move is a
 * lone first half (inotify IN_MOVED_FROM), which the library holds for its
 * second half (at most 10 ms, less once 128 later records are read: API.md);
 * what is timed is how long after the last rename the watcher has read the
 * last one (the entry STOP, moved last), and whether every move was reported
 * (none lost to an OVERFLOW).  The raw inotify reader, the inotify and the
 * fanotify backends, and the inotify backend read as an event loop reads
 * (poll(2), then a non-blocking read: "inotify loop"), interleaved run by
 * run; medians; ratios against the raw reader of the same run.  (The
 * scanning backends see DELETEs, the tools are not compared here.)  Each
 * size is measured twice: the watcher on the CPU of the renaming program
 * ("same": what is timed is then mostly the backlog the scheduler let build
 * up, which grows with the watcher's CPU time per wakeup), and on the other
 * CPUs ("own", where the machine has them).
 *
 *   bench/moves-out [FILES[,FILES...] [RUNS]]   (default 1000,10000,100000 and 3 runs)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <notifyx.h>

#include "common.h"

#define MAX_RUNS 64
#define MAX_SIZES 8
#define MAX_WATCHERS 16

static void make_files(const char *dir, int n)
{
	char name[32];

	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		touch(dir, name);
	}
	touch(dir, "STOP");
}

/* Moves every file of w to out, STOP last. */
static void move_out(const char *w, const char *out, int n)
{
	int wfd = open(w, O_PATH | O_DIRECTORY), ofd = open(out, O_PATH | O_DIRECTORY);
	char name[32];

	for (int i = 0; i <= n; i++) {
		if (i < n)
			snprintf(name, sizeof(name), "f%d", i);
		else
			strcpy(name, "STOP");
		if (renameat(wfd, name, ofd, name) < 0)
			exit(1);
	}
	close(wfd);
	close(ofd);
}

/* The raw reader, the inotify and fanotify backends with their defaults,
 * and the inotify backend read from an event loop ("inotify loop"). */
static bool measured(const struct watcher *w)
{
	return w->kind == W_RAW ||
	       (w->kind == W_LIB && !w->unpriv && !w->env &&
		(w->backend == NOTIFYX_BACKEND_INOTIFY || w->backend == NOTIFYX_BACKEND_FANOTIFY));
}

/* One size, the watchers on the renaming program's CPU or on their own:
 * runs, then the line of each watcher.  Returns -1 on a failure to set up. */
static int measure(struct watcher *w, int nw, int files, int runs, int own, bool first)
{
	static struct wproc p;
	const char *cpu = own ? "own" : "same";
	double t[MAX_WATCHERS][MAX_RUNS];
	int ok[MAX_WATCHERS] = { 0 };
	long lost[MAX_WATCHERS] = { 0 };

	if (files < 1)
		return fprintf(stderr, "moves-out: bad size %d\n", files), -1;
	for (int r = 0; r < runs; r++) {
		for (int j = 0; j < nw; j++) {
			int i = r % 2 ? nw - 1 - j : j; /* order changes run by run */
			char *root = mktemp_dir(), wdir[4096], out[4096];
			struct wopts o = { .dir = wdir, .events = B_MOVED_OUT, .own_cpu = own };
			long n = 0;
			char *l;

			if (w[i].absent) {
				rm_tree(root);
				free(root);
				continue;
			}
			snprintf(wdir, sizeof(wdir), "%s/w", root);
			snprintf(out, sizeof(out), "%s/out", root);
			if (mkdir(wdir, 0755) < 0 || mkdir(out, 0755) < 0)
				return perror("mkdir"), -1;
			make_files(wdir, files);
			if (wp_start(&p, &w[i], &o) < 0 || wp_ready(&p, wdir, 10) < 0) {
				fprintf(stderr, "moves-out: %s did not start\n", w[i].name);
				goto next;
			}
			move_out(wdir, out, files);
			double t0 = now();
			l = wp_line(&p, 60);
			if (!l || sscanf(l, "end %ld", &n) != 1) {
				/* STOP itself lost: the kernel queue overflowed */
				fprintf(stderr, "moves-out: %s, %d files: %s\n", w[i].name, files,
					l ? l : "no STOP within 60 s");
				lost[i] = files + 1;
				goto next;
			}
			t[i][ok[i]++] = now() - t0;
			if (files + 1 - n > lost[i])
				lost[i] = files + 1 - n;
next:
			wp_stop(&p);
			rm_tree(root);
			free(root);
		}
	}
	double ref = 0;
	for (int i = 0; i < nw; i++) {
		if (w[i].absent || !ok[i]) {
			if (!w[i].absent || (first && measured(&w[i])))
				printf("  %-8d %-4s %-12s %s\n", files, cpu, w[i].name,
				       w[i].absent ? w[i].absent : "failed");
			continue;
		}
		double tm = median(t[i], ok[i]);
		if (w[i].kind == W_RAW)
			ref = tm;
		printf("  %-8d %-4s %-12s %10.3f %8.2f %8ld\n", files, cpu, w[i].name, tm * 1e3,
		       ref ? tm / ref : 0, lost[i]);
		const char *load = own ? "moves-out-own-cpu" : "moves-out";
		tsv(load, files, w[i].name, "ms", tm * 1e3);
		tsv(load, files, w[i].name, "ratio_raw", ref ? tm / ref : 0);
		tsv(load, files, w[i].name, "lost", (double)lost[i]);
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *sizes_arg = argc > 1 ? argv[1] : "1000,10000,100000";
	int runs = argc > 2 ? atoi(argv[2]) : 3, sizes[MAX_SIZES], nsizes = 0;
	struct watcher *w;
	int nw = (bench_extras = 1, watchers_all(&w));

	for (char *s = strdup(sizes_arg), *tok; (tok = strsep(&s, ",")) && nsizes < MAX_SIZES;)
		sizes[nsizes++] = atoi(tok);
	if (runs < 1 || runs > MAX_RUNS || !nsizes || nw > MAX_WATCHERS)
		return fprintf(stderr, "usage: %s [FILES[,FILES...] [RUNS<=%d]]\n", argv[0], MAX_RUNS), 2;
	for (int i = 0; i < nw; i++)
		if (!w[i].absent && !measured(&w[i]))
			w[i].absent = "not compared here";
	pin_cpu();
	printf("moves-out: FILES files moved one by one out of a watched directory; time from the\n"
	       "last rename to the last move read (median of %d runs), and moves not reported;\n"
	       "the watcher on the renaming program's CPU (same) or on the others (own)\n", runs);
	printf("  %-8s %-4s %-12s %10s %8s %8s\n", "files", "cpu", "watcher", "ms", "x raw", "lost");
	for (int s = 0; s < nsizes; s++)
		for (int own = 0; own <= (other_cpus() > 0); own++)
			if (measure(w, nw, sizes[s], runs, own, s == 0 && own == 0) < 0)
				return 1;
	printf("  (lost: the most moves one run did not report, 0 when nothing was lost)\n");
	return 0;
}
