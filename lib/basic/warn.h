/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Warnings: things that went wrong but did not stop the operation ("…,
 * ignoring", "…, detached lazily"). Library code does not print; it hands
 * warnings to the handler the binary installed, which prints them once, at
 * the top. Without a handler they are dropped (unit tests install one). */

#include "basic/macro.h"

typedef void (*WarnHandler)(const char *message);

void warn_set_handler(WarnHandler handler);
void warn(const char *fmt, ...) _printf_(1, 2);
