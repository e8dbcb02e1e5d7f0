/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The path table of recursive watches: a tree of directory nodes, each with
 * its parent and its own name only.  See nx.h. */
#include "config.h"

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "nx.h"

static uint64_t child_key(const struct nx_node *parent, const char *name, size_t len)
{
	return nx_hash(name, len, (uint64_t)(uintptr_t)parent * 0x9e3779b97f4a7c15ULL);
}

const char *nx_node_name(const struct nx_node *n)
{
	const char *heap;

	if (!n->long_name)
		return n->name_;
	memcpy(&heap, n->name_, sizeof(heap)); /* name_ is not aligned */
	return heap;
}

size_t nx_node_name_len(const struct nx_node *n)
{
	return strlen(nx_node_name(n));
}

static uint64_t node_key(const void *n)
{
	return child_key(((const struct nx_node *)n)->parent, nx_node_name(n), nx_node_name_len(n));
}

/* A node with room for a name of len bytes inline, and at least for the
 * pointer of a name that outgrows it later. */
static struct nx_node *node_alloc(size_t len)
{
	size_t room = len + 1 > sizeof(char *) ? len + 1 : sizeof(char *);

	return calloc(1, offsetof(struct nx_node, name_) + room);
}

/* The bytes of name_: what the allocation has (malloc rounds up) after the
 * fields.  Only nodes come here, allocated by node_alloc. */
static size_t name_room(const struct nx_node *n)
{
	return malloc_usable_size((void *)n) - offsetof(struct nx_node, name_);
}

struct nx_node *nx_node_new_root(struct nx_watch *w)
{
	struct nx_node *n = node_alloc(0);

	if (!n)
		return NULL;
	n->top_watch = w;
	return n;
}

struct nx_node *nx_node_find(const struct nx_paths *t, const struct nx_node *parent,
			     const char *name, size_t len)
{
	uint64_t key = child_key(parent, name, len);
	size_t mask = t->t.cap - 1;
	struct nx_node *n;

	if (!t->t.cap)
		return NULL;
	for (size_t i = nx_ptab_home(&t->t, key); t->t.slots[i]; i = (i + 1) & mask)
		if ((n = nx_ptab_tagged(t->t.slots[i], key)) && n->parent == parent &&
		    nx_node_name_len(n) == len && !memcmp(nx_node_name(n), name, len))
			return n;
	return NULL;
}

static int hash_in(struct nx_paths *t, struct nx_node *n)
{
	return nx_ptab_add(&t->t, n, node_key);
}

static void hash_out(struct nx_paths *t, struct nx_node *n)
{
	size_t mask = t->t.cap - 1, i;

	if (!t->t.cap)
		return;
	for (i = nx_ptab_home(&t->t, node_key(n)); t->t.slots[i]; i = (i + 1) & mask)
		if ((t->t.slots[i] & ~(uintptr_t)7) == (uintptr_t)n)
			break;
	if (!t->t.slots[i])
		return; /* not in the table (a failed insertion) */
	nx_ptab_remove(&t->t, i, node_key);
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
	struct nx_node *n = node_alloc(len);

	if (!n) {
		errno = ENOMEM;
		return NULL;
	}
	memcpy(n->name_, name, len);
	n->name_[len] = '\0';
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
	/* A name that fits the node's own room goes there; else its own
	 * allocation, whose pointer the room holds. */
	bool inline_ = len < name_room(n);
	char *heap = inline_ ? NULL : malloc(len + 1);
	char *old = n->long_name ? (char *)nx_node_name(n) : NULL;

	if (!inline_ && !heap) {
		errno = ENOMEM;
		return -1;
	}
	hash_out(t, n);
	memmove(inline_ ? n->name_ : heap, name, len); /* name may be n's own */
	if (inline_) {
		n->name_[len] = '\0';
	} else {
		heap[len] = '\0';
		memcpy(n->name_, &heap, sizeof(heap));
	}
	n->long_name = !inline_;
	free(old);
	unlink_child(n);
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
	struct nx_watch *w = nx_node_watch(n);

	if (!n->parent)
		return;
	hash_out(t, n);
	unlink_child(n);
	n->parent = NULL;
	n->top_watch = w; /* its subtree stays of the watch */
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
		if (cur->long_name)
			free((char *)nx_node_name(cur));
		free(cur);
		cur = up;
	}
}

size_t nx_node_path(const struct nx_node *n, char *buf, size_t size)
{
	size_t len = 0;
	const struct nx_node *p;

	for (p = n; p->parent; p = p->parent)
		len += nx_node_name_len(p) + (p->parent->parent ? 1 : 0);
	if (len >= size)
		return SIZE_MAX;
	buf[len] = '\0';
	size_t end = len;
	for (p = n; p->parent; p = p->parent) {
		const char *name = nx_node_name(p);
		size_t nlen = strlen(name);

		end -= nlen;
		memcpy(buf + end, name, nlen);
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
	nx_ptab_free(&t->t);
}

/* ---- the nodes of one kernel object ---- */

int nx_subs_add(nx_subs *s, struct nx_node *n)
{
	struct nx_subs_array *a = nx_subs_array(*s);

	if (!*s) {
		*s = (uintptr_t)n;
		return 0;
	}
	if (!a || a->n == a->cap) {
		size_t cap = a ? a->cap * 2 : 4;
		struct nx_subs_array *b = realloc(a, sizeof(*b) + cap * sizeof(b->v[0]));

		if (!b) {
			errno = ENOMEM;
			return -1;
		}
		if (!a) {
			b->n = 1;
			b->v[0] = (struct nx_node *)*s;
		}
		b->cap = cap;
		*s = (uintptr_t)b | 1;
		a = b;
	}
	memmove(a->v + 1, a->v, a->n * sizeof(a->v[0]));
	a->v[0] = n;
	a->n++;
	return 0;
}

void nx_subs_del(nx_subs *s, const struct nx_node *n)
{
	struct nx_subs_array *a = nx_subs_array(*s);
	size_t i;

	if (!a) {
		if (*s == (uintptr_t)n)
			*s = 0;
		return;
	}
	for (i = 0; i < a->n && a->v[i] != n; i++)
		;
	if (i == a->n)
		return;
	memmove(a->v + i, a->v + i + 1, (a->n - i - 1) * sizeof(a->v[0]));
	if (--a->n == 1) {
		*s = (uintptr_t)a->v[0];
		free(a);
	}
}

void nx_subs_free(nx_subs *s)
{
	free(nx_subs_array(*s));
	*s = 0;
}
