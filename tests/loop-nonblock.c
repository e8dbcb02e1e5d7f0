/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * An event loop on a BLOCKING handle whose descriptor is non-blocking never
 * hangs in notifyx_read (API.md 0.2).  Built twice: with -DLOOP_UV on libuv,
 * whose uv_poll_init sets O_NONBLOCK on notifyx_fd itself, and with
 * -DLOOP_EV on libev, where the program sets it as an application would.
 *
 * Each round a timer callback, inside the loop, writes a byte to a pipe and
 * then makes a file in the watched directory, so that one wait of the loop
 * sees both descriptors ready.  Both callbacks drain the handle until
 * EAGAIN: whichever runs second finds nothing (spurious readiness), and the
 * last read of every drain finds nothing too.  The pipe's callback is meant
 * to run first (libuv dispatches in the kernel's order, libev by priority),
 * so the handle's callback is called with nothing to read (on inotify and
 * fanotify every round; the count is printed).
 *
 * The backend is the library's choice (NOTIFYX_BACKEND in the environment).
 * Exit 0 pass, 1 fail (a hang ends at SIGALRM after 20 s), 77 skip.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(LOOP_UV)
#include <uv.h>
#define LOOP_NAME "libuv"
#elif defined(LOOP_EV)
#include <ev.h>
#define LOOP_NAME "libev"
#else
#error "build with -DLOOP_UV or -DLOOP_EV"
#endif

#include <notifyx.h>

#define ROUNDS 20
#define TICK_MS 20

struct state {
	struct notifyx *nx;
	int pipefd[2];
	char dir[64];
	int round;          /* files made */
	int events;         /* CREATEs read */
	int spurious;       /* the handle's callback found nothing at all */
	int failed;
};

static void on_alarm(int sig)
{
	static const char msg[] = "FAIL: " LOOP_NAME " loop hung (20 s): notifyx_read blocked\n";

	(void)sig;
	(void)!write(STDOUT_FILENO, msg, sizeof msg - 1);
	_exit(1);
}

/* Reads until EAGAIN; returns the number of events read. */
static int drain(struct state *s)
{
	static union {
		struct notifyx_event ev;
		char bytes[NOTIFYX_EVENT_MAX];
	} buf;
	const struct notifyx_event *ev;
	ssize_t n;
	int count = 0;

	while ((n = notifyx_read(s->nx, buf.bytes, sizeof buf.bytes)) > 0) {
		notifyx_for_each_event(ev, buf.bytes, n) {
			count++;
			if (ev->mask == NOTIFYX_CREATE)
				s->events++;
		}
	}
	if (errno != EAGAIN && errno != EINTR) {
		printf("FAIL: notifyx_read: %s\n", strerror(errno));
		s->failed = 1;
	}
	return count;
}

/* Makes the pipe readable, then a file: both are seen in one wait. */
static void step(struct state *s)
{
	char path[96];
	int fd;

	if (s->round == ROUNDS)
		return;
	snprintf(path, sizeof path, "%s/f%d", s->dir, s->round++);
	if (write(s->pipefd[1], "x", 1) != 1 ||
	    (fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) < 0 || close(fd) < 0) {
		printf("FAIL: %s: %s\n", path, strerror(errno));
		s->failed = 1;
	}
}

static void on_pipe(struct state *s)
{
	char c;

	(void)!read(s->pipefd[0], &c, 1);
	drain(s);
}

static void on_handle(struct state *s)
{
	if (drain(s) == 0)
		s->spurious++;
}

static int done(const struct state *s)
{
	return s->failed || (s->round == ROUNDS && s->events >= ROUNDS);
}

#if defined(LOOP_UV)
static uv_poll_t handle_w, pipe_w;
static uv_timer_t timer_w;

static void uv_on_handle(uv_poll_t *w, int status, int events)
{
	(void)status;
	(void)events;
	on_handle(w->data);
}

static void uv_on_pipe(uv_poll_t *w, int status, int events)
{
	(void)status;
	(void)events;
	on_pipe(w->data);
}

static void uv_on_timer(uv_timer_t *w)
{
	struct state *s = w->data;

	step(s);
	if (done(s))
		uv_stop(w->loop);
}

static int run_loop(struct state *s)
{
	uv_loop_t *loop = uv_default_loop();
	int fl;

	if (uv_poll_init(loop, &pipe_w, s->pipefd[0]) || uv_poll_init(loop, &handle_w, notifyx_fd(s->nx)) ||
	    uv_timer_init(loop, &timer_w)) {
		printf("FAIL: libuv init\n");
		return -1;
	}
	/* The point of the test: libuv made the descriptor non-blocking. */
	fl = fcntl(notifyx_fd(s->nx), F_GETFL);
	printf("uv_poll_init left O_NONBLOCK %s on notifyx_fd\n", fl >= 0 && (fl & O_NONBLOCK) ? "set" : "clear");
	pipe_w.data = handle_w.data = timer_w.data = s;
	uv_poll_start(&pipe_w, UV_READABLE, uv_on_pipe);
	uv_poll_start(&handle_w, UV_READABLE, uv_on_handle);
	uv_timer_start(&timer_w, uv_on_timer, TICK_MS, TICK_MS);
	uv_run(loop, UV_RUN_DEFAULT);
	uv_close((uv_handle_t *)&pipe_w, NULL);
	uv_close((uv_handle_t *)&handle_w, NULL);
	uv_close((uv_handle_t *)&timer_w, NULL);
	uv_run(loop, UV_RUN_DEFAULT);
	return uv_loop_close(loop) ? -1 : 0;
}
#else
static void ev_on_handle(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)revents;
	on_handle(w->data);
}

static void ev_on_pipe(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)revents;
	on_pipe(w->data);
}

static void ev_on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct state *s = w->data;

	(void)revents;
	step(s);
	if (done(s))
		ev_break(loop, EVBREAK_ALL);
}

static int run_loop(struct state *s)
{
	struct ev_loop *loop = ev_default_loop(EVFLAG_AUTO);
	ev_io handle_w, pipe_w;
	ev_timer timer_w;
	int fd = notifyx_fd(s->nx), fl = fcntl(fd, F_GETFL);

	/* What libuv does by itself, an application does here. */
	if (!loop || fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		printf("FAIL: libev loop or O_NONBLOCK: %s\n", strerror(errno));
		return -1;
	}
	ev_io_init(&pipe_w, ev_on_pipe, s->pipefd[0], EV_READ);
	ev_set_priority(&pipe_w, EV_MAXPRI); /* first: the handle's callback finds nothing */
	ev_io_init(&handle_w, ev_on_handle, fd, EV_READ);
	ev_set_priority(&handle_w, EV_MINPRI);
	ev_timer_init(&timer_w, ev_on_timer, TICK_MS / 1000.0, TICK_MS / 1000.0);
	pipe_w.data = handle_w.data = timer_w.data = s;
	ev_io_start(loop, &pipe_w);
	ev_io_start(loop, &handle_w);
	ev_timer_start(loop, &timer_w);
	ev_run(loop, 0);
	ev_loop_destroy(loop);
	return 0;
}
#endif

int main(void)
{
	struct state s = { .failed = 0 };
	int status = 1;

	setvbuf(stdout, NULL, _IONBF, 0);
	signal(SIGALRM, on_alarm);
	alarm(20);
	strcpy(s.dir, "/tmp/notifyx-loop.XXXXXX");
	if (!mkdtemp(s.dir) || pipe2(s.pipefd, O_CLOEXEC | O_NONBLOCK) < 0) {
		perror("mkdtemp or pipe2");
		return 1;
	}
	s.nx = notifyx_open(NULL); /* blocking reads: the loop's descriptor flag decides */
	if (!s.nx) {
		printf("SKIP: notifyx_open: %s\n", strerror(errno));
		status = 77;
		goto out;
	}
	if (notifyx_add_watch(s.nx, s.dir, NOTIFYX_CREATE, 0) < 0) {
		printf("FAIL: notifyx_add_watch: %s\n", strerror(errno));
		goto out;
	}
	if (run_loop(&s) < 0 || s.failed)
		goto out;
	printf("%s on %s: %d files, %d CREATEs read, %d callbacks of the handle with nothing to read\n",
	       LOOP_NAME, notifyx_backend_name(notifyx_backend(s.nx)), s.round, s.events, s.spurious);
	/* No spurious callback (the scanning backends queue nothing between
	 * scans) still leaves the read that ends every drain. */
	if (s.events != ROUNDS)
		printf("FAIL: expected %d CREATEs\n", ROUNDS);
	else
		status = 0;
out:
	notifyx_close(s.nx);
	for (int i = 0; i < ROUNDS; i++) {
		char path[96];

		snprintf(path, sizeof path, "%s/f%d", s.dir, i);
		unlink(path);
	}
	rmdir(s.dir);
	return status;
}
