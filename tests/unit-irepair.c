/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of the inotify backend's repair (ops->repair, for
 * NOTIFYX_WATCH_RESCAN), called directly as the core calls it after a loss:
 * a tree changed while its events were not read (a directory renamed, one
 * deleted, one made with contents, the root itself moved), then repaired.
 * The path table must match the disk, the records queued before the repair
 * must not reach the watch (the repair read the tree after them), later
 * changes must be reported under their current paths, the moved root must
 * stay followed (its deletion ends the watch), and another watch sharing the
 * kernel watches must go on as if nothing happened. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "nx.h"
#include "unitsh.h"

#define EVENTS                                                                              \
	(NOTIFYX_CREATE | NOTIFYX_DELETE | NOTIFYX_RENAME | NOTIFYX_MOVED_OUT | NOTIFYX_MOVED_IN | \
	 NOTIFYX_DELETE_SELF | NOTIFYX_MOVE_SELF | NOTIFYX_CLOSE_WRITE)

static char top[64];

static int setup(void **state)
{
	(void)state;
	strcpy(top, "/tmp/nx-irepair.XXXXXX");
	assert_non_null(mkdtemp(top));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unit_sh("rm -rf %s", top);
	return 0;
}

static struct notifyx *open_inotify(void)
{
	struct notifyx_config c = { .size = sizeof(c), .backend = NOTIFYX_BACKEND_INOTIFY,
				    .flags = NOTIFYX_NONBLOCK };
	struct notifyx *nx = notifyx_open(&c);

	assert_non_null(nx);
	return nx;
}

/* ---- events, as lines "wd name path[<old]" ---- */

static char got[256][2 * PATH_MAX];
static size_t ngot;

/* Reads until the handle has been quiet for 100 ms (holds end by then). */
static void drain(struct notifyx *nx)
{
	static _Alignas(8) char buf[64 * 1024];
	struct pollfd p = { .fd = notifyx_fd(nx), .events = POLLIN };

	ngot = 0;
	for (;;) {
		ssize_t n = notifyx_read(nx, buf, sizeof(buf));
		if (n < 0) {
			assert_int_equal(errno, EAGAIN);
			if (poll(&p, 1, 100) == 0)
				return;
			continue;
		}
		for (const struct notifyx_event *ev = (const void *)buf; (const char *)ev < buf + n;
		     ev = notifyx_event_next(ev)) {
			assert_true(ngot < sizeof(got) / sizeof(got[0]));
			snprintf(got[ngot++], sizeof(got[0]), "%d %s %s%s%s", ev->wd,
				 notifyx_event_name(ev->mask), notifyx_event_path(ev),
				 ev->old_path_len ? "<" : "",
				 ev->old_path_len ? notifyx_event_old_path(ev) : "");
		}
	}
}

static void print_got(void)
{
	for (size_t i = 0; i < ngot; i++)
		print_message("  got: %s\n", got[i]);
}

/* The index of the event line, or -1. */
static long find_got(const char *fmt, ...)
{
	char want[2 * PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(want, sizeof(want), fmt, ap);
	va_end(ap);
	for (size_t i = 0; i < ngot; i++)
		if (!strcmp(got[i], want))
			return (long)i;
	print_message("missing: %s\n", want);
	print_got();
	return -1;
}

/* ---- the path table against the disk ---- */

static char list[2][8192];
static size_t list_len[2];

static void add_line(int i, const char *s)
{
	size_t len = strlen(s);

	assert_true(list_len[i] + len + 2 < sizeof(list[i]));
	memcpy(list[i] + list_len[i], s, len);
	list_len[i] += len;
	list[i][list_len[i]++] = '\n';
	list[i][list_len[i]] = '\0';
}

static void node_line(void *ctx, struct nx_node *n)
{
	char path[PATH_MAX];

	(void)ctx;
	assert_int_not_equal(nx_node_path(n, path, sizeof(path)), SIZE_MAX);
	assert_false(n->dead);
	assert_non_null(n->kref); /* watched */
	add_line(0, path);
}

static size_t root_len;

static int disk_line(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)st;
	(void)f;
	if (type == FTW_D)
		add_line(1, path[root_len] ? path + root_len + 1 : "");
	return 0;
}

static int cmp_lines(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts the lines of list i in place. */
static void sort_lines(int i)
{
	char *v[256], copy[8192];
	size_t n = 0, off = 0;

	memcpy(copy, list[i], list_len[i] + 1);
	for (char *s = strtok(copy, "\n"); s; s = strtok(NULL, "\n"))
		v[n++] = s;
	if (list_len[i] && list[i][0] == '\n')
		v[n++] = ""; /* the root, whose line is empty */
	qsort(v, n, sizeof(v[0]), cmp_lines);
	for (size_t k = 0; k < n; k++)
		off += (size_t)sprintf(list[i] + off, "%s\n", v[k]);
}

/* Every directory of the tree at root (on the disk) is a watched node of w,
 * and nothing else is. */
static void table_matches(struct nx_watch *w, const char *root)
{
	list_len[0] = list_len[1] = 0;
	list[0][0] = list[1][0] = '\0';
	nx_node_foreach(w->root, node_line, NULL);
	root_len = strlen(root);
	assert_int_equal(nftw(root, disk_line, 16, FTW_PHYS), 0);
	sort_lines(0);
	sort_lines(1);
	if (strcmp(list[0], list[1]))
		print_message("table:\n%sdisk:\n%s", list[0], list[1]);
	assert_string_equal(list[0], list[1]);
}

/* Calls the backend's repair as the core does, its listing discarded
 * (these watches have no RESCAN model to fill).  A recursive watch is
 * listed (1), a plain one loses nothing (0). */
static void repair(struct notifyx *nx, int wd)
{
	struct nx_watch *w = nx_map_get(&nx->watches, (uint64_t)wd);
	uint32_t flags;

	assert_non_null(w);
	assert_non_null(nx->ops->repair);
	flags = w->flags;
	w->flags |= NOTIFYX_WATCH_LIST;
	w->staging = true;
	assert_int_equal(nx->ops->repair(nx, w), flags & NOTIFYX_WATCH_RECURSIVE ? 1 : 0);
	w->staging = false;
	w->flags = flags;
	nx_queue_clear(&nx->stage);
}

/* ---- tests ---- */

static void test_repair_tree(void **state)
{
	struct notifyx *nx = open_inotify();
	char root[PATH_MAX], now[PATH_MAX], sub[PATH_MAX];
	int wd, wd2;

	(void)state;
	unit_sh("cd %s && mkdir -p p/root/a/b/c p/root/d/e p/root/g r && touch p/root/a/b/f", top);
	snprintf(root, sizeof(root), "%s/p/root", top);
	snprintf(sub, sizeof(sub), "%s/p/root/a", top);
	wd = notifyx_add_watch(nx, root, EVENTS, NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST);
	assert_true(wd > 0);
	/* Another watch shares the kernel watches of a/ and below. */
	wd2 = notifyx_add_watch(nx, sub, EVENTS, NOTIFYX_WATCH_RECURSIVE);
	assert_true(wd2 > 0);
	drain(nx);

	/* Changes whose events are not read: as if they were lost. */
	unit_sh("cd %s/p/root && mv a a2 && mv a2/b/c a2/c2 && rm -r d && mkdir -p n/m/k && touch n/m/f"
	   " && cd %s && mv p q && mv q/root r/root2",
	   top, top);
	snprintf(now, sizeof(now), "%s/r/root2", top);
	void *kref = ((struct nx_watch *)nx_map_get(&nx->watches, (uint64_t)wd))->root->kref;
	repair(nx, wd);
	/* The kernel watch of a directory still there is used again. */
	assert_ptr_equal(((struct nx_watch *)nx_map_get(&nx->watches, (uint64_t)wd))->root->kref, kref);
	table_matches(nx_map_get(&nx->watches, (uint64_t)wd), now);

	/* The records queued before the repair are not the repaired watch's;
	 * the other watch gets its own. */
	drain(nx);
	for (size_t i = 0; i < ngot; i++)
		if (atoi(got[i]) == wd) {
			print_got();
			fail_msg("an event of the repaired watch from before the repair");
		}
	assert_true(find_got("%d move_self ", wd2) >= 0);
	assert_true(find_got("%d rename c2<b/c", wd2) >= 0);

	/* Later changes, under their current paths. */
	unit_sh("cd %s && touch a2/b/new1 a2/c2/new2 n/m/k/new3 g/new4 && mkdir n/m/k/z && touch n/m/k/z/f2"
	   " && mv a2/b a2/bb && rm a2/bb/f",
	   now);
	drain(nx);
	assert_true(find_got("%d create a2/b/new1", wd) >= 0);
	assert_true(find_got("%d create a2/c2/new2", wd) >= 0);
	assert_true(find_got("%d create n/m/k/new3", wd) >= 0);
	assert_true(find_got("%d create g/new4", wd) >= 0);
	assert_true(find_got("%d create n/m/k/z", wd) >= 0);
	assert_true(find_got("%d create n/m/k/z/f2", wd) >= 0);
	assert_true(find_got("%d rename a2/bb<a2/b", wd) >= 0);
	assert_true(find_got("%d delete a2/bb/f", wd) >= 0);
	assert_true(find_got("%d create b/new1", wd2) >= 0);
	assert_true(find_got("%d rename bb<b", wd2) >= 0);
	assert_true(find_got("%d delete bb/f", wd2) >= 0);
	table_matches(nx_map_get(&nx->watches, (uint64_t)wd), now);

	/* Repaired again with nothing lost: nothing changes. */
	repair(nx, wd);
	table_matches(nx_map_get(&nx->watches, (uint64_t)wd), now);
	drain(nx);
	assert_int_equal(ngot, 0);

	/* The root is followed where it went: its deletion ends the watch. */
	unit_sh("rm -r %s", now);
	drain(nx);
	long del = find_got("%d delete_self ", wd), ign = find_got("%d ignored ", wd);
	assert_true(del >= 0 && ign > del);
	assert_int_equal(notifyx_close(nx), 0);
}

/* A root removed while events were lost: the repair leaves the watch (the
 * core reads the tree after it), which ends at the next read. */
static void test_repair_root_gone(void **state)
{
	struct notifyx *nx = open_inotify();
	char root[PATH_MAX];
	int wd;

	(void)state;
	unit_sh("cd %s && mkdir -p gone/x/y", top);
	snprintf(root, sizeof(root), "%s/gone", top);
	wd = notifyx_add_watch(nx, root, EVENTS, NOTIFYX_WATCH_RECURSIVE);
	assert_true(wd > 0);
	unit_sh("rm -r %s", root);
	repair(nx, wd);
	assert_false(((struct nx_watch *)nx_map_get(&nx->watches, (uint64_t)wd))->ended);
	drain(nx);
	long del = find_got("%d delete_self ", wd), ign = find_got("%d ignored ", wd);
	assert_true(del >= 0 && ign == del + 1 && (size_t)ign + 1 == ngot);
	assert_int_equal(notifyx_close(nx), 0);
}

/* A watch of one directory keeps one kernel watch: nothing to repair. */
static void test_repair_flat(void **state)
{
	struct notifyx *nx = open_inotify();
	char root[PATH_MAX];
	int wd;

	(void)state;
	unit_sh("cd %s && mkdir -p flat/x", top);
	snprintf(root, sizeof(root), "%s/flat", top);
	wd = notifyx_add_watch(nx, root, EVENTS, 0);
	assert_true(wd > 0);
	unit_sh("cd %s && mv x y && touch z", root);
	repair(nx, wd);
	drain(nx);
	assert_true(find_got("%d rename y<x", wd) >= 0);
	assert_true(find_got("%d create z", wd) >= 0);
	assert_int_equal(notifyx_close(nx), 0);
}

/* ---- end to end, through the core: a mirror under a tiny queue_max ---- */

/* The copy of "Mirroring a tree" (API.md): entries as "d path" or "f path". */
static char *copy[4096];
static size_t ncopy;

static long copy_find(const char *path)
{
	for (size_t i = 0; i < ncopy; i++)
		if (!strcmp(copy[i] + 2, path))
			return (long)i;
	return -1;
}

/* Is p at or below dir? */
static bool below(const char *p, const char *dir, size_t len)
{
	return !len || (!strncmp(p, dir, len) && (p[len] == '\0' || p[len] == '/'));
}

static void copy_remove(const char *path)
{
	size_t len = strlen(path), j = 0;

	for (size_t i = 0; i < ncopy; i++) {
		if (below(copy[i] + 2, path, len))
			free(copy[i]);
		else
			copy[j++] = copy[i];
	}
	ncopy = j;
}

static void copy_add(const char *path, bool dir)
{
	long i = copy_find(path);

	if (i >= 0 && (copy[i][0] == 'd') == dir)
		return;
	copy_remove(path);
	assert_true(ncopy < sizeof(copy) / sizeof(copy[0]));
	assert_true(asprintf(&copy[ncopy++], "%c %s", dir ? 'd' : 'f', path) > 0);
}

/* Moves what is at or below from to the same place below to. */
static void copy_move(const char *from, const char *to)
{
	size_t flen = strlen(from);

	for (size_t i = 0; i < ncopy; i++) {
		if (!below(copy[i] + 2, from, flen))
			continue;
		char *p;
		assert_true(asprintf(&p, "%c %s%s", copy[i][0], to, copy[i] + 2 + flen) > 0);
		free(copy[i]);
		copy[i] = p;
	}
}

static void apply(const struct notifyx_event *ev)
{
	const char *path = notifyx_event_path(ev), *old = notifyx_event_old_path(ev);
	bool dir = ev->flags & NOTIFYX_EVENT_ISDIR;

	switch (ev->mask) {
	case NOTIFYX_CREATE:
	case NOTIFYX_MOVED_IN:
		copy_add(path, dir);
		break;
	case NOTIFYX_DELETE:
	case NOTIFYX_MOVED_OUT:
		copy_remove(path);
		break;
	case NOTIFYX_RENAME:
		if (ev->flags & NOTIFYX_EVENT_EXCHANGE) {
			copy_move(path, "\x01");
			copy_move(old, path);
			copy_move("\x01", old);
		} else if (copy_find(old) >= 0) {
			copy_remove(path);
			copy_move(old, path);
		} else {
			copy_add(path, dir);
		}
		break;
	case NOTIFYX_DELETE_SELF:
		copy_remove("");
		break;
	}
}

static char *disk[4096];
static size_t ndisk;

static int disk_entry(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)st;
	(void)f;
	if (!path[root_len])
		return 0;
	assert_true(ndisk < sizeof(disk) / sizeof(disk[0]));
	assert_true(asprintf(&disk[ndisk++], "%c %s", type == FTW_D ? 'd' : 'f',
			     path + root_len + 1) > 0);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)st;
	(void)type;
	(void)f;
	return remove(path) < 0 ? -1 : 0;
}

/* A random path of up to three components below root. */
static void random_path(char *buf, size_t size, const char *root)
{
	int depth = 1 + rand() % 3, off = snprintf(buf, size, "%s", root);

	for (int i = 0; i < depth; i++)
		off += snprintf(buf + off, size - (size_t)off, "/%c%d", rand() % 4 ? 'd' : 'f',
				rand() % 5);
}

static void churn_once(const char *root)
{
	char a[PATH_MAX], b[PATH_MAX];

	random_path(a, sizeof(a), root);
	random_path(b, sizeof(b), root);
	switch (rand() % 6) {
	case 0:
	case 1:
		(void)mkdir(a, 0755);
		break;
	case 2:
		close(open(a, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
		break;
	case 3:
	case 4:
		(void)rename(a, b);
		break;
	case 5:
		nftw(a, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
		break;
	}
}

/* Fills the kernel queue (max_queued_events records, 16384 by default)
 * with the records of a file made and removed in root, then changes the
 * tree: the changes are lost in the kernel (IN_Q_OVERFLOW). */
static void kernel_burst(const char *root)
{
	char f[PATH_MAX + 8];
	FILE *m = fopen("/proc/sys/fs/inotify/max_queued_events", "r");
	int max = 16384;

	if (m) {
		assert_int_equal(fscanf(m, "%d", &max), 1);
		fclose(m);
	}
	snprintf(f, sizeof(f), "%s/flood", root);
	for (int i = 0; i < max / 2 + 1; i++) {
		close(open(f, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
		unlink(f);
	}
	for (int i = 0; i < 300; i++)
		churn_once(root);
}

/* What the stream of a RESCAN watch showed. */
struct tally {
	size_t overflows, syncs, synthetic;
	bool open; /* an OVERFLOW waits for a SYNC */
};

static void take(struct tally *t, int wd, const struct notifyx_event *ev)
{
	assert_int_equal(ev->wd, wd);
	assert_true(ev->mask != NOTIFYX_ERROR && ev->mask != NOTIFYX_IGNORED);
	if (ev->mask == NOTIFYX_OVERFLOW) {
		/* (A loss after events that follow an OVERFLOW, before the
		 * repair began, is an OVERFLOW again: the core's rule.) */
		t->open = true;
		t->overflows++;
	} else if (ev->mask == NOTIFYX_SYNC) {
		t->open = false;
		t->syncs++;
	} else if (t->open && (ev->flags & NOTIFYX_EVENT_SYNTHETIC)) {
		t->synthetic++;
	}
	apply(ev);
}

/* The copy equals the tree at root; both are emptied. */
static void copy_equals_disk(const char *root)
{
	size_t i;

	root_len = strlen(root);
	ndisk = 0;
	assert_int_equal(nftw(root, disk_entry, 16, FTW_PHYS), 0);
	qsort(disk, ndisk, sizeof(disk[0]), cmp_str);
	qsort(copy, ncopy, sizeof(copy[0]), cmp_str);
	for (i = 0; i < ndisk && i < ncopy && !strcmp(disk[i], copy[i]); i++)
		;
	if (i < ndisk || i < ncopy)
		fail_msg("the copy differs from the disk: disk \"%s\", copy \"%s\"",
			 i < ndisk ? disk[i] : "(end)", i < ncopy ? copy[i] : "(end)");
	for (i = 0; i < ndisk; i++)
		free(disk[i]);
	copy_remove("");
}

/* A mirror (RECURSIVE|LIST|RESCAN, queue_max 8) of a tree under a churn,
 * reading a few events between bursts, then until quiet.  The library
 * loses events (queue_max) but its table follows the kernel's records;
 * the kernel bursts lose records, and the table must be repaired. */
static void churn_run(unsigned seed, int ops)
{
	struct notifyx_config c = { .size = sizeof(c), .backend = NOTIFYX_BACKEND_INOTIFY,
				    .flags = NOTIFYX_NONBLOCK, .queue_max = 8 };
	struct notifyx *nx = notifyx_open(&c);
	/* Room for a few events at a time (the paths are short): the queue of
	 * 8 overflows again and again. */
	static _Alignas(8) char buf[256];
	struct pollfd p;
	char root[PATH_MAX];
	struct tally t = { 0 };
	int wd;

	assert_non_null(nx);
	snprintf(root, sizeof(root), "%s/churn%u", top, seed);
	assert_int_equal(mkdir(root, 0755), 0);
	srand(seed);
	for (int i = 0; i < 200; i++)
		churn_once(root);
	wd = notifyx_add_watch(nx, root,
			       NOTIFYX_CREATE | NOTIFYX_DELETE | NOTIFYX_RENAME | NOTIFYX_MOVED_OUT |
				       NOTIFYX_MOVED_IN | NOTIFYX_DELETE_SELF,
			       NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_LIST | NOTIFYX_WATCH_RESCAN);
	if (wd < 0 && errno == EINVAL) {
		notifyx_close(nx);
		skip(); /* the core has no NOTIFYX_WATCH_RESCAN yet */
	}
	assert_true(wd > 0);
	p = (struct pollfd){ .fd = notifyx_fd(nx), .events = POLLIN };
	for (int i = 0, quiet = 0; quiet < 3;) {
		if (i < ops) {
			if (i % 1000 == 500)
				kernel_burst(root);
			for (int k = 0; k < 20; k++, i++)
				churn_once(root);
		} else if (poll(&p, 1, 200) == 0) {
			quiet++;
		}
		for (int k = 0; k < 2; k++) {
			ssize_t n = notifyx_read(nx, buf, sizeof(buf));
			if (n < 0) {
				assert_int_equal(errno, EAGAIN);
				break;
			}
			quiet = 0;
			for (const struct notifyx_event *ev = (const void *)buf; (const char *)ev < buf + n;
			     ev = notifyx_event_next(ev))
				take(&t, wd, ev);
		}
	}
	print_message("rescan churn, seed %u: %zu overflows, %zu syncs, %zu synthetic differences\n",
		      seed, t.overflows, t.syncs, t.synthetic);
	assert_false(t.open);
	assert_true(t.overflows > 0 && t.synthetic > 0);
	assert_true(t.syncs >= 2); /* after the listing, and after a repair */
	copy_equals_disk(root);
	assert_int_equal(notifyx_close(nx), 0);
}

/* IREPAIR_SEEDS (default 3) runs of IREPAIR_OPS (default 3000) operations. */
static void test_rescan_churn(void **state)
{
	const char *seeds = getenv("IREPAIR_SEEDS"), *ops = getenv("IREPAIR_OPS");

	(void)state;
	for (unsigned seed = 1; seed <= (seeds ? (unsigned)atoi(seeds) : 3u); seed++)
		churn_run(seed, ops ? atoi(ops) : 3000);
}

/* ---- an entry made while a repair begins ---- */

/* The library's ioctl, interposed (it is linked into this program): while
 * late_left, each FIONREAD the library makes is followed at once by a new
 * file in late_dir, as another program could make it.  The repair's own
 * FIONREAD (ino_repair) is one of them: its file is in the repair's listing,
 * and its IN_CREATE comes after the records that the repair drops. */
static int late_left, late_made;
static char late_dir[PATH_MAX];

int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;
	long ret;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	ret = syscall(SYS_ioctl, fd, req, arg);
	if (req == FIONREAD && late_left > 0) {
		char path[PATH_MAX + 32];
		int err = errno, f;

		late_left--;
		snprintf(path, sizeof(path), "%s/late%d", late_dir, late_made++);
		if ((f = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644)) >= 0)
			close(f);
		errno = err;
	}
	return (int)ret;
}

/* Each file made as a repair begins is reported once: by the repair's
 * listing or by its IN_CREATE, never by both (API.md: exactly once). */
static void test_repair_made_meanwhile(void **state)
{
	struct notifyx_config c = { .size = sizeof(c), .backend = NOTIFYX_BACKEND_INOTIFY,
				    .flags = NOTIFYX_NONBLOCK, .queue_max = 4 };
	char root[128];
	struct notifyx *nx;
	int wd;

	(void)state;
	snprintf(root, sizeof(root), "%s/t", top);
	unit_sh("mkdir -p %s/d", root);
	assert_non_null(nx = notifyx_open(&c));
	wd = notifyx_add_watch(nx, root, NOTIFYX_CREATE | NOTIFYX_DELETE,
			       NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_RESCAN);
	assert_true(wd >= 0);
	drain(nx);
	unit_sh("for i in 1 2 3 4 5 6 7 8 9 10 11 12; do : > %s/d/f$i; done", root);
	snprintf(late_dir, sizeof(late_dir), "%s/d", root);
	late_made = 0;
	late_left = 8;
	drain(nx);
	late_left = 0;
	assert_true(find_got("%d overflow ", wd) >= 0);
	assert_true(find_got("%d sync ", wd) >= 0);
	assert_true(late_made > 0);
	for (int k = 0; k < late_made; k++) {
		char want[64];
		int n = 0;

		snprintf(want, sizeof(want), "%d create d/late%d", wd, k);
		for (size_t i = 0; i < ngot; i++)
			n += !strcmp(got[i], want);
		if (n != 1) {
			print_message("%s: %d times\n", want, n);
			print_got();
		}
		assert_int_equal(n, 1);
	}
	assert_int_equal(notifyx_close(nx), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_repair_tree, setup, teardown),
		cmocka_unit_test_setup_teardown(test_repair_root_gone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_repair_flat, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rescan_churn, setup, teardown),
		cmocka_unit_test_setup_teardown(test_repair_made_meanwhile, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
