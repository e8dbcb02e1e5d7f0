/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of the event queue and its record encoder (libnotifyx/queue.c):
 * record sizes, names and padding, FIFO order over many chunks, splice with
 * exempt accounting, chunk release, clear. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nx.h"

/* ---- allocation tracking (linked with -Wl,--wrap=malloc,--wrap=free) ----
 *
 * Every block of at least 64 KiB (a chunk) is counted while it lives, and
 * every block is filled with 0xA5 so that bytes the encoder forgets to write
 * do not read as zero by luck. */

void *__real_malloc(size_t size);
void __real_free(void *p);
void *__wrap_malloc(size_t size);
void __wrap_free(void *p);

#define BIG (64 * 1024)
#define MAXBIG 4096
static void *big[MAXBIG];
static size_t nbig;
static int fail_malloc;

void *__wrap_malloc(size_t size)
{
	void *p;

	if (fail_malloc) {
		errno = ENOMEM;
		return NULL;
	}
	p = __real_malloc(size);
	if (p)
		memset(p, 0xA5, size);
	if (p && size >= BIG) {
		assert_true(nbig < MAXBIG);
		big[nbig++] = p;
	}
	return p;
}

void __wrap_free(void *p)
{
	for (size_t i = 0; i < nbig; i++)
		if (big[i] == p) {
			big[i] = big[--nbig];
			break;
		}
	__real_free(p);
}

/* ---- helpers ---- */

static uint64_t rng_state = 12345;

static uint32_t rnd(void)
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)(rng_state >> 33);
}

/* Deterministic content of the names of record number i. */
static void fill_name(char *buf, size_t len, unsigned i, char salt)
{
	for (size_t k = 0; k < len; k++)
		buf[k] = (char)('a' + (i * 7 + k * 3 + (unsigned char)salt) % 26);
	buf[len] = '\0';
}

static size_t ceil8(size_t n)
{
	return (n + 7) / 8 * 8;
}

/* Checks every byte of a record against what was pushed. */
static void check_record(const struct notifyx_event *ev, int32_t wd, uint32_t mask,
			 uint32_t flags, uint32_t cookie, int32_t error, const char *path,
			 size_t plen, const char *old, size_t olen)
{
	const char *b = (const char *)ev;
	size_t want = ceil8(sizeof(*ev) + plen + 1 + (olen ? olen + 1 : 0));
	size_t used = sizeof(*ev) + plen + 1 + (olen ? olen + 1 : 0);

	assert_non_null(ev);
	assert_int_equal((uintptr_t)ev % 8, 0);
	assert_int_equal(ev->size, want);
	assert_int_equal(ev->size, nx_event_size(plen, olen));
	assert_int_equal(ev->size % 8, 0);
	assert_int_equal(ev->wd, wd);
	assert_int_equal(ev->mask, mask);
	assert_int_equal(ev->flags, flags);
	assert_int_equal(ev->cookie, cookie);
	assert_int_equal(ev->error, error);
	assert_int_equal(ev->path_len, plen);
	assert_int_equal(ev->old_path_len, olen);
	assert_memory_equal(ev->names, path ? path : "", plen);
	assert_int_equal(ev->names[plen], '\0');
	assert_int_equal(strlen(notifyx_event_path(ev)), plen);
	if (olen) {
		assert_non_null(notifyx_event_old_path(ev));
		assert_ptr_equal(notifyx_event_old_path(ev), ev->names + plen + 1);
		assert_memory_equal(ev->names + plen + 1, old, olen);
		assert_int_equal(ev->names[plen + 1 + olen], '\0');
		assert_int_equal(strlen(notifyx_event_old_path(ev)), olen);
	} else {
		assert_null(notifyx_event_old_path(ev));
	}
	for (size_t k = used; k < ev->size; k++) {
		if (b[k])
			print_error("padding byte %zu of a %u-byte record is 0x%02x\n", k, ev->size,
				    (unsigned char)b[k]);
		assert_int_equal(b[k], 0);
	}
}

/* ---- tests ---- */

static void test_event_size(void **state)
{
	(void)state;
	assert_int_equal(sizeof(struct notifyx_event), 32);
	assert_int_equal(nx_event_size(0, 0), 40);
	assert_int_equal(nx_event_size(6, 0), 40);
	assert_int_equal(nx_event_size(7, 0), 40);
	assert_int_equal(nx_event_size(8, 0), 48);
	assert_int_equal(nx_event_size(0, 1), 40);
	assert_int_equal(nx_event_size(3, 3), 40);
	assert_int_equal(nx_event_size(3, 4), 48);
	assert_int_equal(nx_event_size(PATH_MAX - 1, PATH_MAX - 1), NOTIFYX_EVENT_MAX);
	for (size_t p = 0; p < 300; p++)
		for (size_t o = 0; o < 300; o++) {
			size_t s = nx_event_size(p, o);
			size_t need = 32 + p + 1 + (o ? o + 1 : 0);
			assert_int_equal(s % 8, 0);
			assert_true(s >= need);
			assert_true(s < need + 8);
		}
}

static void test_push_fields(void **state)
{
	struct nx_queue q = { 0 };
	char p[PATH_MAX + 8], o[PATH_MAX + 8];
	static const size_t lens[] = { 0, 1, 5, 6, 7, 8, 9, 15, 16, 17, 255, 256, 1000, PATH_MAX - 1 };
	const size_t nl = sizeof(lens) / sizeof(lens[0]);
	unsigned i = 0;

	(void)state;
	for (size_t a = 0; a < nl; a++)
		for (size_t b = 0; b < nl; b++, i++) {
			fill_name(p, lens[a], i, 'p');
			fill_name(o, lens[b], i, 'o');
			struct notifyx_event *ev = nx_queue_push(&q, (int32_t)i + 1, NOTIFYX_RENAME,
								 NOTIFYX_EVENT_ISDIR, i * 3, -(int32_t)i,
								 p, lens[a], o, lens[b]);
			check_record(ev, (int32_t)i + 1, NOTIFYX_RENAME, NOTIFYX_EVENT_ISDIR, i * 3,
				     -(int32_t)i, p, lens[a], o, lens[b]);
		}
	assert_int_equal(q.count, i);
	assert_int_equal(q.exempt, 0);
	/* Read them back in order: the record bytes are intact. */
	i = 0;
	for (size_t a = 0; a < nl; a++)
		for (size_t b = 0; b < nl; b++, i++) {
			fill_name(p, lens[a], i, 'p');
			fill_name(o, lens[b], i, 'o');
			check_record(nx_queue_peek(&q), (int32_t)i + 1, NOTIFYX_RENAME,
				     NOTIFYX_EVENT_ISDIR, i * 3, -(int32_t)i, p, lens[a], o, lens[b]);
			nx_queue_pop(&q);
		}
	assert_int_equal(q.count, 0);
	assert_null(nx_queue_peek(&q));
	nx_queue_clear(&q);
}

/* A name given with a length is copied up to that length only. */
static void test_push_not_terminated(void **state)
{
	struct nx_queue q = { 0 };
	const char p[] = "abcdefXYZ", o[] = "0123456789";

	(void)state;
	check_record(nx_queue_push(&q, 1, NOTIFYX_RENAME, 0, 0, 0, p, 6, o, 3), 1, NOTIFYX_RENAME,
		     0, 0, 0, "abcdef", 6, "012", 3);
	assert_string_equal(notifyx_event_path(nx_queue_peek(&q)), "abcdef");
	assert_string_equal(notifyx_event_old_path(nx_queue_peek(&q)), "012");
	nx_queue_clear(&q);
}

/* nx.h: "path and old may be NULL when their length is 0". */
static void test_push_null_names(void **state)
{
	struct nx_queue q = { 0 };

	(void)state;
	check_record(nx_queue_push(&q, 3, NOTIFYX_IGNORED, 0, 0, 0, NULL, 0, NULL, 0), 3,
		     NOTIFYX_IGNORED, 0, 0, 0, "", 0, NULL, 0);
	check_record(nx_queue_push(&q, 3, NOTIFYX_OVERFLOW, 0, 0, 0, "", 0, NULL, 0), 3,
		     NOTIFYX_OVERFLOW, 0, 0, 0, "", 0, NULL, 0);
	assert_int_equal(q.count, 2);
	nx_queue_clear(&q);
}

static void test_push_too_long(void **state)
{
	struct nx_queue q = { 0 };
	static char p[PATH_MAX + 16], o[PATH_MAX + 16];

	(void)state;
	memset(p, 'p', sizeof(p));
	memset(o, 'o', sizeof(o));
	/* The largest record there is fits. */
	assert_non_null(nx_queue_push(&q, 1, NOTIFYX_RENAME, 0, 0, 0, p, PATH_MAX - 1, o,
				      PATH_MAX - 1));
	assert_int_equal(nx_queue_peek(&q)->size, NOTIFYX_EVENT_MAX);
	/* One byte more does not, and nothing is queued. */
	errno = 0;
	assert_null(nx_queue_push(&q, 1, NOTIFYX_RENAME, 0, 0, 0, p, PATH_MAX, o, PATH_MAX - 1));
	assert_int_equal(errno, ENAMETOOLONG);
	errno = 0;
	assert_null(nx_queue_push(&q, 1, NOTIFYX_CREATE, 0, 0, 0, p, 2 * PATH_MAX + 8, NULL, 0));
	assert_int_equal(errno, ENAMETOOLONG);
	assert_int_equal(q.count, 1);
	nx_queue_pop(&q);
	assert_null(nx_queue_peek(&q));
	nx_queue_clear(&q);
}

static void test_push_enomem(void **state)
{
	struct nx_queue q = { 0 };

	(void)state;
	fail_malloc = 1;
	errno = 0;
	assert_null(nx_queue_push(&q, 1, NOTIFYX_CREATE, 0, 0, 0, "a", 1, NULL, 0));
	fail_malloc = 0;
	assert_int_equal(errno, ENOMEM);
	assert_int_equal(q.count, 0);
	assert_null(nx_queue_peek(&q));
	assert_non_null(nx_queue_push(&q, 1, NOTIFYX_CREATE, 0, 0, 0, "a", 1, NULL, 0));
	assert_int_equal(q.count, 1);
	nx_queue_clear(&q);
}

/* FIFO over many chunks: records of random sizes, far more than 64 KiB,
 * pushed and popped in random bursts; every record comes back intact. */
static void test_fifo_many_chunks(void **state)
{
	struct nx_queue q = { 0 };
	static char p[PATH_MAX], o[PATH_MAX];
	unsigned pushed = 0, popped = 0;
	size_t bytes = 0, max_chunks = 0;

	(void)state;
#define PLEN(i) ((size_t)((i) * 2654435761u % 97 == 0 ? ((i) * 31u) % PATH_MAX : ((i) * 13u) % 300))
#define OLEN(i) ((size_t)((i) % 5 == 0 ? ((i) * 17u) % 200 : 0))
	while (pushed < 40000) {
		unsigned burst = rnd() % 3000;
		for (unsigned k = 0; k < burst; k++, pushed++) {
			size_t pl = PLEN(pushed), ol = OLEN(pushed);
			fill_name(p, pl, pushed, 'p');
			fill_name(o, ol, pushed, 'o');
			struct notifyx_event *ev = nx_queue_push(&q, (int32_t)(pushed % 1000) + 1,
								 NOTIFYX_CREATE, 0, pushed, 0, p, pl, o, ol);
			assert_non_null(ev);
			bytes += ev->size;
		}
		if (nbig > max_chunks)
			max_chunks = nbig;
		assert_int_equal(q.count, pushed - popped);
		unsigned take = rnd() % 2500;
		for (unsigned k = 0; k < take && popped < pushed; k++, popped++) {
			size_t pl = PLEN(popped), ol = OLEN(popped);
			fill_name(p, pl, popped, 'p');
			fill_name(o, ol, popped, 'o');
			const struct notifyx_event *ev = nx_queue_peek(&q);
			if (!ev || ev->cookie != popped)
				print_error("record %u: got cookie %u\n", popped, ev ? ev->cookie : 0);
			check_record(ev, (int32_t)(popped % 1000) + 1, NOTIFYX_CREATE, 0, popped, 0, p,
				     pl, o, ol);
			nx_queue_pop(&q);
		}
		assert_int_equal(q.count, pushed - popped);
	}
	while (popped < pushed) {
		assert_int_equal(nx_queue_peek(&q)->cookie, popped);
		nx_queue_pop(&q);
		popped++;
	}
	print_message("%zu bytes of records, up to %zu chunks at once\n", bytes, max_chunks);
	assert_true(bytes > 20 * BIG);
	assert_true(max_chunks >= 3);
	assert_int_equal(q.count, 0);
	assert_null(nx_queue_peek(&q));
	/* Only a spare chunk may be left; clear frees it. */
	assert_true(nbig <= 1);
	nx_queue_clear(&q);
	assert_int_equal(nbig, 0);
}

/* Pushes 1040-byte records until n new chunks are in use (the last one
 * holding one record); returns how many.
 * starts[k] (when given) is the number of the first record of chunk k. */
static unsigned fill_chunks(struct nx_queue *q, size_t n, unsigned first, unsigned *starts)
{
	static char p[1000];
	unsigned i = first;
	size_t before = nbig, seen = nbig;

	memset(p, 'x', sizeof(p));
	while (nbig - before < n) {
		assert_non_null(nx_queue_push(q, 1, NOTIFYX_MODIFY, 0, i, 0, p, sizeof(p), NULL, 0));
		if (nbig != seen) {
			if (starts)
				starts[nbig - before - 1] = i - first;
			seen = nbig;
		}
		i++;
	}
	return i - first;
}

/* Popping frees each chunk as soon as its last record is popped (keeping
 * one spare), and a pushed record reuses the spare. */
static void test_pop_frees_chunks(void **state)
{
	struct nx_queue q = { 0 };
	unsigned starts[7];

	(void)state;
	assert_int_equal(nbig, 0);
	unsigned n = fill_chunks(&q, 6, 0, starts);
	assert_int_equal(nbig, 6);
	assert_int_equal(q.count, n);
	starts[6] = n;
	for (unsigned i = 0; i < n; i++) {
		assert_int_equal(nx_queue_peek(&q)->cookie, i);
		nx_queue_pop(&q);
		/* Chunks that still hold records, plus one spare once one is empty. */
		size_t holding = 0, emptied = 0;
		for (int k = 0; k < 6; k++) {
			if (starts[k + 1] > i + 1)
				holding++;
			else
				emptied++;
		}
		size_t want = holding + (emptied ? 1 : 0);
		if (nbig != want)
			print_error("after %u pops: %zu chunks alive, expected %zu\n", i + 1, nbig, want);
		assert_int_equal(nbig, want);
	}
	assert_int_equal(q.count, 0);
	assert_null(nx_queue_peek(&q));
	assert_int_equal(nbig, 1); /* the spare */
	/* pop on an empty queue does nothing */
	nx_queue_pop(&q);
	assert_int_equal(q.count, 0);
	assert_int_equal(q.exempt, 0);
	/* The spare is reused: no new allocation for the next record. */
	void *spare = big[0];
	assert_non_null(nx_queue_push(&q, 9, NOTIFYX_CREATE, 0, 0, 0, "new", 3, NULL, 0));
	assert_int_equal(nbig, 1);
	assert_ptr_equal(big[0], spare);
	check_record(nx_queue_peek(&q), 9, NOTIFYX_CREATE, 0, 0, 0, "new", 3, NULL, 0);
	nx_queue_clear(&q);
	assert_int_equal(nbig, 0);
}

/* Records written into a reused (dirty) chunk are still zero-padded. */
static void test_padding_in_reused_chunk(void **state)
{
	struct nx_queue q = { 0 };
	char p[64];

	(void)state;
	memset(p, 'z', sizeof(p));
	for (int i = 0; i < 100; i++)
		assert_non_null(nx_queue_push(&q, 1, NOTIFYX_RENAME, 0, 0, 0, p, 63, p, 63));
	while (q.count)
		nx_queue_pop(&q);
	for (unsigned i = 0; i < 200; i++) {
		size_t pl = i % 17, ol = i % 3 ? i % 11 : 0;
		char a[32], b[32];
		fill_name(a, pl, i, 'a');
		fill_name(b, ol, i, 'b');
		assert_non_null(nx_queue_push(&q, 2, NOTIFYX_RENAME, 0, i, 0, a, pl, b, ol));
	}
	for (unsigned i = 0; i < 200; i++) {
		size_t pl = i % 17, ol = i % 3 ? i % 11 : 0;
		char a[32], b[32];
		fill_name(a, pl, i, 'a');
		fill_name(b, ol, i, 'b');
		check_record(nx_queue_peek(&q), 2, NOTIFYX_RENAME, 0, i, 0, a, pl, b, ol);
		nx_queue_pop(&q);
	}
	nx_queue_clear(&q);
}

/* Drains q, checking cookies first..first+n-1 in order, and the exempt count
 * as it goes: the first `plain` records are not exempt, the rest are. */
static void drain_check(struct nx_queue *q, unsigned first, size_t n, size_t exempt_left)
{
	for (size_t i = 0; i < n; i++) {
		const struct notifyx_event *ev = nx_queue_peek(q);
		assert_non_null(ev);
		assert_int_equal(ev->cookie, first + i);
		assert_int_equal(q->count, n - i);
		assert_int_equal(q->exempt, exempt_left);
		bool was_exempt = q->exempt == q->count;
		nx_queue_pop(q);
		if (was_exempt)
			exempt_left--;
	}
	assert_int_equal(q->count, 0);
	assert_int_equal(q->exempt, 0);
	assert_null(nx_queue_peek(q));
}

static void push_n(struct nx_queue *q, unsigned first, unsigned n)
{
	for (unsigned i = first; i < first + n; i++)
		assert_non_null(nx_queue_push(q, 1, NOTIFYX_CREATE, 0, i, 0, "f", 1, NULL, 0));
}

static void test_splice_exempt(void **state)
{
	struct nx_queue dst = { 0 }, src = { 0 };

	(void)state;
	push_n(&dst, 0, 10);
	push_n(&src, 10, 5);
	nx_queue_splice(&dst, &src, true);
	assert_int_equal(dst.count, 15);
	assert_int_equal(dst.exempt, 5);
	assert_int_equal(src.count, 0);
	assert_int_equal(src.exempt, 0);
	assert_null(nx_queue_peek(&src));
	/* Records pushed after the splice count against queue_max again. */
	push_n(&dst, 15, 3);
	assert_int_equal(dst.count, 18);
	assert_int_equal(dst.exempt, 5);
	/* Popping: the first 10 are plain (exempt stays 5), then 5 exempt,
	 * then 3 plain. */
	for (unsigned i = 0; i < 18; i++) {
		size_t want = i < 10 ? 5 : i < 15 ? 15 - i : 0;
		assert_int_equal(dst.exempt, want);
		assert_int_equal(nx_queue_peek(&dst)->cookie, i);
		nx_queue_pop(&dst);
	}
	assert_int_equal(dst.count, 0);
	assert_int_equal(dst.exempt, 0);
	/* src still works after being emptied. */
	push_n(&src, 100, 2);
	assert_int_equal(src.count, 2);
	assert_int_equal(nx_queue_peek(&src)->cookie, 100);
	nx_queue_clear(&src);
	nx_queue_clear(&dst);
	assert_int_equal(nbig, 0);
}

static void test_splice_plain_and_empty(void **state)
{
	struct nx_queue a = { 0 }, b = { 0 }, c = { 0 }, e = { 0 };

	(void)state;
	/* empty src: nothing changes */
	push_n(&a, 0, 4);
	nx_queue_splice(&a, &e, true);
	assert_int_equal(a.count, 4);
	assert_int_equal(a.exempt, 0);
	/* into an empty dst */
	nx_queue_splice(&e, &a, false);
	assert_int_equal(e.count, 4);
	assert_int_equal(e.exempt, 0);
	assert_int_equal(a.count, 0);
	assert_null(nx_queue_peek(&a));
	/* exempt records keep their status through a plain splice */
	push_n(&b, 4, 6);
	nx_queue_splice(&e, &b, true); /* e: 4 plain + 6 exempt */
	assert_int_equal(e.exempt, 6);
	push_n(&c, 0, 0);
	nx_queue_splice(&c, &e, false); /* c: the same */
	assert_int_equal(c.count, 10);
	assert_int_equal(c.exempt, 6);
	assert_int_equal(e.count, 0);
	assert_int_equal(e.exempt, 0);
	/* an exempt splice of a queue that already has exempt records counts
	 * each record once */
	push_n(&a, 10, 2);
	nx_queue_splice(&a, &c, true); /* a: 2 plain + 10 exempt */
	assert_int_equal(a.count, 12);
	assert_int_equal(a.exempt, 10);
	for (unsigned i = 0; i < 12; i++) {
		unsigned want = i < 2 ? 10 + i : i - 2;
		assert_int_equal(nx_queue_peek(&a)->cookie, want);
		assert_int_equal(a.exempt, i < 2 ? 10 : 12 - i);
		nx_queue_pop(&a);
	}
	assert_int_equal(a.count, 0);
	assert_int_equal(a.exempt, 0);
	nx_queue_clear(&a);
	nx_queue_clear(&b);
	nx_queue_clear(&c);
	nx_queue_clear(&e);
	assert_int_equal(nbig, 0);
}

/* Splicing many chunks: order and counts over chunk boundaries. */
static void test_splice_many_chunks(void **state)
{
	struct nx_queue dst = { 0 }, src = { 0 };

	(void)state;
	unsigned a = fill_chunks(&dst, 3, 0, NULL);
	unsigned b = fill_chunks(&src, 4, a, NULL);
	size_t chunks = nbig;
	nx_queue_splice(&dst, &src, true);
	assert_int_equal(nbig, chunks); /* no copy */
	assert_int_equal(dst.count, a + b);
	assert_int_equal(dst.exempt, b);
	struct nx_queue out = { 0 };
	nx_queue_splice(&out, &dst, false);
	drain_check(&out, 0, a + b, b);
	nx_queue_clear(&dst);
	nx_queue_clear(&src);
	nx_queue_clear(&out);
	assert_int_equal(nbig, 0);
}

static void test_clear(void **state)
{
	struct nx_queue q = { 0 }, s = { 0 };

	(void)state;
	fill_chunks(&q, 3, 0, NULL);
	push_n(&s, 0, 5);
	nx_queue_splice(&q, &s, true);
	nx_queue_pop(&q); /* leaves a spare behind later */
	nx_queue_clear(&q);
	assert_int_equal(q.count, 0);
	assert_int_equal(q.exempt, 0);
	assert_null(q.head);
	assert_null(q.tail);
	assert_null(q.spare);
	assert_null(nx_queue_peek(&q));
	assert_int_equal(nbig, 0);
	/* usable after clear */
	push_n(&q, 7, 1);
	assert_int_equal(nx_queue_peek(&q)->cookie, 7);
	assert_int_equal(q.count, 1);
	nx_queue_clear(&q);
	nx_queue_clear(&q); /* twice is harmless */
	nx_queue_clear(&s);
	assert_int_equal(nbig, 0);
}

/* A failed test may leave chunks behind: do not blame the next one. */
static int reset(void **state)
{
	(void)state;
	nbig = 0;
	fail_malloc = 0;
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_event_size, reset),
		cmocka_unit_test_setup(test_push_fields, reset),
		cmocka_unit_test_setup(test_push_not_terminated, reset),
		cmocka_unit_test_setup(test_push_null_names, reset),
		cmocka_unit_test_setup(test_push_too_long, reset),
		cmocka_unit_test_setup(test_push_enomem, reset),
		cmocka_unit_test_setup(test_fifo_many_chunks, reset),
		cmocka_unit_test_setup(test_pop_frees_chunks, reset),
		cmocka_unit_test_setup(test_padding_in_reused_chunk, reset),
		cmocka_unit_test_setup(test_splice_exempt, reset),
		cmocka_unit_test_setup(test_splice_plain_and_empty, reset),
		cmocka_unit_test_setup(test_splice_many_chunks, reset),
		cmocka_unit_test_setup(test_clear, reset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
