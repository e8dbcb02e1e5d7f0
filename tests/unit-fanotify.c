/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of the fanotify backend's pure parts (backends/fanotify.h): the
 * record decoder on well-formed records (FID, DFID_NAME, DFID, FAN_RENAME's
 * two names, in any order), on malformed ones (lengths that lie, handles
 * larger than their record, names without NUL, unknown info types, a wrong
 * version), the splitting of merged masks and the mask translation.  Each
 * buffer is allocated at its exact size, so that -fsanitize=address catches
 * any read past it. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>

#include <cmocka.h>

#include "../backends/fanotify.h"
#include "nx.h"

#ifndef FAN_RENAME
#define FAN_RENAME 0x10000000
#endif

/* A record under construction. */
struct rb {
	unsigned char b[4096];
	size_t len;
};

static void rb_start(struct rb *r, uint64_t mask)
{
	struct fanotify_event_metadata m = { 0 };

	memset(r, 0, sizeof(*r));
	m.vers = FANOTIFY_METADATA_VERSION;
	m.metadata_len = sizeof(m);
	m.mask = mask;
	m.fd = FAN_NOFD;
	memcpy(r->b, &m, sizeof(m));
	r->len = sizeof(m);
}

/* Appends an identifier record of type t with handle bytes h (n of them)
 * and, when name is not NULL, the name; padded to 4. */
static void rb_id(struct rb *r, uint8_t t, uint32_t fsid, const char *h, uint32_t n,
		  const char *name)
{
	size_t start = r->len, nl = name ? strlen(name) + 1 : 0;
	uint16_t len = (uint16_t)((4 + 8 + 8 + n + nl + 3) & ~3u);
	int32_t type = 1;

	r->b[start] = t;
	memcpy(r->b + start + 2, &len, 2);
	memcpy(r->b + start + 4, &fsid, 4);
	memcpy(r->b + start + 12, &n, 4);
	memcpy(r->b + start + 16, &type, 4);
	memcpy(r->b + start + 20, h, n);
	if (name)
		memcpy(r->b + start + 20 + n, name, nl);
	r->len += len;
}

static char *rb_finish(struct rb *r)
{
	uint32_t ev_len = (uint32_t)r->len;
	char *p = malloc(r->len);

	memcpy(r->b, &ev_len, 4);
	memcpy(p, r->b, r->len);
	return p;
}

static void test_decode_dfid_name_fid(void **state)
{
	struct rb rb;
	struct fanrec r;
	char *buf;

	(void)state;
	rb_start(&rb, FAN_CREATE | FAN_ONDIR);
	rb_id(&rb, FAN_EVENT_INFO_TYPE_DFID_NAME, 7, "dirhandl", 8, "x");
	rb_id(&rb, FAN_EVENT_INFO_TYPE_FID, 7, "childhnd", 8, NULL);
	buf = rb_finish(&rb);
	assert_true(nx_fan_decode(buf, rb.len, 0, &r));
	assert_int_equal(r.size, rb.len);
	assert_int_equal(r.mask, FAN_CREATE | FAN_ONDIR);
	assert_int_equal(r.dfid.len, 16 + 8);
	assert_memory_equal(r.dfid.data + 16, "dirhandl", 8);
	assert_int_equal(r.name.len, 1);
	assert_string_equal(r.name.name, "x");
	assert_int_equal(r.fid.len, 16 + 8);
	assert_memory_equal(r.fid.data + 16, "childhnd", 8);
	assert_int_equal(r.fid.key, nx_fan_key(r.fid.data, r.fid.len));
	assert_true(r.fid.key != r.dfid.key);
	assert_int_equal(r.odfid.len, 0);
	free(buf);
}

static void test_decode_rename_any_order(void **state)
{
	struct rb rb;
	struct fanrec r;
	char *buf;

	(void)state;
	/* The kernel does not promise an order of info records. */
	rb_start(&rb, FAN_RENAME);
	rb_id(&rb, FAN_EVENT_INFO_TYPE_FID, 1, "obj", 3, NULL);
	rb_id(&rb, FAN_EVENT_INFO_TYPE_NEW_DFID_NAME, 1, "to", 2, "new-name");
	rb_id(&rb, FAN_EVENT_INFO_TYPE_OLD_DFID_NAME, 1, "from", 4, "old");
	buf = rb_finish(&rb);
	assert_true(nx_fan_decode(buf, rb.len, 0, &r));
	assert_string_equal(r.oname.name, "old");
	assert_int_equal(r.oname.len, 3);
	assert_string_equal(r.nname.name, "new-name");
	assert_memory_equal(r.odfid.data + 16, "from", 4);
	assert_memory_equal(r.ndfid.data + 16, "to", 2);
	assert_int_equal(r.fid.len, 16 + 3);
	assert_int_equal(r.dfid.len, 0);
	free(buf);
}

static void test_decode_sequence_and_overflow(void **state)
{
	struct rb a, b;
	struct fanrec r;
	char *pa, *pb, *buf;
	size_t len;

	(void)state;
	rb_start(&a, FAN_Q_OVERFLOW); /* 24 bytes, no info */
	rb_start(&b, FAN_MODIFY);
	rb_id(&b, FAN_EVENT_INFO_TYPE_DFID_NAME, 1, "d", 1, "f");
	pa = rb_finish(&a);
	pb = rb_finish(&b);
	len = a.len + b.len;
	buf = malloc(len);
	memcpy(buf, pa, a.len);
	memcpy(buf + a.len, pb, b.len);
	assert_true(nx_fan_decode(buf, len, 0, &r));
	assert_int_equal(r.mask, FAN_Q_OVERFLOW);
	assert_int_equal(r.size, sizeof(struct fanotify_event_metadata));
	assert_true(nx_fan_decode(buf, len, r.size, &r));
	assert_int_equal(r.mask, FAN_MODIFY);
	assert_string_equal(r.name.name, "f");
	assert_false(nx_fan_decode(buf, len, len, &r));
	free(pa);
	free(pb);
	free(buf);
}

static void test_decode_unknown_info_skipped(void **state)
{
	struct rb rb;
	struct fanrec r;
	char *buf;

	(void)state;
	rb_start(&rb, FAN_ATTRIB);
	rb_id(&rb, 99, 1, "zzzz", 4, NULL); /* a type this version does not know */
	rb_id(&rb, FAN_EVENT_INFO_TYPE_DFID, 1, "dir", 3, NULL);
	buf = rb_finish(&rb);
	assert_true(nx_fan_decode(buf, rb.len, 0, &r));
	assert_memory_equal(r.dfid.data + 16, "dir", 3);
	assert_int_equal(r.name.len, 0);
	assert_null(r.name.name);
	free(buf);
}

static void test_decode_lying_lengths(void **state)
{
	struct rb rb;
	struct fanrec r;
	char *buf;
	uint32_t big = 100000;
	uint16_t ilen;

	(void)state;
	/* event_len past the buffer: refused. */
	rb_start(&rb, FAN_MODIFY);
	rb_id(&rb, FAN_EVENT_INFO_TYPE_DFID_NAME, 1, "d", 1, "f");
	buf = rb_finish(&rb);
	memcpy(buf, &big, 4);
	assert_false(nx_fan_decode(buf, rb.len, 0, &r));
	free(buf);
	/* event_len below the header: refused, size 0 (nothing to skip by). */
	buf = rb_finish(&rb);
	big = 8;
	memcpy(buf, &big, 4);
	assert_false(nx_fan_decode(buf, rb.len, 0, &r));
	assert_int_equal(r.size, 0);
	free(buf);
	/* A handle longer than its info record: that record is ignored. */
	buf = rb_finish(&rb);
	big = 200;
	memcpy(buf + sizeof(struct fanotify_event_metadata) + 12, &big, 4);
	assert_true(nx_fan_decode(buf, rb.len, 0, &r));
	assert_int_equal(r.dfid.len, 0);
	free(buf);
	/* An info length past the record: the rest is not trusted. */
	buf = rb_finish(&rb);
	ilen = 4000;
	memcpy(buf + sizeof(struct fanotify_event_metadata) + 2, &ilen, 2);
	assert_true(nx_fan_decode(buf, rb.len, 0, &r));
	assert_int_equal(r.dfid.len, 0);
	free(buf);
	/* An info length below its header: the same. */
	buf = rb_finish(&rb);
	ilen = 2;
	memcpy(buf + sizeof(struct fanotify_event_metadata) + 2, &ilen, 2);
	assert_true(nx_fan_decode(buf, rb.len, 0, &r));
	assert_int_equal(r.dfid.len, 0);
	free(buf);
}

static void test_decode_name_without_nul(void **state)
{
	struct rb rb;
	struct fanrec r;
	char *buf;
	size_t at;

	(void)state;
	rb_start(&rb, FAN_CREATE);
	rb_id(&rb, FAN_EVENT_INFO_TYPE_DFID_NAME, 1, "d", 1, "abc"); /* len 4+16+1+4 = 25 -> 28 */
	buf = rb_finish(&rb);
	/* Fill the name and the padding: no NUL left inside the record. */
	at = sizeof(struct fanotify_event_metadata) + 20 + 1;
	memset(buf + at, 'x', rb.len - at);
	assert_true(nx_fan_decode(buf, rb.len, 0, &r));
	assert_int_equal(r.dfid.len, 0);
	assert_int_equal(r.name.len, 0);
	free(buf);
}

static void test_decode_bad_version_and_truncated(void **state)
{
	struct rb rb;
	struct fanrec r;
	char *buf;

	(void)state;
	rb_start(&rb, FAN_MODIFY);
	buf = rb_finish(&rb);
	buf[4] = 2; /* vers */
	assert_false(nx_fan_decode(buf, rb.len, 0, &r));
	assert_int_equal(r.size, rb.len); /* skippable */
	free(buf);
	buf = rb_finish(&rb);
	for (size_t n = 0; n < rb.len; n++)
		assert_false(nx_fan_decode(buf, n, 0, &r));
	free(buf);
}

/* A FAN_RENAME of pid's, of object obj from dir/from to to_dir/to. */
static char *rename_rec(struct rb *rb, int32_t pid, const char *obj, const char *dir,
			const char *from, const char *to_dir, const char *to)
{
	struct fanotify_event_metadata m;

	rb_start(rb, FAN_RENAME);
	memcpy(&m, rb->b, sizeof(m));
	m.pid = pid;
	memcpy(rb->b, &m, sizeof(m));
	rb_id(rb, FAN_EVENT_INFO_TYPE_OLD_DFID_NAME, 1, dir, (uint32_t)strlen(dir), from);
	rb_id(rb, FAN_EVENT_INFO_TYPE_NEW_DFID_NAME, 1, to_dir, (uint32_t)strlen(to_dir), to);
	rb_id(rb, FAN_EVENT_INFO_TYPE_FID, 1, obj, (uint32_t)strlen(obj), NULL);
	return rb_finish(rb);
}

/* An exchange's second FAN_RENAME is the next of the same process's: with
 * filesystem marks, another process's rename can come between (a program
 * mirroring the tree on the same filesystem). */
static void test_exchange_halves_apart(void **state)
{
	struct rb rb[4];
	char *rec[4], *buf;
	size_t off[5] = { 0 };
	struct fanrec r;

	(void)state;
	rec[0] = rename_rec(&rb[0], 10, "obj1", "dirA", "x", "dirB", "y");
	rec[1] = rename_rec(&rb[1], 20, "obj3", "dirC", "p", "dirC", "q");
	rb_start(&rb[2], FAN_CREATE);
	rb_id(&rb[2], FAN_EVENT_INFO_TYPE_DFID_NAME, 1, "dirC", 4, "r");
	rec[2] = rb_finish(&rb[2]);
	rec[3] = rename_rec(&rb[3], 10, "obj2", "dirB", "y", "dirA", "x");
	for (int i = 0; i < 4; i++)
		off[i + 1] = off[i] + rb[i].len;
	buf = malloc(off[4]);
	for (int i = 0; i < 4; i++)
		memcpy(buf + off[i], rec[i], rb[i].len);
	assert_true(nx_fan_decode(buf, off[4], 0, &r));
	assert_int_equal(r.pid, 10);
	assert_int_equal(nx_fan_next_rename(buf, off[4], 0, &r), off[3]);
	/* The read ended before it: wait for more. */
	assert_int_equal(nx_fan_next_rename(buf, off[3], 0, &r), SIZE_MAX);
	/* The other process's rename has none after it. */
	assert_true(nx_fan_decode(buf, off[4], off[1], &r));
	assert_int_equal(nx_fan_next_rename(buf, off[4], off[1], &r), SIZE_MAX);
	for (int i = 0; i < 4; i++)
		free(rec[i]);
	free(buf);
}

static void check_split(uint64_t mask, bool exists, const uint32_t *want, size_t n)
{
	uint32_t out[8];
	size_t got = nx_fan_split(mask, exists, out);

	assert_int_equal(got, n);
	for (size_t i = 0; i < n; i++)
		if (out[i] != want[i])
			fail_msg("split of %#llx (exists %d): [%zu] is %s, want %s",
				 (unsigned long long)mask, exists, i, notifyx_event_name(out[i]),
				 notifyx_event_name(want[i]));
}

static void test_split(void **state)
{
	(void)state;
	/* The merge seen on this kernel for creat, write, close, chmod, unlink. */
	static const uint32_t life[] = { NOTIFYX_CREATE, NOTIFYX_OPEN, NOTIFYX_MODIFY,
					 NOTIFYX_CLOSE_WRITE, NOTIFYX_ATTRIB, NOTIFYX_DELETE };
	check_split(FAN_CREATE | FAN_OPEN | FAN_MODIFY | FAN_CLOSE_WRITE | FAN_ATTRIB | FAN_DELETE,
		    false, life, 6);
	/* Made and deleted, and there now: deleted first, then made again. */
	static const uint32_t again[] = { NOTIFYX_DELETE, NOTIFYX_CREATE };
	check_split(FAN_CREATE | FAN_DELETE, true, again, 2);
	static const uint32_t gone[] = { NOTIFYX_CREATE, NOTIFYX_DELETE };
	check_split(FAN_CREATE | FAN_DELETE, false, gone, 2);
	/* A deletion alone is last whatever is there now. */
	static const uint32_t mod_del[] = { NOTIFYX_MODIFY, NOTIFYX_DELETE };
	check_split(FAN_DELETE | FAN_MODIFY, true, mod_del, 2);
	static const uint32_t reads[] = { NOTIFYX_OPEN, NOTIFYX_ACCESS, NOTIFYX_CLOSE_NOWRITE };
	check_split(FAN_OPEN | FAN_ACCESS | FAN_CLOSE_NOWRITE | FAN_ONDIR, false, reads, 3);
	/* Bits that are not entry events give nothing. */
	check_split(FAN_DELETE_SELF | FAN_MOVE_SELF | FAN_RENAME | FAN_ONDIR, false, NULL, 0);
	/* Every bit at once fits in 8. */
	uint32_t out[8];
	assert_int_equal(nx_fan_split(~0ull, true, out), 8);
	assert_int_equal(nx_fan_split(~0ull, false, out), 8);
}

static void test_mask(void **state)
{
	(void)state;
	assert_int_equal(nx_fan_mask(NOTIFYX_CREATE), FAN_CREATE);
	assert_int_equal(nx_fan_mask(NOTIFYX_RENAME), FAN_RENAME);
	assert_int_equal(nx_fan_mask(NOTIFYX_MOVED_IN | NOTIFYX_MOVED_OUT), FAN_RENAME);
	assert_int_equal(nx_fan_mask(NOTIFYX_ALL_EVENTS),
			 FAN_ACCESS | FAN_MODIFY | FAN_ATTRIB | FAN_CLOSE_WRITE | FAN_CLOSE_NOWRITE |
			 FAN_OPEN | FAN_CREATE | FAN_DELETE | FAN_RENAME | FAN_DELETE_SELF |
			 FAN_MOVE_SELF);
	assert_int_equal(nx_fan_mask(NOTIFYX_OVERFLOW | NOTIFYX_IGNORED), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_dfid_name_fid),
		cmocka_unit_test(test_decode_rename_any_order),
		cmocka_unit_test(test_decode_sequence_and_overflow),
		cmocka_unit_test(test_decode_unknown_info_skipped),
		cmocka_unit_test(test_decode_lying_lengths),
		cmocka_unit_test(test_decode_name_without_nul),
		cmocka_unit_test(test_decode_bad_version_and_truncated),
		cmocka_unit_test(test_exchange_halves_apart),
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_mask),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
