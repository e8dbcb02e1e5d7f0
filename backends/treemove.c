/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include "treemove.h"

bool nx_within(const struct nx_node *n, const struct nx_node *c)
{
	for (; n; n = n->parent)
		if (n == c)
			return true;
	return false;
}

void nx_treemove(struct notifyx *nx, struct nx_treemove *t,
		 void (*bury)(struct notifyx *nx, struct nx_node *n))
{
	struct nx_watch *w = t->a->watch;
	struct nx_node *c = t->isdir ? nx_node_find(&nx->paths, t->a, t->fname, t->flen) : NULL;
	struct nx_node *d = nx_node_find(&nx->paths, t->b, t->tname, t->tlen);

	/* The kernel never moves a directory into itself; a table out of step
	 * with the filesystem must not be made into a cycle either. */
	if (c && nx_within(t->b, c)) {
		bury(nx, c);
		c = NULL;
		t->out = true;
	}
	if (d && t->exchange && nx_within(t->a, d)) {
		bury(nx, d);
		d = NULL;
	}
	if (t->exchange) {
		if (c && nx_node_rename(&nx->paths, c, t->b, t->tname, t->tlen) < 0)
			nx_lost(nx, w);
		if (d && d != c && nx_node_rename(&nx->paths, d, t->a, t->fname, t->flen) < 0)
			nx_lost(nx, w);
	} else {
		if (d && d != c)
			bury(nx, d); /* replaced */
		if (c && t->out) {
			bury(nx, c);
			c = NULL;
		} else if (c && nx_node_rename(&nx->paths, c, t->b, t->tname, t->tlen) < 0) {
			nx_lost(nx, w);
		}
		d = NULL;
	}
	t->c = c;
	t->d = d;
}
