/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Conformance test, the hold of a lone first half of a move (API.md,
 * "Events": at most 10 ms from the moment the library read it, released
 * sooner after 128 later records, holds overlap, never overtaken, other
 * watches go on).  Run from conformance.c's main through conf_hold_run().
 * The rules a real kernel cannot be made to show on demand (the 128-record
 * distance, a second half after its first was given up) are checked on
 * records fed to the inotify backend in unit-inotify-mask.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "conformance.h"

#define MANY 1000

/*
 * MANY files moved out of a watch, one after another: every one is reported
 * once, in order, with no OVERFLOW, and the last soon after the last rename.
 * Holds that followed one another (10 ms each) needed MANY * 10 ms = 10 s;
 * overlapping holds need one wait, so 2 s is generous on a loaded machine.
 */
static void many_moved_out(void **state)
{
	struct tu_fix *f = F(state);
	char w[4096], out[4096], name[16];
	int wd;

	snprintf(w, sizeof(w), "%s", tu_path(f->dir, "w"));
	snprintf(out, sizeof(out), "%s", tu_path(f->dir, "out"));
	tu_mkdir(w);
	tu_mkdir(out);
	for (int i = 0; i < MANY; i++) {
		snprintf(name, sizeof(name), "f%04d", i);
		tu_touch(tu_path(w, name));
	}
	wd = tu_add(&f->log, w, NOTIFYX_MOVED_OUT | NOTIFYX_DELETE, 0);
	for (int i = 0; i < MANY; i++) {
		snprintf(name, sizeof(name), "f%04d", i);
		tu_rename(tu_path(w, name), tu_path(out, name));
	}
	long t0 = tu_now_ms();
	/* A scanning backend sees a move to an unwatched place as DELETE. */
	uint32_t type = f->log.scanning ? NOTIFYX_DELETE : NOTIFYX_MOVED_OUT;
	snprintf(name, sizeof(name), "f%04d", MANY - 1);
	ssize_t k = tu_wait_from(&f->log, 0, wd, type, name, 2000 + (f->log.scanning ? 2 * tu_quiet_ms(f->nx) : 0));
	long dt = tu_now_ms() - t0;
	if (k < 0) {
		tu_dump(&f->log, "actual");
		fail_msg("%d files moved out: the last not read within 2 s of the last rename "
			 "(holds must overlap: one wait of at most 10 ms, not one each)", MANY);
	}
	print_message("  %d moves out read %ld ms after the last rename\n", MANY, dt);
	tu_settle(&f->log);
	TU_EQ("OVERFLOW events", 0, tu_count(&f->log, wd, NOTIFYX_OVERFLOW, NULL));
	TU_EQ("events of the watch", MANY, tu_count_wd(&f->log, wd));
	size_t n = 0;
	for (size_t i = 0; i < f->log.n; i++) {
		const struct tu_ev *e = &f->log.ev[i];
		if (e->wd != wd)
			continue;
		snprintf(name, sizeof(name), "f%04d", (int)n);
		/* A scan reports what it found in no particular order. */
		if (e->mask != type || (!f->log.scanning && strcmp(e->path, name)) || e->cookie) {
			tu_dump(&f->log, "actual");
			fail_msg("event %zu of the watch: expected %s \"%s\" with cookie 0, read %s \"%s\" "
				 "cookie %u", n, tu_mask_str(type), name, tu_mask_str(e->mask), e->path,
				 e->cookie);
		}
		n++;
	}
}

/*
 * A lone first half is held, but only the events of its own watch wait
 * behind it: a non-blocking read returns another watch's event read with it
 * at once (before it), and the held one's own later event after it.
 */
static void hold_blocks_own_watch_only(void **state)
{
	struct tu_fix *f = F(state);
	const char *a = tu_path(f->dir, "a"), *b = tu_path(f->dir, "b"), *out = tu_path(f->dir, "out");
	int wa, wb;

	tu_require_inotify(f->nx, "the backend that holds the first half of a move");
	tu_mkdir(a);
	tu_mkdir(b);
	tu_mkdir(out);
	tu_touch(tu_path(a, "f"));
	tu_touch(tu_path(a, "h"));
	wa = tu_add(&f->log, a, NOTIFYX_MOVED_OUT | NOTIFYX_ATTRIB, 0);
	wb = tu_add(&f->log, b, NOTIFYX_CREATE, 0);
	/* Whatever the library does to end the hold sooner is its own. */
	uint32_t reads = NOTIFYX_OPEN | NOTIFYX_ACCESS | NOTIFYX_CLOSE_NOWRITE;
	int wr = tu_add(&f->log, a, reads, 0), wp = tu_add(&f->log, f->dir, reads, 0);
	/* All three are in the kernel queue before the first read; the
	 * ATTRIB is no change of a's entries (which would show that the move
	 * is over: see sync_holds in backends/inotify-hold.c). */
	tu_rename(tu_path(a, "f"), tu_path(out, "f"));
	assert_int_equal(chmod(tu_path(a, "h"), 0600), 0);
	tu_touch(tu_path(b, "g"));
	ssize_t g = TU_WAIT(&f->log, wb, NOTIFYX_CREATE, "g");
	ssize_t mo = TU_WAIT(&f->log, wa, NOTIFYX_MOVED_OUT, "f");
	tu_settle(&f->log);
	TU_BEFORE(&f->log, g, mo, "the other watch's CREATE g before the held MOVED_OUT f");
	TU_SEQ(&f->log, wa, NOTIFYX_MOVED_OUT, "f", NOTIFYX_ATTRIB, "h", 0u);
	TU_EQ("cookie of the lone MOVED_OUT", 0, f->log.ev[mo].cookie);
	for (uint32_t t = NOTIFYX_CLOSE_NOWRITE; t <= NOTIFYX_OPEN; t <<= 1) {
		if (!(t & reads))
			continue;
		TU_NONE(&f->log, wr, t, "");
		TU_NONE(&f->log, wp, t, "a");
	}
}

/*
 * The hold ends early by a lookup in the directory the move left, reached
 * through the watch's root; a root moved away, with another directory made
 * at its old path, is not that directory (and a recursive watch reaches its
 * root through the descriptor it holds).  Moves out of such roots are
 * reported all the same, each once, with no OVERFLOW.
 */
static void moved_root_moves_out(void **state)
{
	struct tu_fix *f = F(state);
	char w[4096], moved[4096], out[4096], r[4096], rmoved[4096];
	int wd, wr;

	tu_require_inotify(f->nx, "the backend that holds the first half of a move");
	snprintf(w, sizeof(w), "%s", tu_path(f->dir, "w"));
	snprintf(moved, sizeof(moved), "%s", tu_path(f->dir, "w2"));
	snprintf(r, sizeof(r), "%s", tu_path(f->dir, "r"));
	snprintf(rmoved, sizeof(rmoved), "%s", tu_path(f->dir, "r2"));
	snprintf(out, sizeof(out), "%s", tu_path(f->dir, "out"));
	tu_mkdir(w);
	tu_mkdir(r);
	tu_mkdir(out);
	tu_touch(tu_path(w, "f"));
	tu_touch(tu_path(r, "g"));
	wd = tu_add(&f->log, w, NOTIFYX_MOVED_OUT, 0);
	wr = tu_add(&f->log, r, NOTIFYX_MOVED_OUT, NOTIFYX_WATCH_RECURSIVE);
	tu_rename(w, moved);
	tu_mkdir(w);
	tu_rename(r, rmoved);
	tu_mkdir(r);
	tu_rename(tu_path(moved, "f"), tu_path(out, "f"));
	tu_rename(tu_path(rmoved, "g"), tu_path(out, "g"));
	TU_WAIT(&f->log, wd, NOTIFYX_MOVED_OUT, "f");
	TU_WAIT(&f->log, wr, NOTIFYX_MOVED_OUT, "g");
	tu_settle(&f->log);
	TU_EQ("MOVED_OUT f", 1, tu_count(&f->log, wd, NOTIFYX_MOVED_OUT, "f"));
	TU_EQ("MOVED_OUT g", 1, tu_count(&f->log, wr, NOTIFYX_MOVED_OUT, "g"));
	TU_EQ("OVERFLOW events", 0, tu_count(&f->log, wd, NOTIFYX_OVERFLOW, NULL) +
		  tu_count(&f->log, wr, NOTIFYX_OVERFLOW, NULL));
}

int conf_hold_run(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(many_moved_out, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(hold_blocks_own_watch_only, tu_setup, tu_teardown),
		cmocka_unit_test_setup_teardown(moved_root_moves_out, tu_setup, tu_teardown),
	};

	return cmocka_run_group_tests_name("conformance: the hold of a move's first half", tests,
					   NULL, NULL);
}
