/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Recursive setup: how long each watcher takes until a recursive watch of a
 * tree of DIRS directories is ready, and the user memory it holds per
 * watched directory.  The raw reference is nftw(3) + inotify_add_watch(2) on
 * every directory (what a minimal C watcher does), timed inside its process,
 * as each library backend is; a tool is timed from its start until it
 * reports a file made in the last directory of the tree.  Memory: VmRSS with
 * the tree watched minus VmRSS of the same watcher on an empty directory,
 * divided by DIRS; and the whole VmRSS with the tree watched (what top shows).
 * Medians of RUNS runs, ratios against raw in the same run.  Besides the
 * usual watchers: "notifyx watch tty", the tool with its standard error on a
 * terminal (its progress thread runs during the setup), "fanotify inode",
 * the library as user nobody (inode marks instead of a filesystem mark), and
 * "fanotify fs mark" (root: the filesystem mark at any size; a watch that
 * does not list does not walk the tree).
 * Targets (issue "No stalls at scale", from 50,000 directories): the tool's
 * RSS <= inotifywait's; the inotify backend <= 120 bytes per directory.
 *
 *   bench/recursive-setup [DIRS [RUNS]]   (default 10000 directories, 3 runs)
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/resource.h>
#include <string.h>
#include <sys/stat.h>

#include "common.h"

#define MAX_RUNS 64

static int find(const struct watcher *w, int nw, const char *name)
{
	for (int i = 0; i < nw; i++)
		if (!strcmp(w[i].name, name))
			return i;
	return -1;
}

int main(int argc, char **argv)
{
	int dirs = argc > 1 ? atoi(argv[1]) : 10000, runs = argc > 2 ? atoi(argv[2]) : 3;
	struct watcher *w;
	int nw = (bench_extras = 1, watchers_all(&w));
	double (*t)[MAX_RUNS] = calloc(nw, sizeof(*t)), (*mem)[MAX_RUNS] = calloc(nw, sizeof(*mem));
	double (*rss)[MAX_RUNS] = calloc(nw, sizeof(*rss));
	int *ok = calloc(nw, sizeof(int));
	char *root = mktemp_dir(), *empty = mktemp_dir(), *last;
	static struct wproc p;

	if (dirs < 1 || runs < 1 || runs > MAX_RUNS)
		return fprintf(stderr, "usage: %s [DIRS [RUNS<=%d]]\n", argv[0], MAX_RUNS), 2;
	/* dnotify holds a descriptor per directory: as many as the tree needs
	 * where allowed (root may raise the hard limit, up to fs.nr_open), else
	 * the hard limit. */
	struct rlimit rl = { (rlim_t)dirs + 1024, (rlim_t)dirs + 1024 };
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0 && getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	last = make_tree(root, dirs);
	chmod(root, 0755); /* for "fanotify inode" (user nobody) */
	chmod(empty, 0755);
	for (int r = 0; r < runs; r++) {
		for (int i = 0; i < nw; i++) {
			struct wopts o = { .dir = empty, .events = B_CREATE | B_DELETE | B_MOVED,
					   .recursive = 1, .lines = 1 };
			long base;

			if (w[i].absent)
				continue;
			if (wp_start(&p, &w[i], &o) < 0 || wp_ready(&p, empty, 10) < 0)
				goto fail;
			base = wp_rss_kb(&p);
			wp_stop(&p);
			o.dir = root;
			if (wp_start(&p, &w[i], &o) < 0 || wp_ready(&p, last, 600) < 0)
				goto fail;
			t[i][ok[i]] = p.ready_s;
			rss[i][ok[i]] = wp_rss_kb(&p) / 1024.0;
			mem[i][ok[i]] = (wp_rss_kb(&p) - base) * 1024.0 / dirs;
			ok[i]++;
			wp_stop(&p);
			continue;
fail:
			fprintf(stderr, "recursive-setup: %s did not become ready\n", w[i].name);
			wp_stop(&p);
		}
	}
	rm_tree(root);
	rm_tree(empty);

	double tm[16] = { 0 }, mm[16] = { 0 }, rm[16] = { 0 };
	printf("recursive setup: tree of %d directories (10 per directory, a file in each), "
	       "median of %d runs\n", dirs, runs);
	printf("  %-17s %12s %8s %14s %8s %9s\n", "watcher", "ready ms", "x raw", "bytes/dir", "x raw",
	       "RSS MB");
	for (int i = 0; i < nw; i++) {
		if (w[i].absent || !ok[i]) {
			printf("  %-17s %s\n", w[i].name, w[i].absent ? w[i].absent : "failed");
			continue;
		}
		tm[i] = median(t[i], ok[i]);
		mm[i] = median(mem[i], ok[i]);
		rm[i] = median(rss[i], ok[i]);
		printf("  %-17s %12.1f %8.2f %14.0f %8.2f %9.1f\n", w[i].name, tm[i] * 1e3,
		       tm[0] ? tm[i] / tm[0] : 0, mm[i], mm[0] > 0 ? mm[i] / mm[0] : 0, rm[i]);
		tsv("setup", dirs, w[i].name, "ready_ms", tm[i] * 1e3);
		tsv("setup", dirs, w[i].name, "ratio_raw", tm[0] ? tm[i] / tm[0] : 0);
		tsv("setup", dirs, w[i].name, "bytes_per_dir", mm[i]);
		tsv("setup", dirs, w[i].name, "rss_mb", rm[i]);
	}
	printf("  (ready: raw and backends time their own setup; tools from exec until a file made\n"
	       "   in the last directory is reported.  bytes/dir: user RSS, tree minus empty;\n"
	       "   RSS MB: the whole VmRSS with the tree watched)\n");

	int ino = find(w, nw, "inotify"), fan = find(w, nw, "fanotify fs mark"), lean = -1;
	int tool = find(w, nw, "notifyx watch"), tty = find(w, nw, "notifyx watch tty");
	int iw = find(w, nw, "inotifywait");
	if (dirs >= 50000) {
		if (ino >= 0 && ok[ino])
			printf("target: inotify backend <= 120 bytes/dir: %.0f (%.0f beyond raw's %.0f) %s\n",
			       mm[ino], mm[ino] - mm[0], mm[0], mm[ino] <= 120 ? "MET" : "MISSED");
		for (int k = 0; k < 2; k++) {
			int i = k ? tty : tool;
			if (i >= 0 && ok[i] && iw >= 0 && ok[iw])
				printf("target: %s RSS <= inotifywait's: %.1f MB vs %.1f MB, %.2fx %s\n",
				       w[i].name, rm[i], rm[iw], rm[i] / rm[iw],
				       rm[i] <= rm[iw] ? "MET" : "MISSED");
		}
	}
	if (dirs < 100000) {
		printf("(the targets of issue 6 are for 100000 directories)\n");
		return 0;
	}
	for (int i = 0; i < nw; i++)
		if ((!strcmp(w[i].name, "inotifywait") || !strcmp(w[i].name, "fswatch")) && ok[i] &&
		    (lean < 0 || mm[i] < mm[lean]))
			lean = i;
	if (tm[0] && ino >= 0 && tm[ino])
		printf("target: inotify backend ready <= 1.25x raw: %.2fx %s\n",
		       tm[ino] / tm[0], tm[ino] / tm[0] <= 1.25 ? "MET" : "MISSED");
	if (ino >= 0 && fan >= 0 && tm[ino] && tm[fan])
		printf("target: fanotify with a filesystem mark ready <= 0.1x inotify backend: %.4fx %s\n",
		       tm[fan] / tm[ino], tm[fan] / tm[ino] <= 0.1 ? "MET" : "MISSED");
	if (ino >= 0 && lean >= 0 && ok[ino]) {
		printf("target: inotify backend bytes/dir <= leanest other tool (%s): "
		       "%.0f vs %.0f, %.2fx %s\n", w[lean].name, mm[ino], mm[lean],
		       mm[lean] > 0 ? mm[ino] / mm[lean] : 0, mm[ino] <= mm[lean] ? "MET" : "MISSED");
		tsv("setup", dirs, "inotify", "mem_ratio_leanest_tool", mm[lean] > 0 ? mm[ino] / mm[lean] : 0);
	}
	return 0;
}
