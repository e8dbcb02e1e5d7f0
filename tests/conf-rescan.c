/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Conformance test, NOTIFYX_WATCH_RESCAN (API.md 0.2): the arguments; after
 * an OVERFLOW the repair reports the differences only (not the tree), each
 * type once (CREATE, DELETE, RENAME by inode, MODIFY, ATTRIB; parents first
 * when they come, entries first when they go), then one SYNC; the watch goes
 * on under the current names; LIST|RESCAN gets a SYNC after its listing and
 * after each repair; without RESCAN an OVERFLOW has no SYNC and no repair.
 *
 * Losses come from the library's own limit (notifyx_config.queue_max, the
 * same on every backend): a burst of FILL files made in one go while nothing
 * is read fills the queue, and what follows it in the same go is lost.  On
 * inotify and fanotify the kernel hands over the records in order, so the
 * changes made after the burst are lost and can only come from the repair:
 * after the OVERFLOW, SYNTHETIC.  A scanning backend reports a scan in its
 * own order, so a change may come before the OVERFLOW there; it must still
 * come exactly once, and before the SYNC.  One case lowers the inotify
 * kernel queue (fs.inotify.max_queued_events, root, restored at once: the
 * size is taken when the queue is made; conformance-inotify.sh runs alone,
 * see tests/serial-tests.txt).  A repair that finds nothing changed reports
 * only its SYNC (the queue filled by a second watch).  And losses while a
 * second thread changes a tree of 2,050 entries on and on (loss_during_repair):
 * between two OVERFLOWs a SYNC, and once the changes stop, a copy of the
 * tree made of the events equals the tree after the last repair.
 *
 * The cases that depend on the filesystem (what a rescan compares: inode,
 * size, mtime, mode) run in the test's directory under /tmp and on a private
 * tmpfs.  Run from conformance.c's main through conf_rescan_run().
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
#include <unistd.h>

#include "testutil.h"

int conf_rescan_run(void);

#define F(state) ((struct tu_fix *)*(state))
#define TYPES (NOTIFYX_CREATE | NOTIFYX_DELETE | NOTIFYX_RENAME | NOTIFYX_MODIFY | NOTIFYX_ATTRIB)
#define RFLAGS (NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_RESCAN)
#define QMAX 4     /* queue_max of the handles that lose events */
#define FILL 24    /* files of a burst: QMAX fit, the rest is lost */
#define SYNC_MS 10000

/* ---- helpers -------------------------------------------------------------- */

/* The fixture's handle replaced by one with this queue_max (closed by
 * tu_teardown, also after a failure). */
static void reopen(struct tu_fix *f, uint32_t queue_max)
{
	tu_log_free(&f->log);
	notifyx_close(f->nx);
	f->nx = tu_open(NOTIFYX_NONBLOCK, queue_max);
	if (!f->nx)
		fail_msg("notifyx_open with queue_max %u: %s", queue_max, strerror(errno));
	tu_log_init(&f->log, f->nx);
}

static const char *on_tmpfs(struct tu_fix *f)
{
	tu_require_root("mounting a private tmpfs");
	return tu_mount_tmpfs(f, "fs");
}

#define ON_BOTH(name) \
	static void name##_tmpdir(void **state) { name(F(state), F(state)->dir); } \
	static void name##_tmpfs(void **state) { name(F(state), on_tmpfs(F(state))); }
#define TEST_BOTH(name) \
	cmocka_unit_test_setup_teardown(name##_tmpdir, tu_setup, tu_teardown), \
	cmocka_unit_test_setup_teardown(name##_tmpfs, tu_setup, tu_teardown)

/* n files dir/PREFIX000... */
static void make_files(const char *dir, const char *prefix, int n)
{
	for (int i = 0; i < n; i++)
		tu_touch(tu_path(dir, tu_fmt("%s%03d", prefix, i)));
}

/* Waits for wd's SYNC after event from, then for quiet. */
static void wait_sync(struct tu_fix *f, int wd, size_t from)
{
	tu_must_wait(&f->log, from, wd, NOTIFYX_SYNC, "", SYNC_MS, __FILE__, __LINE__);
	tu_settle(&f->log);
}

/* The one OVERFLOW of wd at or after from and the one SYNC after it, with
 * nothing of wd after the SYNC; *o and *s their indexes. */
static void one_repair(struct tu_log *log, int wd, size_t from, size_t *o, size_t *s)
{
	ssize_t io = tu_find(log, from, wd, NOTIFYX_OVERFLOW, NULL);
	ssize_t is = io < 0 ? -1 : tu_find(log, (size_t)io, wd, NOTIFYX_SYNC, NULL);
	size_t no = 0, ns = 0, after = 0;

	for (size_t i = from; i < log->n; i++) {
		if (log->ev[i].wd != wd)
			continue;
		no += log->ev[i].mask == NOTIFYX_OVERFLOW;
		ns += log->ev[i].mask == NOTIFYX_SYNC;
		after += is >= 0 && i > (size_t)is;
	}
	if (io < 0 || is < 0 || no != 1 || ns != 1 || after) {
		tu_dump(log, "actual");
		fail_msg("wd %d from event #%zu: expected one OVERFLOW, then one SYNC, then nothing; "
			 "read %zu OVERFLOW, %zu SYNC, %zu event(s) after the SYNC", wd, from, no, ns,
			 after);
	}
	*o = (size_t)io;
	*s = (size_t)is;
}

static int is_fill(const struct tu_ev *e, const char *fill)
{
	size_t n = strlen(fill);

	return e->mask == NOTIFYX_CREATE && !strncmp(e->path, fill, n) && e->path[n] == '/';
}

/* The FILL files fill/PREFIX000... (made in one go) each have exactly one
 * CREATE of wd; those after the OVERFLOW o are SYNTHETIC and before the
 * SYNC s.  Returns how many came after o: the ones the repair found. */
static size_t fill_once(const struct tu_log *log, int wd, const char *fill, const char *prefix,
			size_t o, size_t s)
{
	size_t late = 0;

	for (int k = 0; k < FILL; k++) {
		const char *p = tu_fmt("%s/%s%03d", fill, prefix, k);
		size_t c = tu_count(log, wd, NOTIFYX_CREATE, p);
		ssize_t i = tu_find(log, 0, wd, NOTIFYX_CREATE, p);

		if (c != 1) {
			tu_dump(log, "actual");
			fail_msg("CREATE \"%s\": expected once (delivered, or found by the repair), "
				 "read %zu times", p, c);
		}
		if ((size_t)i < o)
			continue;
		late++;
		if ((size_t)i > s || !(log->ev[i].flags & NOTIFYX_EVENT_SYNTHETIC)) {
			tu_dump(log, "actual");
			fail_msg("CREATE \"%s\" (#%zd) after the OVERFLOW (#%zu): expected SYNTHETIC, "
				 "before the SYNC (#%zu)", p, i, o, s);
		}
	}
	return late;
}

/* One expected event: type, path, old_path (RENAME) and ISDIR. */
struct want {
	uint32_t mask;
	const char *path, *old;
	int isdir;
};

static int matches(const struct tu_ev *e, const struct want *w)
{
	return e->mask == w->mask && !strcmp(e->path, w->path) &&
	       !e->old_path == !w->old && (!w->old || !strcmp(e->old_path, w->old)) &&
	       !(e->flags & NOTIFYX_EVENT_ISDIR) == !w->isdir;
}

/* Is a a proper ancestor of b? */
static int above(const char *a, const char *b)
{
	size_t n = strlen(a);

	return !strncmp(a, b, n) && b[n] == '/';
}

/*
 * The events of wd other than the burst's CREATEs in fill/, the OVERFLOW o
 * and the SYNC s are exactly want[], each once, in any order but this:
 * a directory's arrival (CREATE, RENAME) before those of its entries (a
 * mirror needs the parent first), its DELETE after theirs.  On inotify and fanotify they were lost, so only the repair can
 * tell them: after o, SYNTHETIC.  A scanning backend may report them before
 * o (its scan's order); before s in any case.
 */
static void expect_repaired(const struct tu_log *log, int wd, const char *fill, size_t o, size_t s,
			    const struct want *want, size_t nwant)
{
	size_t at[8], n = 0;

	assert_true(nwant <= 8);
	for (size_t i = 0; i < log->n; i++) {
		const struct tu_ev *e = &log->ev[i];
		size_t k;

		if (e->wd != wd || i == o || i == s || is_fill(e, fill))
			continue;
		for (k = 0; k < nwant && !matches(e, &want[k]); k++)
			;
		if (k == nwant || n == nwant || i > s ||
		    (!log->scanning && (i < o || !(e->flags & NOTIFYX_EVENT_SYNTHETIC)))) {
			tu_dump(log, "actual");
			fail_msg("event #%zu: not one of the %zu expected, or not %s the SYNC (#%zu)%s",
				 i, nwant, log->scanning ? "before" : "SYNTHETIC between the OVERFLOW and",
				 s, k < nwant ? "" : " (unexpected)");
		}
		for (size_t j = 0; j < n; j++)
			if (at[j] == k) {
				tu_dump(log, "actual");
				fail_msg("%s \"%s\" twice (#%zu)", tu_mask_str(want[k].mask),
					 want[k].path, i);
			}
		at[n++] = k;
	}
	if (n != nwant) {
		tu_dump(log, "actual");
		for (size_t k = 0; k < nwant; k++)
			print_error("expected: %s \"%s\"%s%s%s%s\n", tu_mask_str(want[k].mask),
				    want[k].path, want[k].old ? " from \"" : "",
				    want[k].old ? want[k].old : "", want[k].old ? "\"" : "",
				    want[k].isdir ? " ISDIR" : "");
		fail_msg("read %zu of the %zu expected events before the SYNC (#%zu)", n, nwant, s);
	}
	/* at[j]: the want read j-th; parents first when they come, last when they go. */
	for (size_t a = 0; a < n; a++)
		for (size_t b = a + 1; b < n; b++) {
			const struct want *x = &want[at[a]], *y = &want[at[b]];

			int x_in = x->mask == NOTIFYX_CREATE || x->mask == NOTIFYX_RENAME;
			int y_in = y->mask == NOTIFYX_CREATE || y->mask == NOTIFYX_RENAME;

			if ((x_in && y_in && above(y->path, x->path)) ||
			    (x->mask == NOTIFYX_DELETE && above(x->path, y->path))) {
				tu_dump(log, "actual");
				fail_msg("%s \"%s\" read before %s \"%s\": parents first when they "
					 "come, entries first when they go", tu_mask_str(x->mask),
					 x->path, tu_mask_str(y->mask), y->path);
			}
		}
}

/*
 * The frame of the per-type cases: base/w with fill/ and what prepare()
 * makes; a handle with queue_max QMAX; a recursive RESCAN watch for TYPES;
 * then, in one go, the burst in fill/ and change(); then the events until
 * the SYNC, checked against want[].  Returns the wd.
 */
static int repair_case(struct tu_fix *f, const char *base, void (*prepare)(const char *w),
		       void (*change)(const char *w), const struct want *want, size_t nwant)
{
	char w[4096];
	size_t o, s;
	int wd;

	snprintf(w, sizeof w, "%s", tu_path(base, "w"));
	tu_mkdir(w);
	tu_mkdir(tu_path(w, "fill"));
	prepare(w);
	reopen(f, QMAX);
	wd = tu_add(&f->log, w, TYPES, RFLAGS);
	make_files(tu_path(w, "fill"), "f", FILL);
	change(w);
	wait_sync(f, wd, 0);
	one_repair(&f->log, wd, 0, &o, &s);
	fill_once(&f->log, wd, "fill", "f", o, s);
	expect_repaired(&f->log, wd, "fill", o, s, want, nwant);
	return wd;
}

/* ---- arguments -------------------------------------------------------------- */

static void rescan_args(void **state)
{
	struct tu_fix *f = F(state);
	const char *file = tu_path(f->dir, "file");

	tu_touch(file);
	TU_ERRNO("RESCAN | ONESHOT", notifyx_add_watch(f->nx, f->dir, NOTIFYX_CREATE,
		 NOTIFYX_WATCH_RESCAN | NOTIFYX_WATCH_ONESHOT) < 0, EINVAL);
	TU_ERRNO("RESCAN | RECURSIVE | ONESHOT", notifyx_add_watch(f->nx, f->dir, NOTIFYX_CREATE,
		 RFLAGS | NOTIFYX_WATCH_ONESHOT) < 0, EINVAL);
	TU_ERRNO("RESCAN on a file", notifyx_add_watch(f->nx, file, NOTIFYX_MODIFY,
		 NOTIFYX_WATCH_RESCAN) < 0, ENOTDIR);
	TU_ERRNO("SYNC in events", notifyx_add_watch(f->nx, f->dir, NOTIFYX_CREATE | NOTIFYX_SYNC,
		 NOTIFYX_WATCH_RESCAN) < 0, EINVAL);
	TU_ERRNO("SYNC alone in events", notifyx_add_watch(f->nx, f->dir, NOTIFYX_SYNC, 0) < 0,
		 EINVAL);
	/* Alone (no LIST, no RECURSIVE, not even CREATE), and with RECURSIVE:
	 * fine, and quiet: no listing, no SYNC without a loss. */
	int a = tu_add(&f->log, f->dir, NOTIFYX_MODIFY, NOTIFYX_WATCH_RESCAN);
	int r = tu_add(&f->log, f->dir, NOTIFYX_CREATE, RFLAGS);
	tu_touch(tu_path(f->dir, "new"));
	TU_WAIT(&f->log, r, NOTIFYX_CREATE, "new");
	tu_settle(&f->log);
	TU_EQ("events of the RESCAN watch for MODIFY", 0, tu_count_wd(&f->log, a));
	TU_EQ("events of the RESCAN | RECURSIVE watch", 1, tu_count_wd(&f->log, r));
}

/* ---- a repair reports the differences, not the tree ------------------------- */

/*
 * A tree of 500 entries, a loss of FILL + 8 creations in one directory: the
 * repair reports the creations that were not delivered before the OVERFLOW,
 * SYNTHETIC, each once, then its SYNC, and nothing else: not the 500
 * entries, not the directory whose mtime the creations changed (a side
 * effect, as on a scanning backend), not the entries delivered before.
 */
static void only_differences(struct tu_fix *f, const char *base)
{
	char w[4096];
	size_t o, s;
	int wd;

	snprintf(w, sizeof w, "%s", tu_path(base, "w"));
	tu_mkdir(w);
	for (int d = 0; d < 10; d++) {
		char sub[4096];

		snprintf(sub, sizeof sub, "%s", tu_path(w, tu_fmt("d%d", d)));
		tu_mkdir(sub);
		make_files(sub, "e", 49);
	}
	reopen(f, 8);
	wd = tu_add(&f->log, w, TYPES, RFLAGS);
	make_files(tu_path(w, "d3"), "f", FILL);
	wait_sync(f, wd, 0);
	one_repair(&f->log, wd, 0, &o, &s);
	size_t late = fill_once(&f->log, wd, "d3", "f", o, s);
	/* Every event of the watch is one of the FILL CREATEs, the OVERFLOW or the SYNC. */
	TU_EQ("events of the watch (FILL CREATEs, OVERFLOW, SYNC; the tree holds 500 entries)",
	      FILL + 2, tu_count_wd(&f->log, wd));
	TU_EQ("events between the OVERFLOW and the SYNC (the lost CREATEs)", late, s - o - 1);
	if (late == 0) {
		tu_dump(&f->log, "actual");
		fail_msg("nothing lost: the OVERFLOW came after every CREATE (queue_max 8, %d made)",
			 FILL);
	}
	print_message("  %zu of %d CREATEs delivered, %zu found by the repair\n", FILL - late,
		      FILL, late);
}
ON_BOTH(only_differences)

/*
 * A repair that finds nothing changed reports nothing but its SYNC.  The
 * handle's queue is filled by a second watch (a plain one on fill/, beside
 * the RESCAN watch's tree); in the same go an entry is made and removed
 * again in the RESCAN watch's tree, so that its events are lost while the
 * tree ends as it was.  The RESCAN watch gets one OVERFLOW, then one SYNC,
 * and nothing else: not the tree, not the entry that came and went, not
 * the directories whose mtime changed.  inotify and fanotify only: a
 * scanning backend sees states, so an entry that came and went between two
 * scans is no event it could lose.
 */
static void repair_finds_nothing(struct tu_fix *f, const char *base)
{
	char w[4096], fill[4096];
	int wd, b;

	snprintf(w, sizeof w, "%s", tu_path(base, "w"));
	snprintf(fill, sizeof fill, "%s", tu_path(base, "fill"));
	tu_mkdir(w);
	tu_mkdir(fill);
	for (int d = 0; d < 3; d++) {
		tu_mkdir(tu_path(w, tu_fmt("d%d", d)));
		make_files(tu_path(w, tu_fmt("d%d", d)), "e", 10);
	}
	reopen(f, QMAX);
	if (f->log.scanning) {
		print_message("[ SKIP     ] %s sees states: an entry made and removed between two "
			      "scans is no event it could lose\n",
			      notifyx_backend_name(notifyx_backend(f->nx)));
		skip();
	}
	b = tu_add(&f->log, fill, NOTIFYX_CREATE, 0);
	wd = tu_add(&f->log, w, TYPES, RFLAGS);
	make_files(fill, "f", FILL);
	tu_touch(tu_path(w, "x"));
	tu_unlink(tu_path(w, "x"));
	tu_mkdir(tu_path(w, "d1/y"));
	tu_rmdir(tu_path(w, "d1/y"));
	wait_sync(f, wd, 0);
	/* The queue was full: the plain watch lost creations too. */
	TU_ONCE(&f->log, b, NOTIFYX_OVERFLOW, "", 0, 0);
	TU_SEQ(&f->log, wd, NOTIFYX_OVERFLOW, "", NOTIFYX_SYNC, "", 0);
}
ON_BOTH(repair_finds_nothing)

/* ---- each type, repaired ------------------------------------------------------- */

static void no_prep(const char *w)
{
	(void)w;
}

static void prep_file(const char *w)
{
	tu_write(tu_path(w, "file"), "1");
}

static void del_file(const char *w)
{
	tu_unlink(tu_path(w, "file"));
}

static void repair_delete(struct tu_fix *f, const char *base)
{
	const struct want want[] = { { NOTIFYX_DELETE, "file", NULL, 0 } };

	repair_case(f, base, prep_file, del_file, want, 1);
}
ON_BOTH(repair_delete)

static void prep_tree(const char *w)
{
	tu_mkdir(tu_path(w, "dir"));
	tu_mkdir(tu_path(w, "dir/sub"));
	tu_touch(tu_path(w, "dir/sub/x"));
}

static void del_tree(const char *w)
{
	tu_unlink(tu_path(w, "dir/sub/x"));
	tu_rmdir(tu_path(w, "dir/sub"));
	tu_rmdir(tu_path(w, "dir"));
}

/* A directory gone with what it held: its entries before it. */
static void repair_delete_tree(struct tu_fix *f, const char *base)
{
	const struct want want[] = {
		{ NOTIFYX_DELETE, "dir/sub/x", NULL, 0 },
		{ NOTIFYX_DELETE, "dir/sub", NULL, 1 },
		{ NOTIFYX_DELETE, "dir", NULL, 1 },
	};

	repair_case(f, base, prep_tree, del_tree, want, 3);
}
ON_BOTH(repair_delete_tree)

static void ren_file(const char *w)
{
	tu_rename(tu_path(w, "file"), tu_path(w, "moved"));
}

/* Renamed: one RENAME, found by the inode (not a DELETE and a CREATE). */
static void repair_rename(struct tu_fix *f, const char *base)
{
	const struct want want[] = { { NOTIFYX_RENAME, "moved", "file", 0 } };

	repair_case(f, base, prep_file, ren_file, want, 1);
}
ON_BOTH(repair_rename)

static void ren_dir(const char *w)
{
	tu_rename(tu_path(w, "dir"), tu_path(w, "renamed"));
}

/* A directory renamed with what it holds: one RENAME ISDIR, its contents implied. */
static void repair_rename_dir(struct tu_fix *f, const char *base)
{
	const struct want want[] = { { NOTIFYX_RENAME, "renamed", "dir", 1 } };

	repair_case(f, base, prep_tree, ren_dir, want, 1);
}
ON_BOTH(repair_rename_dir)

static void mod_file(const char *w)
{
	tu_write(tu_path(w, "file"), "more");
}

static void repair_modify(struct tu_fix *f, const char *base)
{
	const struct want want[] = { { NOTIFYX_MODIFY, "file", NULL, 0 } };

	repair_case(f, base, prep_file, mod_file, want, 1);
}
ON_BOTH(repair_modify)

static void chmod_file(const char *w)
{
	if (chmod(tu_path(w, "file"), 0600) < 0)
		fail_msg("chmod: %s", strerror(errno));
}

static void repair_attrib(struct tu_fix *f, const char *base)
{
	const struct want want[] = { { NOTIFYX_ATTRIB, "file", NULL, 0 } };

	repair_case(f, base, prep_file, chmod_file, want, 1);
}
ON_BOTH(repair_attrib)

static void new_tree(const char *w)
{
	tu_mkdir(tu_path(w, "new"));
	tu_mkdir(tu_path(w, "new/sub"));
	tu_touch(tu_path(w, "new/sub/x"));
	tu_touch(tu_path(w, "new/y"));
}

/* A new directory with files: parents first (the order of siblings is free). */
static void repair_new_tree(struct tu_fix *f, const char *base)
{
	const struct want want[] = {
		{ NOTIFYX_CREATE, "new", NULL, 1 },
		{ NOTIFYX_CREATE, "new/sub", NULL, 1 },
		{ NOTIFYX_CREATE, "new/sub/x", NULL, 0 },
		{ NOTIFYX_CREATE, "new/y", NULL, 0 },
	};

	repair_case(f, base, no_prep, new_tree, want, 4);
}
ON_BOTH(repair_new_tree)

static void prep_two(const char *w)
{
	tu_write(tu_path(w, "file"), "1");
	tu_mkdir(tu_path(w, "dir"));
	tu_touch(tu_path(w, "dir/x"));
}

static void into_new(const char *w)
{
	tu_mkdir(tu_path(w, "new"));
	tu_rename(tu_path(w, "file"), tu_path(w, "new/file"));
	tu_rename(tu_path(w, "dir"), tu_path(w, "new/dir"));
}

/* Moved into a directory made during the loss: the directory comes first. */
static void repair_into_new_dir(struct tu_fix *f, const char *base)
{
	const struct want want[] = {
		{ NOTIFYX_CREATE, "new", NULL, 1 },
		{ NOTIFYX_RENAME, "new/file", "file", 0 },
		{ NOTIFYX_RENAME, "new/dir", "dir", 1 },
	};

	repair_case(f, base, prep_two, into_new, want, 3);
}
ON_BOTH(repair_into_new_dir)

/* ---- after a repair the watch goes on ---------------------------------------------- */

/*
 * During the loss: a directory made (with a subdirectory), one renamed, and
 * one removed and made again under its name (a new inode).  After the SYNC,
 * entries made in each are reported under their current paths: the repair
 * watches what the kernel side never saw or lost.
 */
static void goes_on(struct tu_fix *f, const char *base)
{
	char w[4096];
	size_t o, s, from;
	int wd;

	snprintf(w, sizeof w, "%s", tu_path(base, "w"));
	tu_mkdir(w);
	tu_mkdir(tu_path(w, "fill"));
	tu_mkdir(tu_path(w, "old"));
	tu_mkdir(tu_path(w, "old/in"));
	tu_mkdir(tu_path(w, "again"));
	reopen(f, QMAX);
	wd = tu_add(&f->log, w, TYPES, RFLAGS);
	make_files(tu_path(w, "fill"), "f", FILL);
	tu_mkdir(tu_path(w, "new"));
	tu_mkdir(tu_path(w, "new/sub"));
	tu_rename(tu_path(w, "old"), tu_path(w, "renamed"));
	tu_rmdir(tu_path(w, "again"));
	tu_mkdir(tu_path(w, "again"));
	wait_sync(f, wd, 0);
	one_repair(&f->log, wd, 0, &o, &s);
	from = f->log.n;
	static const char *const made[] = { "new/a", "new/sub/b", "renamed/c", "renamed/in/d",
					    "again/e" };
	/* One at a time: QMAX of them at once would be a loss of their own. */
	for (size_t i = 0; i < sizeof made / sizeof made[0]; i++) {
		tu_touch(tu_path(w, made[i]));
		TU_WAIT_FROM(&f->log, from, wd, NOTIFYX_CREATE, made[i]);
	}
	tu_settle(&f->log);
	if (f->log.n - from != sizeof made / sizeof made[0]) {
		tu_dump(&f->log, "actual");
		fail_msg("after the SYNC (#%zu): expected a CREATE of each new file, nothing else; "
			 "read %zu event(s)", s, f->log.n - from);
	}
	(void)o;
}
ON_BOTH(goes_on)

/* ---- LIST | RESCAN: a SYNC after the listing, one after each repair ------------------ */

static void list_rescan_syncs(void **state)
{
	struct tu_fix *f = F(state);
	size_t o, s, from = 0;
	int wd;

	tu_mkdir(tu_path(f->dir, "fill"));
	tu_mkdir(tu_path(f->dir, "d"));
	tu_touch(tu_path(f->dir, "d/x"));
	tu_touch(tu_path(f->dir, "y"));
	reopen(f, QMAX);
	wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE, RFLAGS | NOTIFYX_WATCH_LIST);
	TU_WAIT(&f->log, wd, NOTIFYX_SYNC, "");
	tu_settle(&f->log);
	/* The listing (4 entries: QMAX, yet a listing is not lost), then its SYNC. */
	TU_EQ("CREATEs of the listing", 4, tu_count(&f->log, wd, NOTIFYX_CREATE, NULL));
	TU_EQ("events of the listing and its SYNC", 5, tu_count_wd(&f->log, wd));
	TU_EQ("the listing's SYNC is its last event", NOTIFYX_SYNC, f->log.ev[f->log.n - 1].mask);
	for (int round = 0; round < 3; round++) {
		char prefix[16];

		snprintf(prefix, sizeof prefix, "r%d-", round);
		from = f->log.n;
		make_files(tu_path(f->dir, "fill"), prefix, FILL);
		wait_sync(f, wd, from);
		one_repair(&f->log, wd, from, &o, &s);
		fill_once(&f->log, wd, "fill", prefix, o, s);
		TU_EQ(tu_fmt("round %d: events (the CREATEs, delivered or repaired, OVERFLOW, "
			     "SYNC)", round), FILL + 2, f->log.n - from);
	}
	TU_EQ("SYNC events: one after the listing, one after each of 3 repairs", 4,
	      tu_count(&f->log, wd, NOTIFYX_SYNC, NULL));
}

/* ---- without RESCAN: no SYNC after an OVERFLOW, no repair --------------------------- */

static void no_rescan_no_sync(void **state)
{
	struct tu_fix *f = F(state);
	ssize_t o;
	int wd;

	tu_mkdir(tu_path(f->dir, "fill"));
	reopen(f, QMAX);
	wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE | NOTIFYX_MODIFY,
		    NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	TU_WAIT(&f->log, wd, NOTIFYX_SYNC, "");
	make_files(tu_path(f->dir, "fill"), "f", FILL);
	o = TU_WAIT(&f->log, wd, NOTIFYX_OVERFLOW, "");
	/* A repair would come within this time on every backend. */
	tu_settle_ms(&f->log, 3 * tu_quiet_ms(f->nx), SYNC_MS);
	TU_ONCE(&f->log, wd, NOTIFYX_SYNC, "", 0, 0); /* the listing's */
	TU_ONCE(&f->log, wd, NOTIFYX_OVERFLOW, "", 0, 0);
	for (size_t i = (size_t)o + 1; i < f->log.n; i++)
		if (f->log.ev[i].wd == wd) {
			tu_dump(&f->log, "actual");
			fail_msg("event #%zu after the OVERFLOW of a watch without RESCAN: nothing "
				 "was changed after the burst, and nothing is repaired", i);
		}
	if (tu_count(&f->log, wd, NOTIFYX_CREATE, NULL) >= 1 + FILL) {
		tu_dump(&f->log, "actual");
		fail_msg("every CREATE of the burst was delivered: nothing was lost");
	}
}

/* ---- losses while repairs run: a tree that changes all the time ------------------ */

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

/*
 * The copy of the tree kept from the events (API.md "Mirroring a tree"), a
 * tree of names.  Events read while some were lost may name an entry whose
 * directory the copy lacks: "it exists now" makes the directories above it
 * exist too.  The copy is compared with the disk only after a SYNC.
 */
struct cnode {
	char *name;
	int isdir;
	struct cnode *up, **kid;
	size_t nk, cap;
};

static void c_free(struct cnode *n)
{
	for (size_t i = 0; i < n->nk; i++)
		c_free(n->kid[i]);
	free(n->kid);
	free(n->name);
	free(n);
}

static struct cnode *c_kid(const struct cnode *n, const char *name, size_t len)
{
	for (size_t i = 0; i < n->nk; i++)
		if (!strncmp(n->kid[i]->name, name, len) && !n->kid[i]->name[len])
			return n->kid[i];
	return NULL;
}

static void c_attach(struct cnode *up, struct cnode *n)
{
	if (up->nk == up->cap) {
		up->cap = up->cap ? 2 * up->cap : 8;
		up->kid = realloc(up->kid, up->cap * sizeof *up->kid);
		assert_non_null(up->kid);
	}
	up->kid[up->nk++] = n;
	n->up = up;
}

static void c_detach(struct cnode *n)
{
	struct cnode *up = n->up;

	for (size_t i = 0; i < up->nk; i++)
		if (up->kid[i] == n) {
			up->kid[i] = up->kid[--up->nk];
			break;
		}
	n->up = NULL;
}

static struct cnode *c_new(const char *name, size_t len, int isdir)
{
	struct cnode *n = calloc(1, sizeof *n);

	assert_non_null(n);
	n->name = strndup(name, len);
	assert_non_null(n->name);
	n->isdir = isdir;
	return n;
}

/* The node at path, or NULL.  With make: the directory that holds path,
 * each missing directory on the way made (a non-directory there becomes
 * one), *last its name in path. */
static struct cnode *c_walk(struct cnode *root, const char *path, int make, const char **last)
{
	struct cnode *n = root, *k;

	while (n && *path) {
		size_t len = strcspn(path, "/");

		if (make && !path[len]) {
			*last = path;
			return n;
		}
		k = c_kid(n, path, len);
		if (make && !k)
			c_attach(n, k = c_new(path, len, 1));
		if (make && !k->isdir)
			k->isdir = 1;
		n = k;
		path += len + !!path[len];
	}
	return n;
}

static void c_remove(struct cnode *root, const char *path)
{
	struct cnode *n = *path ? c_walk(root, path, 0, NULL) : NULL;

	if (n) {
		c_detach(n);
		c_free(n);
	}
}

/* n (detached) is at path now, replacing what was there. */
static void c_put(struct cnode *root, struct cnode *n, const char *path)
{
	const char *name;
	struct cnode *up;

	c_remove(root, path);
	up = c_walk(root, path, 1, &name);
	free(n->name);
	n->name = strdup(name);
	assert_non_null(n->name);
	c_attach(up, n);
}

/* path exists, a directory or not; what it held stays if its type did. */
static void c_add(struct cnode *root, const char *path, int isdir)
{
	struct cnode *n = c_walk(root, path, 0, NULL);

	if (n && n != root && n->isdir == isdir)
		return;
	c_put(root, c_new("", 0, isdir), path);
}

/* One event, as API.md "Mirroring a tree" says; returns 1 if it could not
 * be applied (an exchange with a side missing). */
static int c_apply(struct cnode *root, const struct tu_ev *e)
{
	int isdir = !!(e->flags & NOTIFYX_EVENT_ISDIR);
	struct cnode *a, *b;

	if (!*e->path && e->mask != NOTIFYX_DELETE_SELF)
		return 0; /* OVERFLOW, SYNC */
	switch (e->mask) {
	case NOTIFYX_CREATE:
	case NOTIFYX_MOVED_IN:
		c_add(root, e->path, isdir);
		break;
	case NOTIFYX_DELETE:
	case NOTIFYX_MOVED_OUT:
		c_remove(root, e->path);
		break;
	case NOTIFYX_RENAME:
		a = c_walk(root, e->old_path, 0, NULL);
		if (e->flags & NOTIFYX_EVENT_EXCHANGE) {
			b = c_walk(root, e->path, 0, NULL);
			if (!a || !b || a == root || b == root)
				return 1;
			c_detach(a);
			c_detach(b);
			c_put(root, a, e->path);
			c_put(root, b, e->old_path);
		} else if (a && a != root) {
			c_detach(a);
			c_put(root, a, e->path);
		} else {
			c_add(root, e->path, isdir);
		}
		break;
	case NOTIFYX_DELETE_SELF:
		while (root->nk)
			c_remove(root, root->kid[0]->name);
		break;
	default:
		break;
	}
	return 0;
}

struct centry {
	char *path;
	int isdir;
};

struct clist {
	struct centry *e;
	size_t n, cap;
};

static void cl_put(struct clist *l, const char *path, int isdir)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 256;
		l->e = realloc(l->e, l->cap * sizeof *l->e);
		assert_non_null(l->e);
	}
	l->e[l->n].path = strdup(path);
	assert_non_null(l->e[l->n].path);
	l->e[l->n++].isdir = isdir;
}

static void cl_free(struct clist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->e[i].path);
	free(l->e);
	memset(l, 0, sizeof *l);
}

static void c_flatten(const struct cnode *n, const char *rel, struct clist *out)
{
	for (size_t i = 0; i < n->nk; i++) {
		char p[4096];

		ch_join(rel, n->kid[i]->name, p, sizeof p);
		cl_put(out, p, n->kid[i]->isdir);
		c_flatten(n->kid[i], p, out);
	}
}

/* The tree on disk below abs, paths relative to it. */
static void disk_walk(const char *abs, const char *rel, struct clist *out)
{
	DIR *d = opendir(abs);
	struct dirent *de;

	if (!d)
		fail_msg("opendir %s: %s", abs, strerror(errno));
	while ((de = readdir(d))) {
		char p[4096], sub[4096];
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		ch_print(sub, sizeof sub, "%s/%s", abs, de->d_name);
		if (lstat(sub, &st) < 0)
			fail_msg("lstat %s: %s", sub, strerror(errno));
		ch_join(rel, de->d_name, p, sizeof p);
		cl_put(out, p, S_ISDIR(st.st_mode));
		if (S_ISDIR(st.st_mode))
			disk_walk(sub, p, out);
	}
	closedir(d);
}

static int by_cpath(const void *a, const void *b)
{
	return strcmp(((const struct centry *)a)->path, ((const struct centry *)b)->path);
}

/* The differences between the copy and the disk at abs, each printed (the
 * first 40); returns how many. */
static size_t copy_differs(const struct cnode *root, const char *abs, size_t *entries)
{
	struct clist m = { 0 }, disk = { 0 };
	size_t i = 0, j = 0, bad = 0;

	c_flatten(root, "", &m);
	disk_walk(abs, "", &disk);
	qsort(m.e, m.n, sizeof *m.e, by_cpath);
	qsort(disk.e, disk.n, sizeof *disk.e, by_cpath);
	while (i < m.n || j < disk.n) {
		int c = i == m.n ? 1 : j == disk.n ? -1 : strcmp(m.e[i].path, disk.e[j].path);
		const char *what = NULL, *path;
		int isdir;

		if (c < 0) {
			what = "only in the copy";
			path = m.e[i].path, isdir = m.e[i].isdir;
			i++;
		} else if (c > 0) {
			what = "only on disk";
			path = disk.e[j].path, isdir = disk.e[j].isdir;
			j++;
		} else {
			if (m.e[i].isdir != disk.e[j].isdir)
				what = m.e[i].isdir ? "a directory in the copy, not on disk"
						    : "a directory on disk, not in the copy";
			path = m.e[i].path, isdir = disk.e[j].isdir;
			i++, j++;
		}
		if (what && bad++ < 40)
			print_error("  %s: %s%s\n", what, path, isdir ? "/" : "");
	}
	*entries = disk.n;
	cl_free(&m);
	cl_free(&disk);
	return bad;
}

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
static void follow(struct follow *fw, const struct tu_log *log, struct cnode *copy)
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
		fw->anomalies += (size_t)c_apply(copy, e);
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
	struct cnode *copy = c_new("", 0, 1);
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
		make_files(sub, "f", CH_FILES);
	}
	reopen(f, LQMAX);
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
	bad = copy_differs(copy, c->root, &entries);
	if (bad)
		fail_msg("seed %lu, %s: the copy made of the events differs from the tree in %zu "
			 "entries (above; %zu on disk) after the SYNC that followed the last "
			 "OVERFLOW (#%zd)", seed, notifyx_backend_name(notifyx_backend(f->nx)), bad,
			 entries, fw.last);
	print_message("  %zu events, %zu OVERFLOWs, %zu SYNCs after the listing's, %zu exchanges "
		      "not applicable; the copy equals the tree (%zu entries)\n", f->log.n - s0 - 1,
		      fw.overflows, fw.syncs, fw.anomalies, entries);
	c_free(copy);
	free(c);
}
ON_BOTH(loss_during_repair)

/* ---- inotify's own queue overflows ----------------------------------------------------- */

#define QUEUED_FILE "/proc/sys/fs/inotify/max_queued_events"

static long read_long(const char *file)
{
	long v = -1;
	FILE *fp = fopen(file, "re");

	if (fp && fscanf(fp, "%ld", &v) != 1)
		v = -1;
	if (fp)
		fclose(fp);
	return v;
}

static int write_long(const char *file, long v)
{
	FILE *fp = fopen(file, "we");
	int ok;

	if (!fp)
		return -1;
	ok = fprintf(fp, "%ld\n", v) > 0;
	return fclose(fp) == 0 && ok ? 0 : -1;
}

/*
 * The kernel's queue, not the library's: an inotify instance made while
 * max_queued_events is 16 (restored right after notifyx_open: the kernel
 * takes the size when the instance is made) loses the records of a burst
 * of 64 creations; IN_Q_OVERFLOW is the watch's OVERFLOW, and the repair
 * reports the CREATEs the kernel dropped, then SYNC.
 */
static void kernel_overflow(void **state)
{
	struct tu_fix *f = F(state);
	size_t o, s;
	long saved;
	int wd;

	tu_require_inotify(f->nx, "fs.inotify.max_queued_events is inotify's");
	tu_require_root("lowering fs.inotify.max_queued_events");
	saved = read_long(QUEUED_FILE);
	if (saved < 0 || write_long(QUEUED_FILE, 16) < 0) {
		print_message("[ SKIP     ] cannot lower %s: %s\n", QUEUED_FILE, strerror(errno));
		skip();
	}
	tu_log_free(&f->log);
	notifyx_close(f->nx);
	f->nx = tu_open(NOTIFYX_NONBLOCK, 0);
	int err = errno;
	if (write_long(QUEUED_FILE, saved) < 0)
		fail_msg("could not restore %s to %ld: %s", QUEUED_FILE, saved, strerror(errno));
	if (!f->nx)
		fail_msg("notifyx_open: %s", strerror(err));
	tu_log_init(&f->log, f->nx);
	tu_mkdir(tu_path(f->dir, "d"));
	wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE, RFLAGS);
	for (int i = 0; i < 64; i++)
		tu_touch(tu_path(f->dir, tu_fmt("d/k%03d", i)));
	wait_sync(f, wd, 0);
	one_repair(&f->log, wd, 0, &o, &s);
	for (int i = 0; i < 64; i++) {
		const char *p = tu_fmt("d/k%03d", i);
		ssize_t k = tu_find(&f->log, 0, wd, NOTIFYX_CREATE, p);

		if (tu_count(&f->log, wd, NOTIFYX_CREATE, p) != 1 ||
		    ((size_t)k > o && !(f->log.ev[k].flags & NOTIFYX_EVENT_SYNTHETIC))) {
			tu_dump(&f->log, "actual");
			fail_msg("CREATE \"%s\": expected once, SYNTHETIC if after the OVERFLOW", p);
		}
	}
	TU_EQ("events of the watch (64 CREATEs, OVERFLOW, SYNC)", 66, tu_count_wd(&f->log, wd));
	if (s - o - 1 == 0)
		fail_msg("the kernel lost nothing (max_queued_events 16, 64 creations)");
	print_message("  %zu of 64 CREATEs found by the repair\n", s - o - 1);
}

int conf_rescan_run(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(rescan_args, tu_setup, tu_teardown),
		TEST_BOTH(only_differences),
		TEST_BOTH(repair_finds_nothing),
		TEST_BOTH(repair_delete),
		TEST_BOTH(repair_delete_tree),
		TEST_BOTH(repair_rename),
		TEST_BOTH(repair_rename_dir),
		TEST_BOTH(repair_modify),
		TEST_BOTH(repair_attrib),
		TEST_BOTH(repair_new_tree),
		TEST_BOTH(repair_into_new_dir),
		TEST_BOTH(goes_on),
		TEST_BOTH(loss_during_repair),
		cmocka_unit_test_setup_teardown(list_rescan_syncs, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(no_rescan_no_sync, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(kernel_overflow, tu_setup, tu_teardown),
	};

	return cmocka_run_group_tests_name("conformance: RESCAN", tests, NULL, NULL);
}
