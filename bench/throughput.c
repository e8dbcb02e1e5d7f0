/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Throughput: a burst of FILES creations, writes and deletions in one
 * directory, made while the watcher is stopped (SIGSTOP), so that the kernel
 * holds them all; then the watcher is let go and timed until it reports the
 * entry STOP made last.  Events per second = kernel events of the burst /
 * that time; CPU = what the watcher's threads ran meanwhile.  Every watcher
 * of common.h, interleaved run by run; medians; ratios against the raw
 * inotify reader of the same run.
 *
 *   bench/throughput [FILES [RUNS]]   (default 3000 files: 9001 events; fswatch,
 *                                      whose kernel watches ask for every event,
 *                                      gets 15001, under the kernel's default
 *                                      queue of 16384)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

#define MAX_RUNS 64

static void burst(const char *dir, int n)
{
	int dfd = open(dir, O_PATH | O_DIRECTORY);
	char name[32], data[64];

	memset(data, 'x', sizeof(data));
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		int fd = openat(dfd, name, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0 || write(fd, data, sizeof(data)) != sizeof(data))
			exit(1);
		close(fd);
	}
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		unlinkat(dfd, name, 0);
	}
	close(dfd);
	touch(dir, "STOP");
}

int main(int argc, char **argv)
{
	int files = argc > 1 ? atoi(argv[1]) : 3000, runs = argc > 2 ? atoi(argv[2]) : 5;
	struct watcher *w;
	int nw = watchers_all(&w);
	double (*t)[MAX_RUNS] = calloc(nw, sizeof(*t)), (*cpu)[MAX_RUNS] = calloc(nw, sizeof(*cpu));
	int *ok = calloc(nw, sizeof(int));
	long *seen = calloc(nw, sizeof(long));
	long events = 3L * files + 1;
	static struct wproc p;

	pin_cpu();

	if (files < 1 || runs < 1 || runs > MAX_RUNS)
		return fprintf(stderr, "usage: %s [FILES [RUNS<=%d]]\n", argv[0], MAX_RUNS), 2;
	for (int r = 0; r < runs; r++) {
		for (int j = 0; j < nw; j++) {
			int i = r % 2 ? nw - 1 - j : j; /* order changes run by run */
			struct wopts o = { .events = B_CREATE | B_MODIFY | B_DELETE };
			char *l;

			if (w[i].absent)
				continue;
			o.dir = mktemp_dir();
			if (wp_start(&p, &w[i], &o) < 0 || wp_ready(&p, o.dir, 10) < 0) {
				fprintf(stderr, "throughput: %s did not start\n", w[i].name);
				goto next;
			}
			kill(p.pid, SIGSTOP);
			burst(o.dir, files);
			double c0 = wp_cpu(&p), t0 = now();
			kill(p.pid, SIGCONT);
			long n = 0;
			if (w[i].kind != W_CMD) {
				l = wp_line(&p, 60);
				if (!l || sscanf(l, "end %ld", &n) != 1) {
					fprintf(stderr, "throughput: %s: got '%s'\n", w[i].name, l ? l : "");
					goto fail;
				}
			} else {
				while ((l = wp_line(&p, 60)) && (n++, !strstr(l, "STOP")))
					if (strstr(l, "Overflow")) { /* fswatch: STOP may be lost */
						fprintf(stderr, "throughput: %s: the kernel queue "
							"overflowed\n", w[i].name);
						goto next;
					}
				if (!l)
					goto fail;
			}
			t[i][ok[i]] = now() - t0;
			cpu[i][ok[i]] = wp_cpu(&p) - c0;
			ok[i]++;
			seen[i] = n;
			goto next;
fail:
			fprintf(stderr, "throughput: %s: %s\n", w[i].name,
				p.eof ? "exited before STOP" : "no STOP within 60 s");
next:
			wp_stop(&p);
			rm_tree(o.dir);
			free((char *)o.dir);
		}
	}

	double ref_rate = 0, ref_cpu = 0, rate[16] = { 0 }, cpe[16] = { 0 };
	printf("throughput: %d files created, written, deleted in one directory (%ld kernel "
	       "events), median of %d runs\n", files, events, runs);
	printf("  %-14s %12s %8s %10s %12s %8s %8s\n", "watcher", "events/s", "x raw", "CPU ms",
	       "CPU us/event", "x raw", "reported");
	for (int i = 0; i < nw; i++) {
		if (w[i].absent || !ok[i]) {
			printf("  %-14s %s\n", w[i].name, w[i].absent ? w[i].absent : "failed");
			continue;
		}
		double tm = median(t[i], ok[i]), cm = median(cpu[i], ok[i]);
		rate[i] = events / tm;
		cpe[i] = cm / events * 1e6;
		if (i == 0) {
			ref_rate = rate[i];
			ref_cpu = cpe[i];
		}
		printf("  %-14s %12.0f %8.2f %10.2f %12.3f %8.2f %8ld\n", w[i].name, rate[i],
		       ref_rate ? rate[i] / ref_rate : 0, cm * 1e3, cpe[i], ref_cpu ? cpe[i] / ref_cpu : 0,
		       seen[i]);
		tsv("throughput", files, w[i].name, "events_per_s", rate[i]);
		tsv("throughput", files, w[i].name, "ratio_raw", ref_rate ? rate[i] / ref_rate : 0);
		tsv("throughput", files, w[i].name, "cpu_us_per_event", cpe[i]);
		tsv("throughput", files, w[i].name, "reported", seen[i]);
	}
	printf("  (reported: events or lines the watcher gave until STOP; tools print one line per\n"
	       "   event, fswatch may merge several into one line; a scanning backend sees states)\n");
	/* the targets of issue 6 */
	int raw = 0, lib = 1, tool = -1, best = -1;
	for (int i = 0; i < nw; i++) {
		if (!strcmp(w[i].name, "notifyx watch"))
			tool = i;
		if ((!strcmp(w[i].name, "inotifywait") || !strcmp(w[i].name, "fswatch")) && rate[i] &&
		    (best < 0 || rate[i] > rate[best]))
			best = i;
	}
	if (rate[raw] && rate[lib])
		printf("target: inotify backend >= 0.85x raw events/s: %.2fx %s\n", rate[lib] / rate[raw],
		       rate[lib] / rate[raw] >= 0.85 ? "MET" : "MISSED");
	if (tool >= 0 && best >= 0 && rate[tool]) {
		int met = rate[tool] / rate[best] >= 1.5 && cpe[tool] < cpe[best];
		printf("target: notifyx watch >= 1.5x events/s of %s (the faster tool) at less CPU per "
		       "event: %.2fx, CPU/event %.2fx %s\n", w[best].name, rate[tool] / rate[best],
		       cpe[tool] / cpe[best], met ? "MET" : "MISSED");
		tsv("throughput", files, "notifyx watch", "ratio_best_tool", rate[tool] / rate[best]);
	}
	return 0;
}
