/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Conformance test, the edges of API.md 0.2 (issue "Exact at the edges"),
 * exchanges (renameat2 RENAME_EXCHANGE): with a place the watch does not
 * see (an excluded name, a directory outside every watch), and inside one
 * watch (directories, files, bursts read late, and changes made while the
 * watch lists: getdents64 is interposed); a mirror of the tree made of the
 * events stays exact.  Each case runs on /tmp and on a private tmpfs
 * (ON_BOTH, conformance.h).  Run from conformance.c's main through
 * conf_exchange_run().
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "conformance.h"

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

static void rename_exchange(const char *a, const char *b)
{
	if (syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) < 0) {
		if (errno == EINVAL || errno == ENOSYS) {
			print_message("[ SKIP     ] renameat2(RENAME_EXCHANGE) %s: %s\n", a,
				      strerror(errno));
			skip();
		}
		fail_msg("renameat2(%s, %s, RENAME_EXCHANGE): %s", a, b, strerror(errno));
	}
}

enum unseen { EXCL_FILES, EXCL_DIRS, EXCL_FILE_DIR, OUT_DIRS, OUT_DIR_FILE };

/* Make a directory (with entries in, in2/deeper) or a file at path. */
static void make_entry(const char *path, int dir, const char *in)
{
	if (!dir) {
		tu_write(path, in);
		return;
	}
	tu_mkdir(path);
	tu_touch(tu_path(path, in));
	tu_mkdir(tu_path(path, tu_fmt("%s2", in)));
	tu_touch(tu_path(path, tu_fmt("%s2/deeper", in)));
}

/* The name "site" in the watch exchanged with a place the watch does not
 * see: "site.tmp" beside it, hidden by notifyx_exclude("*.tmp"), or
 * "out/site" outside every watch.  inotify and fanotify: MOVED_OUT then
 * MOVED_IN of "site", cookie 0 each, ISDIR of the entry each describes, and
 * with LIST the arrival's contents; nothing of the unseen name.  Every
 * backend: a mirror (LIST) and a plain recursive watch's events keep the
 * mirror exact; the new "site" is watched, the old one not. */
static void exchange_unseen(struct tu_fix *f, const char *base, enum unseen how)
{
	const char *w = tu_path(base, "w"), *site = tu_path(base, "w/site");
	const char *other = how >= OUT_DIRS ? tu_path(base, "out/site") : tu_path(base, "w/site.tmp");
	int old_dir = how != EXCL_FILES;
	int new_dir = how == EXCL_DIRS || how == EXCL_FILE_DIR || how == OUT_DIRS;
	const char *skip = how < OUT_DIRS ? "*.tmp" : NULL;
	int list, plain, k;
	size_t from;

	if (how == EXCL_FILE_DIR)
		old_dir = 0;
	tu_mkdir(w);
	tu_mkdir(tu_path(base, "out"));
	tu_touch(tu_path(base, "w/stay"));
	make_entry(site, old_dir, "old");
	make_entry(other, new_dir, "new");
	if (skip)
		assert_int_equal(notifyx_exclude(f->nx, skip), 0);
	list = tu_add(&f->log, w, APPEAR | GO, NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	plain = tu_add(&f->log, w, APPEAR | GO, NOTIFYX_WATCH_RECURSIVE);
	conf_listed(&f->log, list);
	tu_settle(&f->log);
	from = f->log.n;
	rename_exchange(other, site);
	WAIT_FROM(&f->log, from, plain, 0, "site");
	WAIT_FROM(&f->log, from, list, 0, "site");
	tu_settle(&f->log);
	for (k = 0; k < 2; k++) {
		int wd = k ? plain : list;
		size_t i, n = 0;

		if (wd == list) /* a plain watch's mirror would lack what moved in */
			conf_mirror_equals(&f->log, wd, w, skip, "the mirror after the exchange");
		for (i = from; i < f->log.n; i++) {
			const struct tu_ev *e = &f->log.ev[i];

			if (e->wd != wd)
				continue;
			if (strncmp(e->path, "site", 4) || (e->path[4] && e->path[4] != '/')) {
				conf_dump(&f->log, "actual");
				fail_msg("event #%zu of wd %d about an entry the exchange did not touch", i, wd);
			}
			if (f->log.scanning)
				continue; /* the replacement rule: the mirror is what counts */
			if (n == 0 || n == 1) {
				uint32_t mask = n ? NOTIFYX_MOVED_IN : NOTIFYX_MOVED_OUT;
				int dir = n ? new_dir : old_dir;

				if (e->mask != mask || strcmp(e->path, "site") || e->cookie ||
				    !!(e->flags & NOTIFYX_EVENT_ISDIR) != dir) {
					conf_dump(&f->log, "actual");
					fail_msg("wd %d, event %zu after the exchange (#%zu): expected %s \"site\" "
						 "cookie 0 %s", wd, n + 1, i, tu_mask_str(mask),
						 dir ? "ISDIR" : "(not ISDIR)");
				}
			} else if (wd == plain || e->mask != NOTIFYX_CREATE ||
				   !(e->flags & NOTIFYX_EVENT_SYNTHETIC)) {
				conf_dump(&f->log, "actual");
				fail_msg("wd %d: event #%zu after MOVED_OUT and MOVED_IN of \"site\": only a "
					 "LIST watch gets more (the arrival's contents)", wd, i);
			}
			n++;
		}
		if (!f->log.scanning && n < 2) {
			conf_dump(&f->log, "actual");
			fail_msg("wd %d: %zu event(s) after the exchange: expected MOVED_OUT then MOVED_IN",
				 wd, n);
		}
	}
	/* The arrival is watched, what left is not. */
	from = f->log.n;
	if (new_dir)
		tu_touch(tu_path(site, "later"));
	if (old_dir)
		tu_touch(tu_path(other, "later"));
	tu_touch(tu_path(w, "mark"));
	WAIT_FROM(&f->log, from, plain, NOTIFYX_CREATE, "mark");
	tu_settle(&f->log);
	for (k = 0; k < 2; k++) {
		int wd = k ? plain : list;
		size_t i;

		if (new_dir)
			ONCE(&f->log, wd, NOTIFYX_CREATE, "site/later", NOTIFYX_EVENT_ISDIR, 0);
		for (i = from; i < f->log.n; i++)
			if (f->log.ev[i].wd == wd && strcmp(f->log.ev[i].path, "mark") &&
			    strcmp(f->log.ev[i].path, "site/later")) {
				conf_dump(&f->log, "actual");
				fail_msg("wd %d: event #%zu about the entry that left", wd, i);
			}
		if (wd == list)
			conf_mirror_equals(&f->log, wd, w, skip, "after more changes");
	}
	conf_no_error(&f->log);
}
ON_BOTH_WITH(exchange_excluded_files, exchange_unseen, EXCL_FILES)
ON_BOTH_WITH(exchange_excluded_dirs, exchange_unseen, EXCL_DIRS)
ON_BOTH_WITH(exchange_excluded_file_dir, exchange_unseen, EXCL_FILE_DIR)
ON_BOTH_WITH(exchange_outside_dirs, exchange_unseen, OUT_DIRS)
ON_BOTH_WITH(exchange_outside_dir_file, exchange_unseen, OUT_DIR_FILE)

/*
 * The frame of the cases below: base/w and base/out with what make() puts
 * there, a recursive LIST watch of w, then change() in one go before the
 * library reads, then w/mark: the mirror equals the tree.
 */
struct unseen_then {
	void (*make)(const char *base);
	void (*change)(const char *base);
};

static void unseen_then(struct tu_fix *f, const char *base, const struct unseen_then *c)
{
	char *w = conf_join(base, "w"); /* tu_path's buffers rotate */
	int list;
	size_t from;

	tu_mkdir(w);
	tu_mkdir(tu_path(base, "out"));
	c->make(base);
	list = tu_add(&f->log, w, APPEAR | GO, NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	conf_listed(&f->log, list);
	tu_settle(&f->log);
	from = f->log.n;
	c->change(base);
	tu_touch(tu_path(base, "w/mark"));
	WAIT_FROM(&f->log, from, list, NOTIFYX_CREATE, "mark");
	tu_settle(&f->log);
	conf_mirror_equals(&f->log, list, w, NULL, "the mirror after the changes");
	conf_no_error(&f->log);
	free(w);
}

static void make_site_dir(const char *base)
{
	make_entry(tu_path(base, "w/site"), 1, "old");
	make_entry(tu_path(base, "out/site"), 0, "new");
	make_entry(tu_path(base, "w/b"), 1, "b");
}

/* "site" (a directory) exchanged with a file outside every watch, then at
 * once, before the library reads, exchanged (a file now) with the directory
 * "b" of the watch (of another type: inotify cannot tell an exchange of two
 * files, see BUGS in notifyx(7)).  The second exchange's departure of "site" is a move inside
 * the watch, not the other half of the first exchange: inotify once took it
 * for that, and reported the second exchange with the first one's types. */
static void outside_then_inside(const char *base)
{
	rename_exchange(tu_path(base, "w/site"), tu_path(base, "out/site"));
	rename_exchange(tu_path(base, "w/site"), tu_path(base, "w/b"));
}
ON_BOTH_WITH(exchange_outside_then_inside, unseen_then,
	     (&(struct unseen_then){ make_site_dir, outside_then_inside }))

/* The same, then at once "site" (the directory again) moves out of the
 * watch.  That rename takes the cookie after the second exchange's: inotify
 * once read the name as still there after the second exchange's departure,
 * took that departure for the other half of the first exchange, and
 * reported the second exchange before the first one's arrival. */
static void outside_inside_out(const char *base)
{
	outside_then_inside(base);
	tu_rename(tu_path(base, "w/site"), tu_path(base, "out/gone"));
}
ON_BOTH_WITH(exchange_outside_inside_out, unseen_then,
	     (&(struct unseen_then){ make_site_dir, outside_inside_out }))

/* The directory "site", made just now (not watched yet), exchanged with a
 * directory outside every watch, then at once (before the library reads)
 * exchanged with the file "b" of the watch.  inotify drops a record equal to
 * the last one it holds unread: the second exchange's departure of "site"
 * equals the first one's and is lost, so that its arrival at "b" comes
 * alone.  Once such an arrival was taken for a move in from outside, and
 * the first exchange for a move in and a move out. */
static void make_new_site(const char *base)
{
	make_entry(tu_path(base, "out/site"), 1, "new");
	make_entry(tu_path(base, "w/b"), 0, "b");
}

static void new_outside_inside(const char *base)
{
	tu_mkdir(tu_path(base, "w/site"));
	rename_exchange(tu_path(base, "out/site"), tu_path(base, "w/site"));
	rename_exchange(tu_path(base, "w/site"), tu_path(base, "w/b"));
}
ON_BOTH_WITH(exchange_new_outside_inside, unseen_then,
	     (&(struct unseen_then){ make_new_site, new_outside_inside }))

/* A directory moved in from outside and at once out again, then the
 * directory "b" exchanged with one outside, before the library reads.  The
 * move out and the exchange's arrival look like the start of the case
 * above; but the exchange's departure does not lead back to the name moved
 * out: nothing was dropped, and the move in and out are not an exchange. */
static void make_in_other(const char *base)
{
	make_entry(tu_path(base, "out/site"), 1, "in");
	make_entry(tu_path(base, "out/other"), 1, "new");
	make_entry(tu_path(base, "w/b"), 1, "b");
}

static void in_out_then_exchange(const char *base)
{
	tu_rename(tu_path(base, "out/site"), tu_path(base, "w/site"));
	tu_rename(tu_path(base, "w/site"), tu_path(base, "out/gone"));
	rename_exchange(tu_path(base, "out/other"), tu_path(base, "w/b"));
}
ON_BOTH_WITH(move_in_out_then_exchange, unseen_then,
	     (&(struct unseen_then){ make_in_other, in_out_then_exchange }))

/* ---- exchanges inside one watch --------------------------------------------- */

/* Two directories (with contents) exchanged inside one recursive watch, with
 * and without LIST (beside each other, or the plain watch alone): one RENAME with EXCHANGE and ISDIR; both stay watched
 * under their new names; the LIST watch's mirror equals the tree. */
static void exchange_dirs(struct tu_fix *f, const char *base, int alone)
{
	const char *w = tu_path(base, "w");
	int list = 0, plain, k;
	size_t from;

	tu_mkdir(w);
	tu_mkdir(tu_path(w, "x"));
	make_entry(tu_path(w, "x/a"), 1, "in");
	make_entry(tu_path(w, "b"), 1, "other");
	if (!alone)
		list = tu_add(&f->log, w, APPEAR | GO, NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	plain = tu_add(&f->log, w, APPEAR | GO, NOTIFYX_WATCH_RECURSIVE);
	if (!alone)
		conf_listed(&f->log, list);
	tu_settle(&f->log);
	from = f->log.n;
	rename_exchange(tu_path(w, "x/a"), tu_path(w, "b"));
	WAIT_FROM(&f->log, from, plain, NOTIFYX_RENAME, NULL);
	if (!alone)
		WAIT_FROM(&f->log, from, list, NOTIFYX_RENAME, NULL);
	tu_settle(&f->log);
	for (k = alone; k < 2; k++) {
		int wd = k ? plain : list;
		size_t i = ONCE(&f->log, wd, NOTIFYX_RENAME, NULL,
				NOTIFYX_EVENT_EXCHANGE | NOTIFYX_EVENT_ISDIR,
				NOTIFYX_EVENT_EXCHANGE | NOTIFYX_EVENT_ISDIR);
		const struct tu_ev *e = &f->log.ev[i];

		if (!(!strcmp(e->path, "b") && !strcmp(e->old_path, "x/a")) &&
		    !(!strcmp(e->path, "x/a") && !strcmp(e->old_path, "b"))) {
			conf_dump(&f->log, "actual");
			fail_msg("exchange of x/a and b reported as RENAME \"%s\" <- \"%s\"", e->path,
				 e->old_path);
		}
		COUNT(&f->log, wd, (size_t)(tu_find(&f->log, 0, wd, NOTIFYX_RENAME, NULL) >= 0) +
					   tu_count(&f->log, wd, NOTIFYX_CREATE, NULL),
		      "one RENAME for the exchange, nothing else");
	}
	if (!alone)
		conf_mirror_equals(&f->log, list, w, NULL, "after the exchange");
	/* Each is watched under its new name. */
	from = f->log.n;
	tu_touch(tu_path(w, "b/new-b"));
	tu_touch(tu_path(w, "x/a/new-a"));
	tu_touch(tu_path(w, "b/in2/new-deep"));
	WAIT_FROM(&f->log, from, plain, NOTIFYX_CREATE, "b/in2/new-deep");
	if (!alone)
		WAIT_FROM(&f->log, from, list, NOTIFYX_CREATE, "b/in2/new-deep");
	tu_settle(&f->log);
	for (k = alone; k < 2; k++) {
		int wd = k ? plain : list;

		ONCE(&f->log, wd, NOTIFYX_CREATE, "b/new-b", NOTIFYX_EVENT_ISDIR, 0);
		ONCE(&f->log, wd, NOTIFYX_CREATE, "x/a/new-a", NOTIFYX_EVENT_ISDIR, 0);
		ONCE(&f->log, wd, NOTIFYX_CREATE, "b/in2/new-deep", NOTIFYX_EVENT_ISDIR, 0);
	}
	if (!alone)
		conf_mirror_equals(&f->log, list, w, NULL, "after creations in the exchanged directories");
	conf_no_error(&f->log);
}
ON_BOTH_WITH(exchange_two_dirs, exchange_dirs, 0)

/* The same with the plain recursive watch alone on its handle. */
ON_BOTH_WITH(exchange_two_dirs_alone, exchange_dirs, 1)

/* An exchange between two watches of the handle (A/p with B/q; what
 * dirs says of both: directories or files): inotify and fanotify
 * report a move each way, MOVED_OUT then MOVED_IN of the name in each
 * watch, the MOVED_OUT of one watch and the MOVED_IN of the other with the
 * same non-zero cookie, ISDIR of the entry each describes.  Every backend:
 * each watch's mirror (LIST) stays exact, and what arrived is watched where
 * it is now. */
static void exchange_between(struct tu_fix *f, const char *base, int dirs)
{
	const char *a = tu_path(base, "A"), *b = tu_path(base, "B");
	int wd[2], k;
	size_t from, out[2], in[2];

	tu_mkdir(a);
	tu_mkdir(b);
	make_entry(tu_path(a, "p"), dirs, "ina");
	make_entry(tu_path(b, "q"), dirs, "inb");
	wd[0] = tu_add(&f->log, a, APPEAR | GO, NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	wd[1] = tu_add(&f->log, b, APPEAR | GO, NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	conf_listed(&f->log, wd[0]);
	conf_listed(&f->log, wd[1]);
	tu_settle(&f->log);
	from = f->log.n;
	rename_exchange(tu_path(a, "p"), tu_path(b, "q"));
	WAIT_FROM(&f->log, from, wd[0], 0, "p");
	WAIT_FROM(&f->log, from, wd[1], 0, "q");
	tu_settle(&f->log);
	conf_mirror_equals(&f->log, wd[0], a, NULL, "A after the exchange");
	conf_mirror_equals(&f->log, wd[1], b, NULL, "B after the exchange");
	for (k = 0; k < 2 && !f->log.scanning; k++) {
		const char *name = k ? "q" : "p";
		size_t i, n = 0;

		for (i = from; i < f->log.n; i++) {
			const struct tu_ev *e = &f->log.ev[i];

			if (e->wd != wd[k])
				continue;
			if (n < 2) {
				uint32_t mask = n ? NOTIFYX_MOVED_IN : NOTIFYX_MOVED_OUT;

				if (e->mask != mask || strcmp(e->path, name) || !e->cookie ||
				    !!(e->flags & NOTIFYX_EVENT_ISDIR) != !!dirs) {
					conf_dump(&f->log, "actual");
					fail_msg("wd %d, event %zu after the exchange (#%zu): expected %s "
						 "\"%s\" with a cookie%s", wd[k], n + 1, i, tu_mask_str(mask),
						 name, dirs ? ", ISDIR" : "");
				}
				*(n ? &in[k] : &out[k]) = i;
			} else if (!dirs || e->mask != NOTIFYX_CREATE ||
				   !(e->flags & NOTIFYX_EVENT_SYNTHETIC)) {
				conf_dump(&f->log, "actual");
				fail_msg("wd %d: event #%zu after MOVED_OUT and MOVED_IN of \"%s\": only "
					 "the arrival's contents may follow", wd[k], i, name);
			}
			n++;
		}
		if (n < 2) {
			conf_dump(&f->log, "actual");
			fail_msg("wd %d: %zu event(s) after the exchange: expected MOVED_OUT then "
				 "MOVED_IN of \"%s\"", wd[k], n, name);
		}
	}
	if (!f->log.scanning) {
		for (k = 0; k < 2; k++)
			if (f->log.ev[out[k]].cookie != f->log.ev[in[!k]].cookie) {
				conf_dump(&f->log, "actual");
				fail_msg("the MOVED_OUT of wd %d (cookie %u) and the MOVED_IN of wd %d "
					 "(cookie %u) are one move: expected the same cookie", wd[k],
					 f->log.ev[out[k]].cookie, wd[!k], f->log.ev[in[!k]].cookie);
			}
		if (f->log.ev[out[0]].cookie == f->log.ev[out[1]].cookie) {
			conf_dump(&f->log, "actual");
			fail_msg("the two ways of the exchange have one cookie");
		}
	}
	if (dirs) { /* each watches what arrived, and not what left */
		from = f->log.n;
		tu_touch(tu_path(a, "p/new-a"));
		tu_touch(tu_path(b, "q/new-b"));
		WAIT_FROM(&f->log, from, wd[0], NOTIFYX_CREATE, "p/new-a");
		WAIT_FROM(&f->log, from, wd[1], NOTIFYX_CREATE, "q/new-b");
		tu_settle(&f->log);
		for (size_t i = from; i < f->log.n; i++) {
			const struct tu_ev *e = &f->log.ev[i];

			if (strcmp(e->path, e->wd == wd[0] ? "p/new-a" : "q/new-b")) {
				conf_dump(&f->log, "actual");
				fail_msg("event #%zu: each watch reports only the file made in what "
					 "arrived in it", i);
			}
		}
		ONCE(&f->log, wd[0], NOTIFYX_CREATE, "p/new-a", NOTIFYX_EVENT_ISDIR, 0);
		ONCE(&f->log, wd[1], NOTIFYX_CREATE, "q/new-b", NOTIFYX_EVENT_ISDIR, 0);
		conf_mirror_equals(&f->log, wd[0], a, NULL, "A after creations");
		conf_mirror_equals(&f->log, wd[1], b, NULL, "B after creations");
	}
	conf_no_error(&f->log);
}
ON_BOTH_WITH(exchange_between_watches_files, exchange_between, 0)
ON_BOTH_WITH(exchange_between_watches_dirs, exchange_between, 1)

/* Exchanges in a burst, read only at the end (fanotify merges unread events
 * of one object): new directories exchanged with each other, a file with a
 * directory in two other directories, a directory with an older one.  A
 * plain recursive watch alone on its handle, on an empty tree (so that its
 * events alone make a mirror): the mirror equals the tree. */
static void exchange_burst(struct tu_fix *f, const char *base)
{
	char *w = conf_join(base, "w"); /* tu_path's buffers rotate */
	int wd, i;

	tu_mkdir(w);
	wd = tu_add(&f->log, w, APPEAR | GO, NOTIFYX_WATCH_RECURSIVE);
	for (i = 0; i < 20; i++) {
		char a[64], b[64];

		snprintf(a, sizeof a, "a%d", i);
		snprintf(b, sizeof b, "b%d", i);
		make_entry(tu_path(w, a), 1, "in");
		make_entry(tu_path(w, b), 1, "g");
		rename_exchange(tu_path(w, a), tu_path(w, b));
		rename_exchange(tu_path(w, tu_fmt("%s/g", a)), tu_path(w, tu_fmt("%s/in2", b)));
		if (i)
			rename_exchange(tu_path(w, a), tu_path(w, tu_fmt("b%d/in2", i - 1)));
	}
	tu_touch(tu_path(w, "last"));
	WAIT(&f->log, wd, NOTIFYX_CREATE, "last");
	tu_settle(&f->log);
	conf_mirror_equals(&f->log, wd, w, NULL, "after a burst of exchanges");
	conf_no_error(&f->log);
	free(w);
}
ON_BOTH(exchange_burst)

/* Directories made, then exchanged, or renamed and made again, all before
 * the library reads the first event.  The kernel's records describe the
 * past: the directory at a name when the library reads its CREATE is the one
 * the records after it leave there, not the one that was made.  Each name
 * must get what is there now, and the events inside each afterwards must
 * come under its own name (inotify watched "a" by its name at its CREATE,
 * then the exchange gave that kernel watch the name "b"). */
static void exchange_unread(struct tu_fix *f, const char *base)
{
	static const char *const made[] = { "a/new", "b/new", "c/new", "d/new", "a/g2/new", "b/in2/new" };
	char *w = conf_join(base, "w"); /* tu_path's buffers rotate */
	int wd;
	size_t k, from;

	tu_mkdir(w);
	wd = tu_add(&f->log, w, APPEAR | GO, NOTIFYX_WATCH_RECURSIVE);
	make_entry(tu_path(w, "a"), 1, "in");
	make_entry(tu_path(w, "b"), 1, "g");
	rename_exchange(tu_path(w, "a"), tu_path(w, "b"));
	tu_mkdir(tu_path(w, "c"));
	tu_touch(tu_path(w, "c/old"));
	tu_rename(tu_path(w, "c"), tu_path(w, "d"));
	tu_mkdir(tu_path(w, "c"));
	tu_touch(tu_path(w, "last"));
	WAIT(&f->log, wd, NOTIFYX_CREATE, "last");
	tu_settle(&f->log);
	conf_mirror_equals(&f->log, wd, w, NULL, "after directories made and exchanged unread");
	from = f->log.n;
	for (k = 0; k < sizeof made / sizeof made[0]; k++)
		tu_touch(tu_path(w, made[k]));
	for (k = 0; k < sizeof made / sizeof made[0]; k++)
		WAIT_FROM(&f->log, from, wd, NOTIFYX_CREATE, made[k]);
	tu_settle(&f->log);
	/* Reported by the kernel, under the name where each was made. */
	for (k = 0; k < sizeof made / sizeof made[0] && !tu_is_scanning(f->nx); k++)
		ONCE(&f->log, wd, NOTIFYX_CREATE, made[k], NOTIFYX_EVENT_SYNTHETIC, 0);
	conf_mirror_equals(&f->log, wd, w, NULL, "after entries made in them");
	conf_no_error(&f->log);
	free(w);
}
ON_BOTH(exchange_unread)

/* Two files exchanged inside one watch: on fanotify (FID records name the
 * object that moved) and on the scanning backends (they see two inodes
 * swap) one RENAME with EXCHANGE; on inotify two RENAMEs without the flag
 * (indistinguishable from a rename onto an existing name and one back). */
static void exchange_two_files(struct tu_fix *f, const char *base)
{
	const char *w = tu_path(base, "w");
	int list, plain, k;
	size_t from;

	tu_mkdir(w);
	tu_mkdir(tu_path(w, "d"));
	tu_write(tu_path(w, "d/a"), "a");
	tu_write(tu_path(w, "b"), "bb");
	list = tu_add(&f->log, w, APPEAR | GO, NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	plain = tu_add(&f->log, w, APPEAR | GO, NOTIFYX_WATCH_RECURSIVE);
	conf_listed(&f->log, list);
	tu_settle(&f->log);
	from = f->log.n;
	rename_exchange(tu_path(w, "d/a"), tu_path(w, "b"));
	WAIT_FROM(&f->log, from, plain, NOTIFYX_RENAME, NULL);
	tu_settle(&f->log);
	for (k = 0; k < 2; k++) {
		int wd = k ? plain : list;
		size_t i, n = 0;

		if (notifyx_backend(f->nx) == NOTIFYX_BACKEND_INOTIFY) {
			ONCE(&f->log, wd, NOTIFYX_RENAME, "b", NOTIFYX_EVENT_EXCHANGE | NOTIFYX_EVENT_ISDIR,
			     0);
			ONCE(&f->log, wd, NOTIFYX_RENAME, "d/a",
			     NOTIFYX_EVENT_EXCHANGE | NOTIFYX_EVENT_ISDIR, 0);
			n = 2;
		} else {
			i = ONCE(&f->log, wd, NOTIFYX_RENAME, NULL,
				 NOTIFYX_EVENT_EXCHANGE | NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_EXCHANGE);
			if (strcmp(f->log.ev[i].path, "b") && strcmp(f->log.ev[i].path, "d/a")) {
				conf_dump(&f->log, "actual");
				fail_msg("exchange of d/a and b reported on \"%s\"", f->log.ev[i].path);
			}
			n = 1;
		}
		for (i = from; i < f->log.n; i++)
			if (f->log.ev[i].wd == wd && f->log.ev[i].mask != NOTIFYX_RENAME) {
				conf_dump(&f->log, "actual");
				fail_msg("wd %d: event #%zu besides the exchange's RENAME(s)", wd, i);
			}
		COUNT(&f->log, wd, n + 3 * (wd == list), "the listing and the exchange's RENAME(s)");
	}
	for (k = 0; k < 2; k++) {
		size_t i = (size_t)tu_find(&f->log, from, k ? plain : list, NOTIFYX_RENAME, NULL);

		TU_STREQ("old_path of the RENAME", !strcmp(f->log.ev[i].path, "b") ? "d/a" : "b",
			 f->log.ev[i].old_path);
	}
	/* API.md: the one case where inotify's mirror is not exact. */
	if (notifyx_backend(f->nx) != NOTIFYX_BACKEND_INOTIFY)
		conf_mirror_equals(&f->log, list, w, NULL, "after the exchange");
}
ON_BOTH(exchange_two_files)

/* ---- moves read after a listing that is ahead of them ----------------------- */

enum ahead { AHEAD_ARRIVAL, AHEAD_CROSSED, AHEAD_HALF, AHEAD_MOVED_ON, AHEAD_CREATED,
	     AHEAD_INTO, AHEAD_TAKEN };

/* Is path a proper ancestor of p? */
static int below(const char *path, const char *p)
{
	size_t n = strlen(path);

	return !strncmp(path, p, n) && p[n] == '/';
}

/* A directory moved in from outside is listed when the library reads its
 * move, as it is then: the listing shows what the moves made after it did,
 * and the records of those moves, read after it, must leave the mirror as
 * the listing has it.  All of it is done before the library reads:
 *  - ARRIVAL: "p" moves in, then "x" into it, which is then exchanged with
 *    the file p/f (the listing has x a file, f a directory): "x"'s arrival
 *    is not listed again (fanotify's filesystem marks listed it and took the
 *    listing's node away, and the exchange left x a directory);
 *  - CROSSED: "p" moves in, the file p/d/f is renamed p/l, then p/d is
 *    exchanged with it (the listing has the directory at p/l): the rename's
 *    old path is not below its new one;
 *  - HALF: "a" moves in, "b" too, they are exchanged, then "a" (now b's
 *    directory) moves into b (now a's) as b/moved: the exchange is a rename of
 *    one, the listing of "a" has the other;
 *  - MOVED_ON: "p" moves in, the watch's directory "e" is exchanged with the
 *    file p/s, which then moves on to "e2" (the listing has no p/s);
 *  - CREATED: "p" moves in, p/in2/x is made, moves up to p/x, and p/in2
 *    moves into it (the listing has x above the directory it was made in):
 *    the CREATE of x is not reported under p/x/in2 (fanotify's filesystem
 *    marks took the listing's node of x, with p/x/in2 below it, away);
 *  - INTO: "p" moves in, then into the watch's directory "e" as e/p2, out
 *    of it again as "p3", and "e" moves into it (the listing has e below
 *    p): the move of p into e is not reported with a path below the other,
 *    and p's old name leaves the mirror;
 *  - TAKEN: "c" is made with c/d holding a file, the watch's directory "e"
 *    is renamed "e3" and exchanged with c/d (the listing of c has e's
 *    directory at c/d): the rename of "e", read after, does not bring what
 *    the mirror had at "e" to "e3", where c/d's directory is by then
 *    (bench/seeds.sh, fanotify seed 522).
 * No RENAME has a path below the other, and the mirror (LIST) equals the
 * tree. */
static void listing_ahead(struct tu_fix *f, const char *base, enum ahead how)
{
	char *w = conf_join(base, "w"), *out = conf_join(base, "out");
	size_t i;
	int wd;

	tu_mkdir(w);
	tu_mkdir(out);
	make_entry(tu_path(out, "p"), 1, "in");
	make_entry(tu_path(w, "e"), 1, "e");
	if (how == AHEAD_CROSSED)
		tu_write(tu_path(out, "p/in2/f"), "f");
	if (how == AHEAD_MOVED_ON)
		tu_write(tu_path(out, "p/s"), "s");
	make_entry(tu_path(out, "x"), 1, "x");
	wd = tu_add(&f->log, w, APPEAR | GO, NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	conf_listed(&f->log, wd);
	tu_settle(&f->log);
	switch (how) {
	case AHEAD_ARRIVAL:
		tu_rename(tu_path(out, "p"), tu_path(w, "p"));
		tu_rename(tu_path(out, "x"), tu_path(w, "p/x"));
		tu_write(tu_path(w, "p/f"), "f");
		rename_exchange(tu_path(w, "p/x"), tu_path(w, "p/f"));
		break;
	case AHEAD_CROSSED:
		tu_rename(tu_path(out, "p"), tu_path(w, "p"));
		tu_rename(tu_path(w, "p/in2/f"), tu_path(w, "p/l"));
		rename_exchange(tu_path(w, "p/in2"), tu_path(w, "p/l"));
		break;
	case AHEAD_HALF:
		tu_rename(tu_path(out, "p"), tu_path(w, "a"));
		tu_rename(tu_path(out, "x"), tu_path(w, "b"));
		rename_exchange(tu_path(w, "a"), tu_path(w, "b"));
		tu_rename(tu_path(w, "a"), tu_path(w, "b/moved"));
		break;
	case AHEAD_MOVED_ON:
		tu_rename(tu_path(out, "p"), tu_path(w, "p"));
		rename_exchange(tu_path(w, "e"), tu_path(w, "p/s"));
		tu_rename(tu_path(w, "p/s"), tu_path(w, "e2"));
		break;
	case AHEAD_INTO:
		tu_rename(tu_path(out, "p"), tu_path(w, "p"));
		tu_rename(tu_path(w, "p"), tu_path(w, "e/p2"));
		tu_rename(tu_path(w, "e/p2"), tu_path(w, "p3"));
		tu_rename(tu_path(w, "e"), tu_path(w, "p3/e"));
		break;
	case AHEAD_TAKEN:
		tu_mkdir(tu_path(w, "c"));
		make_entry(tu_path(w, "c/d"), 1, "d");
		tu_rename(tu_path(w, "e"), tu_path(w, "e3"));
		rename_exchange(tu_path(w, "e3"), tu_path(w, "c/d"));
		break;
	case AHEAD_CREATED:
		tu_rename(tu_path(out, "p"), tu_path(w, "p"));
		make_entry(tu_path(w, "p/in2/x"), 1, "x");
		tu_rename(tu_path(w, "p/in2/x"), tu_path(w, "p/x"));
		tu_rename(tu_path(w, "p/in2"), tu_path(w, "p/x/in2"));
		break;
	}
	tu_touch(tu_path(w, "last"));
	WAIT(&f->log, wd, NOTIFYX_CREATE, "last");
	tu_settle(&f->log);
	for (i = 0; i < f->log.n; i++) {
		const struct tu_ev *e = &f->log.ev[i];

		if (e->wd == wd && e->mask == NOTIFYX_RENAME &&
		    (below(e->path, e->old_path) || below(e->old_path, e->path))) {
			conf_dump(&f->log, "actual");
			fail_msg("event #%zu: RENAME \"%s\" <- \"%s\": one is below the other", i,
				 e->path, e->old_path);
		}
	}
	conf_mirror_equals(&f->log, wd, w, NULL, "after moves behind a listing");
	conf_no_error(&f->log);
	free(out);
	free(w);
}
ON_BOTH_WITH(ahead_arrival, listing_ahead, AHEAD_ARRIVAL)
ON_BOTH_WITH(ahead_crossed, listing_ahead, AHEAD_CROSSED)
ON_BOTH_WITH(ahead_half, listing_ahead, AHEAD_HALF)
ON_BOTH_WITH(ahead_moved_on, listing_ahead, AHEAD_MOVED_ON)
ON_BOTH_WITH(ahead_created, listing_ahead, AHEAD_CREATED)
ON_BOTH_WITH(ahead_into, listing_ahead, AHEAD_INTO)
ON_BOTH_WITH(ahead_taken, listing_ahead, AHEAD_TAKEN)

/* ---- an exchange while the watch lists ------------------------------------ */

/* getdents64, interposed (the library's calls reach this program's): the
 * first time a listing reads the directory (xchg_dev, xchg_ino), its entries
 * xchg_a and xchg_b are exchanged at once, or, with xchg_c, a is renamed c
 * and b renamed a: as another program could do between the listing of a
 * directory and the entering of its subdirectories. */
static dev_t xchg_dev;
static ino_t xchg_ino;
static const char *xchg_a, *xchg_b, *xchg_c;
static int xchg_done;

ssize_t getdents64(int fd, void *buf, size_t len)
{
	long n = syscall(SYS_getdents64, fd, buf, len);
	struct stat st;
	int err = errno;

	if (n > 0 && xchg_a && !xchg_done && fstat(fd, &st) == 0 && st.st_dev == xchg_dev &&
	    st.st_ino == xchg_ino) {
		if (xchg_c)
			xchg_done = rename(xchg_a, xchg_c) == 0 && rename(xchg_b, xchg_a) == 0 ? 1
											: -errno;
		else
			xchg_done = syscall(SYS_renameat2, AT_FDCWD, xchg_a, AT_FDCWD, xchg_b,
					    RENAME_EXCHANGE) == 0 ? 1 : -errno;
	}
	errno = err;
	return n;
}

enum while_listed { WL_REPAIR = 1, WL_MOVE_ON = 2, WL_FILE = 4 };

/* Two directories a and b of the watch's directory are exchanged (or a
 * moves on to c and b to a: WL_MOVE_ON; or b is a file: WL_FILE) after its
 * listing read their names and before it enters them: each name then leads
 * to what another held, and the records of the change come after.  The
 * listing and those records together must leave the mirror as the tree is:
 * the records do not move again what was listed under the names as they
 * are now.  The listing is the watch's first (LIST), or its repair
 * (WL_REPAIR: LIST|RESCAN, after an OVERFLOW of a queue_max of 4; on a
 * scanning backend, the scan of the directory that the burst changed may
 * come first: it is a listing too). */
static void changed_while_listed(struct tu_fix *f, const char *base, int how)
{
	char *w = conf_join(base, "w"), *a = conf_join(w, "a"), *b = conf_join(w, "b");
	char *c = conf_join(w, "c");
	const char *other = how & WL_MOVE_ON ? "c" : "b"; /* where a's directory is */
	uint32_t flags = NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST;
	struct stat st;
	int wd = -1;

	tu_mkdir(w);
	make_entry(a, 1, "ina");
	make_entry(b, !(how & WL_FILE), "inb");
	assert_int_equal(stat(w, &st), 0);
	if (how & WL_REPAIR) {
		conf_reopen(f, 4);
		wd = tu_add(&f->log, w, APPEAR | GO, flags | NOTIFYX_WATCH_RESCAN);
		conf_listed(&f->log, wd);
	}
	xchg_dev = st.st_dev;
	xchg_ino = st.st_ino;
	xchg_done = 0;
	xchg_b = b;
	xchg_c = how & WL_MOVE_ON ? c : NULL;
	xchg_a = a;
	if (how & WL_REPAIR) {
		size_t from = f->log.n;

		conf_make_files(w, "fill", 24); /* in w: a scanning backend lists it again */
		tu_must_wait(&f->log, from, wd, NOTIFYX_SYNC, "", SYNC_MS, __FILE__, __LINE__);
	} else {
		wd = tu_add(&f->log, w, APPEAR | GO, flags);
	}
	xchg_a = NULL;
	if (xchg_done < 0 && !(how & WL_MOVE_ON))
		rename_exchange(a, b); /* skips, or fails, with the reason */
	if (xchg_done < 0)
		fail_msg("renaming %s: %s", a, strerror(-xchg_done));
	if (!xchg_done)
		fail_msg("the watch's directory was not read with getdents64 while %s",
			 how & WL_REPAIR ? "repairing the watch" : "adding the watch");
	conf_listed(&f->log, wd);
	/* Events of what each name holds now, deep in it. */
	if (!(how & WL_FILE))
		tu_touch(tu_path(a, "inb2/new-a"));
	tu_touch(tu_path(w, tu_fmt("%s/ina2/new-%s", other, other)));
	tu_touch(tu_path(w, "last"));
	WAIT(&f->log, wd, NOTIFYX_CREATE, "last");
	tu_settle(&f->log);
	if (!(how & WL_FILE))
		ONCE(&f->log, wd, NOTIFYX_CREATE, "a/inb2/new-a", 0, 0);
	ONCE(&f->log, wd, NOTIFYX_CREATE, tu_fmt("%s/ina2/new-%s", other, other), 0, 0);
	conf_mirror_equals(&f->log, wd, w, NULL, "after a change while listed");
	conf_no_error(&f->log);
	free(c);
	free(b);
	free(a);
	free(w);
}
ON_BOTH_WITH(exchange_while_listed, changed_while_listed, 0)
ON_BOTH_WITH(exchange_while_repaired, changed_while_listed, WL_REPAIR)
ON_BOTH_WITH(moved_on_while_listed, changed_while_listed, WL_MOVE_ON)
ON_BOTH_WITH(moved_on_while_repaired, changed_while_listed, WL_REPAIR | WL_MOVE_ON)
ON_BOTH_WITH(file_exchange_while_listed, changed_while_listed, WL_FILE)
ON_BOTH_WITH(file_exchange_while_repaired, changed_while_listed, WL_REPAIR | WL_FILE)

int conf_exchange_run(void)
{
	const struct CMUnitTest tests[] = {
		TEST_BOTH(exchange_excluded_files),
		TEST_BOTH(exchange_excluded_dirs),
		TEST_BOTH(exchange_excluded_file_dir),
		TEST_BOTH(exchange_outside_dirs),
		TEST_BOTH(exchange_outside_dir_file),
		TEST_BOTH(exchange_outside_then_inside),
		TEST_BOTH(exchange_outside_inside_out),
		TEST_BOTH(exchange_new_outside_inside),
		TEST_BOTH(move_in_out_then_exchange),
		TEST_BOTH(exchange_two_dirs),
		TEST_BOTH(exchange_two_dirs_alone),
		TEST_BOTH(exchange_between_watches_files),
		TEST_BOTH(exchange_between_watches_dirs),
		TEST_BOTH(exchange_burst),
		TEST_BOTH(exchange_unread),
		TEST_BOTH(exchange_two_files),
		TEST_BOTH(ahead_arrival),
		TEST_BOTH(ahead_crossed),
		TEST_BOTH(ahead_half),
		TEST_BOTH(ahead_moved_on),
		TEST_BOTH(ahead_created),
		TEST_BOTH(ahead_into),
		TEST_BOTH(ahead_taken),
		TEST_BOTH(exchange_while_listed),
		TEST_BOTH(exchange_while_repaired),
		TEST_BOTH(moved_on_while_listed),
		TEST_BOTH(moved_on_while_repaired),
		TEST_BOTH(file_exchange_while_listed),
		TEST_BOTH(file_exchange_while_repaired),
	};

	return cmocka_run_group_tests_name("conformance: exchanges", tests, NULL, NULL);
}
