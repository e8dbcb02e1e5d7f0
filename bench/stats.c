/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The clock, percentiles and tree removal: see stats.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "stats.h"

double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double pctl(double *v, int n, double p)
{
	if (n <= 0)
		return -1;
	qsort(v, n, sizeof(*v), cmp_double);
	int i = (int)(p * (n - 1) + 0.5);
	return v[i];
}

double median(double *v, int n)
{
	return pctl(v, n, 0.5);
}

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

void rm_tree(const char *dir)
{
	nftw(dir, rm_one, 64, FTW_DEPTH | FTW_PHYS);
}
