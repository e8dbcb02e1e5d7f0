/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the benchmarks (bench/common.h) and `notifyx bench` (tools/bench.c)
 * share: the clock, percentiles, and removing a scratch tree.  Plain C over
 * the C library: no libnotifyx, no exit, nothing printed.
 */
#ifndef BENCH_STATS_H
#define BENCH_STATS_H

double now(void);                         /* CLOCK_MONOTONIC, in seconds */
int cmp_double(const void *a, const void *b); /* for qsort */
double pctl(double *v, int n, double p);  /* sorts v; -1 when n <= 0 */
double median(double *v, int n);          /* sorts v; -1 when n <= 0 */
void rm_tree(const char *dir);            /* dir and all below it; errors ignored */

#endif
