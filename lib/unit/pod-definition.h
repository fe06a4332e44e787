/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Pods kept as services (sdpod-pod-generator(8), sdpod.pod(5)): the
 * operator writes a definition, /etc/sdpod/pods/NAME.pod, and the host's
 * systemd gets NAME.service from it, which runs a fresh pod of that
 * definition on each start (sdpod run --replace --name=NAME ...), in the
 * foreground, as pod@.service runs a prepared one.
 *
 * A definition is a small INI file, parsed here with bounds and checked
 * key by key with the rules of the command line (manifest/app-args.h), so
 * that a mistake is reported at generation time as FILE:LINE, and the unit
 * of a bad definition is not written at all. The definition is the
 * operator's, trusted as the command line is, but a typo must never turn
 * into a unit that does something else. */

#include <stdbool.h>
#include <stddef.h>

#include "basic/error.h"
#include "unit/pod-units.h"

#define POD_DEFINITIONS_DIR "/etc/sdpod/pods"
#define POD_DEFINITION_SUFFIX ".pod"
/* Larger files, longer lines and more keys than this are refused. */
#define POD_DEFINITION_MAX (64 * 1024)
#define POD_DEFINITION_LINE_MAX 4096
#define POD_DEFINITION_APPS_MAX 64

/* Renders the units of the definition path (its name NAME.pod gives the
 * unit's name NAME.service and the pod's default name), whose text is
 * text/size, for a host whose sdpod is sdpod_path: ret->files gets
 * NAME.service, then a link TARGET.wants/NAME.service (or .requires/) for
 * each WantedBy= (RequiredBy=) of its [Install] section. A bad definition
 * is -EINVAL with err "PATH:LINE: what is wrong" (PATH: alone for what no
 * single line says), and *ret is left untouched. Free with
 * pod_units_done(). */
int pod_definition_render(const char *path, const char *text, size_t size, const char *sdpod_path, PodUnits *ret,
                          Error **err);

/* A unit name systemd accepts: NAME.TYPE, NAME of [A-Za-z0-9:_.\-@] (and
 * \xNN escapes), at most 255 bytes, TYPE one of systemd's unit types. */
bool unit_name_is_valid(const char *s);
