/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests: notifyx_event_name, notifyx_backend_name, notifyx_version and
 * the version macros. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "notifyx.h"

/* The version check is an integer constant expression usable in #if. */
#if !NOTIFYX_CHECK_VERSION(0, 0, 0)
#error "NOTIFYX_CHECK_VERSION(0, 0, 0) must be true"
#endif
#if NOTIFYX_CHECK_VERSION(NOTIFYX_VERSION_MAJOR + 1, 0, 0)
#error "NOTIFYX_CHECK_VERSION(next major) must be false"
#endif

static const struct {
	uint32_t bit;
	const char *name;
} names[] = {
	{ NOTIFYX_ACCESS, "access" },
	{ NOTIFYX_MODIFY, "modify" },
	{ NOTIFYX_ATTRIB, "attrib" },
	{ NOTIFYX_CLOSE_WRITE, "close_write" },
	{ NOTIFYX_CLOSE_NOWRITE, "close_nowrite" },
	{ NOTIFYX_OPEN, "open" },
	{ NOTIFYX_CREATE, "create" },
	{ NOTIFYX_DELETE, "delete" },
	{ NOTIFYX_RENAME, "rename" },
	{ NOTIFYX_MOVED_OUT, "moved_out" },
	{ NOTIFYX_MOVED_IN, "moved_in" },
	{ NOTIFYX_DELETE_SELF, "delete_self" },
	{ NOTIFYX_MOVE_SELF, "move_self" },
	{ NOTIFYX_OVERFLOW, "overflow" },
	{ NOTIFYX_UNMOUNT, "unmount" },
	{ NOTIFYX_ERROR, "error" },
	{ NOTIFYX_IGNORED, "ignored" },
	{ NOTIFYX_SYNC, "sync" },
};
#define NNAMES (sizeof(names) / sizeof(names[0]))

static void test_event_name_each_bit(void **state)
{
	uint32_t all = 0;

	(void)state;
	for (size_t i = 0; i < NNAMES; i++) {
		const char *got = notifyx_event_name(names[i].bit);

		print_message("0x%08x -> %s\n", names[i].bit, got ? got : "(null)");
		assert_non_null(got);
		assert_string_equal(got, names[i].name);
		/* Stable: the same static string every time. */
		assert_ptr_equal(got, notifyx_event_name(names[i].bit));
		all |= names[i].bit;
	}
	/* The table covers every requestable and every always-delivered type. */
	assert_int_equal(all, NOTIFYX_ALL_EVENTS | NOTIFYX_OVERFLOW | NOTIFYX_UNMOUNT |
				      NOTIFYX_ERROR | NOTIFYX_IGNORED | NOTIFYX_SYNC);
}

static void test_event_name_not_one_bit(void **state)
{
	static const uint32_t bad[] = {
		0,
		NOTIFYX_CREATE | NOTIFYX_DELETE,
		NOTIFYX_ACCESS | NOTIFYX_MOVE_SELF,
		NOTIFYX_ALL_EVENTS,
		NOTIFYX_OVERFLOW | NOTIFYX_IGNORED,
		NOTIFYX_MOVE_SELF | NOTIFYX_OVERFLOW,
		UINT32_MAX,
		0x80000001u,
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *got = notifyx_event_name(bad[i]);

		if (got)
			print_error("notifyx_event_name(0x%08x) = \"%s\", expected NULL\n", bad[i], got);
		assert_null(got);
	}
}

static void test_event_name_unknown_bits(void **state)
{
	const uint32_t known = NOTIFYX_ALL_EVENTS | NOTIFYX_OVERFLOW | NOTIFYX_UNMOUNT |
			       NOTIFYX_ERROR | NOTIFYX_IGNORED | NOTIFYX_SYNC;
	unsigned unknown = 0;

	(void)state;
	for (unsigned b = 0; b < 32; b++) {
		uint32_t bit = (uint32_t)1 << b;
		const char *got = notifyx_event_name(bit);

		if (bit & known)
			continue;
		unknown++;
		if (got)
			print_error("notifyx_event_name(0x%08x) = \"%s\", expected NULL\n", bit, got);
		assert_null(got);
	}
	assert_int_equal(unknown, 32 - NNAMES);
}

static void test_backend_name(void **state)
{
	static const struct {
		uint32_t id;
		const char *name;
	} b[] = {
		{ NOTIFYX_BACKEND_AUTO, "auto" },
		{ NOTIFYX_BACKEND_INOTIFY, "inotify" },
		{ NOTIFYX_BACKEND_FANOTIFY, "fanotify" },
		{ NOTIFYX_BACKEND_DNOTIFY, "dnotify" },
		{ NOTIFYX_BACKEND_POLL, "poll" },
	};
	static const uint32_t unknown[] = { 5, 6, 16, 0x100, 0x80000000u, UINT32_MAX };

	(void)state;
	for (size_t i = 0; i < sizeof(b) / sizeof(b[0]); i++) {
		const char *got = notifyx_backend_name(b[i].id);

		assert_non_null(got);
		assert_string_equal(got, b[i].name);
	}
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		const char *got = notifyx_backend_name(unknown[i]);

		if (got)
			print_error("notifyx_backend_name(%u) = \"%s\", expected NULL\n", unknown[i], got);
		assert_null(got);
	}
}

static void test_version(void **state)
{
	char want[64];
	const char *got = notifyx_version();

	(void)state;
	snprintf(want, sizeof(want), "%d.%d.%d", NOTIFYX_VERSION_MAJOR, NOTIFYX_VERSION_MINOR,
		 NOTIFYX_VERSION_PATCH);
	assert_non_null(got);
	assert_string_equal(got, want);
}

static void test_check_version(void **state)
{
	const int M = NOTIFYX_VERSION_MAJOR, m = NOTIFYX_VERSION_MINOR, p = NOTIFYX_VERSION_PATCH;

	(void)state;
	assert_true(NOTIFYX_CHECK_VERSION(M, m, p));
	assert_true(NOTIFYX_CHECK_VERSION(0, 0, 0));
	assert_false(NOTIFYX_CHECK_VERSION(M, m, p + 1));
	assert_false(NOTIFYX_CHECK_VERSION(M, m + 1, 0));
	assert_false(NOTIFYX_CHECK_VERSION(M + 1, 0, 0));
	if (p > 0)
		assert_true(NOTIFYX_CHECK_VERSION(M, m, p - 1));
	if (m > 0) {
		assert_true(NOTIFYX_CHECK_VERSION(M, m - 1, 0));
		assert_true(NOTIFYX_CHECK_VERSION(M, m - 1, 999));
	}
	if (M > 0)
		assert_true(NOTIFYX_CHECK_VERSION(M - 1, 999, 999));
	/* An integer constant expression: usable where one is required. */
	enum { CHECK = NOTIFYX_CHECK_VERSION(0, 0, 0) };
	assert_int_equal(CHECK, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_event_name_each_bit),
		cmocka_unit_test(test_event_name_not_one_bit),
		cmocka_unit_test(test_event_name_unknown_bits),
		cmocka_unit_test(test_backend_name),
		cmocka_unit_test(test_version),
		cmocka_unit_test(test_check_version),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
