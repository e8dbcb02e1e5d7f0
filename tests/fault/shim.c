/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fault-injection shim for libnotifyx, loaded with LD_PRELOAD.
 *
 * It interposes the allocation functions and the system calls the library
 * makes, counts the calls made from inside libnotifyx.so (decided by the
 * caller's return address falling inside the library's executable
 * segments), and makes the Nth counted call fail with an errno chosen per
 * kind of call.  Calls made by anything else (the test program, libc on its
 * own behalf, the dynamic loader) pass through uncounted.
 *
 * Environment (read once, at load time):
 *   FAULT_N=n        fail the nth counted call (1-based); unset or 0: count only
 *   FAULT_COUNT=k    fail k consecutive counted calls from the nth (default 1)
 *   FAULT_KINDS=a,b  count only these kinds; "alloc" names malloc, calloc,
 *                    realloc, strdup, strndup and getcwd; default: every kind
 *   FAULT_ERRNO=E or FAULT_ERRNO=kind=E,kind=E
 *                    the errno of an injected failure, instead of the default
 *                    of each kind (see kinds[] below)
 *   FAULT_REPORT=f   append a line to f at each injection,
 *                    "inject n=N kind=K errno=E site=ADDR" (ADDR: in the
 *                    library's file, for addr2line -f -e libnotifyx.so ADDR),
 *                    and one at exit: "counted=C injected=I live=L"
 *
 * Functions the test program finds with dlsym(RTLD_DEFAULT, ...):
 *   fault_disable(), fault_enable()   stop and restart counting and failing
 *   fault_injected()                  failures injected so far
 *   fault_last_errno()                errno of the last injected failure
 *   fault_last_kind()                 its kind ("read", "malloc", ...), or NULL
 *   fault_errno_injected(e)           whether some injected failure had errno e
 *   fault_live()                      blocks allocated by the library and not freed
 *   fault_counted()                   calls counted so far
 *
 * Leaks: every block the library allocates (malloc, calloc, realloc, strdup)
 * is remembered until it is freed, whoever frees it; fault_live() after
 * notifyx_close must be 0.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/fanotify.h>
#include <sys/inotify.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

/* glibc's own allocator entry points: no dlsym bootstrap problem. */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

#define EXPORT __attribute__((visibility("default")))

enum kind {
	K_MALLOC, K_CALLOC, K_REALLOC, K_STRDUP, K_GETCWD,
	K_OPEN, K_READ, K_WRITE, K_GETDENTS64,
	K_STAT, K_LSTAT, K_FSTAT, K_FSTATAT,
	K_INOTIFY_INIT1, K_INOTIFY_ADD_WATCH, K_INOTIFY_RM_WATCH,
	K_EPOLL_CREATE1, K_EPOLL_CTL, K_EPOLL_WAIT,
	K_EVENTFD, K_TIMERFD_CREATE, K_TIMERFD_SETTIME,
	K_FANOTIFY_INIT, K_FANOTIFY_MARK,
	K_STRNDUP, K_STATX, K_FSTATFS, K_FCNTL, K_IOCTL, K_PIPE2, K_SIGACTION,
	K_NAME_TO_HANDLE_AT, K_OPEN_BY_HANDLE_AT, K_READLINK,
	K_COUNT
};

static struct {
	const char *name;
	int def_errno;
	bool alloc;
} kinds[K_COUNT] = {
	[K_MALLOC] = { "malloc", ENOMEM, true },
	[K_CALLOC] = { "calloc", ENOMEM, true },
	[K_REALLOC] = { "realloc", ENOMEM, true },
	[K_STRDUP] = { "strdup", ENOMEM, true },
	[K_GETCWD] = { "getcwd", ENOMEM, true },
	[K_OPEN] = { "open", EMFILE, false },
	[K_READ] = { "read", EIO, false }, /* eventfd and timerfd: EAGAIN, see fd_kind */
	[K_WRITE] = { "write", EAGAIN, false },
	[K_GETDENTS64] = { "getdents64", ENOMEM, false },
	[K_STAT] = { "stat", ENOMEM, false },
	[K_LSTAT] = { "lstat", ENOMEM, false },
	[K_FSTAT] = { "fstat", ENOMEM, false },
	[K_FSTATAT] = { "fstatat", ENOMEM, false },
	[K_INOTIFY_INIT1] = { "inotify_init1", EMFILE, false },
	[K_INOTIFY_ADD_WATCH] = { "inotify_add_watch", ENOSPC, false },
	[K_INOTIFY_RM_WATCH] = { "inotify_rm_watch", EINVAL, false },
	[K_EPOLL_CREATE1] = { "epoll_create1", EMFILE, false },
	[K_EPOLL_CTL] = { "epoll_ctl", ENOMEM, false },
	[K_EPOLL_WAIT] = { "epoll_wait", EINTR, false },
	[K_EVENTFD] = { "eventfd", EMFILE, false },
	[K_TIMERFD_CREATE] = { "timerfd_create", EMFILE, false },
	[K_TIMERFD_SETTIME] = { "timerfd_settime", EINVAL, false },
	[K_FANOTIFY_INIT] = { "fanotify_init", EMFILE, false },
	[K_FANOTIFY_MARK] = { "fanotify_mark", ENOSPC, false },
	[K_STRNDUP] = { "strndup", ENOMEM, true },
	[K_STATX] = { "statx", ENOMEM, false },
	[K_FSTATFS] = { "fstatfs", EIO, false },
	/* F_NOTIFY, F_SETSIG, F_SETPIPE_SZ, F_GETPIPE_SZ: what F_NOTIFY gives
	 * when the kernel has no memory for the mark */
	[K_FCNTL] = { "fcntl", ENOMEM, false },
	[K_IOCTL] = { "ioctl", ENOTTY, false },
	[K_PIPE2] = { "pipe2", EMFILE, false },
	[K_SIGACTION] = { "sigaction", EINVAL, false },
	[K_NAME_TO_HANDLE_AT] = { "name_to_handle_at", EOPNOTSUPP, false },
	[K_OPEN_BY_HANDLE_AT] = { "open_by_handle_at", ESTALE, false },
	/* readlink and readlinkat */
	[K_READLINK] = { "readlink", ENOMEM, false },
};

static const struct {
	const char *name;
	int value;
} errnames[] = {
	{ "ENOMEM", ENOMEM }, { "EMFILE", EMFILE }, { "ENFILE", ENFILE }, { "ENOSPC", ENOSPC },
	{ "EINTR", EINTR }, { "EAGAIN", EAGAIN }, { "EIO", EIO }, { "EACCES", EACCES },
	{ "EPERM", EPERM }, { "EINVAL", EINVAL }, { "ENOENT", ENOENT }, { "ENOTDIR", ENOTDIR },
	{ "ELOOP", ELOOP }, { "EBADF", EBADF }, { "ENODEV", ENODEV }, { "ENOSYS", ENOSYS },
	{ "ENAMETOOLONG", ENAMETOOLONG }, { "EOVERFLOW", EOVERFLOW },
	{ "EBUSY", EBUSY }, { "ENOTTY", ENOTTY }, { "EOPNOTSUPP", EOPNOTSUPP },
	{ "ESTALE", ESTALE },
};

static struct {
	bool ready;              /* the library's text was found */
	uintptr_t base;          /* its load address, for addr2line */
	uintptr_t lo[4], hi[4];  /* its executable segments */
	int nseg;
	unsigned long n, k;      /* FAULT_N, FAULT_COUNT */
	bool count_kind[K_COUNT];
	int errno_of[K_COUNT];   /* 0: the default */
	int report_fd;
	bool disabled;
	unsigned long counted, injected;
	int last_errno;
	enum kind last_kind;
	uint64_t errno_set[2];   /* bit e: errno e was injected (e < 128) */
} st = { .report_fd = -1 };

/* ---- live allocations of the library: an open-addressing pointer set ---- */

#define LIVE_CAP (1u << 16)
#define TOMB ((uintptr_t)1)
static uintptr_t live_tab[LIVE_CAP];
static unsigned long live_count, live_used;

static size_t live_slot(uintptr_t p)
{
	return (size_t)((p >> 4) * 0x9E3779B97F4A7C15ull >> 48) & (LIVE_CAP - 1);
}

static void live_add(void *ptr)
{
	uintptr_t p = (uintptr_t)ptr;

	if (!p || live_used >= LIVE_CAP * 3 / 4)
		return; /* full: stop tracking rather than misbehave */
	for (size_t i = live_slot(p);; i = (i + 1) & (LIVE_CAP - 1)) {
		if (live_tab[i] == 0 || live_tab[i] == TOMB) {
			if (live_tab[i] == 0)
				live_used++;
			live_tab[i] = p;
			live_count++;
			return;
		}
	}
}

static void live_del(void *ptr)
{
	uintptr_t p = (uintptr_t)ptr;

	if (!p || !live_count)
		return;
	for (size_t i = live_slot(p); live_tab[i]; i = (i + 1) & (LIVE_CAP - 1)) {
		if (live_tab[i] == p) {
			live_tab[i] = TOMB;
			live_count--;
			return;
		}
	}
}

/* ---- set-up ---- */

static int errno_value(const char *s)
{
	for (size_t i = 0; i < sizeof(errnames) / sizeof(errnames[0]); i++)
		if (!strcmp(s, errnames[i].name))
			return errnames[i].value;
	return atoi(s);
}

static const char *errno_name(int e)
{
	for (size_t i = 0; i < sizeof(errnames) / sizeof(errnames[0]); i++)
		if (errnames[i].value == e)
			return errnames[i].name;
	return "E?";
}

static int kind_of_name(const char *s, size_t len)
{
	for (int i = 0; i < K_COUNT; i++)
		if (strlen(kinds[i].name) == len && !strncmp(kinds[i].name, s, len))
			return i;
	return -1;
}

/* dl_iterate_phdr callback: the executable segments of the object that
 * holds the address data. */
static int find_segments(struct dl_phdr_info *info, size_t size, void *data)
{
	uintptr_t sym = (uintptr_t)data;
	bool mine = false;

	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && sym >= lo && sym < lo + ph->p_memsz)
			mine = true;
	}
	if (!mine)
		return 0;
	st.base = info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum && st.nseg < 4; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			st.lo[st.nseg] = info->dlpi_addr + ph->p_vaddr;
			st.hi[st.nseg] = st.lo[st.nseg] + ph->p_memsz;
			st.nseg++;
		}
	}
	return 1;
}

static void report(const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int n;

	if (st.report_fd < 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > 0)
		(void)!syscall(SYS_write, st.report_fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

__attribute__((constructor)) static void shim_init(void)
{
	void *sym = dlsym(RTLD_DEFAULT, "notifyx_open");
	const char *s;
	Dl_info info;

	if (!sym || !dladdr(sym, &info) || !strstr(info.dli_fname, "libnotifyx"))
		return; /* not a process using the library (a shell, a tool) */
	dl_iterate_phdr(find_segments, sym);
	if (!st.nseg)
		return;
	st.n = (s = getenv("FAULT_N")) ? strtoul(s, NULL, 10) : 0;
	st.k = (s = getenv("FAULT_COUNT")) ? strtoul(s, NULL, 10) : 1;
	for (int i = 0; i < K_COUNT; i++)
		st.count_kind[i] = true;
	if ((s = getenv("FAULT_KINDS")) && *s) {
		for (int i = 0; i < K_COUNT; i++)
			st.count_kind[i] = false;
		while (*s) {
			size_t len = strcspn(s, ",");
			int k = kind_of_name(s, len);
			if (k >= 0)
				st.count_kind[k] = true;
			else if (len == 5 && !strncmp(s, "alloc", 5))
				for (int i = 0; i < K_COUNT; i++)
					st.count_kind[i] |= kinds[i].alloc;
			else if (len == 7 && !strncmp(s, "syscall", 7))
				for (int i = 0; i < K_COUNT; i++)
					st.count_kind[i] |= !kinds[i].alloc;
			else if (len == 4 && !strncmp(s, "stat", 4))
				st.count_kind[K_STAT] = true;
			s += len + (s[len] == ',');
		}
	}
	if ((s = getenv("FAULT_ERRNO")) && *s) {
		if (!strchr(s, '=')) {
			int e = errno_value(s);
			for (int i = 0; i < K_COUNT; i++)
				st.errno_of[i] = e;
		} else {
			char buf[512], *save = NULL;
			snprintf(buf, sizeof(buf), "%s", s);
			for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
				char *eq = strchr(t, '=');
				int k;
				if (!eq)
					continue;
				*eq = '\0';
				if (!strcmp(t, "alloc")) {
					for (int i = 0; i < K_COUNT; i++)
						if (kinds[i].alloc)
							st.errno_of[i] = errno_value(eq + 1);
				} else if ((k = kind_of_name(t, strlen(t))) >= 0) {
					st.errno_of[k] = errno_value(eq + 1);
				}
			}
		}
	}
	if ((s = getenv("FAULT_REPORT")) && *s)
		st.report_fd = (int)syscall(SYS_openat, AT_FDCWD, s,
					    O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	st.ready = true;
}

__attribute__((destructor)) static void shim_fini(void)
{
	if (!st.ready)
		return;
	report("counted=%lu injected=%lu live=%lu\n", st.counted, st.injected, live_count);
}

/* ---- the decision ---- */

static bool from_library(const void *ra)
{
	uintptr_t a = (uintptr_t)ra;

	for (int i = 0; i < st.nseg; i++)
		if (a >= st.lo[i] && a < st.hi[i])
			return true;
	return false;
}

/* The kind of descriptor a read or write goes to, for the report and for
 * the errno a failure of it gets by default. */
static const char *fd_kind(int fd)
{
	char path[64], target[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return "?";
	target[n] = '\0';
	if (strstr(target, "inotify"))
		return "inotify";
	if (strstr(target, "eventfd"))
		return "eventfd";
	if (strstr(target, "timerfd"))
		return "timerfd";
	if (strstr(target, "fanotify"))
		return "fanotify";
	if (!strncmp(target, "pipe:", 5))
		return "pipe";
	return "other";
}

/* Counts a call; returns the errno to fail it with, or 0. */
static int decide(enum kind k, const void *ra, int fd)
{
	const char *sub = NULL;
	int e;

	if (!st.ready || st.disabled || !st.count_kind[k] || !from_library(ra))
		return 0;
	st.counted++;
	if (!st.n || st.counted < st.n || st.counted >= st.n + st.k)
		return 0;
	e = st.errno_of[k];
	if (k == K_READ || k == K_WRITE) {
		sub = fd_kind(fd);
		if (!e && k == K_READ && strcmp(sub, "inotify") && strcmp(sub, "fanotify") &&
		    strcmp(sub, "other"))
			e = EAGAIN; /* what an eventfd, timerfd or pipe read can give */
	}
	if (!e)
		e = kinds[k].def_errno;
	st.injected++;
	st.last_errno = e;
	st.last_kind = k;
	if (e > 0 && e < 128)
		st.errno_set[e / 64] |= (uint64_t)1 << (e % 64);
	report("inject n=%lu kind=%s%s%s%s errno=%s site=%#lx\n", st.counted, kinds[k].name,
	       sub ? "(" : "", sub ? sub : "", sub ? ")" : "", errno_name(e),
	       (unsigned long)((uintptr_t)ra - 1 - st.base));
	return e;
}

#define RA __builtin_return_address(0)

/* ---- the control interface ---- */

EXPORT void fault_disable(void) { st.disabled = true; }
EXPORT void fault_enable(void) { st.disabled = false; }
EXPORT unsigned long fault_injected(void) { return st.injected; }
EXPORT int fault_last_errno(void) { return st.last_errno; }
EXPORT unsigned long fault_live(void) { return live_count; }
EXPORT unsigned long fault_counted(void) { return st.counted; }
EXPORT int fault_errno_injected(int e) { return e > 0 && e < 128 && (st.errno_set[e / 64] >> (e % 64) & 1); }
EXPORT const char *fault_last_kind(void) { return st.injected ? kinds[st.last_kind].name : NULL; }

/* ---- allocation ---- */

EXPORT void *malloc(size_t size)
{
	const void *ra = RA;
	int e = decide(K_MALLOC, ra, -1);
	void *p;

	if (e) {
		errno = e;
		return NULL;
	}
	p = __libc_malloc(size);
	if (st.ready && from_library(ra))
		live_add(p);
	return p;
}

EXPORT void *calloc(size_t n, size_t size)
{
	const void *ra = RA;
	int e = decide(K_CALLOC, ra, -1);
	void *p;

	if (e) {
		errno = e;
		return NULL;
	}
	p = __libc_calloc(n, size);
	if (st.ready && from_library(ra))
		live_add(p);
	return p;
}

EXPORT void *realloc(void *old, size_t size)
{
	const void *ra = RA;
	int e = decide(K_REALLOC, ra, -1);
	void *p;

	if (e) {
		errno = e;
		return NULL;
	}
	p = __libc_realloc(old, size);
	if (p || !size) {
		live_del(old);
		if (st.ready && from_library(ra))
			live_add(p);
	}
	return p;
}

EXPORT void free(void *p)
{
	live_del(p);
	__libc_free(p);
}

EXPORT char *strdup(const char *s)
{
	const void *ra = RA;
	int e = decide(K_STRDUP, ra, -1);
	size_t len = strlen(s) + 1;
	char *p;

	if (e) {
		errno = e;
		return NULL;
	}
	if ((p = __libc_malloc(len))) {
		memcpy(p, s, len);
		if (st.ready && from_library(ra))
			live_add(p);
	}
	return p;
}

EXPORT char *strndup(const char *s, size_t n)
{
	const void *ra = RA;
	int e = decide(K_STRNDUP, ra, -1);
	size_t len = strnlen(s, n);
	char *p;

	if (e) {
		errno = e;
		return NULL;
	}
	if ((p = __libc_malloc(len + 1))) {
		memcpy(p, s, len);
		p[len] = '\0';
		if (st.ready && from_library(ra))
			live_add(p);
	}
	return p;
}

/* ---- system calls, through the next definition (libc's) ---- */

#define NEXT(type, name, args)                                                  \
	static type(*real) args;                                                \
	if (!real)                                                              \
		*(void **)&real = dlsym(RTLD_NEXT, name)

#define FAIL_IF(k, fd, ret)                                                     \
	do {                                                                    \
		int e_ = decide(k, RA, fd);                                     \
		if (e_) {                                                       \
			errno = e_;                                             \
			return ret;                                             \
		}                                                               \
	} while (0)

EXPORT char *getcwd(char *buf, size_t size)
{
	NEXT(char *, "getcwd", (char *, size_t));
	FAIL_IF(K_GETCWD, -1, NULL);
	return real(buf, size);
}

static mode_t mode_arg(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

EXPORT int open(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;
	NEXT(int, "open", (const char *, int, ...));

	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	FAIL_IF(K_OPEN, -1, -1);
	return real(path, flags, mode);
}

EXPORT int open64(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;
	NEXT(int, "open64", (const char *, int, ...));

	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	FAIL_IF(K_OPEN, -1, -1);
	return real(path, flags, mode);
}

EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;
	NEXT(int, "openat", (int, const char *, int, ...));

	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	FAIL_IF(K_OPEN, -1, -1);
	return real(dirfd, path, flags, mode);
}

EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;
	NEXT(int, "openat64", (int, const char *, int, ...));

	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	FAIL_IF(K_OPEN, -1, -1);
	return real(dirfd, path, flags, mode);
}

EXPORT ssize_t read(int fd, void *buf, size_t count)
{
	NEXT(ssize_t, "read", (int, void *, size_t));
	FAIL_IF(K_READ, fd, -1);
	return real(fd, buf, count);
}

EXPORT ssize_t write(int fd, const void *buf, size_t count)
{
	NEXT(ssize_t, "write", (int, const void *, size_t));
	FAIL_IF(K_WRITE, fd, -1);
	return real(fd, buf, count);
}

EXPORT ssize_t getdents64(int fd, void *buf, size_t count)
{
	NEXT(ssize_t, "getdents64", (int, void *, size_t));
	FAIL_IF(K_GETDENTS64, fd, -1);
	return real(fd, buf, count);
}

EXPORT int stat(const char *restrict path, struct stat *restrict sb)
{
	NEXT(int, "stat", (const char *, struct stat *));
	FAIL_IF(K_STAT, -1, -1);
	return real(path, sb);
}

EXPORT int lstat(const char *restrict path, struct stat *restrict sb)
{
	NEXT(int, "lstat", (const char *, struct stat *));
	FAIL_IF(K_LSTAT, -1, -1);
	return real(path, sb);
}

EXPORT int fstat(int fd, struct stat *sb)
{
	NEXT(int, "fstat", (int, struct stat *));
	FAIL_IF(K_FSTAT, fd, -1);
	return real(fd, sb);
}

EXPORT int fstatat(int dirfd, const char *restrict path, struct stat *restrict sb, int flags)
{
	NEXT(int, "fstatat", (int, const char *, struct stat *, int));
	FAIL_IF(K_FSTATAT, dirfd, -1);
	return real(dirfd, path, sb, flags);
}

EXPORT int inotify_init1(int flags)
{
	NEXT(int, "inotify_init1", (int));
	FAIL_IF(K_INOTIFY_INIT1, -1, -1);
	return real(flags);
}

EXPORT int inotify_add_watch(int fd, const char *path, uint32_t mask)
{
	NEXT(int, "inotify_add_watch", (int, const char *, uint32_t));
	FAIL_IF(K_INOTIFY_ADD_WATCH, fd, -1);
	return real(fd, path, mask);
}

EXPORT int fanotify_init(unsigned int flags, unsigned int event_f_flags)
{
	NEXT(int, "fanotify_init", (unsigned int, unsigned int));
	FAIL_IF(K_FANOTIFY_INIT, -1, -1);
	return real(flags, event_f_flags);
}

EXPORT int fanotify_mark(int fd, unsigned int flags, uint64_t mask, int dirfd, const char *path)
{
	NEXT(int, "fanotify_mark", (int, unsigned int, uint64_t, int, const char *));
	FAIL_IF(K_FANOTIFY_MARK, fd, -1);
	return real(fd, flags, mask, dirfd, path);
}

EXPORT int inotify_rm_watch(int fd, int wd)
{
	NEXT(int, "inotify_rm_watch", (int, int));
	FAIL_IF(K_INOTIFY_RM_WATCH, fd, -1);
	return real(fd, wd);
}

EXPORT int epoll_create1(int flags)
{
	NEXT(int, "epoll_create1", (int));
	FAIL_IF(K_EPOLL_CREATE1, -1, -1);
	return real(flags);
}

EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	NEXT(int, "epoll_ctl", (int, int, int, struct epoll_event *));
	FAIL_IF(K_EPOLL_CTL, epfd, -1);
	return real(epfd, op, fd, ev);
}

EXPORT int epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout)
{
	NEXT(int, "epoll_wait", (int, struct epoll_event *, int, int));
	FAIL_IF(K_EPOLL_WAIT, epfd, -1);
	return real(epfd, evs, max, timeout);
}

EXPORT int eventfd(unsigned int initval, int flags)
{
	NEXT(int, "eventfd", (unsigned int, int));
	FAIL_IF(K_EVENTFD, -1, -1);
	return real(initval, flags);
}

EXPORT int timerfd_create(int clockid, int flags)
{
	NEXT(int, "timerfd_create", (int, int));
	FAIL_IF(K_TIMERFD_CREATE, -1, -1);
	return real(clockid, flags);
}

EXPORT int timerfd_settime(int fd, int flags, const struct itimerspec *nv, struct itimerspec *old)
{
	NEXT(int, "timerfd_settime", (int, int, const struct itimerspec *, struct itimerspec *));
	FAIL_IF(K_TIMERFD_SETTIME, fd, -1);
	return real(fd, flags, nv, old);
}

EXPORT int statx(int dirfd, const char *restrict path, int flags, unsigned int mask,
		 struct statx *restrict sx)
{
	NEXT(int, "statx", (int, const char *, int, unsigned int, struct statx *));
	FAIL_IF(K_STATX, dirfd, -1);
	return real(dirfd, path, flags, mask, sx);
}

EXPORT int fstatfs(int fd, struct statfs *sb)
{
	NEXT(int, "fstatfs", (int, struct statfs *));
	FAIL_IF(K_FSTATFS, fd, -1);
	return real(fd, sb);
}

/* fcntl and ioctl take one optional argument, an integer or a pointer:
 * passed on as a pointer-sized word, as the x86-64 and i386 ABIs allow. */
EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;
	NEXT(int, "fcntl", (int, int, ...));

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	FAIL_IF(K_FCNTL, fd, -1);
	return real(fd, cmd, arg);
}

EXPORT int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;
	NEXT(int, "fcntl64", (int, int, ...));

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	FAIL_IF(K_FCNTL, fd, -1);
	return real(fd, cmd, arg);
}

EXPORT int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;
	NEXT(int, "ioctl", (int, unsigned long, ...));

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	FAIL_IF(K_IOCTL, fd, -1);
	return real(fd, req, arg);
}

EXPORT int pipe2(int fds[2], int flags)
{
	NEXT(int, "pipe2", (int *, int));
	FAIL_IF(K_PIPE2, -1, -1);
	return real(fds, flags);
}

EXPORT int sigaction(int sig, const struct sigaction *restrict sa, struct sigaction *restrict old)
{
	NEXT(int, "sigaction", (int, const struct sigaction *, struct sigaction *));
	FAIL_IF(K_SIGACTION, -1, -1);
	return real(sig, sa, old);
}

EXPORT int name_to_handle_at(int dirfd, const char *path, struct file_handle *h, int *mnt,
			     int flags)
{
	NEXT(int, "name_to_handle_at", (int, const char *, struct file_handle *, int *, int));
	FAIL_IF(K_NAME_TO_HANDLE_AT, dirfd, -1);
	return real(dirfd, path, h, mnt, flags);
}

EXPORT int open_by_handle_at(int mfd, struct file_handle *h, int flags)
{
	NEXT(int, "open_by_handle_at", (int, struct file_handle *, int));
	FAIL_IF(K_OPEN_BY_HANDLE_AT, mfd, -1);
	return real(mfd, h, flags);
}

EXPORT ssize_t readlink(const char *restrict path, char *restrict buf, size_t len)
{
	NEXT(ssize_t, "readlink", (const char *, char *, size_t));
	FAIL_IF(K_READLINK, -1, -1);
	return real(path, buf, len);
}

EXPORT ssize_t readlinkat(int dirfd, const char *restrict path, char *restrict buf, size_t len)
{
	NEXT(ssize_t, "readlinkat", (int, const char *, char *, size_t));
	FAIL_IF(K_READLINK, dirfd, -1);
	return real(dirfd, path, buf, len);
}
