/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What a stage1 flavor other than nspawn cannot do (the fly flavor,
 * fly/fly-run.h; the kvm flavor, kvm/kvm-run.h), refused when a pod is
 * prepared with it, and again by its run entrypoint. */

#include <stdbool.h>

#include "basic/error.h"
#include "manifest/pod-manifest.h"

/* 0, or -EOPNOTSUPP naming the flavor and what it cannot do for m. */
int fly_manifest_check(const PodManifest *m, Error **err);
int kvm_manifest_check(const PodManifest *m, Error **err);
/* The most apps of a kvm pod: each is a disk of the VM. */
#define KVM_APPS_MAX 10
/* The check of flavor (stage1.h's names; nspawn and others: none). */
int stage1_flavor_check(const char *flavor, const PodManifest *m, Error **err);
