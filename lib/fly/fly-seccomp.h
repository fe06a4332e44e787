/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The system call filter of an app of a fly pod, which no systemd runs:
 * ONE seccomp filter built with libseccomp from the app's AppIsolation
 * (unit/app-isolators.h), the same rule the nspawn flavor hands systemd as
 * SystemCallFilter=, SystemCallErrorNumber=, SystemCallArchitectures=,
 * RestrictAddressFamilies=~AF_VSOCK and RestrictNamespaces=. The @groups
 * are expanded with the members the build host's systemd gives them
 * (syscall-groups.h, generated from "systemd-analyze syscall-filter"), so
 * both flavors allow and refuse the same calls:
 *
 *   allowed    the allowed names and groups less the denied ones; anything
 *              else fails with the isolation's errno (or kills the process
 *              without one); with no allow-list, everything but the denied
 *   arch       the machine's own ABI only (native): a call through another
 *              (i386's int 0x80, x32) kills the process
 *   vsock      socket(AF_VSOCK, ...) fails with EAFNOSUPPORT
 *   namespaces clone() and unshare() with any CLONE_NEW* flag and setns()
 *              fail with EPERM, clone3() with ENOSYS (its flags are out of
 *              seccomp's reach: the C library falls back to clone())
 *
 * A name this architecture does not have is skipped, as systemd does. */

#include "basic/error.h"
#include "unit/app-isolators.h"

/* Whether name (without '@') is a group, for tests. */
bool syscall_group_exists(const char *name);

/* Expands names and @groups into system call names (NULL-terminated,
 * without duplicates, in no particular order); unknown groups are
 * -EINVAL naming them. */
int syscall_names_expand(char *const *names, char ***ret, Error **err);

/* Builds the filter of iso and loads it into this thread (the caller has
 * set no_new_privs or holds CAP_SYS_ADMIN); what was set up before is not
 * filtered, what runs after is. No filter in iso (both lists NULL, no
 * vsock or namespace rule): nothing is loaded. */
int seccomp_default_load(const AppIsolation *iso, Error **err);
