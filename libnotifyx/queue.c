/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The library-side event queue.  Records are encoded once, when they are
 * queued, in the format notifyx_read hands out, so reading is a copy.  They
 * live in chunks taken as events arrive, never reserved up front. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nx.h"

#define CHUNK_BYTES (64 * 1024) /* holds at least 7 records of NOTIFYX_EVENT_MAX */

struct nx_chunk {
	struct nx_chunk *next;
	size_t head, tail; /* byte offsets of the first record and of the free space */
	bool exempt;       /* records here do not count against queue_max */
	_Alignas(8) char data[CHUNK_BYTES];
};

size_t nx_event_size(size_t path_len, size_t old_len)
{
	size_t n = sizeof(struct notifyx_event) + path_len + 1 + (old_len ? old_len + 1 : 0);
	return (n + 7) & ~(size_t)7;
}

static struct nx_chunk *chunk_new(struct nx_queue *q)
{
	struct nx_chunk *c = q->spare;

	if (c)
		q->spare = NULL;
	else if (!(c = malloc(sizeof(*c))))
		return NULL;
	c->next = NULL;
	c->head = c->tail = 0;
	c->exempt = false;
	return c;
}

struct notifyx_event *nx_queue_push(struct nx_queue *q, int32_t wd, uint32_t mask, uint32_t flags,
				    uint32_t cookie, int32_t error, const char *path,
				    size_t path_len, const char *old, size_t old_len)
{
	size_t size = nx_event_size(path_len, old_len);
	struct nx_chunk *c = q->tail;
	struct notifyx_event *ev;

	if (size > NOTIFYX_EVENT_MAX) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	if (!c || c->exempt || CHUNK_BYTES - c->tail < size) {
		if (!(c = chunk_new(q))) {
			errno = ENOMEM;
			return NULL;
		}
		if (q->tail)
			q->tail->next = c;
		else
			q->head = c;
		q->tail = c;
	}
	ev = (struct notifyx_event *)(void *)(c->data + c->tail);
	ev->size = (uint32_t)size;
	ev->wd = wd;
	ev->mask = mask;
	ev->flags = flags;
	ev->cookie = cookie;
	ev->error = error;
	ev->path_len = (uint32_t)path_len;
	ev->old_path_len = (uint32_t)old_len;
	/* The padding after the names (at most 7 bytes) is zero: the last 8
	 * bytes are cleared, then the names written over their start. */
	memset((char *)ev + size - 8, 0, 8);
	if (path_len)
		memcpy(ev->names, path, path_len);
	ev->names[path_len] = '\0';
	char *end = ev->names + path_len + 1;
	if (old_len) {
		memcpy(end, old, old_len);
		end[old_len] = '\0';
	}
	c->tail += size;
	q->count++;
	return ev;
}

const struct notifyx_event *nx_queue_peek(const struct nx_queue *q)
{
	if (!q->head)
		return NULL;
	return (const struct notifyx_event *)(const void *)(q->head->data + q->head->head);
}

static void chunk_release(struct nx_queue *q, struct nx_chunk *c)
{
	if (!q->spare)
		q->spare = c;
	else
		free(c);
}

void nx_queue_pop(struct nx_queue *q)
{
	struct nx_chunk *c = q->head;
	const struct notifyx_event *ev = nx_queue_peek(q);

	if (!ev)
		return;
	c->head += ev->size;
	q->count--;
	if (c->exempt)
		q->exempt--;
	if (c->head == c->tail) {
		q->head = c->next;
		if (!q->head)
			q->tail = NULL;
		chunk_release(q, c);
	}
}

void nx_queue_splice(struct nx_queue *dst, struct nx_queue *src, bool exempt)
{
	if (!src->head)
		return;
	if (exempt) {
		for (struct nx_chunk *c = src->head; c; c = c->next)
			c->exempt = true;
		dst->exempt += src->count;
	} else {
		dst->exempt += src->exempt;
	}
	if (dst->tail)
		dst->tail->next = src->head;
	else
		dst->head = src->head;
	dst->tail = src->tail;
	dst->count += src->count;
	src->head = src->tail = NULL;
	src->count = src->exempt = 0;
}

void nx_queue_clear(struct nx_queue *q)
{
	struct nx_chunk *c = q->head, *next;

	for (; c; c = next) {
		next = c->next;
		free(c);
	}
	free(q->spare);
	memset(q, 0, sizeof(*q));
}
