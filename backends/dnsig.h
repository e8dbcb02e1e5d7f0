/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * dnotify's signal routing: turns the kernel's per-directory signals into a
 * readable descriptor per channel (one channel per handle).
 *
 * dnotify reports a change in a directory by sending the process a signal
 * (the real-time signal set with F_SETSIG, with si_fd naming the directory's
 * descriptor).  A signal goes to the process, not to a handle, so this module
 * keeps one table of the process, fd -> channel, that the signal handler
 * reads with atomic loads only (no lock, no malloc): the handler writes the
 * descriptor number into its channel's non-blocking pipe, whose read end
 * goes into the handle's epoll set.  Each directory is in the pipe at most
 * once between two drains (a pending flag per descriptor), so the pipe fills
 * only when it holds more directories than fit (it is grown as directories
 * are added); a write that does not fit marks the channel overflowed.
 *
 * When the real-time signal queue is full (RLIMIT_SIGPENDING) the kernel
 * sends a plain SIGIO instead, with no descriptor: the library's SIGIO
 * handler marks every channel overflowed (the caller rescans everything),
 * then calls the SIGIO handler the application had before the first
 * channel opened, if any (SIG_DFL, which would kill, and SIG_IGN are not
 * called).  SIGIO the application raises itself (O_ASYNC) thus also costs a
 * rescan.
 *
 * Rules the caller follows:
 * - Every function but the signal handlers takes one mutex of the process:
 *   channels may be opened, used and closed in any threads.  One channel is
 *   used by one thread at a time (like the handle).
 * - The caller owns the directory descriptors.  It opens them (O_RDONLY |
 *   O_DIRECTORY | O_CLOEXEC; F_NOTIFY refuses O_PATH), calls
 *   nx_dnsig_unwatch before closing one, and never dup()s one: any close()
 *   of any duplicate silently cancels the kernel's registration.  This
 *   module never dups them either.
 * - The module changes no thread's signal mask.  If every thread blocks the
 *   signal, events wait (in the kernel's queue, then as a SIGIO overflow)
 *   until one unblocks it.
 * - After fork() the child may only close what it inherited: unwatch and
 *   close see the changed pid and touch no kernel state shared with the
 *   parent (no fcntl on the shared open files), so the parent keeps working.
 *
 * Signal dispositions: the first channel of a signal installs the library's
 * handler on it, and fails with EBUSY unless its disposition is SIG_DFL (or
 * the library's handler already).  The first channel also installs the
 * SIGIO handler.  Both use SA_SIGINFO | SA_RESTART (the SIGIO handler also
 * SA_ONSTACK when the application's had it: that one runs on top of ours, on
 * its alternate stack, with its sa_mask), so the library's signals
 * do not make the application's system calls fail with EINTR where SA_RESTART
 * restarts them (poll, epoll_wait, nanosleep and friends fail with EINTR
 * whatever SA_RESTART says: nx_dnsig_thread_signals lets a caller tell the
 * library's signals from the application's).  The last channel of a signal
 * puts back SIG_DFL, and the last channel of all the application's SIGIO
 * disposition, each only if the library's handler is still the one
 * installed; on the way to SIG_DFL the disposition passes through SIG_IGN,
 * which discards such signals still pending (their default action would
 * kill the process).
 *
 * ---- Draft for the man page: the classic dnotify problems ----
 *
 * Signals.  dnotify reports through signals, which belong to the process,
 * not to a library.  libnotifyx takes one real-time signal (by default
 * SIGRTMIN+5; notifyx_config.signal picks another in SIGRTMIN..SIGRTMAX) and
 * SIGIO.  notifyx_open fails with EBUSY if the application already has a
 * handler on that signal, or ignores it; SIGIO handlers are shared: the
 * application's is still called.  The handlers are async-signal-safe, use
 * SA_RESTART, and change no signal mask; notifyx_read never fails with
 * EINTR because of them.  Several handles, in several threads, each get
 * only their own directories' signals.  When the kernel's queue of
 * real-time signals is full (RLIMIT_SIGPENDING), the kernel sends SIGIO,
 * whose default action kills the process; the library catches it and reports
 * NOTIFYX_OVERFLOW after rescanning every watched directory.  An application
 * that replaces the library's handlers while a handle is open loses its
 * events.
 *
 * Directories only.  The kernel says "something changed in this directory"
 * and nothing more.  A file is watched through its parent directory; events
 * of other entries of that directory cost a rescan but are not reported.
 * A change made through a hard link in another directory is not seen.
 *
 * An open descriptor per directory.  Each watched directory (each directory
 * of a recursive tree) holds one descriptor, counted against RLIMIT_NOFILE,
 * whose soft limit notifyx_open raises to the hard one: when it runs out,
 * notifyx_add_watch fails with EMFILE and leaves nothing behind, and a
 * directory that appears later is reported with NOTIFYX_ERROR.
 * The descriptors keep the filesystem busy: umount fails with EBUSY while it
 * is watched; umount -l succeeds and the watch reports NOTIFYX_UNMOUNT.
 *
 * Little information.  Signals carry no names, so the library keeps a
 * snapshot of each directory and compares it with a new listing of that
 * directory alone when its signal arrives: every event is NOTIFYX_EVENT_SYNTHETIC, an
 * entry that comes and goes between two listings is not reported, and the
 * operations that leave no trace in a listing (OPEN, ACCESS, CLOSE_*) cannot
 * be requested (EOPNOTSUPP).  A rename of the watched directory itself
 * raises no signal; the library checks its roots every poll_interval_ms.
 */
#ifndef NX_DNSIG_H
#define NX_DNSIG_H

#include <stdbool.h>

struct nx_dnsig;

/* The signal used when the configuration says 0: SIGRTMIN + 5.  Not
 * SIGRTMIN, which applications and timer examples take first, nor SIGRTMIN+1,
 * which the kernel's dnotify documentation suggests to applications. */
#define NX_DNSIG_DEFAULT_OFFSET 5
int nx_dnsig_default_signal(void);

/* 0 when F_NOTIFY works on this kernel; -1 with ENOSYS when dnotify is
 * disabled (/proc/sys/fs/dir-notify-enable is 0) or not built in, or with
 * the errno of opening "/" for the check. */
int nx_dnsig_probe(void);

/* Opens a channel that receives the signal sig (0: the default).  Returns 0
 * and *out, or -1 with errno: EINVAL (sig outside SIGRTMIN..SIGRTMAX),
 * EBUSY (sig has a disposition that is neither SIG_DFL nor the library's),
 * ENOMEM, EMFILE/ENFILE (the pipe). */
int nx_dnsig_open(int sig, struct nx_dnsig **out);

/* The descriptor to poll: readable when nx_dnsig_drain has something. */
int nx_dnsig_fd(const struct nx_dnsig *c);

/* The channel's signal. */
int nx_dnsig_signal(const struct nx_dnsig *c);

/* Routes the signals of directory descriptor dfd to c, then asks the kernel
 * for them: F_SETSIG, F_NOTIFY with dn_events | DN_MULTISHOT.  Watching a
 * descriptor c has already adds dn_events to what the kernel reports (the
 * kernel only adds).  Returns 0, or -1 with errno: EINVAL (dfd negative,
 * dn_events empty or not DN_* event bits, or dnotify disabled), EBUSY (dfd
 * belongs to another channel), ENOMEM, or what fcntl said (EBADF, ENOTDIR).
 * On failure a descriptor c did not have before is not routed. */
int nx_dnsig_watch(struct nx_dnsig *c, int dfd, unsigned long dn_events);

/* Cancels dfd's registration (F_NOTIFY 0) and stops routing its signals to
 * c; nothing if c does not have dfd.  Call it before closing dfd.  A signal
 * already queued for dfd is dropped, or, if the number is watched again in
 * the meantime, reported for the new directory (a spurious report). */
void nx_dnsig_unwatch(struct nx_dnsig *c, int dfd);

/* Calls fn(ctx, dfd) for each directory of c signalled since its previous
 * report, reading what the pipe held when drain started (so a storm of
 * signals cannot keep it looping).  A directory is reported again only after
 * a signal that arrived once its previous report began: the caller lists it
 * in fn (or after drain returns) and misses nothing.  fn may call
 * nx_dnsig_watch and nx_dnsig_unwatch.  *overflow is set to true when
 * signals were lost since the previous drain (SIGIO, or a full pipe): the
 * caller then rescans every directory; else to false.  Returns the number of
 * fn calls, or -1 with errno. */
int nx_dnsig_drain(struct nx_dnsig *c, void (*fn)(void *ctx, int dfd), void *ctx,
		   bool *overflow);

/* Cancels every registration of c (not after fork), restores the signal
 * dispositions if c was the last channel (see above), closes the pipe and
 * frees c.  Waits for signal handlers running in other threads to return.
 * NULL does nothing. */
void nx_dnsig_close(struct nx_dnsig *c);

/* How many of the library's own signals (routing signals, and SIGIO when the
 * application has no SIGIO handler to call) the calling thread has handled.
 * A wait that fails with EINTR while this changed was interrupted by the
 * library (if an application signal arrived at the same moment, it cannot
 * be told apart). */
unsigned long nx_dnsig_thread_signals(void);

#endif
