/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The binary layout of the public structures and the values of the public
 * constants, checked at compile time.  These are the part of the ABI that
 * abidiff cannot see (macros) or that no exported function reaches
 * (struct notifyx_event travels as bytes through notifyx_read).
 *
 * Built twice: as C11, where the checks are _Static_assert (<notifyx.h>
 * itself asserts only the sizes and alignments), and as C99, where they are
 * the negative-array-size trick, so the header is pinned whatever the
 * language an application uses.  Compiling is the test; running prints the
 * layout for the log and walks a made-up buffer with notifyx_for_each_event
 * (which must compile under -pedantic-errors too).
 */
/* PATH_MAX, which NOTIFYX_EVENT_MAX uses, is POSIX: strict -std=c99/c11
 * <limits.h> does not define it. */
#define _POSIX_C_SOURCE 200809L

#include <notifyx.h>

#include <stdint.h>
#include <stdio.h>

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define CHECK(name, cond) _Static_assert(cond, #name ": " #cond)
#define ALIGNOF(type) _Alignof(type)
#else
/* C99: an array of -1 elements does not compile. */
#define CHECK(name, cond) typedef char nx_check_##name[(cond) ? 1 : -1]
#if defined(__GNUC__)
#define ALIGNOF(type) __alignof__(type)
#else
#define ALIGNOF(type) 4 /* no portable way in C99 for a struct with a flexible array */
#endif
#endif

/* struct notifyx_event: 32 bytes, eight 4-byte fields, names at 32. */
CHECK(event_size, sizeof(struct notifyx_event) == 32);
CHECK(event_align, ALIGNOF(struct notifyx_event) == 4);
CHECK(event_size_off, offsetof(struct notifyx_event, size) == 0);
CHECK(event_wd_off, offsetof(struct notifyx_event, wd) == 4);
CHECK(event_mask_off, offsetof(struct notifyx_event, mask) == 8);
CHECK(event_flags_off, offsetof(struct notifyx_event, flags) == 12);
CHECK(event_cookie_off, offsetof(struct notifyx_event, cookie) == 16);
CHECK(event_error_off, offsetof(struct notifyx_event, error) == 20);
CHECK(event_path_len_off, offsetof(struct notifyx_event, path_len) == 24);
CHECK(event_old_path_len_off, offsetof(struct notifyx_event, old_path_len) == 28);
CHECK(event_names_off, offsetof(struct notifyx_event, names) == 32);

/* The largest record (two names of PATH_MAX-1 bytes, their NULs, padding to
 * 8) is exactly NOTIFYX_EVENT_MAX, itself a multiple of 8. */
CHECK(event_max, NOTIFYX_EVENT_MAX == 32 + 2 * PATH_MAX);
CHECK(event_max_align, NOTIFYX_EVENT_MAX % 8 == 0);

/* struct notifyx_config version 0: 24 bytes, six 4-byte fields. */
CHECK(config_size, sizeof(struct notifyx_config) == 24);
CHECK(config_align, ALIGNOF(struct notifyx_config) == 4);
CHECK(config_size_off, offsetof(struct notifyx_config, size) == 0);
CHECK(config_backend_off, offsetof(struct notifyx_config, backend) == 4);
CHECK(config_flags_off, offsetof(struct notifyx_config, flags) == 8);
CHECK(config_poll_interval_ms_off, offsetof(struct notifyx_config, poll_interval_ms) == 12);
CHECK(config_signal_off, offsetof(struct notifyx_config, signal) == 16);
CHECK(config_queue_max_off, offsetof(struct notifyx_config, queue_max) == 20);

/* Constants compiled into applications: never renumbered. */
CHECK(backend_auto, NOTIFYX_BACKEND_AUTO == 0);
CHECK(backend_inotify, NOTIFYX_BACKEND_INOTIFY == 1);
CHECK(backend_fanotify, NOTIFYX_BACKEND_FANOTIFY == 2);
CHECK(backend_dnotify, NOTIFYX_BACKEND_DNOTIFY == 3);
CHECK(backend_poll, NOTIFYX_BACKEND_POLL == 4);
CHECK(nonblock, NOTIFYX_NONBLOCK == 0x1);
CHECK(access, NOTIFYX_ACCESS == 0x1);
CHECK(modify, NOTIFYX_MODIFY == 0x2);
CHECK(attrib, NOTIFYX_ATTRIB == 0x4);
CHECK(close_write, NOTIFYX_CLOSE_WRITE == 0x8);
CHECK(close_nowrite, NOTIFYX_CLOSE_NOWRITE == 0x10);
CHECK(open, NOTIFYX_OPEN == 0x20);
CHECK(create, NOTIFYX_CREATE == 0x40);
CHECK(delete, NOTIFYX_DELETE == 0x80);
CHECK(rename, NOTIFYX_RENAME == 0x100);
CHECK(moved_out, NOTIFYX_MOVED_OUT == 0x200);
CHECK(moved_in, NOTIFYX_MOVED_IN == 0x400);
CHECK(delete_self, NOTIFYX_DELETE_SELF == 0x800);
CHECK(move_self, NOTIFYX_MOVE_SELF == 0x1000);
CHECK(all_events, NOTIFYX_ALL_EVENTS == 0x1fff);
CHECK(overflow, NOTIFYX_OVERFLOW == 0x10000);
CHECK(unmount, NOTIFYX_UNMOUNT == 0x20000);
CHECK(error, NOTIFYX_ERROR == 0x40000);
CHECK(ignored, NOTIFYX_IGNORED == 0x80000);
CHECK(sync, NOTIFYX_SYNC == 0x100000);
CHECK(event_isdir, NOTIFYX_EVENT_ISDIR == 0x1);
CHECK(event_synthetic, NOTIFYX_EVENT_SYNTHETIC == 0x2);
CHECK(event_exchange, NOTIFYX_EVENT_EXCHANGE == 0x4);
CHECK(watch_recursive, NOTIFYX_WATCH_RECURSIVE == 0x1);
CHECK(watch_oneshot, NOTIFYX_WATCH_ONESHOT == 0x2);
CHECK(watch_nofollow, NOTIFYX_WATCH_NOFOLLOW == 0x4);
CHECK(watch_onlydir, NOTIFYX_WATCH_ONLYDIR == 0x8);
CHECK(watch_xdev, NOTIFYX_WATCH_XDEV == 0x10);
CHECK(watch_list, NOTIFYX_WATCH_LIST == 0x20);

/* The version macros are integer constant expressions usable in #if. */
#if !NOTIFYX_CHECK_VERSION(0, 1, 0) || NOTIFYX_CHECK_VERSION(NOTIFYX_VERSION_MAJOR + 1, 0, 0)
#error "NOTIFYX_CHECK_VERSION is wrong"
#endif

#define SHOW(type, field) \
	printf("  %-16s offset %2zu size %zu\n", #field, offsetof(struct type, field), \
	       sizeof(((struct type *)0)->field))

/* Three records of 40, 48 and 32 bytes; the count the macro walks over n bytes. */
static int walk(long n)
{
	static uint64_t buf[15];
	static const uint32_t sizes[] = { 40, 48, 32 };
	const struct notifyx_event *ev;
	size_t off = 0, i;
	int count = 0;

	for (i = 0; i < 3; i++) {
		((struct notifyx_event *)(void *)((char *)buf + off))->size = sizes[i];
		off += sizes[i];
	}
	notifyx_for_each_event(ev, buf, n)
		count++;
	return count;
}

int main(void)
{
	if (walk(120) != 3 || walk(88) != 2 || walk(40) != 1 || walk(0) != 0 || walk(-1) != 0) {
		printf("FAIL: notifyx_for_each_event walked %d, %d, %d, %d, %d records "
		       "(expected 3, 2, 1, 0, 0)\n", walk(120), walk(88), walk(40), walk(0), walk(-1));
		return 1;
	}
	printf("%s, %zu-bit pointers\n",
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
	       "C11",
#else
	       "C99",
#endif
	       sizeof(void *) * 8);
	printf("struct notifyx_event: size %zu, align %zu\n", sizeof(struct notifyx_event),
	       (size_t)ALIGNOF(struct notifyx_event));
	SHOW(notifyx_event, size);
	SHOW(notifyx_event, wd);
	SHOW(notifyx_event, mask);
	SHOW(notifyx_event, flags);
	SHOW(notifyx_event, cookie);
	SHOW(notifyx_event, error);
	SHOW(notifyx_event, path_len);
	SHOW(notifyx_event, old_path_len);
	printf("  %-16s offset %2zu\n", "names", offsetof(struct notifyx_event, names));
	printf("NOTIFYX_EVENT_MAX %zu\n", (size_t)NOTIFYX_EVENT_MAX);
	printf("struct notifyx_config: size %zu, align %zu\n", sizeof(struct notifyx_config),
	       (size_t)ALIGNOF(struct notifyx_config));
	SHOW(notifyx_config, size);
	SHOW(notifyx_config, backend);
	SHOW(notifyx_config, flags);
	SHOW(notifyx_config, poll_interval_ms);
	SHOW(notifyx_config, signal);
	SHOW(notifyx_config, queue_max);
	return 0;
}
