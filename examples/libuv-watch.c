/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libuv-watch: libnotifyx in a libuv loop; logs one line per event.
 *
 *   libuv-watch DIR...
 *
 * Each DIR is watched recursively.
 *   uv_poll   on notifyx_fd: read and log the events
 *   uv_signal SIGTERM, SIGINT: a clean shutdown
 * The handle is opened with the defaults (blocking reads): uv_poll_init
 * makes notifyx_fd non-blocking, and then notifyx_read fails with EAGAIN
 * instead of waiting, as with NOTIFYX_NONBLOCK, so a spurious wake-up of the
 * loop never hangs it.
 * Standard output: "EVENT DIR/PATH"; standard error: "libuv-watch: watching
 * N paths" once the watches are in place, errors, "libuv-watch: stopped".
 * Exit status: 0 after SIGTERM or SIGINT, 1 on an error, 77 when no backend
 * starts here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <notifyx.h>
#include <uv.h>

#define EVENTS (NOTIFYX_CREATE | NOTIFYX_DELETE | NOTIFYX_RENAME | NOTIFYX_MOVED_IN | \
		NOTIFYX_MOVED_OUT | NOTIFYX_MODIFY)

struct app {
	struct notifyx *nx;
	char **roots; /* the DIRs, as given */
	int *wds;     /* the watch of each */
	int nroots;
	int status;
};

/* The application's own table: notifyx_watch_path stops answering once
 * the wd's IGNORED has been read, which may be in the batch being logged. */
static const char *root_of(const struct app *app, int wd)
{
	int i;

	for (i = 0; i < app->nroots; i++)
		if (app->wds[i] == wd)
			return app->roots[i];
	return "?";
}

static void on_events(uv_poll_t *w, int status, int events)
{
	struct app *app = w->data;
	/* union: the records need the alignment of struct notifyx_event */
	static union {
		struct notifyx_event ev;
		char bytes[16 * 1024];
	} buf;
	const struct notifyx_event *ev;
	ssize_t n;

	(void)events;
	if (status < 0) {
		fprintf(stderr, "libuv-watch: %s\n", uv_strerror(status));
		app->status = 1;
		uv_stop(w->loop);
		return;
	}
	/* until EAGAIN: the descriptor is level-triggered, nothing is lost */
	while ((n = notifyx_read(app->nx, buf.bytes, sizeof buf.bytes)) > 0) {
		notifyx_for_each_event(ev, buf.bytes, n) {
			const char *name = notifyx_event_name(ev->mask);
			const char *path = notifyx_event_path(ev);

			printf("%s %s%s%s\n", name ? name : "?", root_of(app, ev->wd),
			       path[0] ? "/" : "", path);
		}
	}
	if (errno != EAGAIN && errno != EINTR) {
		perror("libuv-watch: notifyx_read");
		app->status = 1;
		uv_stop(w->loop);
	}
}

static void on_stop(uv_signal_t *w, int signum)
{
	(void)signum;
	uv_stop(w->loop);
}

static void on_close(uv_handle_t *h)
{
	(void)h;
}

int main(int argc, char **argv)
{
	struct app app = { NULL, NULL, NULL, 0, 0 };
	uv_loop_t *loop = uv_default_loop();
	uv_poll_t io;
	uv_signal_t term, intr;
	int i;

	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR...\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0); /* a log line is written when it happens */
	app.roots = argv + 1;
	app.nroots = argc - 1;
	app.nx = notifyx_open(NULL);
	if (!app.nx) {
		perror("libuv-watch: notifyx_open");
		return errno == ENOSYS || errno == EPERM ? 77 : 1;
	}
	app.wds = calloc((size_t)app.nroots, sizeof(*app.wds));
	if (!app.wds) {
		perror("libuv-watch");
		notifyx_close(app.nx);
		return 1;
	}
	for (i = 0; i < app.nroots; i++) {
		app.wds[i] = notifyx_add_watch(app.nx, app.roots[i],
					       EVENTS & notifyx_supported_events(app.nx),
					       NOTIFYX_WATCH_RECURSIVE);
		if (app.wds[i] < 0) {
			fprintf(stderr, "libuv-watch: %s: %s\n", app.roots[i], strerror(errno));
			notifyx_close(app.nx);
			free(app.wds);
			return 1;
		}
	}
	uv_poll_init(loop, &io, notifyx_fd(app.nx));
	io.data = &app;
	uv_poll_start(&io, UV_READABLE, on_events);
	uv_signal_init(loop, &term);
	uv_signal_start(&term, on_stop, SIGTERM);
	uv_signal_init(loop, &intr);
	uv_signal_start(&intr, on_stop, SIGINT);
	fprintf(stderr, "libuv-watch: watching %d paths\n", app.nroots);

	uv_run(loop, UV_RUN_DEFAULT);

	/* a clean shutdown: the loop lets go of the descriptor before the
	 * handle closes it */
	uv_close((uv_handle_t *)&io, on_close);
	uv_close((uv_handle_t *)&term, on_close);
	uv_close((uv_handle_t *)&intr, on_close);
	uv_run(loop, UV_RUN_DEFAULT);
	uv_loop_close(loop);
	notifyx_close(app.nx);
	free(app.wds);
	fprintf(stderr, "libuv-watch: stopped\n");
	return app.status;
}
