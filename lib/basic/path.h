/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>

/* Normalises a name taken from an archive into a relative path inside the
 * archive's tree: leading "/" and "./" are dropped (absolute names are made
 * relative, as tar does), "//" and "/./" are collapsed, a trailing "/" is
 * removed. A ".." component is refused with -EINVAL: no honest image needs one,
 * and lexical ".." handling is where extraction bugs live. The empty result
 * means the root of the tree. Returns a new string in *ret. */
int path_normalize_archive_name(const char *name, char **ret);

/* Splits a normalised path into its parent ("" for the root) and its last
 * component, both newly allocated. */
int path_split(const char *path, char **ret_parent, char **ret_base);

/* True for a plain file name: not empty, not "." or "..", no "/". */
bool filename_is_valid(const char *name);
