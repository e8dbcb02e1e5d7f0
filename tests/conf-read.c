/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Conformance test, notifyx_read: the length and a buffer too small, a
 * non-blocking handle with nothing to read, EINTR (with and without
 * SA_RESTART), O_NONBLOCK set on the descriptor by the application, and a
 * blocking read that gets the events made meanwhile.  Run from
 * conformance.c's main through conf_read_run().
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "conformance.h"

/* ---- read ---- */

static void read_len_and_small_buffer(void **state)
{
	struct tu_fix *f = F(state);
	union {
		struct notifyx_event ev;
		char b[2 * NOTIFYX_EVENT_MAX];
	} buf;
	int wd = tu_add(&f->log, f->dir, NOTIFYX_CREATE, 0);
	uint32_t first;
	ssize_t r;
	struct pollfd p = { .fd = notifyx_fd(f->nx), .events = POLLIN };

	TU_ERRNO("notifyx_read len 0 (empty queue)", notifyx_read(f->nx, buf.b, 0) == -1, EINVAL);
	tu_touch(tu_path(f->dir, "a-rather-long-name-for-the-first-event"));
	tu_touch(tu_path(f->dir, "b"));
	assert_int_equal(poll(&p, 1, TU_WAIT_MS), 1);
	TU_ERRNO("notifyx_read len 0 (events pending)", notifyx_read(f->nx, buf.b, 0) == -1, EINVAL);
	TU_ERRNO("notifyx_read len 1", notifyx_read(f->nx, buf.b, 1) == -1, EINVAL);
	TU_ERRNO("notifyx_read len = header only",
		 notifyx_read(f->nx, buf.b, sizeof(struct notifyx_event)) == -1, EINVAL);
	/* Nothing was consumed: a big enough buffer gets the first event. */
	r = notifyx_read(f->nx, buf.b, sizeof buf.b);
	assert_true(r > 0);
	first = buf.ev.size;
	TU_STREQ("first event after failed small reads", "a-rather-long-name-for-the-first-event",
		 buf.ev.names);
	(void)wd;
	/* Two events again: len = first's size - 1 fails, = its size returns exactly it. */
	tu_unlink(tu_path(f->dir, "b"));
	tu_unlink(tu_path(f->dir, "a-rather-long-name-for-the-first-event"));
	tu_touch(tu_path(f->dir, "a-rather-long-name-for-the-first-event"));
	tu_touch(tu_path(f->dir, "b"));
	assert_int_equal(poll(&p, 1, TU_WAIT_MS), 1);
	tu_sleep_ms(50);
	TU_ERRNO("notifyx_read len = next event's size - 1",
		 notifyx_read(f->nx, buf.b, first - 1) == -1, EINVAL);
	r = notifyx_read(f->nx, buf.b, first);
	TU_EQ("notifyx_read with len = next event's size: returns exactly it", first, r);
	/* First + a few bytes: only whole events. */
	r = notifyx_read(f->nx, buf.b, first + 16);
	assert_true(r > 0);
	assert_true(r <= (ssize_t)first + 16);
	assert_int_equal(r % 8, 0);
	{
		/* r holds whole records only. */
		size_t off = 0;

		while (off < (size_t)r) {
			const struct notifyx_event *ev = (const void *)(buf.b + off);

			assert_true(ev->size >= sizeof *ev && off + ev->size <= (size_t)r);
			off += ev->size;
		}
	}
	tu_pull(&f->log);
}

static void read_nonblock_empty(void **state)
{
	struct tu_fix *f = F(state);
	char buf[NOTIFYX_EVENT_MAX];

	TU_ERRNO("non-blocking read, no watch", notifyx_read(f->nx, buf, sizeof buf) == -1, EAGAIN);
	tu_add(&f->log, f->dir, NOTIFYX_CREATE, 0);
	TU_ERRNO("non-blocking read, nothing happened", notifyx_read(f->nx, buf, sizeof buf) == -1,
		 EAGAIN);
	tu_touch(tu_path(f->dir, "f"));
	TU_WAIT(&f->log, TU_ANY_WD, NOTIFYX_CREATE, "f");
	tu_settle(&f->log);
	TU_ERRNO("non-blocking read, all read", notifyx_read(f->nx, buf, sizeof buf) == -1, EAGAIN);
}

static volatile sig_atomic_t got_signal;
static void on_alarm(int sig)
{
	(void)sig;
	got_signal = 1;
}

struct rescue {
	const char *path;
	volatile int done;
	long delay_ms; /* 0: 3000 */
};

/* Bounds a read that fails to end: makes an event after 3 s (delay_ms). */
static void *rescue_thread(void *arg)
{
	struct rescue *r = arg;
	long end = tu_now_ms() + (r->delay_ms ? r->delay_ms : 3000);

	while (!r->done && tu_now_ms() < end)
		tu_sleep_ms(10);
	if (!r->done) {
		int fd = open(r->path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);

		if (fd >= 0)
			close(fd);
	}
	return NULL;
}

static void read_eintr_one(struct tu_fix *f, int sa_flags, const char *how)
{
	struct notifyx *nx = tu_open(0, 0);
	struct sigaction sa, old;
	struct itimerval it = { { 0, 0 }, { 0, 100000 } };
	char buf[NOTIFYX_EVENT_MAX];
	struct rescue rs = { tu_path(f->dir, tu_fmt("rescue-%d", sa_flags)), 0, 0 };
	pthread_t th;
	ssize_t r;
	int err;
	long t0;

	assert_non_null(nx);
	assert_true(notifyx_add_watch(nx, f->dir, NOTIFYX_CREATE, 0) > 0);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sa.sa_flags = sa_flags;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGALRM, &sa, &old), 0);
	got_signal = 0;
	assert_int_equal(pthread_create(&th, NULL, rescue_thread, &rs), 0);
	/* The rescue thread must not take the signal. */
	{
		sigset_t s;

		sigemptyset(&s);
		sigaddset(&s, SIGALRM);
		pthread_sigmask(SIG_UNBLOCK, &s, NULL);
	}
	t0 = tu_now_ms();
	setitimer(ITIMER_REAL, &it, NULL);
	r = notifyx_read(nx, buf, sizeof buf);
	err = errno;
	rs.done = 1;
	pthread_join(th, NULL);
	sigaction(SIGALRM, &old, NULL);
	notifyx_close(nx);
	if (r != -1 || err != EINTR)
		fail_msg("blocking read interrupted by a caught signal (%s): expected -1 EINTR, "
			 "actual %zd errno %s after %ld ms (signal caught: %d)", how, r,
			 r < 0 ? strerrorname_np(err) : "-", tu_now_ms() - t0, (int)got_signal);
	assert_true(got_signal);
}

static void read_eintr(void **state)
{
	struct tu_fix *f = F(state);
	sigset_t s;

	/* The rescue thread blocks SIGALRM so that the reading thread takes it. */
	sigemptyset(&s);
	sigaddset(&s, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	read_eintr_one(f, 0, "without SA_RESTART");
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	read_eintr_one(f, SA_RESTART, "with SA_RESTART");
	pthread_sigmask(SIG_UNBLOCK, &s, NULL);
}

/* 0.2: O_NONBLOCK set on notifyx_fd by the application (libuv's uv_poll_init
 * does) makes a blocking handle's reads non-blocking, and clearing it makes
 * them block again. */
static void read_fd_nonblock(void **state)
{
	struct tu_fix *f = F(state);
	struct notifyx *nx = tu_open(0, 0);
	union {
		struct notifyx_event ev;
		char b[NOTIFYX_EVENT_MAX];
	} buf;
	struct rescue rs = { tu_path(f->dir, "rescue"), 0, 0 };
	pthread_t th;
	ssize_t r;
	int fd, fl, err;

	assert_non_null(nx);
	assert_true(notifyx_add_watch(nx, f->dir, NOTIFYX_CREATE, 0) > 0);
	fd = notifyx_fd(nx);
	fl = fcntl(fd, F_GETFL);
	assert_true(fl >= 0);
	assert_int_equal(fcntl(fd, F_SETFL, fl | O_NONBLOCK), 0);
	/* Without the rule the read waits until the thread makes a file. */
	assert_int_equal(pthread_create(&th, NULL, rescue_thread, &rs), 0);
	r = notifyx_read(nx, buf.b, sizeof buf.b);
	err = errno;
	rs.done = 1;
	pthread_join(th, NULL);
	if (r != -1 || err != EAGAIN)
		fail_msg("blocking handle, O_NONBLOCK on its descriptor, nothing happened: expected "
			 "-1 EAGAIN, actual %zd errno %s", r, r < 0 ? strerrorname_np(err) : "-");
	tu_touch(tu_path(f->dir, "f"));
	/* Events still come (poll, as an event loop would, then read). */
	{
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		long end = tu_now_ms() + TU_WAIT_MS;

		do {
			(void)poll(&pfd, 1, 100);
			r = notifyx_read(nx, buf.b, sizeof buf.b);
		} while (r < 0 && errno == EAGAIN && tu_now_ms() < end);
	}
	if (r <= 0)
		fail_msg("O_NONBLOCK on the descriptor: no event read (%s)", strerrorname_np(errno));
	TU_STREQ("O_NONBLOCK on the descriptor, first event", "f", buf.ev.names);
	/* Cleared again: the read waits for the thread's file. */
	assert_int_equal(fcntl(fd, F_SETFL, fl), 0);
	rs.path = tu_path(f->dir, "made-by-thread");
	rs.done = 0;
	rs.delay_ms = 200;
	assert_int_equal(pthread_create(&th, NULL, rescue_thread, &rs), 0);
	r = notifyx_read(nx, buf.b, sizeof buf.b);
	err = errno;
	rs.done = 1;
	pthread_join(th, NULL);
	if (r <= 0)
		fail_msg("O_NONBLOCK cleared: expected a blocking read to return the thread's "
			 "event, actual %zd errno %s", r, strerrorname_np(err));
	TU_STREQ("O_NONBLOCK cleared, blocking read", "made-by-thread", buf.ev.names);
	notifyx_close(nx);
}

static void read_blocking_gets_events(void **state)
{
	struct tu_fix *f = F(state);
	struct notifyx *nx = tu_open(0, 0);
	union {
		struct notifyx_event ev;
		char b[NOTIFYX_EVENT_MAX];
	} buf;
	struct rescue rs = { tu_path(f->dir, "made-by-thread"), 0, 0 };
	pthread_t th;
	ssize_t r;

	assert_non_null(nx);
	assert_true(notifyx_add_watch(nx, f->dir, NOTIFYX_CREATE, 0) > 0);
	/* The thread creates a file after a while; the blocking read returns it. */
	assert_int_equal(pthread_create(&th, NULL, rescue_thread, &rs), 0);
	r = notifyx_read(nx, buf.b, sizeof buf.b);
	pthread_join(th, NULL);
	assert_true(r > 0);
	TU_STREQ("blocking read", "made-by-thread", buf.ev.names);
	notifyx_close(nx);
}

int conf_read_run(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(read_len_and_small_buffer, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(read_nonblock_empty, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(read_eintr, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(read_fd_nonblock, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(read_blocking_gets_events, tu_setup, tu_teardown),
	};

	return cmocka_run_group_tests_name("conformance: read", tests, NULL, NULL);
}
