/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Conformance test, watches: notifyx_add_watch's rules (wds never reused,
 * a path twice, overlapping recursive watches, bad arguments, files,
 * symlinks, the path's rules), notifyx_rm_watch, notifyx_exclude, and LIST
 * (the listing, its SYNC, a directory moved in).  Run from conformance.c's
 * main through conf_watch_run().
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conformance.h"

/* ---- watches ---- */

static void watch_wd_never_reused(void **state)
{
	struct tu_fix *f = F(state);
	int seen[64], i, j;

	tu_touch(tu_path(f->dir, "file"));
	for (i = 0; i < 64; i++) {
		const char *p = i % 2 ? f->dir : tu_path(f->dir, "file");

		seen[i] = tu_add(&f->log, p, NOTIFYX_ATTRIB, 0); /* tu_track fails on a reused wd */
		for (j = 0; j < i; j++)
			if (seen[j] == seen[i])
				fail_msg("wd %d reused", seen[i]);
		if (i % 3 != 2) {
			assert_int_equal(notifyx_rm_watch(f->nx, seen[i]), 0);
			if (i % 2)
				TU_WAIT(&f->log, seen[i], NOTIFYX_IGNORED, "");
		}
	}
}

static void watch_same_path_twice(void **state)
{
	struct tu_fix *f = F(state);
	int a = tu_add(&f->log, f->dir, NOTIFYX_CREATE, 0);
	int b = tu_add(&f->log, f->dir, NOTIFYX_CREATE | NOTIFYX_DELETE, 0);

	assert_int_not_equal(a, b);
	tu_touch(tu_path(f->dir, "f"));
	TU_WAIT(&f->log, a, NOTIFYX_CREATE, "f");
	TU_WAIT(&f->log, b, NOTIFYX_CREATE, "f");
	tu_unlink(tu_path(f->dir, "f"));
	TU_WAIT(&f->log, b, NOTIFYX_DELETE, "f");
	tu_settle(&f->log);
	TU_ONCE(&f->log, a, NOTIFYX_CREATE, "f", 0, 0);
	TU_ONCE(&f->log, b, NOTIFYX_CREATE, "f", 0, 0);
	TU_ONCE(&f->log, b, NOTIFYX_DELETE, "f", 0, 0);
	/* Removing one leaves the other receiving. */
	assert_int_equal(notifyx_rm_watch(f->nx, a), 0);
	tu_touch(tu_path(f->dir, "g"));
	TU_WAIT(&f->log, b, NOTIFYX_CREATE, "g");
	tu_settle(&f->log);
	TU_NONE(&f->log, a, NOTIFYX_CREATE, "g");
	TU_ONCE(&f->log, a, NOTIFYX_IGNORED, "", 0, 0);
	TU_NONE(&f->log, b, NOTIFYX_IGNORED, NULL);
}

static void watch_overlapping_recursive(void **state)
{
	struct tu_fix *f = F(state);
	int outer, inner, third;

	tu_mkdir(tu_path(f->dir, "sub"));
	tu_mkdir(tu_path(f->dir, "sub/deep"));
	outer = tu_add(&f->log, f->dir, NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE);
	inner = tu_add(&f->log, tu_path(f->dir, "sub"), NOTIFYX_CREATE | NOTIFYX_DELETE,
		       NOTIFYX_WATCH_RECURSIVE);
	tu_touch(tu_path(f->dir, "sub/deep/f"));
	TU_WAIT(&f->log, outer, NOTIFYX_CREATE, "sub/deep/f");
	TU_WAIT(&f->log, inner, NOTIFYX_CREATE, "deep/f");
	/* A third watch added on a shared directory takes nothing from the others. */
	third = tu_add(&f->log, tu_path(f->dir, "sub/deep"), NOTIFYX_DELETE, 0);
	tu_unlink(tu_path(f->dir, "sub/deep/f"));
	TU_WAIT(&f->log, inner, NOTIFYX_DELETE, "deep/f");
	TU_WAIT(&f->log, third, NOTIFYX_DELETE, "f");
	/* Removing the inner watch leaves the outer receiving, and vice versa. */
	assert_int_equal(notifyx_rm_watch(f->nx, inner), 0);
	tu_touch(tu_path(f->dir, "sub/deep/g"));
	TU_WAIT(&f->log, outer, NOTIFYX_CREATE, "sub/deep/g");
	assert_int_equal(notifyx_rm_watch(f->nx, outer), 0);
	tu_unlink(tu_path(f->dir, "sub/deep/g"));
	TU_WAIT(&f->log, third, NOTIFYX_DELETE, "g");
	tu_settle(&f->log);
	TU_ONCE(&f->log, outer, NOTIFYX_CREATE, "sub/deep/f", 0, 0);
	TU_ONCE(&f->log, inner, NOTIFYX_CREATE, "deep/f", 0, 0);
	TU_NONE(&f->log, inner, NOTIFYX_CREATE, "deep/g");
	TU_ONCE(&f->log, inner, NOTIFYX_IGNORED, "", 0, 0);
	TU_ONCE(&f->log, outer, NOTIFYX_IGNORED, "", 0, 0);
	TU_ONCE(&f->log, third, NOTIFYX_DELETE, "f", 0, 0);
	TU_ONCE(&f->log, third, NOTIFYX_DELETE, "g", 0, 0);
}

static void watch_bad_events_flags(void **state)
{
	struct tu_fix *f = F(state);
	uint32_t sup = notifyx_supported_events(f->nx);
	uint32_t badev[] = { 0, 0x2000, 0x8000, 0x80000000u, 0xffffffffu, NOTIFYX_OVERFLOW,
			     NOTIFYX_UNMOUNT, NOTIFYX_ERROR, NOTIFYX_IGNORED,
			     NOTIFYX_CREATE | NOTIFYX_IGNORED, NOTIFYX_CREATE | NOTIFYX_OVERFLOW,
			     NOTIFYX_CREATE | 0x100000 };
	uint32_t badfl[] = { 0x80, 0x100, 0x200, 0x80000000u, 0xffffffffu };
	size_t i;
	int wd;

	for (i = 0; i < sizeof badev / sizeof badev[0]; i++)
		TU_ERRNO(tu_fmt("add_watch events %#x", badev[i]),
			 notifyx_add_watch(f->nx, f->dir, badev[i], 0) == -1, EINVAL);
	for (i = 0; i < sizeof badfl / sizeof badfl[0]; i++)
		TU_ERRNO(tu_fmt("add_watch flags %#x", badfl[i]),
			 notifyx_add_watch(f->nx, f->dir, NOTIFYX_CREATE, badfl[i]) == -1, EINVAL);
	/* Every supported subset works. */
	wd = tu_add(&f->log, f->dir, sup, 0);
	assert_int_equal(notifyx_rm_watch(f->nx, wd), 0);
	for (i = 0; i < 13; i++) {
		uint32_t bit = 1u << i;

		if (sup & bit) {
			wd = tu_add(&f->log, f->dir, bit, 0);
			assert_int_equal(notifyx_rm_watch(f->nx, wd), 0);
		} else {
			TU_ERRNO(tu_fmt("add_watch with unsupported %s", tu_mask_str(bit)),
				 notifyx_add_watch(f->nx, f->dir, bit, 0) == -1, EOPNOTSUPP);
			TU_ERRNO(tu_fmt("add_watch with CREATE|unsupported %s", tu_mask_str(bit)),
				 notifyx_add_watch(f->nx, f->dir, bit | NOTIFYX_CREATE, 0) == -1,
				 EOPNOTSUPP);
		}
	}
	if (sup == NOTIFYX_ALL_EVENTS)
		print_message("  note: the %s backend supports every type: the EOPNOTSUPP part "
			      "has nothing to check\n", notifyx_backend_name(notifyx_backend(f->nx)));
	/* The handle still works. */
	wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE, 0);
	tu_touch(tu_path(f->dir, "ok"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "ok");
}

static void watch_enotdir(void **state)
{
	struct tu_fix *f = F(state);
	const char *file = tu_path(f->dir, "file");
	uint32_t fl[] = { NOTIFYX_WATCH_RECURSIVE, NOTIFYX_WATCH_ONLYDIR, NOTIFYX_WATCH_LIST,
			  NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST };
	size_t i;

	tu_touch(file);
	for (i = 0; i < sizeof fl / sizeof fl[0]; i++)
		TU_ERRNO(tu_fmt("add_watch on a file with flags %#x", fl[i]),
			 notifyx_add_watch(f->nx, file, NOTIFYX_CREATE | NOTIFYX_MODIFY, fl[i]) == -1,
			 ENOTDIR);
	/* ONLYDIR on a directory is fine. */
	tu_add(&f->log, f->dir, NOTIFYX_CREATE, NOTIFYX_WATCH_ONLYDIR);
	/* A symbolic link to a file with ONLYDIR: the target is not a directory. */
	tu_symlink("file", tu_path(f->dir, "ln"));
	TU_ERRNO("add_watch ONLYDIR on a link to a file",
		 notifyx_add_watch(f->nx, tu_path(f->dir, "ln"), NOTIFYX_CREATE,
				   NOTIFYX_WATCH_ONLYDIR) == -1, ENOTDIR);
}

static void watch_file(void **state)
{
	struct tu_fix *f = F(state);
	const char *file = tu_path(f->dir, "file");
	int wd;

	tu_write(file, "x");
	wd = tu_add(&f->log, file, NOTIFYX_MODIFY | NOTIFYX_ATTRIB, 0);
	tu_sleep_ms(20); /* a new mtime second is not needed: size changes too */
	tu_write(file, "more");
	TU_WAIT(&f->log, wd, NOTIFYX_MODIFY, "");
	assert_int_equal(chmod(file, 0600), 0);
	TU_WAIT(&f->log, wd, NOTIFYX_ATTRIB, "");
	/* A sibling changing is not this watch's business. */
	tu_write(tu_path(f->dir, "other"), "y");
	tu_settle(&f->log);
	{
		size_t i;

		for (i = 0; i < f->log.n; i++)
			if (f->log.ev[i].wd == wd && f->log.ev[i].path[0])
				fail_msg("a file watch reported path \"%s\" (expected \"\")",
					 f->log.ev[i].path);
	}
}

static void watch_nofollow(void **state)
{
	struct tu_fix *f = F(state);
	const char *target = tu_path(f->dir, "target");
	const char *ln = tu_path(f->dir, "ln");
	int follow, nofollow;

	tu_write(target, "x");
	tu_symlink("target", ln);
	follow = tu_add(&f->log, ln, NOTIFYX_MODIFY | NOTIFYX_ATTRIB, 0);
	nofollow = tu_add(&f->log, ln, NOTIFYX_MODIFY | NOTIFYX_ATTRIB, NOTIFYX_WATCH_NOFOLLOW);
	tu_write(target, "more");
	TU_WAIT(&f->log, follow, NOTIFYX_MODIFY, "");
	if (geteuid() == 0) {
		/* The link itself changes owner: only the NOFOLLOW watch sees it. */
		assert_int_equal(lchown(ln, 1, 1), 0);
		TU_WAIT(&f->log, nofollow, NOTIFYX_ATTRIB, "");
	} else {
		print_message("  note: not root: the link's own ATTRIB is not checked\n");
	}
	tu_settle(&f->log);
	TU_NONE(&f->log, nofollow, NOTIFYX_MODIFY, NULL);
	TU_NONE(&f->log, follow, NOTIFYX_ATTRIB, NULL);
	/* Without NOFOLLOW a dangling link is ENOENT; with it, the link is watched. */
	tu_symlink("nowhere", tu_path(f->dir, "dangling"));
	TU_ERRNO("add_watch on a dangling link without NOFOLLOW",
		 notifyx_add_watch(f->nx, tu_path(f->dir, "dangling"), NOTIFYX_ATTRIB, 0) == -1,
		 ENOENT);
	tu_add(&f->log, tu_path(f->dir, "dangling"), NOTIFYX_ATTRIB, NOTIFYX_WATCH_NOFOLLOW);
	/* A directory reached through a link with NOFOLLOW is not a directory. */
	tu_mkdir(tu_path(f->dir, "d"));
	tu_symlink("d", tu_path(f->dir, "dl"));
	TU_ERRNO("add_watch RECURSIVE|NOFOLLOW on a link to a directory",
		 notifyx_add_watch(f->nx, tu_path(f->dir, "dl"), NOTIFYX_CREATE,
				   NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_NOFOLLOW) == -1, ENOTDIR);
}

static void watch_symlinks_in_tree(void **state)
{
	struct tu_fix *f = F(state);
	char *outside = tu_mkdtemp();
	int wd;
	size_t i;

	tu_mkdir(tu_path(f->dir, "d"));
	tu_symlink(outside, tu_path(f->dir, "pre-out"));
	tu_symlink("d", tu_path(f->dir, "pre-in"));
	wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "pre-out");
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "pre-in");
	tu_symlink(outside, tu_path(f->dir, "out"));
	tu_symlink("d", tu_path(f->dir, "in"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "out");
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "in");
	tu_touch(tu_path(outside, "x"));
	tu_touch(tu_path(f->dir, "d/y"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "d/y");
	tu_settle(&f->log);
	for (i = 0; i < f->log.n; i++) {
		const struct tu_ev *e = &f->log.ev[i];

		if (e->wd != wd)
			continue;
		if (strstr(e->path, "out") == e->path || strstr(e->path, "pre-") == e->path ||
		    !strcmp(e->path, "in")) {
			if (strchr(e->path, '/')) {
				tu_dump(&f->log, "actual");
				fail_msg("event \"%s\": a symbolic link inside the tree was followed",
					 e->path);
			}
			if (e->flags & NOTIFYX_EVENT_ISDIR) {
				tu_dump(&f->log, "actual");
				fail_msg("symbolic link \"%s\" reported with ISDIR", e->path);
			}
		}
		if (!strncmp(e->path, "in/", 3)) {
			tu_dump(&f->log, "actual");
			fail_msg("event \"%s\" through a link", e->path);
		}
	}
	TU_ONCE(&f->log, wd, NOTIFYX_CREATE, "d/y", NOTIFYX_EVENT_ISDIR, 0);
	tu_rm_rf(outside);
	free(outside);
}

static void watch_path_rules(void **state)
{
	struct tu_fix *f = F(state);
	char passed[PATH_MAX];
	const char *p;
	int wd, rel;
	char cwd[PATH_MAX];

	tu_mkdir(tu_path(f->dir, "root"));
	snprintf(passed, sizeof passed, "%s//root/./", f->dir);
	wd = tu_add(&f->log, passed, NOTIFYX_CREATE | NOTIFYX_MOVE_SELF, 0);
	memset(passed, 'x', 10); /* the library keeps its own copy */
	p = notifyx_watch_path(f->nx, wd);
	TU_STREQ("notifyx_watch_path as passed", tu_fmt("%s//root/./", f->dir), p);
	/* A relative path stays relative. */
	assert_non_null(getcwd(cwd, sizeof cwd));
	assert_int_equal(chdir(f->dir), 0);
	rel = tu_add(&f->log, "root", NOTIFYX_CREATE, 0);
	assert_int_equal(chdir(cwd), 0);
	TU_STREQ("notifyx_watch_path of a relative path", "root", notifyx_watch_path(f->nx, rel));
	tu_touch(tu_path(f->dir, "root/f"));
	TU_WAIT(&f->log, rel, NOTIFYX_CREATE, "f");
	/* After MOVE_SELF: still the path as passed. */
	tu_rename(tu_path(f->dir, "root"), tu_path(f->dir, "moved"));
	TU_WAIT(&f->log, wd, NOTIFYX_MOVE_SELF, "");
	TU_STREQ("notifyx_watch_path after MOVE_SELF", tu_fmt("%s//root/./", f->dir),
		 notifyx_watch_path(f->nx, wd));
	tu_touch(tu_path(f->dir, "moved/g"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "g");
	/* After rm_watch, until IGNORED is read: same string, still valid. */
	p = notifyx_watch_path(f->nx, wd);
	assert_int_equal(notifyx_rm_watch(f->nx, wd), 0);
	TU_STREQ("notifyx_watch_path after rm_watch, before IGNORED is read",
		 tu_fmt("%s//root/./", f->dir), notifyx_watch_path(f->nx, wd));
	TU_STREQ("the string returned before rm_watch, before IGNORED is read",
		 tu_fmt("%s//root/./", f->dir), p);
	TU_WAIT(&f->log, wd, NOTIFYX_IGNORED, "");
	TU_ERRNO("notifyx_watch_path after IGNORED was read", notifyx_watch_path(f->nx, wd) == NULL,
		 EINVAL);
	TU_ERRNO("notifyx_watch_path(0)", notifyx_watch_path(f->nx, 0) == NULL, EINVAL);
	TU_ERRNO("notifyx_watch_path(-1)", notifyx_watch_path(f->nx, -1) == NULL, EINVAL);
	TU_ERRNO("notifyx_watch_path(unknown)", notifyx_watch_path(f->nx, 999999) == NULL, EINVAL);
}

static void watch_rm_twice(void **state)
{
	struct tu_fix *f = F(state);
	int wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE, 0);

	assert_int_equal(notifyx_rm_watch(f->nx, wd), 0);
	TU_ERRNO("second rm_watch (before IGNORED is read)", notifyx_rm_watch(f->nx, wd) == -1,
		 EINVAL);
	TU_WAIT(&f->log, wd, NOTIFYX_IGNORED, "");
	TU_ERRNO("third rm_watch (after IGNORED)", notifyx_rm_watch(f->nx, wd) == -1, EINVAL);
}

static void watch_rm_after_end(void **state)
{
	struct tu_fix *f = F(state);
	const char *root = tu_path(f->dir, "root");
	int del, one;

	tu_mkdir(root);
	del = tu_add(&f->log, root, NOTIFYX_CREATE, 0);
	one = tu_add(&f->log, f->dir, NOTIFYX_CREATE, NOTIFYX_WATCH_ONESHOT);
	tu_rmdir(root);
	tu_touch(tu_path(f->dir, "fire"));
	TU_WAIT(&f->log, del, NOTIFYX_IGNORED, "");
	TU_WAIT(&f->log, one, NOTIFYX_IGNORED, "");
	TU_ERRNO("rm_watch after the root was deleted", notifyx_rm_watch(f->nx, del) == -1, EINVAL);
	TU_ERRNO("rm_watch after a ONESHOT watch fired", notifyx_rm_watch(f->nx, one) == -1, EINVAL);
}

/* ---- exclude ---- */

static void exclude_name(void **state)
{
	struct tu_fix *f = F(state);
	int wd;

	assert_int_equal(notifyx_exclude(f->nx, "*.tmp"), 0);
	wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE);
	tu_touch(tu_path(f->dir, "a.tmp"));
	tu_touch(tu_path(f->dir, "a.txt"));
	tu_mkdir(tu_path(f->dir, "sub"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "sub");
	tu_touch(tu_path(f->dir, "sub/b.tmp"));
	tu_touch(tu_path(f->dir, "sub/b.txt"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "sub/b.txt");
	tu_settle(&f->log);
	TU_ONCE(&f->log, wd, NOTIFYX_CREATE, "a.txt", 0, 0);
	TU_NONE(&f->log, wd, 0, "a.tmp");
	TU_NONE(&f->log, wd, 0, "sub/b.tmp");
}

static void exclude_slash(void **state)
{
	struct tu_fix *f = F(state);
	int wd;

	tu_mkdir(tu_path(f->dir, "sub"));
	tu_mkdir(tu_path(f->dir, "sub/deeper"));
	assert_int_equal(notifyx_exclude(f->nx, "sub/*.o"), 0);
	wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE);
	tu_touch(tu_path(f->dir, "sub/x.o"));
	tu_touch(tu_path(f->dir, "sub/deeper/y.o")); /* '*' does not match '/' (FNM_PATHNAME) */
	tu_touch(tu_path(f->dir, "z.o"));
	tu_touch(tu_path(f->dir, "sub/x.c"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "sub/x.c");
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "sub/deeper/y.o");
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "z.o");
	tu_settle(&f->log);
	TU_NONE(&f->log, wd, 0, "sub/x.o");
	TU_ONCE(&f->log, wd, NOTIFYX_CREATE, "sub/deeper/y.o", 0, 0);
}

static void exclude_dir_not_entered(void **state)
{
	struct tu_fix *f = F(state);
	int wd;
	size_t i;

	tu_mkdir(tu_path(f->dir, "skip"));
	tu_mkdir(tu_path(f->dir, "skip/in"));
	tu_mkdir(tu_path(f->dir, "keep"));
	assert_int_equal(notifyx_exclude(f->nx, "skip"), 0);
	assert_int_equal(notifyx_exclude(f->nx, "later"), 0);
	wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE | NOTIFYX_DELETE,
		    NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "keep");
	tu_touch(tu_path(f->dir, "skip/f"));
	tu_touch(tu_path(f->dir, "skip/in/g"));
	tu_mkdir(tu_path(f->dir, "later"));
	tu_touch(tu_path(f->dir, "later/h"));
	tu_touch(tu_path(f->dir, "keep/k"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "keep/k");
	tu_rm_rf(tu_path(f->dir, "skip"));
	tu_settle(&f->log);
	for (i = 0; i < f->log.n; i++)
		if (!strncmp(f->log.ev[i].path, "skip", 4) || !strncmp(f->log.ev[i].path, "later", 5)) {
			tu_dump(&f->log, "actual");
			fail_msg("event for excluded \"%s\"", f->log.ev[i].path);
		}
}

static void exclude_only_later_watches(void **state)
{
	struct tu_fix *f = F(state);
	int before, after;

	before = tu_add(&f->log, f->dir, NOTIFYX_CREATE, 0);
	assert_int_equal(notifyx_exclude(f->nx, "*.tmp"), 0);
	after = tu_add(&f->log, f->dir, NOTIFYX_CREATE, 0);
	tu_touch(tu_path(f->dir, "a.tmp"));
	tu_touch(tu_path(f->dir, "b"));
	TU_WAIT(&f->log, before, NOTIFYX_CREATE, "a.tmp");
	TU_WAIT(&f->log, after, NOTIFYX_CREATE, "b");
	tu_settle(&f->log);
	TU_NONE(&f->log, after, 0, "a.tmp");
	TU_ONCE(&f->log, before, NOTIFYX_CREATE, "b", 0, 0);
}

/* ---- LIST ---- */

static void list_tree(void **state)
{
	struct tu_fix *f = F(state);
	static const char *const dirs[] = { "a", "a/b", "a/b/c", "e" };
	static const char *const files[] = { "a/b/c/f", "a/g", "top" };
	int wd, flat;
	size_t i;

	for (i = 0; i < 4; i++)
		tu_mkdir(tu_path(f->dir, dirs[i]));
	for (i = 0; i < 3; i++)
		tu_touch(tu_path(f->dir, files[i]));
	wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	flat = tu_add(&f->log, f->dir, NOTIFYX_CREATE, NOTIFYX_WATCH_LIST);
	tu_settle(&f->log);
	for (i = 0; i < 4; i++)
		TU_ONCE(&f->log, wd, NOTIFYX_CREATE, dirs[i],
			NOTIFYX_EVENT_SYNTHETIC | NOTIFYX_EVENT_ISDIR,
			NOTIFYX_EVENT_SYNTHETIC | NOTIFYX_EVENT_ISDIR);
	for (i = 0; i < 3; i++)
		TU_ONCE(&f->log, wd, NOTIFYX_CREATE, files[i],
			NOTIFYX_EVENT_SYNTHETIC | NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_SYNTHETIC);
	TU_BEFORE(&f->log, tu_find(&f->log, 0, wd, NOTIFYX_CREATE, "a"),
		  tu_find(&f->log, 0, wd, NOTIFYX_CREATE, "a/b"), "parent a before a/b");
	TU_BEFORE(&f->log, tu_find(&f->log, 0, wd, NOTIFYX_CREATE, "a/b"),
		  tu_find(&f->log, 0, wd, NOTIFYX_CREATE, "a/b/c"), "parent a/b before a/b/c");
	TU_BEFORE(&f->log, tu_find(&f->log, 0, wd, NOTIFYX_CREATE, "a/b/c"),
		  tu_find(&f->log, 0, wd, NOTIFYX_CREATE, "a/b/c/f"), "parent a/b/c before a/b/c/f");
	TU_BEFORE(&f->log, tu_find(&f->log, 0, wd, NOTIFYX_CREATE, "a"),
		  tu_find(&f->log, 0, wd, NOTIFYX_CREATE, "a/g"), "parent a before a/g");
	/* One SYNC once the listing is complete, after every CREATE of it. */
	TU_BEFORE(&f->log, tu_find(&f->log, 0, wd, NOTIFYX_CREATE, "a/b/c/f"),
		  TU_ONCE(&f->log, wd, NOTIFYX_SYNC, "", 0, 0), "the listing before its SYNC");
	TU_BEFORE(&f->log, tu_find(&f->log, 0, wd, NOTIFYX_CREATE, "top"),
		  tu_find(&f->log, 0, wd, NOTIFYX_SYNC, ""), "the listing before its SYNC");
	TU_EQ("events of the recursive LIST watch", 8, tu_count_wd(&f->log, wd));
	/* Non-recursive: the directory's own entries only. */
	TU_ONCE(&f->log, flat, NOTIFYX_CREATE, "a", NOTIFYX_EVENT_SYNTHETIC | NOTIFYX_EVENT_ISDIR,
		NOTIFYX_EVENT_SYNTHETIC | NOTIFYX_EVENT_ISDIR);
	TU_ONCE(&f->log, flat, NOTIFYX_CREATE, "e", NOTIFYX_EVENT_SYNTHETIC | NOTIFYX_EVENT_ISDIR,
		NOTIFYX_EVENT_SYNTHETIC | NOTIFYX_EVENT_ISDIR);
	TU_ONCE(&f->log, flat, NOTIFYX_CREATE, "top", NOTIFYX_EVENT_SYNTHETIC | NOTIFYX_EVENT_ISDIR,
		NOTIFYX_EVENT_SYNTHETIC);
	TU_ONCE(&f->log, flat, NOTIFYX_SYNC, "", 0, 0);
	TU_EQ("events of the flat LIST watch", 4, tu_count_wd(&f->log, flat));
	/* A later creation is an ordinary one, reported once. */
	tu_touch(tu_path(f->dir, "a/b/new"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "a/b/new");
	tu_settle(&f->log);
	TU_ONCE(&f->log, wd, NOTIFYX_CREATE, "a/b/new", 0, 0);
	if (!f->log.scanning)
		TU_ONCE(&f->log, wd, NOTIFYX_CREATE, "a/b/new", NOTIFYX_EVENT_SYNTHETIC, 0);
}

static void list_args(void **state)
{
	struct tu_fix *f = F(state);

	tu_touch(tu_path(f->dir, "file"));
	TU_ERRNO("LIST without CREATE",
		 notifyx_add_watch(f->nx, f->dir, NOTIFYX_DELETE | NOTIFYX_MODIFY,
				   NOTIFYX_WATCH_LIST) == -1, EINVAL);
	TU_ERRNO("LIST|RECURSIVE without CREATE",
		 notifyx_add_watch(f->nx, f->dir, NOTIFYX_MOVED_IN,
				   NOTIFYX_WATCH_LIST | NOTIFYX_WATCH_RECURSIVE) == -1, EINVAL);
	TU_ERRNO("LIST with ONESHOT",
		 notifyx_add_watch(f->nx, f->dir, NOTIFYX_CREATE,
				   NOTIFYX_WATCH_LIST | NOTIFYX_WATCH_ONESHOT) == -1, EINVAL);
	TU_ERRNO("LIST on a file",
		 notifyx_add_watch(f->nx, tu_path(f->dir, "file"), NOTIFYX_CREATE,
				   NOTIFYX_WATCH_LIST) == -1, ENOTDIR);
	TU_ERRNO("SYNC requested",
		 notifyx_add_watch(f->nx, f->dir, NOTIFYX_CREATE | NOTIFYX_SYNC,
				   NOTIFYX_WATCH_LIST) == -1, EINVAL);
}

/* SYNC: once after the initial listing, even of an empty tree; never for a
 * watch without LIST. */
static void list_sync(void **state)
{
	struct tu_fix *f = F(state);
	int empty, plain, wd;

	empty = tu_add(&f->log, f->dir, NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	plain = tu_add(&f->log, f->dir, NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE);
	TU_WAIT(&f->log, empty, NOTIFYX_SYNC, "");
	tu_mkdir(tu_path(f->dir, "d"));
	tu_touch(tu_path(f->dir, "d/f"));
	TU_WAIT(&f->log, plain, NOTIFYX_CREATE, "d/f");
	TU_WAIT(&f->log, empty, NOTIFYX_CREATE, "d/f");
	wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE, NOTIFYX_WATCH_LIST);
	TU_WAIT(&f->log, wd, NOTIFYX_SYNC, "");
	tu_settle(&f->log);
	TU_ONCE(&f->log, empty, NOTIFYX_SYNC, "", 0, 0);
	TU_NONE(&f->log, plain, NOTIFYX_SYNC, TU_ANY_PATH);
	TU_BEFORE(&f->log, TU_ONCE(&f->log, wd, NOTIFYX_CREATE, "d", 0, 0),
		  TU_ONCE(&f->log, wd, NOTIFYX_SYNC, "", 0, 0), "the listing before its SYNC");
	TU_EQ("events of the flat LIST watch", 2, tu_count_wd(&f->log, wd));
}

static void list_moved_in(void **state)
{
	struct tu_fix *f = F(state);
	char *outside = tu_mkdtemp();
	int wd;

	tu_mkdir(tu_path(outside, "m"));
	tu_mkdir(tu_path(outside, "m/n"));
	tu_touch(tu_path(outside, "m/n/f"));
	tu_touch(tu_path(outside, "m/g"));
	wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE | NOTIFYX_MOVED_IN,
		    NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	tu_settle(&f->log);
	TU_EQ("events of a LIST watch on an empty directory (its SYNC)", 1, tu_count_wd(&f->log, wd));
	TU_ONCE(&f->log, wd, NOTIFYX_SYNC, "", 0, 0);
	tu_rename(tu_path(outside, "m"), tu_path(f->dir, "m"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "m/n/f");
	tu_settle(&f->log);
	if (f->log.scanning)
		TU_ONCE(&f->log, wd, NOTIFYX_CREATE, "m", NOTIFYX_EVENT_ISDIR, NOTIFYX_EVENT_ISDIR);
	else
		TU_ONCE(&f->log, wd, NOTIFYX_MOVED_IN, "m", NOTIFYX_EVENT_ISDIR | NOTIFYX_EVENT_SYNTHETIC,
			NOTIFYX_EVENT_ISDIR);
	TU_ONCE(&f->log, wd, NOTIFYX_CREATE, "m/n", NOTIFYX_EVENT_ISDIR | NOTIFYX_EVENT_SYNTHETIC,
		NOTIFYX_EVENT_ISDIR | NOTIFYX_EVENT_SYNTHETIC);
	TU_ONCE(&f->log, wd, NOTIFYX_CREATE, "m/n/f", NOTIFYX_EVENT_ISDIR | NOTIFYX_EVENT_SYNTHETIC,
		NOTIFYX_EVENT_SYNTHETIC);
	TU_ONCE(&f->log, wd, NOTIFYX_CREATE, "m/g", NOTIFYX_EVENT_ISDIR | NOTIFYX_EVENT_SYNTHETIC,
		NOTIFYX_EVENT_SYNTHETIC);
	TU_BEFORE(&f->log, tu_find(&f->log, 0, wd, NOTIFYX_CREATE | NOTIFYX_MOVED_IN, "m"),
		  tu_find(&f->log, 0, wd, NOTIFYX_CREATE, "m/n"), "m before m/n");
	TU_BEFORE(&f->log, tu_find(&f->log, 0, wd, NOTIFYX_CREATE, "m/n"),
		  tu_find(&f->log, 0, wd, NOTIFYX_CREATE, "m/n/f"), "m/n before m/n/f");
	tu_rm_rf(outside);
	free(outside);
}

int conf_watch_run(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(watch_wd_never_reused, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(watch_same_path_twice, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(watch_overlapping_recursive, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(watch_bad_events_flags, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(watch_enotdir, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(watch_file, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(watch_nofollow, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(watch_symlinks_in_tree, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(watch_path_rules, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(watch_rm_twice, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(watch_rm_after_end, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(exclude_name, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(exclude_slash, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(exclude_dir_not_entered, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(exclude_only_later_watches, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(list_tree, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(list_sync, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(list_args, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(list_moved_in, tu_setup, tu_teardown),
	};

	return cmocka_run_group_tests_name("conformance: watches, exclude, LIST", tests, NULL, NULL);
}
