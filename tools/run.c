/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * notifyx run: run a command, and run it again after each burst of changes
 * (as entr and watchexec do).
 *
 * Built on libev, as an application of libnotifyx would be:
 *   ev_io     on notifyx_fd: read the events, (re)arm the debounce timer
 *   ev_timer  debounce: the burst is over, run the command (again)
 *   ev_child  the command ended
 *   ev_signal SIGINT, SIGTERM, SIGHUP: stop the command, then exit
 *
 * The command leads a process group of its own, so that stopping it
 * (--restart, or notifyx ending) reaches everything it started: SIGTERM and
 * SIGCONT to the group, SIGKILL after STOP_GRACE seconds, and notifyx waits
 * until no process of the group is left.  notifyx is a child subreaper
 * (PR_SET_CHILD_SUBREAPER): the command's orphans become its children, which
 * libev reaps, so none of them lingers as a zombie in the group.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ev.h>
#include <notifyx.h>

#include "format.h"
#include "tool.h"

#define STOP_GRACE 5.0      /* seconds between SIGTERM and SIGKILL */
#define GROUP_CHECK 0.02    /* seconds between checks that a stopped group is gone */
#define DEFAULT_DEBOUNCE 100 /* milliseconds */

/* Clears a terminal and puts the cursor at its top left (--clear). */
#define CLEAR_SCREEN "\033[H\033[2J"

static void usage_run(FILE *f)
{
	fprintf(f,
"Usage: notifyx run [OPTION]... PATH... -- COMMAND [ARG]...\n"
"\n"
"Run COMMAND, then run it again each time something changes in PATH...\n"
"A burst of changes gives one run: COMMAND runs once no event came for\n"
"the debounce time.  Changes while COMMAND runs give one more run after it\n"
"ends, or with --restart stop it and start it again.\n"
"\n"
"Options:\n"
"  -r, --recursive        watch whole directory trees\n"
"      --xdev, --no-follow, --fromfile=FILE, --rescan, --queue-max=N\n"
"                         as for watch (with --rescan, the changes found\n"
"                         after an overflow give one run)\n"
"  -b, --backend=NAME     auto (default), inotify, fanotify, dnotify or poll\n"
"  -e, --event=EVENTS     events that count as a change (as for watch); the\n"
"                         default is every event the backend supports but\n"
"                         access, open and close_nowrite, which COMMAND itself\n"
"                         causes when it reads the files\n"
"  -x, --exclude=GLOB     ignore entries matching GLOB (as for watch)\n"
"      --include=GLOB     only entries matching GLOB count (as for watch)\n"
"      --ext=EXT[,EXT]... only names ending in .EXT count (as for watch)\n"
"  -d, --debounce=MS      quiet time before a run, in milliseconds (default\n"
"                         %d; 0 runs at once)\n"
"      --restart          on a change, stop COMMAND if it still runs and\n"
"                         start it again (for servers)\n"
"  -s, --signal=SIG       stop COMMAND with SIG rather than TERM: a name (INT,\n"
"                         SIGHUP, ...) or a number\n"
"  -c, --clear            clear the screen before each run\n"
"  -p, --postpone         do not run COMMAND at start, only after a change\n"
"  -h, --help             show this help\n"
"\n"
"What changed is passed to COMMAND: an argument that is exactly \"/_\" is\n"
"replaced by the first path that changed (as entr does; at the run at start,\n"
"the first PATH), and the environment has\n"
"  NOTIFYX_PATHS    the paths that changed since the last run started, one\n"
"                   a line, each once, escaped as in watch's text format\n"
"                   without the quotes (empty at the run at start)\n"
"  NOTIFYX_EVENTS   the same lines, each after its events and a space:\n"
"                   \"close_write,create src/a.c\" (events in a fixed order)\n"
"  NOTIFYX_DROPPED  0, or how many more changes there were than these hold\n"
"Each path is the watched PATH joined with the entry's path (rename gives\n"
"both the new and the old one).\n"
"\n"
"COMMAND runs in a process group of its own, with standard input from\n"
"/dev/null.  It is stopped with SIG (TERM) and SIGCONT to its group, then\n"
"SIGKILL after %g seconds; notifyx waits until no process of the group is\n"
"left.  SIGINT, SIGTERM and SIGHUP stop COMMAND this way and end notifyx.\n"
"\n"
"Exit status: 0 after SIGINT, SIGTERM or SIGHUP; 1 on an error (a PATH\n"
"cannot be watched, COMMAND cannot be started, every PATH is gone); 2 on a\n"
"usage error.  COMMAND's own status does not change it.\n"
"\n"
"Examples:\n"
"  notifyx run -r --ext c,h src -- make          rebuild on C changes\n"
"  notifyx run -r -c -p src -- make test         clear; not at start\n"
"  notifyx run -r --restart --signal INT app -- python3 app/server.py\n"
"  notifyx run --ext md doc -- pandoc -o out.html /_   the file that changed\n"
"  notifyx run -r src -- sh -c 'printf \"%%s\\n\" \"$NOTIFYX_PATHS\"'\n"
"  git ls-files | notifyx run --fromfile=- -- make\n",
		DEFAULT_DEBOUNCE, STOP_GRACE);
}

struct run {
	struct ev_loop *loop;
	struct notifyx *nx;
	char **cmd;
	char **argv;    /* cmd with "/_" replaced, for one run */
	const char *first_root; /* what "/_" is at the run at start */
	struct watch_opts *opts;
	struct changes changes; /* since the last run started */
	int restart;
	int stop_signal; /* --signal: what stops COMMAND first */
	int clear;      /* --clear */
	double delay;   /* the debounce time, in seconds */
	ev_io io;
	ev_timer debounce;
	ev_timer kill_timer;
	ev_timer group_timer;
	ev_child child;
	ev_signal sig[3];
	pid_t pid;      /* the running command; 0 when none */
	pid_t pgid;     /* its process group, until no process of it is left; else 0 */
	int pending;    /* a run is due */
	int stopping;   /* the group was told to stop */
	int quitting;   /* exit once the group is gone */
	int live;       /* watches that have not ended */
	int repairs;    /* --rescan: OVERFLOWs read whose SYNC is still to come */
	int changed;    /* changes seen, waiting for the repairs to end */
	int status;     /* notifyx's exit status */
	char *buf;
	size_t bufsize;
};

static void stop_group(struct run *r);

static int group_alive(pid_t pgid)
{
	return pgid > 0 && (kill(-pgid, 0) == 0 || errno == EPERM);
}

static void spawn(struct run *r)
{
	pid_t pid;
	sigset_t none;
	size_t i;

	r->pending = 0;
	/* entr's "/_": the first path that changed (the first PATH at start) */
	for (i = 0; r->cmd[i]; i++)
		r->argv[i] = strcmp(r->cmd[i], "/_") != 0 ? r->cmd[i] :
			     r->changes.n ? r->changes.v[0].path : (char *)r->first_root;
	r->argv[i] = NULL;
	if (r->clear)
		fputs(CLEAR_SCREEN, stdout);
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		report_error("fork", errno, 0, 0);
		r->status = EXIT_FAILURE;
		ev_break(r->loop, EVBREAK_ALL);
		return;
	}
	if (pid == 0) {
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

		setpgid(0, 0);
		if (fd >= 0) {
			dup2(fd, STDIN_FILENO);
			if (fd != STDIN_FILENO)
				close(fd);
		}
		/* libev's handlers go away with exec; its mask must too */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (changes_setenv(&r->changes) < 0) {
			fprintf(stderr, "%s: %s\n", progname, strerror(ENOMEM));
			_exit(126);
		}
		execvp(r->argv[0], r->argv);
		fprintf(stderr, "%s: %s: %s\n", progname, r->argv[0], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	changes_clear(&r->changes);
	/* in the parent too, so that the group exists before anyone signals it */
	setpgid(pid, pid);
	r->pid = pid;
	r->pgid = pid;
	ev_child_set(&r->child, pid, 0);
	ev_child_start(r->loop, &r->child);
}

/* Starts a due run when nothing stands in its way. */
static void maybe_spawn(struct run *r)
{
	if (!r->pending || r->quitting || r->stopping || r->pid)
		return;
	if (r->restart && group_alive(r->pgid)) {
		/* what the last run left behind goes first */
		stop_group(r);
		return;
	}
	spawn(r);
}

static void group_gone(struct run *r)
{
	ev_timer_stop(r->loop, &r->group_timer);
	ev_timer_stop(r->loop, &r->kill_timer);
	r->stopping = 0;
	r->pgid = 0;
	if (r->quitting)
		ev_break(r->loop, EVBREAK_ALL);
	else
		maybe_spawn(r);
}

static void stop_group(struct run *r)
{
	if (r->stopping)
		return;
	if (!group_alive(r->pgid)) {
		group_gone(r);
		return;
	}
	r->stopping = 1;
	kill(-r->pgid, r->stop_signal);
	kill(-r->pgid, SIGCONT); /* a stopped process acts on a signal only once continued */
	ev_timer_set(&r->kill_timer, STOP_GRACE, 0.);
	ev_timer_start(r->loop, &r->kill_timer);
	ev_timer_set(&r->group_timer, GROUP_CHECK, GROUP_CHECK);
	ev_timer_start(r->loop, &r->group_timer);
}

static void on_kill_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct run *r = w->data;

	(void)loop;
	(void)revents;
	if (r->pgid > 0)
		kill(-r->pgid, SIGKILL);
}

static void on_group_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct run *r = w->data;

	(void)loop;
	(void)revents;
	if (!group_alive(r->pgid))
		group_gone(r);
}

static void on_child(struct ev_loop *loop, ev_child *w, int revents)
{
	struct run *r = w->data;

	(void)revents;
	ev_child_stop(loop, w);
	r->pid = 0;
	if (r->stopping)
		return; /* the group timer sees the rest of the group go */
	if (r->quitting) {
		stop_group(r);
		return;
	}
	maybe_spawn(r);
}

static void on_debounce(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct run *r = w->data;

	(void)loop;
	(void)revents;
	r->pending = 1;
	if (r->pid && r->restart)
		stop_group(r);
	else
		maybe_spawn(r);
}

static void quit(struct run *r, int status)
{
	if (status != EXIT_SUCCESS)
		r->status = status;
	r->quitting = 1;
	ev_io_stop(r->loop, &r->io);
	ev_timer_stop(r->loop, &r->debounce);
	stop_group(r);
}

static void on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)loop;
	(void)revents;
	quit(w->data, EXIT_SUCCESS);
}

static void on_events(struct ev_loop *loop, ev_io *w, int revents)
{
	struct run *r = w->data;
	ssize_t n;

	(void)revents;
	while ((n = notifyx_read(r->nx, r->buf, r->bufsize)) > 0) {
		const struct notifyx_event *ev = (const void *)r->buf;
		const char *end = r->buf + n;

		for (; (const char *)ev < end; ev = notifyx_event_next(ev)) {
			const char *root;

			if (ev->mask == NOTIFYX_IGNORED) {
				r->live--;
				r->repairs = 0; /* a watch that ended has no repair to end */
				continue;
			}
			/* A repair's changes give one run, once its SYNC is read. */
			if (ev->mask == NOTIFYX_OVERFLOW && (r->opts->flags & NOTIFYX_WATCH_RESCAN))
				r->repairs++;
			if (ev->mask == NOTIFYX_SYNC) {
				if (r->repairs)
					r->repairs--;
				continue;
			}
			if (!opts_filter(r->opts, ev))
				continue;
			r->changed = 1;
			root = notifyx_watch_path(r->nx, ev->wd);
			if (!root)
				continue;
			changes_add(&r->changes, fmt_join(root, notifyx_event_path(ev)), ev->mask);
			if (notifyx_event_old_path(ev))
				changes_add(&r->changes, fmt_join(root, notifyx_event_old_path(ev)),
					    ev->mask);
		}
	}
	if (n < 0 && errno != EAGAIN && errno != EINTR) {
		report_error("read", errno, 0, 0);
		quit(r, EXIT_FAILURE);
		return;
	}
	if (r->changed && !r->repairs) {
		r->changed = 0;
		/* every event pushes the run back: a burst gives one run */
		ev_timer_stop(loop, &r->debounce);
		ev_timer_set(&r->debounce, r->delay, 0.);
		ev_timer_start(loop, &r->debounce);
	}
	if (r->live <= 0) {
		fprintf(stderr, "%s: run: every watched PATH is gone\n", progname);
		quit(r, EXIT_FAILURE);
	}
}

enum { OPT_RESTART = OPT_FIRST_OWN };

static const struct option run_long[] = {
	OPTS_LONG_OPTIONS,
	{ "debounce",  required_argument, NULL, 'd' },
	{ "restart",   no_argument,       NULL, OPT_RESTART },
	{ "signal",    required_argument, NULL, 's' },
	{ "clear",     no_argument,       NULL, 'c' },
	{ "postpone",  no_argument,       NULL, 'p' },
	{ "help",      no_argument,       NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

int tool_run(int argc, char **argv)
{
	static const int sigs[3] = { SIGINT, SIGTERM, SIGHUP };
	struct run r = { .status = EXIT_SUCCESS, .stop_signal = SIGTERM };
	struct watch_opts o;
	int postpone = 0, opt, nopt, i, npath, taken;
	size_t k;
	long debounce = DEFAULT_DEBOUNCE;
	char *end;

	r.opts = &o;
	if (opts_init(&o, argc) < 0) {
		opts_free(&o);
		return EXIT_FAILURE;
	}

	/* Options and PATHs end at the first "--"; COMMAND follows it. */
	for (nopt = 1; nopt < argc && strcmp(argv[nopt], "--") != 0; nopt++)
		;
	optind = 0;
	while ((opt = getopt_long(nopt, argv, "rb:e:x:d:s:cph", run_long, NULL)) != -1) {
		taken = opts_parse(&o, opt, optarg);
		if (taken == 1)
			continue;
		if (taken == -2) {
			opts_free(&o);
			return EXIT_FAILURE;
		}
		if (taken == -1)
			goto usage;
		switch (opt) {
		case 'd':
			errno = 0;
			debounce = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || debounce < 0 || debounce > 86400000) {
				fprintf(stderr, "%s: --debounce: '%s' is not a number of "
					"milliseconds\n", progname, optarg);
				goto usage;
			}
			break;
		case OPT_RESTART:
			r.restart = 1;
			break;
		case 's':
			if (parse_signal(optarg, &r.stop_signal) < 0) {
				fprintf(stderr, "%s: --signal: '%s' is not a signal (a name such "
					"as TERM, SIGINT or HUP, or a number)\n", progname, optarg);
				goto usage;
			}
			break;
		case 'c':
			r.clear = 1;
			break;
		case 'p':
			postpone = 1;
			break;
		case 'h':
			usage_run(stdout);
			opts_free(&o);
			return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
		default:
			goto usage;
		}
	}
	if (opts_add_paths(&o, argv + optind, nopt - optind) < 0) {
		opts_free(&o);
		return EXIT_FAILURE;
	}
	npath = (int)o.paths.n;
	if (npath <= 0) {
		fprintf(stderr, "%s: run: no PATH given\n", progname);
		goto usage;
	}
	if (nopt + 1 >= argc) {
		fprintf(stderr, "%s: run: no COMMAND given (put it after --)\n", progname);
		goto usage;
	}
	r.cmd = argv + nopt + 1;
	r.argv = calloc((size_t)(argc - nopt), sizeof(*r.argv));
	r.first_root = o.paths.v[0];

	r.nx = opts_open(&o);
	if (!r.nx) {
		free(r.argv);
		opts_free(&o);
		return EXIT_FAILURE;
	}
	for (k = 0; k < o.paths.n; k++) {
		if (notifyx_add_watch(r.nx, o.paths.v[k], o.events, o.flags) < 0) {
			opts_add_failed(r.nx, &o, o.paths.v[k], errno);
			r.status = EXIT_FAILURE;
			goto out;
		}
	}
	r.live = npath;

	r.bufsize = NOTIFYX_EVENT_MAX > 65536 ? NOTIFYX_EVENT_MAX : 65536;
	r.buf = malloc(r.bufsize);
	r.loop = ev_default_loop(EVFLAG_AUTO);
	if (!r.buf || !r.loop || !r.argv) {
		fprintf(stderr, "%s: run: %s\n", progname,
			r.buf && r.argv ? "cannot start the libev loop" : strerror(ENOMEM));
		r.status = EXIT_FAILURE;
		goto out;
	}
	/* the command's orphans come back to notifyx, which reaps them */
	prctl(PR_SET_CHILD_SUBREAPER, 1);

	ev_io_init(&r.io, on_events, notifyx_fd(r.nx), EV_READ);
	r.delay = debounce / 1000.0;
	ev_timer_init(&r.debounce, on_debounce, r.delay, 0.);
	ev_timer_init(&r.kill_timer, on_kill_timer, STOP_GRACE, 0.);
	ev_timer_init(&r.group_timer, on_group_timer, GROUP_CHECK, GROUP_CHECK);
	ev_child_init(&r.child, on_child, 0, 0);
	r.io.data = r.debounce.data = r.kill_timer.data = r.group_timer.data = &r;
	r.child.data = &r;
	ev_io_start(r.loop, &r.io);
	for (i = 0; i < 3; i++) {
		struct sigaction old;

		/* a signal ignored when notifyx started stays ignored */
		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue;
		ev_signal_init(&r.sig[i], on_signal, sigs[i]);
		r.sig[i].data = &r;
		ev_signal_start(r.loop, &r.sig[i]);
	}

	if (!postpone) {
		r.pending = 1;
		spawn(&r);
	}
	ev_run(r.loop, 0);

out:
	free(r.buf);
	free(r.argv);
	changes_free(&r.changes);
	opts_free(&o);
	notifyx_close(r.nx);
	return r.status;

usage:
	opts_free(&o);
	try_help("run");
	return EXIT_USAGE;
}
