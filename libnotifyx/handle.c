/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The handle: configuration, backend selection, watches, the rules of event
 * delivery that every backend shares (masks, excludes, ONESHOT, queue_max and
 * OVERFLOW, IGNORED last), and notifyx_read. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nx.h"

uint64_t nx_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int nx_epoll_add(struct notifyx *nx, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	return epoll_ctl(nx->epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* The forks between the first notifyx_open of the process's line and now:
 * a child of fork(2) counts one more than its parent did (pthread_atfork),
 * so that a handle knows it was inherited without a getpid() system call in
 * every read.  Where the handler could not be registered, getpid(). */
static unsigned long forks;
static bool forks_by_pid;
static pthread_once_t forks_once = PTHREAD_ONCE_INIT;

static void count_fork(void)
{
	forks++;
}

static void count_forks(void)
{
	forks_by_pid = pthread_atfork(NULL, NULL, count_fork) != 0;
}

static bool inherited(const struct notifyx *nx)
{
	return forks_by_pid ? nx->pid != getpid() : nx->forks != forks;
}

/* After fork, only notifyx_close may touch an inherited handle. */
static bool usable(const struct notifyx *nx)
{
	if (!nx) {
		errno = EINVAL;
		return false;
	}
	if (inherited(nx)) {
		errno = ECHILD;
		return false;
	}
	return true;
}

/* Keeps the handle's descriptor readable exactly while events wait in the
 * library's queue or the backend has work to do at once (nx->again; the
 * kernel's own descriptors signal what is still there).
 * Costs a system call only when that state changes. */
static void sync_ready(struct notifyx *nx)
{
	bool want = nx->queue.count > 0 || nx->again;
	uint64_t v = 1;

	if (want == nx->ready)
		return;
	if (want ? write(nx->readyfd, &v, sizeof(v)) == sizeof(v)
		 : read(nx->readyfd, &v, sizeof(v)) == sizeof(v))
		nx->ready = want;
}

static void detach(struct notifyx *nx, struct nx_watch *w)
{
	w->detach_due = false;
	nx->ops->rm_watch(nx, w);
	nx_rescan_free(w);
}

/* Translates what the kernel has, then repairs what losses call for.  The
 * watches that ended meanwhile are detached after, not in the middle of
 * the backend's dispatch (see nx_end_watch). */
static int process(struct notifyx *nx, unsigned flags)
{
	struct nx_watch *w;
	size_t pos = 0;
	int ret, err;

	nx->dispatching = true;
	nx->again = false;
	ret = nx->ops->process(nx, flags);
	err = errno;
	nx_rescan_run(nx);
	nx->dispatching = false;
	if (nx->detaches_due) {
		nx->detaches_due = false;
		while (nx_map_next(&nx->watches, &pos, NULL, (void **)&w))
			if (w->detach_due)
				detach(nx, w);
	}
	errno = err;
	return ret;
}

/* ---- opening and closing ---- */

static int read_config(struct notifyx_config *out, const struct notifyx_config *in)
{
	memset(out, 0, sizeof(*out));
	if (!in)
		return 0;
	if (in->size < sizeof(*out)) {
		errno = EINVAL; /* below version 0: nothing smaller was ever released */
		return -1;
	}
	for (size_t i = sizeof(*out); i < in->size; i++) {
		if (((const unsigned char *)in)[i]) {
			errno = E2BIG;
			return -1;
		}
	}
	memcpy(out, in, sizeof(*out));
	if ((out->backend != NOTIFYX_BACKEND_AUTO && !nx_backend(out->backend)) ||
	    (out->flags & ~NOTIFYX_NONBLOCK)) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

/* NOTIFYX_BACKEND chooses the backend when the application left it to us. */
static int backend_from_env(uint32_t *backend)
{
	const char *s = secure_getenv("NOTIFYX_BACKEND");

	if (!s || !*s || !strcmp(s, "auto"))
		return 0;
	for (uint32_t b = 1; nx_backend(b); b++) { /* the ids have no gap */
		if (!strcmp(s, nx_backend(b)->name)) {
			*backend = b;
			return 0;
		}
	}
	errno = EINVAL;
	return -1;
}

static int start_backend(struct notifyx *nx, const struct nx_backend *ops,
			 const struct notifyx_config *cfg)
{
	nx->ops = ops;
	if (nx->ops->open(nx, cfg) < 0) {
		nx->ops = NULL;
		return -1;
	}
	return 0;
}

static void free_handle(struct notifyx *nx)
{
	if (nx->epfd >= 0)
		close(nx->epfd);
	if (nx->readyfd >= 0)
		close(nx->readyfd);
	free(nx);
}

NX_EXPORT struct notifyx *notifyx_open(const struct notifyx_config *config)
{
	struct notifyx_config cfg;
	struct notifyx *nx;
	int err = 0;

	if (read_config(&cfg, config) < 0)
		return NULL;
	if (cfg.backend == NOTIFYX_BACKEND_AUTO && backend_from_env(&cfg.backend) < 0)
		return NULL;
	if (!(nx = calloc(1, sizeof(*nx))))
		return NULL;
	nx->readyfd = -1;
	pthread_once(&forks_once, count_forks);
	nx->pid = getpid();
	nx->forks = forks;
	nx->flags = cfg.flags;
	nx->queue_max = cfg.queue_max ? cfg.queue_max : NX_DEFAULT_QUEUE_MAX;
	if (!cfg.poll_interval_ms)
		cfg.poll_interval_ms = NX_DEFAULT_POLL_MS;
	nx->next_wd = 1;
	nx->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (nx->epfd < 0 || (nx->readyfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
	    nx_epoll_add(nx, nx->readyfd) < 0)
		goto fail;

	if (cfg.backend != NOTIFYX_BACKEND_AUTO) {
		if (start_backend(nx, nx_backend(cfg.backend), &cfg) < 0)
			goto fail;
		return nx;
	}
	/* When none starts, the errno is the last one's. */
	for (size_t i = 0; nx_backend_auto(i); i++) {
		if (start_backend(nx, nx_backend_auto(i), &cfg) == 0)
			return nx;
	}
fail:
	err = errno;
	free_handle(nx);
	errno = err;
	return NULL;
}

static void free_watch(struct nx_watch *w)
{
	nx_rescan_free(w);
	free(w->path);
	free(w->abspath);
	free(w);
}

NX_EXPORT int notifyx_close(struct notifyx *nx)
{
	struct nx_watch *w;
	size_t pos = 0;

	if (!nx)
		return 0;
	nx->forked = inherited(nx);
	nx->ops->close(nx); /* releases every kernel object and every node's kref */
	while (nx_map_next(&nx->watches, &pos, NULL, (void **)&w)) {
		if (w->root)
			nx_node_free_tree(&nx->paths, w->root, NULL, NULL);
		free_watch(w);
	}
	nx_map_free(&nx->watches);
	nx_paths_free(&nx->paths);
	nx_queue_clear(&nx->queue);
	nx_queue_clear(&nx->stage);
	for (uint32_t i = 0; i < nx->nexclude; i++)
		free(nx->exclude[i]);
	free(nx->exclude);
	free_handle(nx);
	return 0;
}

NX_EXPORT int notifyx_fd(const struct notifyx *nx)
{
	if (!usable(nx))
		return -1;
	return nx->epfd;
}

NX_EXPORT uint32_t notifyx_backend(const struct notifyx *nx)
{
	return nx ? nx->ops->id : 0;
}

NX_EXPORT uint32_t notifyx_supported_events(const struct notifyx *nx)
{
	return nx ? nx->ops->supported(nx) : 0;
}

/* ---- delivering events ---- */

bool nx_match_exclude(char *const *patterns, uint32_t n, const char *path, const char *name)
{
	for (uint32_t i = 0; i < n; i++) {
		const char *p = patterns[i];
		if (strchr(p, '/') ? !fnmatch(p, path, FNM_PATHNAME) : !fnmatch(p, name, 0))
			return true;
	}
	return false;
}

bool nx_excluded(const struct notifyx *nx, const struct nx_watch *w, const char *path,
		 const char *name)
{
	return nx_match_exclude(nx->exclude, w->nexclude, path, name);
}

static bool path_excluded(const struct notifyx *nx, const struct nx_watch *w, const char *path,
			  size_t len)
{
	if (!w->nexclude || !len)
		return false;
	const char *slash = strrchr(path, '/');
	return nx_excluded(nx, w, path, slash ? slash + 1 : path);
}

static struct nx_queue *queue_of(struct notifyx *nx, const struct nx_watch *w)
{
	return w->staging ? &nx->stage : &nx->queue;
}

void nx_lost(struct notifyx *nx, struct nx_watch *w)
{
	/* While the backend repairs, what it loses is on the disk that the
	 * repair reads next. */
	if (w->ended || w->quiet || w->rebuild)
		return;
	w->losses++;
	if (w->rescan) {
		/* A loss before the repair's SYNC is queued starts it over,
		 * with no second OVERFLOW (API.md), once the first is queued. */
		bool pending = (w->repair_due || w->repairing) && !w->lost;
		w->repair_due = nx->repairs_due = true;
		if (pending)
			return;
	}
	if (w->overflowed)
		return;
	/* Queued past queue_max: one OVERFLOW per watch is what limits a run of losses. */
	if (nx_queue_push(queue_of(nx, w), w->wd, NOTIFYX_OVERFLOW, nx->ops->event_flags, 0, 0, "",
			  0, NULL, 0))
		w->overflowed = true;
	/* No memory for the OVERFLOW either: it goes before the next event. */
	w->lost = !w->overflowed;
}

void nx_lost_all(struct notifyx *nx)
{
	struct nx_watch *w;
	size_t pos = 0;

	while (nx_map_next(&nx->watches, &pos, NULL, (void **)&w))
		nx_lost(nx, w);
}

void nx_end_watch(struct notifyx *nx, struct nx_watch *w)
{
	if (w->ended)
		return;
	w->ended = true;
	if (nx->dispatching)
		w->detach_due = nx->detaches_due = true;
	else
		detach(nx, w);
	/* IGNORED is always queued, whatever the limit: it is the last event. */
	while (!nx_queue_push(queue_of(nx, w), w->wd, NOTIFYX_IGNORED, nx->ops->event_flags, 0, 0,
			      "", 0, NULL, 0)) {
		/* Out of memory: nothing sensible but to wait for memory. */
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
}

bool nx_emit(struct notifyx *nx, struct nx_watch *w, uint32_t mask, uint32_t flags,
	     uint32_t cookie, int32_t error, const char *path, size_t path_len,
	     const char *old, size_t old_len)
{
	struct nx_queue *q = queue_of(nx, w);

	if (w->ended || (w->quiet && (mask & NX_ENTRY_EVENTS)))
		return false;
	if (mask == NOTIFYX_RENAME && w->nexclude) {
		bool new_out = path_excluded(nx, w, path, path_len);
		bool old_out = path_excluded(nx, w, old, old_len);
		if (new_out && old_out)
			return false;
		if (new_out) { /* seen from the watch, the entry left */
			path = old;
			path_len = old_len;
		}
		if (new_out || old_out) {
			mask = new_out ? NOTIFYX_MOVED_OUT : NOTIFYX_MOVED_IN;
			flags &= ~NOTIFYX_EVENT_EXCHANGE;
			old = NULL;
			old_len = 0;
			cookie = 0;
		}
	} else if (path_excluded(nx, w, path, path_len)) {
		return false;
	}
	if (w->rebuild && (mask & NX_ENTRY_EVENTS)) {
		/* A listing for the RESCAN model alone. */
		nx_rescan_apply(nx, w, mask, flags, path, path_len, old, old_len);
		return false;
	}
	if ((mask & NOTIFYX_ALL_EVENTS) && !(mask & w->events))
		return false;
	if (w->rescan && !w->repairing &&
	    !nx_rescan_applies(w, mask, flags, path, path_len, old, old_len)) {
		nx_lost(nx, w); /* lost track: the repair mends it (rescan.c) */
		return false;
	}
	/* A RESCAN watch whose root is gone cannot be repaired: what ends it
	 * is never lost. */
	if (!w->staging && q->count - q->exempt >= nx->queue_max &&
	    !(w->rescan && mask == NOTIFYX_DELETE_SELF)) {
		nx_lost(nx, w);
		return false;
	}
	flags |= nx->ops->event_flags;
	if (w->lost) {
		nx_lost(nx, w);
		if (w->lost)
			return false;
	}
	if (!nx_queue_push(q, w->wd, mask, flags, cookie, error, path, path_len, old, old_len)) {
		nx_lost(nx, w);
		return false;
	}
	w->overflowed = false;
	if (w->rescan && !w->repairing)
		nx_rescan_apply(nx, w, mask, flags, path, path_len, old, old_len);
	if ((w->flags & NOTIFYX_WATCH_ONESHOT) && (mask & NOTIFYX_ALL_EVENTS))
		nx_end_watch(nx, w);
	return true;
}

/* ---- watches ---- */

static char *absolute(const char *path, size_t *len)
{
	char *abs, *cwd;

	if (path[0] == '/') {
		abs = strdup(path);
	} else {
		if (!(cwd = getcwd(NULL, 0)))
			return NULL;
		abs = malloc(strlen(cwd) + 1 + strlen(path) + 1);
		if (abs)
			strcat(strcat(strcpy(abs, cwd), "/"), path);
		free(cwd);
	}
	if (!abs) {
		errno = ENOMEM;
		return NULL;
	}
	*len = strlen(abs);
	/* Trailing slashes would make "root/" + "/" + name. */
	while (*len > 1 && abs[*len - 1] == '/')
		abs[--*len] = '\0';
	return abs;
}

static int check_watch_args(const struct notifyx *nx, const char *path, uint32_t events,
			    uint32_t flags)
{
	if (!path || !events || (events & ~NOTIFYX_ALL_EVENTS) || (flags & ~NX_WATCH_FLAGS))
		return EINVAL;
	if ((flags & NOTIFYX_WATCH_LIST) &&
	    (!(events & NOTIFYX_CREATE) || (flags & NOTIFYX_WATCH_ONESHOT)))
		return EINVAL;
	if ((flags & NOTIFYX_WATCH_RESCAN) && (flags & NOTIFYX_WATCH_ONESHOT))
		return EINVAL;
	if (events & ~nx->ops->supported(nx))
		return EOPNOTSUPP;
	if (nx->next_wd == INT32_MAX)
		return ENOSPC; /* wds are never reused */
	return 0;
}

NX_EXPORT int notifyx_add_watch(struct notifyx *nx, const char *path, uint32_t events,
				uint32_t flags)
{
	struct nx_watch *w;
	struct stat st;
	int err, ret;

	if (!usable(nx))
		return -1;
	if ((err = check_watch_args(nx, path, events, flags))) {
		errno = err;
		return -1;
	}
	if (((flags & NOTIFYX_WATCH_NOFOLLOW) ? lstat(path, &st) : stat(path, &st)) < 0)
		return -1;
	if (!S_ISDIR(st.st_mode) &&
	    (flags & (NOTIFYX_WATCH_RECURSIVE | NOTIFYX_WATCH_ONLYDIR | NOTIFYX_WATCH_LIST |
		      NOTIFYX_WATCH_RESCAN))) {
		errno = ENOTDIR;
		return -1;
	}
	/* Events already queued in the kernel happened before this watch:
	 * translate them now, so a shared kernel watch cannot hand them to it.
	 * A failure to read them concerns notifyx_read, which will meet it. */
	process(nx, 0);
	if (!(w = calloc(1, sizeof(*w)))) {
		err = errno;
		sync_ready(nx);
		errno = err;
		return -1;
	}
	w->wd = nx->next_wd;
	w->events = events;
	w->flags = flags;
	w->nexclude = nx->nexclude;
	w->staging = true;
	w->dev = st.st_dev;
	if (!(w->path = strdup(path)) || !(w->abspath = absolute(path, &w->abspath_len)) ||
	    !(w->root = nx_node_new_root(w)) || nx_map_put(&nx->watches, (uint64_t)w->wd, w) < 0) {
		err = ENOMEM;
		goto fail;
	}
	/* RESCAN's model is filled by the backend's listing (for the model
	 * alone when the application did not ask for one). */
	if ((flags & NOTIFYX_WATCH_RESCAN) && nx_rescan_start(nx, w) < 0) {
		err = errno;
		nx_map_del(&nx->watches, (uint64_t)w->wd);
		goto fail;
	}
	w->rebuild = (flags & NOTIFYX_WATCH_RESCAN) && !(flags & NOTIFYX_WATCH_LIST);
	if (w->rebuild)
		w->flags |= NOTIFYX_WATCH_LIST;
	ret = nx->ops->add_watch(nx, w);
	w->flags = flags;
	w->rebuild = false;
	if (ret < 0) {
		err = errno;
		nx_map_del(&nx->watches, (uint64_t)w->wd);
		goto fail;
	}
	/* The listing is made: the application's copy is complete (API.md). */
	if (flags & NOTIFYX_WATCH_LIST)
		nx_emit(nx, w, NOTIFYX_SYNC, 0, 0, 0, "", 0, NULL, 0);
	w->staging = false;
	nx_queue_splice(&nx->queue, &nx->stage, true);
	nx->next_wd++;
	sync_ready(nx);
	return w->wd;
fail:
	nx_queue_clear(&nx->stage);
	if (w->root)
		nx_node_free_tree(&nx->paths, w->root, NULL, NULL);
	free_watch(w);
	sync_ready(nx); /* what process() queued above must stay visible */
	errno = err;
	return -1;
}

NX_EXPORT int notifyx_rm_watch(struct notifyx *nx, int wd)
{
	struct nx_watch *w;

	if (!usable(nx))
		return -1;
	w = wd > 0 ? nx_map_get(&nx->watches, (uint64_t)wd) : NULL;
	if (!w || w->ended) {
		errno = EINVAL;
		return -1;
	}
	/* What the kernel already queued for this watch stays readable,
	 * including a move half that would otherwise wait for its pair. */
	process(nx, NX_PROCESS_FLUSH);
	if (w->ended) { /* it ended by itself in what was queued */
		sync_ready(nx);
		errno = EINVAL;
		return -1;
	}
	nx_end_watch(nx, w);
	sync_ready(nx);
	return 0;
}

NX_EXPORT const char *notifyx_watch_path(const struct notifyx *nx, int wd)
{
	const struct nx_watch *w = NULL;

	if (!usable(nx))
		return NULL;
	if (wd > 0)
		w = nx_map_get(&nx->watches, (uint64_t)wd);
	if (!w) {
		errno = EINVAL;
		return NULL;
	}
	return w->path;
}

NX_EXPORT int notifyx_exclude(struct notifyx *nx, const char *pattern)
{
	char **v, *copy;

	if (!usable(nx))
		return -1;
	if (!pattern || !*pattern) {
		errno = EINVAL;
		return -1;
	}
	if (!(copy = strdup(pattern)))
		return -1;
	if (!(v = realloc(nx->exclude, (nx->nexclude + 1) * sizeof(*v)))) {
		free(copy);
		return -1;
	}
	v[nx->nexclude++] = copy;
	nx->exclude = v;
	return 0;
}

/* ---- reading ---- */

/* Copies whole records that fit into buf; frees a watch once its IGNORED
 * has been handed out. */
static size_t copy_out(struct notifyx *nx, char *buf, size_t len)
{
	const struct notifyx_event *ev;
	size_t done = 0;

	while ((ev = nx_queue_peek(&nx->queue)) && ev->size <= len - done) {
		memcpy(buf + done, ev, ev->size);
		done += ev->size;
		if (ev->mask == NOTIFYX_IGNORED) {
			struct nx_watch *w = nx_map_del(&nx->watches, (uint64_t)ev->wd);
			if (w) {
				if (w->root)
					nx_node_free_tree(&nx->paths, w->root, NULL, NULL);
				free_watch(w);
			}
		}
		nx_queue_pop(&nx->queue);
	}
	return done;
}

/* A read never waits when the handle has NOTIFYX_NONBLOCK or when the
 * application made notifyx_fd non-blocking itself (libuv's uv_poll_init
 * does): its event loop expects EAGAIN after a spurious readiness, not a
 * wait.  The flag is asked for at each read that would wait, since the
 * application may set or clear it at any time; one fcntl is cheap beside the
 * wait it avoids. */
static bool nonblocking(const struct notifyx *nx)
{
	int fl;

	if (nx->flags & NOTIFYX_NONBLOCK)
		return true;
	fl = fcntl(nx->epfd, F_GETFL);
	return fl >= 0 && (fl & O_NONBLOCK);
}

NX_EXPORT ssize_t notifyx_read(struct notifyx *nx, void *buf, size_t len)
{
	struct pollfd pfd = { .fd = -1, .events = POLLIN };
	bool block;
	sigset_t mask;
	size_t done;
	int err;

	if (!usable(nx))
		return -1;
	pfd.fd = nx->epfd;
	if (!buf || !len) {
		errno = EINVAL;
		return -1;
	}
	/* A blocking read processes with signals blocked and waits with the
	 * caller's mask (as pselect does), so a signal that comes while it
	 * processes still ends the wait: like poll(2), a caught signal ends a
	 * blocking read with EINTR. */
	block = !nx->queue.count && !nonblocking(nx);
	if (block) {
		sigset_t all;
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, &mask);
	}
	while (!nx->queue.count) {
		/* A blocking read waits first, as the application's poll(2)
		 * would: what process() can do is announced by notifyx_fd (the
		 * kernel's descriptors, the timers of holds and scans) or by
		 * nx->again, and the read before left the kernel queue empty, so
		 * looking first would be a system call for nothing.
		 * ppoll(2), not epoll_pwait(2): a caught signal ends the wait
		 * with EINTR, but a stop and SIGCONT (job control, a debugger)
		 * does not, where epoll_wait would fail with EINTR (signal(7)).
		 * An EINTR from the backend's own signals (own_signals) is not one. */
		if (block && !nx->again) {
			unsigned long own = nx->ops->own_signals ? nx->ops->own_signals() : 0;
			if (ppoll(&pfd, 1, NULL, &mask) < 0 && errno != EAGAIN &&
			    !(errno == EINTR && nx->ops->own_signals && nx->ops->own_signals() != own))
				goto fail;
		}
		if (process(nx, 0) < 0 && !nx->queue.count)
			goto fail;
		if (nx->queue.count)
			break;
		sync_ready(nx);
		if (!block) {
			errno = EAGAIN;
			return -1;
		}
	}
	if (block)
		pthread_sigmask(SIG_SETMASK, &mask, NULL);
	done = copy_out(nx, buf, len);
	sync_ready(nx);
	if (!done) {
		errno = EINVAL; /* the next event does not fit in len */
		return -1;
	}
	return (ssize_t)done;
fail:
	err = errno;
	if (block)
		pthread_sigmask(SIG_SETMASK, &mask, NULL);
	errno = err;
	return -1;
}
