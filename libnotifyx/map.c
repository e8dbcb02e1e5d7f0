/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A small hash map from 64-bit keys to pointers: open addressing with linear
 * probing and backward-shift deletion, so there are no tombstones. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nx.h"

struct nx_map_slot {
	uint64_t key;
	void *val; /* NULL: empty slot */
};

/* Mixes the key so that pointers and small integers spread over the table. */
static uint64_t mix(uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return key;
}

static size_t slot_of(uint64_t key, size_t cap)
{
	return (size_t)mix(key) & (cap - 1);
}

/* Backward-shift deletion: slot i was emptied; may the entry at j (of the
 * same probe run), whose home is home, move up to i?  Yes unless home is
 * cyclically in (i, j]. */
static bool shifts_back(size_t home, size_t i, size_t j)
{
	return (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j);
}

uint64_t nx_hash(const void *data, size_t len, uint64_t seed)
{
	/* FNV-1a, 64 bit: short keys (names) and no alignment needs. */
	const unsigned char *p = data;
	uint64_t h = 0xcbf29ce484222325ULL ^ seed;

	while (len--) {
		h ^= *p++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

void *nx_map_get(const struct nx_map *m, uint64_t key)
{
	if (!m->cap)
		return NULL;
	for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (!m->slots[i].val)
			return NULL;
		if (m->slots[i].key == key)
			return m->slots[i].val;
	}
}

static int grow(struct nx_map *m)
{
	size_t cap = m->cap ? m->cap * 2 : 16;
	struct nx_map_slot *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -1;
	for (size_t j = 0; j < m->cap; j++) {
		if (!m->slots[j].val)
			continue;
		size_t i = slot_of(m->slots[j].key, cap);
		while (slots[i].val)
			i = (i + 1) & (cap - 1);
		slots[i] = m->slots[j];
	}
	free(m->slots);
	m->slots = slots;
	m->cap = cap;
	return 0;
}

int nx_map_put(struct nx_map *m, uint64_t key, void *val)
{
	/* Replacing never allocates. */
	for (size_t i = m->cap ? slot_of(key, m->cap) : 0; m->cap && m->slots[i].val;
	     i = (i + 1) & (m->cap - 1)) {
		if (m->slots[i].key == key) {
			m->slots[i].val = val;
			return 0;
		}
	}
	if ((m->len + 1) * 4 > m->cap * 3 && grow(m) < 0) {
		errno = ENOMEM;
		return -1;
	}
	size_t i = slot_of(key, m->cap);
	while (m->slots[i].val && m->slots[i].key != key)
		i = (i + 1) & (m->cap - 1);
	if (!m->slots[i].val)
		m->len++;
	m->slots[i].key = key;
	m->slots[i].val = val;
	return 0;
}

void *nx_map_del(struct nx_map *m, uint64_t key)
{
	size_t mask = m->cap - 1, i;
	void *old;

	if (!m->cap)
		return NULL;
	for (i = slot_of(key, m->cap);; i = (i + 1) & mask) {
		if (!m->slots[i].val)
			return NULL;
		if (m->slots[i].key == key)
			break;
	}
	old = m->slots[i].val;
	/* Shift back the entries of the same probe run that follow. */
	for (size_t j = (i + 1) & mask; m->slots[j].val; j = (j + 1) & mask) {
		if (shifts_back(slot_of(m->slots[j].key, m->cap), i, j)) {
			m->slots[i] = m->slots[j];
			i = j;
		}
	}
	m->slots[i].val = NULL;
	m->len--;
	return old;
}

bool nx_map_next(const struct nx_map *m, size_t *pos, uint64_t *key, void **val)
{
	for (; *pos < m->cap; (*pos)++) {
		if (m->slots[*pos].val) {
			if (key)
				*key = m->slots[*pos].key;
			*val = m->slots[*pos].val;
			(*pos)++;
			return true;
		}
	}
	return false;
}

void nx_map_free(struct nx_map *m)
{
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

/* ---- pointer tables ---- */

static void ptab_place(uintptr_t *slots, size_t cap, void *obj, uint64_t h)
{
	size_t i = (size_t)(h >> 3) & (cap - 1);

	while (slots[i])
		i = (i + 1) & (cap - 1);
	slots[i] = (uintptr_t)obj | (uintptr_t)(h & 7);
}

static void *slot_obj(uintptr_t s)
{
	return (void *)(s & ~(uintptr_t)7);
}

/* Grows at 80% full: linear probing stays short, and 8-byte slots at 40-80%
 * cost 10-20 bytes per object. */
int nx_ptab_add(struct nx_ptab *t, void *obj, uint64_t (*hash)(const void *obj))
{
	if ((t->len + 1) * 5 > t->cap * 4) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		uintptr_t *slots = calloc(cap, sizeof(*slots));

		if (!slots) {
			errno = ENOMEM;
			return -1;
		}
		for (size_t j = 0; j < t->cap; j++)
			if (t->slots[j])
				ptab_place(slots, cap, slot_obj(t->slots[j]), hash(slot_obj(t->slots[j])));
		free(t->slots);
		t->slots = slots;
		t->cap = cap;
	}
	ptab_place(t->slots, t->cap, obj, hash(obj));
	t->len++;
	return 0;
}

void nx_ptab_remove(struct nx_ptab *t, size_t i, uint64_t (*hash)(const void *obj))
{
	size_t mask = t->cap - 1;

	/* The entries of the same probe run that follow move up: no tombstones. */
	for (size_t j = (i + 1) & mask; t->slots[j]; j = (j + 1) & mask) {
		if (shifts_back(nx_ptab_home(t, hash(slot_obj(t->slots[j]))), i, j)) {
			t->slots[i] = t->slots[j];
			i = j;
		}
	}
	t->slots[i] = 0;
	t->len--;
}

bool nx_ptab_next(const struct nx_ptab *t, size_t *pos, void **obj)
{
	for (; *pos < t->cap; (*pos)++) {
		if (t->slots[*pos]) {
			*obj = slot_obj(t->slots[(*pos)++]);
			return true;
		}
	}
	return false;
}

void nx_ptab_free(struct nx_ptab *t)
{
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

/* ---- index: objects that begin with their int32_t key ---- */

static uint64_t key_hash(int32_t key)
{
	return mix((uint64_t)(uint32_t)key);
}

static uint64_t obj_hash(const void *obj)
{
	return key_hash(*(const int32_t *)obj);
}

/* The slot of key in x, or x->t.cap when it is not there. */
static size_t index_slot(const struct nx_index *x, int32_t key)
{
	uint64_t h = key_hash(key);
	const int32_t *o;

	if (!x->t.cap)
		return 0;
	for (size_t i = nx_ptab_home(&x->t, h); x->t.slots[i]; i = (i + 1) & (x->t.cap - 1))
		if ((o = nx_ptab_tagged(x->t.slots[i], h)) && *o == key)
			return i;
	return x->t.cap;
}

void *nx_index_get(const struct nx_index *x, int32_t key)
{
	size_t i = index_slot(x, key);

	return i < x->t.cap ? slot_obj(x->t.slots[i]) : NULL;
}

int nx_index_add(struct nx_index *x, void *obj)
{
	return nx_ptab_add(&x->t, obj, obj_hash);
}

void *nx_index_del(struct nx_index *x, int32_t key)
{
	size_t i = index_slot(x, key);
	void *old;

	if (i >= x->t.cap)
		return NULL;
	old = slot_obj(x->t.slots[i]);
	nx_ptab_remove(&x->t, i, obj_hash);
	return old;
}

bool nx_index_next(const struct nx_index *x, size_t *pos, void **obj)
{
	return nx_ptab_next(&x->t, pos, obj);
}

void nx_index_free(struct nx_index *x)
{
	nx_ptab_free(&x->t);
}
