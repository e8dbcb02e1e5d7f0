/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * dnotify's signal routing (see dnsig.h for the contract).
 *
 * What the signal handlers read, and how it is kept valid without locks:
 * - fd -> slot: a three-level radix table (11 + 10 + 10 bits cover every
 *   non-negative int).  Nodes are allocated under the mutex and published
 *   with atomic stores; they are freed only when the last channel closes.
 * - slot -> channel: an atomic pointer, NULL when the fd is not watched.
 * - the list of channels, for SIGIO: singly linked through atomic pointers.
 * A handler counts itself in `active` before it loads any of these, and
 * whoever frees a channel or a table node unpublishes it first, then waits
 * until `active` is 0.  With sequentially consistent atomics a handler
 * either was counted before that check (and is waited for) or loads after
 * the unpublishing (and finds NULL), so nothing it reads is freed under it.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "dnsig.h"

#define DN_EVENTS (DN_ACCESS | DN_MODIFY | DN_CREATE | DN_DELETE | DN_RENAME | DN_ATTRIB)

#define LEAF_BITS 10
#define MID_BITS 10
#define TOP_BITS 11 /* 11 + 10 + 10 = 31 bits: every non-negative int */

struct slot {
	_Atomic(struct nx_dnsig *) chan; /* the owner, NULL when not watched */
	atomic_bool pending;             /* the fd is in chan's pipe, not drained yet */
	unsigned idx;                    /* its place in chan->fds (under the mutex) */
};

struct leaf {
	struct slot s[1u << LEAF_BITS];
};

struct mid {
	_Atomic(struct leaf *) l[1u << MID_BITS];
};

struct nx_dnsig {
	_Atomic(struct nx_dnsig *) next; /* the list of channels, for SIGIO */
	atomic_bool overflow;            /* signals were lost since the last drain */
	int rfd, wfd;                    /* the pipe: rfd is polled, handlers write wfd */
	int sig;
	pid_t pid;                       /* another pid: we are a forked child */
	int pipe_size;                   /* bytes the pipe holds */
	int *fds;                        /* the watched descriptors */
	unsigned nfds, cap;
};

/* A mark written to a pipe by the SIGIO handler: wakes the reader. */
#define MARK_OVERFLOW (-1)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Read by the handlers. */
static _Atomic(struct mid *) top[1u << TOP_BITS];
static _Atomic(struct nx_dnsig *) channels;
static atomic_uint active; /* handlers between their first and last load */
static struct sigaction sigio_prev; /* written only while SIGIO is not ours */
/* Written by the handlers, read by the thread they interrupted: volatile, so
 * each access is one load or store (a long is wider than sig_atomic_t). */
static __thread volatile unsigned long thread_hits __attribute__((tls_model("initial-exec")));

/* Under the mutex. */
static unsigned nchannels;
static unsigned sig_users[_NSIG];

/* ---- the radix table ---- */

/* The slot of fd, or NULL when its leaf does not exist.  Async-signal-safe. */
static struct slot *slot_peek(int fd)
{
	unsigned u = (unsigned)fd;
	struct mid *m;
	struct leaf *l;

	if (fd < 0 || !(m = atomic_load(&top[u >> (MID_BITS + LEAF_BITS)])))
		return NULL;
	if (!(l = atomic_load(&m->l[(u >> LEAF_BITS) & ((1u << MID_BITS) - 1)])))
		return NULL;
	return &l->s[u & ((1u << LEAF_BITS) - 1)];
}

/* The slot of fd, allocating its nodes (under the mutex); NULL with ENOMEM. */
static struct slot *slot_get(int fd)
{
	unsigned u = (unsigned)fd;
	_Atomic(struct mid *) *mp = &top[u >> (MID_BITS + LEAF_BITS)];
	_Atomic(struct leaf *) *lp;
	struct mid *m = atomic_load(mp);
	struct leaf *l;

	if (!m) {
		if (!(m = calloc(1, sizeof(*m))))
			return NULL;
		atomic_store(mp, m);
	}
	lp = &m->l[(u >> LEAF_BITS) & ((1u << MID_BITS) - 1)];
	if (!(l = atomic_load(lp))) {
		if (!(l = calloc(1, sizeof(*l))))
			return NULL;
		atomic_store(lp, l);
	}
	return &l->s[u & ((1u << LEAF_BITS) - 1)];
}

/* Waits until no handler may still hold what was unpublished before. */
static void wait_handlers(void)
{
	while (atomic_load(&active))
		sched_yield();
}

/* Frees the whole table once no channel is left (under the mutex). */
static void table_free(void)
{
	struct mid *mids[1u << TOP_BITS];

	for (size_t i = 0; i < (1u << TOP_BITS); i++)
		mids[i] = atomic_exchange(&top[i], NULL);
	wait_handlers();
	for (size_t i = 0; i < (1u << TOP_BITS); i++) {
		if (!mids[i])
			continue;
		for (size_t j = 0; j < (1u << MID_BITS); j++)
			free(atomic_load(&mids[i]->l[j]));
		free(mids[i]);
	}
}

/* ---- the signal handlers: async-signal-safe, errno preserved ---- */

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	struct nx_dnsig *c;
	struct slot *s;
	int fd = si->si_fd;

	thread_hits++;
	atomic_fetch_add(&active, 1);
	/* Only the kernel's dnotify reports (POLL_MSG) carry a directory. */
	if (si->si_code == POLL_MSG && (s = slot_peek(fd)) && (c = atomic_load(&s->chan)) &&
	    !atomic_exchange(&s->pending, true)) {
		if (write(c->wfd, &fd, sizeof(fd)) != sizeof(fd)) {
			/* The pipe is full: the reader rescans everything. */
			atomic_store(&s->pending, false);
			atomic_store(&c->overflow, true);
		}
	}
	atomic_fetch_sub(&active, 1);
	errno = saved;
}

static void on_sigio(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	int mark = MARK_OVERFLOW;
	pid_t me = getpid();
	struct sigaction prev;

	atomic_fetch_add(&active, 1);
	for (struct nx_dnsig *c = atomic_load(&channels); c; c = atomic_load(&c->next)) {
		/* A forked child's inherited channels share their pipe with the
		 * parent, whose signals these are not. */
		if (c->pid == me && !atomic_exchange(&c->overflow, true)) {
			/* Failing is fine: a full pipe is readable already. */
			ssize_t r = write(c->wfd, &mark, sizeof(mark));

			(void)r;
		}
	}
	prev = sigio_prev;
	atomic_fetch_sub(&active, 1);
	errno = saved;

	/* The application's own SIGIO handler, called as the kernel would: with
	 * its mask added and SIGIO blocked unless SA_NODEFER, on its alternate
	 * stack if it asked (install gave ours its SA_ONSTACK).  Outside the
	 * counted section, since it may never return (longjmp). */
	if (prev.sa_handler == SIG_DFL || prev.sa_handler == SIG_IGN) {
		thread_hits++;
		return;
	}
	if (uc) {
		sigset_t mask = ((ucontext_t *)uc)->uc_sigmask;

		for (int s = 1; s < _NSIG; s++) {
			if (sigismember(&prev.sa_mask, s) == 1)
				sigaddset(&mask, s);
		}
		if (!(prev.sa_flags & SA_NODEFER))
			sigaddset(&mask, SIGIO);
		pthread_sigmask(SIG_SETMASK, &mask, NULL);
		/* sigaddset fails with EINVAL on glibc's internal signals,
		 * which a raw mask may hold. */
		errno = saved;
	}
	if (prev.sa_flags & SA_SIGINFO)
		prev.sa_sigaction(sig, si, uc);
	else
		prev.sa_handler(sig);
}

/* ---- dispositions (under the mutex) ---- */

static bool is_ours(const struct sigaction *sa, void (*fn)(int, siginfo_t *, void *))
{
	return (sa->sa_flags & SA_SIGINFO) && sa->sa_sigaction == fn;
}

/* flags: SA_ONSTACK, or 0. */
static int install(int sig, void (*fn)(int, siginfo_t *, void *), int flags)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fn;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | flags;
	/* Nothing of the application's runs on top of the library's handlers,
	 * so they are never held up in the middle (nx_dnsig_close waits for
	 * them). */
	sigfillset(&sa.sa_mask);
	return sigaction(sig, &sa, NULL);
}

/* Puts back prev on sig if the library's handler fn is still there. */
static void restore(int sig, void (*fn)(int, siginfo_t *, void *), const struct sigaction *prev)
{
	struct sigaction cur, ign;

	if (sigaction(sig, NULL, &cur) < 0 || !is_ours(&cur, fn))
		return;
	if (!(prev->sa_flags & SA_SIGINFO) && prev->sa_handler == SIG_DFL) {
		/* Discards such signals still pending, which SIG_DFL would
		 * turn into the death of the process. */
		memset(&ign, 0, sizeof(ign));
		ign.sa_handler = SIG_IGN;
		sigaction(sig, &ign, NULL);
	}
	sigaction(sig, prev, NULL);
}

static const struct sigaction sig_dfl = { .sa_handler = SIG_DFL };

/* ---- fork ---- */

static void atfork_prepare(void)
{
	pthread_mutex_lock(&lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&lock);
}

static void atfork_child(void)
{
	/* Handlers that were running in other threads do not exist here. */
	atomic_store(&active, 0);
	pthread_mutex_unlock(&lock);
}

static void init_once(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* ---- the interface ---- */

int nx_dnsig_default_signal(void)
{
	return SIGRTMIN + NX_DNSIG_DEFAULT_OFFSET;
}

int nx_dnsig_probe(void)
{
	int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int ret = 0;

	if (fd < 0)
		return -1;
	/* An empty mask only cancels (nothing here) and registers nothing, so
	 * no signal can come of it; a disabled or missing dnotify is EINVAL. */
	if (fcntl(fd, F_NOTIFY, 0) < 0) {
		errno = errno == EINVAL ? ENOSYS : errno;
		ret = -1;
	}
	close(fd);
	return ret;
}

int nx_dnsig_open(int sig, struct nx_dnsig **out)
{
	struct sigaction cur;
	struct nx_dnsig *c;
	int p[2], err;

	if (!sig)
		sig = nx_dnsig_default_signal();
	if (sig < SIGRTMIN || sig > SIGRTMAX || !out) {
		errno = EINVAL;
		return -1;
	}
	pthread_once(&once, init_once);
	if (!(c = calloc(1, sizeof(*c))))
		return -1;
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
		free(c);
		return -1;
	}
	c->rfd = p[0];
	c->wfd = p[1];
	c->sig = sig;
	c->pid = getpid();
	c->pipe_size = fcntl(c->wfd, F_GETPIPE_SZ);

	pthread_mutex_lock(&lock);
	if (sigaction(sig, NULL, &cur) < 0)
		goto fail;
	if (!is_ours(&cur, on_signal)) {
		if ((cur.sa_flags & SA_SIGINFO) || cur.sa_handler != SIG_DFL) {
			errno = EBUSY; /* the application's handler, or SIG_IGN */
			goto fail;
		}
		if (install(sig, on_signal, 0) < 0)
			goto fail;
	}
	if (!nchannels) {
		/* Set before the handler can run.  Ours already (an application
		 * put back what it saved while a channel was open): calling it
		 * would loop. */
		if (sigaction(SIGIO, NULL, &cur) < 0)
			goto fail_sig;
		sigio_prev = is_ours(&cur, on_sigio) ? sig_dfl : cur;
		/* The application's handler runs on top of ours: on the stack
		 * it chose (SA_RESTART is ours already). */
		if (install(SIGIO, on_sigio, sigio_prev.sa_flags & SA_ONSTACK) < 0)
			goto fail_sig;
	}
	sig_users[sig]++;
	nchannels++;
	atomic_store(&c->next, atomic_load(&channels));
	atomic_store(&channels, c);
	pthread_mutex_unlock(&lock);
	*out = c;
	return 0;
fail_sig:
	err = errno;
	if (!sig_users[sig])
		restore(sig, on_signal, &sig_dfl);
	errno = err;
fail:
	err = errno;
	pthread_mutex_unlock(&lock);
	close(c->rfd);
	close(c->wfd);
	free(c);
	errno = err;
	return -1;
}

int nx_dnsig_fd(const struct nx_dnsig *c)
{
	return c->rfd;
}

int nx_dnsig_signal(const struct nx_dnsig *c)
{
	return c->sig;
}

/* Takes the slot of fd (owned by c) out of c's list (under the mutex). */
static void forget(struct nx_dnsig *c, struct slot *s)
{
	unsigned i = s->idx;

	c->fds[i] = c->fds[--c->nfds];
	if (i < c->nfds)
		slot_peek(c->fds[i])->idx = i;
	atomic_store(&s->chan, NULL);
}

/* Each directory is in the pipe at most once: grow it to hold them all, with
 * room for stale entries and marks.  Failing is harmless (an overflow). */
static void grow_pipe(struct nx_dnsig *c)
{
	long need = ((long)c->nfds + 64) * 2 * (long)sizeof(int);
	int r;

	if (c->pipe_size <= 0 || need <= c->pipe_size || c->pipe_size >= INT_MAX / 2)
		return;
	if ((r = fcntl(c->wfd, F_SETPIPE_SZ, c->pipe_size * 2)) > 0)
		c->pipe_size = r;
}

int nx_dnsig_watch(struct nx_dnsig *c, int dfd, unsigned long dn_events)
{
	struct nx_dnsig *owner;
	struct slot *s;
	int err;

	if (dfd < 0 || !dn_events || (dn_events & ~(unsigned long)DN_EVENTS)) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&lock);
	if (!(s = slot_get(dfd)))
		goto fail;
	owner = atomic_load(&s->chan);
	if (owner && owner != c) {
		errno = EBUSY;
		goto fail;
	}
	if (!owner) {
		if (c->nfds == c->cap) {
			unsigned cap = c->cap ? 2 * c->cap : 16;
			int *fds = realloc(c->fds, cap * sizeof(*fds));

			if (!fds)
				goto fail;
			c->fds = fds;
			c->cap = cap;
		}
		s->idx = c->nfds;
		c->fds[c->nfds++] = dfd;
		/* A stale flag of an earlier owner of this number would hide
		 * this directory's signals. */
		atomic_store(&s->pending, false);
		atomic_store(&s->chan, c);
	}
	/* The signal first: a report before it would be a plain SIGIO. */
	if (fcntl(dfd, F_SETSIG, c->sig) < 0 ||
	    fcntl(dfd, F_NOTIFY, (unsigned long)(dn_events | DN_MULTISHOT)) < 0) {
		err = errno;
		if (!owner)
			forget(c, s);
		errno = err;
		goto fail;
	}
	grow_pipe(c);
	pthread_mutex_unlock(&lock);
	return 0;
fail:
	err = errno;
	pthread_mutex_unlock(&lock);
	errno = err;
	return -1;
}

void nx_dnsig_unwatch(struct nx_dnsig *c, int dfd)
{
	struct slot *s;

	pthread_mutex_lock(&lock);
	if ((s = slot_peek(dfd)) && atomic_load(&s->chan) == c) {
		/* In a forked child the open file is shared with the parent,
		 * whose registration this must not touch. */
		if (c->pid == getpid())
			fcntl(dfd, F_NOTIFY, 0);
		forget(c, s);
	}
	pthread_mutex_unlock(&lock);
}

int nx_dnsig_drain(struct nx_dnsig *c, void (*fn)(void *ctx, int dfd), void *ctx,
		   bool *overflow)
{
	int buf[256];
	int avail, calls = 0;

	/* Taken first: whatever was lost after this is reported next time. */
	*overflow = atomic_exchange(&c->overflow, false);
	/* FIONREAD bounds the reads, against a pipe that handlers keep
	 * filling; without it, read until the pipe is empty. */
	if (ioctl(c->rfd, FIONREAD, &avail) < 0)
		avail = INT_MAX;
	while (avail >= (int)sizeof(int)) {
		size_t want = (size_t)avail < sizeof(buf) ? (size_t)avail : sizeof(buf);
		ssize_t r = read(c->rfd, buf, want - want % sizeof(int));

		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			return -1;
		}
		if (r == 0)
			break;
		avail -= (int)r;
		/* Writes and reads are whole ints (writes below PIPE_BUF are
		 * atomic), so r is a multiple of sizeof(int). */
		for (size_t i = 0; i < (size_t)r / sizeof(int); i++) {
			struct slot *s = buf[i] >= 0 ? slot_peek(buf[i]) : NULL;

			/* Marks, and numbers that are no longer c's, are stale. */
			if (!s || atomic_load(&s->chan) != c)
				continue;
			/* Before fn lists the directory: a change after that
			 * listing began signals again. */
			atomic_store(&s->pending, false);
			fn(ctx, buf[i]);
			calls++;
		}
	}
	return calls;
}

void nx_dnsig_close(struct nx_dnsig *c)
{
	_Atomic(struct nx_dnsig *) *pp;
	bool forked;

	if (!c)
		return;
	forked = c->pid != getpid();
	pthread_mutex_lock(&lock);
	while (c->nfds) {
		int fd = c->fds[c->nfds - 1];

		if (!forked)
			fcntl(fd, F_NOTIFY, 0);
		forget(c, slot_peek(fd));
	}
	for (pp = &channels; atomic_load(pp) != c; pp = &atomic_load(pp)->next)
		;
	atomic_store(pp, atomic_load(&c->next));
	nchannels--;
	if (!--sig_users[c->sig])
		restore(c->sig, on_signal, &sig_dfl);
	if (!nchannels) {
		restore(SIGIO, on_sigio, &sigio_prev);
		table_free(); /* waits for the handlers */
	} else {
		wait_handlers();
	}
	pthread_mutex_unlock(&lock);
	close(c->rfd);
	close(c->wfd);
	free(c->fds);
	free(c);
}

unsigned long nx_dnsig_thread_signals(void)
{
	return thread_hits;
}
