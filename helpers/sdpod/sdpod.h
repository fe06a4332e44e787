/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The verbs of sdpod, one file each group. */
int verb_image(int argc, char **argv);
