/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The path table of recursive watches: a tree of directory nodes, each with
 * its parent and its own name only.  See nx.h. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nx.h"

static uint64_t child_key(const struct nx_node *parent, const char *name, size_t len)
{
	return nx_hash(name, len, (uint64_t)(uintptr_t)parent * 0x9e3779b97f4a7c15ULL);
}

/* A slot holds a node pointer; nodes come from malloc, aligned to at least
 * 8 bytes, so the 3 low bits carry a tag from the hash: most slots of a
 * probe run are passed over without reading their node. */
#define TAG_MASK ((uintptr_t)7)

static size_t home_of(uint64_t key, size_t cap)
{
	return (size_t)(key >> 3) & (cap - 1);
}

static uintptr_t tag_of(uint64_t key)
{
	return (uintptr_t)key & TAG_MASK;
}

static struct nx_node *slot_node(uintptr_t s)
{
	return (struct nx_node *)(s & ~TAG_MASK);
}

static uint64_t node_key(const struct nx_node *n)
{
	return child_key(n->parent, n->name, n->name_len);
}

static char root_name[] = "";

struct nx_node *nx_node_new_root(struct nx_watch *w)
{
	struct nx_node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->name = root_name;
	n->watch = w;
	return n;
}

struct nx_node *nx_node_find(const struct nx_paths *t, const struct nx_node *parent,
			     const char *name, size_t len)
{
	uint64_t key = child_key(parent, name, len);
	size_t mask = t->cap - 1;

	if (!t->cap)
		return NULL;
	for (size_t i = home_of(key, t->cap); t->slots[i]; i = (i + 1) & mask) {
		struct nx_node *n = slot_node(t->slots[i]);

		if ((t->slots[i] & TAG_MASK) == tag_of(key) && n->parent == parent &&
		    n->name_len == len && !memcmp(n->name, name, len))
			return n;
	}
	return NULL;
}

static void place(uintptr_t *slots, size_t cap, uint64_t key, struct nx_node *n)
{
	size_t i = home_of(key, cap);

	while (slots[i])
		i = (i + 1) & (cap - 1);
	slots[i] = (uintptr_t)n | tag_of(key);
}

/* Grows the table at 80% full: linear probing stays short, and 8-byte slots
 * at 40-80% cost 10-20 bytes per directory. */
static int hash_in(struct nx_paths *t, struct nx_node *n)
{
	if ((t->len + 1) * 5 > t->cap * 4) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		uintptr_t *slots = calloc(cap, sizeof(*slots));

		if (!slots)
			return -1;
		for (size_t j = 0; j < t->cap; j++)
			if (t->slots[j])
				place(slots, cap, node_key(slot_node(t->slots[j])),
				      slot_node(t->slots[j]));
		free(t->slots);
		t->slots = slots;
		t->cap = cap;
	}
	place(t->slots, t->cap, node_key(n), n);
	t->len++;
	return 0;
}

static void hash_out(struct nx_paths *t, struct nx_node *n)
{
	size_t mask = t->cap - 1, i;

	if (!t->cap)
		return;
	for (i = home_of(node_key(n), t->cap); t->slots[i]; i = (i + 1) & mask)
		if (slot_node(t->slots[i]) == n)
			break;
	if (!t->slots[i])
		return; /* not in the table (a failed insertion) */
	/* Backward-shift deletion: the entries of the same probe run that
	 * follow move up, so there are no tombstones. */
	for (size_t j = (i + 1) & mask; t->slots[j]; j = (j + 1) & mask) {
		size_t home = home_of(node_key(slot_node(t->slots[j])), t->cap);

		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			t->slots[i] = t->slots[j];
			i = j;
		}
	}
	t->slots[i] = 0;
	t->len--;
}

static void link_child(struct nx_node *parent, struct nx_node *n)
{
	n->parent = parent;
	n->prev = NULL;
	n->next = parent->child;
	if (parent->child)
		parent->child->prev = n;
	parent->child = n;
}

static void unlink_child(struct nx_node *n)
{
	if (n->prev)
		n->prev->next = n->next;
	else
		n->parent->child = n->next;
	if (n->next)
		n->next->prev = n->prev;
	n->next = n->prev = NULL;
}

struct nx_node *nx_node_add(struct nx_paths *t, struct nx_node *parent, const char *name, size_t len)
{
	/* The name lives in the same allocation: one malloc less per directory
	 * of a large tree, and 30-odd bytes less each (issue 6's memory target). */
	struct nx_node *n = calloc(1, sizeof(*n) + len + 1);

	if (!n) {
		errno = ENOMEM;
		return NULL;
	}
	n->name = (char *)(n + 1);
	n->name_cap = (uint8_t)(len < UINT8_MAX ? len : UINT8_MAX);
	memcpy(n->name, name, len);
	n->name[len] = '\0';
	n->name_len = (uint32_t)len;
	n->watch = parent->watch;
	n->parent = parent;
	if (hash_in(t, n) < 0) {
		free(n);
		errno = ENOMEM;
		return NULL;
	}
	link_child(parent, n);
	return n;
}

int nx_node_rename(struct nx_paths *t, struct nx_node *n, struct nx_node *new_parent,
		   const char *name, size_t len)
{
	/* A name that fits the node's own storage goes there; else its own. */
	char *copy = n->name_cap && len <= n->name_cap ? (char *)(n + 1) : malloc(len + 1);

	if (!copy) {
		errno = ENOMEM;
		return -1;
	}
	hash_out(t, n);
	memmove(copy, name, len);
	copy[len] = '\0';
	unlink_child(n);
	if (n->name != copy && n->name != (char *)(n + 1))
		free(n->name);
	n->name = copy;
	n->name_len = (uint32_t)len;
	link_child(new_parent, n);
	if (hash_in(t, n) < 0) {
		/* Only a growing table can fail; the node then stays reachable
		 * by walking, but not by name: report it. */
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

void nx_node_unlink(struct nx_paths *t, struct nx_node *n)
{
	if (!n->parent)
		return;
	hash_out(t, n);
	unlink_child(n);
	n->parent = NULL;
}

void nx_node_foreach(struct nx_node *n, void (*fn)(void *ctx, struct nx_node *n), void *ctx)
{
	/* Iterative pre-order walk, within n's subtree. */
	struct nx_node *cur = n;

	while (cur) {
		fn(ctx, cur);
		if (cur->child) {
			cur = cur->child;
			continue;
		}
		while (cur != n && !cur->next)
			cur = cur->parent;
		cur = cur == n ? NULL : cur->next;
	}
}

void nx_node_free_tree(struct nx_paths *t, struct nx_node *n,
		       void (*drop)(void *ctx, struct nx_node *n), void *ctx)
{
	/* Iterative post-order walk: trees can be deeper than the stack. */
	struct nx_node *top = n, *cur = n;

	nx_node_unlink(t, n);
	while (cur) {
		if (cur->child) {
			cur = cur->child;
			continue;
		}
		struct nx_node *up = cur == top ? NULL : cur->parent;
		if (drop)
			drop(ctx, cur);
		if (up) {
			hash_out(t, cur);
			unlink_child(cur);
		}
		if (cur->name != root_name && cur->name != (char *)(cur + 1))
			free(cur->name);
		free(cur);
		cur = up;
	}
}

size_t nx_node_path(const struct nx_node *n, char *buf, size_t size)
{
	size_t len = 0;
	const struct nx_node *p;

	for (p = n; p->parent; p = p->parent)
		len += p->name_len + (p->parent->parent ? 1 : 0);
	if (len >= size)
		return SIZE_MAX;
	buf[len] = '\0';
	size_t end = len;
	for (p = n; p->parent; p = p->parent) {
		end -= p->name_len;
		memcpy(buf + end, p->name, p->name_len);
		if (p->parent->parent)
			buf[--end] = '/';
	}
	return len;
}

size_t nx_join(char *buf, size_t size, const char *dir, size_t dir_len, const char *name, size_t len)
{
	size_t total = dir_len ? dir_len + 1 + len : len;

	if (total >= size)
		return SIZE_MAX;
	if (dir != buf)
		memmove(buf, dir, dir_len);
	if (dir_len)
		buf[dir_len++] = '/';
	memcpy(buf + dir_len, name, len);
	buf[total] = '\0';
	return total;
}

void nx_paths_free(struct nx_paths *t)
{
	free(t->slots);
	memset(t, 0, sizeof(*t));
}
