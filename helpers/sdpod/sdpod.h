/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>

#include "pod/pod.h"

/* The verbs of sdpod, one file each group. */
int verb_image(int argc, char **argv);
int verb_login(int argc, char **argv);
int verb_logout(int argc, char **argv);
int image_pull_verb(int argc, char **argv);
int verb_prepare(int argc, char **argv);
int verb_list(int argc, char **argv);
int verb_status(int argc, char **argv);
int verb_cat_manifest(int argc, char **argv);
int verb_journal(int argc, char **argv);
int verb_rm(int argc, char **argv);
int verb_gc(int argc, char **argv);
int verb_stats(int argc, char **argv);
int verb_run_prepared(int argc, char **argv);
int verb_run(int argc, char **argv);
int verb_stop(int argc, char **argv);
int verb_enter(int argc, char **argv);
int verb_volume(int argc, char **argv);
/* podman's names: list and journal with podman's flags where they map. */
int verb_ps(int argc, char **argv);
int verb_logs(int argc, char **argv);
