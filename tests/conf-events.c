/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Conformance test, the event rules of API.md ("Events"): what a watch
 * receives, IGNORED last, entries that appear and go, renames and moves,
 * exchange, OVERFLOW and the default queue_max, ONESHOT, UNMOUNT, the watch
 * limit.  Run from conformance.c's main through conf_events_run().
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/fs.h>

#include "conformance.h"

/* The last event of wd is its only IGNORED. */
static void ignored_last(const struct tu_log *log, int wd)
{
	ssize_t last = -1;
	size_t i;

	for (i = 0; i < log->n; i++)
		if (log->ev[i].wd == wd)
			last = (ssize_t)i;
	if (last < 0 || log->ev[last].mask != NOTIFYX_IGNORED ||
	    tu_count(log, wd, NOTIFYX_IGNORED, NULL) != 1) {
		tu_dump(log, "actual");
		fail_msg("wd %d: expected exactly one IGNORED, as its last event", wd);
	}
}

static void only_requested(void **state)
{
	struct tu_fix *f = F(state);
	const char *a = tu_path(f->dir, "a");
	int cr = tu_add(&f->log, f->dir, NOTIFYX_CREATE, 0);
	int cd = tu_add(&f->log, f->dir, NOTIFYX_CREATE | NOTIFYX_DELETE, 0);
	int all = tu_add(&f->log, f->dir, notifyx_supported_events(f->nx), 0);

	/* The log refuses any type a watch did not request (see take() in testutil.c).
	 * One step at a time, so that scanning backends see each state. */
	tu_write(a, "data");
	if (f->log.scanning)
		TU_WAIT(&f->log, all, NOTIFYX_CREATE, "a");
	assert_int_equal(chmod(a, 0600), 0);
	if (f->log.scanning)
		TU_WAIT(&f->log, all, NOTIFYX_ATTRIB, "a");
	tu_rename(a, tu_path(f->dir, "b"));
	if (f->log.scanning)
		TU_WAIT(&f->log, all, NOTIFYX_RENAME, "b");
	tu_unlink(tu_path(f->dir, "b"));
	TU_WAIT(&f->log, all, NOTIFYX_DELETE, "b");
	tu_settle(&f->log);
	TU_ONCE(&f->log, cr, NOTIFYX_CREATE, "a", NOTIFYX_EVENT_ISDIR, 0);
	TU_ONCE(&f->log, cd, NOTIFYX_CREATE, "a", NOTIFYX_EVENT_ISDIR, 0);
	TU_ONCE(&f->log, cd, NOTIFYX_DELETE, "b", NOTIFYX_EVENT_ISDIR, 0);
	/* A rename is not a creation or a deletion. */
	TU_NONE(&f->log, cr, NOTIFYX_CREATE, "b");
	TU_NONE(&f->log, cd, NOTIFYX_CREATE, "b");
	TU_NONE(&f->log, cd, NOTIFYX_DELETE, "a");
	TU_EQ("events of the CREATE-only watch", 1, tu_count_wd(&f->log, cr));
	TU_EQ("events of the CREATE|DELETE watch", 2, tu_count_wd(&f->log, cd));
}

static void ignored_after_rm(void **state)
{
	struct tu_fix *f = F(state);
	int wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE);

	tu_mkdir(tu_path(f->dir, "d"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "d");
	assert_int_equal(notifyx_rm_watch(f->nx, wd), 0);
	tu_touch(tu_path(f->dir, "after"));
	tu_touch(tu_path(f->dir, "d/after"));
	tu_settle(&f->log);
	TU_SEQ(&f->log, wd, NOTIFYX_CREATE, "d", NOTIFYX_IGNORED, "", 0u);
}

static void ignored_after_delete_self(void **state)
{
	struct tu_fix *f = F(state);
	const char *r1 = tu_path(f->dir, "r1");
	int quiet, self;

	tu_mkdir(r1);
	tu_mkdir(tu_path(f->dir, "r1/sub"));
	/* One that did not ask for DELETE_SELF still ends with IGNORED. */
	quiet = tu_add(&f->log, r1, NOTIFYX_MODIFY, NOTIFYX_WATCH_RECURSIVE);
	self = tu_add(&f->log, r1, NOTIFYX_DELETE_SELF | NOTIFYX_DELETE, 0);
	tu_rm_rf(r1);
	TU_WAIT(&f->log, quiet, NOTIFYX_IGNORED, "");
	TU_WAIT(&f->log, self, NOTIFYX_IGNORED, "");
	tu_settle(&f->log);
	TU_SEQ(&f->log, quiet, NOTIFYX_IGNORED, "", 0u);
	TU_SEQ(&f->log, self, NOTIFYX_DELETE, "sub", NOTIFYX_DELETE_SELF, "", NOTIFYX_IGNORED, "", 0u);
	TU_ERRNO("rm_watch after DELETE_SELF", notifyx_rm_watch(f->nx, self) == -1, EINVAL);
}

static void ignored_after_oneshot(void **state)
{
	struct tu_fix *f = F(state);
	int wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE | NOTIFYX_DELETE, NOTIFYX_WATCH_ONESHOT);
	int i;

	for (i = 0; i < 5; i++) {
		tu_touch(tu_path(f->dir, tu_fmt("f%d", i)));
		/* A scanning backend sees states: let it see f0 alone first
		 * (it scans when the handle is read). */
		if (!i && f->log.scanning)
			tu_settle(&f->log);
	}
	tu_unlink(tu_path(f->dir, "f0"));
	TU_WAIT(&f->log, wd, NOTIFYX_IGNORED, "");
	tu_touch(tu_path(f->dir, "later"));
	tu_settle(&f->log);
	TU_SEQ(&f->log, wd, NOTIFYX_CREATE, "f0", NOTIFYX_IGNORED, "", 0u);
	TU_ERRNO("rm_watch after the ONESHOT fired", notifyx_rm_watch(f->nx, wd) == -1, EINVAL);
	/* A ONESHOT file watch too. */
	tu_write(tu_path(f->dir, "file"), "x");
	wd = tu_add(&f->log, tu_path(f->dir, "file"), NOTIFYX_MODIFY, NOTIFYX_WATCH_ONESHOT);
	tu_write(tu_path(f->dir, "file"), "y");
	tu_write(tu_path(f->dir, "file"), "z");
	TU_WAIT(&f->log, wd, NOTIFYX_IGNORED, "");
	tu_settle(&f->log);
	TU_SEQ(&f->log, wd, NOTIFYX_MODIFY, "", NOTIFYX_IGNORED, "", 0u);
}

static void move_self_goes_on(void **state)
{
	struct tu_fix *f = F(state);
	const char *root = tu_path(f->dir, "root");
	int wd;

	tu_mkdir(root);
	tu_mkdir(tu_path(f->dir, "root/sub"));
	wd = tu_add(&f->log, root, NOTIFYX_MOVE_SELF | NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE);
	tu_rename(root, tu_path(f->dir, "moved"));
	TU_WAIT(&f->log, wd, NOTIFYX_MOVE_SELF, "");
	tu_touch(tu_path(f->dir, "moved/f"));
	tu_touch(tu_path(f->dir, "moved/sub/g"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "f");
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "sub/g");
	tu_settle(&f->log);
	TU_NONE(&f->log, wd, NOTIFYX_IGNORED, NULL);
	TU_ONCE(&f->log, wd, NOTIFYX_MOVE_SELF, "", 0, 0);
}

/* umount(2) the watched root's filesystem: UNMOUNT then IGNORED. */
static void unmount_common(struct tu_fix *f, int lazy)
{
	const char *m;
	int wd, sub, rec;

	tu_require_root("mounting a private tmpfs");
	m = tu_mount_tmpfs(f, "mnt");
	tu_mkdir(tu_path(m, "d"));
	wd = tu_add(&f->log, m, NOTIFYX_CREATE, 0);
	rec = tu_add(&f->log, m, NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE);
	sub = tu_add(&f->log, tu_path(m, "d"), NOTIFYX_CREATE, 0);
	tu_touch(tu_path(m, "f"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "f");
	if (umount2(m, lazy ? MNT_DETACH : 0) < 0) {
		if (!lazy && errno == EBUSY && f->log.scanning) {
			/* API.md: poll holds the root open, so it needs umount -l. */
			print_message("  note: umount: EBUSY on a scanning backend; using MNT_DETACH\n");
			assert_int_equal(umount2(m, MNT_DETACH), 0);
		} else {
			fail_msg("umount2(%s, %s): %s", m, lazy ? "MNT_DETACH" : "0", strerror(errno));
		}
	}
	TU_WAIT(&f->log, wd, NOTIFYX_IGNORED, "");
	TU_WAIT(&f->log, rec, NOTIFYX_IGNORED, "");
	TU_WAIT(&f->log, sub, NOTIFYX_IGNORED, "");
	tu_settle(&f->log);
	TU_SEQ(&f->log, wd, NOTIFYX_CREATE, "f", NOTIFYX_UNMOUNT, "", NOTIFYX_IGNORED, "", 0u);
	TU_SEQ(&f->log, rec, NOTIFYX_CREATE, "f", NOTIFYX_UNMOUNT, "", NOTIFYX_IGNORED, "", 0u);
	TU_SEQ(&f->log, sub, NOTIFYX_UNMOUNT, "", NOTIFYX_IGNORED, "", 0u);
	TU_ERRNO("rm_watch after UNMOUNT", notifyx_rm_watch(f->nx, wd) == -1, EINVAL);
}

static void unmount_plain(void **state)
{
	unmount_common(F(state), 0);
}

static void unmount_lazy(void **state)
{
	unmount_common(F(state), 1);
}

/* A filesystem mounted below the root goes: the watch goes on, with an OVERFLOW. */
static void unmount_below_root(void **state)
{
	struct tu_fix *f = F(state);
	const char *m;
	int wd;

	tu_require_root("mounting a private tmpfs");
	m = tu_mount_tmpfs(f, "mnt");
	tu_mkdir(tu_path(m, "d"));
	wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE);
	tu_touch(tu_path(m, "d/f"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "mnt/d/f");
	assert_int_equal(umount2(m, MNT_DETACH), 0);
	TU_WAIT(&f->log, wd, NOTIFYX_OVERFLOW, "");
	tu_touch(tu_path(f->dir, "mnt/after"));
	tu_touch(tu_path(f->dir, "top"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "top");
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "mnt/after");
	tu_settle(&f->log);
	TU_NONE(&f->log, wd, NOTIFYX_IGNORED, NULL);
	TU_NONE(&f->log, wd, NOTIFYX_UNMOUNT, NULL);
}

/* The same while the filesystem is busy (the test holds a directory of it
 * open): umount -l then raises no kernel unmount event until it is
 * released, and the watch must still learn it (0.2). */
static void unmount_below_root_busy(void **state)
{
	struct tu_fix *f = F(state);
	const char *m;
	int wd, fd;

	tu_require_root("mounting a private tmpfs");
	m = tu_mount_tmpfs(f, "mnt");
	tu_mkdir(tu_path(m, "d"));
	wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE);
	tu_touch(tu_path(m, "d/f"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "mnt/d/f");
	fd = open(tu_path(m, "d"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(umount2(m, MNT_DETACH), 0);
	TU_WAIT(&f->log, wd, NOTIFYX_OVERFLOW, "");
	tu_touch(tu_path(f->dir, "mnt/after"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "mnt/after");
	close(fd);
	tu_settle(&f->log);
	TU_NONE(&f->log, wd, NOTIFYX_IGNORED, NULL);
	TU_NONE(&f->log, wd, NOTIFYX_UNMOUNT, NULL);
}

/* mkdir -p iN/b/c and a file inside, at once: each entry exactly once. */
static void appear_exactly_once(void **state)
{
	struct tu_fix *f = F(state);
	const int rounds = 200;
	int wd, i;
	long t0 = tu_now_ms();

	wd = tu_add(&f->log, f->dir, APPEAR, NOTIFYX_WATCH_RECURSIVE);
	for (i = 0; i < rounds; i++) {
		tu_mkdir(tu_path(f->dir, tu_fmt("i%d", i)));
		tu_mkdir(tu_path(f->dir, tu_fmt("i%d/b", i)));
		tu_mkdir(tu_path(f->dir, tu_fmt("i%d/b/c", i)));
		tu_touch(tu_path(f->dir, tu_fmt("i%d/b/c/f", i)));
		if (i % 20 == 19)
			tu_pull(&f->log); /* keep reading while the tree grows */
	}
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, tu_fmt("i%d/b/c/f", rounds - 1));
	tu_settle(&f->log);
	if (tu_count(&f->log, wd, NOTIFYX_OVERFLOW, NULL))
		fail_msg("OVERFLOW with the default queue_max in a run of %d x 4 creations", rounds);
	for (i = 0; i < rounds; i++) {
		char top[32];

		snprintf(top, sizeof top, "i%d", i);
		if (f->log.scanning)
			TU_ONCE(&f->log, wd, NOTIFYX_CREATE, top, NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_ISDIR);
		else
			/* Made directly in the watched root: the kernel reports it. */
			TU_ONCE(&f->log, wd, NOTIFYX_CREATE, top,
				NOTIFYX_EVENT_ISDIR | NOTIFYX_EVENT_SYNTHETIC, NOTIFYX_EVENT_ISDIR);
		TU_ONCE(&f->log, wd, NOTIFYX_CREATE, tu_fmt("i%d/b", i), NOTIFYX_EVENT_ISDIR,
			NOTIFYX_EVENT_ISDIR);
		TU_ONCE(&f->log, wd, NOTIFYX_CREATE, tu_fmt("i%d/b/c", i), NOTIFYX_EVENT_ISDIR,
			NOTIFYX_EVENT_ISDIR);
		TU_ONCE(&f->log, wd, NOTIFYX_CREATE, tu_fmt("i%d/b/c/f", i), NOTIFYX_EVENT_ISDIR, 0);
		TU_BEFORE(&f->log, tu_find(&f->log, 0, wd, NOTIFYX_CREATE, tu_fmt("i%d/b", i)),
			  tu_find(&f->log, 0, wd, NOTIFYX_CREATE, tu_fmt("i%d/b/c/f", i)),
			  "a directory before the entries in it");
	}
	TU_EQ("events in total", 4 * rounds, tu_count_wd(&f->log, wd));
	print_message("  %d rounds in %ld ms\n", rounds, tu_now_ms() - t0);
}

static void go_subtree(void **state)
{
	struct tu_fix *f = F(state);
	static const char *const entries[] = { "t", "t/a", "t/a/b", "t/a/b/f1", "t/a/f2",
					       "t/a/b/f3", "t/c" };
	int wd;
	size_t i;

	tu_mkdir(tu_path(f->dir, "t"));
	tu_mkdir(tu_path(f->dir, "t/a"));
	tu_mkdir(tu_path(f->dir, "t/a/b"));
	tu_touch(tu_path(f->dir, "t/a/b/f1"));
	tu_touch(tu_path(f->dir, "t/a/f2"));
	wd = tu_add(&f->log, f->dir, GO | NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE);
	/* Entries that appear after add_watch are known too. */
	tu_touch(tu_path(f->dir, "t/a/b/f3"));
	tu_touch(tu_path(f->dir, "t/c"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "t/c");
	tu_rm_rf(tu_path(f->dir, "t"));
	TU_WAIT(&f->log, wd, NOTIFYX_DELETE, "t");
	tu_settle(&f->log);
	for (i = 0; i < sizeof entries / sizeof entries[0]; i++)
		TU_ONCE(&f->log, wd, NOTIFYX_DELETE, entries[i], 0, 0);
	for (i = 1; i < sizeof entries / sizeof entries[0]; i++) {
		char parent[64];

		snprintf(parent, sizeof parent, "%s", entries[i]);
		*strrchr(parent, '/') = 0;
		TU_BEFORE(&f->log, tu_find(&f->log, 0, wd, NOTIFYX_DELETE, entries[i]),
			  tu_find(&f->log, 0, wd, NOTIFYX_DELETE, parent),
			  tu_fmt("DELETE %s before DELETE of its directory %s", entries[i], parent));
	}
	TU_ONCE(&f->log, wd, NOTIFYX_DELETE, "t/a", NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_ISDIR);
	TU_ONCE(&f->log, wd, NOTIFYX_DELETE, "t/a/f2", NOTIFYX_EVENT_ISDIR, 0);
}

static void rename_inside(void **state)
{
	struct tu_fix *f = F(state);
	int wd, cd;
	size_t i;

	tu_mkdir(tu_path(f->dir, "x"));
	tu_mkdir(tu_path(f->dir, "y"));
	tu_touch(tu_path(f->dir, "a"));
	wd = tu_add(&f->log, f->dir, APPEAR | GO, NOTIFYX_WATCH_RECURSIVE);
	cd = tu_add(&f->log, f->dir, NOTIFYX_CREATE | NOTIFYX_DELETE, NOTIFYX_WATCH_RECURSIVE);
	/* One step at a time, so that scanning backends see each state. */
	tu_rename(tu_path(f->dir, "a"), tu_path(f->dir, "b"));
	TU_WAIT(&f->log, wd, NOTIFYX_RENAME, "b");
	tu_rename(tu_path(f->dir, "b"), tu_path(f->dir, "x/c"));
	TU_WAIT(&f->log, wd, NOTIFYX_RENAME, "x/c");
	tu_rename(tu_path(f->dir, "x"), tu_path(f->dir, "y/z")); /* a directory */
	TU_WAIT(&f->log, wd, NOTIFYX_RENAME, "y/z");
	tu_settle(&f->log);
	i = TU_ONCE(&f->log, wd, NOTIFYX_RENAME, "b", NOTIFYX_EVENT_ISDIR | NOTIFYX_EVENT_EXCHANGE, 0);
	TU_STREQ("old_path of RENAME b", "a", f->log.ev[i].old_path);
	i = TU_ONCE(&f->log, wd, NOTIFYX_RENAME, "x/c", NOTIFYX_EVENT_ISDIR, 0);
	TU_STREQ("old_path of RENAME x/c", "b", f->log.ev[i].old_path);
	i = TU_ONCE(&f->log, wd, NOTIFYX_RENAME, "y/z", NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_ISDIR);
	TU_STREQ("old_path of RENAME y/z", "x", f->log.ev[i].old_path);
	TU_EQ("events of the watch (three RENAMEs, nothing else)", 3, tu_count_wd(&f->log, wd));
	/* A watch with only CREATE and DELETE sees nothing of renames. */
	TU_EQ("events of the CREATE|DELETE watch", 0, tu_count_wd(&f->log, cd));
	/* Events below a renamed directory carry the new path. */
	tu_touch(tu_path(f->dir, "y/z/new"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "y/z/new");
	tu_unlink(tu_path(f->dir, "y/z/c"));
	TU_WAIT(&f->log, wd, NOTIFYX_DELETE, "y/z/c");
	tu_mkdir(tu_path(f->dir, "y/z/d"));
	tu_touch(tu_path(f->dir, "y/z/d/e"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "y/z/d/e");
	tu_settle(&f->log);
	for (i = 0; i < f->log.n; i++)
		if (!strncmp(f->log.ev[i].path, "x/", 2) && f->log.ev[i].mask != NOTIFYX_RENAME) {
			tu_dump(&f->log, "actual");
			fail_msg("event under the old name of a renamed directory: \"%s\"",
				 f->log.ev[i].path);
		}
}

static void rename_onto_existing(void **state)
{
	struct tu_fix *f = F(state);
	int wd;
	size_t i;

	tu_write(tu_path(f->dir, "a"), "a");
	tu_write(tu_path(f->dir, "b"), "b");
	tu_mkdir(tu_path(f->dir, "d1"));
	tu_mkdir(tu_path(f->dir, "d2"));
	tu_touch(tu_path(f->dir, "d1/in"));
	wd = tu_add(&f->log, f->dir, APPEAR | GO, NOTIFYX_WATCH_RECURSIVE);
	tu_rename(tu_path(f->dir, "a"), tu_path(f->dir, "b"));
	tu_rename(tu_path(f->dir, "d1"), tu_path(f->dir, "d2")); /* onto an empty directory */
	TU_WAIT(&f->log, wd, NOTIFYX_RENAME, "d2");
	tu_settle(&f->log);
	i = TU_ONCE(&f->log, wd, NOTIFYX_RENAME, "b", NOTIFYX_EVENT_ISDIR, 0);
	TU_STREQ("old_path", "a", f->log.ev[i].old_path);
	i = TU_ONCE(&f->log, wd, NOTIFYX_RENAME, "d2", NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_ISDIR);
	TU_STREQ("old_path", "d1", f->log.ev[i].old_path);
	TU_NONE(&f->log, wd, NOTIFYX_DELETE, NULL);
	TU_EQ("events of the watch", 2, tu_count_wd(&f->log, wd));
	tu_touch(tu_path(f->dir, "d2/after"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "d2/after");
}

static void move_between_watches(void **state)
{
	struct tu_fix *f = F(state);
	int a, b;
	size_t i, j;

	tu_mkdir(tu_path(f->dir, "A"));
	tu_mkdir(tu_path(f->dir, "B"));
	tu_touch(tu_path(f->dir, "A/f"));
	tu_mkdir(tu_path(f->dir, "A/d"));
	a = tu_add(&f->log, tu_path(f->dir, "A"), APPEAR | GO, NOTIFYX_WATCH_RECURSIVE);
	b = tu_add(&f->log, tu_path(f->dir, "B"), APPEAR | GO, NOTIFYX_WATCH_RECURSIVE);
	tu_rename(tu_path(f->dir, "A/f"), tu_path(f->dir, "B/g"));
	tu_rename(tu_path(f->dir, "A/d"), tu_path(f->dir, "B/d"));
	TU_WAIT(&f->log, b, NOTIFYX_MOVED_IN, "d");
	tu_settle(&f->log);
	i = TU_ONCE(&f->log, a, NOTIFYX_MOVED_OUT, "f", NOTIFYX_EVENT_ISDIR, 0);
	j = TU_ONCE(&f->log, b, NOTIFYX_MOVED_IN, "g", NOTIFYX_EVENT_ISDIR, 0);
	if (!f->log.ev[i].cookie || f->log.ev[i].cookie != f->log.ev[j].cookie)
		fail_msg("MOVED_OUT f cookie %u, MOVED_IN g cookie %u: expected the same non-zero "
			 "value", f->log.ev[i].cookie, f->log.ev[j].cookie);
	i = TU_ONCE(&f->log, a, NOTIFYX_MOVED_OUT, "d", NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_ISDIR);
	j = TU_ONCE(&f->log, b, NOTIFYX_MOVED_IN, "d", NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_ISDIR);
	if (!f->log.ev[i].cookie || f->log.ev[i].cookie != f->log.ev[j].cookie)
		fail_msg("MOVED_OUT d cookie %u, MOVED_IN d cookie %u: expected the same non-zero "
			 "value", f->log.ev[i].cookie, f->log.ev[j].cookie);
	TU_EQ("events of A", 2, tu_count_wd(&f->log, a));
	TU_EQ("events of B", 2, tu_count_wd(&f->log, b));
	/* The moved directory belongs to B now. */
	tu_touch(tu_path(f->dir, "B/d/x"));
	TU_WAIT(&f->log, b, NOTIFYX_CREATE, "d/x");
	tu_settle(&f->log);
	TU_NONE(&f->log, a, NOTIFYX_CREATE, NULL);
}

static void move_to_unwatched(void **state)
{
	struct tu_fix *f = F(state);
	int wd;
	long t0, dt;
	ssize_t k;

	tu_mkdir(tu_path(f->dir, "w"));
	tu_mkdir(tu_path(f->dir, "out"));
	tu_touch(tu_path(f->dir, "w/f"));
	tu_mkdir(tu_path(f->dir, "w/d"));
	wd = tu_add(&f->log, tu_path(f->dir, "w"), APPEAR | GO, NOTIFYX_WATCH_RECURSIVE);
	t0 = tu_now_ms();
	tu_rename(tu_path(f->dir, "w/f"), tu_path(f->dir, "out/f"));
	if (f->log.scanning) {
		/* A scanning backend sees a move to an unwatched place as DELETE. */
		TU_WAIT(&f->log, wd, NOTIFYX_DELETE, "f");
		return;
	}
	k = tu_wait_from(&f->log, 0, wd, NOTIFYX_MOVED_OUT, "f", 1000);
	dt = tu_now_ms() - t0;
	if (k < 0) {
		tu_dump(&f->log, "actual");
		fail_msg("MOVED_OUT \"f\" to an unwatched place not read within 1000 ms (the "
			 "unpaired half is held at most 10 ms)");
	}
	TU_EQ("cookie of a lone MOVED_OUT", 0, f->log.ev[k].cookie);
	print_message("  lone MOVED_OUT read after %ld ms\n", dt);
	/* A moved-out directory is not watched any more. */
	tu_rename(tu_path(f->dir, "w/d"), tu_path(f->dir, "out/d"));
	k = tu_wait_from(&f->log, 0, wd, NOTIFYX_MOVED_OUT, "d", 1000);
	if (k < 0) {
		tu_dump(&f->log, "actual");
		fail_msg("MOVED_OUT \"d\" not read within 1000 ms");
	}
	TU_EQ("cookie of a lone MOVED_OUT", 0, f->log.ev[k].cookie);
	assert_true(f->log.ev[k].flags & NOTIFYX_EVENT_ISDIR);
	tu_touch(tu_path(f->dir, "out/d/x"));
	tu_touch(tu_path(f->dir, "w/y"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "y");
	tu_settle(&f->log);
	TU_EQ("events of the watch", 3, tu_count_wd(&f->log, wd));
}

static void move_from_unwatched(void **state)
{
	struct tu_fix *f = F(state);
	int wd;
	size_t i;
	uint32_t in = NOTIFYX_MOVED_IN;

	tu_mkdir(tu_path(f->dir, "w"));
	tu_mkdir(tu_path(f->dir, "out"));
	tu_touch(tu_path(f->dir, "out/f"));
	tu_mkdir(tu_path(f->dir, "out/d"));
	tu_touch(tu_path(f->dir, "out/d/inside"));
	wd = tu_add(&f->log, tu_path(f->dir, "w"), APPEAR | GO, NOTIFYX_WATCH_RECURSIVE);
	tu_rename(tu_path(f->dir, "out/f"), tu_path(f->dir, "w/f"));
	tu_rename(tu_path(f->dir, "out/d"), tu_path(f->dir, "w/d"));
	if (f->log.scanning)
		in = NOTIFYX_CREATE; /* seen as a creation */
	TU_WAIT(&f->log, wd, in, "d");
	/* A directory moved in is watched afterwards. */
	tu_touch(tu_path(f->dir, "w/d/new"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "d/new");
	tu_settle(&f->log);
	i = TU_ONCE(&f->log, wd, in, "f", NOTIFYX_EVENT_ISDIR, 0);
	TU_EQ("cookie of a lone MOVED_IN f", 0, f->log.ev[i].cookie);
	i = TU_ONCE(&f->log, wd, in, "d", NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_ISDIR);
	TU_EQ("cookie of a lone MOVED_IN d", 0, f->log.ev[i].cookie);
	if (!f->log.scanning)
		/* Its contents are implied by the MOVED_IN (no LIST). */
		TU_NONE(&f->log, wd, 0, "d/inside");
	TU_ONCE(&f->log, wd, NOTIFYX_CREATE, "d/new", 0, 0);
}

static void exchange_dir_file(void **state)
{
	struct tu_fix *f = F(state);
	int wd, r;
	size_t i;
	const struct tu_ev *e;

	tu_mkdir(tu_path(f->dir, "dir"));
	tu_touch(tu_path(f->dir, "dir/inside"));
	tu_touch(tu_path(f->dir, "file"));
	wd = tu_add(&f->log, f->dir, APPEAR | GO, NOTIFYX_WATCH_RECURSIVE);
	r = (int)syscall(SYS_renameat2, AT_FDCWD, tu_path(f->dir, "dir"), AT_FDCWD,
			 tu_path(f->dir, "file"), RENAME_EXCHANGE);
	if (r < 0) {
		print_message("[ SKIP     ] renameat2(RENAME_EXCHANGE): %s\n", strerror(errno));
		skip();
	}
	TU_WAIT(&f->log, wd, NOTIFYX_RENAME, NULL);
	tu_settle(&f->log);
	TU_EQ("events of an exchange (one RENAME)", 1, tu_count_wd(&f->log, wd));
	i = (size_t)tu_find(&f->log, 0, wd, NOTIFYX_RENAME, NULL);
	e = &f->log.ev[i];
	if (!(e->flags & NOTIFYX_EVENT_EXCHANGE)) {
		tu_dump(&f->log, "actual");
		fail_msg("exchange of a directory and a file: RENAME without EXCHANGE");
	}
	/* Now "file" is the directory and "dir" the file. */
	if (!strcmp(e->path, "file")) {
		TU_STREQ("old_path", "dir", e->old_path);
		TU_EQ("ISDIR of the entry now at path \"file\" (the directory)", NOTIFYX_EVENT_ISDIR,
		      e->flags & NOTIFYX_EVENT_ISDIR);
	} else {
		TU_STREQ("path", "dir", e->path);
		TU_STREQ("old_path", "file", e->old_path);
		TU_EQ("ISDIR of the entry now at path \"dir\" (the file)", 0,
		      e->flags & NOTIFYX_EVENT_ISDIR);
	}
	/* The directory is still watched, under its new name. */
	tu_touch(tu_path(f->dir, "file/new"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "file/new");
	tu_settle(&f->log);
	TU_NONE(&f->log, wd, 0, "dir/new");
}

static void overflow_small_queue(void **state)
{
	struct tu_fix *f = F(state);
	struct notifyx *nx = tu_open(NOTIFYX_NONBLOCK, 8);
	struct tu_log log;
	int wd, quiet, i, round;
	size_t k;

	assert_non_null(nx);
	tu_log_init(&log, nx);
	tu_mkdir(tu_path(f->dir, "busy"));
	tu_mkdir(tu_path(f->dir, "calm"));
	wd = tu_add(&log, tu_path(f->dir, "busy"), NOTIFYX_CREATE, 0);
	quiet = tu_add(&log, tu_path(f->dir, "calm"), NOTIFYX_CREATE, 0);
	for (round = 0; round < 2; round++) {
		size_t from = log.n;
		char late[32];

		snprintf(late, sizeof late, "late%d", round);
		for (i = 0; i < 100; i++)
			tu_touch(tu_path(f->dir, tu_fmt("busy/r%d-%d", round, i)));
		if (log.scanning)
			tu_sleep_ms((int)(3 * tu_interval_ms));
		else
			tu_sleep_ms(50);
		tu_pull(&log);
		tu_touch(tu_path(f->dir, tu_fmt("busy/%s", late)));
		TU_WAIT_FROM(&log, from, wd, NOTIFYX_CREATE, late);
		tu_settle(&log);
		if (tu_find(&log, from, wd, NOTIFYX_OVERFLOW, NULL) < 0) {
			tu_dump(&log, "actual");
			fail_msg("round %d: 100 creations with queue_max 8 and no OVERFLOW", round);
		}
		TU_BEFORE(&log, tu_find(&log, from, wd, NOTIFYX_OVERFLOW, NULL),
			  tu_find(&log, from, wd, NOTIFYX_CREATE, late),
			  "OVERFLOW before the later event of the watch");
	}
	/* No two OVERFLOWs of a watch without an event of it between them. */
	{
		uint32_t prev = 0;

		for (k = 0; k < log.n; k++) {
			if (log.ev[k].wd != wd)
				continue;
			if (prev == NOTIFYX_OVERFLOW && log.ev[k].mask == NOTIFYX_OVERFLOW) {
				tu_dump(&log, "actual");
				fail_msg("two OVERFLOWs of wd %d in a row (event #%zu): one run of "
					 "losses gives one OVERFLOW", wd, k);
			}
			prev = log.ev[k].mask;
		}
	}
	/* Each creation at most once; the quiet watch lost nothing. */
	for (round = 0; round < 2; round++)
		for (i = 0; i < 100; i++)
			if (tu_count(&log, wd, NOTIFYX_CREATE, tu_fmt("busy/r%d-%d", round, i)) > 1 ||
			    tu_count(&log, wd, NOTIFYX_CREATE, tu_fmt("r%d-%d", round, i)) > 1)
				fail_msg("r%d-%d reported twice", round, i);
	TU_EQ("events of the quiet watch", 0, tu_count_wd(&log, quiet));
	/* Events continue. */
	tu_touch(tu_path(f->dir, "calm/x"));
	TU_WAIT(&log, quiet, NOTIFYX_CREATE, "x");
	tu_log_free(&log);
	notifyx_close(nx);
}

/* queue_max 0 means 16384 (API.md, "Configuration"): that many unread
 * events are held, one more is lost behind an OVERFLOW.  A scanning backend
 * shows it: one scan after the application read nothing finds every change.
 * The other backends read the kernel's queue only as the application reads
 * theirs, so there the kernel's own limit comes first. */
static void default_queue_max(void **state)
{
	struct tu_fix *f = F(state);
	const int held = 16384;
	struct notifyx *nx;
	struct tu_log log;
	ssize_t at;
	int wd, i;

	if (!f->log.scanning) {
		print_message("[ SKIP     ] the library reads the kernel's queue only as the application "
			      "reads its own: the kernel's limit comes before queue_max\n");
		skip();
	}
	nx = tu_open(NOTIFYX_NONBLOCK, 0);
	assert_non_null(nx);
	tu_log_init(&log, nx);
	wd = tu_add(&log, f->dir, NOTIFYX_CREATE | NOTIFYX_DELETE, 0);
	for (i = 0; i < held; i++)
		tu_touch(tu_path(f->dir, tu_fmt("f%d", i)));
	tu_sleep_ms((int)(3 * tu_interval_ms));
	tu_settle(&log);
	TU_EQ("OVERFLOWs after 16384 creations, read at once", 0,
	      tu_count(&log, wd, NOTIFYX_OVERFLOW, NULL));
	TU_EQ("CREATEs of 16384 creations", held, tu_count(&log, wd, NOTIFYX_CREATE, NULL));
	/* 16385 changes: the 16384 files deleted, one made. */
	tu_log_clear(&log);
	for (i = 0; i < held; i++)
		tu_unlink(tu_path(f->dir, tu_fmt("f%d", i)));
	tu_touch(tu_path(f->dir, "one-more"));
	tu_sleep_ms((int)(3 * tu_interval_ms));
	tu_settle(&log);
	at = tu_find(&log, 0, wd, NOTIFYX_OVERFLOW, NULL);
	if (at < 0)
		fail_msg("16385 changes read at once and no OVERFLOW (%zu events)", tu_count_wd(&log, wd));
	TU_EQ("events before the OVERFLOW of 16385 changes", held, at);
	TU_EQ("events of the watch", held + 1, tu_count_wd(&log, wd));
	tu_log_free(&log);
	notifyx_close(nx);
}

static void rm_watch_queued_then_nothing(void **state)
{
	struct tu_fix *f = F(state);
	int wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE, 0);
	int other = tu_add(&f->log, f->dir, NOTIFYX_CREATE, 0);
	size_t k;

	tu_touch(tu_path(f->dir, "before"));
	tu_sleep_ms(f->log.scanning ? (int)(3 * tu_interval_ms) : 20);
	assert_int_equal(notifyx_rm_watch(f->nx, wd), 0);
	tu_touch(tu_path(f->dir, "after"));
	TU_WAIT(&f->log, other, NOTIFYX_CREATE, "after");
	tu_settle(&f->log);
	ignored_last(&f->log, wd);
	TU_NONE(&f->log, wd, 0, "after");
	k = tu_count_wd(&f->log, wd);
	if (k == 2)
		TU_SEQ(&f->log, wd, NOTIFYX_CREATE, "before", NOTIFYX_IGNORED, "", 0u);
	else
		TU_SEQ(&f->log, wd, NOTIFYX_IGNORED, "", 0u);
	TU_ONCE(&f->log, other, NOTIFYX_CREATE, "before", 0, 0);
}

/* Count how many inotify watches a tree of n directories needs: n. */
static void make_tree(const char *where, int n)
{
	char dir[PATH_MAX];
	int i;

	snprintf(dir, sizeof dir, "%s", where);
	for (i = 0; i < n; i++)
		tu_mkdir(tu_path(dir, tu_fmt("d%02d", i)));
}

static void sysctl_enospc_nothing_left(void **state)
{
	struct tu_fix *f = F(state);
	long usage;
	int wd, small;
	size_t k;

	tu_require_root("lowering /proc/sys/fs/inotify/max_user_watches");
	tu_require_inotify(f->nx, "max_user_watches is inotify's limit");
	tu_mkdir(tu_path(f->dir, "big"));
	make_tree(tu_path(f->dir, "big"), 30);
	tu_mkdir(tu_path(f->dir, "small"));
	usage = tu_inotify_usage();
	/* 20 left: too few for the 31 directories of big, enough for small's 6
	 * even if other programs of this user add a few watches meanwhile. */
	tu_watches_set(usage + 20);
	errno = 0;
	wd = notifyx_add_watch(f->nx, tu_path(f->dir, "big"), NOTIFYX_CREATE | NOTIFYX_DELETE,
			       NOTIFYX_WATCH_RECURSIVE);
	if (wd >= 0) {
		tu_watches_restore();
		fail_msg("recursive watch on 31 directories with %ld watches left: wd %d, expected "
			 "-1 ENOSPC", 20L, wd);
	}
	TU_EQ(tu_fmt("errno of the failed add_watch (%s)", strerrorname_np(errno)), ENOSPC, errno);
	/* Nothing of it stayed: a small watch fits in what is left. */
	small = tu_add(&f->log, tu_path(f->dir, "small"), NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE);
	for (k = 0; k < 5; k++)
		tu_mkdir(tu_path(f->dir, tu_fmt("small/s%zu", k)));
	tu_touch(tu_path(f->dir, "big/d00/x"));
	tu_touch(tu_path(f->dir, "big/y"));
	tu_rmdir(tu_path(f->dir, "big/d01"));
	TU_WAIT(&f->log, small, NOTIFYX_CREATE, "s4");
	tu_touch(tu_path(f->dir, "small/s4/z"));
	TU_WAIT(&f->log, small, NOTIFYX_CREATE, "s4/z");
	tu_settle(&f->log);
	tu_watches_restore();
	/* The log fails on any event of a wd it does not know (the failed watch). */
	TU_EQ("events read", tu_count_wd(&f->log, small), f->log.n);
	TU_NONE(&f->log, small, NOTIFYX_ERROR, NULL);
}

static void sysctl_enospc_later(void **state)
{
	struct tu_fix *f = F(state);
	long usage;
	int wd;
	size_t k;

	tu_require_root("lowering /proc/sys/fs/inotify/max_user_watches");
	tu_require_inotify(f->nx, "max_user_watches is inotify's limit");
	make_tree(f->dir, 3);
	wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE);
	usage = tu_inotify_usage();
	tu_watches_set(usage);
	tu_mkdir(tu_path(f->dir, "d00/nope"));
	k = TU_WAIT(&f->log, wd, NOTIFYX_ERROR, "d00/nope");
	TU_EQ(tu_fmt("error of ERROR \"d00/nope\" (%s)", strerrorname_np(f->log.ev[k].error)),
	      ENOSPC, f->log.ev[k].error);
	tu_watches_restore();
	/* The rest of the tree is still watched. */
	tu_touch(tu_path(f->dir, "d01/ok"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "d01/ok");
	tu_settle(&f->log);
	TU_ONCE(&f->log, wd, NOTIFYX_CREATE, "d00/nope", NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_ISDIR);
	TU_ONCE(&f->log, wd, NOTIFYX_ERROR, "d00/nope", 0, 0);
	TU_NONE(&f->log, wd, NOTIFYX_IGNORED, NULL);
}

static void order_of_one_watch(void **state)
{
	struct tu_fix *f = F(state);
	const char *p = tu_path(f->dir, "f");
	uint32_t want = NOTIFYX_CREATE | NOTIFYX_MODIFY | NOTIFYX_CLOSE_WRITE | NOTIFYX_ATTRIB |
			NOTIFYX_DELETE | NOTIFYX_OPEN;
	int wd, fd;

	tu_require_events(f->nx, want);
	wd = tu_add(&f->log, f->dir, want, 0);
	fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "abc", 3), 3);
	close(fd);
	assert_int_equal(chmod(p, 0600), 0);
	tu_unlink(p);
	TU_WAIT(&f->log, wd, NOTIFYX_DELETE, "f");
	tu_settle(&f->log);
	TU_SEQ(&f->log, wd, NOTIFYX_CREATE, "f", NOTIFYX_OPEN, "f", NOTIFYX_MODIFY, "f",
	       NOTIFYX_CLOSE_WRITE, "f", NOTIFYX_ATTRIB, "f", NOTIFYX_DELETE, "f", 0u);
}

/* Scanning backends see states: a file whose mtime alone is set is one
 * MODIFY, one whose atime alone is set is not reported, one whose mode or
 * owner changes is ATTRIB (API.md; inotify and fanotify report what the
 * kernel says for these, which notifyx(7) lists). */
static void scanned_times(void **state)
{
	struct tu_fix *f = F(state);
	const char *p = tu_path(f->dir, "f");
	struct timespec mtime_only[2] = { { 0, UTIME_OMIT }, { 1000000000, 0 } };
	struct timespec atime_only[2] = { { 1000000000, 0 }, { 0, UTIME_OMIT } };
	size_t from, i;
	int wd;

	if (!f->log.scanning) {
		print_message("[ SKIP     ] a rule of the scanning backends (dnotify, poll)\n");
		skip();
	}
	tu_write(p, "data");
	wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE | NOTIFYX_MODIFY | NOTIFYX_ATTRIB, 0);
	tu_settle(&f->log);
	from = f->log.n;
	assert_int_equal(utimensat(AT_FDCWD, p, mtime_only, 0), 0);
	TU_WAIT(&f->log, wd, NOTIFYX_MODIFY, "f");
	assert_int_equal(chmod(p, 0600), 0);
	TU_WAIT(&f->log, wd, NOTIFYX_ATTRIB, "f");
	if (geteuid() == 0) {
		assert_int_equal(chown(p, 1, 1), 0);
		TU_WAIT_FROM(&f->log, f->log.n, wd, NOTIFYX_ATTRIB, "f");
	}
	assert_int_equal(utimensat(AT_FDCWD, p, atime_only, 0), 0);
	tu_touch(tu_path(f->dir, "mark"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "mark");
	tu_settle(&f->log);
	for (i = from; i < f->log.n; i++) {
		const struct tu_ev *e = &f->log.ev[i];
		uint32_t want = i == from ? NOTIFYX_MODIFY : i < f->log.n - 1 ? NOTIFYX_ATTRIB
									     : NOTIFYX_CREATE;

		if (e->mask != want || !(e->flags & NOTIFYX_EVENT_SYNTHETIC)) {
			tu_dump(&f->log, "actual");
			fail_msg("event #%zu: expected %s; the mtime alone is one MODIFY, mode and "
				 "owner ATTRIB, the atime alone nothing", i, tu_mask_str(want));
		}
	}
	TU_EQ("events: MODIFY, ATTRIB (mode), ATTRIB (owner, as root), CREATE mark",
	      3 + (geteuid() == 0), f->log.n - from);
}

int conf_events_run(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(only_requested, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(order_of_one_watch, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(ignored_after_rm, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(ignored_after_delete_self, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(ignored_after_oneshot, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(move_self_goes_on, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(unmount_plain, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(unmount_lazy, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(unmount_below_root, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(unmount_below_root_busy, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(appear_exactly_once, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(go_subtree, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(rename_inside, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(rename_onto_existing, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(move_between_watches, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(move_to_unwatched, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(move_from_unwatched, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(exchange_dir_file, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(scanned_times, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(overflow_small_queue, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(default_queue_max, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(rm_watch_queued_then_nothing, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(sysctl_enospc_nothing_left, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(sysctl_enospc_later, tu_setup, tu_teardown),
	};

	return cmocka_run_group_tests_name("conformance: events", tests, NULL, NULL);
}
