/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The changes of a burst, for the command of notifyx run: which paths
 * changed, each once in the order of its first event, with the events each
 * had.  run.c passes them in the environment (NOTIFYX_PATHS, NOTIFYX_EVENTS,
 * NOTIFYX_DROPPED) and for the argument "/_".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <notifyx.h>

#include "format.h"
#include "tool.h"

/* Paths kept per burst; later ones are counted in NOTIFYX_DROPPED. */
#define CHANGES_MAX 10000
/* Bytes of one variable's value: the kernel takes at most 128 KiB per
 * string of the environment (MAX_ARG_STRLEN); the lines that do not fit are
 * left out of both variables and counted in NOTIFYX_DROPPED. */
#define CHANGES_ENV_MAX 65536

static uint32_t hash(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* The slot of path in the table: its index + 1, or 0 where it would go. */
static size_t *slot(struct changes *c, const char *path)
{
	size_t i = hash(path) & (c->tsize - 1);

	while (c->table[i] && strcmp(c->v[c->table[i] - 1].path, path) != 0)
		i = (i + 1) & (c->tsize - 1);
	return &c->table[i];
}

static int grow(struct changes *c)
{
	size_t i, size = c->tsize ? 2 * c->tsize : 64;
	struct change *v = realloc(c->v, size / 2 * sizeof(*v));
	size_t *old = c->table;

	if (!v)
		return -1;
	c->v = v;
	c->table = calloc(size, sizeof(*c->table));
	if (!c->table) {
		c->table = old;
		return -1;
	}
	free(old);
	c->tsize = size;
	for (i = 0; i < c->n; i++)
		*slot(c, c->v[i].path) = i + 1;
	return 0;
}

int changes_add(struct changes *c, const char *path, uint32_t mask)
{
	size_t *s;

	if (c->n >= CHANGES_MAX || (c->n + 1 > c->tsize / 2 && grow(c) < 0)) {
		if (!c->tsize || !*slot(c, path))
			c->dropped++;
		else
			c->v[*slot(c, path) - 1].mask |= mask;
		return 0;
	}
	s = slot(c, path);
	if (*s) {
		c->v[*s - 1].mask |= mask;
		return 0;
	}
	c->v[c->n].path = strdup(path);
	if (!c->v[c->n].path) {
		c->dropped++;
		return 0;
	}
	c->v[c->n].mask = mask;
	*s = ++c->n;
	return 0;
}

void changes_clear(struct changes *c)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		free(c->v[i].path);
	if (c->table)
		memset(c->table, 0, c->tsize * sizeof(*c->table));
	c->n = 0;
	c->dropped = 0;
}

void changes_free(struct changes *c)
{
	changes_clear(c);
	free(c->v);
	free(c->table);
	memset(c, 0, sizeof(*c));
}

/* Appends "s" to the buffer; -1 when it would pass CHANGES_ENV_MAX. */
static int put(char *buf, size_t *len, const char *s)
{
	size_t n = strlen(s);

	if (*len + n + 1 > CHANGES_ENV_MAX)
		return -1;
	memcpy(buf + *len, s, n + 1);
	*len += n;
	return 0;
}

static int put_events(char *buf, size_t *len, uint32_t mask)
{
	unsigned i;
	int first = 1;

	for (i = 0; i < 32; i++) {
		const char *name = notifyx_event_name(1u << i);

		if (!(mask & (1u << i)) || !name)
			continue;
		if ((!first && put(buf, len, ",") < 0) || put(buf, len, name) < 0)
			return -1;
		first = 0;
	}
	return 0;
}

int changes_setenv(const struct changes *c)
{
	char *paths = malloc(CHANGES_ENV_MAX), *events = malloc(CHANGES_ENV_MAX);
	size_t plen = 0, elen = 0, i, p0, e0;
	char dropped[32];
	int r = -1;

	if (!paths || !events)
		goto out;
	paths[0] = events[0] = '\0';
	for (i = 0; i < c->n; i++) {
		const char *esc = fmt_escape(c->v[i].path);

		p0 = plen;
		e0 = elen;
		if ((i > 0 && (put(paths, &plen, "\n") < 0 || put(events, &elen, "\n") < 0)) ||
		    put(paths, &plen, esc) < 0 || put_events(events, &elen, c->v[i].mask) < 0 ||
		    put(events, &elen, " ") < 0 || put(events, &elen, esc) < 0) {
			paths[p0] = events[e0] = '\0'; /* this line and those after it */
			break;
		}
	}
	snprintf(dropped, sizeof(dropped), "%lu", c->dropped + (unsigned long)(c->n - i));
	if (setenv("NOTIFYX_PATHS", paths, 1) == 0 && setenv("NOTIFYX_EVENTS", events, 1) == 0 &&
	    setenv("NOTIFYX_DROPPED", dropped, 1) == 0)
		r = 0;
out:
	free(paths);
	free(events);
	return r;
}
