/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helpers of the conformance program shared by several of its files
 * (declared in conformance.h): cases run on /tmp and on a tmpfs, files and
 * deep paths, checks that print long names shortened, and a mirror of the
 * tree made of the events (API.md "Mirroring a tree").
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conformance.h"

/* ---- cases run on two filesystems ------------------------------------------ */

/* Remove everything below the directory open at dfd, through descriptors
 * (tu_rm_rf goes by absolute path, which a deep chain outgrows).  Errors are
 * ignored: a mount point stays (EBUSY) until tu_teardown unmounts it. */
static void rm_below(int dfd)
{
	DIR *d = fdopendir(dfd);
	struct dirent *e;

	if (!d) {
		close(dfd);
		return;
	}
	while ((e = readdir(d))) {
		int sub;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!unlinkat(dirfd(d), e->d_name, 0))
			continue;
		sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue;
		rm_below(sub);
		unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

int conf_teardown(void **state)
{
	struct tu_fix *f = *state;
	int fd;

	if (f && (fd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0)
		rm_below(fd);
	return tu_teardown(state);
}

int conf_inode_marks(struct tu_fix *f)
{
	const char *max = getenv("NOTIFYX_FANOTIFY_INODE_MAX");

	return notifyx_backend(f->nx) == NOTIFYX_BACKEND_FANOTIFY &&
	       (geteuid() != 0 || (max && strcmp(max, "0")));
}

/* A private tmpfs at dir/fs (root only; the case is skipped otherwise). */
const char *conf_on_tmpfs(struct tu_fix *f)
{
	tu_require_root("mounting a private tmpfs");
	return tu_mount_tmpfs(f, "fs");
}

/* ---- files and paths --------------------------------------------------------- */

int conf_open_dir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		fail_msg("open %s: %s", path, strerror(errno));
	return fd;
}

int conf_down(int dfd, const char *name, int mk)
{
	int fd;

	if (mk && mkdirat(dfd, name, 0755) < 0)
		fail_msg("mkdirat %.20s...: %s", name, strerror(errno));
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		fail_msg("openat %.20s...: %s", name, strerror(errno));
	close(dfd);
	return fd;
}

char *conf_join(const char *a, const char *b)
{
	char *s;

	if (asprintf(&s, "%s%s%s", a, *a ? "/" : "", b) < 0)
		fail_msg("out of memory");
	return s;
}

void conf_make_files(const char *dir, const char *prefix, int n)
{
	for (int i = 0; i < n; i++)
		tu_touch(tu_path(dir, tu_fmt("%s%03d", prefix, i)));
}

void conf_reopen(struct tu_fix *f, uint32_t queue_max)
{
	tu_log_free(&f->log);
	notifyx_close(f->nx);
	f->nx = tu_open(NOTIFYX_NONBLOCK, queue_max);
	if (!f->nx)
		fail_msg("notifyx_open with queue_max %u: %s", queue_max, strerror(errno));
	tu_log_init(&f->log, f->nx);
}

/* ---- checks that print long names shortened ------------------------------------ */

/* path with each run of 8 or more equal characters shortened to "c*N". */
static const char *short_path(const char *path, char *buf, size_t len)
{
	size_t o = 0;

	while (*path && o + 16 < len) {
		size_t n = strspn(path, (char[]){ *path, 0 });

		if (n >= 8)
			o += (size_t)snprintf(buf + o, len - o, "%c*%zu", *path, n);
		else
			o += (size_t)snprintf(buf + o, len - o, "%.*s", (int)n, path);
		path += n;
	}
	buf[o] = 0;
	return buf;
}

/* The events read so far, long names shortened (deep paths are thousands
 * of characters). */
void conf_dump(const struct tu_log *log, const char *title)
{
	size_t i;

	print_error("%s: %zu event(s) read:\n", title, log->n);
	for (i = 0; i < log->n; i++) {
		const struct tu_ev *e = &log->ev[i];
		char p[512], o[512] = "";

		print_error("  [%zu] wd=%d %-13s path=\"%s\"%s%s%s flags=%s cookie=%u error=%d\n", i,
			    e->wd, tu_mask_str(e->mask), short_path(e->path, p, sizeof p),
			    e->old_path ? " old_path=\"" : "",
			    e->old_path ? short_path(e->old_path, o, sizeof o) : "",
			    e->old_path ? "\"" : "", tu_flags_str(e->flags), e->cookie, e->error);
	}
}

/* Exactly one event (wd, mask, path) with (flags & fmask) == fwant; its index. */
size_t conf_once(const struct tu_log *log, int wd, uint32_t mask, const char *path,
		 uint32_t fmask, uint32_t fwant, int line)
{
	size_t c = tu_count(log, wd, mask, path);
	ssize_t i = tu_find(log, 0, wd, mask, path);
	char p[512] = "(any)";

	if (path)
		short_path(path, p, sizeof p);
	if (c != 1 || (log->ev[i].flags & fmask) != fwant) {
		conf_dump(log, "actual");
		if (c != 1)
			fail_msg("line %d: expected exactly one wd=%d %s \"%s\", actual %zu", line, wd,
				 tu_mask_str(mask), p, c);
		fail_msg("line %d: wd=%d %s \"%s\": expected flags %s (of %s), actual %s", line, wd,
			 tu_mask_str(mask), p, tu_flags_str(fwant), tu_flags_str(fmask),
			 tu_flags_str(log->ev[i].flags));
	}
	return (size_t)i;
}

/* Wait for an event (wd, mask, path) at index >= from; its index. */
size_t conf_wait_from(struct tu_log *log, size_t from, int wd, uint32_t mask, const char *path,
		      int line)
{
	ssize_t i = tu_wait_from(log, from, wd, mask, path, TU_WAIT_MS);
	char p[512] = "(any)";

	if (i < 0) {
		if (path)
			short_path(path, p, sizeof p);
		conf_dump(log, "actual");
		fail_msg("line %d: expected within %d ms (from event #%zu): wd=%d %s \"%s\"", line,
			 TU_WAIT_MS, from, wd, tu_mask_str(mask), p);
	}
	return (size_t)i;
}

/* Events #a before #b, both found. */
void conf_before(const struct tu_log *log, ssize_t a, ssize_t b, const char *what, int line)
{
	if (a < 0 || b < 0 || a >= b) {
		conf_dump(log, "actual");
		fail_msg("line %d: expected %s (event #%zd before event #%zd)", line, what, a, b);
	}
}

/* The initial listing of a LIST watch is complete: its SYNC (API.md 0.2)
 * when the header has it, else the handle quiet. */
ssize_t conf_listed(struct tu_log *log, int wd)
{
#ifdef NOTIFYX_SYNC
	return (ssize_t)WAIT(log, wd, NOTIFYX_SYNC, "");
#else
	(void)wd;
	tu_settle(log);
	return (ssize_t)log->n;
#endif
}

void conf_count(const struct tu_log *log, int wd, size_t n, const char *what, int line)
{
	size_t c = tu_count_wd(log, wd);

#ifdef NOTIFYX_SYNC
	c -= tu_count(log, wd, NOTIFYX_SYNC, NULL);
#endif
	if (c != n) {
		conf_dump(log, "actual");
		fail_msg("line %d: wd %d: expected %zu events (%s), actual %zu", line, wd, n, what, c);
	}
}

void conf_no_error(const struct tu_log *log)
{
	ssize_t i = tu_find(log, 0, TU_ANY_WD, NOTIFYX_ERROR, NULL);

	if (i >= 0) {
		conf_dump(log, "actual");
		fail_msg("ERROR (event #%zd, %s)", i, strerrorname_np(log->ev[i].error));
	}
}

/* ---- a mirror of the tree ---------------------------------------------------------- */

struct conf_node *conf_node_new(const char *name, size_t len, int isdir)
{
	struct conf_node *n = calloc(1, sizeof *n);

	assert_non_null(n);
	n->name = strndup(name, len);
	assert_non_null(n->name);
	n->isdir = isdir;
	return n;
}

void conf_node_free(struct conf_node *n)
{
	for (size_t i = 0; i < n->nk; i++)
		conf_node_free(n->kid[i]);
	free(n->kid);
	free(n->name);
	free(n);
}

static struct conf_node *kid(const struct conf_node *n, const char *name, size_t len)
{
	for (size_t i = 0; i < n->nk; i++)
		if (!strncmp(n->kid[i]->name, name, len) && !n->kid[i]->name[len])
			return n->kid[i];
	return NULL;
}

static void attach(struct conf_node *up, struct conf_node *n)
{
	if (up->nk == up->cap) {
		up->cap = up->cap ? 2 * up->cap : 8;
		up->kid = realloc(up->kid, up->cap * sizeof *up->kid);
		assert_non_null(up->kid);
	}
	up->kid[up->nk++] = n;
	n->up = up;
}

static void detach(struct conf_node *n)
{
	struct conf_node *up = n->up;

	for (size_t i = 0; i < up->nk; i++)
		if (up->kid[i] == n) {
			up->kid[i] = up->kid[--up->nk];
			break;
		}
	n->up = NULL;
}

/* The node at path, or NULL.  With parent: the node of the directory that
 * holds path, *last its name in path; lossy: each missing directory on the
 * way made (a non-directory there becomes one). */
static struct conf_node *walk(struct conf_node *root, const char *path, int parent, int lossy,
			      const char **last)
{
	struct conf_node *n = root, *k;

	while (n && *path) {
		size_t len = strcspn(path, "/");

		if (parent && !path[len]) {
			*last = path;
			return n;
		}
		k = kid(n, path, len);
		if (lossy && !k)
			attach(n, k = conf_node_new(path, len, 1));
		if (lossy && !k->isdir)
			k->isdir = 1;
		n = k;
		path += len + !!path[len];
	}
	return n;
}

struct conf_node *conf_node_find(struct conf_node *root, const char *path)
{
	return walk(root, path, 0, 0, NULL);
}

/* What path holds is removed; the root: what it holds. */
static void remove_at(struct conf_node *root, const char *path)
{
	struct conf_node *n = conf_node_find(root, path);

	if (n == root) {
		while (root->nk)
			remove_at(root, root->kid[0]->name);
	} else if (n) {
		detach(n);
		conf_node_free(n);
	}
}

/* n (detached) is at path now, replacing what was there; 1 (n freed) if
 * the directory of path is missing and not lossy. */
static int put_at(struct conf_node *root, struct conf_node *n, const char *path, int lossy)
{
	const char *name;
	struct conf_node *up;

	if (!*path) {
		conf_node_free(n);
		return 1;
	}
	remove_at(root, path);
	up = walk(root, path, 1, lossy, &name);
	if (!up) {
		conf_node_free(n);
		return 1;
	}
	free(n->name);
	n->name = strdup(name);
	assert_non_null(n->name);
	attach(up, n);
	return 0;
}

/* path exists now as a directory or not; what it held stays if its type did. */
static int add_at(struct conf_node *root, const char *path, int isdir, int lossy)
{
	struct conf_node *n = *path ? conf_node_find(root, path) : NULL;

	if (n && n->isdir == isdir)
		return 0;
	return put_at(root, conf_node_new("", 0, isdir), path, lossy);
}

int conf_mirror_apply(struct conf_node *root, const struct tu_ev *e, int lossy)
{
	int isdir = !!(e->flags & NOTIFYX_EVENT_ISDIR);
	struct conf_node *a, *b;

	switch (e->mask) {
	case NOTIFYX_CREATE:
	case NOTIFYX_MOVED_IN:
		return add_at(root, e->path, isdir, lossy);
	case NOTIFYX_DELETE:
	case NOTIFYX_MOVED_OUT:
		remove_at(root, e->path);
		return 0;
	case NOTIFYX_RENAME:
		a = conf_node_find(root, e->old_path);
		if (e->flags & NOTIFYX_EVENT_EXCHANGE) {
			b = conf_node_find(root, e->path);
			if (!a || !b || a == root || b == root)
				return 1;
			detach(a);
			detach(b);
			return put_at(root, a, e->path, lossy) | put_at(root, b, e->old_path, lossy);
		}
		if (a && a != root) {
			detach(a);
			return put_at(root, a, e->path, lossy);
		}
		return add_at(root, e->path, isdir, lossy);
	case NOTIFYX_DELETE_SELF:
		remove_at(root, "");
		return 0;
	default:
		return 0;
	}
}

/* A list of entries (path, directory or not): the tree on disk, or the
 * mirror flattened, to compare. */
struct mlist {
	struct ment {
		char *path;
		int isdir;
	} *e;
	size_t n, cap;
};

static void l_free(struct mlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->e[i].path);
	free(l->e);
	memset(l, 0, sizeof *l);
}

static void l_put(struct mlist *l, const char *path, int isdir)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->e = realloc(l->e, l->cap * sizeof *l->e);
		assert_non_null(l->e);
	}
	l->e[l->n].path = strdup(path);
	assert_non_null(l->e[l->n].path);
	l->e[l->n++].isdir = isdir;
}

/* The mirror below n as a list of paths below rel. */
static void m_flatten(const struct conf_node *n, const char *rel, struct mlist *out)
{
	for (size_t i = 0; i < n->nk; i++) {
		char *p = conf_join(rel, n->kid[i]->name);

		l_put(out, p, n->kid[i]->isdir);
		m_flatten(n->kid[i], p, out);
		free(p);
	}
}

/* The tree below dfd (closed here), names matching skip left out and not
 * entered, into m with paths below rel. */
static void m_scan(struct mlist *m, int dfd, const char *rel, const char *skip)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;

	assert_non_null(d);
	while ((de = readdir(d))) {
		struct stat st;
		char *p;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    (skip && !fnmatch(skip, de->d_name, 0)))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			fail_msg("fstatat %s: %s", de->d_name, strerror(errno));
		p = conf_join(rel, de->d_name);
		l_put(m, p, S_ISDIR(st.st_mode));
		if (S_ISDIR(st.st_mode))
			m_scan(m, conf_down(dup(dirfd(d)), de->d_name, 0), p, skip);
		free(p);
	}
	closedir(d);
}

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct ment *)a)->path, ((const struct ment *)b)->path);
}

size_t conf_mirror_differs(const struct conf_node *root, int dfd, const char *skip,
			   size_t *entries)
{
	struct mlist m = { 0 }, disk = { 0 };
	size_t i = 0, j = 0, bad = 0;

	m_flatten(root, "", &m);
	m_scan(&disk, dfd, "", skip);
	qsort(m.e, m.n, sizeof *m.e, by_path);
	qsort(disk.e, disk.n, sizeof *disk.e, by_path);
	while (i < m.n || j < disk.n) {
		int c = i == m.n ? 1 : j == disk.n ? -1 : strcmp(m.e[i].path, disk.e[j].path);
		const char *what = NULL, *path;
		int isdir;

		if (c < 0) {
			what = "only in the mirror";
			path = m.e[i].path, isdir = m.e[i].isdir;
			i++;
		} else if (c > 0) {
			what = "only on disk";
			path = disk.e[j].path, isdir = disk.e[j].isdir;
			j++;
		} else {
			if (m.e[i].isdir != disk.e[j].isdir)
				what = m.e[i].isdir ? "a directory in the mirror, not on disk"
						    : "a directory on disk, not in the mirror";
			path = m.e[i].path, isdir = disk.e[j].isdir;
			i++, j++;
		}
		if (what && bad++ < 40)
			print_error("  %s: %s%s\n", what, path, isdir ? "/" : "");
	}
	if (entries)
		*entries = disk.n;
	l_free(&m);
	l_free(&disk);
	return bad;
}

void conf_mirror_equals(const struct tu_log *log, int wd, const char *root, const char *skip,
			const char *what)
{
	struct conf_node *mt = conf_node_new("", 0, 1);
	size_t i, bad, anomalies = 0;

	for (i = 0; i < log->n; i++)
		if (log->ev[i].wd == wd)
			anomalies += (size_t)conf_mirror_apply(mt, &log->ev[i], 0);
	if (anomalies) {
		conf_dump(log, "actual");
		fail_msg("%s: %zu events of wd %d could not be applied (their directory was not in "
			 "the mirror, or an exchange's side was missing)", what, anomalies, wd);
	}
	bad = conf_mirror_differs(mt, conf_open_dir(root), skip, NULL);
	conf_node_free(mt);
	if (bad) {
		conf_dump(log, "actual");
		fail_msg("%s: the mirror of wd %d differs from the tree in %zu entries", what, wd, bad);
	}
}
