/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared by the fuzz targets. Each target defines LLVMFuzzerTestOneInput();
 * it is linked either with libFuzzer (-fsanitize=fuzzer) or, compiled with
 * -DFUZZ_STANDALONE, with fuzz-main.c, which feeds it the files of a corpus so
 * that every corpus file runs as a regression test under plain "meson test". */

#include <stddef.h>
#include <stdint.h>

#include "basic/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The regression runner says what the library made of each input, so a test
 * log shows which path a corpus file took; under libFuzzer that would only
 * slow the search down. */
#ifdef FUZZ_STANDALONE
#  define FUZZ_VERBOSE 1
#else
#  define FUZZ_VERBOSE 0
#endif

/* Prints err (if any) when FUZZ_VERBOSE, then frees it. */
void fuzz_error_done(const char *what, Error *err);

/* Prints why an invariant broke and aborts, so libFuzzer (or the regression
 * runner) records the input as a crash. */
__attribute__((noreturn)) void fuzz_fail(const char *fmt, ...) _printf_(1, 2);

/* A per-process scratch directory for the targets that write files:
 *
 *   SCRATCH/outside/sentinel    must never change, nothing may join it
 *   SCRATCH/<allowed names>     whatever the target itself creates
 *
 * SCRATCH is made under $TMPDIR (or /tmp) once per process and removed at a
 * normal exit; after a crash it is kept for inspection. It is also kept open
 * as file descriptor FUZZ_SCRATCH_FD, so /proc/self/fd/1000/outside is a
 * fixed absolute path to the sentinel directory: seeds can carry symlinks
 * pointing there, and if the library ever resolved one outside the tree it
 * writes into, the sentinel check catches it. */
#define FUZZ_SCRATCH_FD 1000

/* Creates the scratch directory on the first call; returns its fd
 * (FUZZ_SCRATCH_FD). Aborts on failure: without it, nothing can be checked. */
int fuzz_scratch(const char *target);
/* Its path. */
const char *fuzz_scratch_path(void);

/* Aborts unless outside/ holds exactly the unchanged sentinel and SCRATCH
 * holds nothing but "outside" and the NULL-terminated allowed names. */
void fuzz_scratch_check(const char *const *allowed);

/* The number of open file descriptors of the process, to catch leaks: the
 * targets run millions of inputs in one process, and so does sdpod's caller
 * over a long-lived store. */
unsigned fuzz_count_fds(void);
