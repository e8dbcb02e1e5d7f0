/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * notifyx(1): watch files from the command line with libnotifyx.
 *
 *   notifyx watch [OPTION]... PATH...   print events, one per line
 *   notifyx run [OPTION]... PATH... -- COMMAND [ARG]...
 *                                       run COMMAND on changes (run.c)
 *   notifyx backends                    which backends work here
 *   notifyx --help | --version
 *
 * The output formats and the escaping of names are described in the usage
 * text below and, byte for byte, at the top of escape.c.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* ppoll; config.h says the same */
#endif
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <linux/capability.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <time.h>
#include <pthread.h>
#include <unistd.h>

#include <notifyx.h>

#include "bench.h"
#include "format.h"
#include "tool.h"

const char *progname = "notifyx";

static void usage_main(FILE *f)
{
	fprintf(f,
"Usage: notifyx COMMAND [OPTION]... [ARG]...\n"
"       notifyx --help | --version\n"
"\n"
"Report file changes with libnotifyx (inotify, fanotify, dnotify, polling).\n"
"\n"
"Commands:\n"
"  watch [OPTION]... PATH...   print the events of PATH..., one per line\n"
"  run [OPTION]... PATH... -- COMMAND [ARG]...\n"
"                              run COMMAND, and again after each change\n"
"  backends                    list the backends, whether each works here,\n"
"                              and the events each can report\n"
"  bench [OPTION]... [DIR]     compare the backends on DIR's filesystem\n"
"                              (\"notifyx bench --help\")\n"
"  help [watch|run]            the same as --help (notifyx watch --help)\n"
"\n"
"Options:\n"
"  -h, --help      show this help (\"notifyx watch --help\" for watch)\n"
"  -V, --version   show the version of the libnotifyx library in use\n"
"\n"
"Output of \"backends\": one line per backend, in the order inotify,\n"
"fanotify, dnotify, poll:\n"
"  NAME yes EVENT,EVENT,...   the backend starts here and reports these events\n"
"                             (fanotify adds how it marks recursive watches)\n"
"  NAME no: REASON            it cannot start here (REASON is strerror(3))\n"
"\n"
"Exit status: 0 success, 1 failure, 2 usage error, 3 watch -t timed out.\n"
"\"backends\" exits 0 when at least one backend works, else 1.\n"
"\n"
"Examples:\n"
"  notifyx watch -r -e create,delete,rename src/\n"
"      create \"src/new\\nname.c\"\n"
"      rename \"src/b.c\" from \"src/a.c\"\n"
"      delete isdir \"src/old\"\n"
"  notifyx watch --format=json /etc | jq -r .path\n"
"  notifyx run -r src -- make\n");
}

static void usage_watch(FILE *f)
{
	fprintf(f,
"Usage: notifyx watch [OPTION]... PATH...\n"
"\n"
"Watch each PATH (a file or a directory) and print one line per event on\n"
"standard output.  The output is flushed after each batch of events that\n"
"libnotifyx returns, so that a reader of a pipe sees events as they come.\n"
"With -r and a terminal on standard error, the setup shows its progress\n"
"there (directories watched so far).\n"
"Options and PATHs may be mixed; \"--\" ends the options.\n"
"\n"
"Options:\n"
"  -r, --recursive        watch whole directory trees, including directories\n"
"                         created later\n"
"      --xdev             with -r, do not enter other mounted filesystems\n"
"      --no-follow        watch a PATH that is a symbolic link itself, not\n"
"                         what it points to\n"
"      --fromfile=FILE    watch the paths listed in FILE too, one per line\n"
"                         (\"-\": standard input; empty lines are skipped)\n"
"  -b, --backend=NAME     auto (default: inotify, else fanotify, else poll;\n"
"                         the NOTIFYX_BACKEND environment variable applies),\n"
"                         inotify, fanotify, dnotify or poll\n"
"  -e, --event=EVENTS     comma-separated event names (access, modify, attrib,\n"
"                         close_write, close_nowrite, open, create, delete,\n"
"                         rename, moved_out, moved_in, delete_self, move_self),\n"
"                         or \"all\": every event the backend supports; may be\n"
"                         given more than once.  The default is every event\n"
"                         but access, open and close_nowrite, which merely\n"
"                         reading the tree causes (ls, a compiler): -e all\n"
"                         asks for those too\n"
"  -x, --exclude=GLOB     do not report or enter entries matching GLOB: with a\n"
"                         '/', matched against the path below the watched\n"
"                         PATH, else against the entry's name (fnmatch(3));\n"
"                         may be given more than once\n"
"      --include=GLOB     report only entries matching GLOB (matched as for\n"
"                         -x), or an --ext; may be given more than once.\n"
"                         Directories are still entered, -x still wins, and\n"
"                         events of a PATH itself are always reported\n"
"      --ext=EXT[,EXT]... report only names ending in .EXT (--ext c,h is\n"
"                         --include '*.c' --include '*.h')\n"
"      --list             first report every entry already there as a\n"
"                         synthetic create (PATH must be a directory)\n"
"      --rescan           after an overflow, report what changed meanwhile\n"
"                         (synthetic events), then a sync line\n"
"      --queue-max=N      events the library queues before an overflow\n"
"      --format=FORMAT    text (default), json, nul, or a TEMPLATE with %%\n"
"                         directives (below)\n"
"  -0, --null             the same as --format=nul\n"
"      --timefmt=FMT      strftime(3) format of %%T in a TEMPLATE; with the\n"
"                         text format, each line starts with the time so\n"
"                         formatted and a space\n"
"  -1, --oneshot          exit after the first event (the same as -n 1)\n"
"  -n, --count=N          exit after N events (ignored does not count)\n"
"  -t, --timeout=SECONDS  exit after SECONDS (decimals allowed) from when the\n"
"                         watches are in place\n"
"  -h, --help             show this help\n"
"\n"
"Text format, one event per line:\n"
"  EVENT [FLAG]... \"PATH\" [from \"OLD_PATH\"] [: MESSAGE]\n"
"  EVENT is the event name as libnotifyx spells it (create, delete, rename,\n"
"  ..., and overflow, unmount, error, ignored, which are always reported).\n"
"  FLAGs: isdir, synthetic, exchange, and cookie=N when N is not 0.\n"
"  PATH is the watched PATH joined with the path of the entry (PATH itself\n"
"  for an event of the watched PATH).  \"from\" OLD_PATH comes with rename.\n"
"  MESSAGE: for error, strerror(3) of its error; for overflow,\n"
"  \"events were lost\".\n"
"  Names are escaped C-style between double quotes: \\\\ \\\" \\n \\t \\r, and\n"
"  \\xHH (two hex digits) for other control bytes, bytes that are not valid\n"
"  UTF-8, and a few characters that could fool a terminal; valid UTF-8 is\n"
"  written as itself.  Decoding the escapes gives back the exact bytes.\n"
"\n"
"JSON format (--format=json), one object per line, with the keys:\n"
"  time       seconds since the Epoch, with microseconds, when the event was\n"
"             read\n"
"  wd         the watch descriptor (one per PATH, in the order given)\n"
"  root       the watched PATH as given\n"
"  path       the entry's path below root (\"\" for root itself)\n"
"  old_path   rename: the entry's previous path below root; else null\n"
"  event      the event name, as in the text format\n"
"  isdir, synthetic, exchange   booleans, the event's flags\n"
"  cookie     the number pairing moved_out and moved_in; 0 when none\n"
"  error      the errno value of an error event; 0 when none\n"
"  error_text strerror(3) of error; null when error is 0\n"
"  Names that are valid UTF-8 are JSON strings of exactly that name.  A name\n"
"  that is not valid UTF-8 is shown with U+FFFD for each invalid byte, and\n"
"  the object then also has the key root_b64, path_b64 or old_path_b64\n"
"  with the exact bytes in base64: decode that key when it is present.\n"
"\n"
"NUL format (--format=nul): for each event, its path (as in the text\n"
"format: PATH joined with the entry's path; the new one for rename) as raw\n"
"bytes followed by a NUL byte, for xargs -0.\n"
"\n"
"TEMPLATE (--format='%%e %%p'): one line per event, the template with:\n"
"  %%e event name     %%p path (as in text)   %%r path below the watched PATH\n"
"  %%o old path (rename; else empty)          %%w the watched PATH\n"
"  %%t time (as in JSON)  %%T local time as --timefmt says (default\n"
"  %%Y-%%m-%%dT%%H:%%M:%%S%%z)    %%c cookie  %%f flags (isdir,synthetic,exchange)\n"
"  %%%% a percent sign\n"
"  Names are escaped as in the text format, without the quotes: a name\n"
"  without backslashes, control bytes or invalid UTF-8 is itself.\n"
"\n"
"Exit status:\n"
"  0  -1 or -n N: that many events were printed; -t without -1 or -n: at\n"
"     least one event was; every watch ended (each reported ignored, for\n"
"     example after its PATH was deleted); or SIGINT or SIGTERM, once the\n"
"     events already read are written out (a signal ignored when notifyx\n"
"     starts, as SIGINT is in a background job of a non-interactive shell,\n"
"     stays ignored)\n"
"  1  a PATH cannot be watched (before any event is printed), or any other\n"
"     error, with a message \"notifyx: PATH: REASON\" on standard error\n"
"  2  a usage error\n"
"  3  -t: the time ran out before the events counted above\n"
"\n"
"Examples:\n"
"  notifyx watch -r --ext c,h src            C sources and headers only\n"
"  notifyx watch -r --include 'Makefile*' -x .git .\n"
"  notifyx watch -e all -r src               reads (open, access) too\n"
"  notifyx watch -r --xdev --no-follow /srv  one filesystem; /srv's link\n"
"  notifyx watch -r --list -e create,delete,rename spool\n"
"                                            what is there, then changes\n"
"  notifyx watch --timefmt '%%H:%%M:%%S' log   \"12:00:01 modify \"log\"\"\n"
"  notifyx watch --timefmt '%%T' --format='%%T %%e %%p' log\n"
"  find src -name '*.c' | notifyx watch --fromfile=- -e close_write\n"
"  notifyx watch -0 -e close_write logs | xargs -0 -n 1 gzip -k\n");
}

void try_help(const char *cmd)
{
	fprintf(stderr, "Try '%s%s%s --help' for more information.\n",
		progname, cmd ? " " : "", cmd ? cmd : "");
}

/* ---- names --------------------------------------------------------------- */

static const uint32_t all_backends[] = {
	NOTIFYX_BACKEND_INOTIFY,
	NOTIFYX_BACKEND_FANOTIFY,
	NOTIFYX_BACKEND_DNOTIFY,
	NOTIFYX_BACKEND_POLL,
};

#define N_BACKENDS (sizeof(all_backends) / sizeof(all_backends[0]))

/* Fallback names, used only if the library does not know one of them. */
const char *backend_name(uint32_t b)
{
	const char *n = notifyx_backend_name(b);
	static const char *const fallback[] = { "auto", "inotify", "fanotify", "dnotify", "poll" };

	if (n)
		return n;
	return b < sizeof(fallback) / sizeof(fallback[0]) ? fallback[b] : "unknown";
}

int parse_backend(const char *s, uint32_t *out)
{
	size_t i;

	if (strcasecmp(s, "auto") == 0) {
		*out = NOTIFYX_BACKEND_AUTO;
		return 0;
	}
	for (i = 0; i < N_BACKENDS; i++) {
		if (strcasecmp(s, backend_name(all_backends[i])) == 0) {
			*out = all_backends[i];
			return 0;
		}
	}
	return -1;
}

/* Writes the event name of mask (exactly one bit, normally) to f. */
void put_event_name(FILE *f, uint32_t mask)
{
	const char *n = notifyx_event_name(mask);

	if (n)
		fputs(n, f);
	else
		fprintf(f, "0x%08x", (unsigned)mask);
}

/* Comma-separated names of the event bits in mask. */
void put_event_list(FILE *f, uint32_t mask)
{
	int first = 1;
	unsigned i;

	for (i = 0; i < 32; i++) {
		if (!(mask & (1u << i)))
			continue;
		if (!first)
			fputc(',', f);
		put_event_name(f, 1u << i);
		first = 0;
	}
	if (first)
		fputs("none", f);
}

/*
 * Parses a comma-separated list of event names into *mask; "all" sets
 * *want_all.  Returns 0, or -1 after a message.
 */
int parse_events(const char *list, uint32_t *mask, int *want_all)
{
	const char *p = list;

	while (*p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		uint32_t bit = 0;
		unsigned i;

		if (len == 3 && strncasecmp(p, "all", 3) == 0) {
			*want_all = 1;
		} else if (len > 0) {
			for (i = 0; i < 32; i++) {
				const char *n = notifyx_event_name(1u << i);

				if ((1u << i) & NOTIFYX_ALL_EVENTS && n &&
				    strlen(n) == len && strncasecmp(n, p, len) == 0) {
					bit = 1u << i;
					break;
				}
			}
			if (!bit) {
				fprintf(stderr, "%s: unknown event '%.*s' (known: all,",
					progname, (int)len, p);
				put_event_list(stderr, NOTIFYX_ALL_EVENTS);
				fputs(")\n", stderr);
				return -1;
			}
			*mask |= bit;
		}
		if (!end)
			break;
		p = end + 1;
	}
	return 0;
}

/* ---- error messages ---------------------------------------------------------- */

/* "notifyx: WHAT: strerror(err)", and a hint for the limits one can raise. */
void report_error(const char *what, int err, uint32_t backend, int opening)
{
	fprintf(stderr, "%s: %s: %s\n", progname, what, strerror(err));
	if (err == ENOSPC && backend == NOTIFYX_BACKEND_INOTIFY)
		fprintf(stderr, "%s: the inotify watch limit was reached: raise the sysctl "
			"fs.inotify.max_user_watches (/proc/sys/fs/inotify/max_user_watches; "
			"in a user namespace, /proc/sys/user/max_inotify_watches)\n", progname);
	else if (err == ENOSPC && backend == NOTIFYX_BACKEND_FANOTIFY)
		fprintf(stderr, "%s: the fanotify mark limit was reached: see "
			"/proc/sys/fs/fanotify/max_user_marks\n", progname);
	else if (err == EMFILE && opening &&
		 (backend == NOTIFYX_BACKEND_INOTIFY || backend == NOTIFYX_BACKEND_AUTO))
		fprintf(stderr, "%s: the inotify instance limit "
			"(/proc/sys/fs/inotify/max_user_instances) or the open "
			"file limit (ulimit -n) was reached\n", progname);
	else if (err == EMFILE && opening && backend == NOTIFYX_BACKEND_FANOTIFY)
		fprintf(stderr, "%s: the fanotify group limit "
			"(/proc/sys/fs/fanotify/max_user_groups) or the open "
			"file limit (ulimit -n) was reached\n", progname);
	else if (err == EMFILE)
		fprintf(stderr, "%s: the open file limit (ulimit -n) was reached\n",
			progname);
}

/* ---- watch ----------------------------------------------------------------- */

static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

/* Installs sa for sig, unless sig was ignored when the tool started (as SIGINT
 * is in a background job of a non-interactive shell): that stays ignored. */
bool catch_signal(int sig, const struct sigaction *sa)
{
	struct sigaction old;

	if (sigaction(sig, NULL, &old) == 0 && old.sa_handler == SIG_IGN)
		return false;
	return sigaction(sig, sa, NULL) == 0;
}

struct watch {
	int wd;
	const char *root;
	int live;
};

enum { OPT_FORMAT = OPT_FIRST_OWN, OPT_TIMEFMT, OPT_LIST };

static const char *const watch_short = "rb:e:x:01n:t:h";
static const struct option watch_long[] = {
	OPTS_LONG_OPTIONS,
	{ "list",      no_argument,       NULL, OPT_LIST },
	{ "format",    required_argument, NULL, OPT_FORMAT },
	{ "null",      no_argument,       NULL, '0' },
	{ "timefmt",   required_argument, NULL, OPT_TIMEFMT },
	{ "oneshot",   no_argument,       NULL, '1' },
	{ "count",     required_argument, NULL, 'n' },
	{ "timeout",   required_argument, NULL, 't' },
	{ "help",      no_argument,       NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* A count of events: a whole number from 1. */
static int parse_count(const char *s, unsigned long *out)
{
	char *end;

	errno = 0;
	if (*s < '0' || *s > '9')
		return -1;
	*out = strtoul(s, &end, 10);
	return errno || *end || *out == 0 ? -1 : 0;
}

/* Seconds, decimals allowed, more than 0 and at most a year. */
static int parse_seconds(const char *s, struct timespec *out)
{
	char *end;
	double v;

	errno = 0;
	if ((*s < '0' || *s > '9') && *s != '.')
		return -1;
	v = strtod(s, &end);
	if (errno || *end || !(v > 0) || v > 366.0 * 86400)
		return -1;
	out->tv_sec = (time_t)v;
	out->tv_nsec = (long)((v - (double)out->tv_sec) * 1e9);
	return 0;
}

static int cmd_watch(int argc, char **argv)
{
	struct watch_opts o;
	struct notifyx *nx = NULL;
	int opt, taken, live, i, status = EXIT_SUCCESS;
	struct output out = { .format = FORMAT_TEXT };
	unsigned long count = 0, seen = 0;
	struct timespec timeout = { 0, 0 }, deadline = { 0, 0 };
	int has_timeout = 0, progress, nwatch;
	struct watch *watches = NULL;
	struct sigaction sa;
	sigset_t block, orig, stops;
	size_t bufsize;
	void *buf = NULL;

	if (opts_init(&o, argc) < 0) {
		status = EXIT_FAILURE;
		goto out;
	}

	/* Options and paths may mix; "--" ends the options. */
	optind = 0;
	while ((opt = getopt_long(argc, argv, watch_short, watch_long, NULL)) != -1) {
		taken = opts_parse(&o, opt, optarg);
		if (taken == 1)
			continue;
		if (taken == -2) {
			status = EXIT_FAILURE;
			goto out;
		}
		if (taken == -1)
			goto usage;
		switch (opt) {
		case OPT_FORMAT:
			if (fmt_parse(&out, optarg) < 0)
				goto usage;
			break;
		case '0':
			out.format = FORMAT_NUL;
			break;
		case OPT_TIMEFMT:
			out.timefmt = optarg;
			break;
		case OPT_LIST:
			o.flags |= NOTIFYX_WATCH_LIST;
			break;
		case '1':
			count = 1;
			break;
		case 'n':
			if (parse_count(optarg, &count) < 0) {
				fprintf(stderr, "%s: --count: '%s' is not a whole number from 1\n",
					progname, optarg);
				goto usage;
			}
			break;
		case 't':
			if (parse_seconds(optarg, &timeout) < 0) {
				fprintf(stderr, "%s: --timeout: '%s' is not a number of seconds "
					"above 0\n", progname, optarg);
				goto usage;
			}
			has_timeout = 1;
			break;
		case 'h':
			usage_watch(stdout);
			status = fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
			goto out;
		default:
			goto usage;
		}
	}
	if (opts_add_paths(&o, argv + optind, argc - optind) < 0) {
		status = EXIT_FAILURE;
		goto out;
	}
	if (o.paths.n == 0) {
		fprintf(stderr, "%s: watch: no PATH given\n", progname);
		goto usage;
	}
	if (fmt_check_timefmt(&out) < 0)
		goto usage;
	if ((o.flags & NOTIFYX_WATCH_LIST) && o.events && !o.want_all &&
	    !(o.events & NOTIFYX_CREATE)) {
		fprintf(stderr, "%s: --list reports the entries as create events: "
			"-e must include create\n", progname);
		goto usage;
	}
	nwatch = (int)o.paths.n;

	nx = opts_open(&o);
	if (!nx) {
		status = EXIT_FAILURE;
		goto out;
	}

	watches = calloc((size_t)nwatch, sizeof(*watches));
	if (!watches) {
		fprintf(stderr, "%s: %s\n", progname, strerror(ENOMEM));
		status = EXIT_FAILURE;
		goto out;
	}
	progress = (o.flags & NOTIFYX_WATCH_RECURSIVE) && isatty(STDERR_FILENO);
	for (i = 0; i < nwatch; i++) {
		const char *path = o.paths.v[i];
		int wd = progress ? add_watch_progress(nx, path, o.events, o.flags) :
				    notifyx_add_watch(nx, path, o.events, o.flags);

		if (wd < 0) {
			opts_add_failed(nx, &o, path, errno);
			status = EXIT_FAILURE;
			goto out;
		}
		watches[i].wd = wd;
		watches[i].root = path;
		watches[i].live = 1;
	}
	live = nwatch;

	/*
	 * SIGINT and SIGTERM are blocked but while waiting for events, so that
	 * a batch is always written out whole before the tool ends.
	 */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &orig);
	sigdelset(&orig, SIGINT);
	sigdelset(&orig, SIGTERM);
	sigemptyset(&stops);
	if (catch_signal(SIGINT, &sa))
		sigaddset(&stops, SIGINT);
	if (catch_signal(SIGTERM, &sa))
		sigaddset(&stops, SIGTERM);

	bufsize = NOTIFYX_EVENT_MAX > 65536 ? NOTIFYX_EVENT_MAX : 65536;
	buf = malloc(bufsize);
	if (!buf) {
		fprintf(stderr, "%s: %s\n", progname, strerror(ENOMEM));
		status = EXIT_FAILURE;
		goto out;
	}

	/* The time counts from when every watch is in place. */
	if (has_timeout) {
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += timeout.tv_sec;
		deadline.tv_nsec += timeout.tv_nsec;
		if (deadline.tv_nsec >= 1000000000L) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000L;
		}
	}

	while (live > 0 && !stop_signal && (count == 0 || seen < count)) {
		struct pollfd pfd = { .fd = notifyx_fd(nx), .events = POLLIN };
		const struct notifyx_event *ev, *end;
		struct timespec now, left, *wait = NULL;
		ssize_t n;
		int r;

		if (has_timeout) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			left.tv_sec = deadline.tv_sec - now.tv_sec;
			left.tv_nsec = deadline.tv_nsec - now.tv_nsec;
			if (left.tv_nsec < 0) {
				left.tv_sec--;
				left.tv_nsec += 1000000000L;
			}
			wait = &left;
		}
		/* a stream of events does not keep the tool past its deadline */
		r = wait && wait->tv_sec < 0 ? 0 : ppoll(&pfd, 1, wait, &orig);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			report_error("poll", errno, 0, 0);
			status = EXIT_FAILURE;
			break;
		}
		if (r == 0) {
			/* without a count, any event seen makes the run a success */
			status = seen >= (count ? count : 1) ? EXIT_SUCCESS : EXIT_TIMEOUT;
			break;
		}
		n = notifyx_read(nx, buf, bufsize);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			report_error("read", errno, 0, 0);
			status = EXIT_FAILURE;
			break;
		}
		clock_gettime(CLOCK_REALTIME, &now);
		ev = buf;
		end = (const struct notifyx_event *)(const void *)((char *)buf + n);
		for (; ev < end && (count == 0 || seen < count); ev = notifyx_event_next(ev)) {
			const char *root = NULL;

			if (ev->size < sizeof(*ev) || (size_t)((const char *)end - (const char *)ev) < ev->size)
				break; /* never happens with a sound library */
			for (i = 0; i < nwatch; i++)
				if (watches[i].wd == ev->wd)
					break;
			if (i < nwatch) {
				root = watches[i].root;
				if (ev->mask == NOTIFYX_IGNORED && watches[i].live) {
					watches[i].live = 0;
					live--;
				}
			} else {
				root = notifyx_watch_path(nx, ev->wd);
				if (!root)
					root = "?";
			}
			if (!opts_filter(&o, ev))
				continue;
			/* The end of a listing is no change: no path for xargs -0,
			 * and not one of the events -1 or -n counts. */
			if (ev->mask == NOTIFYX_SYNC && out.format == FORMAT_NUL)
				continue;
			fmt_print(stdout, &out, ev, root, &now);
			/* ignored only closes a watch whose ending was reported */
			if (ev->mask != NOTIFYX_IGNORED && ev->mask != NOTIFYX_SYNC)
				seen++;
		}
		if (fflush(stdout) != 0 || ferror(stdout)) {
			report_error("standard output", errno, 0, 0);
			status = EXIT_FAILURE;
			break;
		}
		/* ppoll delivers a signal it unblocks only when it waits: with
		 * events always ready (a stream that never pauses, such as the
		 * tool's own output written inside the tree it watches), it
		 * returns at once and the signal stays pending.  Taken here. */
		if (!stop_signal) {
			int sig = sigtimedwait(&stops, NULL, &(struct timespec){ 0, 0 });
			if (sig > 0)
				stop_signal = sig;
		}
	}

out:
	free(buf);
	free(watches);
	opts_free(&o);
	notifyx_close(nx);
	return status;

usage:
	try_help("watch");
	status = EXIT_USAGE;
	goto out;
}

/* ---- backends ---------------------------------------------------------------- */

/* The fanotify backend marks whole filesystems for recursive watches when
 * the process has CAP_SYS_ADMIN (in its effective set), else each directory. */
static int has_sys_admin(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d) < 0)
		return 0;
	return (d[CAP_SYS_ADMIN / 32].effective >> (CAP_SYS_ADMIN % 32)) & 1;
}

static int cmd_backends(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt, working = 0;
	size_t i;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (opt == 'h') {
			usage_main(stdout);
			return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
		}
		try_help(NULL);
		return EXIT_USAGE;
	}
	if (optind < argc) {
		fprintf(stderr, "%s: backends: unexpected argument '%s'\n", progname, argv[optind]);
		try_help(NULL);
		return EXIT_USAGE;
	}
	for (i = 0; i < N_BACKENDS; i++) {
		struct notifyx_config cfg;
		struct notifyx *nx;

		memset(&cfg, 0, sizeof(cfg));
		cfg.size = sizeof(cfg);
		cfg.backend = all_backends[i];
		cfg.flags = NOTIFYX_NONBLOCK;
		nx = notifyx_open(&cfg);
		if (!nx) {
			printf("%s no: %s\n", backend_name(all_backends[i]), strerror(errno));
			continue;
		}
		printf("%s yes ", backend_name(all_backends[i]));
		put_event_list(stdout, notifyx_supported_events(nx) & NOTIFYX_ALL_EVENTS);
		if (all_backends[i] == NOTIFYX_BACKEND_FANOTIFY)
			printf("; recursive watches: %s; filesystems without file handles or id: ENODEV",
			       has_sys_admin() ? "inode marks up to max_user_marks/2 directories, "
						 "one filesystem mark per filesystem beyond (CAP_SYS_ADMIN)"
					       : "an inode mark per directory (no CAP_SYS_ADMIN)");
		putchar('\n');
		notifyx_close(nx);
		working++;
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		report_error("standard output", errno, 0, 0);
		return EXIT_FAILURE;
	}
	return working ? EXIT_SUCCESS : EXIT_FAILURE;
}

#ifndef NOTIFYX_TOOL_RUN
/* This build found no libev (configure's HAVE_LIBEV): run is missing. */
int tool_run(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "%s: run: this notifyx was built without libev, which "
		"\"run\" needs\n", progname);
	return EXIT_FAILURE;
}
#endif

/* ---- main -------------------------------------------------------------------- */

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help",    no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd;
	int opt;

	/* "+": stop at the command; its options are its own. */
	while ((opt = getopt_long(argc, argv, "+hV", longopts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			usage_main(stdout);
			return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
		case 'V':
			printf("notifyx (libnotifyx) %s\n", notifyx_version());
			return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
		default:
			try_help(NULL);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "%s: no command given\n", progname);
		usage_main(stderr);
		return EXIT_USAGE;
	}
	cmd = argv[optind];
	if (strcmp(cmd, "watch") == 0)
		return cmd_watch(argc - optind, argv + optind);
	if (strcmp(cmd, "run") == 0)
		return tool_run(argc - optind, argv + optind);
	if (strcmp(cmd, "backends") == 0)
		return cmd_backends(argc - optind, argv + optind);
	if (strcmp(cmd, "bench") == 0) /* tools/bench.c */
		return tool_bench(argc - optind, argv + optind);
	if (strcmp(cmd, "help") == 0) {
		static char *run_help[] = { "run", "--help", NULL };

		if (optind + 1 < argc && strcmp(argv[optind + 1], "watch") == 0)
			usage_watch(stdout);
		else if (optind + 1 < argc && strcmp(argv[optind + 1], "run") == 0)
			return tool_run(2, run_help);
		else
			usage_main(stdout);
		return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
	}
	fprintf(stderr, "%s: unknown command '%s'\n", progname, cmd);
	try_help(NULL);
	return EXIT_USAGE;
}
