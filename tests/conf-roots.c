/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Conformance test, the edges of API.md 0.2 (issue "Exact at the edges"),
 * what happens to a watch's root: a root moved, and a directory above it;
 * umount -l of a busy filesystem; ISDIR on DELETE_SELF and MOVE_SELF,
 * MOVE_SELF of a file.  Each case that can differ per filesystem runs on
 * /tmp and on a private tmpfs (ON_BOTH, conformance.h).  Run from
 * conformance.c's main through conf_roots_run().
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
#include <unistd.h>

#include "conformance.h"

/* ---- a moved root ------------------------------------------------------------ */

/* A recursive root renamed, then the directory above it: the watch goes on
 * at the new place.  mkdir -p and files inside are reported with paths
 * relative to the root, a directory moved in is listed (LIST), never an
 * ERROR, and the one MOVE_SELF carries ISDIR. */
static void moved_root(struct tu_fix *f, const char *base)
{
	static const struct { const char *path; uint32_t isdir; } made[] = {
		{ "x", NOTIFYX_EVENT_ISDIR }, { "x/y", NOTIFYX_EVENT_ISDIR },
		{ "x/y/z", NOTIFYX_EVENT_ISDIR }, { "x/f", 0 }, { "x/y/z/f", 0 }, { "s/g", 0 },
	};
	const char *q = tu_path(base, "q");
	int plain, list;
	size_t i;
	uint32_t in;

	tu_mkdir(tu_path(base, "p"));
	tu_mkdir(tu_path(base, "p/root"));
	tu_mkdir(tu_path(base, "p/root/s"));
	tu_mkdir(tu_path(base, "out"));
	tu_mkdir(tu_path(base, "out/m"));
	tu_touch(tu_path(base, "out/m/k"));
	plain = tu_add(&f->log, tu_path(base, "p/root"), APPEAR | GO | NOTIFYX_MOVE_SELF,
		       NOTIFYX_WATCH_RECURSIVE);
	list = tu_add(&f->log, tu_path(base, "p/root"), APPEAR | GO | NOTIFYX_MOVE_SELF,
		      NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	conf_listed(&f->log, list);
	tu_rename(tu_path(base, "p/root"), tu_path(base, "p/root2"));
	WAIT(&f->log, plain, NOTIFYX_MOVE_SELF, "");
	WAIT(&f->log, list, NOTIFYX_MOVE_SELF, "");
	tu_rename(tu_path(base, "p"), q);
	tu_settle(&f->log); /* a scanning backend checks its roots */
	tu_log_clear(&f->log);
	tu_mkdir(tu_path(q, "root2/x"));
	tu_mkdir(tu_path(q, "root2/x/y"));
	tu_mkdir(tu_path(q, "root2/x/y/z"));
	tu_touch(tu_path(q, "root2/x/f"));
	tu_touch(tu_path(q, "root2/x/y/z/f"));
	tu_touch(tu_path(q, "root2/s/g"));
	WAIT(&f->log, plain, NOTIFYX_CREATE, "x/y/z/f");
	WAIT(&f->log, list, NOTIFYX_CREATE, "x/y/z/f");
	tu_rename(tu_path(base, "out/m"), tu_path(q, "root2/m"));
	in = f->log.scanning ? NOTIFYX_CREATE : NOTIFYX_MOVED_IN;
	WAIT(&f->log, plain, in, "m");
	WAIT(&f->log, list, NOTIFYX_CREATE, "m/k");
	tu_settle(&f->log);
	conf_no_error(&f->log);
	for (i = 0; i < sizeof made / sizeof made[0]; i++) {
		ONCE(&f->log, plain, NOTIFYX_CREATE, made[i].path, NOTIFYX_EVENT_ISDIR,
			made[i].isdir);
		ONCE(&f->log, list, NOTIFYX_CREATE, made[i].path, NOTIFYX_EVENT_ISDIR,
			made[i].isdir);
	}
	ONCE(&f->log, plain, in, "m", NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_ISDIR);
	ONCE(&f->log, list, in, "m", NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_ISDIR);
	ONCE(&f->log, list, NOTIFYX_CREATE, "m/k", NOTIFYX_EVENT_ISDIR | NOTIFYX_EVENT_SYNTHETIC,
		NOTIFYX_EVENT_SYNTHETIC);
	if (!f->log.scanning)
		TU_NONE(&f->log, plain, 0, "m/k"); /* implied by its MOVED_IN */
	TU_NONE(&f->log, TU_ANY_WD, NOTIFYX_IGNORED, NULL);
	/* Deletions below the moved root too. */
	tu_unlink(tu_path(q, "root2/x/y/z/f"));
	WAIT(&f->log, plain, NOTIFYX_DELETE, "x/y/z/f");
	WAIT(&f->log, list, NOTIFYX_DELETE, "x/y/z/f");
}
ON_BOTH(moved_root)

/* MOVE_SELF once, with ISDIR, when the root is renamed (checked apart from
 * the rest: moved_root clears its log after it). */
static void moved_root_self(struct tu_fix *f, const char *base)
{
	int wd;

	tu_mkdir(tu_path(base, "p"));
	tu_mkdir(tu_path(base, "p/root"));
	wd = tu_add(&f->log, tu_path(base, "p/root"), NOTIFYX_MOVE_SELF | NOTIFYX_CREATE,
		    NOTIFYX_WATCH_RECURSIVE);
	tu_rename(tu_path(base, "p/root"), tu_path(base, "p/root2"));
	WAIT(&f->log, wd, NOTIFYX_MOVE_SELF, "");
	tu_rename(tu_path(base, "p"), tu_path(base, "q"));
	tu_touch(tu_path(base, "q/root2/f"));
	WAIT(&f->log, wd, NOTIFYX_CREATE, "f");
	tu_settle(&f->log);
	ONCE(&f->log, wd, NOTIFYX_MOVE_SELF, "", NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_ISDIR);
	COUNT(&f->log, wd, 2, "events (MOVE_SELF, CREATE f)");
	TU_STREQ("notifyx_watch_path after MOVE_SELF", tu_path(base, "p/root"),
		 notifyx_watch_path(f->nx, wd));
}
ON_BOTH(moved_root_self)

/* ---- umount -l of a busy filesystem ------------------------------------------ */

/* The test's own tmpfs, a file inside held open: umount -l takes it out of
 * the mount namespace at once, and each watch on it gets UNMOUNT then
 * IGNORED (the kernel's inotify waits for the last descriptor). */
static void unmount_lazy_busy(void **state)
{
	struct tu_fix *f = F(state);
	const char *m;
	int wd, rec, sub, held;

	tu_require_root("mounting a private tmpfs");
	m = tu_mount_tmpfs(f, "mnt");
	tu_mkdir(tu_path(m, "d"));
	held = open(tu_path(m, "d/held"), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	assert_true(held >= 0);
	wd = tu_add(&f->log, m, NOTIFYX_CREATE, 0);
	rec = tu_add(&f->log, m, NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE);
	sub = tu_add(&f->log, tu_path(m, "d"), NOTIFYX_CREATE, 0);
	tu_touch(tu_path(m, "f"));
	WAIT(&f->log, wd, NOTIFYX_CREATE, "f");
	if (umount2(m, 0) == 0 || errno != EBUSY)
		fail_msg("umount of the busy tmpfs: expected EBUSY (%s)", strerror(errno));
	assert_int_equal(umount2(m, MNT_DETACH), 0);
	WAIT(&f->log, wd, NOTIFYX_IGNORED, "");
	WAIT(&f->log, rec, NOTIFYX_IGNORED, "");
	WAIT(&f->log, sub, NOTIFYX_IGNORED, "");
	tu_settle(&f->log);
	close(held);
	TU_SEQ(&f->log, wd, NOTIFYX_CREATE, "f", NOTIFYX_UNMOUNT, "", NOTIFYX_IGNORED, "", 0u);
	TU_SEQ(&f->log, rec, NOTIFYX_CREATE, "f", NOTIFYX_UNMOUNT, "", NOTIFYX_IGNORED, "", 0u);
	TU_SEQ(&f->log, sub, NOTIFYX_UNMOUNT, "", NOTIFYX_IGNORED, "", 0u);
	TU_ERRNO("rm_watch after UNMOUNT", notifyx_rm_watch(f->nx, rec) == -1, EINVAL);
}

/* ---- self events ----------------------------------------------------------------- */

/* DELETE_SELF and MOVE_SELF of a directory root carry ISDIR (plain and
 * recursive watches); a watched file renamed is MOVE_SELF without ISDIR,
 * and removed DELETE_SELF without ISDIR. */
static void self_isdir(struct tu_fix *f, const char *base)
{
	const char *d = tu_path(base, "d"), *file = tu_path(base, "file");
	int plain, rec, fw;

	tu_require_events(f->nx, SELF);
	tu_mkdir(d);
	tu_mkdir(tu_path(base, "d/s"));
	tu_write(file, "x");
	plain = tu_add(&f->log, d, SELF, 0);
	rec = tu_add(&f->log, d, SELF, NOTIFYX_WATCH_RECURSIVE);
	fw = tu_add(&f->log, file, SELF, 0);
	tu_rename(d, tu_path(base, "d2"));
	tu_rename(file, tu_path(base, "file2"));
	WAIT(&f->log, plain, NOTIFYX_MOVE_SELF, "");
	WAIT(&f->log, rec, NOTIFYX_MOVE_SELF, "");
	WAIT(&f->log, fw, NOTIFYX_MOVE_SELF, "");
	tu_settle(&f->log);
	tu_rm_rf(tu_path(base, "d2"));
	tu_unlink(tu_path(base, "file2"));
	WAIT(&f->log, plain, NOTIFYX_IGNORED, "");
	WAIT(&f->log, rec, NOTIFYX_IGNORED, "");
	WAIT(&f->log, fw, NOTIFYX_IGNORED, "");
	tu_settle(&f->log);
	TU_SEQ(&f->log, plain, NOTIFYX_MOVE_SELF, "", NOTIFYX_DELETE_SELF, "", NOTIFYX_IGNORED, "", 0u);
	TU_SEQ(&f->log, rec, NOTIFYX_MOVE_SELF, "", NOTIFYX_DELETE_SELF, "", NOTIFYX_IGNORED, "", 0u);
	TU_SEQ(&f->log, fw, NOTIFYX_MOVE_SELF, "", NOTIFYX_DELETE_SELF, "", NOTIFYX_IGNORED, "", 0u);
	ONCE(&f->log, plain, NOTIFYX_MOVE_SELF, "", NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_ISDIR);
	ONCE(&f->log, plain, NOTIFYX_DELETE_SELF, "", NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_ISDIR);
	ONCE(&f->log, rec, NOTIFYX_MOVE_SELF, "", NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_ISDIR);
	ONCE(&f->log, rec, NOTIFYX_DELETE_SELF, "", NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_ISDIR);
	ONCE(&f->log, fw, NOTIFYX_MOVE_SELF, "", NOTIFYX_EVENT_ISDIR, 0);
	ONCE(&f->log, fw, NOTIFYX_DELETE_SELF, "", NOTIFYX_EVENT_ISDIR, 0);
}
ON_BOTH(self_isdir)

/* A watched file renamed into another directory and its name made again at
 * once (how editors save): MOVE_SELF, not ISDIR; the watch follows the
 * moved file, not the new one at the old name. */
static void self_file_moved(struct tu_fix *f, const char *base)
{
	const char *file = tu_path(base, "file"), *moved = tu_path(base, "d/file.old");
	int wd;
	size_t from;

	tu_require_events(f->nx, SELF | NOTIFYX_MODIFY);
	tu_mkdir(tu_path(base, "d"));
	tu_write(file, "one");
	wd = tu_add(&f->log, file, SELF | NOTIFYX_MODIFY, 0);
	tu_rename(file, moved);
	tu_write(file, "new file at the old name");
	WAIT(&f->log, wd, NOTIFYX_MOVE_SELF, "");
	tu_settle(&f->log);
	ONCE(&f->log, wd, NOTIFYX_MOVE_SELF, "", NOTIFYX_EVENT_ISDIR, 0);
	TU_NONE(&f->log, wd, NOTIFYX_MODIFY, NULL);
	tu_write(file, "the new file again, longer");
	tu_settle(&f->log);
	TU_NONE(&f->log, wd, NOTIFYX_MODIFY, NULL);
	from = f->log.n;
	tu_write(moved, "the watched file, written after its move");
	WAIT_FROM(&f->log, from, wd, NOTIFYX_MODIFY, "");
	tu_settle(&f->log);
	TU_NONE(&f->log, wd, NOTIFYX_DELETE_SELF, NULL);
	TU_NONE(&f->log, wd, NOTIFYX_IGNORED, NULL);
	TU_STREQ("notifyx_watch_path after MOVE_SELF", file, notifyx_watch_path(f->nx, wd));
}
ON_BOTH(self_file_moved)

int conf_roots_run(void)
{
	const struct CMUnitTest tests[] = {
		TEST_BOTH(moved_root),
		TEST_BOTH(moved_root_self),
		cmocka_unit_test_setup_teardown(unmount_lazy_busy, tu_setup, conf_teardown),
		TEST_BOTH(self_isdir),
		TEST_BOTH(self_file_moved),
	};

	return cmocka_run_group_tests_name("conformance: moved roots, umount -l, self events", tests,
					   NULL, NULL);
}
