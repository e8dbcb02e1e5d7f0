/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * How fast the snapshot engine of the scanning backends (dnotify, poll)
 * reads a tree, against `find DIR -printf ''` on the same tree in the same
 * run (find reads every directory too, and stats nothing it need not).
 * Runs alternate, the first of each is a warm-up; prints the medians, the
 * entries per second and the ratio (the engine's rate / find's; the target
 * is at least 0.7).  Then the cost of one poll scan (read + diff of an
 * unchanged tree) at two tree sizes, to show it is proportional to the tree.
 *
 *   bench/scan-rate [ENTRIES [RUNS]]   (default 100000 entries, 7 runs)
 *   bench/scan-rate -d DIR [RUNS]      an existing tree instead
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nx.h"
#include "snapshot.h"

extern char **environ;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* A tree of about n entries: directories of 20 files and 5 subdirectories. */
static void make_tree(const char *root, long n)
{
	long made = 0, dirs = 1;
	char **path = malloc(sizeof(*path) * (n + 2)), file[4200];

	path[0] = strdup(root);
	for (long i = 0; made < n; i++) {
		for (int f = 0; f < 20 && made < n; f++, made++) {
			snprintf(file, sizeof(file), "%s/file%d", path[i], f);
			int fd = open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
			if (fd < 0) {
				perror(file);
				exit(1);
			}
			close(fd);
		}
		for (int d = 0; d < 5 && made < n; d++, made++) {
			if (asprintf(&path[dirs], "%s/dir%d", path[i], d) < 0 ||
			    mkdir(path[dirs], 0755) < 0) {
				perror("mkdir");
				exit(1);
			}
			dirs++;
		}
	}
	for (long i = 0; i < dirs; i++)
		free(path[i]);
	free(path);
}

static double run_find(const char *dir)
{
	char *argv[] = { "find", (char *)dir, "-printf", "", NULL };
	double t0 = now();
	int status;
	pid_t pid;

	if (posix_spawnp(&pid, "find", NULL, NULL, argv, environ) != 0 ||
	    waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "scan-rate: find failed\n");
		exit(1);
	}
	return now() - t0;
}

static uint64_t syscalls;

static struct nx_snode *read_tree(const char *dir, uint64_t *entries)
{
	struct nx_sread r = { .recursive = true };
	int fd = open(dir, O_PATH | O_CLOEXEC);
	struct nx_snode *t;

	if (fd < 0 || !(t = nx_snap_read(fd, &r))) {
		perror(dir);
		exit(1);
	}
	close(fd);
	*entries = r.entries;
	syscalls = r.syscalls;
	return t;
}

static double run_engine(const char *dir, uint64_t *entries)
{
	double t0 = now();
	struct nx_snode *t = read_tree(dir, entries);
	double t1 = now();

	nx_snap_free(t);
	return t1 - t0;
}

static void no_event(void *ctx, size_t w, uint32_t mask, uint32_t flags, uint32_t cookie,
		     const char *path, size_t len, const char *old, size_t old_len)
{
	(void)w, (void)mask, (void)flags, (void)cookie, (void)path, (void)len, (void)old;
	(void)old_len;
	++*(long *)ctx;
}

/* One poll scan of an unchanged tree: read it again and diff. */
static double scan_cost(const char *dir, int runs, uint64_t *entries)
{
	double *t = calloc(runs, sizeof(*t));
	struct nx_snode *snap = read_tree(dir, entries);
	uint32_t cookie = 0;
	long events = 0;

	for (int i = 0; i < runs; i++) {
		double t0 = now();
		struct nx_sdiff_watch w = { .old = snap, .flags = NX_SDIFF_RECURSIVE };
		w.cur = read_tree(dir, entries);
		nx_snap_diff(&w, 1, &cookie, no_event, &events);
		nx_snap_free(w.old);
		snap = w.cur;
		t[i] = now() - t0;
	}
	nx_snap_free(snap);
	if (events)
		fprintf(stderr, "scan-rate: %ld events on an unchanged tree\n", events);
	double m = median(t, runs);
	free(t);
	return m;
}

static void rm_tree(const char *dir)
{
	char *argv[] = { "rm", "-rf", (char *)dir, NULL };
	int status;
	pid_t pid;

	if (posix_spawnp(&pid, "rm", NULL, NULL, argv, environ) == 0)
		waitpid(pid, &status, 0);
}

int main(int argc, char **argv)
{
	long n = 100000;
	int runs = 7;
	char tmpl[] = "/tmp/notifyx-scan-rate.XXXXXX", small[64], big[64];
	const char *dir = NULL;
	uint64_t entries = 0;

	if (argc > 2 && !strcmp(argv[1], "-d")) {
		dir = argv[2];
		if (argc > 3)
			runs = atoi(argv[3]);
	} else {
		if (argc > 1)
			n = atol(argv[1]);
		if (argc > 2)
			runs = atoi(argv[2]);
	}
	if (runs < 1 || n < 1) {
		fprintf(stderr, "usage: scan-rate [ENTRIES [RUNS]] | -d DIR [RUNS]\n");
		return 2;
	}
	if (!dir) {
		if (!mkdtemp(tmpl)) {
			perror("mkdtemp");
			return 1;
		}
		snprintf(small, sizeof(small), "%s/small", tmpl);
		snprintf(big, sizeof(big), "%s/big", tmpl);
		if (mkdir(small, 0755) < 0 || mkdir(big, 0755) < 0) {
			perror("mkdir");
			return 1;
		}
		make_tree(small, n / 4);
		make_tree(big, n);
		dir = big;
	}

	double *tf = calloc(runs, sizeof(double)), *te = calloc(runs, sizeof(double));
	run_find(dir); /* warm-up: the same cache for both */
	run_engine(dir, &entries);
	for (int i = 0; i < runs; i++) {
		tf[i] = run_find(dir);
		te[i] = run_engine(dir, &entries);
	}
	double mf = median(tf, runs), me = median(te, runs);
	printf("tree: %llu entries; medians of %d runs\n", (unsigned long long)entries, runs);
	printf("find -printf '': %.1f ms  %.0f entries/s\n", mf * 1e3, entries / mf);
	printf("engine read:     %.1f ms  %.0f entries/s  (%.2f system calls per entry)\n",
	       me * 1e3, entries / me, (double)syscalls / entries);
	printf("ratio engine/find (entries/s): %.2f (target >= 0.70)\n", mf / me);

	if (dir == big) {
		uint64_t es, eb;
		double cs = scan_cost(small, runs, &es), cb = scan_cost(big, runs, &eb);
		printf("one poll scan (read + diff, unchanged tree): %llu entries %.1f ms "
		       "(%.0f ns/entry), %llu entries %.1f ms (%.0f ns/entry)\n",
		       (unsigned long long)es, cs * 1e3, cs / es * 1e9, (unsigned long long)eb,
		       cb * 1e3, cb / eb * 1e9);
		rm_tree(tmpl);
	}
	free(tf);
	free(te);
	return 0;
}
