/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of the hash map (libnotifyx/map.c): put, get, replace, delete
 * with backward-shift deletion under many colliding keys, checked against a
 * naive model; iteration; replacing never allocates.  The index (nx_index):
 * the same against a model, with keys that share homes and tags. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nx.h"

/* ---- allocation failure injection (linked with -Wl,--wrap=calloc) ---- */

void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);
static int fail_calloc;
static unsigned calloc_calls;

void *__wrap_calloc(size_t n, size_t size)
{
	calloc_calls++;
	if (fail_calloc) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_calloc(n, size);
}

/* ---- keys with chosen home slots ----
 *
 * The map places a key at mix(key) & (cap - 1).  The mix below is a copy of
 * the one in map.c; it is a bijection, so unmix() makes keys whose mixed
 * value has chosen low bits: keys that share a home slot at every capacity
 * up to 2^12.  If map.c changes its mix, test_collisions_are_real says so
 * (the other tests stay valid, only less harsh). */

#define MIXC 0xff51afd7ed558ccdULL

static uint64_t mix(uint64_t k)
{
	k ^= k >> 33;
	k *= MIXC;
	k ^= k >> 33;
	return k;
}

static uint64_t unmix(uint64_t h)
{
	uint64_t inv = MIXC; /* Newton's iteration for the inverse mod 2^64 */

	for (int i = 0; i < 6; i++)
		inv *= 2 - MIXC * inv;
	h ^= h >> 33; /* x ^= x >> 33 is its own inverse */
	h *= inv;
	h ^= h >> 33;
	return h;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	/* splitmix64: reproducible */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* A key whose home is `home` in every table of up to 2^bits slots. */
static uint64_t key_with_home(uint64_t home, unsigned bits)
{
	return unmix((rnd() << bits) | home);
}

static void *V(uint64_t i)
{
	return (void *)(uintptr_t)(i * 2 + 1); /* never NULL, never dereferenced */
}

/* The slot where the map holds key, found through iteration (pos - 1). */
static size_t slot_of_key(const struct nx_map *m, uint64_t key)
{
	size_t pos = 0;
	uint64_t k;
	void *v;

	while (nx_map_next(m, &pos, &k, &v))
		if (k == key)
			return pos - 1;
	return SIZE_MAX;
}

static void test_sanity(void **state)
{
	(void)state;
	for (uint64_t i = 0; i < 1000; i++) {
		uint64_t k = rnd();
		assert_int_equal(mix(unmix(k)), k);
	}
}

/* The generated keys really collide in the map (a check of the generator). */
static void test_collisions_are_real(void **state)
{
	struct nx_map m = { 0 };
	uint64_t keys[8];

	(void)state;
	for (int i = 0; i < 8; i++) {
		keys[i] = key_with_home(0xfff, 12);
		assert_int_equal(nx_map_put(&m, keys[i], V(i)), 0);
	}
	assert_int_equal(m.cap, 16);
	/* home 15, then wrapped around to 0..6: one probe run. */
	for (int i = 0; i < 8; i++) {
		size_t want = (15 + (size_t)i) & 15;
		size_t got = slot_of_key(&m, keys[i]);
		if (got != want)
			print_error("key %d at slot %zu, expected %zu: map.c's mix changed?\n", i,
				    got, want);
		assert_int_equal(got, want);
	}
	nx_map_free(&m);
}

static void test_empty(void **state)
{
	struct nx_map m = { 0 };
	size_t pos = 0;
	uint64_t k;
	void *v;

	(void)state;
	assert_null(nx_map_get(&m, 0));
	assert_null(nx_map_get(&m, 42));
	assert_null(nx_map_del(&m, 42));
	assert_false(nx_map_next(&m, &pos, &k, &v));
	assert_int_equal(m.len, 0);
	nx_map_free(&m);
	assert_int_equal(m.cap, 0);
	assert_null(m.slots);
}

static void test_basic(void **state)
{
	struct nx_map m = { 0 };

	(void)state;
	assert_int_equal(nx_map_put(&m, 0, V(0)), 0); /* key 0 is an ordinary key */
	assert_int_equal(nx_map_put(&m, UINT64_MAX, V(1)), 0);
	assert_int_equal(nx_map_put(&m, 7, V(2)), 0);
	assert_int_equal(m.len, 3);
	assert_ptr_equal(nx_map_get(&m, 0), V(0));
	assert_ptr_equal(nx_map_get(&m, UINT64_MAX), V(1));
	assert_ptr_equal(nx_map_get(&m, 7), V(2));
	assert_null(nx_map_get(&m, 8));
	/* replace */
	assert_int_equal(nx_map_put(&m, 7, V(3)), 0);
	assert_int_equal(m.len, 3);
	assert_ptr_equal(nx_map_get(&m, 7), V(3));
	/* delete returns the old value, then NULL */
	assert_ptr_equal(nx_map_del(&m, 7), V(3));
	assert_null(nx_map_del(&m, 7));
	assert_null(nx_map_get(&m, 7));
	assert_int_equal(m.len, 2);
	assert_ptr_equal(nx_map_del(&m, 0), V(0));
	assert_ptr_equal(nx_map_del(&m, UINT64_MAX), V(1));
	assert_int_equal(m.len, 0);
	/* usable again after free */
	nx_map_free(&m);
	assert_int_equal(nx_map_put(&m, 5, V(5)), 0);
	assert_ptr_equal(nx_map_get(&m, 5), V(5));
	nx_map_free(&m);
}

/* ---- exhaustive deletion orders of one wrapped probe run ---- */

#define RUN 7

static void check_present(const struct nx_map *m, const uint64_t *keys, const bool *present,
			  size_t n)
{
	size_t count = 0;

	for (size_t i = 0; i < n; i++) {
		void *got = nx_map_get(m, keys[i]);
		if (present[i]) {
			if (got != V(i))
				print_error("key #%zu (0x%016llx): got %p, expected %p\n", i,
					    (unsigned long long)keys[i], got, V(i));
			assert_ptr_equal(got, V(i));
			count++;
		} else {
			if (got)
				print_error("deleted key #%zu (0x%016llx) still found: %p\n", i,
					    (unsigned long long)keys[i], got);
			assert_null(got);
		}
	}
	assert_int_equal(m->len, count);
}

static bool next_perm(int *a, int n)
{
	int i = n - 2, j = n - 1;

	while (i >= 0 && a[i] >= a[i + 1])
		i--;
	if (i < 0)
		return false;
	while (a[j] <= a[i])
		j--;
	int t = a[i]; a[i] = a[j]; a[j] = t;
	for (int l = i + 1, r = n - 1; l < r; l++, r--) {
		t = a[l]; a[l] = a[r]; a[r] = t;
	}
	return true;
}

static void test_delete_orders(void **state)
{
	/* Homes in a table of 16: a run that starts at 14 and wraps past 0,
	 * with entries whose homes lie inside the run, so that deletion must
	 * shift some entries back across the wrap and leave others. */
	static const uint64_t homes[RUN] = { 15, 15, 0, 14, 1, 15, 0 };
	uint64_t keys[RUN];
	int perm[RUN];
	unsigned orders = 0;

	(void)state;
	for (int i = 0; i < RUN; i++) {
		keys[i] = key_with_home(homes[i], 4);
		perm[i] = i;
	}
	do {
		for (int insert_by_perm = 0; insert_by_perm < 2; insert_by_perm++) {
			struct nx_map m = { 0 };
			bool present[RUN] = { false };

			for (int i = 0; i < RUN; i++) {
				int k = insert_by_perm ? perm[i] : i;
				assert_int_equal(nx_map_put(&m, keys[k], V(k)), 0);
				present[k] = true;
			}
			assert_int_equal(m.cap, 16);
			check_present(&m, keys, present, RUN);
			for (int i = 0; i < RUN; i++) {
				int k = insert_by_perm ? RUN - 1 - i : perm[i];
				assert_ptr_equal(nx_map_del(&m, keys[k]), V(k));
				present[k] = false;
				check_present(&m, keys, present, RUN);
			}
			nx_map_free(&m);
		}
		orders++;
	} while (next_perm(perm, RUN));
	assert_int_equal(orders, 5040);
}

/* ---- random operations against a naive model ---- */

#define POOL 400

struct model {
	uint64_t key[POOL];
	void *val[POOL]; /* NULL: absent */
	size_t len;
};

static void check_model(const struct nx_map *m, const struct model *md)
{
	unsigned char seen[POOL] = { 0 };
	size_t pos = 0, visits = 0, last = 0;
	uint64_t k;
	void *v;

	assert_int_equal(m->len, md->len);
	for (size_t i = 0; i < POOL; i++) {
		void *got = nx_map_get(m, md->key[i]);
		if (got != md->val[i])
			print_error("get(0x%016llx) = %p, expected %p\n",
				    (unsigned long long)md->key[i], got, md->val[i]);
		assert_ptr_equal(got, md->val[i]);
	}
	/* Iteration visits each entry once, with its value, and nothing else. */
	while (nx_map_next(m, &pos, &k, &v)) {
		size_t i;
		assert_true(pos > last); /* it moves forward */
		last = pos;
		for (i = 0; i < POOL && md->key[i] != k; i++)
			;
		if (i == POOL)
			print_error("iteration returned unknown key 0x%016llx\n", (unsigned long long)k);
		assert_true(i < POOL);
		assert_non_null(md->val[i]);
		assert_ptr_equal(v, md->val[i]);
		assert_int_equal(seen[i], 0);
		seen[i] = 1;
		visits++;
	}
	assert_int_equal(visits, md->len);
	/* Ended iteration stays ended. */
	assert_false(nx_map_next(m, &pos, &k, &v));
}

static void test_random_model(void **state)
{
	static struct model md;
	struct nx_map m = { 0 };
	size_t maxcap = 0;

	(void)state;
	memset(&md, 0, sizeof(md));
	/* Four dense clusters whose homes are the last two and the first two
	 * slots at every capacity (runs wrap around the table end), plus
	 * small integers and random keys; all distinct. */
	for (size_t i = 0; i < POOL; i++) {
		uint64_t k;
		bool dup;
		do {
			switch (i % 6) {
			case 0: k = key_with_home(0xfff, 12); break;
			case 1: k = key_with_home(0xffe, 12); break;
			case 2: k = key_with_home(0x000, 12); break;
			case 3: k = key_with_home(0x001, 12); break;
			case 4: k = i; break;
			default: k = rnd(); break;
			}
			dup = false;
			for (size_t j = 0; j < i; j++)
				dup |= md.key[j] == k;
		} while (dup);
		md.key[i] = k;
	}
	for (unsigned long op = 1; op <= 300000; op++) {
		/* Phases that grow and shrink the map. */
		unsigned put_pct = (op / 20000) % 2 ? 30 : 60;
		size_t i = rnd() % POOL;
		unsigned r = (unsigned)(rnd() % 100);

		if (r < put_pct) {
			void *v = V(op);
			assert_int_equal(nx_map_put(&m, md.key[i], v), 0);
			if (!md.val[i])
				md.len++;
			md.val[i] = v;
		} else if (r < 90) {
			void *got = nx_map_del(&m, md.key[i]);
			if (got != md.val[i])
				print_error("op %lu: del(0x%016llx) = %p, expected %p\n", op,
					    (unsigned long long)md.key[i], got, md.val[i]);
			assert_ptr_equal(got, md.val[i]);
			if (md.val[i])
				md.len--;
			md.val[i] = NULL;
		} else {
			assert_ptr_equal(nx_map_get(&m, md.key[i]), md.val[i]);
		}
		assert_int_equal(m.len, md.len);
		if (m.cap > maxcap)
			maxcap = m.cap;
		if (op % 997 == 0)
			check_model(&m, &md);
	}
	check_model(&m, &md);
	/* The load stayed at most 3/4. */
	assert_true(m.len * 4 <= m.cap * 3);
	print_message("max capacity %zu\n", maxcap);
	assert_true(maxcap >= 256); /* the run really got large */
	/* Empty it completely. */
	for (size_t i = 0; i < POOL; i++) {
		assert_ptr_equal(nx_map_del(&m, md.key[i]), md.val[i]);
		md.val[i] = NULL;
	}
	md.len = 0;
	check_model(&m, &md);
	nx_map_free(&m);
}

/* ---- replacing never allocates, so never fails ---- */

static void test_replace_never_fails(void **state)
{
	struct nx_map m = { 0 };
	uint64_t keys[13];

	(void)state;
	for (int i = 0; i < 13; i++)
		keys[i] = key_with_home(i % 2 ? 0xf : 0x0, 4);
	/* 12 entries in 16 slots: the next new key needs a larger table. */
	for (int i = 0; i < 12; i++)
		assert_int_equal(nx_map_put(&m, keys[i], V(i)), 0);
	assert_int_equal(m.cap, 16);
	assert_int_equal(m.len, 12);

	const void *slots = m.slots;
	unsigned calls = calloc_calls;

	fail_calloc = 1;
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < 12; i++) {
			errno = 0;
			int rc = nx_map_put(&m, keys[i], V(100 + round * 12 + i));
			if (rc != 0)
				print_error("replacing key #%d failed: errno %d\n", i, errno);
			assert_int_equal(rc, 0);
			assert_ptr_equal(nx_map_get(&m, keys[i]), V(100 + round * 12 + i));
		}
	assert_int_equal(calloc_calls, calls); /* not even tried */
	assert_ptr_equal(m.slots, slots);
	assert_int_equal(m.cap, 16);
	assert_int_equal(m.len, 12);

	/* A new key does need memory: ENOMEM, and the map is unchanged. */
	errno = 0;
	assert_int_equal(nx_map_put(&m, keys[12], V(12)), -1);
	assert_int_equal(errno, ENOMEM);
	assert_int_equal(m.len, 12);
	assert_int_equal(m.cap, 16);
	assert_null(nx_map_get(&m, keys[12]));
	for (int i = 0; i < 12; i++)
		assert_ptr_equal(nx_map_get(&m, keys[i]), V(100 + 24 + i));

	/* Deleting never allocates either; a freed slot takes a new key. */
	assert_ptr_equal(nx_map_del(&m, keys[0]), V(124));
	assert_int_equal(nx_map_put(&m, keys[12], V(12)), 0);
	assert_int_equal(m.cap, 16);
	assert_ptr_equal(nx_map_get(&m, keys[12]), V(12));
	fail_calloc = 0;

	assert_int_equal(nx_map_put(&m, keys[0], V(0)), 0);
	assert_int_equal(m.cap, 32);
	for (int i = 1; i < 12; i++)
		assert_ptr_equal(nx_map_get(&m, keys[i]), V(124 + i));
	assert_ptr_equal(nx_map_get(&m, keys[0]), V(0));
	assert_ptr_equal(nx_map_get(&m, keys[12]), V(12));
	nx_map_free(&m);
}

static void test_iteration_without_key(void **state)
{
	struct nx_map m = { 0 };
	size_t pos = 0, n = 0;
	uintptr_t sum = 0, want = 0;
	void *v;

	(void)state;
	for (uint64_t i = 1; i <= 100; i++) {
		assert_int_equal(nx_map_put(&m, i * 1000003, V(i)), 0);
		want += (uintptr_t)V(i);
	}
	while (nx_map_next(&m, &pos, NULL, &v)) {
		sum += (uintptr_t)v;
		n++;
	}
	assert_int_equal(n, 100);
	assert_int_equal(sum, want);
	nx_map_free(&m);
}

static void test_hash(void **state)
{
	const char s[] = "abcdefgh";

	(void)state;
	/* Only len bytes count; order and seed matter. */
	assert_int_equal(nx_hash(s, 3, 1), nx_hash("abcX", 3, 1));
	assert_int_not_equal(nx_hash(s, 3, 1), nx_hash(s, 4, 1));
	assert_int_not_equal(nx_hash("ab", 2, 1), nx_hash("ba", 2, 1));
	assert_int_not_equal(nx_hash(s, 3, 1), nx_hash(s, 3, 2));
	assert_int_equal(nx_hash(s, 8, 7), nx_hash(s, 8, 7));
}

/* ---- the index: objects that begin with their int32_t key ---- */

struct obj {
	int32_t key;
	int id;
};

/* A key (not in used[0..n)) whose home is `home` in a table of 2^bits
 * slots and whose tag (the top 3 bits of the mix) is tag, found by trying:
 * entries that the tags cannot tell apart, so that the keys are compared. */
static int32_t int_key_with_home(size_t home, unsigned bits, unsigned tag, const int32_t *used,
				 size_t n)
{
	for (;;) {
		int32_t k = (int32_t)(uint32_t)rnd();
		uint64_t h = mix((uint64_t)(uint32_t)k);
		bool dup = false;

		for (size_t i = 0; i < n; i++)
			dup |= used[i] == k;
		if (!dup && (h & ((1u << bits) - 1)) == home && h >> 61 == tag)
			return k;
	}
}

static void test_index_model(void **state)
{
	static struct obj objs[POOL];
	static int32_t keys[POOL];
	static bool in[POOL];
	struct nx_index x = { 0 };
	size_t len = 0, maxcap = 0;

	(void)state;
	memset(in, 0, sizeof(in));
	/* A cluster whose home is the last slot at every capacity up to 2^12,
	 * one tag for all (runs wrap, keys compared), small integers (what
	 * the kernel's wds are), negative ones, random ones; all distinct. */
	for (size_t i = 0; i < POOL; i++) {
		switch (i % 4) {
		case 0: keys[i] = int_key_with_home(0xfff, 12, 5, keys, i); break;
		case 1: keys[i] = (int32_t)i; break;
		case 2: keys[i] = -(int32_t)i - 1; break;
		default: keys[i] = int_key_with_home(rnd() & 0xfff, 12, rnd() & 7, keys, i); break;
		}
		objs[i] = (struct obj){ keys[i], (int)i };
	}
	for (unsigned long op = 1; op <= 200000; op++) {
		unsigned put_pct = (op / 20000) % 2 ? 30 : 60;
		size_t i = rnd() % POOL;
		unsigned r = (unsigned)(rnd() % 100);

		if (r < put_pct && !in[i]) {
			assert_int_equal(nx_index_add(&x, &objs[i]), 0);
			in[i] = true;
			len++;
		} else if (r >= put_pct && r < 90) {
			assert_ptr_equal(nx_index_del(&x, keys[i]), in[i] ? &objs[i] : NULL);
			len -= in[i];
			in[i] = false;
		} else {
			assert_ptr_equal(nx_index_get(&x, keys[i]), in[i] ? &objs[i] : NULL);
		}
		assert_int_equal(x.t.len, len);
		assert_true(x.t.len * 5 <= x.t.cap * 4); /* at most 80% full */
		if (x.t.cap > maxcap)
			maxcap = x.t.cap;
		if (op % 997 == 0) {
			size_t pos = 0, visits = 0;
			void *o;

			for (size_t j = 0; j < POOL; j++)
				assert_ptr_equal(nx_index_get(&x, keys[j]), in[j] ? &objs[j] : NULL);
			while (nx_index_next(&x, &pos, &o)) {
				assert_true(in[((struct obj *)o)->id]);
				visits++;
			}
			assert_int_equal(visits, len);
		}
	}
	assert_true(maxcap >= 256);
	for (size_t i = 0; i < POOL; i++)
		assert_ptr_equal(nx_index_del(&x, keys[i]), in[i] ? &objs[i] : NULL);
	assert_int_equal(x.t.len, 0);
	nx_index_free(&x);
	assert_null(x.t.slots);
	assert_null(nx_index_get(&x, 1));
	assert_null(nx_index_del(&x, 1));
}

/* A table that cannot grow: ENOMEM, the index unchanged. */
static void test_index_no_memory(void **state)
{
	static struct obj objs[52];
	struct nx_index x = { 0 };

	(void)state;
	for (int i = 0; i < 52; i++) {
		objs[i] = (struct obj){ i + 1, i };
		if (i < 51)
			assert_int_equal(nx_index_add(&x, &objs[i]), 0);
	}
	assert_int_equal(x.t.cap, 64); /* 51 of 64: the next needs a larger table */
	fail_calloc = 1;
	errno = 0;
	assert_int_equal(nx_index_add(&x, &objs[51]), -1);
	assert_int_equal(errno, ENOMEM);
	fail_calloc = 0;
	assert_int_equal(x.t.len, 51);
	assert_null(nx_index_get(&x, 52));
	for (int i = 0; i < 51; i++)
		assert_ptr_equal(nx_index_get(&x, i + 1), &objs[i]);
	assert_int_equal(nx_index_add(&x, &objs[51]), 0);
	assert_int_equal(x.t.cap, 128);
	for (int i = 0; i < 52; i++)
		assert_ptr_equal(nx_index_get(&x, i + 1), &objs[i]);
	nx_index_free(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sanity),
		cmocka_unit_test(test_collisions_are_real),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_basic),
		cmocka_unit_test(test_delete_orders),
		cmocka_unit_test(test_random_model),
		cmocka_unit_test(test_replace_never_fails),
		cmocka_unit_test(test_iteration_without_key),
		cmocka_unit_test(test_hash),
		cmocka_unit_test(test_index_model),
		cmocka_unit_test(test_index_no_memory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
