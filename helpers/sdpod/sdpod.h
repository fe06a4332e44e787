/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The verbs of sdpod, one file each group. */
int verb_image(int argc, char **argv);
int verb_prepare(int argc, char **argv);
int verb_list(int argc, char **argv);
int verb_status(int argc, char **argv);
int verb_cat_manifest(int argc, char **argv);
int verb_rm(int argc, char **argv);
int verb_gc(int argc, char **argv);
