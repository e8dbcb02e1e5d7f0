/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* notifyx bench [DIR]: the backend comparison on the user's directory (tools/bench.c). */
#ifndef NOTIFYX_TOOLS_BENCH_H
#define NOTIFYX_TOOLS_BENCH_H

/* argv[0] is "bench"; returns the exit status. */
int tool_bench(int argc, char **argv);

#endif
