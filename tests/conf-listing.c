/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Conformance test, the edges of API.md 0.2 (issue "Exact at the edges"),
 * LIST watches: a LIST watch beside a plain one of the same tree, either
 * added first, stays independent of it; LIST reports each entry once while
 * the tree changes (grows, or has directories moved about).  Each case runs
 * on /tmp and on a private tmpfs (ON_BOTH, conformance.h), but for the slow
 * one that nothing of depends on the filesystem.  Run from conformance.c's
 * main through conf_listing_run().
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <fcntl.h>
#include <limits.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "conformance.h"

/* ---- watches stay independent -------------------------------------------------- */

/* A recursive watch and a recursive LIST watch of the same tree on one
 * handle (either added first), and a third one below them added and removed:
 * each gets each event of the subdirectories once. */
static void independent(struct tu_fix *f, const char *base, int list_first)
{
	static const char *const made[] = { "a/b/f", "a/c", "a/c/g", "top", "a/b/h" };
	const char *t = tu_path(base, "t");
	int plain = 0, list = 0, sub, k;
	size_t i;

	tu_mkdir(t);
	tu_mkdir(tu_path(t, "a"));
	tu_mkdir(tu_path(t, "a/b"));
	tu_touch(tu_path(t, "a/b/old"));
	if (!list_first)
		plain = tu_add(&f->log, t, NOTIFYX_CREATE | NOTIFYX_DELETE, NOTIFYX_WATCH_RECURSIVE);
	list = tu_add(&f->log, t, NOTIFYX_CREATE | NOTIFYX_DELETE,
		      NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	if (list_first)
		plain = tu_add(&f->log, t, NOTIFYX_CREATE | NOTIFYX_DELETE, NOTIFYX_WATCH_RECURSIVE);
	conf_listed(&f->log, list);
	sub = tu_add(&f->log, tu_path(t, "a"), NOTIFYX_CREATE,
		     NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	conf_listed(&f->log, sub);
	tu_touch(tu_path(t, "a/b/f"));
	tu_mkdir(tu_path(t, "a/c"));
	tu_touch(tu_path(t, "a/c/g"));
	tu_touch(tu_path(t, "top"));
	WAIT(&f->log, plain, NOTIFYX_CREATE, "top");
	WAIT(&f->log, sub, NOTIFYX_CREATE, "c/g");
	assert_int_equal(notifyx_rm_watch(f->nx, sub), 0);
	tu_touch(tu_path(t, "a/b/h"));
	tu_unlink(tu_path(t, "a/b/old"));
	WAIT(&f->log, plain, NOTIFYX_DELETE, "a/b/old");
	WAIT(&f->log, list, NOTIFYX_DELETE, "a/b/old");
	tu_settle(&f->log);
	for (k = 0; k < 2; k++) {
		int wd = k ? list : plain;

		for (i = 0; i < sizeof made / sizeof made[0]; i++)
			ONCE(&f->log, wd, NOTIFYX_CREATE, made[i], 0, 0);
		ONCE(&f->log, wd, NOTIFYX_DELETE, "a/b/old", 0, 0);
	}
	/* The listing (a, a/b, a/b/old) went to the LIST watch only. */
	COUNT(&f->log, plain, 6, "five CREATEs and a DELETE");
	COUNT(&f->log, list, 9, "three listed, five CREATEs and a DELETE");
	conf_no_error(&f->log);
}

ON_BOTH_WITH(independent_list_second, independent, 0)
ON_BOTH_WITH(independent_list_first, independent, 1)

/* ---- LIST: each entry once while the tree changes ----------------------------- */

struct grower {
	const char *top;
	int ndirs, moves;
	int next;           /* the next round number: names are never reused */
	int gen[8];         /* moves: the generation of m<k> (even: in d<k>, odd: in d<k+1>) */
	volatile int stop;
};

/* Creates files in the existing directories, and new directories with a
 * directory and files in them, as fast as it can until told to stop (at
 * most 300 rounds), while the main thread adds the LIST watch and reads.
 * With moves, it renames directories full of files between two top
 * directories instead (m<k>.<gen>, a name never used before each time). */
static void *grow(void *arg)
{
	struct grower *g = arg;
	char p[PATH_MAX], q[PATH_MAX];
	int i, j, end = g->next + (g->moves ? 600 : 300);

	for (i = g->next; i < end && !g->stop; i++) {
		int d = (i * 7) % g->ndirs, k = i % g->ndirs, gen = g->gen[k];

		if (g->moves) {
			snprintf(p, sizeof p, "%s/d%d/m%d.%d", g->top, (k + gen % 2) % g->ndirs, k, gen);
			snprintf(q, sizeof q, "%s/d%d/m%d.%d", g->top, (k + 1 - gen % 2) % g->ndirs, k,
				 gen + 1);
			if (rename(p, q) == 0)
				g->gen[k]++;
			/* In bursts: the reader reads dry between them, where a
			 * directory it could not reach during the burst is looked
			 * at again. */
			if (i % 16 == 15)
				usleep(3000);
			continue;
		}
		snprintf(p, sizeof p, "%s/d%d/new%d", g->top, d, i);
		close(open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
		snprintf(p, sizeof p, "%s/d%d/n%d", g->top, d, i);
		if (mkdir(p, 0755) < 0)
			continue;
		for (j = 0; j < 3; j++) {
			snprintf(p, sizeof p, "%s/d%d/n%d/f%d", g->top, d, i, j);
			close(open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
		}
		snprintf(p, sizeof p, "%s/d%d/n%d/sub", g->top, d, i);
		if (mkdir(p, 0755) == 0) {
			snprintf(p, sizeof p, "%s/d%d/n%d/sub/g", g->top, d, i);
			close(open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
		}
	}
	g->next = i;
	return NULL;
}

/* Apply wd's events to a mirror: a CREATE of a path the mirror already holds
 * (no name is ever reused in these trees) is an entry reported twice. */
static void no_second_report(const struct tu_log *log, int wd, const char *top, int round)
{
	struct conf_node *m = conf_node_new("", 0, 1);
	size_t i;

	for (i = 0; i < log->n; i++) {
		const struct tu_ev *e = &log->ev[i];

		if (e->wd != wd)
			continue;
		if (e->mask == NOTIFYX_CREATE && conf_node_find(m, e->path)) {
			conf_dump(log, "actual");
			fail_msg("round %d: event #%zu: CREATE \"%s\", an entry already reported", round,
				 i, e->path);
		}
		conf_mirror_apply(m, e, 0);
	}
	conf_node_free(m);
	conf_mirror_equals(log, wd, top, NULL, tu_fmt("round %d", round));
}

/* A tree of 4 directories with 500 or 1500 files each (their listings take a
 * while); while a LIST watch is added and read, a thread adds files and new
 * directories with entries (or, with moves, renames directories full of
 * files between them): every entry is reported once, nothing twice, and the
 * mirror equals the tree.  Several rounds on the same tree, each with a new
 * watch. */
static void list_once(struct tu_fix *f, const char *base, int moves)
{
	const int ndirs = 4, nfiles = moves ? 1500 : 500, rounds = 3;
	char *top = conf_join(base, "t"); /* tu_path's buffers rotate */
	struct grower g = { top, ndirs, moves, 0, { 0 }, 0 };
	int r, i, j;
	size_t total = 0;

	tu_mkdir(top);
	for (i = 0; i < ndirs; i++) {
		tu_mkdir(tu_path(top, tu_fmt("d%d", i)));
		for (j = 0; j < nfiles; j++)
			tu_touch(tu_path(top, tu_fmt("d%d/f%d", i, j)));
		if (!moves)
			continue;
		tu_mkdir(tu_path(top, tu_fmt("d%d/m%d.0", i, i)));
		for (j = 0; j < 20; j++)
			tu_touch(tu_path(top, tu_fmt("d%d/m%d.0/g%d", i, i, j)));
	}
	for (r = 0; r < rounds; r++) {
		pthread_t th;
		int wd;
		size_t from = f->log.n;
		long t0;

		g.stop = 0;
		assert_int_equal(pthread_create(&th, NULL, grow, &g), 0);
		wd = tu_add(&f->log, top, APPEAR | GO, NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
		for (t0 = tu_now_ms(); tu_now_ms() - t0 < 200;) {
			struct pollfd pfd = { notifyx_fd(f->nx), POLLIN, 0 };

			/* With moves, read flat out: the reader catching up with the
			 * renames is what makes the race. */
			tu_pull(&f->log);
			if (!moves)
				poll(&pfd, 1, 10);
		}
		g.stop = 1;
		pthread_join(th, NULL);
		conf_listed(&f->log, wd);
		tu_settle(&f->log);
		no_second_report(&f->log, wd, top, r);
		total += tu_count(&f->log, wd, NOTIFYX_CREATE, NULL);
		assert_int_equal(notifyx_rm_watch(f->nx, wd), 0);
		WAIT_FROM(&f->log, from, wd, NOTIFYX_IGNORED, "");
		tu_log_clear(&f->log);
	}
	free(top);
	conf_no_error(&f->log);
	print_message("  %d rounds, %zu CREATEs\n", rounds, total);
}

static void list_once_while_growing(struct tu_fix *f, const char *base)
{
	list_once(f, base, 0);
}
static void list_once_while_growing_tmpdir(void **state)
{
	list_once_while_growing(F(state), F(state)->dir);
}

ON_BOTH_WITH(list_once_while_moving, list_once, 1)

/* ---- a listing ahead of the events ---------------------------------------------- */

/* The operations a test makes at the moment the library opens a directory
 * named ahead.name to list it (after it read what was queued before). */
static struct {
	const char *name;
	void (*fn)(void *arg);
	void *arg;
} ahead;

static void run_ahead(void)
{
	ahead.name = NULL;
	ahead.fn(ahead.arg);
}

/* Every openat(2) of the program, the library's included, comes here. */
int openat(int dfd, const char *path, int flags, ...)
{
	mode_t mode = 0;

	if (flags & (O_CREAT | __O_TMPFILE)) {
		va_list ap;
		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	if (ahead.name && (flags & O_DIRECTORY) && !strcmp(path, ahead.name))
		run_ahead();
	return (int)syscall(SYS_openat, dfd, path, flags, mode);
}

/* And every name_to_handle_at(2): fanotify opens a directory it lists below
 * its root with openat2 (a system call that no libc function wraps), then
 * takes its handle. */
int name_to_handle_at(int dfd, const char *path, struct file_handle *h, int *mnt_id, int flags)
{
	char link[64], target[4096];
	size_t nlen = ahead.name ? strlen(ahead.name) : 0;
	ssize_t len;

	if (ahead.name && !*path) {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", dfd);
		len = readlink(link, target, sizeof(target));
		if (len > (ssize_t)nlen && target[len - (ssize_t)nlen - 1] == '/' &&
		    !memcmp(target + len - nlen, ahead.name, nlen))
			run_ahead();
	}
	return (int)syscall(SYS_name_to_handle_at, dfd, path, h, mnt_id, flags);
}

static void file_out_then_dir_in(void *top)
{
	tu_rename(tu_path(top, "a/D/f1"), tu_path(top, "g"));
	tu_rename(tu_path(top, "a/D"), tu_path(top, "n/D"));
	tu_touch(tu_path(top, "n/D/f3"));
}

/*
 * A directory n moves in from outside the watch; as the library opens it to
 * list it, a file leaves a directory D, then D moves into n.  The listing
 * finds D in n, ahead of the events of those moves, which are read after
 * it.  Each event must apply to what the events before it made (the file's
 * departure names D where they have it), and the mirror they make equals
 * the tree.
 */
static void listing_ahead_of_a_move(struct tu_fix *f, const char *base)
{
	char *top = conf_join(base, "t");
	int wd;

	tu_mkdir(top);
	tu_mkdir(tu_path(top, "a"));
	tu_mkdir(tu_path(top, "a/D"));
	tu_touch(tu_path(top, "a/D/f1"));
	tu_touch(tu_path(top, "a/D/f2"));
	wd = tu_add(&f->log, top, APPEAR | GO, NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	conf_listed(&f->log, wd);
	tu_mkdir(tu_path(base, "n"));
	ahead.fn = file_out_then_dir_in;
	ahead.arg = top;
	ahead.name = "n";
	tu_rename(tu_path(base, "n"), tu_path(top, "n"));
	tu_settle(&f->log);
	if (ahead.name) {
		ahead.name = NULL;
		free(top);
		print_message("[ SKIP     ] the backend did not open n by that name to list it\n");
		skip();
	}
	/* Each event applies to what the events before it made: a RENAME from
	 * an entry never reported would say the file left a place the copy
	 * never had it at (and the copy would keep it where it has it).
	 * notifyx(7) BUGS: inode marks, which may not hear the moves of the
	 * directory, take it from where the events have it, as they list it. */
	struct conf_node *m = conf_node_new("", 0, 1);
	bool inode_marks = conf_inode_marks(f);
	if (inode_marks)
		print_message("  fanotify with inode marks: the mirror only (notifyx(7) BUGS)\n");
	for (size_t i = 0; i < f->log.n; i++) {
		const struct tu_ev *e = &f->log.ev[i];
		if (e->wd != wd)
			continue;
		if (e->mask == NOTIFYX_RENAME && !inode_marks && !conf_node_find(m, e->old_path)) {
			conf_dump(&f->log, "actual");
			fail_msg("event #%zu: RENAME from \"%s\", an entry never reported", i,
				 e->old_path);
		}
		conf_mirror_apply(m, e, 0);
	}
	conf_node_free(m);
	conf_mirror_equals(&f->log, wd, top, NULL, "after the moves");
	conf_no_error(&f->log);
	free(top);
}

ON_BOTH(listing_ahead_of_a_move)

int conf_listing_run(void)
{
	const struct CMUnitTest tests[] = {
		TEST_BOTH(independent_list_second),
		TEST_BOTH(independent_list_first),
		/* on /tmp only: nothing of it depends on the filesystem, and it is slow */
		cmocka_unit_test_setup_teardown(list_once_while_growing_tmpdir, tu_setup, conf_teardown),
		TEST_BOTH(list_once_while_moving),
		TEST_BOTH(listing_ahead_of_a_move),
	};

	return cmocka_run_group_tests_name("conformance: LIST beside other watches and under change",
					   tests, NULL, NULL);
}
