/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Makes every public type of <notifyx.h> reachable from one exported function,
 * so that abidw records their layout.  The library's own exported functions
 * reach struct notifyx_config but not struct notifyx_event, which travels
 * through notifyx_read as bytes.  Built by abi-check.sh into a throwaway
 * shared object; its ABI is the baseline tests/abi/notifyx-types.abi.
 */
#include <notifyx.h>

void notifyx_abi_probe(struct notifyx *nx, struct notifyx_config *config,
		       struct notifyx_event *event);

void notifyx_abi_probe(struct notifyx *nx, struct notifyx_config *config,
		       struct notifyx_event *event)
{
	(void)nx;
	(void)config;
	(void)event;
}
