/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * NOTIFYX_BACKEND_AUTO (API.md 0.2): inotify, then fanotify, then poll, each
 * tried after any failure of the one before; never dnotify; when none
 * starts, the errno of the last.  tests/auto-order.sh runs this under the
 * fault shim with the backends' first system calls failing.
 *
 *   auto-order [EXPECTED,...]
 *
 * Opens inotify, fanotify and poll by name, works out what AUTO must give,
 * opens AUTO and compares; that answer must be one of EXPECTED ("inotify",
 * "fanotify", "poll" or "none"), so that each run of the script tests what
 * it means to.  AUTO must also leave the dnotify backend's signals
 * alone (SIGIO and SIGRTMIN+5 keep their default disposition).
 * Exit 0 pass, 1 fail.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <notifyx.h>

static int failures;

static void check(int ok, const char *what)
{
	if (!ok) {
		printf("FAIL: %s\n", what);
		failures++;
	}
}

static int default_disposition(int sig)
{
	struct sigaction sa;

	return sigaction(sig, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL &&
	       !(sa.sa_flags & SA_SIGINFO);
}

/* Opens backend b; returns whether it started, its errno in *err. */
static int starts(uint32_t b, int *err)
{
	struct notifyx_config cfg = { .size = sizeof(cfg), .backend = b };
	struct notifyx *nx = notifyx_open(&cfg);

	*err = nx ? 0 : errno;
	notifyx_close(nx);
	return nx != NULL;
}

int main(int argc, char **argv)
{
	static const uint32_t order[] = { NOTIFYX_BACKEND_INOTIFY, NOTIFYX_BACKEND_FANOTIFY,
					  NOTIFYX_BACKEND_POLL };
	uint32_t want = NOTIFYX_BACKEND_AUTO, got;
	int want_err = 0, err, i;
	const char *want_name;
	struct notifyx *nx;
	char what[256];

	unsetenv("NOTIFYX_BACKEND");
	setvbuf(stdout, NULL, _IONBF, 0);
	for (i = 0; i < 3; i++) {
		int ok = starts(order[i], &err);

		printf("%s by name: %s\n", notifyx_backend_name(order[i]), ok ? "starts" : strerror(err));
		if (ok && want == NOTIFYX_BACKEND_AUTO)
			want = order[i];
		want_err = err; /* when none starts: the last one's */
	}
	want_name = want == NOTIFYX_BACKEND_AUTO ? "none" : notifyx_backend_name(want);

	nx = notifyx_open(NULL);
	err = errno;
	got = nx ? notifyx_backend(nx) : NOTIFYX_BACKEND_AUTO;
	printf("AUTO: %s\n", nx ? notifyx_backend_name(got) : strerror(err));
	snprintf(what, sizeof what, "AUTO gave %s, expected %s (the first of inotify, fanotify, poll that starts)",
		 nx ? notifyx_backend_name(got) : "no handle", want_name);
	check(got == want, what);
	check(got != NOTIFYX_BACKEND_DNOTIFY, "AUTO picked dnotify, which only an application that names it gets");
	if (!nx && want == NOTIFYX_BACKEND_AUTO) {
		snprintf(what, sizeof what, "AUTO failed with %s, expected %s (poll's, the last tried)",
			 strerrorname_np(err), strerrorname_np(want_err));
		check(err == want_err, what);
	}
	notifyx_close(nx);
	check(default_disposition(SIGIO), "SIGIO no longer has its default disposition after AUTO");
	check(default_disposition(SIGRTMIN + 5),
	      "SIGRTMIN+5 no longer has its default disposition after AUTO");
	if (argc > 1) {
		char list[128], *save = NULL, *tok;
		int meant = 0;

		snprintf(list, sizeof list, "%s", argv[1]);
		for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
			meant |= !strcmp(tok, want_name);
		snprintf(what, sizeof what, "this run was meant to test AUTO giving %s, not %s",
			 argv[1], want_name);
		check(meant, what);
	}
	printf("%s\n", failures ? "auto-order: failed" : "auto-order: ok");
	return failures ? 1 : 0;
}
