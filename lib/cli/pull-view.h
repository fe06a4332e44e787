/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* How a pull shows itself, for sdpod image pull, prepare, run and podapp
 * add alike: on a terminal, a line per layer (bytes, rate, state) and the
 * total, redrawn in place; in a script, one summary line on stderr at the
 * end; with quiet, nothing. It also stops the pull on SIGINT or SIGTERM
 * (cli_catch_interrupts()). */

#include <stdbool.h>

#include "cli/progress.h"
#include "image/image-pull.h"
#include "manifest/app-args.h"

typedef struct PullView {
        ProgressLine line;
        bool quiet;
        uint64_t started_usec;
} PullView;

void pull_view_init(PullView *v, bool quiet);
/* Sets the progress callback and interruption check of opts to v's. */
void pull_view_attach(PullView *v, PullOptions *opts);
/* Erases the progress and, unless quiet, prints the summary of a pull
 * that succeeded ("pulled REF: ..."). */
void pull_view_done(PullView *v, const char *reference, const Image *im, const PullResult *res);
/* Erases the progress of a pull that failed. */
void pull_view_clear(PullView *v);

/* The pulls of prepare, run and podapp add: each app whose image names a
 * registry gets it by args->pull's policy (default missing), with the pull
 * options of args, shown as above; its image becomes the image's id. */
int cli_pull_images(ImageStore *is, PodArgs *args, Error **err);
