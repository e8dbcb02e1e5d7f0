/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of the inotify backend's pure parts (backends/inotify.c): mask
 * translation both ways and the kernel record decoder, including malformed
 * input (truncated records, lengths past the buffer, names without NUL,
 * empty names) that must be refused or handled without reading past the
 * buffer.  Buffers are allocated at their exact size, so that a build with
 * -fsanitize=address catches any read past them.  Last, the same malformed
 * records are fed through the backend's parser of a real handle. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../backends/inotify.h"
#include "nx.h"

#define HDR sizeof(struct inotify_event)

static const struct {
	uint32_t nx, in;
} xlat[] = {
	{ NOTIFYX_ACCESS, IN_ACCESS },
	{ NOTIFYX_MODIFY, IN_MODIFY },
	{ NOTIFYX_ATTRIB, IN_ATTRIB },
	{ NOTIFYX_CLOSE_WRITE, IN_CLOSE_WRITE },
	{ NOTIFYX_CLOSE_NOWRITE, IN_CLOSE_NOWRITE },
	{ NOTIFYX_OPEN, IN_OPEN },
	{ NOTIFYX_CREATE, IN_CREATE },
	{ NOTIFYX_DELETE, IN_DELETE },
	{ NOTIFYX_RENAME, IN_MOVED_FROM | IN_MOVED_TO },
	{ NOTIFYX_MOVED_OUT, IN_MOVED_FROM | IN_MOVED_TO },
	{ NOTIFYX_MOVED_IN, IN_MOVED_FROM | IN_MOVED_TO },
	{ NOTIFYX_DELETE_SELF, IN_DELETE_SELF },
	{ NOTIFYX_MOVE_SELF, IN_MOVE_SELF },
};
#define NX (sizeof(xlat) / sizeof(xlat[0]))

/* ---- mask translation ---- */

static void test_mask_each_bit(void **state)
{
	(void)state;
	for (size_t i = 0; i < NX; i++) {
		uint32_t got = nx_inotify_mask(xlat[i].nx);
		if (got != xlat[i].in)
			print_error("nx_inotify_mask(%s) = 0x%x, expected 0x%x\n",
				    notifyx_event_name(xlat[i].nx), got, xlat[i].in);
		assert_int_equal(got, xlat[i].in);
	}
	assert_int_equal(nx_inotify_mask(0), 0);
}

static void test_mask_unions(void **state)
{
	uint32_t all = 0;

	(void)state;
	for (size_t i = 0; i < NX; i++) {
		all |= xlat[i].in;
		for (size_t j = 0; j < NX; j++)
			assert_int_equal(nx_inotify_mask(xlat[i].nx | xlat[j].nx),
					 xlat[i].in | xlat[j].in);
	}
	assert_int_equal(nx_inotify_mask(NOTIFYX_ALL_EVENTS), all);
	assert_int_equal(all, IN_ALL_EVENTS);
}

static void test_mask_not_requestable(void **state)
{
	(void)state;
	/* The always-delivered types and unknown bits ask the kernel for nothing. */
	assert_int_equal(nx_inotify_mask(NOTIFYX_OVERFLOW | NOTIFYX_UNMOUNT | NOTIFYX_ERROR |
					 NOTIFYX_IGNORED),
			 0);
	assert_int_equal(nx_inotify_mask(~(uint32_t)NOTIFYX_ALL_EVENTS), 0);
	for (unsigned b = 0; b < 32; b++) {
		uint32_t bit = (uint32_t)1 << b;
		if (bit & NOTIFYX_ALL_EVENTS)
			continue;
		uint32_t got = nx_inotify_mask(bit);
		if (got)
			print_error("nx_inotify_mask(0x%x) = 0x%x, expected 0\n", bit, got);
		assert_int_equal(got, 0);
	}
}

static void test_event_from_kernel(void **state)
{
	(void)state;
	for (size_t i = 0; i < NX; i++) {
		if (xlat[i].in & (IN_MOVED_FROM | IN_MOVED_TO))
			continue;
		uint32_t got = nx_inotify_event(xlat[i].in);
		if (got != xlat[i].nx)
			print_error("nx_inotify_event(0x%x) = 0x%x, expected 0x%x\n", xlat[i].in, got,
				    xlat[i].nx);
		assert_int_equal(got, xlat[i].nx);
		/* IN_ISDIR does not change the type */
		assert_int_equal(nx_inotify_event(xlat[i].in | IN_ISDIR), xlat[i].nx);
		/* round trip */
		assert_int_equal(nx_inotify_event(nx_inotify_mask(xlat[i].nx)), xlat[i].nx);
	}
	/* Move halves are paired elsewhere; the others are not event types. */
	static const uint32_t none[] = {
		0, IN_MOVED_FROM, IN_MOVED_TO, IN_MOVED_FROM | IN_ISDIR, IN_MOVED_TO | IN_ISDIR,
		IN_IGNORED, IN_Q_OVERFLOW, IN_UNMOUNT, IN_ISDIR, IN_ONESHOT, IN_ONLYDIR,
	};
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		uint32_t got = nx_inotify_event(none[i]);
		if (got)
			print_error("nx_inotify_event(0x%x) = 0x%x, expected 0\n", none[i], got);
		assert_int_equal(got, 0);
	}
}

/* ---- the record decoder ---- */

/* Appends one record (name padded with NULs to name_field bytes) at *len. */
static size_t put_rec(char *buf, size_t len, int wd, uint32_t mask, uint32_t cookie,
		      const char *name, size_t name_bytes, uint32_t name_field)
{
	struct inotify_event ev = { .wd = wd, .mask = mask, .cookie = cookie, .len = name_field };

	memcpy(buf + len, &ev, HDR);
	memset(buf + len + HDR, 0, name_field);
	memcpy(buf + len + HDR, name, name_bytes);
	return len + HDR + name_field;
}

/* A copy of src[0..len) in a block of exactly len bytes. */
static char *exact(const char *src, size_t len)
{
	char *p = malloc(len ? len : 1);

	assert_non_null(p);
	memcpy(p, src, len);
	return p;
}

static void test_decode_sequence(void **state)
{
	char tmp[1024];
	size_t len = 0, pos = 0;
	struct inrec r;

	(void)state;
	len = put_rec(tmp, len, 1, IN_CREATE, 0, "file", 4, 16);
	len = put_rec(tmp, len, 2, IN_DELETE_SELF, 0, "", 0, 0);
	len = put_rec(tmp, len, 3, IN_MOVED_FROM | IN_ISDIR, 77, "dir", 3, 4);
	len = put_rec(tmp, len, -1, IN_Q_OVERFLOW, 0, "", 0, 0);
	len = put_rec(tmp, len, 5, IN_MODIFY, 0, "x", 1, 32);
	char *buf = exact(tmp, len);

	assert_true(nx_inotify_decode(buf, len, pos, &r));
	assert_int_equal(r.wd, 1);
	assert_int_equal(r.mask, IN_CREATE);
	assert_int_equal(r.cookie, 0);
	assert_int_equal(r.name_len, 4);
	assert_memory_equal(r.name, "file", 4);
	assert_ptr_equal(r.name, buf + HDR);
	assert_int_equal(r.size, HDR + 16);
	pos += r.size;

	assert_true(nx_inotify_decode(buf, len, pos, &r));
	assert_int_equal(r.wd, 2);
	assert_int_equal(r.mask, IN_DELETE_SELF);
	assert_int_equal(r.name_len, 0);
	assert_int_equal(r.size, HDR);
	pos += r.size;

	assert_true(nx_inotify_decode(buf, len, pos, &r));
	assert_int_equal(r.wd, 3);
	assert_int_equal(r.mask, IN_MOVED_FROM | IN_ISDIR);
	assert_int_equal(r.cookie, 77);
	assert_int_equal(r.name_len, 3);
	assert_memory_equal(r.name, "dir", 3);
	assert_int_equal(r.size, HDR + 4);
	pos += r.size;

	assert_true(nx_inotify_decode(buf, len, pos, &r));
	assert_int_equal(r.wd, -1);
	assert_int_equal(r.mask, IN_Q_OVERFLOW);
	pos += r.size;

	assert_true(nx_inotify_decode(buf, len, pos, &r));
	assert_int_equal(r.wd, 5);
	assert_int_equal(r.name_len, 1);
	assert_int_equal(r.size, HDR + 32);
	pos += r.size;

	assert_int_equal(pos, len);
	assert_false(nx_inotify_decode(buf, len, pos, &r));
	free(buf);
}

/* Every truncation of a buffer of records: the complete records decode,
 * the incomplete one does not, and nothing outside the buffer is read. */
static void test_decode_truncated(void **state)
{
	char tmp[512];
	size_t len = 0, ends[4], n = 0;

	(void)state;
	len = ends[n++] = put_rec(tmp, len, 1, IN_CREATE, 0, "abc", 3, 8);
	len = ends[n++] = put_rec(tmp, len, 2, IN_ATTRIB, 0, "", 0, 0);
	len = ends[n++] = put_rec(tmp, len, 3, IN_DELETE, 0, "a-longer-name", 13, 16);
	len = ends[n++] = put_rec(tmp, len, 4, IN_OPEN, 0, "z", 1, 4);
	for (size_t cut = 0; cut <= len; cut++) {
		char *buf = exact(tmp, cut);
		size_t pos = 0, got = 0;
		struct inrec r;

		while (nx_inotify_decode(buf, cut, pos, &r)) {
			assert_true(got < n);
			assert_int_equal(pos + r.size, ends[got]);
			assert_int_equal(r.wd, (int)got + 1);
			pos += r.size;
			got++;
		}
		size_t want = 0;
		while (want < n && ends[want] <= cut)
			want++;
		if (got != want)
			print_error("cut at %zu: %zu records decoded, expected %zu\n", cut, got, want);
		assert_int_equal(got, want);
		free(buf);
	}
}

/* A length that points past the buffer is refused, however large. */
static void test_decode_len_past_end(void **state)
{
	static const uint32_t bad[] = { 1, 7, 8, 9, 16, 4096, 0x7fffffffu, 0x80000000u,
					0xfffffff0u, 0xffffffffu };

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char tmp[HDR + 8];
		struct inotify_event ev = { .wd = 1, .mask = IN_CREATE, .len = bad[i] };
		struct inrec r;

		/* the header alone */
		memcpy(tmp, &ev, HDR);
		char *buf = exact(tmp, HDR);
		assert_false(nx_inotify_decode(buf, HDR, 0, &r));
		free(buf);
		/* the header and 8 name bytes: refused unless len <= 8 */
		memset(tmp + HDR, 'n', 8);
		buf = exact(tmp, HDR + 8);
		bool ok = nx_inotify_decode(buf, HDR + 8, 0, &r);
		if (ok != (bad[i] <= 8))
			print_error("len %u in a buffer of %zu name bytes: decode said %d\n", bad[i],
				    (size_t)8, ok);
		assert_int_equal(ok, bad[i] <= 8);
		if (ok) {
			assert_int_equal(r.size, HDR + bad[i]);
			assert_int_equal(r.name_len, bad[i]); /* no NUL in the name bytes */
		}
		free(buf);
	}
	/* also at an offset inside a larger buffer */
	char tmp[3 * HDR];
	size_t len = put_rec(tmp, 0, 1, IN_CREATE, 0, "", 0, 0);
	struct inotify_event ev = { .wd = 2, .mask = IN_CREATE, .len = (uint32_t)HDR + 1 };
	memcpy(tmp + len, &ev, HDR);
	memset(tmp + len + HDR, 'q', HDR);
	char *buf = exact(tmp, sizeof(tmp));
	struct inrec r;
	assert_true(nx_inotify_decode(buf, sizeof(tmp), 0, &r));
	assert_false(nx_inotify_decode(buf, sizeof(tmp), r.size, &r));
	free(buf);
}

/* A name that fills its field without a NUL, at the very end of the buffer:
 * its length is the field's, and nothing after it is read. */
static void test_decode_name_without_nul(void **state)
{
	char tmp[HDR + 16];
	struct inrec r;

	(void)state;
	for (uint32_t field = 1; field <= 16; field++) {
		struct inotify_event ev = { .wd = 9, .mask = IN_CREATE, .len = field };
		memcpy(tmp, &ev, HDR);
		memset(tmp + HDR, 'm', field);
		char *buf = exact(tmp, HDR + field);
		assert_true(nx_inotify_decode(buf, HDR + field, 0, &r));
		assert_int_equal(r.name_len, field);
		assert_ptr_equal(r.name, buf + HDR);
		assert_int_equal(r.size, HDR + field);
		free(buf);
	}
	/* A NUL in the middle ends the name there. */
	struct inotify_event ev = { .wd = 9, .mask = IN_CREATE, .len = 8 };
	memcpy(tmp, &ev, HDR);
	memcpy(tmp + HDR, "ab\0cdefg", 8);
	char *buf = exact(tmp, HDR + 8);
	assert_true(nx_inotify_decode(buf, HDR + 8, 0, &r));
	assert_int_equal(r.name_len, 2);
	assert_int_equal(r.size, HDR + 8);
	free(buf);
}

static void test_decode_empty_name(void **state)
{
	char tmp[HDR + 8];
	struct inrec r;

	(void)state;
	/* len 0: a header only, at the end of the buffer */
	size_t len = put_rec(tmp, 0, 4, IN_CREATE | IN_ISDIR, 0, "", 0, 0);
	char *buf = exact(tmp, len);
	assert_true(nx_inotify_decode(buf, len, 0, &r));
	assert_int_equal(r.name_len, 0);
	assert_int_equal(r.size, HDR);
	assert_int_equal(r.mask, IN_CREATE | IN_ISDIR);
	free(buf);
	/* a name field of NULs only */
	len = put_rec(tmp, 0, 4, IN_CREATE, 0, "", 0, 8);
	buf = exact(tmp, len);
	assert_true(nx_inotify_decode(buf, len, 0, &r));
	assert_int_equal(r.name_len, 0);
	assert_int_equal(r.size, HDR + 8);
	free(buf);
}

/* Records at odd offsets: no alignment is assumed. */
static void test_decode_unaligned(void **state)
{
	char tmp[256];
	struct inrec r;

	(void)state;
	for (size_t off = 0; off < 8; off++) {
		memset(tmp, 'J', off);
		size_t len = put_rec(tmp, off, 11, IN_ATTRIB, 5, "name", 4, 8);
		len = put_rec(tmp, len, 12, IN_MODIFY, 0, "", 0, 0);
		char *buf = exact(tmp, len);
		assert_true(nx_inotify_decode(buf, len, off, &r));
		assert_int_equal(r.wd, 11);
		assert_int_equal(r.cookie, 5);
		assert_int_equal(r.name_len, 4);
		assert_true(nx_inotify_decode(buf, len, off + r.size, &r));
		assert_int_equal(r.wd, 12);
		assert_int_equal(off + HDR + 8 + r.size, len);
		free(buf);
	}
}

/* Random bytes: whatever decodes stays inside the buffer. */
static void test_decode_random(void **state)
{
	uint64_t s = 88172645463325252ULL;

	(void)state;
	for (int iter = 0; iter < 20000; iter++) {
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		size_t len = (size_t)(s % 200);
		char *buf = malloc(len ? len : 1);
		assert_non_null(buf);
		for (size_t i = 0; i < len; i++) {
			s ^= s << 13, s ^= s >> 7, s ^= s << 17;
			buf[i] = (char)s;
			/* small lengths are more interesting */
			if (i % HDR == 12 && s % 4)
				buf[i] = (char)(s % 24);
			if (i % HDR > 12 && s % 4)
				buf[i] = 0;
		}
		size_t pos = 0;
		struct inrec r;
		while (nx_inotify_decode(buf, len, pos, &r)) {
			assert_true(r.size >= HDR);
			assert_true(r.size <= len - pos);
			assert_ptr_equal(r.name, buf + pos + HDR);
			assert_true(r.name_len <= r.size - HDR);
			assert_int_equal(r.name_len, strnlen(r.name, r.size - HDR));
			pos += r.size;
		}
		assert_true(pos <= len);
		free(buf);
	}
}

/* ---- malformed records through the backend's parser ---- */

static struct notifyx *open_inotify(void)
{
	struct notifyx_config c = { .size = sizeof(c), .backend = NOTIFYX_BACKEND_INOTIFY,
				    .flags = NOTIFYX_NONBLOCK };

	return notifyx_open(&c);
}

/* Reads all queued events; returns how many, copying the first one. */
static int read_all(struct notifyx *nx, uint32_t *mask, char *path, size_t size)
{
	static _Alignas(8) char buf[NOTIFYX_EVENT_MAX * 4];
	int n = 0;
	ssize_t got;

	while ((got = notifyx_read(nx, buf, sizeof(buf))) > 0) {
		for (const struct notifyx_event *ev = (const void *)buf;
		     (const char *)ev < buf + got; ev = notifyx_event_next(ev)) {
			assert_true(ev->size >= sizeof(*ev));
			assert_int_equal(strlen(notifyx_event_path(ev)), ev->path_len);
			if (n++ == 0) {
				*mask = ev->mask;
				snprintf(path, size, "%s", notifyx_event_path(ev));
			}
		}
	}
	assert_int_equal(errno, EAGAIN);
	return n;
}

static void test_feed_malformed(void **state)
{
	char dir[] = "/tmp/unit-inotify-XXXXXX";
	struct notifyx *nx = open_inotify();
	char tmp[256], path[PATH_MAX];
	uint32_t mask = 0;
	size_t len;

	(void)state;
	if (!nx) {
		print_message("inotify unavailable (%s): skipped\n", strerror(errno));
		skip();
	}
	assert_non_null(mkdtemp(dir));
	int wd = notifyx_add_watch(nx, dir, NOTIFYX_CREATE | NOTIFYX_MODIFY, 0);
	assert_true(wd > 0);
	int kwd = nx_inotify_kwd(nx, 0);
	assert_true(kwd >= 0);
	assert_int_equal(read_all(nx, &mask, path, sizeof(path)), 0);

	/* A name without NUL. */
	len = put_rec(tmp, 0, kwd, IN_CREATE, 0, "nonul", 5, 5);
	char *buf = exact(tmp, len);
	assert_int_equal(nx_inotify_feed(nx, buf, len, true), 0);
	free(buf);
	assert_int_equal(read_all(nx, &mask, path, sizeof(path)), 1);
	assert_int_equal(mask, NOTIFYX_CREATE);
	assert_string_equal(path, "nonul");

	/* A record split in two: nothing until it is complete, then once. */
	len = put_rec(tmp, 0, kwd, IN_MODIFY, 0, "split", 5, 8);
	assert_int_equal(nx_inotify_feed(nx, tmp, 10, false), 0);
	assert_int_equal(read_all(nx, &mask, path, sizeof(path)), 0);
	assert_int_equal(nx_inotify_feed(nx, tmp + 10, len - 10, true), 0);
	assert_int_equal(read_all(nx, &mask, path, sizeof(path)), 1);
	assert_int_equal(mask, NOTIFYX_MODIFY);
	assert_string_equal(path, "split");

	/* A record of an unknown kernel watch is ignored; the next one counts. */
	len = put_rec(tmp, 0, kwd + 1000, IN_CREATE, 0, "other", 5, 8);
	len = put_rec(tmp, len, kwd, IN_CREATE, 0, "mine", 4, 4);
	buf = exact(tmp, len);
	assert_int_equal(nx_inotify_feed(nx, buf, len, true), 0);
	free(buf);
	assert_int_equal(read_all(nx, &mask, path, sizeof(path)), 1);
	assert_string_equal(path, "mine");

	/* A record whose length points far past what was fed stays pending and
	 * reads nothing; the buffer is then reset by closing the handle. */
	struct inotify_event ev = { .wd = kwd, .mask = IN_CREATE, .len = 0x7ffffff0u };
	memcpy(tmp, &ev, HDR);
	buf = exact(tmp, HDR);
	assert_int_equal(nx_inotify_feed(nx, buf, HDR, true), 0);
	free(buf);
	assert_int_equal(read_all(nx, &mask, path, sizeof(path)), 0);

	assert_int_equal(notifyx_close(nx), 0);
	assert_int_equal(rmdir(dir), 0);
}

/* An empty name on a record of a directory's watch is read as an event of
 * the directory itself, without reading past the record. */
static void test_feed_empty_name(void **state)
{
	char dir[] = "/tmp/unit-inotify-XXXXXX";
	struct notifyx *nx = open_inotify();
	char tmp[64], path[PATH_MAX];
	uint32_t mask = 0;

	(void)state;
	if (!nx)
		skip();
	assert_non_null(mkdtemp(dir));
	assert_true(notifyx_add_watch(nx, dir, NOTIFYX_MODIFY, 0) > 0);
	int kwd = nx_inotify_kwd(nx, 0);
	size_t len = put_rec(tmp, 0, kwd, IN_MODIFY, 0, "", 0, 0);
	char *buf = exact(tmp, len);
	assert_int_equal(nx_inotify_feed(nx, buf, len, true), 0);
	free(buf);
	assert_int_equal(read_all(nx, &mask, path, sizeof(path)), 1);
	assert_int_equal(mask, NOTIFYX_MODIFY);
	assert_string_equal(path, "");
	assert_int_equal(notifyx_close(nx), 0);
	assert_int_equal(rmdir(dir), 0);
}

/* ---- the hold of a lone first half (API.md "Events"), on fed records ---- */

/* Microseconds: a whole-millisecond clock can make 9.1 ms look like 10 or
 * 10.1 ms like 11, on either side of a 10 ms hold. */
static long long us_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Reads every queued event into ev[] (at most max); returns how many. */
static int read_events(struct notifyx *nx, struct notifyx_event *ev, char (*path)[64], int max)
{
	static _Alignas(8) char buf[NOTIFYX_EVENT_MAX * 4];
	int n = 0;
	ssize_t got;

	while ((got = notifyx_read(nx, buf, sizeof(buf))) > 0) {
		for (const struct notifyx_event *e = (const void *)buf; (const char *)e < buf + got;
		     e = notifyx_event_next(e), n++) {
			if (n < max) {
				ev[n] = *e;
				snprintf(path[n], 64, "%s", notifyx_event_path(e));
			}
		}
	}
	assert_int_equal(errno, EAGAIN);
	return n;
}

static void feed_all(struct notifyx *nx, const char *tmp, size_t len)
{
	char *buf = exact(tmp, len);

	assert_int_equal(nx_inotify_feed(nx, buf, len, true), 0);
	free(buf);
}

static int read_until(struct notifyx *nx, struct notifyx_event *ev, char (*path)[64], int n);

static void test_feed_hold(void **state)
{
	char dir[] = "/tmp/unit-inotify-XXXXXX";
	struct notifyx *nx = open_inotify();
	static char tmp[64 * 1024], path[256][64];
	static struct notifyx_event ev[256];
	long long t0;
	size_t len;
	int n;

	(void)state;
	if (!nx)
		skip();
	assert_non_null(mkdtemp(dir));
	assert_true(notifyx_add_watch(nx, dir, NOTIFYX_MOVED_OUT | NOTIFYX_MOVED_IN |
				      NOTIFYX_RENAME | NOTIFYX_CREATE | NOTIFYX_MODIFY, 0) > 0);
	int kwd = nx_inotify_kwd(nx, 0);

	/* Released once 128 later records were read: 127 are not enough (its
	 * watch's events wait behind it), the 128th is.  (MODIFY: a change of
	 * the directory's entries would show that the move is over.) */
	len = put_rec(tmp, 0, kwd, IN_MOVED_FROM, 7, "a", 1, 8);
	for (int i = 0; i < 127; i++)
		len = put_rec(tmp, len, kwd, IN_MODIFY, 0, "c", 1, 8);
	t0 = us_now();
	feed_all(nx, tmp, len);
	n = read_events(nx, ev, path, 256);
	if (us_now() - t0 < 10000) /* else the 10 ms may have passed: nothing to tell */
		assert_int_equal(n, 0);
	len = put_rec(tmp, 0, kwd, IN_MODIFY, 0, "d", 1, 8);
	feed_all(nx, tmp, len);
	n += read_events(nx, ev + n, path + n, 256 - n);
	assert_int_equal(n, 129);
	assert_int_equal(ev[0].mask, NOTIFYX_MOVED_OUT);
	assert_string_equal(path[0], "a");
	assert_int_equal(ev[0].cookie, 0);
	assert_string_equal(path[128], "d");

	/* At most 10 ms from the read; a second half that comes after its first
	 * was given up is alone too: MOVED_IN with cookie 0. */
	len = put_rec(tmp, 0, kwd, IN_MOVED_FROM, 9, "b", 1, 8);
	feed_all(nx, tmp, len);
	usleep(12000);
	n = read_events(nx, ev, path, 256);
	assert_int_equal(n, 1);
	assert_int_equal(ev[0].mask, NOTIFYX_MOVED_OUT);
	len = put_rec(tmp, 0, kwd, IN_MOVED_TO, 9, "b2", 2, 8);
	feed_all(nx, tmp, len);
	usleep(12000); /* (held too: the departure of an exchange may follow) */
	n = read_events(nx, ev, path, 256);
	assert_int_equal(n, 1);
	assert_int_equal(ev[0].mask, NOTIFYX_MOVED_IN);
	assert_string_equal(path[0], "b2");
	assert_int_equal(ev[0].cookie, 0);

	/* A later change of the same directory's entries was made under the
	 * lock the move held while it queued both halves: no second half is
	 * coming, and the first goes at once. */
	len = put_rec(tmp, 0, kwd, IN_MOVED_FROM, 10, "o", 1, 8);
	len = put_rec(tmp, len, kwd, IN_CREATE, 0, "p", 1, 8);
	t0 = us_now();
	feed_all(nx, tmp, len);
	n = read_events(nx, ev, path, 256);
	if (us_now() - t0 < 10000) {
		assert_int_equal(n, 2);
		assert_int_equal(ev[0].mask, NOTIFYX_MOVED_OUT);
	}
	while (n < 2 && us_now() - t0 < 1000000)
		n += read_events(nx, ev + n, path + n, 256 - n);

	/* Both halves there: one RENAME, at once where a later change of the
	 * directory shows the rename is over; else held as a lone half is
	 * (the reverse pair of an exchange may follow), here by time (records
	 * fed, not read, are never synced by a lookup). */
	len = put_rec(tmp, 0, kwd, IN_MOVED_FROM, 11, "x", 1, 8);
	len = put_rec(tmp, len, kwd, IN_MOVED_TO, 11, "y", 1, 8);
	len = put_rec(tmp, len, kwd, IN_CREATE, 0, "z", 1, 8);
	feed_all(nx, tmp, len);
	n = read_events(nx, ev, path, 256);
	assert_int_equal(n, 2);
	assert_int_equal(ev[0].mask, NOTIFYX_RENAME);
	len = put_rec(tmp, 0, kwd, IN_MOVED_FROM, 12, "y", 1, 8);
	len = put_rec(tmp, len, kwd, IN_MOVED_TO, 12, "w", 1, 8);
	feed_all(nx, tmp, len);
	n = read_until(nx, ev, path, 1);
	assert_int_equal(n, 1);
	assert_int_equal(ev[0].mask, NOTIFYX_RENAME);
	assert_string_equal(path[0], "w");

	assert_int_equal(notifyx_close(nx), 0);
	assert_int_equal(rmdir(dir), 0);
}

/* Reads events until n have come or a second has passed; returns how many. */
static int read_until(struct notifyx *nx, struct notifyx_event *ev, char (*path)[64], int n)
{
	long long t0 = us_now();
	int got = 0;

	while (got < n && us_now() - t0 < 1000000) {
		got += read_events(nx, ev + got, path + got, 256 - got);
		usleep(2000);
	}
	usleep(20000); /* nothing more comes */
	return got + read_events(nx, ev + got, path + got, 256 - got);
}

/* Fed as kernel records: "s" moved to "n" (cookie c), then "n" moved out
 * (cookie c2, its arrival elsewhere, unseen). */
static void feed_move_then_from(struct notifyx *nx, int kwd, uint32_t c, uint32_t c2)
{
	char tmp[512];
	size_t len;

	len = put_rec(tmp, 0, kwd, IN_MOVED_FROM, c, "s", 1, 8);
	len = put_rec(tmp, len, kwd, IN_MOVED_TO, c, "n", 1, 8);
	len = put_rec(tmp, len, kwd, IN_MOVED_FROM, c2, "n", 1, 8);
	feed_all(nx, tmp, len);
}

/* The kernel drops a record equal (watch, mask, name, whatever the cookie)
 * to the last one it holds unread: "mv s n; exchange OUTSIDE n" read at once
 * leaves MOVED_FROM s, MOVED_TO n, and the exchange's MOVED_FROM n alone (its
 * MOVED_TO n was dropped).  n is still there: the rename, then the exchange's
 * departure and arrival.  Without n on disk it was a move away: no arrival. */
static void test_feed_dropped_arrival(void **state)
{
	char dir[] = "/tmp/unit-inotify-XXXXXX";
	struct notifyx *nx = open_inotify();
	static char path[256][64];
	static struct notifyx_event ev[256];
	char file[sizeof(dir) + 2];
	int n, fd;

	(void)state;
	if (!nx)
		skip();
	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/n", dir);
	assert_true((fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) >= 0);
	close(fd);
	assert_true(notifyx_add_watch(nx, dir, NOTIFYX_MOVED_OUT | NOTIFYX_MOVED_IN |
				      NOTIFYX_RENAME | NOTIFYX_CREATE, 0) > 0);
	int kwd = nx_inotify_kwd(nx, 0);

	feed_move_then_from(nx, kwd, 20, 22);
	n = read_until(nx, ev, path, 3);
	assert_int_equal(n, 3);
	assert_int_equal(ev[0].mask, NOTIFYX_RENAME);
	assert_string_equal(path[0], "n");
	assert_int_equal(ev[1].mask, NOTIFYX_MOVED_OUT);
	assert_string_equal(path[1], "n");
	assert_int_equal(ev[2].mask, NOTIFYX_MOVED_IN);
	assert_string_equal(path[2], "n");
	assert_int_equal(ev[2].cookie, 0);

	assert_int_equal(unlink(file), 0);
	feed_move_then_from(nx, kwd, 30, 31);
	n = read_until(nx, ev, path, 2);
	assert_int_equal(n, 2);
	assert_int_equal(ev[0].mask, NOTIFYX_RENAME);
	assert_int_equal(ev[1].mask, NOTIFYX_MOVED_OUT);

	assert_int_equal(notifyx_close(nx), 0);
	assert_int_equal(rmdir(dir), 0);
}

/* Holds overlap, each counted from its own read: lone first halves from 50
 * directories read at once, and an event read 5 ms later, all come together
 * once 10 ms have passed since the first read (one wait, not 50). */
static void test_feed_hold_overlap(void **state)
{
	char dir[] = "/tmp/unit-inotify-XXXXXX", sub[64];
	struct notifyx *nx = open_inotify();
	static char tmp[64 * 1024], path[256][64];
	static struct notifyx_event ev[256];
	long long t0, t1;
	size_t len = 0;
	int n, kwd[51];

	(void)state;
	if (!nx)
		skip();
	assert_non_null(mkdtemp(dir));
	for (int i = 0; i < 50; i++) {
		snprintf(sub, sizeof(sub), "%s/s%d", dir, i);
		assert_int_equal(mkdir(sub, 0755), 0);
	}
	assert_true(notifyx_add_watch(nx, dir, NOTIFYX_MOVED_OUT | NOTIFYX_MODIFY,
				      NOTIFYX_WATCH_RECURSIVE) > 0);
	for (int i = 0; i < 51; i++)
		assert_true((kwd[i] = nx_inotify_kwd(nx, i)) >= 0);
	for (int i = 0; i < 50; i++)
		len = put_rec(tmp, len, kwd[i], IN_MOVED_FROM, 100 + (uint32_t)i, "m", 1, 8);
	t0 = us_now();
	feed_all(nx, tmp, len);
	t1 = us_now(); /* the holds end by t1 + 10 ms */
	usleep(5000);
	len = put_rec(tmp, 0, kwd[50], IN_MODIFY, 0, "late", 4, 8);
	feed_all(nx, tmp, len);
	n = read_events(nx, ev, path, 256);
	if (us_now() - t0 < 10000)
		assert_true(n <= 1); /* the MODIFY, when its directory holds nothing */
	while (us_now() - t1 < 11000)
		usleep(1000);
	n += read_events(nx, ev + n, path + n, 256 - n);
	assert_int_equal(n, 51);
	assert_int_equal(notifyx_close(nx), 0);
	for (int i = 0; i < 50; i++) {
		snprintf(sub, sizeof(sub), "%s/s%d", dir, i);
		assert_int_equal(rmdir(sub), 0);
	}
	assert_int_equal(rmdir(dir), 0);
}

/* A table out of step with the disk (a listing raced with moves) can read
 * a rename as a directory moved below itself, which the kernel never does:
 * fed "a" (a directory) moved to a/b/x, the watch lost track.  It reports an
 * OVERFLOW, not that rename; with NOTIFYX_WATCH_RESCAN the repair that
 * follows finds the disk as it was: nothing but its SYNC.  (A file p in
 * each directory tells their kernel watches apart.) */
static void test_feed_out_of_step(void **state)
{
	char dir[] = "/tmp/unit-inotify-XXXXXX", sub[64], file[64];
	static char path[256][64];
	static struct notifyx_event ev[256];
	char tmp[512];
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/a", dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	snprintf(sub, sizeof(sub), "%s/a/b", dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	for (int i = 0; i < 3; i++) {
		snprintf(file, sizeof(file), "%s/%sp", dir, i == 0 ? "" : i == 1 ? "a/" : "a/b/");
		assert_true((fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) >= 0);
		close(fd);
	}
	for (int rescan = 0; rescan <= 1; rescan++) {
		struct notifyx *nx = open_inotify();
		uint32_t flags = NOTIFYX_WATCH_RECURSIVE |
				 (rescan ? NOTIFYX_WATCH_RESCAN | NOTIFYX_WATCH_LIST : 0);
		int n, kwd[3];
		size_t len;

		if (!nx)
			skip();
		assert_true(notifyx_add_watch(nx, dir, NOTIFYX_RENAME | NOTIFYX_MOVED_OUT |
					      NOTIFYX_MOVED_IN | NOTIFYX_CREATE | NOTIFYX_DELETE |
					      NOTIFYX_ATTRIB, flags) > 0);
		n = read_events(nx, ev, path, 256);
		assert_int_equal(n, rescan ? 6 : 0); /* a, a/b, the p files, SYNC */
		/* Which kernel watch is which: an ATTRIB in each names it. */
		for (int i = 0, k; i < 3; i++) {
			assert_true((k = nx_inotify_kwd(nx, i)) >= 0);
			len = put_rec(tmp, 0, k, IN_ATTRIB, 0, "p", 1, 8);
			feed_all(nx, tmp, len);
			assert_int_equal(read_events(nx, ev, path, 256), 1);
			kwd[!strcmp(path[0], "p") ? 0 : !strcmp(path[0], "a/p") ? 1 : 2] = k;
		}
		len = put_rec(tmp, 0, kwd[0], IN_MOVED_FROM | IN_ISDIR, 40, "a", 1, 8);
		len = put_rec(tmp, len, kwd[2], IN_MOVED_TO | IN_ISDIR, 40, "x", 1, 8);
		feed_all(nx, tmp, len);
		n = read_until(nx, ev, path, rescan ? 2 : 1);
		assert_int_equal(n, rescan ? 2 : 1);
		assert_int_equal(ev[0].mask, NOTIFYX_OVERFLOW);
		if (rescan)
			assert_int_equal(ev[1].mask, NOTIFYX_SYNC);
		assert_int_equal(notifyx_close(nx), 0);
	}
	for (int i = 0; i < 3; i++) {
		snprintf(file, sizeof(file), "%s/%sp", dir, i == 0 ? "" : i == 1 ? "a/" : "a/b/");
		assert_int_equal(unlink(file), 0);
	}
	assert_int_equal(rmdir(sub), 0);
	snprintf(sub, sizeof(sub), "%s/a", dir);
	assert_int_equal(rmdir(sub), 0);
	assert_int_equal(rmdir(dir), 0);
}

/* An exchange of two directories of one watch read in two parts, the read
 * ending after the reverse pair's MOVED_FROM: that record is the exchange's
 * own, queued under the lock the rename holds, not a later change of the
 * directory showing the rename over.  The first pair waits for the rest:
 * one RENAME with EXCHANGE, not two RENAMEs, the second undoing the first
 * (bench/seeds.sh, inotify ordinary seed 600). */
static void test_feed_exchange_in_two(void **state)
{
	char dir[] = "/tmp/unit-inotify-XXXXXX", sub[64];
	static char path[256][64];
	static struct notifyx_event ev[256];
	struct notifyx *nx = open_inotify();
	char tmp[512];
	long long t0;
	size_t len;
	int n;

	(void)state;
	if (!nx)
		skip();
	assert_non_null(mkdtemp(dir));
	for (int i = 0; i < 2; i++) {
		snprintf(sub, sizeof(sub), "%s/%c", dir, "ab"[i]);
		assert_int_equal(mkdir(sub, 0755), 0);
	}
	assert_true(notifyx_add_watch(nx, dir, NOTIFYX_RENAME | NOTIFYX_MOVED_OUT | NOTIFYX_MOVED_IN,
				      0) > 0);
	int kwd = nx_inotify_kwd(nx, 0);

	len = put_rec(tmp, 0, kwd, IN_MOVED_FROM | IN_ISDIR, 21, "a", 1, 8);
	len = put_rec(tmp, len, kwd, IN_MOVED_TO | IN_ISDIR, 21, "b", 1, 8);
	len = put_rec(tmp, len, kwd, IN_MOVED_FROM | IN_ISDIR, 22, "b", 1, 8);
	t0 = us_now();
	feed_all(nx, tmp, len);
	n = read_events(nx, ev, path, 256);
	bool in_time = us_now() - t0 < 10000; /* else the hold's 10 ms passed */
	if (in_time) {
		assert_int_equal(n, 0);
		len = put_rec(tmp, 0, kwd, IN_MOVED_TO | IN_ISDIR, 22, "a", 1, 8);
		feed_all(nx, tmp, len);
		n = read_until(nx, ev, path, 1);
		assert_int_equal(n, 1);
		assert_int_equal(ev[0].mask, NOTIFYX_RENAME);
		assert_int_equal(ev[0].flags & NOTIFYX_EVENT_EXCHANGE, NOTIFYX_EVENT_EXCHANGE);
	}
	assert_int_equal(notifyx_close(nx), 0);
	for (int i = 0; i < 2; i++) {
		snprintf(sub, sizeof(sub), "%s/%c", dir, "ab"[i]);
		assert_int_equal(rmdir(sub), 0);
	}
	assert_int_equal(rmdir(dir), 0);
	if (!in_time) {
		print_message("[ SKIP     ] 10 ms passed between feeding and reading: "
			      "the hold ended by time\n");
		skip();
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mask_each_bit),
		cmocka_unit_test(test_mask_unions),
		cmocka_unit_test(test_mask_not_requestable),
		cmocka_unit_test(test_event_from_kernel),
		cmocka_unit_test(test_decode_sequence),
		cmocka_unit_test(test_decode_truncated),
		cmocka_unit_test(test_decode_len_past_end),
		cmocka_unit_test(test_decode_name_without_nul),
		cmocka_unit_test(test_decode_empty_name),
		cmocka_unit_test(test_decode_unaligned),
		cmocka_unit_test(test_decode_random),
		cmocka_unit_test(test_feed_malformed),
		cmocka_unit_test(test_feed_empty_name),
		cmocka_unit_test(test_feed_hold),
		cmocka_unit_test(test_feed_dropped_arrival),
		cmocka_unit_test(test_feed_hold_overlap),
		cmocka_unit_test(test_feed_out_of_step),
		cmocka_unit_test(test_feed_exchange_in_two),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
