/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The app options of sdpod prepare, sdpod run and podapp add that become
 * isolators of the app (sdpod(1) "App options", sdpod-manifest(5)):
 *
 *   --memory=QUANTITY      resource/memory {"limit": QUANTITY}
 *   --cpus=CPUS            resource/cpu {"limit": CPUS}
 *   --pids-limit=N         sdpod/pids-limit {"limit": N}
 *   --cap-add, --cap-drop  os/linux/capabilities-retain-set (when a
 *                          capability beyond the default set is added) or
 *                          -remove-set (when some are only dropped)
 *   --tmpfs=PATH[:OPTS]    sdpod/tmpfs {"mounts": [...]}
 *   --device=PATH[:ACCESS] sdpod/devices {"allow": [...]}; the node itself
 *                          is a host volume the caller mounts at PATH
 *
 * Checked here with the option named, so that "--memory=lots" is refused
 * as such and not as a field of a manifest. */

#include <json-c/json.h>
#include <stdbool.h>

#include "basic/error.h"
#include "manifest/app-args.h"

/* The isolators of a's options, a JSON array (empty when none). With
 * host_root (a pod without a user namespace), an added capability is the
 * host's: the warning says so. Errors are -EINVAL naming the option. */
int app_options_isolators(const AppArgs *a, const char *app, bool host_root, struct json_object **ret, Error **err);

/* --device=PATH[:ACCESS]: PATH under /dev, leading (through symlinks) to
 * a character or block device of the host under /dev, *ret_node (may be
 * NULL); ACCESS of r, w, m (default rw). */
int device_arg_parse(const char *s, char **ret_path, char **ret_node, char **ret_access, Error **err);
