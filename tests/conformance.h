/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the files of the conformance program share: one program, run once
 * per backend (tests/backends.am), made of conformance.c (main, handles and
 * descriptors) and the files conf-*.c, each a cmocka group of its own that
 * main runs through its conf_NAME_run().  Here: those functions, the
 * fixture's shortcuts, and the helpers of conf-util.c (cases run on /tmp and
 * on a tmpfs, deep paths, a mirror of the tree made of the events).  The
 * helpers every cmocka test program uses are testutil.h's, included here.
 */
#ifndef NOTIFYX_CONFORMANCE_H
#define NOTIFYX_CONFORMANCE_H

#include <stddef.h>
#include <stdint.h>

#include "testutil.h"

/* The groups, in the order main runs them; each returns how many failed. */
int conf_config_run(void);    /* conf-config.c: notifyx_open's configuration, names */
int conf_watch_run(void);     /* conf-watch.c: watches, exclude, LIST */
int conf_read_run(void);      /* conf-read.c: notifyx_read */
int conf_events_run(void);    /* conf-events.c: the event rules */
int conf_process_run(void);   /* conf-process.c: threads, signals, a killed reader */
int conf_deep_run(void);      /* conf-deep.c: paths deeper than PATH_MAX, rm -rf */
int conf_roots_run(void);     /* conf-roots.c: moved roots, umount -l, self events */
int conf_exchange_run(void);  /* conf-exchange.c: RENAME_EXCHANGE */
int conf_listing_run(void);   /* conf-listing.c: LIST watches beside others, under change */
int conf_hold_run(void);      /* conf-hold.c: the hold of a move's first half */
int conf_rescan_run(void);    /* conf-rescan.c: NOTIFYX_WATCH_RESCAN */
int conf_rescan_churn_run(void); /* conf-rescan-churn.c: RESCAN under constant change */

/* The fixture of tu_setup (testutil.h). */
#define F(state) ((struct tu_fix *)*(state))
/* The types by which an entry appears, and goes. */
#define APPEAR (NOTIFYX_CREATE | NOTIFYX_MOVED_IN | NOTIFYX_RENAME)
#define GO (NOTIFYX_DELETE | NOTIFYX_MOVED_OUT | NOTIFYX_RENAME)
#define SELF (NOTIFYX_DELETE_SELF | NOTIFYX_MOVE_SELF)

/* ---- cases run on two filesystems ----
 * A case that can differ per filesystem is a function (f, base) run twice:
 * in the test's directory under /tmp (NAME_tmpdir) and on a private tmpfs
 * mounted there (NAME_tmpfs, root only: skipped with the reason otherwise).
 * ON_BOTH(name) defines the two cmocka cases of name(f, base);
 * ON_BOTH_WITH(name, fn, arg) those of fn(f, base, arg) named after name;
 * TEST_BOTH(name) is their two lines in a group's table. */
const char *conf_on_tmpfs(struct tu_fix *f);  /* a private tmpfs at dir/fs */
/* fanotify with inode marks: as nobody, or as root where the run lets the
 * library's policy take them for small trees (NOTIFYX_FANOTIFY_INODE_MAX
 * not 0: tests/per-backend.sh's -fanotify-inode; main sets it to 0, for
 * filesystem marks, when the environment does not say). */
int conf_inode_marks(struct tu_fix *f);
/* tu_teardown, after removing what is below the directory through
 * descriptors (tu_rm_rf goes by absolute path, which a deep chain outgrows). */
int conf_teardown(void **state);
#define ON_BOTH(name) \
	static void name##_tmpdir(void **state) { name(F(state), F(state)->dir); } \
	static void name##_tmpfs(void **state) { name(F(state), conf_on_tmpfs(F(state))); }
#define ON_BOTH_WITH(name, fn, arg) \
	static void name##_tmpdir(void **state) { fn(F(state), F(state)->dir, (arg)); } \
	static void name##_tmpfs(void **state) { fn(F(state), conf_on_tmpfs(F(state)), (arg)); }
#define TEST_BOTH(name) \
	cmocka_unit_test_setup_teardown(name##_tmpdir, tu_setup, conf_teardown), \
	cmocka_unit_test_setup_teardown(name##_tmpfs, tu_setup, conf_teardown)

/* ---- files and paths ---- */
int conf_open_dir(const char *path);  /* O_DIRECTORY, fails the test on error */
/* The directory name below dfd opened (made first when mk); dfd is closed. */
int conf_down(int dfd, const char *name, int mk);
/* a + "/" + b (or b when a is ""), malloc'd: deep paths outgrow tu_path. */
char *conf_join(const char *a, const char *b);
/* n files dir/PREFIX000... */
void conf_make_files(const char *dir, const char *prefix, int n);
/* The fixture's handle replaced by one with this queue_max (closed by
 * tu_teardown, also after a failure). */
void conf_reopen(struct tu_fix *f, uint32_t queue_max);

/* ---- checks that print long names shortened ----
 * As TU_ONCE, TU_WAIT, TU_WAIT_FROM and TU_BEFORE, but what they print of
 * the events read has each run of 8 or more equal characters shortened to
 * "c*N" (deep paths are thousands of characters). */
void conf_dump(const struct tu_log *log, const char *title);
#define ONCE(log, wd, mask, path, fmask, fwant) \
	conf_once((log), (wd), (mask), (path), (fmask), (fwant), __LINE__)
size_t conf_once(const struct tu_log *log, int wd, uint32_t mask, const char *path,
		 uint32_t fmask, uint32_t fwant, int line);
#define WAIT_FROM(log, from, wd, mask, path) \
	conf_wait_from((log), (from), (wd), (mask), (path), __LINE__)
#define WAIT(log, wd, mask, path) WAIT_FROM((log), 0, (wd), (mask), (path))
size_t conf_wait_from(struct tu_log *log, size_t from, int wd, uint32_t mask, const char *path,
		      int line);
#define BEFORE(log, a, b, what) conf_before((log), (a), (b), (what), __LINE__)
void conf_before(const struct tu_log *log, ssize_t a, ssize_t b, const char *what, int line);
/* wd has n events, SYNC not counted. */
#define COUNT(log, wd, n, what) conf_count((log), (wd), (n), (what), __LINE__)
void conf_count(const struct tu_log *log, int wd, size_t n, const char *what, int line);
/* The initial listing of a LIST watch is complete: its SYNC; its index. */
ssize_t conf_listed(struct tu_log *log, int wd);
void conf_no_error(const struct tu_log *log);  /* no ERROR on any watch */

/* ---- a mirror of the tree (API.md "Mirroring a tree") ----
 * A tree of names, so that moving a directory is cheap; the root is a node
 * named "" (conf_node_new("", 0, 1)). */
struct conf_node {
	char *name;
	int isdir;
	struct conf_node *up, **kid;
	size_t nk, cap;
};
struct conf_node *conf_node_new(const char *name, size_t len, int isdir);
void conf_node_free(struct conf_node *n);
/* The node at path ("" is the root), or NULL. */
struct conf_node *conf_node_find(struct conf_node *root, const char *path);
/* Apply one event as API.md says.  Returns 1 when it cannot be applied: an
 * exchange with a side missing, and unless lossy, an entry whose directory
 * is missing.  lossy: events read while some were lost, where "it exists
 * now" makes the directories above it exist too. */
int conf_mirror_apply(struct conf_node *root, const struct tu_ev *e, int lossy);
/* The differences between the mirror and the tree at the directory open at
 * dfd (closed here; names matching skip left out and not entered), each
 * printed (the first 40); returns how many, *entries the entries on disk. */
size_t conf_mirror_differs(const struct conf_node *root, int dfd, const char *skip,
			   size_t *entries);
/* The mirror made of wd's events equals the tree at root (names matching
 * skip left out); what says when, in the failure. */
void conf_mirror_equals(const struct tu_log *log, int wd, const char *root, const char *skip,
			const char *what);

/* ---- NOTIFYX_WATCH_RESCAN (conf-rescan.c, conf-rescan-churn.c) ---- */
#define RFLAGS (NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_RESCAN)
#define SYNC_MS 10000  /* for a repair's SYNC */

#endif /* NOTIFYX_CONFORMANCE_H */
