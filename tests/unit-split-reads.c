/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel backends when a read of the kernel queue ends inside a rename:
 * the kernel ends a read wherever its queue is empty at that moment, which
 * on another CPU can be between any two records of a rename in progress, so
 * a backend must wait for the rest of a rename whenever a read may have cut
 * it (--wrap=read makes the reads of an inotify or fanotify descriptor
 * return the numbers of records a plan gives, then whatever is queued).
 *
 * A plain rename, then an exchange of a watched name with an excluded one
 * (*.tmp), queued before the library reads: API.md asks for the rename,
 * then MOVED_OUT then MOVED_IN of the watched name.
 *   fanotify, one record a read: the wait after the rename's record finds
 *   the queue not empty, and the exchange's first FAN_RENAME, read alone
 *   next, must still be waited for (it was not, once a wait had been made
 *   in the same call: MOVED_IN came before MOVED_OUT, and a mirror lost the
 *   entry).
 *   inotify, the first read ending after the exchange's first pair
 *   (MOVED_FROM y.tmp, MOVED_TO y): the reverse pair may still come (it was
 *   taken for a plain move in, then a move out); and its old name is found
 *   in the dentry cache without the directory's lock, so looking it up does
 *   not wait for the rename to be over.
 * Then two directories the watch sees, exchanged, the first read ending
 * after the first inotify pair (one FAN_RENAME on fanotify): one RENAME
 * flagged EXCHANGE (it came out on inotify as "rename dz <- dx", "rename
 * dx <- dz", after which a copy has one directory, not two).
 *
 * inotify; fanotify with inode marks, and with the filesystem mark on a
 * tmpfs of the test's own (in a mount namespace of its own: on /tmp it
 * would hear every other test's files).  A backend that cannot start here
 * is skipped with the reason; exit 77 when none can.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cmocka.h>

#include "notifyx.h"
#include "unitsh.h"

#define QUIET_MS 300

ssize_t __real_read(int fd, void *buf, size_t count);
ssize_t __wrap_read(int fd, void *buf, size_t count);

/* Records per read, in order, for the reads that return some; then reads
 * return whatever is queued. */
static const int *plan;
static size_t plan_left;

static bool kernel_queue(int fd)
{
	char link[64], target[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		return false;
	target[n] = '\0';
	return strstr(target, "fanotify") || strstr(target, "inotify");
}

/* inotify and fanotify copy whole records while they fit and fail with
 * EINVAL, taking nothing, when the first does not: the smallest count that
 * succeeds reads exactly one record (records are 4-byte aligned). */
static ssize_t read_one(int fd, char *buf, size_t count)
{
	for (size_t c = 4; c <= count; c += 4) {
		ssize_t n = __real_read(fd, buf, c);
		if (n >= 0 || errno != EINVAL)
			return n;
	}
	errno = EINVAL;
	return -1;
}

ssize_t __wrap_read(int fd, void *buf, size_t count)
{
	size_t got = 0;

	if (!plan_left || !kernel_queue(fd))
		return __real_read(fd, buf, count);
	for (int k = 0; k < *plan; k++) {
		ssize_t n = read_one(fd, (char *)buf + got, count - got);
		if (n <= 0 && !got)
			return n;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	plan++;
	plan_left--;
	return (ssize_t)got;
}

/* Reads events until none came for QUIET_MS; returns them as lines
 * "WHAT PATH" in out. */
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
			const char *old = notifyx_event_old_path(e);
			used += (size_t)snprintf(out + used, size - used, "%s%s %s%s%s\n", what,
						 e->flags & NOTIFYX_EVENT_EXCHANGE ? " exchange" : "",
						 notifyx_event_path(e), old ? " <- " : "", old ? old : "");
			assert_true(used < size);
		}
	}
}

/* Exchanges base/a and base/b, then reads what comes, the reads of the
 * kernel queue ended by plan (len steps), as lines into out. */
static void exchange_read(struct notifyx *nx, const char *base, const char *a, const char *b,
			  const int *steps, size_t len, char *out, size_t size)
{
	char from[64], to[64];

	snprintf(from, sizeof(from), "%s/%s", base, a);
	snprintf(to, sizeof(to), "%s/%s", base, b);
	assert_int_equal(renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_EXCHANGE), 0);
	plan = steps;
	plan_left = len;
	collect(nx, out, size);
	plan_left = 0;
}

struct mode {
	uint32_t backend;
	const char *inode_max; /* fanotify: NOTIFYX_FANOTIFY_INODE_MAX, "0" a filesystem mark */
	const int *plan;       /* records per read: the rename and the exchange with *.tmp */
	size_t plan_len;
	const int *plan2;      /* the exchange of two directories */
	size_t plan2_len;
};

static void test_split(void **state)
{
	const struct mode *m = *state;
	bool fs_mark = m->inode_max && !strcmp(m->inode_max, "0");
	struct notifyx_config cfg = { .size = sizeof(cfg), .backend = m->backend,
				      .flags = NOTIFYX_NONBLOCK };
	char base[] = "/tmp/nx-split.XXXXXX", got[4096];
	struct notifyx *nx;

	assert_non_null(mkdtemp(base));
	if (fs_mark) {
		assert_int_equal(unshare(CLONE_NEWNS), 0);
		assert_int_equal(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
		assert_int_equal(mount("nx-split", base, "tmpfs", 0, "size=1m"), 0);
	}
	unit_sh("cd %s && touch a y y.tmp", base);
	if (m->inode_max)
		setenv("NOTIFYX_FANOTIFY_INODE_MAX", m->inode_max, 1);
	nx = notifyx_open(&cfg);
	unsetenv("NOTIFYX_FANOTIFY_INODE_MAX");
	assert_non_null(nx);
	assert_int_equal(notifyx_exclude(nx, "*.tmp"), 0);
	assert_true(notifyx_add_watch(nx, base, NOTIFYX_RENAME | NOTIFYX_MOVED_OUT | NOTIFYX_MOVED_IN,
				      NOTIFYX_WATCH_RECURSIVE) > 0);
	collect(nx, got, sizeof(got));

	unit_sh("cd %s && mv a b", base);
	exchange_read(nx, base, "y.tmp", "y", m->plan, m->plan_len, got, sizeof(got));
	assert_string_equal(got, "rename b <- a\nmoved_out y\nmoved_in y\n");

	/* Two directories the watch sees, exchanged: one event (taken apart,
	 * a rename and a rename back, a copy would lose one of them). */
	unit_sh("cd %s && mkdir dx dz", base);
	collect(nx, got, sizeof(got));
	exchange_read(nx, base, "dx", "dz", m->plan2, m->plan2_len, got, sizeof(got));
	assert_string_equal(got, "rename exchange dz <- dx\n");

	assert_int_equal(notifyx_close(nx), 0);
	if (fs_mark)
		assert_int_equal(umount(base), 0);
	unit_sh("rm -rf %s", base);
}

/* Runs the test of mode m, or says why it cannot run here; 1 when it ran. */
static int run(const char *name, const struct mode *m, int *failed)
{
	struct notifyx_config cfg = { .size = sizeof(cfg), .backend = m->backend };
	struct notifyx *nx = notifyx_open(&cfg);
	const struct CMUnitTest t[] = { { name, test_split, NULL, NULL, (void *)m } };

	if (!nx) {
		printf("SKIP: %s: the backend does not start here: %s\n", name, strerror(errno));
		return 0;
	}
	notifyx_close(nx);
	if (m->inode_max && !strcmp(m->inode_max, "0") && geteuid() != 0) {
		printf("SKIP: %s: needs root\n", name);
		return 0;
	}
	*failed += cmocka_run_group_tests_name(name, t, NULL, NULL);
	return 1;
}

int main(void)
{
	/* inotify: the rename's two records and the exchange's first pair;
	 * fanotify: one record a read (a rename is one record, an exchange
	 * two). */
	static const int first_pairs[] = { 4 }, first_pair[] = { 2 },
			 singles[] = { 1, 1, 1, 1, 1, 1, 1, 1 };
	static const struct mode
		inotify = { NOTIFYX_BACKEND_INOTIFY, NULL, first_pairs, 1, first_pair, 1 },
		fan_inode = { NOTIFYX_BACKEND_FANOTIFY, "1000000", singles, 8, singles, 8 },
		fan_fs = { NOTIFYX_BACKEND_FANOTIFY, "0", singles, 8, singles, 8 };
	int failed = 0, ran = 0;

	ran += run("inotify", &inotify, &failed);
	ran += run("fanotify, inode marks", &fan_inode, &failed);
	ran += run("fanotify, filesystem mark", &fan_fs, &failed); /* last: it unshares */
	return failed ? failed : ran ? 0 : 77;
}
