/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helpers shared by the cmocka test programs (conformance.c, api-args.c).
 *
 * The central piece is struct tu_log: every event read from a handle is
 * checked against the record rules of API.md as it is read (size a multiple
 * of 8, names NUL-terminated and zero-padded, exactly one known type bit,
 * only the types the watch requested plus the four always-delivered ones,
 * nothing after a wd's IGNORED, SYNTHETIC on every event of a scanning
 * backend, ...) and appended to an array that the tests search and count.
 * Every wait has a deadline; failures print what was expected and the whole
 * list of events actually read.
 */
#ifndef NOTIFYX_TESTUTIL_H
#define NOTIFYX_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <cmocka.h>

#include <notifyx.h>

#define TU_ALWAYS (NOTIFYX_OVERFLOW | NOTIFYX_UNMOUNT | NOTIFYX_ERROR | NOTIFYX_IGNORED)
#define TU_ANY_WD 0          /* match events of any wd */
#define TU_ANY_PATH NULL     /* match any path */
#define TU_ANY_MASK 0u       /* match any type */

/* Default deadlines (milliseconds). */
#define TU_WAIT_MS 3000      /* waiting for an event that must come */

struct tu_ev {
	int wd;
	uint32_t mask;
	uint32_t flags;
	uint32_t cookie;
	int32_t error;
	char *path;
	char *old_path;      /* NULL when the record has none */
};

struct tu_watch {
	int wd;
	uint32_t events;
	uint32_t flags;
	int ended;           /* its IGNORED has been read */
};

struct tu_log {
	struct notifyx *nx;
	struct tu_ev *ev;
	size_t n, cap;
	struct tu_watch *w;
	size_t nw, wcap;
	int scanning;        /* the handle's backend is dnotify or poll */
};

/* The backend asked for (argv[1] of the program); NOTIFYX_BACKEND_AUTO if none. */
extern uint32_t tu_backend;
/* poll_interval_ms given to every handle tu_open() makes. */
extern uint32_t tu_interval_ms;

/* Parse a backend name ("inotify", ...); returns UINT32_MAX if unknown. */
uint32_t tu_backend_from_name(const char *name);
const char *tu_mask_str(uint32_t mask);  /* "CREATE", "0x..." (static buffer) */
const char *tu_flags_str(uint32_t flags);

/* Open a handle on tu_backend with the test poll interval. NULL + errno on failure. */
struct notifyx *tu_open(uint32_t flags, uint32_t queue_max);
int tu_is_scanning(const struct notifyx *nx);
/* How long to wait for "nothing more comes" on this handle. */
int tu_quiet_ms(const struct notifyx *nx);

void tu_log_init(struct tu_log *log, struct notifyx *nx);
void tu_log_free(struct tu_log *log);
void tu_log_clear(struct tu_log *log); /* forget the events read so far (not the watches) */

/* Record a wd added directly with notifyx_add_watch(). */
void tu_track(struct tu_log *log, int wd, uint32_t events, uint32_t flags);
/* notifyx_add_watch() that must succeed; the wd is tracked. */
#define tu_add(log, path, events, flags) \
	tu_add_at((log), (path), (events), (flags), __FILE__, __LINE__)
int tu_add_at(struct tu_log *log, const char *path, uint32_t events, uint32_t flags,
	      const char *file, int line);
int tu_ended(const struct tu_log *log, int wd);

/* Read everything available now (non-blocking handle). Returns events added. */
size_t tu_pull(struct tu_log *log);
/* Read until an event matching (wd, mask, path) at index >= from arrives, or
 * timeout_ms passes. Returns its index or -1. */
ssize_t tu_wait_from(struct tu_log *log, size_t from, int wd, uint32_t mask,
		     const char *path, int timeout_ms);
/* Read until nothing arrives for quiet_ms (at most max_ms in total). */
void tu_settle_ms(struct tu_log *log, int quiet_ms, int max_ms);
void tu_settle(struct tu_log *log);

ssize_t tu_find(const struct tu_log *log, size_t from, int wd, uint32_t mask, const char *path);
size_t tu_count(const struct tu_log *log, int wd, uint32_t mask, const char *path);
size_t tu_count_wd(const struct tu_log *log, int wd);
void tu_dump(const struct tu_log *log, const char *title);

/* Assertions that print the expected event and every event read so far. */
#define TU_WAIT(log, wd, mask, path) \
	tu_must_wait((log), 0, (wd), (mask), (path), TU_WAIT_MS, __FILE__, __LINE__)
#define TU_WAIT_FROM(log, from, wd, mask, path) \
	tu_must_wait((log), (from), (wd), (mask), (path), TU_WAIT_MS, __FILE__, __LINE__)
size_t tu_must_wait(struct tu_log *log, size_t from, int wd, uint32_t mask, const char *path,
		    int timeout_ms, const char *file, int line);
/* Exactly one event matches (wd, mask, path), and (its flags & fmask) == fwant. Returns its index. */
#define TU_ONCE(log, wd, mask, path, fmask, fwant) \
	tu_must_once((log), (wd), (mask), (path), (fmask), (fwant), __FILE__, __LINE__)
size_t tu_must_once(const struct tu_log *log, int wd, uint32_t mask, const char *path,
		    uint32_t fmask, uint32_t fwant, const char *file, int line);
#define TU_NONE(log, wd, mask, path) \
	tu_must_none((log), (wd), (mask), (path), __FILE__, __LINE__)
void tu_must_none(const struct tu_log *log, int wd, uint32_t mask, const char *path,
		  const char *file, int line);
/* The events of wd are exactly this sequence of (mask, path) pairs, ended by 0. */
#define TU_SEQ(log, wd, ...) tu_must_seq((log), (wd), __FILE__, __LINE__, __VA_ARGS__)
void tu_must_seq(const struct tu_log *log, int wd, const char *file, int line, ...);
/* Index a < index b, both >= 0. */
#define TU_BEFORE(log, a, b, what) tu_must_before((log), (a), (b), (what), __FILE__, __LINE__)
void tu_must_before(const struct tu_log *log, ssize_t a, ssize_t b, const char *what,
		    const char *file, int line);

/* Compare two values and print both with a label. */
#define TU_EQ(label, expected, actual) do { \
	long long tu_e_ = (long long)(expected), tu_a_ = (long long)(actual); \
	if (tu_e_ != tu_a_) \
		fail_msg("%s: expected %lld (%#llx), actual %lld (%#llx)", (label), \
			 tu_e_, (unsigned long long)tu_e_, tu_a_, (unsigned long long)tu_a_); \
} while (0)
#define TU_STREQ(label, expected, actual) do { \
	const char *tu_e_ = (expected), *tu_a_ = (actual); \
	if (!tu_e_ || !tu_a_ || strcmp(tu_e_, tu_a_) != 0) \
		fail_msg("%s: expected \"%s\", actual \"%s\"", (label), \
			 tu_e_ ? tu_e_ : "(null)", tu_a_ ? tu_a_ : "(null)"); \
} while (0)
/* A call that must fail with -1 (or NULL) and errno err. */
#define TU_ERRNO(label, call_failed, err) do { \
	int tu_err_ = (err); \
	errno = 0; \
	if (!(call_failed)) \
		fail_msg("%s: expected failure with %s, but it succeeded", (label), strerrorname_np(tu_err_) ? strerrorname_np(tu_err_) : "?"); \
	if (errno != tu_err_) \
		fail_msg("%s: expected errno %s, actual %s (%s)", (label), strerrorname_np(tu_err_), \
			 strerrorname_np(errno) ? strerrorname_np(errno) : "?", strerror(errno)); \
} while (0)

/* Filesystem helpers; each fails the test on error. */
char *tu_mkdtemp(void);                 /* malloc'd "/tmp/notifyx-test.XXXXXX" */
void tu_rm_rf(const char *path);        /* no error if missing */
void tu_mkdir(const char *path);
void tu_touch(const char *path);
void tu_write(const char *path, const char *data);
void tu_rename(const char *from, const char *to);
void tu_unlink(const char *path);
void tu_rmdir(const char *path);
void tu_symlink(const char *target, const char *path);
/* Join into one of 64 rotating static buffers (copy what must live longer). */
const char *tu_path(const char *dir, const char *rel);
const char *tu_fmt(const char *fmt, ...) CMOCKA_PRINTF_ATTRIBUTE(1, 2);

/* Open descriptors of the process, sorted; *n set. malloc'd. */
int *tu_fds(size_t *n);

long tu_now_ms(void);
void tu_sleep_ms(int ms);

/* ---- fixtures (cmocka setup/teardown) ----
 * tu_setup: a temporary directory and a non-blocking handle on tu_backend
 * with a log.  tu_teardown closes the handle, unmounts what tu_mount_tmpfs
 * mounted, restores max_user_watches if a test lowered it, and removes the
 * directory -- also after a failed test. */
struct tu_fix {
	char *dir;
	struct notifyx *nx;
	struct tu_log log;
	char mnt[4][4096];
	int nmnt;
};
int tu_setup(void **state);
int tu_teardown(void **state);
/* Skip the test (printing why) unless the handle's backend supports every bit of mask. */
void tu_require_events(struct notifyx *nx, uint32_t mask);
/* Skip the test (printing why) unless running as root. */
void tu_require_root(const char *why);
/* Skip unless the handle's backend is inotify. */
void tu_require_inotify(struct notifyx *nx, const char *why);
/* Mount a private tmpfs on dir/rel (created); unmounted in teardown if still there. */
const char *tu_mount_tmpfs(struct tu_fix *f, const char *rel);

/* /proc/sys/fs/inotify/max_user_watches: read, lower (restored by
 * tu_watches_restore, by tu_teardown and at exit), and the number of inotify
 * watches this user holds now (all processes). */
long tu_watches_get(void);
void tu_watches_set(long v);
void tu_watches_restore(void);
long tu_inotify_usage(void);

#endif /* NOTIFYX_TESTUTIL_H */
