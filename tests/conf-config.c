/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Conformance test, notifyx_open's configuration (struct notifyx_config's
 * size, flags and backend; NOTIFYX_BACKEND in the environment), and the
 * names and versions (notifyx_backend_name, notifyx_event_name, the version
 * macros).  Run from conformance.c's main through conf_config_run().
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conformance.h"

/* The header's version check is an integer constant expression. */
#if !NOTIFYX_CHECK_VERSION(0, 0, 0)
#error "NOTIFYX_CHECK_VERSION(0, 0, 0) is false"
#endif
#if !NOTIFYX_CHECK_VERSION(NOTIFYX_VERSION_MAJOR, NOTIFYX_VERSION_MINOR, NOTIFYX_VERSION_PATCH)
#error "NOTIFYX_CHECK_VERSION of the header's own version is false"
#endif
#if NOTIFYX_CHECK_VERSION(NOTIFYX_VERSION_MAJOR, NOTIFYX_VERSION_MINOR, NOTIFYX_VERSION_PATCH + 1)
#error "NOTIFYX_CHECK_VERSION of a later patch is true"
#endif
#if NOTIFYX_CHECK_VERSION(NOTIFYX_VERSION_MAJOR + 1, 0, 0)
#error "NOTIFYX_CHECK_VERSION of a later major is true"
#endif

static const uint32_t all_types[] = {
	NOTIFYX_ACCESS, NOTIFYX_MODIFY, NOTIFYX_ATTRIB, NOTIFYX_CLOSE_WRITE,
	NOTIFYX_CLOSE_NOWRITE, NOTIFYX_OPEN, NOTIFYX_CREATE, NOTIFYX_DELETE,
	NOTIFYX_RENAME, NOTIFYX_MOVED_OUT, NOTIFYX_MOVED_IN, NOTIFYX_DELETE_SELF,
	NOTIFYX_MOVE_SELF, NOTIFYX_OVERFLOW, NOTIFYX_UNMOUNT, NOTIFYX_ERROR, NOTIFYX_IGNORED,
};
#define NTYPES (sizeof all_types / sizeof all_types[0])

/* ---- configuration ---- */

static struct notifyx *open_cfg(const void *cfg)
{
	return notifyx_open(cfg);
}

static void config_size(void **state)
{
	struct {
		struct notifyx_config c;
		unsigned char tail[16];
	} big;
	struct notifyx_config c;
	struct notifyx *nx;
	uint32_t sizes[] = { 0, 1, 4, 8, 20, 23 };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		memset(&c, 0, sizeof c);
		c.size = sizes[i];
		c.backend = tu_backend;
		TU_ERRNO(tu_fmt("notifyx_open with size %u (below version 0)", sizes[i]),
			 open_cfg(&c) == NULL, EINVAL);
	}
	memset(&big, 0, sizeof big);
	big.c.size = sizeof big;
	big.c.backend = tu_backend;
	big.c.poll_interval_ms = tu_interval_ms;
	nx = open_cfg(&big);
	if (!nx)
		fail_msg("notifyx_open with a larger size and a zero tail: %s", strerrorname_np(errno));
	notifyx_close(nx);
	for (i = 0; i < sizeof big.tail; i++) {
		memset(big.tail, 0, sizeof big.tail);
		big.tail[i] = 1;
		TU_ERRNO(tu_fmt("notifyx_open with non-zero byte %zu past the known struct", i),
			 open_cfg(&big) == NULL, E2BIG);
	}
	/* The exact size, and NULL (all defaults), work. */
	memset(&c, 0, sizeof c);
	c.size = sizeof c;
	c.backend = tu_backend;
	nx = open_cfg(&c);
	assert_non_null(nx);
	notifyx_close(nx);
}

static void config_flags_backend(void **state)
{
	struct notifyx_config c;
	uint32_t bad_flags[] = { 0x2, 0x4, 0x80000000u, 0xffffffffu };
	uint32_t bad_backends[] = { 5, 6, 100, 0xffffffffu };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof bad_flags / sizeof bad_flags[0]; i++) {
		memset(&c, 0, sizeof c);
		c.size = sizeof c;
		c.backend = tu_backend;
		c.flags = bad_flags[i];
		TU_ERRNO(tu_fmt("notifyx_open with flags %#x", bad_flags[i]), open_cfg(&c) == NULL,
			 EINVAL);
	}
	for (i = 0; i < sizeof bad_backends / sizeof bad_backends[0]; i++) {
		memset(&c, 0, sizeof c);
		c.size = sizeof c;
		c.backend = bad_backends[i];
		TU_ERRNO(tu_fmt("notifyx_open with backend %u", bad_backends[i]),
			 open_cfg(&c) == NULL, EINVAL);
	}
}

/* signal tunes dnotify alone: there it must be a real-time signal (EINVAL
 * otherwise, the handle not made); the other backends open whatever it and
 * poll_interval_ms say. */
static void config_signal(void **state)
{
	int bad[] = { -1, SIGUSR1, SIGRTMIN - 1, SIGRTMAX + 1, 100000 };
	struct notifyx_config c;
	struct notifyx *nx;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memset(&c, 0, sizeof c);
		c.size = sizeof c;
		c.backend = tu_backend;
		c.poll_interval_ms = tu_interval_ms;
		c.signal = bad[i];
		if (tu_backend == NOTIFYX_BACKEND_DNOTIFY) {
			TU_ERRNO(tu_fmt("notifyx_open of dnotify with signal %d", bad[i]),
				 open_cfg(&c) == NULL, EINVAL);
			continue;
		}
		if (!(nx = open_cfg(&c)))
			fail_msg("notifyx_open with signal %d (which only dnotify uses): %s", bad[i],
				 strerrorname_np(errno));
		notifyx_close(nx);
	}
	memset(&c, 0, sizeof c);
	c.size = sizeof c;
	c.backend = tu_backend;
	c.signal = SIGRTMIN + 3;
	c.poll_interval_ms = tu_backend == NOTIFYX_BACKEND_POLL ||
			     tu_backend == NOTIFYX_BACKEND_DNOTIFY ? tu_interval_ms : 12345;
	nx = open_cfg(&c);
	if (!nx)
		fail_msg("notifyx_open with signal SIGRTMIN+3: %s", strerrorname_np(errno));
	notifyx_close(nx);
}

/* Open with backend AUTO; returns the backend in use or 0 with *err set. */
static uint32_t open_auto(int *err)
{
	struct notifyx_config c;
	struct notifyx *nx;
	uint32_t b;

	memset(&c, 0, sizeof c);
	c.size = sizeof c;
	nx = notifyx_open(&c);
	if (!nx) {
		*err = errno;
		return 0;
	}
	b = notifyx_backend(nx);
	notifyx_close(nx);
	*err = 0;
	if (b == NOTIFYX_BACKEND_AUTO)
		fail_msg("notifyx_backend returned AUTO (it never does)");
	return b;
}

static uint32_t open_explicit(uint32_t backend, int *err)
{
	struct notifyx_config c;
	struct notifyx *nx;
	uint32_t b;

	memset(&c, 0, sizeof c);
	c.size = sizeof c;
	c.backend = backend;
	nx = notifyx_open(&c);
	if (!nx) {
		*err = errno;
		return 0;
	}
	b = notifyx_backend(nx);
	notifyx_close(nx);
	*err = 0;
	return b;
}

static char *saved_env;

static int env_setup(void **state)
{
	const char *e = getenv("NOTIFYX_BACKEND");

	(void)state;
	saved_env = e ? strdup(e) : NULL;
	return 0;
}

static int env_teardown(void **state)
{
	(void)state;
	if (saved_env)
		setenv("NOTIFYX_BACKEND", saved_env, 1);
	else
		unsetenv("NOTIFYX_BACKEND");
	free(saved_env);
	saved_env = NULL;
	return 0;
}

static void config_env(void **state)
{
	uint32_t plain, b, want;
	int err, err2;
	const char *garbage[] = { "INOTIFY", "Inotify", "inotify ", " poll", "foo", "0", "1",
				  "auto,inotify", "AUTO" };
	size_t i;

	(void)state;
	unsetenv("NOTIFYX_BACKEND");
	plain = open_auto(&err);
	if (!plain)
		fail_msg("notifyx_open(AUTO) without NOTIFYX_BACKEND failed: %s", strerrorname_np(err));
	setenv("NOTIFYX_BACKEND", "", 1);
	b = open_auto(&err);
	TU_EQ("NOTIFYX_BACKEND=\"\" keeps AUTO (backend in use)", plain, b);
	setenv("NOTIFYX_BACKEND", "auto", 1);
	b = open_auto(&err);
	TU_EQ("NOTIFYX_BACKEND=auto keeps AUTO (backend in use)", plain, b);
	for (want = NOTIFYX_BACKEND_INOTIFY; want <= NOTIFYX_BACKEND_POLL; want++) {
		uint32_t direct = open_explicit(want, &err2);

		setenv("NOTIFYX_BACKEND", notifyx_backend_name(want), 1);
		b = open_auto(&err);
		if (direct) {
			if (b != want)
				fail_msg("NOTIFYX_BACKEND=%s: backend %u (%s), errno %s; expected %u",
					 notifyx_backend_name(want), b,
					 b ? notifyx_backend_name(b) : "open failed",
					 err ? strerrorname_np(err) : "-", want);
		} else {
			/* That backend cannot start: the same failure, no fallback. */
			if (b)
				fail_msg("NOTIFYX_BACKEND=%s: the backend cannot start (%s), but open "
					 "fell back to %s", notifyx_backend_name(want),
					 strerrorname_np(err2), notifyx_backend_name(b));
			if (err != err2)
				fail_msg("NOTIFYX_BACKEND=%s: expected errno %s (as opening it "
					 "directly), actual %s", notifyx_backend_name(want),
					 strerrorname_np(err2), strerrorname_np(err));
			print_message("  note: NOTIFYX_BACKEND=%s fails with %s, as opening it directly\n",
				      notifyx_backend_name(want), strerrorname_np(err));
		}
	}
	for (i = 0; i < sizeof garbage / sizeof garbage[0]; i++) {
		setenv("NOTIFYX_BACKEND", garbage[i], 1);
		b = open_auto(&err);
		if (b || err != EINVAL)
			fail_msg("NOTIFYX_BACKEND=\"%s\": expected EINVAL, got %s", garbage[i],
				 b ? notifyx_backend_name(b) : strerrorname_np(err));
	}
	/* Only consulted when the backend is AUTO. */
	setenv("NOTIFYX_BACKEND", "garbage", 1);
	b = open_explicit(plain, &err);
	if (b != plain)
		fail_msg("explicit backend %s with NOTIFYX_BACKEND=garbage: %s (the variable is "
			 "only read for AUTO)", notifyx_backend_name(plain),
			 b ? notifyx_backend_name(b) : strerrorname_np(err));
	for (want = NOTIFYX_BACKEND_INOTIFY; want <= NOTIFYX_BACKEND_POLL; want++) {
		if (want == plain)
			continue;
		setenv("NOTIFYX_BACKEND", notifyx_backend_name(want), 1);
		b = open_explicit(plain, &err);
		if (b != plain)
			fail_msg("explicit backend %s with NOTIFYX_BACKEND=%s: got %s",
				 notifyx_backend_name(plain), notifyx_backend_name(want),
				 b ? notifyx_backend_name(b) : strerrorname_np(err));
	}
}

static void config_null_and_backend(void **state)
{
	struct notifyx *nx;
	uint32_t b;

	(void)state;
	unsetenv("NOTIFYX_BACKEND");
	nx = notifyx_open(NULL);
	if (!nx)
		fail_msg("notifyx_open(NULL): %s", strerrorname_np(errno));
	b = notifyx_backend(nx);
	if (b < NOTIFYX_BACKEND_INOTIFY || b > NOTIFYX_BACKEND_POLL)
		fail_msg("notifyx_backend of an AUTO handle: %u (never AUTO, always a backend)", b);
	assert_true(notifyx_supported_events(nx) != 0);
	assert_true((notifyx_supported_events(nx) & ~NOTIFYX_ALL_EVENTS) == 0);
	notifyx_close(nx);
}

/* ---- names and versions ---- */

static void names(void **state)
{
	static const char *const bn[] = { NULL, "inotify", "fanotify", "dnotify", "poll" };
	uint32_t b, bad[] = { 5, 6, 64, 0x80000000u, 0xffffffffu };
	size_t i, j;
	const char *s;
	char v[64];

	(void)state;
	for (b = 1; b <= 4; b++)
		TU_STREQ(tu_fmt("notifyx_backend_name(%u)", b), bn[b], notifyx_backend_name(b));
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (notifyx_backend_name(bad[i]))
			fail_msg("notifyx_backend_name(%u) = \"%s\", expected NULL", bad[i],
				 notifyx_backend_name(bad[i]));
	s = notifyx_backend_name(NOTIFYX_BACKEND_AUTO);
	if (s && strcmp(s, "auto"))
		fail_msg("notifyx_backend_name(AUTO) = \"%s\" (assumed NULL or \"auto\")", s);

	for (i = 0; i < NTYPES; i++) {
		char want[32];
		const char *m = tu_mask_str(all_types[i]);

		for (j = 0; m[j] && j < sizeof want - 1; j++)
			want[j] = (char)(m[j] >= 'A' && m[j] <= 'Z' ? m[j] + 32 : m[j]);
		want[j] = 0;
		TU_STREQ(tu_fmt("notifyx_event_name(%#x)", all_types[i]), want,
			 notifyx_event_name(all_types[i]));
	}
	{
		uint32_t none[] = { 0, NOTIFYX_CREATE | NOTIFYX_DELETE, NOTIFYX_ALL_EVENTS,
				    NOTIFYX_IGNORED | NOTIFYX_OVERFLOW, 0x2000, 0x4000, 0x8000,
				    0x200000, 0x80000000u, 0xffffffffu };

		for (i = 0; i < sizeof none / sizeof none[0]; i++)
			if (notifyx_event_name(none[i]))
				fail_msg("notifyx_event_name(%#x) = \"%s\", expected NULL", none[i],
					 notifyx_event_name(none[i]));
		for (i = 0; i < 32; i++) {
			uint32_t bit = 1u << i;

			if (!(bit & (NOTIFYX_ALL_EVENTS | TU_ALWAYS | NOTIFYX_SYNC)) &&
			    notifyx_event_name(bit))
				fail_msg("notifyx_event_name(%#x) = \"%s\" for an unknown bit", bit,
					 notifyx_event_name(bit));
		}
	}
	snprintf(v, sizeof v, "%d.%d.%d", NOTIFYX_VERSION_MAJOR, NOTIFYX_VERSION_MINOR,
		 NOTIFYX_VERSION_PATCH);
	TU_STREQ("notifyx_version() vs the header's macros", v, notifyx_version());
	assert_true(NOTIFYX_CHECK_VERSION(0, 0, 0));
	assert_true(NOTIFYX_CHECK_VERSION(NOTIFYX_VERSION_MAJOR, NOTIFYX_VERSION_MINOR, 0));
	assert_false(NOTIFYX_CHECK_VERSION(NOTIFYX_VERSION_MAJOR, NOTIFYX_VERSION_MINOR + 1, 0));
	assert_false(NOTIFYX_CHECK_VERSION(NOTIFYX_VERSION_MAJOR + 1, 0, 0));
	if (NOTIFYX_VERSION_MINOR > 0)
		assert_true(NOTIFYX_CHECK_VERSION(NOTIFYX_VERSION_MAJOR, NOTIFYX_VERSION_MINOR - 1, 99));
}

int conf_config_run(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(config_size),
		cmocka_unit_test(config_flags_backend),
		cmocka_unit_test(config_signal),
		cmocka_unit_test_setup_teardown(config_env, env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(config_null_and_backend, env_setup, env_teardown),
		cmocka_unit_test(names),
	};

	return cmocka_run_group_tests_name("conformance: configuration, names", tests, NULL, NULL);
}
