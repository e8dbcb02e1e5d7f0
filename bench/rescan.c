/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The repair of NOTIFYX_WATCH_RESCAN against what an application did
 * without it.  A tree of ENTRIES entries (10 directories, each with leaf
 * directories of 100 files), one recursive RESCAN | LIST watch on a handle
 * with a tiny queue (queue_max 16).  Each round changes 1% of the entries
 * while nothing is read (a quarter each: files appended to, renamed in
 * their directory, deleted, created), so that the first read overflows, and
 * measures:
 *
 *   repair      from the read that returned the OVERFLOW to the read that
 *               returned the SYNC, and the events in between
 *   relisting   what an application without RESCAN does: rm_watch, then
 *               add_watch with LIST until its SYNC, and the events read
 *   raw walk    one walk of the tree with getdents and fstatat (no watch):
 *               the least a listing that can tell a modified file costs.
 *               A repair must stat every entry (a name and d_type or d_ino
 *               do not change when a file is written to), which the
 *               relisting does not do: the raw walk is the listing that the
 *               cost target ("a repair costs <= 1.2x one listing of the
 *               tree", issue 17) compares with; the relisting is printed
 *               beside it.
 *
 * Each is timed in wall-clock time and in CPU time (the process's, user and
 * system): on a machine shared with other work, the wall-clock time of a
 * phase includes the waits for a CPU, which the CPU time leaves out.  The
 * ratios are medians of each round's ratio, the repair and the walk of a
 * round being measured under the same load.
 *
 * and, each watch in a fresh process of its own after its listing was
 * read (and malloc_trim), the resident memory per entry of a LIST watch and
 * of a RESCAN | LIST watch.  Medians over ROUNDS rounds.  As root the tree
 * is made on a tmpfs mounted in a mount namespace of its own; otherwise in
 * NXBENCH_DIR or /tmp.
 *
 * The tree is left alone for 6 s before the first round: what it measures
 * is a tree of which 1% changed, and a repair tells the entries changed in
 * the few seconds before it from the others (see main()).
 *
 *   bench/rescan [ENTRIES [ROUNDS [BACKEND]]]   (default 100000 5 inotify)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <notifyx.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

#define MAX_ROUNDS 16
#define TOP 10           /* directories at the root */
#define FILES 100        /* files per leaf directory */
#define QMAX 16
#define TYPES (NOTIFYX_CREATE | NOTIFYX_DELETE | NOTIFYX_RENAME | NOTIFYX_MODIFY | \
	       NOTIFYX_ATTRIB | NOTIFYX_MOVED_IN | NOTIFYX_MOVED_OUT)

static char root[4096];
static int leaves;       /* leaf directories: TOP/dI/lJ */

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static const char *leaf(int k)
{
	static char p[4200];

	snprintf(p, sizeof(p), "%s/d%d/l%d", root, k % TOP, k / TOP);
	return p;
}

static void make(int entries)
{
	char p[4200];

	leaves = (entries - TOP) / (FILES + 1);
	if (leaves < 1)
		leaves = 1;
	for (int i = 0; i < TOP; i++) {
		snprintf(p, sizeof(p), "%s/d%d", root, i);
		if (mkdir(p, 0755) < 0)
			die(p);
	}
	for (int k = 0; k < leaves; k++) {
		if (mkdir(leaf(k), 0755) < 0)
			die(leaf(k));
		for (int j = 0; j < FILES; j++)
			touch(leaf(k), (snprintf(p, sizeof(p), "f%02d", j), p));
	}
}

/* Round r: n changes, a quarter each, on distinct leaves and files (round r
 * uses files 4r..4r+3 of a leaf, so up to 25 rounds). */
static void change(int r, int n)
{
	char a[4400], b[4400];

	for (int c = 0; c < n; c++) {
		int t = c % 4, k = (c / 4 * 3 + t + r * 101) % leaves, j = (r * 4 + t) % FILES;
		const char *d = leaf(k);

		snprintf(a, sizeof(a), "%s/f%02d", d, j);
		switch (t) {
		case 0: { /* modify */
			int fd = open(a, O_WRONLY | O_APPEND | O_CLOEXEC);
			if (fd < 0 || write(fd, "x", 1) != 1)
				die(a);
			close(fd);
			break;
		}
		case 1: /* rename */
			snprintf(b, sizeof(b), "%s/r%02d", d, j);
			if (rename(a, b) < 0)
				die(a);
			break;
		case 2: /* delete */
			if (unlink(a) < 0)
				die(a);
			break;
		default: /* create */
			snprintf(b, sizeof(b), "n%02d", j);
			touch(d, b);
		}
	}
}

/* ---- reading: one event at a time from a buffer of reads ---- */

static union {
	struct notifyx_event ev;
	char b[1 << 20];
} buf;
static size_t off, len;
static double read_at, read_cpu; /* when the read that returned the buffer's events began */

/* The CPU time of the process, user and system, in seconds. */
static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const struct notifyx_event *next_event(struct notifyx *nx, double deadline)
{
	struct pollfd p = { .fd = notifyx_fd(nx), .events = POLLIN };

	while (off >= len) {
		ssize_t got;

		if (now() > deadline)
			return NULL;
		read_at = now();
		read_cpu = cpu_now();
		got = notifyx_read(nx, buf.b, sizeof(buf.b));
		if (got < 0) {
			if (errno != EAGAIN && errno != EINTR)
				die("notifyx_read");
			poll(&p, 1, 100);
			continue;
		}
		off = 0;
		len = (size_t)got;
	}
	const struct notifyx_event *ev = (const void *)(buf.b + off);
	off += ev->size;
	return ev;
}

/* Reads until wd's event of type until; returns the events of wd before it
 * (-1 after 120 s) and in *t and *c the wall-clock and CPU times at the
 * start of the read that returned it. */
static long read_until(struct notifyx *nx, int wd, uint32_t until, double *t, double *c)
{
	double deadline = now() + 120;
	const struct notifyx_event *ev;
	long n = 0;

	while ((ev = next_event(nx, deadline))) {
		if (ev->wd != wd)
			continue;
		if (ev->mask == until) {
			if (t)
				*t = read_at;
			if (c)
				*c = read_cpu;
			return n;
		}
		n++;
	}
	return -1;
}

static struct notifyx *open_nx(uint32_t backend, uint32_t queue_max)
{
	struct notifyx_config c = { .size = sizeof(c), .backend = backend, .flags = NOTIFYX_NONBLOCK,
				    .queue_max = queue_max };
	struct notifyx *nx = notifyx_open(&c);

	if (!nx)
		die("notifyx_open");
	return nx;
}

/* ---- the raw walk: getdents (readdir) and fstatat, as a listing must ---- */

static long walk(int dfd)
{
	DIR *d = fdopendir(dfd);
	struct dirent *e;
	long n = 0;

	if (!d)
		die("fdopendir");
	while ((e = readdir(d))) {
		struct stat st;

		if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		n++;
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				n += walk(sub);
		}
	}
	closedir(d);
	return n;
}

/* ---- one process per measurement, results through a pipe ---- */

struct result {
	double repair_s, relist_s, walk_s;
	double repair_cpu, relist_cpu, walk_cpu;
	long repair_ev, relist_ev, walked, before;
	long rss_kb;
};

static void child_rounds(uint32_t backend, int rounds, int n, int out)
{
	struct notifyx *nx = open_nx(backend, QMAX);
	int wd = notifyx_add_watch(nx, root, TYPES, NOTIFYX_WATCH_RECURSIVE |
				   NOTIFYX_WATCH_LIST | NOTIFYX_WATCH_RESCAN);

	if (wd < 0)
		die("notifyx_add_watch RESCAN | LIST");
	if (read_until(nx, wd, NOTIFYX_SYNC, NULL, NULL) < 0)
		die("the listing's SYNC");
	for (int r = 0; r < rounds; r++) {
		struct result x = { 0 };
		double t0, t1, c0;

		change(r, n);
		/* The events before the OVERFLOW (the queue's QMAX), then the
		 * repair: from the read that returned the OVERFLOW to the SYNC. */
		x.before = read_until(nx, wd, NOTIFYX_OVERFLOW, &t0, &c0);
		x.repair_ev = read_until(nx, wd, NOTIFYX_SYNC, NULL, NULL);
		x.repair_s = now() - t0;
		x.repair_cpu = cpu_now() - c0;
		if (x.before < 0 || x.repair_ev < 0)
			die("no OVERFLOW, or no SYNC after it");
		/* What an application does without RESCAN: remove, add with LIST. */
		if (notifyx_rm_watch(nx, wd) < 0 || read_until(nx, wd, NOTIFYX_IGNORED, NULL, NULL) < 0)
			die("notifyx_rm_watch");
		t0 = now();
		c0 = cpu_now();
		wd = notifyx_add_watch(nx, root, TYPES, NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
		x.relist_ev = wd < 0 ? -1 : read_until(nx, wd, NOTIFYX_SYNC, NULL, NULL);
		t1 = now();
		x.relist_s = t1 - t0;
		x.relist_cpu = cpu_now() - c0;
		if (x.relist_ev < 0)
			die("relisting");
		/* Back to a RESCAN watch for the next round. */
		notifyx_rm_watch(nx, wd);
		read_until(nx, wd, NOTIFYX_IGNORED, NULL, NULL);
		wd = notifyx_add_watch(nx, root, TYPES, NOTIFYX_WATCH_RECURSIVE |
				       NOTIFYX_WATCH_LIST | NOTIFYX_WATCH_RESCAN);
		if (wd < 0 || read_until(nx, wd, NOTIFYX_SYNC, NULL, NULL) < 0)
			die("RESCAN watch again");
		t0 = now();
		c0 = cpu_now();
		x.walked = walk(open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
		x.walk_s = now() - t0;
		x.walk_cpu = cpu_now() - c0;
		if (write(out, &x, sizeof(x)) != sizeof(x))
			_exit(1);
	}
	notifyx_close(nx);
}

static void child_memory(uint32_t backend, uint32_t flags, int out)
{
	struct result x = { 0 };
	long before = self_field_kb("/proc/self/status", "VmRSS:");
	struct notifyx *nx = open_nx(backend, 0);
	int wd = notifyx_add_watch(nx, root, TYPES, NOTIFYX_WATCH_RECURSIVE | flags);

	if (wd < 0 || read_until(nx, wd, NOTIFYX_SYNC, NULL, NULL) < 0)
		die("memory: the watch");
	malloc_trim(0);
	x.rss_kb = self_field_kb("/proc/self/status", "VmRSS:") - before;
	if (write(out, &x, sizeof(x)) != sizeof(x))
		_exit(1);
	notifyx_close(nx);
}

/* Runs fn in a child; reads count results into res. */
static void run(void (*fn)(uint32_t, int, int, int), uint32_t backend, int a, int b,
		struct result *res, int count)
{
	int fds[2];
	pid_t pid;

	if (pipe(fds) < 0)
		die("pipe");
	fflush(stdout);
	if ((pid = fork()) == 0) {
		close(fds[0]);
		fn(backend, a, b, fds[1]);
		_exit(0);
	}
	close(fds[1]);
	for (int i = 0; i < count; i++)
		if (read(fds[0], &res[i], sizeof(res[i])) != sizeof(res[i])) {
			fprintf(stderr, "rescan: the measuring process failed\n");
			exit(1);
		}
	close(fds[0]);
	waitpid(pid, NULL, 0);
}

static void rounds_fn(uint32_t backend, int rounds, int n, int out)
{
	child_rounds(backend, rounds, n, out);
}

static void memory_fn(uint32_t backend, int flags, int unused, int out)
{
	(void)unused;
	child_memory(backend, (uint32_t)flags, out);
}

/* A tmpfs of our own, in a mount namespace of our own (root only). */
static const char *private_tmpfs(void)
{
	if (geteuid() != 0 || unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("nxbench-rescan", root, "tmpfs", 0, "size=2g,nr_inodes=0") < 0)
		return NULL;
	return "a private tmpfs";
}

#define AGE_S 6

int main(int argc, char **argv)
{
	int entries = argc > 1 ? atoi(argv[1]) : 100000, rounds = argc > 2 ? atoi(argv[2]) : 5;
	const char *bname = argc > 3 ? argv[3] : "inotify", *fs;
	uint32_t backend = 0;
	struct result res[MAX_ROUNDS], mem[2];
	double rep[MAX_ROUNDS], rel[MAX_ROUNDS], wlk[MAX_ROUNDS], rev[MAX_ROUNDS], lev[MAX_ROUNDS];
	double crep[MAX_ROUNDS], crel[MAX_ROUNDS], cwlk[MAX_ROUNDS];
	double rw[MAX_ROUNDS], lw[MAX_ROUNDS], crw[MAX_ROUNDS], clw[MAX_ROUNDS];
	char *dir = mktemp_dir();
	int n, tmpfs;

	for (uint32_t b = 1; notifyx_backend_name(b); b++)
		if (!strcmp(bname, notifyx_backend_name(b)))
			backend = b;
	if (entries < 1000 || rounds < 1 || rounds > MAX_ROUNDS || !backend)
		return fprintf(stderr, "usage: %s [ENTRIES>=1000 [ROUNDS<=%d [BACKEND]]]\n", argv[0],
			       MAX_ROUNDS), 2;
	snprintf(root, sizeof(root), "%s", dir);
	fs = private_tmpfs();
	tmpfs = fs != NULL;
	if (!fs)
		fs = getenv("NXBENCH_FS") ? getenv("NXBENCH_FS") : dir;
	double t0 = now(), made;
	make(entries);
	made = now() - t0;
	entries = TOP + leaves * (FILES + 1);
	n = entries / 100 / 4 * 4;
	/* A tree of which 1% changed, not one just made: a kernel backend's
	 * repair counts, against an IN_CREATE read after it, the entries whose
	 * inode changed in the 5 s before it (backends/ktree.c, REPAIR_SLACK_S),
	 * which in a tree made a moment ago is every entry. */
	sleep(AGE_S);
	printf("rescan: %d entries on %s (made in %.1f s, %d s before the first round), backend "
	       "%s, queue_max %d; each round %d changes (a quarter each: modify, rename, delete, "
	       "create) unread, then read; median of %d rounds\n",
	       entries, fs, made, AGE_S, bname, QMAX, n, rounds);

	run(rounds_fn, backend, rounds, n, res, rounds);
	run(memory_fn, backend, NOTIFYX_WATCH_LIST, 0, &mem[0], 1);
	run(memory_fn, backend, NOTIFYX_WATCH_LIST | NOTIFYX_WATCH_RESCAN, 0, &mem[1], 1);
	if (tmpfs && umount2(root, MNT_DETACH) == 0)
		rmdir(dir);
	else
		rm_tree(dir);

	for (int r = 0; r < rounds; r++) {
		rep[r] = res[r].repair_s * 1e3;
		rel[r] = res[r].relist_s * 1e3;
		wlk[r] = res[r].walk_s * 1e3;
		crep[r] = res[r].repair_cpu * 1e3;
		crel[r] = res[r].relist_cpu * 1e3;
		cwlk[r] = res[r].walk_cpu * 1e3;
		rw[r] = res[r].repair_s / res[r].walk_s;
		lw[r] = res[r].relist_s / res[r].walk_s;
		crw[r] = res[r].repair_cpu / res[r].walk_cpu;
		clw[r] = res[r].relist_cpu / res[r].walk_cpu;
		rev[r] = (double)res[r].repair_ev;
		lev[r] = (double)res[r].relist_ev;
	}
	double mrep = median(rep, rounds), mrel = median(rel, rounds), mwlk = median(wlk, rounds);
	double mrev = median(rev, rounds), mlev = median(lev, rounds);
	double mrw = median(rw, rounds), mcrw = median(crw, rounds);
	/* The repair's cost target compares with the raw walk: a listing that
	 * stats each entry, as telling a modified file takes. */
	printf("  %-44s %8s %8s %8s %12s %8s\n", "", "wall ms", "vs walk", "CPU ms", "vs walk", "events");
	printf("  %-44s %8.1f %7.2fx %8.1f %11.2fx %8.0f\n", "repair (OVERFLOW to SYNC)", mrep, mrw,
	       median(crep, rounds), mcrw, mrev);
	printf("  %-44s %8.1f %7.2fx %8.1f %11.2fx %8.0f\n", "relisting (rm_watch, add_watch LIST, SYNC)",
	       mrel, median(lw, rounds), median(crel, rounds), median(clw, rounds), mlev);
	printf("  %-44s %8.1f %8s %8.1f %12s %8ld\n", "raw walk (getdents + fstatat)", mwlk, "1.00x",
	       median(cwlk, rounds), "1.00x", res[0].walked);
	printf("  (ratios: medians of each round's ratio; the raw walk stats every entry, as a\n"
	       "  listing that can tell a modified file must, the relisting stats none)\n");
	printf("  repair / relisting: %.2fx the time, %.3fx the events (%ld delivered before "
	       "the OVERFLOW in round 1)\n", mrep / mrel, mrev / mlev, res[0].before);
	double bl = mem[0].rss_kb * 1024.0 / entries, br = mem[1].rss_kb * 1024.0 / entries;
	printf("  RSS per entry after the listing (malloc_trim): LIST %.0f B, RESCAN | LIST %.0f B "
	       "(+%.0f B for what a repair compares)\n", bl, br, br - bl);
	tsv("rescan", entries, bname, "repair_ms", mrep);
	tsv("rescan", entries, bname, "repair_events", mrev);
	tsv("rescan", entries, bname, "relist_ms", mrel);
	tsv("rescan", entries, bname, "relist_events", mlev);
	tsv("rescan", entries, "raw", "walk_ms", mwlk);
	tsv("rescan", entries, bname, "repair_vs_walk", mrw);
	tsv("rescan", entries, bname, "repair_vs_walk_cpu", mcrw);
	tsv("rescan", entries, bname, "list_bytes_per_entry", bl);
	tsv("rescan", entries, bname, "rescan_bytes_per_entry", br);
	return 0;
}
