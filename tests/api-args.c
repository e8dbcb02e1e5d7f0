/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "testutil.h"
int main(void) { return 0; }
