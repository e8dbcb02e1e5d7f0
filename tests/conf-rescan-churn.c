/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Conformance test, NOTIFYX_WATCH_RESCAN (API.md 0.2) under constant
 * change: losses while a second thread changes a tree of 2,050 entries on
 * and on (loss_during_repair): between two OVERFLOWs a SYNC, and once the
 * changes stop, a copy of the tree made of the events equals the tree after
 * the last repair.  Losses come from the library's own limit
 * (notifyx_config.queue_max, the same on every backend).  Runs in the test's
 * directory under /tmp and on a private tmpfs.  Run from conformance.c's
 * main through conf_rescan_churn_run().  The other RESCAN cases:
 * conf-rescan.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "conformance.h"

/*
 * The tree: CH_DIRS directories of CH_FILES files (2,050 entries; a repair
 * lists them all).  A second thread changes it CH_OPS times (a seeded PRNG:
 * files made, removed, renamed, also onto existing files; directories made
 * with files, renamed, removed with what they hold; entries moved out to a
 * directory beside the watch and back in), pausing CH_PAUSE_US every
 * CH_EVERY operations, while the test reads on with queue_max LQMAX.
 * The thread uses no cmocka call and no tu_* helper (their buffers are
 * shared): its first failure is kept and reported after the join.
 */
#define CH_DIRS 50
#define CH_FILES 40
#define CH_OPS 8000
#define CH_EVERY 8
#define CH_PAUSE_US 400
#define CH_DEPTH 5          /* directories are made or moved no deeper than this */
#define CH_RM_MAX 60        /* a directory is removed only with at most this many entries */
#define CH_SEED 17          /* CONF_RESCAN_SEED=N in the environment replaces it */
#define LQMAX 8
#define CH_RUN_MS 240000    /* the churn must end within this (ASan, a loaded machine) */
#define CH_SETTLE_MS 60000  /* then the last repair must end within this */
#define MIRROR_TYPES (NOTIFYX_CREATE | NOTIFYX_DELETE | NOTIFYX_RENAME | NOTIFYX_MOVED_OUT | \
		      NOTIFYX_MOVED_IN | NOTIFYX_DELETE_SELF)

struct churn {
	char root[2048], out[2048]; /* the tree, and a place beside it that no watch sees */
	uint64_t rng;
	unsigned serial;
	int stop;                   /* set by the test (atomic): give up */
	int done;                   /* set by the thread (atomic) */
	int err;                    /* the first failure: errno, and what failed */
	char what[4400];
	unsigned long n[9];         /* operations done, by kind (ch_names) */
};

static const char *const ch_names[] = { "create", "unlink", "rename file", "mkdir",
					"rename dir", "rm -r", "move out", "move in", "no-op" };

/* snprintf that the compiler does not second-guess: the paths are short. */
static void ch_print(char *out, size_t size, const char *fmt, ...) CMOCKA_PRINTF_ATTRIBUTE(3, 4);
static void ch_print(char *out, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(out, size, fmt, ap);
	va_end(ap);
}

static uint64_t ch_rand(struct churn *c)
{
	/* splitmix64 */
	uint64_t z = (c->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static unsigned ch_below(struct churn *c, unsigned n)
{
	return n ? (unsigned)(ch_rand(c) % n) : 0;
}

static int ch_fail(struct churn *c, const char *op, const char *path)
{
	if (!c->err) {
		c->err = errno ? errno : EIO;
		ch_print(c->what, sizeof c->what, "%s %s", op, path);
	}
	return -1;
}

/* root/rel, or root itself for "". */
static void ch_abs(const struct churn *c, const char *rel, char *out, size_t size)
{
	ch_print(out, size, "%s%s%s", c->root, *rel ? "/" : "", rel);
}

static void ch_join(const char *a, const char *b, char *out, size_t size)
{
	ch_print(out, size, "%s%s%s", a, *a ? "/" : "", b);
}

#define CH_LIST 256
struct ch_list {
	char name[CH_LIST][64];
	int isdir[CH_LIST];
	int n, ndirs, nfiles;
};

/* The entries of the directory at abs (the first CH_LIST). */
static int ch_read(struct churn *c, const char *abs, struct ch_list *l)
{
	DIR *d = opendir(abs);
	struct dirent *de;

	l->n = l->ndirs = l->nfiles = 0;
	if (!d)
		return ch_fail(c, "opendir", abs);
	while ((de = readdir(d)) && l->n < CH_LIST) {
		struct stat st;
		int isdir;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    strlen(de->d_name) >= sizeof l->name[0])
			continue;
		if (de->d_type != DT_UNKNOWN) {
			isdir = de->d_type == DT_DIR;
		} else if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			isdir = S_ISDIR(st.st_mode);
		} else {
			closedir(d);
			return ch_fail(c, "fstatat in", abs);
		}
		strcpy(l->name[l->n], de->d_name);
		l->isdir[l->n++] = isdir;
		l->ndirs += isdir;
		l->nfiles += !isdir;
	}
	closedir(d);
	return 0;
}

/* The k-th entry of l that is a directory (want 1) or not (want 0). */
static const char *ch_nth(const struct ch_list *l, int want, unsigned k)
{
	for (int i = 0; i < l->n; i++)
		if (l->isdir[i] == want && k-- == 0)
			return l->name[i];
	return NULL;
}

/* A directory of the tree, as a path relative to the root ("" the root):
 * down from the root into a random subdirectory, less often the deeper. */
static int ch_pick_dir(struct churn *c, char *rel, size_t size, int max_depth)
{
	struct ch_list *l = malloc(sizeof *l);
	char abs[4096];
	int depth = 0;

	if (!l)
		return ch_fail(c, "malloc", "");
	rel[0] = 0;
	for (;;) {
		ch_abs(c, rel, abs, sizeof abs);
		if (ch_read(c, abs, l) < 0) {
			free(l);
			return -1;
		}
		if (!l->ndirs || depth >= max_depth || ch_below(c, 8) < (depth ? 4u : 1u))
			break;
		char next[4096];

		ch_join(rel, ch_nth(l, 1, ch_below(c, (unsigned)l->ndirs)), next, sizeof next);
		ch_print(rel, size, "%s", next);
		depth++;
	}
	free(l);
	return 0;
}

/* The name of a random entry of the directory abs_dir (a directory if
 * want_dir is 1, a non-directory if 0, either if -1): 1, or 0 if it has
 * none. */
static int ch_pick_in(struct churn *c, const char *abs_dir, int want_dir, char *name, size_t size)
{
	struct ch_list *l = malloc(sizeof *l);
	const char *e = NULL;

	if (!l)
		return ch_fail(c, "malloc", "");
	if (ch_read(c, abs_dir, l) < 0) {
		free(l);
		return -1;
	}
	if (want_dir < 0 && l->n)
		e = l->name[ch_below(c, (unsigned)l->n)];
	else if (want_dir >= 0 && (want_dir ? l->ndirs : l->nfiles))
		e = ch_nth(l, want_dir, ch_below(c, (unsigned)(want_dir ? l->ndirs : l->nfiles)));
	if (e)
		ch_print(name, size, "%s", e);
	free(l);
	return e != NULL;
}

static int ch_touch(struct churn *c, const char *abs)
{
	int fd = open(abs, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	if (fd < 0)
		return ch_fail(c, "create", abs);
	close(fd);
	return 0;
}

/* Entries below abs, counted up to limit + 1. */
static int ch_count(const char *abs, int limit)
{
	DIR *d = opendir(abs);
	struct dirent *de;
	int n = 0;

	if (!d)
		return limit + 1;
	while (n <= limit && (de = readdir(d))) {
		char sub[4096];

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		n++;
		if (de->d_type == DT_DIR) {
			ch_print(sub, sizeof sub, "%s/%s", abs, de->d_name);
			n += ch_count(sub, limit - n);
		}
	}
	closedir(d);
	return n;
}

static int ch_rm_r(struct churn *c, const char *abs)
{
	DIR *d = opendir(abs);
	struct dirent *de;

	if (!d)
		return ch_fail(c, "opendir", abs);
	while ((de = readdir(d))) {
		char sub[4096];
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		ch_print(sub, sizeof sub, "%s/%s", abs, de->d_name);
		if (lstat(sub, &st) < 0) {
			closedir(d);
			return ch_fail(c, "lstat", sub);
		}
		if (S_ISDIR(st.st_mode) ? ch_rm_r(c, sub) : unlink(sub) < 0 ? ch_fail(c, "unlink", sub) : 0) {
			closedir(d);
			return -1;
		}
	}
	closedir(d);
	return rmdir(abs) < 0 ? ch_fail(c, "rmdir", abs) : 0;
}

static int ch_rename(struct churn *c, const char *from, const char *to)
{
	return rename(from, to) < 0 ? ch_fail(c, "rename", from) : 0;
}

/* One operation; its kind counted in c->n. */
static int ch_op(struct churn *c)
{
	char d1[4096], d2[4096], a1[4096], a2[4096], name[256], p[4096], q[4096];
	unsigned r = ch_below(c, 100);
	unsigned id = c->serial++;
	int kind, got;

	if (ch_pick_dir(c, d1, sizeof d1, CH_DEPTH) < 0 ||
	    ch_pick_dir(c, d2, sizeof d2, CH_DEPTH - 1) < 0)
		return -1;
	ch_abs(c, d1, a1, sizeof a1);
	ch_abs(c, d2, a2, sizeof a2);
	if (r < 30) { /* a file made */
		kind = 0;
		ch_print(p, sizeof p, "%s/c%u", a1, id);
		if (ch_touch(c, p) < 0)
			return -1;
	} else if (r < 52) { /* a file removed */
		kind = 1;
		if ((got = ch_pick_in(c, a1, 0, name, sizeof name)) < 0)
			return -1;
		if (!got)
			goto nothing;
		ch_print(p, sizeof p, "%s/%s", a1, name);
		if (unlink(p) < 0)
			return ch_fail(c, "unlink", p);
	} else if (r < 70) { /* a file renamed, one time in five onto an existing file */
		kind = 2;
		if ((got = ch_pick_in(c, a1, 0, name, sizeof name)) < 0)
			return -1;
		if (!got)
			goto nothing;
		ch_print(p, sizeof p, "%s/%s", a1, name);
		if (ch_below(c, 5) || (got = ch_pick_in(c, a2, 0, name, sizeof name)) <= 0)
			ch_print(name, sizeof name, "r%u", id);
		if (got < 0)
			return -1;
		ch_print(q, sizeof q, "%s/%s", a2, name);
		if (strcmp(p, q) && ch_rename(c, p, q) < 0)
			return -1;
	} else if (r < 78) { /* a directory made, with files made in it at once */
		kind = 3;
		ch_print(p, sizeof p, "%s/m%u", a2, id);
		if (mkdir(p, 0755) < 0)
			return ch_fail(c, "mkdir", p);
		for (unsigned k = ch_below(c, 5); k > 0; k--) {
			ch_print(q, sizeof q, "%s/k%u", p, k);
			if (ch_touch(c, q) < 0)
				return -1;
		}
	} else if (r < 85) { /* a directory renamed, elsewhere in the tree */
		kind = 4;
		if ((got = ch_pick_in(c, a1, 1, name, sizeof name)) < 0)
			return -1;
		ch_join(d1, got ? name : "", p, sizeof p);
		/* never into itself */
		if (!got || !strcmp(d2, p) || (!strncmp(d2, p, strlen(p)) && d2[strlen(p)] == '/'))
			goto nothing;
		ch_print(p, sizeof p, "%s/%s", a1, name);
		ch_print(q, sizeof q, "%s/n%u", a2, id);
		if (ch_rename(c, p, q) < 0)
			return -1;
	} else if (r < 90) { /* a directory removed with what it holds */
		kind = 5;
		if ((got = ch_pick_in(c, a1, 1, name, sizeof name)) < 0)
			return -1;
		ch_print(p, sizeof p, "%s/%s", a1, got ? name : "");
		if (!got || ch_count(p, CH_RM_MAX) > CH_RM_MAX)
			goto nothing;
		if (ch_rm_r(c, p) < 0)
			return -1;
	} else if (r < 95) { /* an entry moved out of the tree */
		kind = 6;
		if ((got = ch_pick_in(c, a1, -1, name, sizeof name)) < 0)
			return -1;
		if (!got)
			goto nothing;
		ch_print(p, sizeof p, "%s/%s", a1, name);
		ch_print(q, sizeof q, "%s/o%u", c->out, id);
		if (ch_rename(c, p, q) < 0)
			return -1;
	} else { /* an entry moved back in */
		kind = 7;
		if ((got = ch_pick_in(c, c->out, -1, name, sizeof name)) < 0)
			return -1;
		if (!got)
			goto nothing;
		ch_print(p, sizeof p, "%s/%s", c->out, name);
		ch_print(q, sizeof q, "%s/i%u", a2, id);
		if (ch_rename(c, p, q) < 0)
			return -1;
	}
	c->n[kind]++;
	return 0;
nothing:
	c->n[8]++;
	return 0;
}

static void *churn_thread(void *arg)
{
	struct churn *c = arg;
	struct timespec pause = { 0, CH_PAUSE_US * 1000L };

	for (int i = 0; i < CH_OPS && !__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE); i++) {
		if (ch_op(c) < 0)
			break;
		if (i % CH_EVERY == CH_EVERY - 1)
			nanosleep(&pause, NULL);
	}
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* The copy of the tree kept from the events: a mirror (conformance.h) to
 * which the events are applied as read while some were lost (lossy), which
 * makes the directories above an entry exist.  It is compared with the disk
 * only after a SYNC. */

/* What the reader has seen of the watch so far. */
struct follow {
	int wd;
	size_t applied;            /* events of the log applied to the copy */
	ssize_t pending;           /* the OVERFLOW whose repair has not given its SYNC yet */
	ssize_t last;              /* the last OVERFLOW */
	ssize_t bad, bad_prev;     /* a second OVERFLOW (and the first) with no SYNC between */
	size_t overflows, syncs, anomalies;
};

/* Applies the events read since the last call; never fails (the churn may
 * still run): a broken rule is kept for after the join. */
static void follow(struct follow *fw, const struct tu_log *log, struct conf_node *copy)
{
	for (; fw->applied < log->n; fw->applied++) {
		const struct tu_ev *e = &log->ev[fw->applied];

		if (e->wd != fw->wd)
			continue;
		if (e->mask == NOTIFYX_OVERFLOW) {
			if (fw->pending >= 0 && fw->bad < 0) {
				fw->bad = (ssize_t)fw->applied;
				fw->bad_prev = fw->pending;
			}
			fw->pending = fw->last = (ssize_t)fw->applied;
			fw->overflows++;
		} else if (e->mask == NOTIFYX_SYNC) {
			fw->pending = -1;
			fw->syncs++;
		}
		fw->anomalies += (size_t)conf_mirror_apply(copy, e, 1);
	}
}

/* The events of wd from #from to #to (a log of tens of thousands). */
static void dump_wd(const struct tu_log *log, int wd, size_t from, size_t to)
{
	print_error("events of wd %d, #%zu to #%zu:\n", wd, from, to);
	for (size_t i = from; i <= to && i < log->n; i++) {
		const struct tu_ev *e = &log->ev[i];

		if (e->wd == wd)
			print_error("  #%zu %s %s \"%s\"%s%s%s\n", i, tu_mask_str(e->mask),
				    tu_flags_str(e->flags), e->path, e->old_path ? " from \"" : "",
				    e->old_path ? e->old_path : "", e->old_path ? "\"" : "");
	}
}

/*
 * A RESCAN | RECURSIVE | LIST watch with queue_max LQMAX on a tree of 2,050
 * entries that a second thread changes on and on (struct churn), while this
 * one reads on and keeps a copy of the tree from the events.  API.md's rules:
 *  - more losses during a repair give no second OVERFLOW until its SYNC has
 *    been queued: between two OVERFLOWs of the watch there is a SYNC;
 *  - events were lost (at least one OVERFLOW; else nothing was tested);
 *  - once the changes stop, the events up to the SYNC that follows the last
 *    OVERFLOW, with nothing more to read, make a copy equal to the tree.
 * The changes are bounded by a count, not by time; each wait has a generous
 * deadline that fails with a message.  Should this fail before the join,
 * the thread stops at its first failure (teardown removes its tree).
 */
static void loss_during_repair(struct tu_fix *f, const char *base)
{
	struct churn *c = calloc(1, sizeof *c);
	struct conf_node *copy = conf_node_new("", 0, 1);
	const char *env = getenv("CONF_RESCAN_SEED");
	unsigned long seed = env ? strtoul(env, NULL, 0) : CH_SEED;
	struct follow fw = { .pending = -1, .last = -1, .bad = -1, .bad_prev = -1 };
	size_t s0, entries = 0, bad, quiet_from;
	pthread_t th;
	long start, end;
	int err;

	assert_non_null(c);
	snprintf(c->root, sizeof c->root, "%s", tu_path(base, "w"));
	snprintf(c->out, sizeof c->out, "%s", tu_path(base, "out"));
	c->rng = seed;
	tu_mkdir(c->root);
	tu_mkdir(c->out);
	for (int d = 0; d < CH_DIRS; d++) {
		char sub[4096];

		snprintf(sub, sizeof sub, "%s", tu_path(c->root, tu_fmt("d%02d", d)));
		tu_mkdir(sub);
		conf_make_files(sub, "f", CH_FILES);
	}
	conf_reopen(f, LQMAX);
	fw.wd = tu_add(&f->log, c->root, MIRROR_TYPES, RFLAGS | NOTIFYX_WATCH_LIST);
	s0 = tu_must_wait(&f->log, 0, fw.wd, NOTIFYX_SYNC, "", 6 * SYNC_MS, __FILE__, __LINE__);
	follow(&fw, &f->log, copy);
	TU_EQ("OVERFLOWs before the listing's SYNC (a listing is not lost; nothing changed)", 0,
	      fw.overflows);
	fw.syncs = 0;

	err = pthread_create(&th, NULL, churn_thread, c);
	if (err)
		fail_msg("pthread_create: %s", strerror(err));
	start = tu_now_ms();
	for (;;) {
		int done = __atomic_load_n(&c->done, __ATOMIC_ACQUIRE);

		/* Reads on for 50 ms (a wd that no event has), then applies. */
		tu_wait_from(&f->log, f->log.n, -1, TU_ANY_MASK, NULL, 50);
		follow(&fw, &f->log, copy);
		if (done)
			break;
		if (tu_now_ms() - start > CH_RUN_MS) {
			__atomic_store_n(&c->stop, 1, __ATOMIC_RELEASE);
			pthread_join(th, NULL);
			fail_msg("the %d changes took more than %d ms: stopped after %u", CH_OPS,
				 CH_RUN_MS, c->serial);
		}
	}
	pthread_join(th, NULL);
	if (c->err)
		fail_msg("the changing thread: %s: %s", c->what, strerror(c->err));
	print_message("  seed %lu (CONF_RESCAN_SEED=N to change it), %u changes in %ld ms:", seed,
		      c->serial, tu_now_ms() - start);
	for (size_t k = 0; k < sizeof ch_names / sizeof ch_names[0]; k++)
		print_message(" %s %lu%s", ch_names[k], c->n[k], k + 1 < sizeof ch_names / sizeof ch_names[0] ? "," : "\n");

	/* The changes are over: read until the SYNC after the last OVERFLOW,
	 * then on until nothing more comes. */
	end = tu_now_ms() + CH_SETTLE_MS;
	for (;;) {
		quiet_from = f->log.n;
		tu_settle_ms(&f->log, tu_quiet_ms(f->nx), 5000);
		follow(&fw, &f->log, copy);
		if (fw.pending < 0 && f->log.n == quiet_from)
			break;
		if (tu_now_ms() > end) {
			if (fw.pending >= 0)
				dump_wd(&f->log, fw.wd, (size_t)fw.pending, f->log.n);
			fail_msg("%d ms after the changes ended: %s", CH_SETTLE_MS,
				 fw.pending >= 0 ? tu_fmt("no SYNC after the OVERFLOW #%zd", fw.pending)
						 : "events still coming");
		}
	}

	if (fw.bad >= 0) {
		dump_wd(&f->log, fw.wd, (size_t)fw.bad_prev, (size_t)fw.bad);
		fail_msg("seed %lu: OVERFLOW #%zd while the repair after the OVERFLOW #%zd had not "
			 "queued its SYNC (API.md: more losses during the repair give no second "
			 "OVERFLOW until the SYNC has been queued)", seed, fw.bad, fw.bad_prev);
	}
	if (!fw.overflows)
		fail_msg("seed %lu: no OVERFLOW in %zu events (queue_max %d): nothing was lost, "
			 "nothing tested; the changes must be made faster", seed, f->log.n - s0,
			 LQMAX);
	bad = conf_mirror_differs(copy, conf_open_dir(c->root), NULL, &entries);
	if (bad)
		fail_msg("seed %lu, %s: the copy made of the events differs from the tree in %zu "
			 "entries (above; %zu on disk) after the SYNC that followed the last "
			 "OVERFLOW (#%zd)", seed, notifyx_backend_name(notifyx_backend(f->nx)), bad,
			 entries, fw.last);
	print_message("  %zu events, %zu OVERFLOWs, %zu SYNCs after the listing's, %zu exchanges "
		      "not applicable; the copy equals the tree (%zu entries)\n", f->log.n - s0 - 1,
		      fw.overflows, fw.syncs, fw.anomalies, entries);
	conf_node_free(copy);
	free(c);
}
ON_BOTH(loss_during_repair)

int conf_rescan_churn_run(void)
{
	const struct CMUnitTest tests[] = {
		TEST_BOTH(loss_during_repair),
	};

	return cmocka_run_group_tests_name("conformance: RESCAN under churn", tests, NULL, NULL);
}
