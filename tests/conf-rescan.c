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
 * only its SYNC (the queue filled by a second watch).  Losses while a
 * second thread changes a tree on and on: conf-rescan-churn.c.
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

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conformance.h"

#define TYPES (NOTIFYX_CREATE | NOTIFYX_DELETE | NOTIFYX_RENAME | NOTIFYX_MODIFY | NOTIFYX_ATTRIB)
#define QMAX 4     /* queue_max of the handles that lose events */
#define FILL 24    /* files of a burst: QMAX fit, the rest is lost */

/* ---- helpers -------------------------------------------------------------- */

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
	conf_reopen(f, QMAX);
	wd = tu_add(&f->log, w, TYPES, RFLAGS);
	conf_make_files(tu_path(w, "fill"), "f", FILL);
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
		conf_make_files(sub, "e", 49);
	}
	conf_reopen(f, 8);
	wd = tu_add(&f->log, w, TYPES, RFLAGS);
	conf_make_files(tu_path(w, "d3"), "f", FILL);
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
		conf_make_files(tu_path(w, tu_fmt("d%d", d)), "e", 10);
	}
	conf_reopen(f, QMAX);
	if (f->log.scanning) {
		print_message("[ SKIP     ] %s sees states: an entry made and removed between two "
			      "scans is no event it could lose\n",
			      notifyx_backend_name(notifyx_backend(f->nx)));
		skip();
	}
	b = tu_add(&f->log, fill, NOTIFYX_CREATE, 0);
	wd = tu_add(&f->log, w, TYPES, RFLAGS);
	conf_make_files(fill, "f", FILL);
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

/* Behind 3000 more files: the renames are still queued in the kernel when
 * the repair reads the tree (fanotify and inotify read 64 KiB at a time). */
static void ren_dir_behind(const char *w)
{
	char *fill = conf_join(w, "fill"); /* tu_path's buffers rotate */

	conf_make_files(fill, "g", 3000);
	free(fill);
	tu_rename(tu_path(w, "dir"), tu_path(w, "renamed"));
	tu_rename(tu_path(w, "renamed"), tu_path(w, "again"));
}

/* The records queued before a repair read the tree are in what it read:
 * the renames come as the repair's one RENAME, and nothing after the SYNC
 * (applied again, they would move a directory the copy no longer has
 * there, and overflow the queue again). */
static void repair_records_before(struct tu_fix *f, const char *base)
{
	const struct want want[] = { { NOTIFYX_RENAME, "again", "dir", 1 } };

	repair_case(f, base, prep_tree, ren_dir_behind, want, 1);
}
ON_BOTH(repair_records_before)

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
	conf_reopen(f, QMAX);
	wd = tu_add(&f->log, w, TYPES, RFLAGS);
	conf_make_files(tu_path(w, "fill"), "f", FILL);
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
	conf_reopen(f, QMAX);
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
		conf_make_files(tu_path(f->dir, "fill"), prefix, FILL);
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
	conf_reopen(f, QMAX);
	wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE | NOTIFYX_MODIFY,
		    NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	TU_WAIT(&f->log, wd, NOTIFYX_SYNC, "");
	conf_make_files(tu_path(f->dir, "fill"), "f", FILL);
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
static void sysctl_kernel_overflow(void **state)
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
		TEST_BOTH(repair_records_before),
		TEST_BOTH(repair_modify),
		TEST_BOTH(repair_attrib),
		TEST_BOTH(repair_new_tree),
		TEST_BOTH(repair_into_new_dir),
		TEST_BOTH(goes_on),
		cmocka_unit_test_setup_teardown(list_rescan_syncs, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(no_rescan_no_sync, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(sysctl_kernel_overflow, tu_setup, tu_teardown),
	};

	return cmocka_run_group_tests_name("conformance: RESCAN", tests, NULL, NULL);
}
