/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * churn: change a directory tree at random, reproducibly (a seeded PRNG of
 * its own), for the mirror tests.
 *
 *   churn [-v] [-x] [-D] [-U] [-s SEED] [-n OPS] [-k EVERY] [-p USEC] TREE OUTSIDE
 *
 * Operations: create files; make chains of new directories (mkdir -p) with
 * files created in them at once; rename files and directories inside TREE,
 * into deeper and shallower places; rename files onto existing files and
 * directories onto empty directories; move entries (directories mostly) out
 * to OUTSIDE, a directory beside TREE, and back in; delete files and whole
 * subtrees (as rm -rf, through descriptors); create symbolic links (dangling, to files, to
 * directories).  -x adds exchanges (renameat2 RENAME_EXCHANGE) where at least
 * one side is a directory (the exchanges inotify and fanotify can report).
 *
 * Rate: after every EVERY operations (default 10) it sleeps USEC microseconds
 * (default 1000), so that a watcher that keeps reading is not overrun (the
 * inotify queue holds 16384 events); -p 0 runs flat out.
 *
 * -D adds deep chains: directories with names of 200 characters, made,
 * entered and changed only through descriptors (openat, mkdirat), up to
 * DEEP_REL_MAX characters below TREE, so that with TREE itself deep enough
 * their absolute paths outgrow PATH_MAX while their paths relative to TREE
 * fit; the other operations never enter them.  -U adds exchanges with
 * places a watch of TREE does not see: with a name NAME.tmp beside the entry
 * (made for it, a file or a directory; a watcher excludes "*.tmp") and with
 * an entry of OUTSIDE.  The other operations never pick a name ending in
 * ".tmp".  -D and -U leave the sequence of a seed without them unchanged.
 *
 * -O create,exchange,... runs only the operations named (see ops[] below).
 * -v prints every operation on stdout, in a form that reads as shell commands,
 * to find the sequence that breaks a watcher.  A summary goes to stderr.
 * Exit status 0, or 1 when TREE or OUTSIDE cannot be used.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *tree, *outside;
static unsigned long seed = 1;
static unsigned serial;
static int verbose, exchanges, deep, unseen;

/* Deep chains: names of LONG characters (above SHORT_MAX: the other
 * operations never enter them), at most DEEP_REL_MAX characters below TREE. */
#define LONG 200
#define SHORT_MAX 100
#define DEEP_REL_MAX 3000

/* ---- random numbers: splitmix64, the same sequence everywhere ------------ */

static uint64_t rng_state;

static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* uniform in 0..n-1 (n > 0); the bias of the modulo does not matter here */
static unsigned rnd(unsigned n)
{
	return (unsigned)(rng_next() % n);
}

/* ---- paths --------------------------------------------------------------- */

static void too_long(const char *a, const char *b)
{
	fprintf(stderr, "churn: path too long: %s/%s\n", a, b);
	exit(1);
}

/* base/rel, or base when rel is "" */
static char *full(char *buf, const char *base, const char *rel)
{
	if (snprintf(buf, PATH_MAX, "%s%s%s", base, *rel ? "/" : "", rel) >= PATH_MAX)
		too_long(base, rel);
	return buf;
}

/* dir/name, or name when dir is "" (the root) */
static char *join(char *buf, const char *dir, const char *name)
{
	if (snprintf(buf, PATH_MAX, "%s%s%s", dir, *dir ? "/" : "", name) >= PATH_MAX)
		too_long(dir, name);
	return buf;
}

/* a name never used before by this seed */
static char *new_name(char *buf, char kind)
{
	snprintf(buf, NAME_MAX, "%c%lu_%u", kind, seed, serial++);
	return buf;
}

/* Is a equal to b or above it? */
static int at_or_above(const char *a, const char *b)
{
	size_t n = strlen(a);

	if (!n)
		return 1;
	return strncmp(a, b, n) == 0 && (b[n] == '/' || b[n] == '\0');
}

struct entry {
	char name[NAME_MAX + 1];
	int isdir;
};

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

/* Is name one the ordinary operations leave alone (-D, -U)? */
static int hidden(const char *name)
{
	size_t n = strlen(name);

	return (deep && n > SHORT_MAX) || (unseen && n >= 4 && !strcmp(name + n - 4, ".tmp"));
}

/* The entries of the directory open at dfd (closed here), sorted; longs: only
 * the long-named ones (-D chains), else all but the hidden ones.  Returns
 * how many (0 when it cannot be read). */
static size_t list_at(int dfd, int longs, struct entry **out)
{
	static struct entry *ents;
	static size_t cap;
	struct dirent *de;
	size_t n = 0;
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;

	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return 0;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (longs ? strlen(de->d_name) <= SHORT_MAX : hidden(de->d_name))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			ents = realloc(ents, cap * sizeof *ents);
			if (!ents) {
				perror("churn: realloc");
				exit(1);
			}
		}
		snprintf(ents[n].name, sizeof ents[n].name, "%s", de->d_name);
		if (de->d_type == DT_UNKNOWN) {
			struct stat st;

			ents[n].isdir = fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
					S_ISDIR(st.st_mode);
		} else {
			ents[n].isdir = de->d_type == DT_DIR;
		}
		n++;
	}
	closedir(d);
	/* readdir's order depends on the filesystem: sort, for reproducibility */
	if (n)
		qsort(ents, n, sizeof *ents, by_name);
	*out = ents;
	return n;
}

/* The entries of base/rel; returns how many (0 when it cannot be read). */
static size_t list(const char *base, const char *rel, struct entry **out)
{
	char path[PATH_MAX];

	return list_at(open(full(path, base, rel), O_RDONLY | O_DIRECTORY | O_CLOEXEC), 0, out);
}

enum kind { NONDIR, DIRECTORY, ANY };

/*
 * A random existing entry of TREE of the kind asked, found by a random walk
 * from the root (a directory is never the root itself).  Entries under avoid
 * are never chosen nor entered.  Returns 0 when the walk finds none.
 */
static int pick_deep(enum kind kind, char *out, const char *avoid, unsigned stop_pct)
{
	char cur[PATH_MAX] = "";
	int depth;

	for (depth = 0; depth < 12; depth++) {
		struct entry *e;
		size_t n = list(tree, cur, &e), i, ndirs = 0, ncand = 0;
		char sub[PATH_MAX];
		unsigned want;

		for (i = 0; i < n; i++) {
			join(sub, cur, e[i].name);
			if (avoid && at_or_above(avoid, sub)) {
				e[i].name[0] = '\0';
				continue;
			}
			ndirs += e[i].isdir;
			ncand += kind == ANY || (kind == DIRECTORY) == e[i].isdir;
		}
		if (kind == DIRECTORY && *cur && (ndirs == 0 || rnd(100) < stop_pct)) {
			strcpy(out, cur);
			return 1;
		}
		if (ncand && (ndirs == 0 || rnd(100) < stop_pct + 15)) {
			want = rnd((unsigned)ncand);
			for (i = 0; i < n; i++) {
				if (!e[i].name[0] || !(kind == ANY || (kind == DIRECTORY) == e[i].isdir))
					continue;
				if (want-- == 0) {
					join(out, cur, e[i].name);
					return 1;
				}
			}
		}
		if (ndirs == 0)
			return 0;
		want = rnd((unsigned)ndirs);
		for (i = 0; i < n; i++) {
			if (!e[i].name[0] || !e[i].isdir)
				continue;
			if (want-- == 0)
				break;
		}
		join(sub, cur, e[i].name);
		strcpy(cur, sub);
	}
	return 0;
}

static int pick(enum kind kind, char *out, const char *avoid)
{
	return pick_deep(kind, out, avoid, 25);
}

/* A random directory of TREE, possibly its root (""), not under avoid. */
static void pick_dir(char *out, const char *avoid)
{
	if (rnd(5) == 0 || !pick(DIRECTORY, out, avoid))
		out[0] = '\0';
}

/* ---- operations ---------------------------------------------------------- */

static unsigned long done_by_op[16], failed;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	if (!verbose)
		return;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static int check(int r, const char *what, const char *path)
{
	if (r < 0) {
		/* Not fatal: the test only needs the tree to change. */
		failed++;
		if (verbose)
			printf("# %s %s: %s\n", what, path, strerror(errno));
		return 0;
	}
	return 1;
}

static int make_file(const char *rel)
{
	char p[PATH_MAX];
	int fd = open(full(p, tree, rel), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	say("touch %s", p);
	if (!check(fd, "create", p))
		return 0;
	if (write(fd, "churn\n", 6) < 0)
		failed++;
	close(fd);
	return 1;
}

static int op_create(void)
{
	char d[PATH_MAX], name[NAME_MAX], rel[PATH_MAX];

	pick_dir(d, NULL);
	return make_file(join(rel, d, new_name(name, 'f')));
}

/* mkdir -p of a chain of 1 to 3 new directories, files made in them at once */
static int op_mkdir_p(void)
{
	char d[PATH_MAX], name[NAME_MAX], rel[PATH_MAX], p[PATH_MAX];
	unsigned depth = 1 + rnd(3), i, j;

	pick_dir(d, NULL);
	for (i = 0; i < depth; i++) {
		join(rel, d, new_name(name, 'd'));
		full(p, tree, rel);
		say("mkdir %s", p);
		if (!check(mkdir(p, 0755), "mkdir", p))
			return 0;
		strcpy(d, rel);
		if (rnd(2))
			continue; /* files after the whole chain, or none here */
		for (j = rnd(3); j > 0; j--)
			make_file(join(rel, d, new_name(name, 'f')));
	}
	for (j = rnd(4); j > 0; j--)
		make_file(join(rel, d, new_name(name, 'f')));
	return 1;
}

static int do_rename(const char *from_base, const char *from, const char *to_base, const char *to)
{
	char a[PATH_MAX], b[PATH_MAX];

	full(a, from_base, from);
	full(b, to_base, to);
	say("mv -T %s %s", a, b);
	return check(rename(a, b), "rename", a);
}

/* a file (or symbolic link) to a new name, anywhere in the tree */
static int op_rename_file(void)
{
	char a[PATH_MAX], d[PATH_MAX], name[NAME_MAX], rel[PATH_MAX];

	if (!pick(NONDIR, a, NULL))
		return 0;
	pick_dir(d, NULL);
	return do_rename(tree, a, tree, join(rel, d, new_name(name, 'f')));
}

/* a file onto another existing one, which it replaces */
static int op_overwrite(void)
{
	char a[PATH_MAX], b[PATH_MAX];

	if (!pick(NONDIR, a, NULL) || !pick(NONDIR, b, NULL) || strcmp(a, b) == 0)
		return 0;
	return do_rename(tree, a, tree, b);
}

/* a directory to a new name, anywhere in the tree but inside itself */
static int op_rename_dir(void)
{
	char a[PATH_MAX], d[PATH_MAX], name[NAME_MAX], rel[PATH_MAX];

	if (!pick(DIRECTORY, a, NULL))
		return 0;
	pick_dir(d, a);
	return do_rename(tree, a, tree, join(rel, d, new_name(name, 'd')));
}

/* a directory onto an existing empty one, which it replaces */
static int op_dir_onto_empty(void)
{
	char a[PATH_MAX], b[PATH_MAX];
	struct entry *e;

	if (!pick(DIRECTORY, a, NULL) || !pick_deep(DIRECTORY, b, a, 5) || at_or_above(b, a) ||
	    list(tree, b, &e) != 0)
		return 0;
	return do_rename(tree, a, tree, b);
}

/* two entries swap names, one of them a directory */
static int op_exchange(void)
{
	char a[PATH_MAX], b[PATH_MAX], pa[PATH_MAX], pb[PATH_MAX];

	if (!exchanges || !pick(DIRECTORY, a, NULL) || !pick(ANY, b, a) || at_or_above(b, a))
		return 0;
	full(pa, tree, a);
	full(pb, tree, b);
	say("exchange %s %s", pa, pb);
	return check(renameat2(AT_FDCWD, pa, AT_FDCWD, pb,
			       RENAME_EXCHANGE), "exchange", pa);
}

/* rm -rf of name below dfd, through descriptors: -D chains are too deep for
 * paths. */
static int rm_at(int dfd, const char *name)
{
	struct dirent *de;
	DIR *d;
	int fd;

	if (unlinkat(dfd, name, 0) == 0)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -1;
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			rm_at(dirfd(d), de->d_name);
	closedir(d);
	return unlinkat(dfd, name, AT_REMOVEDIR);
}

static int rm_rf(const char *path)
{
	return rm_at(AT_FDCWD, path);
}

/* out of the tree to OUTSIDE, a directory mostly */
static int op_move_out(void)
{
	char a[PATH_MAX], name[NAME_MAX];

	if (!(rnd(3) ? pick_deep(DIRECTORY, a, NULL, 10) : pick(NONDIR, a, NULL)))
		return 0;
	return do_rename(tree, a, outside, new_name(name, 'o'));
}

/* from OUTSIDE back into the tree, anywhere */
static int op_move_in(void)
{
	char d[PATH_MAX], name[NAME_MAX], rel[PATH_MAX], from[PATH_MAX], to[PATH_MAX];
	struct entry *e;
	size_t n = list(outside, "", &e), i;
	int isdir;

	if (!n)
		return 0;
	i = rnd((unsigned)n);
	isdir = e[i].isdir;
	join(from, outside, e[i].name);
	pick_dir(d, NULL);
	join(rel, d, new_name(name, isdir ? 'd' : 'f'));
	full(to, tree, rel);
	say("mv -T %s %s", from, to);
	return check(rename(from, to), "rename", from);
}

static int op_delete_file(void)
{
	char a[PATH_MAX], p[PATH_MAX];

	if (!pick(NONDIR, a, NULL))
		return 0;
	say("rm %s", full(p, tree, a));
	return check(unlink(p), "unlink", p);
}

static int op_delete_tree(void)
{
	char a[PATH_MAX], p[PATH_MAX];

	if (!pick_deep(DIRECTORY, a, NULL, 5))
		return 0;
	say("rm -rf %s", full(p, tree, a));
	return check(rm_rf(p), "rm -rf", p);
}

static int op_symlink(void)
{
	static const char *const targets[] = { "nowhere", ".", "..", "/", "f1_0" };
	char d[PATH_MAX], name[NAME_MAX], rel[PATH_MAX], p[PATH_MAX];
	const char *t = targets[rnd(sizeof targets / sizeof targets[0])];

	pick_dir(d, NULL);
	join(rel, d, new_name(name, 'l'));
	say("ln -s %s %s", t, full(p, tree, rel));
	return check(symlink(t, p), "symlink", p);
}

/* ---- -D: deep chains, through descriptors ------------------------------- */

/* A new long name: unique, padded with 'x' to LONG characters. */
static char *long_name(char *buf)
{
	char name[NAME_MAX];

	snprintf(buf, NAME_MAX + 1, "%-*s", LONG, new_name(name, 'L'));
	for (char *p = buf; *p; p++)
		if (*p == ' ')
			*p = 'x';
	return buf;
}

static void touch_at(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	if (check(fd, "create (deep)", name))
		close(fd);
}

/*
 * From a random directory of TREE (the root half of the time, so that
 * chains grow deep), down its long-named subdirectories at random, then:
 * make 1 to 3 new long-named levels with files at the bottom, or create a
 * file, or delete one.
 */
static int op_deep(void)
{
	char d[PATH_MAX] = "", p[PATH_MAX], name[NAME_MAX + 1];
	size_t rel_len;
	struct entry *e;
	int fd, c;
	unsigned k, i;

	if (rnd(2))
		pick_dir(d, NULL);
	fd = open(full(p, tree, d), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (!check(fd, "open", p))
		return 0;
	rel_len = strlen(d);
	while (rnd(8)) {
		size_t n = list_at(dup(fd), 1, &e);

		if (!n)
			break;
		i = rnd((unsigned)n);
		if ((c = openat(fd, e[i].name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
			break;
		close(fd);
		fd = c;
		rel_len += 1 + strlen(e[i].name);
	}
	k = rnd(4);
	if (k < 2 && rel_len + 2 * (LONG + 1) + NAME_MAX < DEEP_REL_MAX) {
		for (i = 1 + rnd(3); i > 0 && rel_len + LONG + 1 + NAME_MAX < DEEP_REL_MAX; i--) {
			long_name(name);
			say("# deep: mkdir %s/...(%zu characters)/%.12s...", d, rel_len, name);
			if (!check(mkdirat(fd, name, 0755), "mkdir (deep)", name) ||
			    (c = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
				break;
			close(fd);
			fd = c;
			rel_len += 1 + LONG;
		}
		for (i = rnd(3); i > 0; i--)
			touch_at(fd, new_name(name, 'f'));
	} else {
		size_t n = list_at(dup(fd), 0, &e), files = 0;

		for (i = 0; i < n; i++)
			files += !e[i].isdir;
		if (k == 2 || !files) {
			say("# deep: touch %s/...(%zu characters)/f", d, rel_len);
			touch_at(fd, new_name(name, 'f'));
		} else {
			for (i = 0, k = rnd((unsigned)files); e[i].isdir || k--; i++)
				;
			say("# deep: rm %s/...(%zu characters)/%s", d, rel_len, e[i].name);
			check(unlinkat(fd, e[i].name, 0), "unlink (deep)", e[i].name);
		}
	}
	close(fd);
	return 1;
}

/* ---- -U: exchanges with places a watch does not see ---------------------- */

/* A new file, or a directory with a file and a directory in it, at path. */
static int make_unseen(const char *path)
{
	char p[PATH_MAX], name[NAME_MAX];
	int fd;

	if (rnd(2)) {
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd >= 0)
			close(fd);
		return fd >= 0;
	}
	if (mkdir(path, 0755) < 0)
		return 0;
	fd = open(join(p, path, new_name(name, 'f')), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0)
		close(fd);
	return mkdir(join(p, path, new_name(name, 'd')), 0755) == 0;
}

static int exchange(const char *a, const char *b)
{
	say("exchange %s %s", a, b);
	return check(renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE), "exchange", a);
}

/* An entry of TREE exchanged with NAME.tmp made beside it (which a watcher
 * excludes); NAME.tmp, now the old entry, stays or goes. */
static int op_exchange_excluded(void)
{
	char a[PATH_MAX], pa[PATH_MAX], pt[PATH_MAX];

	if (!pick(ANY, a, NULL))
		return 0;
	full(pa, tree, a);
	if (snprintf(pt, sizeof pt, "%s.tmp", pa) >= (int)sizeof pt)
		return 0;
	rm_rf(pt);
	say("# made %s", pt);
	if (!check(make_unseen(pt) - 1, "make", pt) || !exchange(pt, pa))
		return 0;
	if (rnd(2)) {
		say("rm -rf %s", pt);
		check(rm_rf(pt), "rm -rf", pt);
	}
	return 1;
}

/* An entry of TREE exchanged with one of OUTSIDE (there already, or made). */
static int op_exchange_outside(void)
{
	char a[PATH_MAX], pa[PATH_MAX], po[PATH_MAX], name[NAME_MAX];
	struct entry *e;
	size_t n;

	if (!pick(ANY, a, NULL))
		return 0;
	full(pa, tree, a);
	n = list(outside, "", &e);
	if (n && rnd(2)) {
		join(po, outside, e[rnd((unsigned)n)].name);
	} else {
		join(po, outside, new_name(name, 'o'));
		say("# made %s", po);
		if (!check(make_unseen(po) - 1, "make", po))
			return 0;
	}
	return exchange(po, pa);
}

static struct {
	const char *name;
	int (*run)(void);
	unsigned weight;
} ops[] = {
	{ "create",        op_create,         26 },
	{ "mkdir-p",       op_mkdir_p,        12 },
	{ "rename-file",   op_rename_file,    12 },
	{ "overwrite",     op_overwrite,       6 },
	{ "rename-dir",    op_rename_dir,      8 },
	{ "dir-onto-empty", op_dir_onto_empty, 2 },
	{ "exchange",      op_exchange,        3 },
	{ "move-out",      op_move_out,        4 },
	{ "move-in",       op_move_in,         4 },
	{ "delete-file",   op_delete_file,    10 },
	{ "delete-tree",   op_delete_tree,     1 },
	{ "symlink",       op_symlink,         5 },
	/* Last, and weighing nothing without their option: a seed without
	 * them keeps its sequence. */
	{ "deep",          op_deep,            0 }, /* -D: 10 */
	{ "exchange-excluded", op_exchange_excluded, 0 }, /* -U: 3 */
	{ "exchange-outside", op_exchange_outside, 0 },  /* -U: 3 */
};
#define NOPS (sizeof ops / sizeof ops[0])

/* OUTSIDE is not watched: keep it small, quietly. */
static void trim_outside(void)
{
	struct entry *e;
	size_t n = list(outside, "", &e);
	char p[PATH_MAX];

	if (n > 40)
		rm_rf(join(p, outside, e[rnd((unsigned)n)].name));
}

static void usage(void)
{
	fprintf(stderr, "usage: churn [-v] [-x] [-D] [-U] [-s SEED] [-n OPS] [-k EVERY] [-p USEC] "
		"[-O OP,...] TREE OUTSIDE\n");
	exit(2);
}

static unsigned long number(const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end)
		usage();
	return v;
}

int main(int argc, char **argv)
{
	unsigned long nops = 1000, every = 10, pause_us = 1000, i;
	unsigned total = 0, k;
	const char *only = NULL;
	struct stat st;
	int opt;

	while ((opt = getopt(argc, argv, "DUk:n:O:p:s:vx")) != -1) {
		switch (opt) {
		case 'D': deep = 1; break;
		case 'U': unseen = 1; break;
		case 'O': only = optarg; break;
		case 'k': every = number(optarg); break;
		case 'n': nops = number(optarg); break;
		case 'p': pause_us = number(optarg); break;
		case 's': seed = number(optarg); break;
		case 'v': verbose = 1; break;
		case 'x': exchanges = 1; break;
		default: usage();
		}
	}
	if (argc - optind != 2)
		usage();
	tree = argv[optind];
	outside = argv[optind + 1];
	if (stat(tree, &st) < 0 || !S_ISDIR(st.st_mode) ||
	    stat(outside, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "churn: %s and %s must be directories\n", tree, outside);
		return 1;
	}
	rng_state = seed;
	for (k = 0; k < NOPS; k++) {
		if (deep && ops[k].run == op_deep)
			ops[k].weight = 10;
		if (unseen && (ops[k].run == op_exchange_excluded || ops[k].run == op_exchange_outside))
			ops[k].weight = 3;
		if (only) {
			/* -O: only the operations listed keep their weight */
			size_t n = strlen(ops[k].name);
			const char *p = only;

			while ((p = strstr(p, ops[k].name)) != NULL &&
			       !((p == only || p[-1] == ',') && (p[n] == ',' || p[n] == '\0')))
				p++;
			if (!p)
				ops[k].weight = 0;
		}
		total += ops[k].weight;
	}
	if (!total) {
		fprintf(stderr, "churn: no operation left by -O %s\n", only);
		usage();
	}

	for (i = 0; i < nops; i++) {
		int tries;

		for (tries = 0; tries < 20; tries++) {
			unsigned w = rnd(total);

			for (k = 0; w >= ops[k].weight; k++)
				w -= ops[k].weight;
			if (ops[k].run()) {
				done_by_op[k]++;
				break;
			}
		}
		if (tries == 20)
			op_create();
		trim_outside();
		if (every && pause_us && (i + 1) % every == 0) {
			struct timespec ts = { (time_t)(pause_us / 1000000),
					       (long)(pause_us % 1000000) * 1000 };

			if (verbose)
				fflush(stdout);
			nanosleep(&ts, NULL);
		}
	}
	fflush(stdout);
	fprintf(stderr, "churn: seed %lu, %lu operations:", seed, nops);
	for (k = 0; k < NOPS; k++)
		fprintf(stderr, " %s %lu", ops[k].name, done_by_op[k]);
	fprintf(stderr, "; failed %lu\n", failed);
	return 0;
}
