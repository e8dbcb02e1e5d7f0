/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fanotify's ENODEV: notifyx_add_watch on a filesystem that fanotify cannot
 * mark fails with ENODEV and leaves the handle as it was (no watch, no mark,
 * no descriptor, no event; a later watch works, with the same kind of mark).
 *
 * Which filesystem.  On Linux 6.18 every filesystem this machine has gives
 * file handles (AT_HANDLE_FID), /proc and /sys included, and a filesystem id;
 * the one exception found is an overlay of lower layers only (no upper
 * layer): its statfs f_fsid is zero, which fanotify cannot tell apart from
 * other filesystems (the kernel allows only "weak" inode marks there, and no
 * filesystem mark: ENODEV).  So the test mounts a private tmpfs on /tmp and
 * such an overlay in a mount namespace of its own: as root in the initial
 * user namespace, else (user nobody) in a new user namespace, whose
 * capabilities it then drops, so that the library uses inode marks as any
 * unprivileged process.  Exit 77 when neither is possible here, or when the
 * overlay has a filesystem id after all.
 *
 * No file handles at all.  No filesystem here lacks them, so that case is
 * run through the fault shim (tests/fault/libfaultshim.so): when it is
 * preloaded (tests/fanotify-enodev.sh does it with
 * FAULT_KINDS=name_to_handle_at, FAULT_N=1 and a large FAULT_COUNT), the
 * shim is enabled only around the watch that must fail, and every
 * name_to_handle_at() of the library fails then with EOPNOTSUPP, what the
 * kernel says for a filesystem without handles; the directory is an
 * ordinary one.  The case of a filesystem below a tree needs a real one.
 *
 * Cases: an inode mark (a watch that is not recursive); a recursive watch
 * (root: filesystem marks, nobody: inode marks); a tree with such a
 * filesystem mounted below its root: the watch is set up with either kind
 * of mark, and the mount point is reported by NOTIFYX_ERROR with ENODEV
 * (notifyx(7), fanotify: "a filesystem mounted below the root that cannot
 * be marked is reported by NOTIFYX_ERROR"; notifyx_add_watch(3): ENODEV is
 * for the filesystem holding path).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "testutil.h"

#define F(state) ((struct tu_fix *)*(state))
/* The errno every failure here must give (mutation check: change it). */
#define WANT ENODEV
/* What main() mounts: an overlay of two lower layers at BAD, and another
 * one at TREE/sub, below an ordinary directory tree. */
#define TOP "/tmp/nodev"
#define BAD TOP "/bad"
#define TREE TOP "/tree"

static void (*shim_on)(void);  /* the fault shim's fault_enable, when preloaded */
static void (*shim_off)(void);
static bool fsmode;            /* the library gets filesystem marks here */

/* The fanotify marks of this process: filesystem ("fanotify sdev:") and
 * inode ("fanotify ino:") marks, from the fdinfo of its fanotify groups. */
static void marks(size_t *fs, size_t *ino)
{
	size_t n, i;
	int *fds = tu_fds(&n);
	char link[64], target[64], line[512];

	*fs = *ino = 0;
	for (i = 0; i < n; i++) {
		ssize_t len;
		FILE *f;

		snprintf(link, sizeof(link), "/proc/self/fd/%d", fds[i]);
		len = readlink(link, target, sizeof(target) - 1);
		if (len < 0 || (target[len] = '\0', !strstr(target, "fanotify")))
			continue;
		snprintf(link, sizeof(link), "/proc/self/fdinfo/%d", fds[i]);
		if (!(f = fopen(link, "re")))
			continue;
		while (fgets(line, sizeof(line), f)) {
			*fs += !strncmp(line, "fanotify sdev:", 14);
			*ino += !strncmp(line, "fanotify ino:", 13);
		}
		fclose(f);
	}
	free(fds);
}

/* The directory that cannot be marked: the overlay, or (shim) any. */
static const char *bad_dir(struct tu_fix *f)
{
	if (!shim_on)
		return BAD;
	tu_mkdir(tu_path(f->dir, "plain"));
	return tu_path(f->dir, "plain");
}

static int add_bad(struct tu_fix *f, const char *path, uint32_t flags)
{
	int wd, err;

	if (shim_on)
		shim_on();
	wd = notifyx_add_watch(f->nx, path, NOTIFYX_CREATE, flags);
	err = errno;
	if (shim_off)
		shim_off();
	errno = err;
	return wd;
}

/* The handle holds no watch, mark, descriptor or event more than before
 * (nfds descriptors); a watch on an ordinary directory then works. */
static void unchanged(struct tu_fix *f, size_t nfds, uint32_t flags)
{
	size_t n, fs, ino;
	bool fsm;
	int wd;

	free(tu_fds(&n));
	TU_EQ("descriptors after the failed watch", nfds, n);
	marks(&fs, &ino);
	TU_EQ("filesystem marks after the failed watch", 0, fs);
	TU_EQ("inode marks after the failed watch", 0, ino);
	for (wd = 1; wd <= 8; wd++) {
		TU_ERRNO(tu_fmt("notifyx_rm_watch(%d)", wd), notifyx_rm_watch(f->nx, wd) < 0, EINVAL);
		TU_ERRNO(tu_fmt("notifyx_watch_path(%d)", wd), !notifyx_watch_path(f->nx, wd), EINVAL);
	}
	TU_EQ("events queued by the failed watch", 0, tu_pull(&f->log));

	tu_mkdir(tu_path(f->dir, "good"));
	wd = tu_add(&f->log, tu_path(f->dir, "good"), NOTIFYX_CREATE, flags);
	marks(&fs, &ino);
	/* The failure did not make the handle give up filesystem marks (and
	 * marks() sees both kinds: its zeros above mean something). */
	fsm = fsmode && (flags & NOTIFYX_WATCH_RECURSIVE);
	TU_EQ("filesystem marks of the good watch", fsm, fs);
	/* Inode marks: the root's, and for a recursive watch the guard on
	 * its parent (it holds its root, whose deletion the parent reports). */
	TU_EQ("inode marks of the good watch", fsm ? 0 : 1 + !!(flags & NOTIFYX_WATCH_RECURSIVE),
	      ino);
	tu_touch(tu_path(f->dir, "good/f"));
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "f");
	tu_settle(&f->log);
	TU_EQ("events, all of the good watch", f->log.n, tu_count_wd(&f->log, wd));
}

static void inode_mark(void **state)
{
	struct tu_fix *f = F(state);
	const char *bad = bad_dir(f);
	size_t n;

	free(tu_fds(&n));
	TU_ERRNO("add_watch, not recursive", add_bad(f, bad, 0) < 0, WANT);
	unchanged(f, n, 0);
}

static void recursive(void **state)
{
	struct tu_fix *f = F(state);
	const char *bad = bad_dir(f);
	size_t n;

	free(tu_fds(&n));
	TU_ERRNO("add_watch, recursive", add_bad(f, bad, NOTIFYX_WATCH_RECURSIVE) < 0, WANT);
	unchanged(f, n, NOTIFYX_WATCH_RECURSIVE);
}

static void below_tree(void **state)
{
	struct tu_fix *f = F(state);
	size_t fs, ino, i;
	int wd;

	if (shim_on) {
		print_message("[ SKIP     ] the shim cannot fail one directory of a tree only\n");
		skip();
	}
	wd = tu_add(&f->log, TREE, NOTIFYX_CREATE, NOTIFYX_WATCH_RECURSIVE);
	i = TU_WAIT(&f->log, wd, NOTIFYX_ERROR, "sub");
	TU_EQ("error of NOTIFYX_ERROR \"sub\"", WANT, f->log.ev[i].error);
	marks(&fs, &ino);
	TU_EQ("filesystem marks: the tree's tmpfs only", fsmode, fs);
	TU_EQ("inode marks: tree, tree/d and the guard on its parent", fsmode ? 0 : 3, ino);
	/* The rest of the tree is watched. */
	tu_touch(TREE "/d/f");
	TU_WAIT(&f->log, wd, NOTIFYX_CREATE, "d/f");
	tu_settle(&f->log);
	TU_EQ("events of the tree", 2, tu_count_wd(&f->log, wd));
	tu_unlink(TREE "/d/f");
}

/* A private /tmp (tmpfs) in a mount namespace of this process, as root or
 * in a new user namespace; 0, or -1 with errno. */
static int private_tmp(void)
{
	char map[64];
	uid_t uid = geteuid();
	gid_t gid = getegid();
	FILE *f;

	if (uid && unshare(CLONE_NEWUSER) < 0)
		return -1;
	if (uid) {
		/* Maps this user to root of the namespace (as unshare -r). */
		static const char *const files[] = { "/proc/self/setgroups", "/proc/self/uid_map",
						     "/proc/self/gid_map" };
		for (int i = 0; i < 3; i++) {
			if (i == 0)
				snprintf(map, sizeof(map), "deny");
			else
				snprintf(map, sizeof(map), "0 %d 1", i == 1 ? (int)uid : (int)gid);
			if (!(f = fopen(files[i], "we")) || fputs(map, f) < 0 || fclose(f) != 0)
				return -1;
		}
	}
	if (unshare(CLONE_NEWNS) < 0 || mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -1;
	return mount("notifyx-test", "/tmp", "tmpfs", 0, "mode=1777,size=16m");
}

static int overlay(const char *at)
{
	mkdir(at, 0755);
	return mount("notifyx-test", at, "overlay", 0, "lowerdir=" TOP "/l1:" TOP "/l2");
}

/* Without any capability left, as user nobody outside. */
static int drop_caps(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };

	return (int)syscall(SYS_capset, &h, d);
}

/* True when this process may set filesystem marks on /tmp. */
static bool can_mark_fs(void)
{
	int fd = fanotify_init(FAN_CLASS_NOTIF | FAN_REPORT_FID | FAN_CLOEXEC, O_RDONLY);
	bool ok = fd >= 0 && fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM,
					   FAN_CREATE | FAN_ONDIR, AT_FDCWD, "/tmp") == 0;

	if (fd >= 0)
		close(fd);
	return ok;
}

int main(void)
{
	/* As root: filesystem marks, whatever the size of the tree (the
	 * library's policy takes inode marks for small trees; see fanotify-repair.c). */
	setenv("NOTIFYX_FANOTIFY_INODE_MAX", "0", 0);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(inode_mark, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(recursive, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(below_tree, tu_setup, tu_teardown),
	};
	bool user = geteuid() != 0;
	struct notifyx *nx;
	struct statfs sfs;

	/* Before any call of the library: the shim counts from its start. */
	if ((shim_off = (void (*)(void))dlsym(RTLD_DEFAULT, "fault_disable"))) {
		shim_off();
		shim_on = (void (*)(void))dlsym(RTLD_DEFAULT, "fault_enable");
	}
	if (private_tmp() < 0) {
		printf("SKIP: no private /tmp (mount or user namespace): %s\n", strerror(errno));
		return 77;
	}
	if (mkdir(TOP, 0755) < 0 || mkdir(TOP "/l1", 0755) < 0 || mkdir(TOP "/l2", 0755) < 0 ||
	    mkdir(TREE, 0755) < 0 || mkdir(TREE "/d", 0755) < 0) {
		printf("FAIL: mkdir in the private /tmp: %s\n", strerror(errno));
		return 1;
	}
	if (overlay(BAD) < 0 || overlay(TREE "/sub") < 0) {
		printf("SKIP: cannot mount an overlay of lower layers: %s\n", strerror(errno));
		return 77;
	}
	if (statfs(BAD, &sfs) < 0 || sfs.f_fsid.__val[0] || sfs.f_fsid.__val[1]) {
		printf("SKIP: the overlay has a filesystem id here: nothing fanotify cannot mark\n");
		return 77;
	}
	if (user && drop_caps() < 0) {
		printf("FAIL: capset: %s\n", strerror(errno));
		return 1;
	}
	tu_backend = NOTIFYX_BACKEND_FANOTIFY;
	nx = tu_open(NOTIFYX_NONBLOCK, 0);
	if (!nx) {
		printf("SKIP: the fanotify backend cannot start here: %s\n", strerror(errno));
		return 77;
	}
	notifyx_close(nx);
	fsmode = can_mark_fs();
	printf("fanotify-enodev: %s, %s; %s\n", user ? "user namespace" : "root",
	       fsmode ? "filesystem marks" : "inode marks",
	       shim_on ? "no file handles (fault shim)" : "zero fsid (overlay of lower layers)");
	return cmocka_run_group_tests_name("fanotify-enodev", tests, NULL, NULL) ? 1 : 0;
}
