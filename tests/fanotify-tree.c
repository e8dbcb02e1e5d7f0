/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What is specific to the fanotify backend's recursive watches: as root they
 * use one filesystem mark per filesystem (everything on it is reported to the
 * library, which must keep to the tree), unprivileged an inode mark per
 * directory.  Run as root (tests/fanotify-tree) and as user nobody
 * (tests/fanotify-tree-user.sh); the tmpfs cases need root.
 *
 * - activity elsewhere on the same filesystem, however busy, never leaks
 *   into the watch (also not after directories move around outside);
 * - renames of directories above the root leave its paths unchanged;
 * - renames below the root, of directories never named by an event before,
 *   give the paths of the moment of each event, also when the renames are
 *   queued far behind the events (filesystem marks: more than a read);
 * - a directory moved in from outside and one moved out;
 * - a directory moved in and one of its subdirectories renamed elsewhere in
 *   the tree before the library reads: a RENAME, also for a watch that walks;
 * - a directory made, a file made and removed in it, and the directory
 *   removed before the library reads: all four, the directory's removal last,
 *   also with a rename between them and another process busy beside the
 *   tree (the library reads on for the rename's possible second half);
 * - two filesystems mounted inside one tree, and XDEV keeping out of them;
 * - exchanges (renameat2 RENAME_EXCHANGE) of two files and of two
 *   directories are one RENAME with EXCHANGE, with and without LIST (the
 *   identifiers of the objects moved tell an exchange from two renames);
 * - a recursive LIST watch added after a recursive watch of the same tree
 *   takes no event from it (watches are independent);
 * - a file made, exchanged away and back, and removed before the library
 *   reads (the kernel merges its removal into its creation, ahead of the
 *   exchanges): the removal still comes last;
 * - the deletion of a recursive root (which the library holds open) is
 *   reported after a watch of its parent was added and removed.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#define F(state) ((struct tu_fix *)*(state))
#define TREE (NOTIFYX_CREATE | NOTIFYX_DELETE | NOTIFYX_RENAME | NOTIFYX_MOVED_IN | \
	      NOTIFYX_MOVED_OUT | NOTIFYX_MODIFY | NOTIFYX_ATTRIB | NOTIFYX_CLOSE_WRITE)

/* Every event read is of wd and names a path that is in want (NULL-ended). */
static void only_these(const struct tu_log *log, int wd, const char *const *want)
{
	for (size_t i = 0; i < log->n; i++) {
		const struct tu_ev *e = &log->ev[i];
		size_t j;

		for (j = 0; want[j] && strcmp(want[j], e->path); j++)
			;
		if (e->wd != wd || !want[j]) {
			tu_dump(log, "actual");
			fail_msg("event #%zu (wd %d, \"%s\") is not one of the tree's", i, e->wd,
				 e->path);
		}
	}
}

static void no_leak_elsewhere(void **state)
{
	struct tu_fix *f = F(state);
	static const char *const want[] = { "marker", NULL };
	int wd, i;

	tu_mkdir(tu_path(f->dir, "tree"));
	tu_mkdir(tu_path(f->dir, "tree/sub"));
	tu_mkdir(tu_path(f->dir, "other"));
	tu_mkdir(tu_path(f->dir, "other/deep"));
	wd = tu_add(&f->log, tu_path(f->dir, "tree"), TREE, NOTIFYX_WATCH_RECURSIVE);
	/* Busy elsewhere: files, directories made, renamed, moved, removed. */
	for (i = 0; i < 300; i++) {
		tu_write(tu_path(f->dir, tu_fmt("other/f%d", i)), "x");
		tu_mkdir(tu_path(f->dir, tu_fmt("other/d%d", i)));
		tu_touch(tu_path(f->dir, tu_fmt("other/d%d/g", i)));
		tu_rename(tu_path(f->dir, tu_fmt("other/d%d", i)),
			  tu_path(f->dir, tu_fmt("other/deep/e%d", i)));
		tu_touch(tu_path(f->dir, tu_fmt("other/deep/e%d/h", i)));
		tu_write(tu_path(f->dir, tu_fmt("sibling%d", i % 7)), "y");
		if (i % 50 == 49)
			tu_pull(&f->log);
	}
	tu_rm_rf(tu_path(f->dir, "other"));
	tu_write(tu_path(f->dir, "tree/marker"), "m");
	TU_WAIT(&f->log, wd, NOTIFYX_CLOSE_WRITE, "marker");
	tu_settle(&f->log);
	only_these(&f->log, wd, want);
	TU_ONCE(&f->log, wd, NOTIFYX_CREATE, "marker", 0, 0);
}

static void rename_above_root(void **state)
{
	struct tu_fix *f = F(state);
	static const char *const want[] = { "x/y", "z", NULL };
	int wd;

	tu_mkdir(tu_path(f->dir, "a"));
	tu_mkdir(tu_path(f->dir, "a/b"));
	tu_mkdir(tu_path(f->dir, "a/b/root"));
	tu_mkdir(tu_path(f->dir, "a/b/root/x"));
	wd = tu_add(&f->log, tu_path(f->dir, "a/b/root"), NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE);
	tu_rename(tu_path(f->dir, "a"), tu_path(f->dir, "a2"));
	tu_rename(tu_path(f->dir, "a2/b"), tu_path(f->dir, "b2"));
	tu_touch(tu_path(f->dir, "b2/root/x/y"));
	tu_touch(tu_path(f->dir, "b2/root/z"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "x/y");
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "z");
	tu_settle(&f->log);
	only_these(&f->log, wd, want);
	TU_STREQ("notifyx_watch_path after the renames above it",
		 tu_path(f->dir, "a/b/root"), notifyx_watch_path(f->nx, wd));
}

static void rename_below_root(void **state)
{
	struct tu_fix *f = F(state);
	int wd;

	tu_mkdir(tu_path(f->dir, "p"));
	tu_mkdir(tu_path(f->dir, "p/q"));
	tu_mkdir(tu_path(f->dir, "p/q/r"));
	wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE | NOTIFYX_RENAME, NOTIFYX_WATCH_RECURSIVE);
	/* Events in directories no event named before, each followed at once
	 * by a rename of a directory above them: the paths are those of the
	 * moment of each event, read after all of it happened. */
	tu_touch(tu_path(f->dir, "p/q/r/f1"));
	tu_rename(tu_path(f->dir, "p"), tu_path(f->dir, "p2"));
	tu_touch(tu_path(f->dir, "p2/q/r/f2"));
	tu_rename(tu_path(f->dir, "p2/q"), tu_path(f->dir, "q3"));
	tu_touch(tu_path(f->dir, "q3/r/f3"));
	tu_rename(tu_path(f->dir, "q3/r"), tu_path(f->dir, "p2/r4"));
	tu_touch(tu_path(f->dir, "p2/r4/f4"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "p2/r4/f4");
	tu_settle(&f->log);
	TU_SEQ(&f->log, wd, NOTIFYX_CREATE, "p/q/r/f1", NOTIFYX_RENAME, "p2",
	       NOTIFYX_CREATE, "p2/q/r/f2", NOTIFYX_RENAME, "q3", NOTIFYX_CREATE, "q3/r/f3",
	       NOTIFYX_RENAME, "p2/r4", NOTIFYX_CREATE, "p2/r4/f4", 0u);
}

/* Files made outside the tree: with a filesystem mark, more records than
 * one read of the library's takes (64 KiB) are queued between an event and
 * what follows it. */
static void busy_outside(struct tu_fix *f, int round)
{
	for (int i = 0; i < 3000; i++)
		tu_touch(tu_path(f->dir, tu_fmt("o/r%d-%d", round, i)));
}

static void rename_below_root_far(void **state)
{
	struct tu_fix *f = F(state);
	int wd;

	tu_mkdir(tu_path(f->dir, "o"));
	tu_mkdir(tu_path(f->dir, "t"));
	tu_mkdir(tu_path(f->dir, "t/p"));
	tu_mkdir(tu_path(f->dir, "t/p/q"));
	tu_mkdir(tu_path(f->dir, "t/p/q/r"));
	wd = tu_add(&f->log, tu_path(f->dir, "t"), NOTIFYX_CREATE | NOTIFYX_RENAME,
		    NOTIFYX_WATCH_RECURSIVE);
	/* As rename_below_root, with the renames far behind the events in the
	 * queue: the library reads ahead for them. */
	tu_touch(tu_path(f->dir, "t/p/q/r/f1"));
	busy_outside(f, 1);
	tu_rename(tu_path(f->dir, "t/p"), tu_path(f->dir, "t/p2"));
	tu_touch(tu_path(f->dir, "t/p2/q/r/f2"));
	busy_outside(f, 2);
	tu_rename(tu_path(f->dir, "t/p2/q"), tu_path(f->dir, "t/q3"));
	tu_touch(tu_path(f->dir, "t/q3/r/f3"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "q3/r/f3");
	tu_settle(&f->log);
	TU_SEQ(&f->log, wd, NOTIFYX_CREATE, "p/q/r/f1", NOTIFYX_RENAME, "p2",
	       NOTIFYX_CREATE, "p2/q/r/f2", NOTIFYX_RENAME, "q3", NOTIFYX_CREATE, "q3/r/f3", 0u);
}

static void moved_in_and_out(void **state)
{
	struct tu_fix *f = F(state);
	int wd;

	tu_mkdir(tu_path(f->dir, "tree"));
	tu_mkdir(tu_path(f->dir, "tree/leaving"));
	tu_mkdir(tu_path(f->dir, "out"));
	tu_mkdir(tu_path(f->dir, "out/coming"));
	tu_mkdir(tu_path(f->dir, "out/coming/in"));
	wd = tu_add(&f->log, tu_path(f->dir, "tree"), NOTIFYX_CREATE | NOTIFYX_MOVED_IN |
		    NOTIFYX_MOVED_OUT, NOTIFYX_WATCH_RECURSIVE);
	/* Known outside first (an event there), then moved in. */
	tu_touch(tu_path(f->dir, "out/coming/in/before"));
	tu_touch(tu_path(f->dir, "tree/leaving/x"));
	tu_rename(tu_path(f->dir, "out/coming"), tu_path(f->dir, "tree/came"));
	tu_rename(tu_path(f->dir, "tree/leaving"), tu_path(f->dir, "out/left"));
	/* What is made in a directory moved in before the library watches it
	 * is implied by its MOVED_IN (API.md): wait until it is read. */
	TU_WAIT(&f->log, wd, NOTIFYX_MOVED_OUT, "leaving");
	tu_touch(tu_path(f->dir, "tree/came/in/after"));
	tu_touch(tu_path(f->dir, "out/left/gone"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "came/in/after");
	tu_settle(&f->log);
	TU_SEQ(&f->log, wd, NOTIFYX_CREATE, "leaving/x", NOTIFYX_MOVED_IN, "came",
	       NOTIFYX_MOVED_OUT, "leaving", NOTIFYX_CREATE, "came/in/after", 0u);
}

/* A directory moved in, then one of its subdirectories renamed elsewhere
 * in the tree, both before the library reads: the subdirectory left a
 * place the watch saw arrive (implied by the MOVED_IN), so that is a
 * RENAME, for a watch that walks its tree (RESCAN: the walk of the
 * arrival, made after the rename, does not have it) as for one that does
 * not.  Inode marks hear nothing of a directory before they mark it: a
 * lone MOVED_IN there. */
static void renamed_out_of_arrival(void **state)
{
	struct tu_fix *f = F(state);
	const uint32_t ev = NOTIFYX_CREATE | NOTIFYX_DELETE | NOTIFYX_RENAME |
			    NOTIFYX_MOVED_IN | NOTIFYX_MOVED_OUT;
	int wd[2];

	if (geteuid()) {
		print_message("[ SKIP     ] inode marks (not root): the old place is unmarked\n");
		skip();
	}
	tu_mkdir(tu_path(f->dir, "t"));
	tu_mkdir(tu_path(f->dir, "t/other"));
	tu_mkdir(tu_path(f->dir, "out"));
	tu_mkdir(tu_path(f->dir, "out/d"));
	tu_mkdir(tu_path(f->dir, "out/d/s"));
	tu_touch(tu_path(f->dir, "out/d/s/f"));
	wd[0] = tu_add(&f->log, tu_path(f->dir, "t"), ev, NOTIFYX_WATCH_RECURSIVE);
	wd[1] = tu_add(&f->log, tu_path(f->dir, "t"), ev,
		       NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_RESCAN);
	tu_rename(tu_path(f->dir, "out/d"), tu_path(f->dir, "t/d"));
	tu_rename(tu_path(f->dir, "t/d/s"), tu_path(f->dir, "t/other/s2"));
	tu_touch(tu_path(f->dir, "t/other/s2/g"));
	for (int i = 0; i < 2; i++)
		TU_WAIT(&f->log, wd[i], NOTIFYX_CREATE, "other/s2/g");
	tu_settle(&f->log);
	for (int i = 0; i < 2; i++) {
		TU_SEQ(&f->log, wd[i], NOTIFYX_MOVED_IN, "d", NOTIFYX_RENAME, "other/s2",
		       NOTIFYX_CREATE, "other/s2/g", 0u);
		size_t r = TU_ONCE(&f->log, wd[i], NOTIFYX_RENAME, "other/s2",
				    NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_ISDIR);
		TU_STREQ("the old path", "d/s", f->log.ev[r].old_path);
	}
}

/* A process renaming a file beside the tree (renames are never merged)
 * until it is killed: it keeps the kernel queue busy. */
static pid_t busy_renames(struct tu_fix *f)
{
	char a[PATH_MAX], b[PATH_MAX];
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid > 0)
		return pid;
	snprintf(a, sizeof a, "%s/o/a", f->dir);
	snprintf(b, sizeof b, "%s/o/b", f->dir);
	close(open(a, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	for (int n = 0; n < 1000000; n++)
		rename(n % 2 ? b : a, n % 2 ? a : b);
	_exit(0);
}

/* A directory made, a file made and removed in it, and the directory
 * removed, all before the library reads: the kernel merges the directory's
 * deletion into its creation, one record ahead of the file's.  A watch
 * that walks its tree (RESCAN), alone in its handle, and one that does not
 * each report all four, the directory's deletion last.  Inode marks never
 * mark it: they hear of no file in it.  across: with a rename between the
 * directory's records and its file's, while another process keeps the
 * queue busy: the library stops at the rename to read on for an exchange's
 * second half, and the deferred deletion of the directory outlives the
 * batch (it used to be reported there, ahead of the file's records, which
 * then named a directory gone: they were lost). */
static void made_and_removed(struct tu_fix *f, bool across)
{
	static const uint32_t flags[] = { NOTIFYX_WATCH_RESCAN, 0 };

	if (geteuid()) {
		print_message("[ SKIP     ] inode marks (not root): the directory is never marked\n");
		skip();
	}
	tu_mkdir(tu_path(f->dir, "o"));
	tu_mkdir(tu_path(f->dir, "t"));
	tu_touch(tu_path(f->dir, "t/x0"));
	for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
		int wd = tu_add(&f->log, tu_path(f->dir, "t"), NOTIFYX_CREATE | NOTIFYX_DELETE |
				(across ? NOTIFYX_RENAME : 0), NOTIFYX_WATCH_RECURSIVE | flags[i]);
		char to[16];
		pid_t busy = 0;
		snprintf(to, sizeof to, "x%zu", i + 1);
		tu_mkdir(tu_path(f->dir, "t/d"));
		if (across)
			tu_rename(tu_path(f->dir, tu_fmt("t/x%zu", i)),
				  tu_path(f->dir, tu_fmt("t/%s", to)));
		tu_touch(tu_path(f->dir, "t/d/f"));
		tu_unlink(tu_path(f->dir, "t/d/f"));
		tu_rmdir(tu_path(f->dir, "t/d"));
		if (across) {
			busy = busy_renames(f);
			usleep(20000);
		}
		TU_WAIT(&f->log, wd, NOTIFYX_DELETE, "d");
		tu_settle(&f->log);
		if (busy) {
			kill(busy, SIGKILL);
			waitpid(busy, NULL, 0);
			TU_SEQ(&f->log, wd, NOTIFYX_CREATE, "d", NOTIFYX_RENAME, to,
			       NOTIFYX_CREATE, "d/f", NOTIFYX_DELETE, "d/f", NOTIFYX_DELETE, "d", 0u);
		} else {
			TU_SEQ(&f->log, wd, NOTIFYX_CREATE, "d", NOTIFYX_CREATE, "d/f",
			       NOTIFYX_DELETE, "d/f", NOTIFYX_DELETE, "d", 0u);
		}
		assert_int_equal(notifyx_rm_watch(f->nx, wd), 0);
		TU_WAIT(&f->log, wd, NOTIFYX_IGNORED, "");
	}
}

static void made_and_removed_unread(void **state)
{
	made_and_removed(F(state), false);
}

static void made_and_removed_across_reads(void **state)
{
	made_and_removed(F(state), true);
}

static void two_filesystems(void **state)
{
	struct tu_fix *f = F(state);
	const char *m1, *m2;
	int wd, xdev;

	tu_require_root("mounting private tmpfs filesystems");
	tu_mkdir(tu_path(f->dir, "sub"));
	m1 = tu_mount_tmpfs(f, "m1");
	m2 = tu_mount_tmpfs(f, "sub/m2");
	tu_mkdir(tu_path(m1, "d"));
	wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE | NOTIFYX_DELETE, NOTIFYX_WATCH_RECURSIVE);
	xdev = tu_add(&f->log, f->dir, NOTIFYX_CREATE | NOTIFYX_DELETE,
		      NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_XDEV);
	tu_touch(tu_path(m1, "d/f1"));
	tu_touch(tu_path(m2, "f2"));
	tu_mkdir(tu_path(m2, "new"));
	tu_touch(tu_path(m2, "new/f3"));
	tu_unlink(tu_path(m1, "d/f1"));
	tu_touch(tu_path(f->dir, "sub/top"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "sub/top");
	TU_WAIT(&f->log, xdev, NOTIFYX_CREATE, "sub/top");
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "sub/m2/new/f3");
	tu_settle(&f->log);
	/* fanotify may merge the creation and the deletion of f1 (one entry,
	 * unread): they then come together, in that order. */
	TU_ONCE(&f->log, wd, NOTIFYX_CREATE, "m1/d/f1", NOTIFYX_EVENT_ISDIR, 0);
	TU_ONCE(&f->log, wd, NOTIFYX_DELETE, "m1/d/f1", NOTIFYX_EVENT_ISDIR, 0);
	TU_BEFORE(&f->log, tu_find(&f->log, 0, wd, NOTIFYX_CREATE, "m1/d/f1"),
		  tu_find(&f->log, 0, wd, NOTIFYX_DELETE, "m1/d/f1"), "f1 made, then removed");
	TU_ONCE(&f->log, wd, NOTIFYX_CREATE, "sub/m2/f2", NOTIFYX_EVENT_ISDIR, 0);
	TU_ONCE(&f->log, wd, NOTIFYX_CREATE, "sub/m2/new", NOTIFYX_EVENT_ISDIR,
		NOTIFYX_EVENT_ISDIR);
	TU_ONCE(&f->log, wd, NOTIFYX_CREATE, "sub/m2/new/f3", NOTIFYX_EVENT_ISDIR, 0);
	TU_ONCE(&f->log, wd, NOTIFYX_CREATE, "sub/top", NOTIFYX_EVENT_ISDIR, 0);
	TU_EQ("events of the watch", 6, tu_count_wd(&f->log, wd));
	TU_SEQ(&f->log, xdev, NOTIFYX_CREATE, "sub/top", 0u);
}

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

static void exchange(struct tu_fix *f, const char *a, const char *b)
{
	if (syscall(SYS_renameat2, AT_FDCWD, tu_path(f->dir, a), AT_FDCWD, tu_path(f->dir, b),
		    RENAME_EXCHANGE) < 0) {
		if (errno == EINVAL || errno == ENOSYS) {
			print_message("[ SKIP     ] renameat2(RENAME_EXCHANGE): %s\n", strerror(errno));
			skip();
		}
		fail_msg("renameat2(%s, %s): %s", a, b, strerror(errno));
	}
}

/* Exactly one RENAME path <- old with EXCHANGE (and ISDIR when dir) from
 * index from on, for wd. */
static void one_exchange(const struct tu_log *log, size_t from, int wd, const char *path,
			 const char *old, int dir)
{
	size_t n = 0;

	for (size_t i = from; i < log->n; i++) {
		const struct tu_ev *e = &log->ev[i];
		if (e->wd != wd)
			continue;
		if (e->mask != NOTIFYX_RENAME || strcmp(e->path, path) || !e->old_path ||
		    strcmp(e->old_path, old) ||
		    (e->flags & (NOTIFYX_EVENT_EXCHANGE | NOTIFYX_EVENT_ISDIR)) !=
			    (NOTIFYX_EVENT_EXCHANGE | (dir ? NOTIFYX_EVENT_ISDIR : 0))) {
			tu_dump(log, "actual");
			fail_msg("wd %d, event #%zu: expected only RENAME %s <- %s EXCHANGE%s", wd, i,
				 path, old, dir ? " ISDIR" : "");
		}
		n++;
	}
	if (n != 1) {
		tu_dump(log, "actual");
		fail_msg("wd %d: %zu RENAME EXCHANGE events, expected 1", wd, n);
	}
}

static void exchanges(void **state)
{
	struct tu_fix *f = F(state);
	int plain, list;
	size_t from;

	tu_mkdir(tu_path(f->dir, "t"));
	tu_mkdir(tu_path(f->dir, "t/d1"));
	tu_mkdir(tu_path(f->dir, "t/d2"));
	tu_write(tu_path(f->dir, "t/a"), "a");
	tu_write(tu_path(f->dir, "t/d1/b"), "b");
	plain = tu_add(&f->log, tu_path(f->dir, "t"), TREE, NOTIFYX_WATCH_RECURSIVE);
	list = tu_add(&f->log, tu_path(f->dir, "t"), TREE,
		      NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	tu_settle(&f->log);
	/* Two files in two directories. */
	from = f->log.n;
	exchange(f, "t/a", "t/d1/b");
	TU_WAIT_FROM(&f->log, from, plain, NOTIFYX_RENAME, TU_ANY_PATH);
	TU_WAIT_FROM(&f->log, from, list, NOTIFYX_RENAME, TU_ANY_PATH);
	tu_settle(&f->log);
	one_exchange(&f->log, from, plain, "d1/b", "a", 0);
	one_exchange(&f->log, from, list, "d1/b", "a", 0);
	/* Two directories: each is watched under its new name. */
	from = f->log.n;
	exchange(f, "t/d1", "t/d2");
	TU_WAIT_FROM(&f->log, from, plain, NOTIFYX_RENAME, TU_ANY_PATH);
	TU_WAIT_FROM(&f->log, from, list, NOTIFYX_RENAME, TU_ANY_PATH);
	tu_settle(&f->log);
	one_exchange(&f->log, from, plain, "d2", "d1", 1);
	one_exchange(&f->log, from, list, "d2", "d1", 1);
	from = f->log.n;
	tu_touch(tu_path(f->dir, "t/d2/in-old-d1"));
	TU_WAIT_FROM(&f->log, from, plain, NOTIFYX_CREATE, "d2/in-old-d1");
	TU_WAIT_FROM(&f->log, from, list, NOTIFYX_CREATE, "d2/in-old-d1");
}

static void independent_watches(void **state)
{
	struct tu_fix *f = F(state);
	int first, list;
	size_t from;

	tu_mkdir(tu_path(f->dir, "t"));
	tu_mkdir(tu_path(f->dir, "t/s"));
	tu_mkdir(tu_path(f->dir, "t/s/u"));
	first = tu_add(&f->log, tu_path(f->dir, "t"), TREE, NOTIFYX_WATCH_RECURSIVE);
	tu_touch(tu_path(f->dir, "t/s/before"));
	TU_WAIT(&f->log, first, NOTIFYX_CREATE, "s/before");
	list = tu_add(&f->log, tu_path(f->dir, "t"), TREE,
		      NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	tu_settle(&f->log);
	from = f->log.n;
	tu_touch(tu_path(f->dir, "t/s/f"));
	tu_touch(tu_path(f->dir, "t/s/u/g"));
	tu_touch(tu_path(f->dir, "t/h"));
	TU_WAIT_FROM(&f->log, from, list, NOTIFYX_CREATE, "h");
	TU_WAIT_FROM(&f->log, from, first, NOTIFYX_CREATE, "h");
	tu_settle(&f->log);
	TU_ONCE(&f->log, first, NOTIFYX_CREATE, "s/f", NOTIFYX_EVENT_SYNTHETIC, 0);
	TU_ONCE(&f->log, first, NOTIFYX_CREATE, "s/u/g", NOTIFYX_EVENT_SYNTHETIC, 0);
	TU_ONCE(&f->log, list, NOTIFYX_CREATE, "s/f", NOTIFYX_EVENT_SYNTHETIC, 0);
	TU_ONCE(&f->log, list, NOTIFYX_CREATE, "s/u/g", NOTIFYX_EVENT_SYNTHETIC, 0);
}

static void merged_delete_after_exchanges(void **state)
{
	struct fan_seq { uint32_t mask; const char *path; } want[] = {
		{ NOTIFYX_CREATE, "f" }, { NOTIFYX_RENAME, "d" }, { NOTIFYX_RENAME, "f" },
		{ NOTIFYX_DELETE, "f" },
	};
	struct tu_fix *f = F(state);
	size_t n = 0;
	int wd;

	tu_mkdir(tu_path(f->dir, "t"));
	tu_mkdir(tu_path(f->dir, "t/d"));
	wd = tu_add(&f->log, tu_path(f->dir, "t"), NOTIFYX_CREATE | NOTIFYX_DELETE | NOTIFYX_RENAME,
		    NOTIFYX_WATCH_RECURSIVE);
	tu_touch(tu_path(f->dir, "t/f"));
	exchange(f, "t/f", "t/d");
	exchange(f, "t/d", "t/f");
	tu_unlink(tu_path(f->dir, "t/f"));
	TU_WAIT(&f->log, wd, NOTIFYX_DELETE, "f");
	tu_settle(&f->log);
	for (size_t i = 0; i < f->log.n; i++) {
		const struct tu_ev *e = &f->log.ev[i];
		if (e->wd != wd)
			continue;
		if (n >= 4 || e->mask != want[n].mask || strcmp(e->path, want[n].path)) {
			tu_dump(&f->log, "actual");
			fail_msg("event #%zu: expected CREATE f, RENAME d, RENAME f, DELETE f in order", i);
		}
		n++;
	}
	TU_EQ("events of the watch", 4, n);
}

static void root_deleted_after_parent_watch(void **state)
{
	struct tu_fix *f = F(state);
	int root, parent;

	tu_mkdir(tu_path(f->dir, "t"));
	tu_mkdir(tu_path(f->dir, "t/r"));
	root = tu_add(&f->log, tu_path(f->dir, "t/r"), NOTIFYX_DELETE_SELF, NOTIFYX_WATCH_RECURSIVE);
	parent = tu_add(&f->log, tu_path(f->dir, "t"), NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE);
	assert_int_equal(notifyx_rm_watch(f->nx, parent), 0);
	TU_WAIT(&f->log, parent, NOTIFYX_IGNORED, "");
	tu_rmdir(tu_path(f->dir, "t/r"));
	TU_WAIT(&f->log, root, NOTIFYX_IGNORED, "");
	tu_settle(&f->log);
	TU_SEQ(&f->log, root, NOTIFYX_DELETE_SELF, "", NOTIFYX_IGNORED, "", 0u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(no_leak_elsewhere, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(rename_above_root, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(rename_below_root, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(rename_below_root_far, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(moved_in_and_out, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(renamed_out_of_arrival, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(made_and_removed_unread, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(made_and_removed_across_reads, tu_setup,
						tu_teardown),
		cmocka_unit_test_setup_teardown(two_filesystems, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(exchanges, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(independent_watches, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(merged_delete_after_exchanges, tu_setup,
						tu_teardown),
		cmocka_unit_test_setup_teardown(root_deleted_after_parent_watch, tu_setup,
						tu_teardown),
	};

	/* As root: filesystem marks, whatever the size of the tree (the
	 * library's policy takes inode marks for small trees; see fanotify-repair.c). */
	setenv("NOTIFYX_FANOTIFY_INODE_MAX", "0", 0);
	struct notifyx *nx;

	tu_backend = NOTIFYX_BACKEND_FANOTIFY;
	nx = tu_open(NOTIFYX_NONBLOCK, 0);
	if (!nx) {
		printf("SKIP: the fanotify backend cannot start here: %s\n", strerror(errno));
		return 77;
	}
	notifyx_close(nx);
	printf("fanotify-tree: uid %d (%s)\n", (int)geteuid(),
	       geteuid() ? "inode marks" : "filesystem marks");
	return cmocka_run_group_tests_name("fanotify-tree", tests, NULL, NULL) ? 1 : 0;
}
