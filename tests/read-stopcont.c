/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A blocking notifyx_read survives a stop and SIGCONT: only a signal the
 * application catches ends the wait with EINTR (API.md), and job control
 * (^Z, fg) or a debugger is not that.  Found by the throughput benchmark,
 * which stops its watchers while it makes a burst: the wait was epoll_wait,
 * which fails with EINTR after a stop (signal(7)).  Run for every backend
 * that starts here; the others are skipped, saying why.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <notifyx.h>

static void stopcont(void **state)
{
	uint32_t backend = (uint32_t)(uintptr_t)*state;
	struct notifyx_config c = { .size = sizeof(c), .backend = backend, .poll_interval_ms = 50 };
	char dir[] = "/tmp/nx-stopcont.XXXXXX", path[64];
	struct notifyx *nx = notifyx_open(&c);
	int fds[2], status, result[2] = { 0, 0 };
	pid_t pid;

	if (!nx) {
		print_message("%s: cannot start here: %s\n", notifyx_backend_name(backend),
			      strerror(errno));
		skip();
	}
	notifyx_close(nx); /* the child opens its own: a handle does not cross fork */
	assert_non_null(mkdtemp(dir));
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		static char buf[NOTIFYX_EVENT_MAX] __attribute__((aligned(8)));
		const struct notifyx_event *ev = (const void *)buf;
		ssize_t n = -1;

		nx = notifyx_open(&c);
		if (nx && notifyx_add_watch(nx, dir, NOTIFYX_CREATE, 0) > 0 &&
		    write(fds[1], "r", 1) == 1)
			n = notifyx_read(nx, buf, sizeof(buf));
		result[0] = n > 0 ? (int)ev->mask : -1;
		result[1] = n > 0 ? 0 : errno;
		_exit(write(fds[1], result, sizeof(result)) == sizeof(result) ? 0 : 1);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], path, 1), 1); /* the child watches */
	usleep(100 * 1000); /* and waits in notifyx_read */
	assert_int_equal(kill(pid, SIGSTOP), 0);
	assert_int_equal(waitpid(pid, &status, WUNTRACED), pid);
	assert_true(WIFSTOPPED(status));
	assert_int_equal(kill(pid, SIGCONT), 0);
	usleep(100 * 1000); /* a read that failed has said so by now */
	snprintf(path, sizeof(path), "%s/f", dir);
	close(open(path, O_CREAT | O_WRONLY, 0644));
	assert_int_equal(read(fds[0], result, sizeof(result)), sizeof(result));
	if (result[0] < 0)
		fail_msg("notifyx_read after SIGSTOP and SIGCONT failed: %s", strerror(result[1]));
	assert_int_equal(result[0], NOTIFYX_CREATE);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	close(fds[0]);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(stopcont, (void *)(uintptr_t)NOTIFYX_BACKEND_INOTIFY),
		cmocka_unit_test_prestate(stopcont, (void *)(uintptr_t)NOTIFYX_BACKEND_FANOTIFY),
		cmocka_unit_test_prestate(stopcont, (void *)(uintptr_t)NOTIFYX_BACKEND_DNOTIFY),
		cmocka_unit_test_prestate(stopcont, (void *)(uintptr_t)NOTIFYX_BACKEND_POLL),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
