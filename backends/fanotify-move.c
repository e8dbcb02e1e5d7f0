/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The fanotify backend (fanotify.c): moves (FAN_RENAME, exchanges), and
 * the mounts that went. */
#include "config.h"

#include <limits.h>
#include <poll.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>

#include "fanotify-int.h"
#include "ktree.h"
#include "treepath.h"

/* ---- moves ---- */

struct move {
	const struct kobj *from, *to;
	/* The directories' identifiers: from and to are looked up again by
	 * them (move_from, move_to), since handling one part of a move can bury
	 * a directory's last node, and with it the kobj (NULL: use from and to
	 * as they are). */
	const struct fanid *from_id, *to_id;
	const char *fname, *tname;
	size_t flen, tlen;
	bool isdir, exchange, to_isdir;
	uint32_t cookie;
	uint32_t back_cookie; /* an exchange: the other object's way, between watches */
	const struct fanid *fid; /* the object moved, when known */
	const struct fanid *tfid; /* an exchange: the object moved the other way */
	/* An arrival alone (by_ends): the move it is part of, and whether the
	 * object came from its to end (NULL: this move's from end). */
	const struct move *src;
	bool src_to;
};

/*
 * A directory listed when an event is read is listed as it is then, after
 * the events not read yet: the table can be ahead of the records read
 * after, and what it has already must not be done twice.  A FAN_RENAME
 * names both directories when both were marked when it happened (a
 * directory moved out keeps its mark while no path leads to it), so the
 * directory at one end may have been listed, with the move done, only
 * after it happened (inotify reports nothing to a watch added later).  By
 * identity: an arrival is done when the table has the object moved there
 * already (with filesystem marks, or at a third place a listing put it:
 * overtaken), a departure when it has another directory where it left.
 * Filesystem marks list a new watch's tree, and directories arriving, with
 * the records of the moves made meanwhile queued behind: the same rules
 * keep those moves from listing a directory twice.
 */

static const struct kobj *move_from(const struct fan *fa, const struct move *m)
{
	return m->from_id ? nx_fan_kobj_find(fa, m->from_id) : m->from;
}

static const struct kobj *move_to(const struct fan *fa, const struct move *m)
{
	return m->to_id ? nx_fan_kobj_find(fa, m->to_id) : m->to;
}

/* The kobj of the directory at n/name in the table, or NULL. */
static const struct kobj *kobj_at(struct notifyx *nx, struct nx_node *n, const char *name,
				  size_t len)
{
	struct nx_node *c = nx_node_find(&nx->paths, n, name, len);

	return c && !c->dead ? c->kref : NULL;
}

/* One end of a move of object id: it left n/name (departure) or arrived
 * there.  Done already in the table? */
static bool end_done(struct notifyx *nx, struct nx_node *n, const char *name, size_t len,
		     const struct fanid *id, bool departure)
{
	const struct kobj *k = kobj_at(nx, n, name, len);

	if (!id || !k)
		return false;
	return departure ? k != nx_fan_kobj_find(fan_of(nx), id) :
			   k == nx_fan_kobj_find(fan_of(nx), id);
}

/* True when node s is the directory's entry name of kobj d. */
static bool node_at(const struct nx_node *s, const struct kobj *d, const char *name, size_t len)
{
	return d && s->parent && s->parent->kref == d && nx_node_name_len(s) == len &&
	       !memcmp(nx_node_name(s), name, len);
}

/*
 * With filesystem marks: a move took directory id from m's from end to its
 * to end (the other way with back), and the table has it, in watch w, at a
 * third place, where a listing made since the kernel queue was last read
 * dry put it.  That listing is ahead of the move (one made before it would
 * have had id leave that place by the records before this one): the move
 * of id is done, and undone; its ends hold what the listings found.
 */
static bool overtaken(struct notifyx *nx, struct nx_watch *w, const struct fanid *id,
		      const struct move *m, bool back)
{
	struct fan *fa = fan_of(nx);
	const struct kobj *k = id ? nx_fan_kobj_find(fa, id) : NULL;
	const struct kobj *from = move_from(fa, m), *to = move_to(fa, m);
	const struct nx_node *s;

	if (!k || !k->isdir || k->listed_at != fa->epoch || !nx_fan_fs_mode(w))
		return false;
	if (back) {
		const struct kobj *t = from;
		from = to;
		to = t;
	}
	for (size_t si = 0; (s = nx_subs_get(k->subs, si)); si++)
		if (!s->dead && nx_node_watch(s) == w &&
		    !node_at(s, from, back ? m->tname : m->fname, back ? m->tlen : m->flen) &&
		    !node_at(s, to, back ? m->fname : m->tname, back ? m->flen : m->tlen))
			return s->parent != NULL;
	return false;
}

/* A listing reported a directory at n/name that then left the table
 * without an event (fan->stale): the copy may have it there, empty. */
static bool stale_at(const struct fan *fa, const struct nx_node *n, const char *name, size_t len)
{
	return fa->stale.len && nx_map_get(&fa->stale, nx_fan_place_key(0, n, name, len));
}

/* Directory id arrived at n/name by move m (the other way with back): done
 * already in the table?  As end_done; or overtaken where the table has no
 * directory at n/name: then, unless a listing had it there (fan->stale), the
 * copy never had it there, and its departure from there, if read before
 * the queue is dry, is done too (left_unseen). */
static bool arrival_done(struct notifyx *nx, struct nx_node *n, const char *name, size_t len,
			 const struct fanid *id, const struct move *m, bool back)
{
	struct fan *fa = fan_of(nx);
	uint64_t place;

	if (end_done(nx, n, name, len, id, false))
		return true;
	if (kobj_at(nx, n, name, len) || !overtaken(nx, nx_node_watch(n), id, m, back))
		return false;
	place = nx_fan_place_key(id->key, n, name, len);
	if (!stale_at(fa, n, name, len))
		nx_map_put(&fa->skipped, place, (void *)1);
	return true;
}

/* Did object id leave n/name where arrival_done skipped its arrival? */
static bool left_unseen(struct notifyx *nx, const struct nx_node *n, const char *name,
			size_t len, const struct fanid *id)
{
	struct fan *fa = fan_of(nx);

	return id && fa->skipped.len && nx_map_get(&fa->skipped, nx_fan_place_key(id->key, n, name, len));
}

/* Directory n was listed while the records being read were read (since
 * the kernel queue was last read dry): its listing may be ahead of them.
 * A directory that left it but has no node there (the listing found
 * something else, or nothing) may then be a file or nothing in the copy
 * that LIST gave.  A watch that does not list gave no copy: what n held is
 * implied by its arrival, the directory among it, and its move is one
 * (tests/fanotify-tree, renamed_out_of_arrival). */
static bool dir_unknown_at(struct notifyx *nx, struct nx_node *n, const char *name, size_t len)
{
	struct fan *fa = fan_of(nx);
	const struct kobj *k = n->kref;

	if (!k || k->listed_at != fa->epoch || !(nx_node_watch(n)->flags & NOTIFYX_WATCH_LIST) ||
	    nx_node_find(&nx->paths, n, name, len) ||
	    nx_fan_entry_path(fa, n, name, len, 2) == SIZE_MAX)
		return false;
	return !nx_excluded(nx, nx_node_watch(n), fa->path[2], fa->path[2] + strlen(fa->path[2]) - len);
}

/*
 * An end at n/name of a move of a directory (dir) or of an exchange, where
 * the copy may hold something else than the table says (dir_unknown_at).
 * An exchange's file end too: the exchange needs both entries in the copy,
 * and where n was listed when it arrived (with inode marks too: a directory
 * moved in is listed when its record is read; bench/seeds.sh, fanotify seed
 * 20) the file may have moved on before the listing; or where a listing
 * found the directory coming the other way ahead of this record (stale_at),
 * the copy has an empty directory there, not the file that left
 * (tests/mirror-rescan.sh, fanotify-fs, seed 9).
 */
static bool end_unknown(struct notifyx *nx, struct nx_node *n, const char *name, size_t len,
			bool dir, bool exchange)
{
	const struct kobj *k = n->kref;

	return (dir || (exchange && ((k && k->arrived) || stale_at(fan_of(nx), n, name, len)))) &&
	       dir_unknown_at(nx, n, name, len);
}

/*
 * Moves that cannot have happened as the table has their ends (a directory
 * is never moved below itself), made so by listings ahead of them (with
 * inode marks too: a directory moved in is listed when its record is read,
 * after later moves inside it that records still to come report; seen in
 * bench/seeds.sh, fanotify ordinary seed 2).  crossed: the table has a,
 * where move m (a/fname to b/tname) left, at or below b/tname: listings
 * made after the move, and after a went there, put it there, and show the
 * move done (whatever the entries are).
 * into_itself: the table has b below the directory that left a/fname, as
 * a listing of that directory, made after it moved on and b moved into it,
 * has it: its departure is not done (a record put it at a/fname), its
 * arrival cannot be (the listing shows what came after).
 */
static bool crossed(struct notifyx *nx, struct nx_node *a, struct nx_node *b, const struct move *m)
{
	return nx_within(a, nx_node_find(&nx->paths, b, m->tname, m->tlen));
}

static bool into_itself(struct notifyx *nx, struct nx_node *a, struct nx_node *b,
			const struct move *m)
{
	return nx_within(b, nx_node_find(&nx->paths, a, m->fname, m->flen));
}

/* With inode marks: a listing found the directory that left a/fname at
 * another place, ahead of this move, and took it from a/fname without an
 * event (nx_fan_attach, fan->stale).  What the copy has there is what it
 * held before; a RENAME would carry that to the other end, where the
 * directory may not be by now (an exchange made since, its ends listed,
 * is not reported: bench/seeds.sh, fanotify ordinary seed 522).  So the
 * move is done by ends: the departure, and the arrival listed as it is. */
static bool taken_ahead(struct notifyx *nx, struct nx_node *a, const struct move *m)
{
	return m->isdir && !m->exchange && !nx_fan_fs_mode(nx_node_watch(a)) &&
	       stale_at(fan_of(nx), a, m->fname, m->flen) &&
	       !nx_node_find(&nx->paths, a, m->fname, m->flen);
}

/* True when the table has an end of move m done already, or may have (in
 * some watch that sees both): the move is then done end by end.  (Not when
 * the ends crossed: see do_move.) */
static bool move_done_in_part(struct notifyx *nx, const struct move *m)
{
	struct fan *fa = fan_of(nx);
	size_t nf = nx_fan_subscribers(nx, move_from(fa, m), 0),
	       nt = nx_fan_subscribers(nx, move_to(fa, m), 1);

	for (size_t i = 0; i < nf; i++) {
		struct nx_node *a = fa->vec[0][i];
		for (size_t j = 0; j < nt; j++) {
			struct nx_node *b = fa->vec[1][j];
			if (a->dead || b->dead || nx_node_watch(a) != nx_node_watch(b))
				continue;
			if (crossed(nx, a, b, m) || into_itself(nx, a, b, m) ||
			    (m->exchange && (overtaken(nx, nx_node_watch(a), m->fid, m, false) ||
					     overtaken(nx, nx_node_watch(a), m->tfid, m, true))))
				return false; /* see do_move, rename_in_watch */
			if (taken_ahead(nx, a, m) || end_done(nx, a, m->fname, m->flen, m->fid, true) ||
			    left_unseen(nx, a, m->fname, m->flen, m->fid) ||
			    arrival_done(nx, b, m->tname, m->tlen, m->fid, m, false))
				return true;
			if (m->exchange && (end_done(nx, b, m->tname, m->tlen, m->tfid, true) ||
					    left_unseen(nx, b, m->tname, m->tlen, m->tfid) ||
					    arrival_done(nx, a, m->fname, m->flen, m->tfid, m, true)))
				return true;
			if (end_unknown(nx, a, m->fname, m->flen, m->isdir, m->exchange) ||
			    (m->exchange && end_unknown(nx, b, m->tname, m->tlen, m->to_isdir, true)))
				return true;
		}
	}
	return false;
}

/* Was directory id created, reported, and not listed (created_dir in
 * fanotify-event.c)?  Then its entries are reported where it arrives. */
static bool unlisted(struct fan *fa, const struct fanid *id)
{
	return id && fa->unlisted.len && nx_map_del(&fa->unlisted, id->key);
}

static void arrived(struct nx_kt_rename *r, struct nx_node *n, const char *name, size_t len,
		    bool theirs, bool unseen)
{
	const struct move *m = r->ctx;
	struct nx_watch *w = nx_node_watch(n);
	bool list = w->flags & NOTIFYX_WATCH_LIST;
	const struct fanid *id = theirs ? m->tfid : m->fid;

	/* (With filesystem marks, listed where it arrives when LIST asks.) */
	nx_fan_list_moved_in(r->nx, n, name, len, id,
		      unseen || nx_fan_fs_mode(w) ? list || unlisted(fan_of(r->nx), id)
						  : (w->flags & NOTIFYX_WATCH_RECURSIVE));
}

/* The other half of exchange m: the object that moved from m's to end to
 * its from end, as a move of its own. */
static struct move other_way(const struct move *m)
{
	return (struct move){ .from = m->to, .from_id = m->to_id, .fname = m->tname,
			      .flen = m->tlen, .to = m->from, .to_id = m->from_id,
			      .tname = m->fname, .tlen = m->flen, .isdir = m->to_isdir,
			      .fid = m->tfid, .cookie = m->back_cookie, .src = m, .src_to = true };
}

/* Move m as seen from one side only (by_ends): its departure, and its
 * arrival, which knows the move it is part of (arrival_done). */
static struct move departure_of(const struct move *m)
{
	return (struct move){ .from = m->from, .from_id = m->from_id, .fname = m->fname,
			      .flen = m->flen, .isdir = m->isdir, .fid = m->fid };
}

static struct move arrival_of(const struct move *m)
{
	return (struct move){ .to = m->to, .to_id = m->to_id, .tname = m->tname, .tlen = m->tlen,
			      .isdir = m->isdir, .fid = m->fid, .src = m->src ? m->src : m,
			      .src_to = m->src_to };
}

static void rename_in_watch(struct notifyx *nx, struct nx_node *a, struct nx_node *b,
			    const struct move *m)
{
	struct fan *fa = fan_of(nx);
	struct nx_watch *w = nx_node_watch(a);

	/* An exchange with a half overtaken: the other half is a move. */
	if (m->exchange) {
		bool x = overtaken(nx, w, m->fid, m, false), y = overtaken(nx, w, m->tfid, m, true);
		struct move one = x && !y ? other_way(m) : *m;
		one.exchange = false;
		one.tfid = NULL;
		one.to_isdir = false;
		if (x && y)
			return;
		if (x || y) {
			rename_in_watch(nx, x ? b : a, x ? a : b, &one);
			return;
		}
	}
	struct nx_kt_rename r = {
		.a = a, .b = b, .fname = m->fname, .flen = m->flen, .tname = m->tname,
		.tlen = m->tlen, .isdir = m->isdir, .to_isdir = m->to_isdir,
		.exchange = m->exchange, .scratch = { fa->path[0], fa->path[1] },
		.arrived = arrived, .bury = nx_fan_bury, .nx = nx, .ctx = m,
	};

	nx_fan_sup_take(fa, a, m->fname, m->flen);
	nx_kt_rename(&r);
}

/* Move m's object left a/fname, where a's watch does not see it arrive:
 * MOVED_OUT, with m's cookie when another watch sees it arrive. */
static void depart(struct notifyx *nx, struct nx_node *a, const struct move *m, bool paired)
{
	struct fan *fa = fan_of(nx);
	size_t len = nx_fan_entry_path(fa, a, m->fname, m->flen, 0);

	if (len == SIZE_MAX || end_done(nx, a, m->fname, m->flen, m->fid, true))
		return;
	if (left_unseen(nx, a, m->fname, m->flen, m->fid)) {
		nx_map_del(&fa->skipped, nx_fan_place_key(m->fid->key, a, m->fname, m->flen));
		return;
	}
	nx_fan_sup_take(fa, a, m->fname, m->flen);
	if (m->isdir)
		nx_fan_bury(nx, nx_node_find(&nx->paths, a, m->fname, m->flen));
	nx_emit(nx, nx_node_watch(a), NOTIFYX_MOVED_OUT, m->isdir ? NOTIFYX_EVENT_ISDIR : 0,
		paired ? m->cookie : 0, 0, fa->path[0], len, NULL, 0);
}

/* Move m's object arrived at b/tname, where b's watch did not see it leave:
 * MOVED_IN, with m's cookie when another watch saw it leave. */
static void arrive(struct notifyx *nx, struct nx_node *b, const struct move *m, bool paired)
{
	struct fan *fa = fan_of(nx);
	size_t len = nx_fan_entry_path(fa, b, m->tname, m->tlen, 0);

	if (len == SIZE_MAX)
		nx_fan_too_long(nx, b);
	if (len == SIZE_MAX ||
	    arrival_done(nx, b, m->tname, m->tlen, m->fid, m->src ? m->src : m, m->src_to))
		return;
	struct nx_watch *w = nx_node_watch(b);
	nx_fan_bury(nx, nx_node_find(&nx->paths, b, m->tname, m->tlen)); /* replaced */
	nx_emit(nx, w, NOTIFYX_MOVED_IN, m->isdir ? NOTIFYX_EVENT_ISDIR : 0,
		paired ? m->cookie : 0, 0, fa->path[0], len, NULL, 0);
	if (m->isdir && !nx_excluded(nx, w, fa->path[0], fa->path[0] + len - m->tlen))
		nx_fan_list_moved_in(nx, b, m->tname, m->tlen, m->fid,
				     (w->flags & NOTIFYX_WATCH_LIST) || unlisted(fa, m->fid));
}

/* Is node n's watch that of one of the nodes v[0..count) (of a live one)? */
static bool watch_among(const struct nx_node *n, struct nx_node *const *v, size_t count,
			bool live)
{
	for (size_t i = 0; i < count; i++)
		if ((!live || !v[i]->dead) && nx_node_watch(v[i]) == nx_node_watch(n))
			return true;
	return false;
}

/* Move m, in each watch as much of it as the watch sees: a rename where it
 * sees both ends, else a departure or an arrival; an exchange between two
 * watches is a move each way (the departures first, each way with a cookie
 * of its own, as inotify reports it). */
static void do_move(struct notifyx *nx, const struct move *m)
{
	struct fan *fa = fan_of(nx);
	size_t nf = nx_fan_subscribers(nx, move_from(fa, m), 0),
	       nt = nx_fan_subscribers(nx, move_to(fa, m), 1);
	struct nx_node **from = fa->vec[0], **to = fa->vec[1];
	struct move back = m->exchange ? other_way(m) : (struct move){ 0 };

	for (size_t i = 0; i < nf; i++) {
		struct nx_node *a = from[i], *b = NULL;
		if (a->dead)
			continue;
		for (size_t j = 0; j < nt && !b; j++)
			if (!to[j]->dead && nx_node_watch(to[j]) == nx_node_watch(a))
				b = to[j];
		if (b && into_itself(nx, a, b, m))
			b = NULL; /* a departure alone (the arrival is paired: skipped) */
		if (b) {
			if (!crossed(nx, a, b, m))
				rename_in_watch(nx, a, b, m);
			continue;
		}
		depart(nx, a, m, nt > 0);
	}
	/* (Each way back pairs its ends as the way there did.) */
	for (size_t j = 0; j < nt && m->exchange; j++)
		if (!to[j]->dead && !watch_among(to[j], from, nf, false))
			depart(nx, to[j], &back, nf > 0);
	for (size_t j = 0; j < nt; j++)
		if (!to[j]->dead && !watch_among(to[j], from, nf, false))
			arrive(nx, to[j], m, nf > 0);
	for (size_t i = 0; i < nf && m->exchange; i++)
		if (!from[i]->dead && !watch_among(from[i], to, nt, true))
			arrive(nx, from[i], &back, nt > 0);
}

/* A move the table has part of: each end not done yet becomes a departure
 * or an arrival (the departures first), as seen from one side only. */
static void by_ends(struct notifyx *nx, const struct move *m)
{
	struct move back = m->exchange ? other_way(m) : (struct move){ 0 };
	struct move out = departure_of(m), in = arrival_of(m);
	struct move back_out = departure_of(&back), back_in = arrival_of(&back);

	do_move(nx, &out);
	if (m->exchange)
		do_move(nx, &back_out);
	do_move(nx, &in);
	if (m->exchange)
		do_move(nx, &back_in);
}

bool nx_fan_same_id(const struct fanid *a, const struct fanid *b)
{
	return a->len == b->len && (!a->len || !memcmp(a->data, b->data, a->len));
}

static bool same_name(const struct fanname *a, const struct fanname *b)
{
	return a->len == b->len && (!a->len || !memcmp(a->name, b->name, a->len));
}

/* A cookie for the next move, never 0 (which says: no cookie). */
static uint32_t next_cookie(struct fan *fa)
{
	if (!++fa->cookie)
		fa->cookie = 1;
	return fa->cookie;
}

/* FAN_RENAME at pos.  An exchange is two FAN_RENAMEs, the second the
 * reverse of the first for another object: the identifiers of the objects
 * moved (FAN_REPORT_TARGET_FID) tell it from a rename onto an existing name
 * followed by a rename back (the same object twice), for files too, so it is
 * reported as one RENAME with NOTIFYX_EVENT_EXCHANGE (API.md 0.2).  Returns
 * the bytes of the records used. */
size_t nx_fan_rename_event(struct notifyx *nx, size_t pos, const struct fanrec *r)
{
	struct fan *fa = fan_of(nx);
	struct fanrec x;
	struct move m = {
		.fname = r->oname.name, .flen = r->oname.len,
		.tname = r->nname.name, .tlen = r->nname.len,
		.isdir = r->mask & FAN_ONDIR,
		.fid = r->fid.len ? &r->fid : NULL,
	};
	size_t used = r->size;

	/* Resolving a directory can bury nodes of the table, and with the last
	 * node of an object the object itself: from and to are looked up again
	 * by their identifiers wherever they are used. */
	m.from = r->odfid.len ? nx_fan_kobj_get(nx, &r->odfid) : NULL;
	m.to = r->ndfid.len ? nx_fan_kobj_get(nx, &r->ndfid) : NULL;
	m.from_id = m.from ? &r->odfid : NULL;
	m.to_id = m.to ? &r->ndfid : NULL;
	m.from = move_from(fa, &m);
	/* A directory moved from outside the trees into one brings what was
	 * known to be outside inside; moves elsewhere change nothing of that. */
	if ((r->mask & FAN_ONDIR) && m.to && !m.from && fa->outside.len)
		nx_map_free(&fa->outside);
	/* Any directory renamed can bring what a lazy watch did not hold into
	 * its tree (see current() in fanotify-fs.c). */
	if ((r->mask & FAN_ONDIR) && fa->lazy_outside.len)
		nx_map_free(&fa->lazy_outside);
	m.cookie = next_cookie(fa);

	size_t xpos = nx_fan_next_rename(fa->buf, fa->len, pos, r);
	if (xpos < fa->len && nx_fan_decode(fa->buf, fa->len, xpos, &x) &&
	    nx_fan_same_id(&x.odfid, &r->ndfid) && nx_fan_same_id(&x.ndfid, &r->odfid) &&
	    same_name(&x.oname, &r->nname) && same_name(&x.nname, &r->oname) &&
	    r->fid.len && x.fid.len && !nx_fan_same_id(&r->fid, &x.fid)) {
		m.exchange = true;
		m.to_isdir = x.mask & FAN_ONDIR;
		m.back_cookie = next_cookie(fa);
		m.tfid = &x.fid;
		if (xpos == pos + r->size) {
			used += x.size;
		} else {
			/* Skipped when reached, also after a later read: other
			 * records come first (handle_records may stop at one). */
			uint64_t none = 0;
			memcpy(fa->buf + xpos + offsetof(struct fanotify_event_metadata, mask),
			       &none, sizeof(none));
		}
		/* Seen from one side only, it is a departure and an arrival at one
		 * name there: the departure first. */
		if (!m.from != !m.to) {
			const struct fanid *id = m.from ? &r->odfid : &r->ndfid;
			const struct kobj *k = m.from ? m.from : m.to;
			const char *name = m.from ? m.fname : m.tname;
			size_t len = m.from ? m.flen : m.tlen;
			bool leaves = m.from ? m.isdir : m.to_isdir;
			bool arrives = m.from ? m.to_isdir : m.isdir;
			struct move out = { .from = k, .from_id = id, .fname = name, .flen = len,
					    .isdir = leaves, .fid = m.from ? m.fid : m.tfid };
			struct move in = { .to = k, .to_id = id, .tname = name, .tlen = len,
					   .isdir = arrives, .fid = m.from ? m.tfid : m.fid };
			do_move(nx, &out);
			do_move(nx, &in);
			return used;
		}
	}
	if (move_done_in_part(nx, &m))
		by_ends(nx, &m);
	else
		do_move(nx, &m);
	return used;
}

/* ---- mounts ---- */

/* A filesystem went: watches whose root was on it end with UNMOUNT; inside a
 * tree, the mount point is watched as it now is, with an OVERFLOW. */
void nx_fan_check_mounts(struct notifyx *nx)
{
	struct fan *fa = fan_of(nx);
	struct pollfd p = { .fd = fa->mnt_check, .events = POLLPRI };
	struct nx_map set = { 0 };
	struct nx_node **gone = NULL;
	size_t ngone = 0, cap = 0, pos = 0;
	struct kobj *k;

	if (fa->mnt_check < 0 || poll(&p, 1, 0) <= 0 || !(p.revents & (POLLPRI | POLLERR)))
		return;
	if (!nx_mounts_read(fa->mnt_check, &set)) {
		nx_map_free(&set);
		return;
	}
	while (nx_map_next(&fa->kobjs, &pos, NULL, (void **)&k)) {
		if (!k->mnt_id || nx_map_get(&set, k->mnt_id + 1))
			continue;
		struct nx_node *s;

		for (size_t si = 0; (s = nx_subs_get(k->subs, si)); si++) {
			/* Only where the vanished mount begins. */
			if (s->parent && s->parent->kref &&
			    ((struct kobj *)s->parent->kref)->mnt_id == k->mnt_id)
				continue;
			if (ngone == cap) {
				cap = cap ? cap * 2 : 8;
				struct nx_node **v = realloc(gone, cap * sizeof(*v));
				if (!v)
					break;
				gone = v;
			}
			gone[ngone++] = s;
		}
	}
	/* Filesystems marked inside fsmode trees: what vanished is not listed. */
	struct nx_watch *fw_w;
	pos = 0;
	while (nx_map_next(&nx->watches, &pos, NULL, (void **)&fw_w)) {
		struct fwatch *fw = fw_w->bdata;
		for (size_t i = 1; fw && fw->fsmode && i < fw->nmarks; i++) {
			if (fw->mnts[i] && !nx_map_get(&set, fw->mnts[i] + 1)) {
				fw->mnts[i] = 0;
				nx_lost(nx, fw_w);
			}
		}
	}
	nx_map_free(&set);
	for (size_t i = 0; i < ngone; i++) {
		struct nx_node *n = gone[i];
		struct nx_watch *w = nx_node_watch(n);
		if (n->dead || w->ended)
			continue;
		if (!n->parent) {
			nx_emit(nx, w, NOTIFYX_UNMOUNT, 0, 0, 0, "", 0, NULL, 0);
			nx_end_watch(nx, w);
			continue;
		}
		struct nx_node *parent = n->parent;
		char name[NAME_MAX + 1];
		size_t len = nx_node_name_len(n);
		memcpy(name, nx_node_name(n), len);
		nx_fan_bury(nx, n);
		nx_lost(nx, w);
		nx_fan_add_subdir(nx, parent, name, len, false, false);
	}
	free(gone);
}
