/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Test helper for the snapshot/diff engine (tests/unit-snapshot.c and
 * tests/fuzz/fuzz-diff.c): a mirror model that applies events the way
 * notifyx(7)'s "Mirroring a tree" says, so a test can check that applying
 * the diff's events to the old listing gives the new one.  Header only.
 */
#ifndef NX_SNAPMODEL_H
#define NX_SNAPMODEL_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "notifyx.h"
#include "snapshot.h"

struct sm_entry {
	char *path;
	bool dir;
};

struct sm_model {
	struct sm_entry *e;
	size_t n, cap;
	bool overflow; /* an OVERFLOW came: the model is not comparable */
	char why[512]; /* the first event that could not be applied */
};

static inline void sm_put(struct sm_model *m, const char *path, bool dir)
{
	if (m->n == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 32;
		m->e = realloc(m->e, m->cap * sizeof(*m->e));
		if (!m->e)
			abort();
	}
	m->e[m->n].path = strdup(path);
	if (!m->e[m->n].path)
		abort();
	m->e[m->n++].dir = dir;
}

static inline ssize_t sm_find(const struct sm_model *m, const char *path)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->e[i].path, path))
			return (ssize_t)i;
	return -1;
}

/* True when p is below (not equal to) dir. */
static inline bool sm_below(const char *p, const char *dir)
{
	size_t l = strlen(dir);

	return !strncmp(p, dir, l) && p[l] == '/';
}

/* Removes path and everything below it. */
static inline void sm_remove(struct sm_model *m, const char *path)
{
	for (size_t i = 0; i < m->n;) {
		if (!strcmp(m->e[i].path, path) || sm_below(m->e[i].path, path)) {
			free(m->e[i].path);
			m->e[i] = m->e[--m->n];
		} else {
			i++;
		}
	}
}

/* Renames path and everything below it to to (which must be free). */
static inline void sm_move(struct sm_model *m, const char *from, const char *to, const char *mark)
{
	size_t fl = strlen(from);

	for (size_t i = 0; i < m->n; i++) {
		char *p = m->e[i].path;
		if (!strcmp(p, from) || sm_below(p, from)) {
			char *q = malloc(strlen(mark) + strlen(to) + strlen(p) + 1);
			if (!q)
				abort();
			sprintf(q, "%s%s%s", mark, to, p + fl);
			free(p);
			m->e[i].path = q;
		}
	}
}

static inline void sm_unmark(struct sm_model *m, const char *mark)
{
	size_t ml = strlen(mark);

	for (size_t i = 0; i < m->n; i++)
		if (!strncmp(m->e[i].path, mark, ml))
			memmove(m->e[i].path, m->e[i].path + ml, strlen(m->e[i].path + ml) + 1);
}

static inline void sm_fail(struct sm_model *m, const char *what, const char *path)
{
	if (!m->why[0])
		snprintf(m->why, sizeof(m->why), "%s \"%s\"", what, path);
}

static inline void sm_apply(struct sm_model *m, uint32_t mask, uint32_t flags, const char *path,
			    const char *old)
{
	bool dir = flags & NOTIFYX_EVENT_ISDIR;
	ssize_t i;

	switch (mask) {
	case NOTIFYX_CREATE:
	case NOTIFYX_MOVED_IN:
		i = sm_find(m, path);
		if (i >= 0 && m->e[i].dir == dir)
			break;
		sm_remove(m, path);
		sm_put(m, path, dir);
		break;
	case NOTIFYX_DELETE:
	case NOTIFYX_MOVED_OUT:
		if (sm_find(m, path) < 0)
			sm_fail(m, "DELETE/MOVED_OUT of a missing entry", path);
		sm_remove(m, path);
		break;
	case NOTIFYX_RENAME:
		if (flags & NOTIFYX_EVENT_EXCHANGE) {
			if (sm_find(m, path) < 0 || sm_find(m, old) < 0)
				sm_fail(m, "EXCHANGE with a missing side", path);
			sm_move(m, path, old, "\1");
			sm_move(m, old, path, "\2");
			sm_unmark(m, "\1");
			sm_unmark(m, "\2");
		} else if (sm_find(m, old) < 0) {
			sm_fail(m, "RENAME of a missing entry", old);
			sm_remove(m, path);
			sm_put(m, path, dir);
		} else {
			sm_remove(m, path);
			sm_move(m, old, path, "");
		}
		break;
	case NOTIFYX_MODIFY:
	case NOTIFYX_ATTRIB:
		if (sm_find(m, path) < 0)
			sm_fail(m, "MODIFY/ATTRIB of a missing entry", path);
		break;
	case NOTIFYX_OVERFLOW:
		m->overflow = true;
		break;
	default:
		sm_fail(m, "unexpected event type", path);
	}
}

static inline void sm_add_tree(struct sm_model *m, const struct nx_snode *n, char *buf, size_t len)
{
	for (uint32_t i = 0; i < n->nkids; i++) {
		const struct nx_snode *k = n->kids[i];
		size_t l = len + (len ? 1 : 0) + k->name_len;
		if (len)
			buf[len] = '/';
		memcpy(buf + len + (len ? 1 : 0), k->name, k->name_len);
		buf[l] = '\0';
		sm_put(m, buf, nx_snode_isdir(k));
		sm_add_tree(m, k, buf, l);
		buf[len] = '\0';
	}
}

/* The model of what tree t holds. */
static inline void sm_from_tree(struct sm_model *m, const struct nx_snode *t)
{
	char buf[8192] = "";

	memset(m, 0, sizeof(*m));
	sm_add_tree(m, t, buf, 0);
}

static inline int sm_cmp(const void *a, const void *b)
{
	return strcmp(((const struct sm_entry *)a)->path, ((const struct sm_entry *)b)->path);
}

/* NULL when equal, else a description of the first difference (static). */
static inline const char *sm_diff(struct sm_model *a, struct sm_model *b)
{
	static char msg[1024];

	if (a->n)
		qsort(a->e, a->n, sizeof(*a->e), sm_cmp);
	if (b->n)
		qsort(b->e, b->n, sizeof(*b->e), sm_cmp);
	for (size_t i = 0; i < a->n || i < b->n; i++) {
		if (i >= a->n || i >= b->n || strcmp(a->e[i].path, b->e[i].path) ||
		    a->e[i].dir != b->e[i].dir) {
			snprintf(msg, sizeof(msg), "mirror has %s%s, tree has %s%s",
				 i < a->n ? a->e[i].path : "(end)", i < a->n && a->e[i].dir ? "/" : "",
				 i < b->n ? b->e[i].path : "(end)", i < b->n && b->e[i].dir ? "/" : "");
			return msg;
		}
	}
	return NULL;
}

static inline void sm_free(struct sm_model *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->e[i].path);
	free(m->e);
	memset(m, 0, sizeof(*m));
}

#endif
