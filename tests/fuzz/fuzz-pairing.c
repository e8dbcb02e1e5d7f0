/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The inotify backend's processing of kernel records: rename pairing by
 * cookie (pairs split across reads, held first halves, exchanges), tree
 * maintenance of recursive watches, IGNORED and the self events, fed as
 * arbitrary sequences of synthetic records through nx_inotify_feed into a
 * real handle.
 *
 * Each input opens a handle with the inotify backend on a small tree made
 * once per process (TMPDIR/nx-fuzz-pairing.XXXXXX):
 *     a/ a/b/ a/b/e/ a/g  c/ c/h  d/  f
 * and adds a recursive watch on the root, then (as the first input byte
 * says) an exclude pattern, a recursive LIST watch on a, a non-recursive
 * (maybe ONESHOT) watch on c and a second recursive watch on the root.  No
 * watch asks for OPEN, ACCESS or CLOSE_NOWRITE, so the library's own
 * listings make no kernel events and a run depends on its input only.
 *
 * The rest of the input is a list of operations: append a record (wd: one
 * of the handle's kernel wds, nx_inotify_kwd, that of a given directory of
 * the tree, or an arbitrary value; a mask
 * from a set of single events, odd combinations and raw values, with or
 * without IN_ISDIR; a cookie 0..3; a name from the tree's alphabet, empty or
 * 255 bytes long; padded as the kernel does, unpadded, or filling the record
 * without a NUL), feed what was appended with drained true or false or split
 * at any byte, advance the clock of the 10 ms hold (the library's clock is
 * replaced by this file's: see run.sh), remove a watch.  After every feed
 * the events are read with notifyx_read (non-blocking) and each record is
 * checked: size a multiple of 8 and as the encoder computes it, exactly one
 * known type bit, one the watch asked for or an always-delivered one, known
 * flags, path_len and old_path_len the string lengths, zero padding, paths
 * made of names of the alphabet, "" where the type says so (unless a
 * record no kernel sends was fed), cookie
 * only on the halves of a move, error only on ERROR, old_path only on
 * RENAME, a wd the handle returned, IGNORED the last event of its wd and a
 * ONESHOT watch's second event.  At the end every watch is removed and must
 * have had exactly one IGNORED; closing the handle lets LeakSanitizer look.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "inotify.h"
#include "nx.h"

/* ---- the clock of the hold (handle.c's is renamed nx_real_now_ns) ---- */

static uint64_t fake_ns;
static bool debug; /* NX_FUZZ_DEBUG set: print records and events */
static bool implausible; /* a record no kernel sends was fed */

uint64_t nx_now_ns(void)
{
	return fake_ns;
}

/* ---- the tree ---- */

static char root[PATH_MAX];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st; (void)flag; (void)ftw;
	return remove(path);
}

static void rm_tree(void)
{
	if (root[0])
		nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void make_tree(void)
{
	static const char *const dirs[] = { "a", "a/b", "a/b/e", "c", "d" };
	static const char *const files[] = { "a/g", "c/h", "f" };
	const char *tmp = getenv("TMPDIR");
	char p[PATH_MAX];

	snprintf(root, sizeof(root), "%s/nx-fuzz-pairing.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	CHECK(mkdtemp(root), "mkdtemp %s: %s", root, strerror(errno));
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", root, dirs[i]);
		CHECK(mkdir(p, 0700) == 0, "mkdir %s", p);
	}
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", root, files[i]);
		int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
		CHECK(fd >= 0, "create %s", p);
		close(fd);
	}
	atexit(rm_tree);
}

/* ---- the watches ---- */

#define MAXW 4
#define NOISY (NOTIFYX_ACCESS | NOTIFYX_OPEN | NOTIFYX_CLOSE_NOWRITE)

struct w {
	int wd;
	uint32_t events, flags;
	int ignored;  /* IGNORED events read */
	int real;     /* requestable events read (ONESHOT: at most 1) */
};

static struct w ws[MAXW];
static int nws;

static struct w *find_w(int wd)
{
	for (int i = 0; i < nws; i++)
		if (ws[i].wd == wd)
			return &ws[i];
	return NULL;
}

static void add_w(struct notifyx *nx, const char *rel, uint32_t events, uint32_t flags)
{
	char p[PATH_MAX];
	int wd;

	snprintf(p, sizeof(p), "%s%s%s", root, *rel ? "/" : "", rel);
	/* ENOSPC comes from another program lowering the system-wide watch
	 * limit for a while (the conformance tests do): wait for it, up to 10 s. */
	for (int tries = 0; (wd = notifyx_add_watch(nx, p, events, flags)) < 0 && errno == ENOSPC &&
			    tries < 1000; tries++)
		usleep(10000);
	CHECK(wd > 0, "add_watch %s: %s", p, strerror(errno));
	CHECK(!find_w(wd), "wd %d returned twice", wd);
	ws[nws++] = (struct w){ wd, events, flags, 0, 0 };
}

/* ---- records ---- */

static const char *const names[] = { "", "a", "b", "c", "d", "e", "f", "g", "h", "x", "y", NULL };
static char longname[NAME_MAX + 1];

static bool known_name(const char *s, size_t len)
{
	if (len == NAME_MAX && !memcmp(s, longname, len))
		return true;
	for (int i = 1; names[i]; i++)
		if (strlen(names[i]) == len && !memcmp(names[i], s, len))
			return true;
	return false;
}

/* Every component of path is a name the records or the tree can give. */
static bool known_path(const char *path, size_t len)
{
	size_t start = 0;

	for (size_t i = 0; i <= len; i++) {
		if (i == len || path[i] == '/') {
			if (!known_name(path + start, i - start))
				return false;
			start = i + 1;
		}
	}
	return true;
}

static const uint32_t masks[] = {
	IN_MOVED_FROM, IN_MOVED_TO, IN_MOVED_FROM, IN_MOVED_TO, IN_MOVED_FROM, IN_MOVED_TO,
	IN_CREATE, IN_CREATE, IN_DELETE, IN_DELETE, IN_IGNORED, IN_Q_OVERFLOW,
	IN_DELETE_SELF, IN_MOVE_SELF, IN_UNMOUNT, IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE,
	IN_OPEN, IN_ACCESS, IN_CLOSE_NOWRITE, 0, IN_MOVED_FROM | IN_MOVED_TO,
	IN_CREATE | IN_DELETE, IN_DELETE_SELF | IN_IGNORED, IN_UNMOUNT | IN_IGNORED,
};
#define NMASKS (sizeof(masks) / sizeof(masks[0]))

#define CHUNK (16 * 1024)
static _Alignas(8) uint8_t chunk[CHUNK];
static size_t chunk_len;

/* The kernel wd of directory i of the first watch's tree ("", a, a/b, a/b/e,
 * c, d), so that an input means the same directory whatever order the
 * kernel and the file system give: found through the path table; a node's
 * kref is the backend's struct kwatch, whose first member is the kernel wd
 * (checked against nx_inotify_kwd).  nx_inotify_kwd(nx, 0) when not watched. */
static int dir_kwd(struct notifyx *nx, int i)
{
	static const char *const dirs[][3] = {
		{ NULL }, { "a", NULL }, { "a", "b", NULL }, { "a", "b", "e" }, { "c", NULL }, { "d", NULL },
	};
	struct nx_watch *w = nws ? nx_map_get(&nx->watches, (uint64_t)ws[0].wd) : NULL;
	struct nx_node *n = w ? w->root : NULL;

	for (int k = 0; n && k < 3 && dirs[i][k]; k++)
		n = nx_node_find(&nx->paths, n, dirs[i][k], strlen(dirs[i][k]));
	if (n && n->kref) {
		int kwd = *(const int *)n->kref;
		for (int k = 0; nx_inotify_kwd(nx, k) >= 0; k++)
			if (nx_inotify_kwd(nx, k) == kwd)
				return kwd;
	}
	return nx_inotify_kwd(nx, 0);
}

static void append(struct notifyx *nx, struct in *in)
{
	uint8_t wsel = in_u8(in), msel = in_u8(in), cookie = in_u8(in), nsel = in_u8(in);
	static const int odd_wds[] = { -1, 0, 1, 2, 3, 100000, INT_MAX, INT_MIN };
	struct {
		int32_t wd;
		uint32_t mask, cookie, len;
	} h;
	const char *name;
	size_t nlen, len;

	if (wsel < 0xc0) {
		h.wd = nx_inotify_kwd(nx, wsel % 8);
		if (h.wd < 0)
			h.wd = nx_inotify_kwd(nx, 0);
	} else if (wsel < 0xe0) {
		h.wd = dir_kwd(nx, wsel % 6);
	} else {
		h.wd = odd_wds[wsel % 8];
	}
	h.mask = (msel & 0x7f) < NMASKS ? masks[msel & 0x7f] : in_u32(in);
	if (msel & 0x80)
		h.mask |= IN_ISDIR;
	h.cookie = cookie & 3;
	if ((nsel & 0x3f) == 0x3f) {
		name = longname;
		nlen = NAME_MAX;
	} else {
		name = names[(nsel & 0x3f) % 11];
		nlen = strlen(name);
	}
	switch (nsel >> 6) {
	case 0: len = nlen ? (nlen + 1 + 15) / 16 * 16 : 0; break; /* as the kernel pads */
	case 1: len = nlen ? nlen + 1 : 0; break;
	case 2: len = nlen; break;                                 /* no NUL at all */
	default: len = (nlen + 1 + 15) / 16 * 16 + 16; break;       /* NULs even without a name */
	}
	if (chunk_len + sizeof(h) + len > CHUNK)
		return;
	/* What no kernel sends: a name on an event of the watched inode itself,
	 * no name on an entry's event, a mask not from the table. */
	const uint32_t selfish = IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_IGNORED | IN_Q_OVERFLOW;
	const uint32_t entry = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO;
	if ((msel & 0x7f) >= NMASKS || (nlen && (h.mask & selfish)) || (!nlen && (h.mask & entry)))
		implausible = true;
	if (debug)
		fprintf(stderr, "record wd %d mask 0x%x cookie %u len %zu name \"%.*s\"\n", h.wd, h.mask,
			h.cookie, len, (int)nlen, name);
	h.len = (uint32_t)len;
	memcpy(chunk + chunk_len, &h, sizeof(h));
	memset(chunk + chunk_len + sizeof(h), 0, len);
	memcpy(chunk + chunk_len + sizeof(h), name, nlen);
	chunk_len += sizeof(h) + len;
}

/* ---- reading and checking ---- */

static _Alignas(8) uint8_t rbuf[NOTIFYX_EVENT_MAX * 2];

static void check_event(const struct notifyx_event *ev, size_t avail)
{
	const uint32_t self_types = NOTIFYX_OVERFLOW | NOTIFYX_IGNORED | NOTIFYX_UNMOUNT |
				    NOTIFYX_DELETE_SELF | NOTIFYX_MOVE_SELF;
	const char *path = ev->names;

	CHECK(ev->size >= sizeof(*ev) && ev->size <= avail && ev->size % 8 == 0, "size %u", ev->size);
	CHECK(ev->path_len < PATH_MAX && ev->old_path_len < PATH_MAX, "lengths %u %u", ev->path_len,
	      ev->old_path_len);
	CHECK(ev->size == nx_event_size(ev->path_len, ev->old_path_len), "size %u for names %u, %u",
	      ev->size, ev->path_len, ev->old_path_len);
	CHECK(strnlen(path, ev->path_len + 1) == ev->path_len, "path_len %u, strlen %zu", ev->path_len,
	      strnlen(path, ev->path_len + 1));
	const char *end = path + ev->path_len + 1;
	if (ev->old_path_len) {
		CHECK(strnlen(end, ev->old_path_len + 1) == ev->old_path_len, "old_path_len");
		end += ev->old_path_len + 1;
	}
	for (const char *p = end; p < (const char *)ev + ev->size; p++)
		CHECK(*p == 0, "padding byte %d", *p);

	uint32_t m = ev->mask;
	CHECK(m && !(m & (m - 1)) && (m & (NOTIFYX_ALL_EVENTS | NX_ALWAYS_EVENTS)), "mask 0x%x", m);
	CHECK(!(ev->flags & ~(uint32_t)7), "flags 0x%x", ev->flags);
	CHECK(!(ev->flags & NOTIFYX_EVENT_EXCHANGE) || m == NOTIFYX_RENAME, "EXCHANGE on 0x%x", m);
	CHECK(!ev->cookie || m == NOTIFYX_MOVED_OUT || m == NOTIFYX_MOVED_IN, "cookie on 0x%x", m);
	CHECK(!ev->error == (m != NOTIFYX_ERROR), "error %d on 0x%x", ev->error, m);
	CHECK(!ev->old_path_len == (m != NOTIFYX_RENAME) || implausible, "old_path on 0x%x", m);
	/* Other types may have path "" (the root's own ATTRIB, OPEN...), but not
	 * those of entries.  Records no kernel sends (a name on DELETE_SELF, none
	 * on CREATE) give such events too: only not crashing is asked then. */
	const uint32_t entry_types = NOTIFYX_CREATE | NOTIFYX_DELETE | NOTIFYX_RENAME |
				     NOTIFYX_MOVED_OUT | NOTIFYX_MOVED_IN;
	if ((m & self_types) && !implausible)
		CHECK(ev->path_len == 0, "path \"%s\" on 0x%x", path, m);
	if ((m & entry_types) && !implausible)
		CHECK(ev->path_len > 0, "empty path on 0x%x", m);
	CHECK(!ev->path_len || implausible || known_path(path, ev->path_len), "path \"%s\"", path);
	CHECK(!ev->old_path_len || implausible || known_path(path + ev->path_len + 1, ev->old_path_len),
	      "old path \"%s\"", path + ev->path_len + 1);

	struct w *w = find_w(ev->wd);
	CHECK(w, "unknown wd %d", ev->wd);
	CHECK(!w->ignored, "event 0x%x of wd %d after its IGNORED", m, ev->wd);
	CHECK((m & NX_ALWAYS_EVENTS) || (m & w->events), "wd %d did not ask for 0x%x", ev->wd, m);
	if (m == NOTIFYX_IGNORED)
		w->ignored++;
	if (m & NOTIFYX_ALL_EVENTS) {
		w->real++;
		CHECK(!(w->flags & NOTIFYX_WATCH_ONESHOT) || w->real == 1, "ONESHOT wd %d: event %d",
		      ev->wd, w->real);
	}
}

static size_t rlen_sel;

static void drain(struct notifyx *nx)
{
	/* Buffer sizes vary with the input, down to one maximal event. */
	size_t len = NOTIFYX_EVENT_MAX + rlen_sel % (sizeof(rbuf) - NOTIFYX_EVENT_MAX + 1);

	for (int rounds = 0;; rounds++) {
		CHECK(rounds < 100000, "notifyx_read never runs dry");
		ssize_t n = notifyx_read(nx, rbuf, len);
		if (n < 0) {
			CHECK(errno == EAGAIN, "notifyx_read: %s", strerror(errno));
			return;
		}
		CHECK(n > 0 && (size_t)n <= len, "read %zd", n);
		for (size_t off = 0; off < (size_t)n;) {
			const struct notifyx_event *ev = (const void *)(rbuf + off);
			if (debug)
				fprintf(stderr, "  event wd %d %s flags %u cookie %u path \"%s\"%s%s\n", ev->wd,
					notifyx_event_name(ev->mask), ev->flags, ev->cookie, ev->names,
					ev->old_path_len ? " old " : "", ev->old_path_len ? notifyx_event_old_path(ev) : "");
			check_event(ev, (size_t)n - off);
			off += ev->size;
		}
	}
}

static void feed(struct notifyx *nx, const void *p, size_t len, bool drained)
{
	if (nx_inotify_feed(nx, p, len, drained) < 0)
		CHECK(errno == ENOBUFS, "feed: %s", strerror(errno));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct notifyx_config cfg = { .size = sizeof(cfg), .backend = NOTIFYX_BACKEND_INOTIFY,
				      .flags = NOTIFYX_NONBLOCK };
	struct in in = { data, size };
	struct notifyx *nx;

	if (!root[0]) {
		make_tree();
		debug = getenv("NX_FUZZ_DEBUG") != NULL;
		memset(longname, 'z', NAME_MAX);
	}
	fake_ns = 1000000000;
	implausible = false;
	chunk_len = 0;
	nws = 0;
	rlen_sel = 0;
	nx = notifyx_open(&cfg);
	CHECK(nx, "notifyx_open: %s", strerror(errno));

	uint8_t conf = in_u8(&in);
	uint32_t all = NOTIFYX_ALL_EVENTS & ~NOISY;
	if (conf & 1)
		CHECK(notifyx_exclude(nx, (conf & 0x40) ? "b/e" : "d") == 0, "exclude");
	add_w(nx, "", (conf & 0x10) ? NOTIFYX_CREATE | NOTIFYX_DELETE | NOTIFYX_RENAME : all,
	      NOTIFYX_WATCH_RECURSIVE);
	if (conf & 2)
		add_w(nx, "a", all, NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	if (conf & 4)
		add_w(nx, "c", (conf & 0x80) ? NOTIFYX_MOVED_IN | NOTIFYX_MOVED_OUT | NOTIFYX_DELETE_SELF : all,
		      (conf & 8) ? NOTIFYX_WATCH_ONESHOT : 0);
	if (conf & 0x20)
		add_w(nx, "", NOTIFYX_MOVED_IN | NOTIFYX_MOVED_OUT | NOTIFYX_RENAME | NOTIFYX_DELETE_SELF,
		      NOTIFYX_WATCH_RECURSIVE);
	if (debug) {
		fprintf(stderr, "tree %s; kernel wds:", root);
		for (int i = 0; nx_inotify_kwd(nx, i) >= 0; i++)
			fprintf(stderr, " [%d]=%d", i, nx_inotify_kwd(nx, i));
		fputc('\n', stderr);
	}
	drain(nx); /* the LIST watch's listing */

	while (in_more(&in)) {
		uint8_t op = in_u8(&in);
		switch (op % 10) {
		case 0: case 1: case 2: case 3: case 4:
			append(nx, &in);
			continue;
		case 5: /* a read that ends here; more may come */
			feed(nx, chunk, chunk_len, false);
			break;
		case 6: /* the kernel queue is dry */
			feed(nx, chunk, chunk_len, true);
			break;
		case 7: { /* split at any byte: records cut in two */
			size_t cut = chunk_len ? in_u16(&in) % (chunk_len + 1) : 0;
			feed(nx, chunk, cut, false);
			feed(nx, chunk + cut, chunk_len - cut, op & 0x80);
			break;
		}
		case 8: /* time passes: a held first half may be given up */
			fake_ns += (uint64_t)(in_u8(&in) % 16) * 1000000;
			feed(nx, chunk, 0, true);
			break;
		case 9: { /* the application removes a watch */
			struct w *w = &ws[in_u8(&in) % nws];
			if (notifyx_rm_watch(nx, w->wd) < 0)
				CHECK(errno == EINVAL, "rm_watch %d: %s", w->wd,
				      strerror(errno));
			break;
		}
		}
		if (debug)
			fprintf(stderr, "op %u\n", op % 10);
		chunk_len = 0;
		rlen_sel = op >> 4;
		drain(nx);
	}

	/* Whatever is left, then the end of every watch. */
	feed(nx, chunk, chunk_len, true);
	fake_ns += 20000000;
	feed(nx, chunk, 0, true);
	drain(nx);
	for (int i = 0; i < nws; i++) {
		if (notifyx_rm_watch(nx, ws[i].wd) < 0)
			CHECK(errno == EINVAL, "rm_watch %d: %s", ws[i].wd, strerror(errno));
		drain(nx);
	}
	for (int i = 0; i < nws; i++)
		CHECK(ws[i].ignored == 1, "wd %d: %d IGNORED events", ws[i].wd, ws[i].ignored);
	notifyx_close(nx);
	return 0;
}
