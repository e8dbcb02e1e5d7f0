/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The fanotify backend when every read of its queue returns one record: the
 * kernel ends a read wherever the buffer is full, so any two records can be
 * split by a read, and the backend must wait for the second FAN_RENAME of
 * an exchange whenever a read ends just after the first (--wrap=read makes
 * each read return exactly one record).
 *
 * A plain rename, then an exchange of a watched name with an excluded one
 * (*.tmp), queued before the library reads: API.md asks for the rename,
 * then MOVED_OUT then MOVED_IN of the watched name.  The wait after the
 * rename's record finds the queue not empty; the exchange's first record,
 * read alone next, must still be waited for (it was not, once a wait had
 * been made in the same call: the exchange came out as MOVED_IN then
 * MOVED_OUT, and a mirror lost the entry).  Inode marks, and the filesystem
 * mark on a tmpfs of the test's own (in a mount namespace of its own: on
 * /tmp it would hear every other test's files).  Exit 77 without fanotify;
 * without root, inode marks only.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/fanotify.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cmocka.h>

#include "notifyx.h"
#include "unitsh.h"

#define QUIET_MS 300

ssize_t __real_read(int fd, void *buf, size_t count);
ssize_t __wrap_read(int fd, void *buf, size_t count);

static bool one_record;

static bool is_fanotify(int fd)
{
	char link[64], target[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		return false;
	target[n] = '\0';
	return strstr(target, "fanotify") != NULL;
}

/* fanotify copies whole records while they fit and fails with EINVAL, taking
 * nothing, when the first does not: the smallest count that succeeds reads
 * exactly one record (records are 4-byte aligned). */
ssize_t __wrap_read(int fd, void *buf, size_t count)
{
	if (!one_record || !is_fanotify(fd))
		return __real_read(fd, buf, count);
	for (size_t c = FAN_EVENT_METADATA_LEN; c <= count; c += 4) {
		ssize_t n = __real_read(fd, buf, c);
		if (n >= 0 || errno != EINVAL)
			return n;
	}
	errno = EINVAL;
	return -1;
}

/* Reads events until none came for QUIET_MS; returns them as lines
 * "MASK PATH" (MASK: rename, moved_out, moved_in, other) in out. */
static void collect(struct notifyx *nx, char *out, size_t size)
{
	static char buf[65536] __attribute__((aligned(8)));
	struct pollfd p = { .fd = notifyx_fd(nx), .events = POLLIN };
	size_t used = 0;

	out[0] = '\0';
	for (;;) {
		ssize_t len = notifyx_read(nx, buf, sizeof(buf));
		if (len < 0) {
			assert_int_equal(errno, EAGAIN);
			if (poll(&p, 1, QUIET_MS) <= 0)
				return;
			continue;
		}
		for (const struct notifyx_event *e = (const void *)buf; (const char *)e < buf + len;
		     e = notifyx_event_next(e)) {
			const char *what = e->mask == NOTIFYX_RENAME	 ? "rename"
					   : e->mask == NOTIFYX_MOVED_OUT ? "moved_out"
					   : e->mask == NOTIFYX_MOVED_IN  ? "moved_in"
									  : "other";
			used += (size_t)snprintf(out + used, size - used, "%s %s\n", what,
						 notifyx_event_path(e));
			assert_true(used < size);
		}
	}
}

static void test_split(void **state)
{
	const char *inode_max = *state;
	struct notifyx_config cfg = { .size = sizeof(cfg), .backend = NOTIFYX_BACKEND_FANOTIFY,
				      .flags = NOTIFYX_NONBLOCK };
	char base[] = "/tmp/nx-fsplit.XXXXXX", got[4096], from[64], to[64];
	struct notifyx *nx;

	assert_non_null(mkdtemp(base));
	if (!strcmp(inode_max, "0")) {
		assert_int_equal(unshare(CLONE_NEWNS), 0);
		assert_int_equal(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
		assert_int_equal(mount("nx-fsplit", base, "tmpfs", 0, "size=1m"), 0);
	}
	unit_sh("cd %s && touch a y y.tmp", base);
	setenv("NOTIFYX_FANOTIFY_INODE_MAX", inode_max, 1);
	nx = notifyx_open(&cfg);
	unsetenv("NOTIFYX_FANOTIFY_INODE_MAX");
	assert_non_null(nx);
	assert_int_equal(notifyx_exclude(nx, "*.tmp"), 0);
	assert_true(notifyx_add_watch(nx, base, NOTIFYX_RENAME | NOTIFYX_MOVED_OUT | NOTIFYX_MOVED_IN,
				      NOTIFYX_WATCH_RECURSIVE) > 0);
	collect(nx, got, sizeof(got));

	unit_sh("cd %s && mv a b", base);
	snprintf(from, sizeof(from), "%s/y.tmp", base);
	snprintf(to, sizeof(to), "%s/y", base);
	assert_int_equal(renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_EXCHANGE), 0);
	one_record = true;
	collect(nx, got, sizeof(got));
	one_record = false;
	assert_string_equal(got, "rename b\nmoved_out y\nmoved_in y\n");

	assert_int_equal(notifyx_close(nx), 0);
	if (!strcmp(inode_max, "0"))
		assert_int_equal(umount(base), 0);
	unit_sh("rm -rf %s", base);
}

int main(void)
{
	const struct CMUnitTest inode[] = {
		{ "inode marks", test_split, NULL, NULL, (void *)"1000000" },
	};
	const struct CMUnitTest fs[] = {
		{ "filesystem mark", test_split, NULL, NULL, (void *)"0" },
	};
	struct notifyx_config cfg = { .size = sizeof(cfg), .backend = NOTIFYX_BACKEND_FANOTIFY };
	struct notifyx *nx = notifyx_open(&cfg);
	int failed;

	if (!nx) {
		printf("SKIP: no fanotify backend here: %s\n", strerror(errno));
		return 77;
	}
	notifyx_close(nx);
	failed = cmocka_run_group_tests(inode, NULL, NULL);
	if (geteuid() != 0) {
		printf("SKIP: the filesystem mark needs root (inode marks tested)\n");
		return failed;
	}
	return failed + cmocka_run_group_tests(fs, NULL, NULL);
}
