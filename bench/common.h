/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the benchmarks share: the watchers they compare and how one is run.
 *
 * Every watcher runs in a process of its own, so that its CPU time and memory
 * are its own: the raw inotify reader and each libnotifyx backend in a forked
 * child of the benchmark, the tools (notifyx watch, inotifywait, fswatch) as
 * themselves, writing to a pipe that the benchmark reads.  The events asked
 * for and the end marker (an entry named STOP at the root) are the same for
 * all of them.
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "stats.h" /* now, pctl, median, rm_tree: shared with notifyx bench */

/* Event sets, mapped to each watcher's own words. */
#define B_CREATE  0x1u
#define B_MODIFY  0x2u
#define B_DELETE  0x4u
#define B_MOVED   0x8u /* arrivals by rename or move */
#define B_MOVED_OUT 0x10u /* departures by a move out of the watch */

enum wkind { W_RAW, W_LIB, W_CMD };

struct watcher {
	const char *name;   /* table label */
	enum wkind kind;
	uint32_t backend;   /* W_LIB */
	char *prog;         /* W_CMD: the program, found in PATH (or NXBENCH_NOTIFYX) */
	const char *absent; /* why it cannot run here, NULL when it can */
	int unpriv;         /* W_LIB: runs as user nobody (fanotify: inode marks) */
	int tty;            /* W_CMD: its standard error is a terminal (notifyx: progress thread) */
	const char *env;    /* "NAME=VALUE" set in its process, or NULL */
	int evloop;         /* W_LIB: reads as an event loop does (poll(2), then a
			       non-blocking read), not by blocking reads */
};

struct wopts {
	const char *dir; /* the watched directory */
	uint32_t events; /* B_* */
	int recursive;
	int lines;       /* one line per event; else (raw, library) one "end N" line at STOP */
	int own_cpu;     /* the watcher runs on the other CPUs, not the one pin_cpu() chose */
};

/* A running watcher. */
struct wproc {
	const struct watcher *w;
	pid_t pid;
	int fd;           /* its output */
	int ptyfd;        /* the terminal's master side (tty watchers), drained; else -1 */
	char buf[65536];
	size_t have;
	int eof;          /* its output ended: it exited */
	double started;
	double ready_s;   /* setup time: measured by the child (raw, library), else spawn to probe */
};


/* The watchers of this run: "raw", every backend, the tools.  NXBENCH_WATCHERS
 * (comma-separated labels) narrows the list.  With bench_extras set before,
 * also "notifyx watch tty" (its standard error on a terminal: the progress
 * thread runs), "fanotify inode" (the library as user nobody: inode marks)
 * and "fanotify fs mark" (root: the filesystem mark whatever the tree's
 * size); else those run only when NXBENCH_WATCHERS names them. */
extern int bench_extras;
int watchers_all(struct watcher **out);

int wp_start(struct wproc *p, const struct watcher *w, const struct wopts *o);
int other_cpus(void); /* CPUs beside the one pin_cpu() chose: 0 when none */
/* Until the watcher is ready: its "ready" line, or (tools) until a file made
 * in probe_dir is reported.  Then drains what it printed.  -1 on timeout. */
int wp_ready(struct wproc *p, const char *probe_dir, double timeout);
/* The next line (without its newline) within timeout seconds; NULL otherwise. */
char *wp_line(struct wproc *p, double timeout);
double wp_cpu(const struct wproc *p);  /* CPU seconds of all its threads so far */
long wp_rss_kb(const struct wproc *p); /* VmRSS */
long self_field_kb(const char *file, const char *field); /* e.g. "/proc/meminfo", "Slab:" */
void wp_stop(struct wproc *p);

/* Binds this process, and so the watchers it starts, to the CPU it runs on
 * (unless NXBENCH_NOPIN is set).  On a virtual machine a wakeup that crosses
 * to an idle virtual CPU costs hundreds of microseconds, and a program run
 * by exec is moved to the idlest CPU while a forked child mostly is not: left
 * alone, that, not the watcher, would decide who wins on latency. */
void pin_cpu(void);

/* Results: human table on stdout, rows "workload size watcher metric value"
 * appended to the TSV file named by NXBENCH_TSV (if set). */
void tsv(const char *workload, long size, const char *watcher, const char *metric, double value);

char *mktemp_dir(void);    /* under NXBENCH_DIR or /tmp */
void touch(const char *dir, const char *name);
/* A tree of n directories, fanout 10, one file each; returns the path of the
 * last directory made (malloc'd), where a probe reaches the deepest level. */
char *make_tree(const char *root, int n);
/* The path of directory i (-1: root) of make_tree's layout (malloc'd). */
char *tree_path(const char *root, int i);

#endif
