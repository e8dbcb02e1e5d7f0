/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The snapshot diff (nx_snap_diff) under arbitrary pairs of trees: two
 * watches (the first recursive with LIST, the second recursive with LIST or
 * one level only), each an old and a new tree made from one small set of
 * inodes, so that entries stay, move within a watch, move between watches,
 * are hard-linked, replaced, exchanged, or go round in cycles, and inode
 * numbers are reused (same number, another birth time); some directories
 * have no listing (they could not be read).
 *
 * Invariants: applying the events to a mirror of each old tree (the rules of
 * notifyx(7)) gives the new tree, and no event could not be applied; cookies
 * are non-zero exactly on MOVED_OUT/MOVED_IN and pair one MOVED_OUT with one
 * MOVED_IN; only RENAME has an old path; paths are never empty.
 */
#include "config.h"

#include <sys/stat.h>

#include "fuzz.h"
#include "snapmodel.h"

#define NINO 24
#define NOPS 48

static const char *const names[] = { "a", "b", "c", "d", "e", "f" };

struct inode {
	bool dir;
	uint64_t id2[2];  /* birth time in the old and the new state */
	uint64_t size[2];
	uint32_t perm[2];
};

static struct inode inodes[NINO];

/* Every directory node of a tree under construction, to pick parents from. */
struct dirs {
	struct nx_snode *v[NOPS + 1];
	size_t n;
};

static bool placed(const struct nx_snode *n, uint64_t ino)
{
	if (n->parent && n->a.ino == ino)
		return true;
	for (uint32_t i = 0; i < n->nkids; i++)
		if (placed(n->kids[i], ino))
			return true;
	return false;
}

static struct nx_snode *tree(struct in *in, int state, bool deep, struct nx_snode *const *others,
			     size_t nothers)
{
	struct nx_sattr ra = { .ino = 1000, .dev = 1, .mode = S_IFDIR | 0755, .has_id2 = true };
	struct nx_snode *root = nx_snap_add(NULL, "", 0, &ra);
	struct dirs d = { .n = 1 };
	unsigned ops = in_u8(in) % NOPS;

	CHECK(root, "out of memory");
	root->entered = true;
	d.v[0] = root;
	for (unsigned k = 0; k < ops && in_more(in); k++) {
		uint8_t b = in_u8(in);
		struct nx_snode *parent = d.v[deep ? (b >> 4) % d.n : 0];
		const char *name = names[(b & 0xf) % 6];
		unsigned i = in_u8(in) % NINO;
		struct inode *ino = &inodes[i];
		struct nx_sattr a = {
			.ino = i + 1,
			.dev = 1,
			.id2 = ino->id2[state],
			.has_id2 = true,
			.size = ino->size[state],
			.mode = (ino->dir ? S_IFDIR : S_IFREG) | ino->perm[state],
		};
		struct nx_snode *n;
		bool taken = false;

		/* A directory is at one place of one state (no hard links). */
		if (ino->dir) {
			taken = placed(root, a.ino);
			for (size_t o = 0; o < nothers && !taken; o++)
				taken = placed(others[o], a.ino);
		}
		if (taken || nx_snap_find(parent, name, 1))
			continue;
		n = nx_snap_add(parent, name, 1, &a);
		CHECK(n, "out of memory");
		/* Some directories could not be read (no listing): the diff
		 * keeps what the old tree knew of them, or lists them once read. */
		if (ino->dir && deep && !(in_u8(in) % 8 == 0)) {
			n->entered = true;
			d.v[d.n++] = n;
		}
	}
	return root;
}

static bool debug;

static void dump(const char *title, const struct nx_snode *n, int depth)
{
	if (!depth)
		fprintf(stderr, "%s:\n", title);
	for (uint32_t i = 0; i < n->nkids; i++) {
		const struct nx_snode *k = n->kids[i];
		fprintf(stderr, "  %*s%s%s ino %llu/%llu\n", 2 * depth, "", k->name,
			nx_snode_isdir(k) ? "/" : "", (unsigned long long)k->a.ino,
			(unsigned long long)k->a.id2);
		dump(title, k, depth + 1);
	}
}

static struct sm_model models[2];
static uint32_t cookies_out[64], cookies_in[64];
static size_t nout, nin;

static void on_event(void *ctx, size_t w, uint32_t mask, uint32_t flags, uint32_t cookie,
		     const char *path, size_t len, const char *old, size_t old_len)
{
	(void)ctx;
	CHECK(w < 2, "watch %zu", w);
	CHECK(strlen(path) == len, "path length");
	CHECK((old ? strlen(old) : 0) == old_len, "old path length");
	CHECK(len > 0 || mask == NOTIFYX_OVERFLOW, "empty path for %s", notifyx_event_name(mask));
	CHECK(!old_len || mask == NOTIFYX_RENAME, "old path on %s", notifyx_event_name(mask));
	CHECK(mask != NOTIFYX_RENAME || old_len, "RENAME without an old path");
	CHECK(!!cookie == (mask == NOTIFYX_MOVED_OUT || mask == NOTIFYX_MOVED_IN),
	      "cookie %u on %s", cookie, notifyx_event_name(mask));
	if (mask == NOTIFYX_MOVED_OUT && nout < 64)
		cookies_out[nout++] = cookie;
	if (mask == NOTIFYX_MOVED_IN && nin < 64)
		cookies_in[nin++] = cookie;
	if (debug)
		fprintf(stderr, "event %zu: %s%s%s \"%s\" <- \"%s\" cookie %u\n", w,
			notifyx_event_name(mask), flags & NOTIFYX_EVENT_ISDIR ? " dir" : "",
			flags & NOTIFYX_EVENT_EXCHANGE ? " exchange" : "", path, old ? old : "", cookie);
	sm_apply(&models[w], mask, flags, path, old);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size };
	struct nx_snode *old[2], *cur[2];
	struct nx_sdiff_watch w[2];
	uint32_t cookie = in_u32(&in);
	uint8_t mode = in_u8(&in);
	bool deep1 = mode & 1;

	for (unsigned i = 0; i < NINO; i++) {
		uint8_t b = in_u8(&in);
		inodes[i].dir = i % 3 == 0;
		inodes[i].id2[0] = 7;
		/* Some inode numbers are reused by another file in the new state. */
		inodes[i].id2[1] = (b & 1) ? 8 : 7;
		inodes[i].size[0] = 0;
		inodes[i].size[1] = (b >> 1) & 1;
		inodes[i].perm[0] = 0644;
		inodes[i].perm[1] = (b & 4) ? 0600 : 0644;
	}
	old[0] = tree(&in, 0, true, NULL, 0);
	old[1] = tree(&in, 0, deep1, old, 1);
	cur[0] = tree(&in, 1, true, NULL, 0);
	cur[1] = tree(&in, 1, deep1, cur, 1);
	nout = nin = 0;
	debug = getenv("FUZZ_DEBUG");
	if (debug) {
		dump("old 0", old[0], 0);
		dump("old 1", old[1], 0);
		dump("new 0", cur[0], 0);
		dump("new 1", cur[1], 0);
	}
	for (int i = 0; i < 2; i++) {
		sm_from_tree(&models[i], old[i]);
		w[i] = (struct nx_sdiff_watch){ .old = old[i], .cur = cur[i] };
	}
	w[0].flags = NX_SDIFF_RECURSIVE | NX_SDIFF_LIST;
	w[1].flags = deep1 ? NX_SDIFF_RECURSIVE | NX_SDIFF_LIST : 0;
	CHECK(nx_snap_diff(w, 2, &cookie, on_event, NULL) == 0, "diff failed");
	for (int i = 0; i < 2; i++) {
		struct sm_model want;
		const char *d;

		CHECK(!models[i].why[0], "watch %d: %s", i, models[i].why);
		sm_from_tree(&want, cur[i]);
		d = sm_diff(&models[i], &want);
		CHECK(!d, "watch %d: %s", i, d);
		sm_free(&want);
		sm_free(&models[i]);
	}
	/* Each MOVED_OUT has its MOVED_IN with the same cookie. */
	CHECK(nout == nin, "%zu MOVED_OUT, %zu MOVED_IN", nout, nin);
	for (size_t i = 0; i < nout; i++) {
		size_t same = 0;
		for (size_t j = 0; j < nin; j++)
			same += cookies_in[j] == cookies_out[i];
		CHECK(same == 1, "cookie %u on %zu MOVED_IN", cookies_out[i], same);
	}
	for (int i = 0; i < 2; i++) {
		nx_snap_free(old[i]);
		nx_snap_free(cur[i]);
	}
	return 0;
}
