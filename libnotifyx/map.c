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
static size_t slot_of(uint64_t key, size_t cap)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return (size_t)key & (cap - 1);
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
		size_t home = slot_of(m->slots[j].key, m->cap);
		/* Move j to i if home is not cyclically in (i, j]. */
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
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
