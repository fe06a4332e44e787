/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* sdpod prepare (and the first half of sdpod run): from a command line to a
 * pod directory with a manifest, a stage1 and the apps' roots. */

#include "basic/error.h"
#include "image/image-store.h"
#include "manifest/app-args.h"
#include "manifest/pod-manifest.h"
#include "pod/pod.h"

/* Builds and validates the manifest of args: resolves each image in the
 * store and starts each app from the image's defaults (entrypoint, command,
 * environment, user, group, working directory), with the flags on top. */
int pod_manifest_from_args(ImageStore *is, const PodArgs *args, PodManifest **ret, Error **err);

/* Adds the app of a (podapp add) to m, checked as prepare checks it (ids
 * within the pod's user namespace, when m has one), with the annotation
 * sdpod/created when created is given; a refused app leaves m unchanged. */
int pod_manifest_add_app_from_args(ImageStore *is, PodManifest *m, const AppArgs *a, const char *created, Error **err);

/* Prepares a pod. Everything that can be checked before the pod exists is
 * (images, flags, manifest, volume sources): bad input creates nothing.
 * Then the pod is created, its manifest written, its stage1 and app roots
 * rendered, and it is moved to target: PREPARED (the lock is dropped with
 * the returned Pod) or RUN (the caller keeps the lock while the pod runs).
 * A failure after creation leaves the pod in prepare/, unlocked once the
 * Pod is freed: prepare-failed, which gc collects. The image store must be
 * open STORE_SHARED, so that image gc cannot remove a tree between the
 * moment it is chosen and the moment the manifest names it. */
int pod_prepare(PodStore *ps, ImageStore *is, const PodArgs *args, PodDir target, Pod **ret, Error **err);

/* What prepare checked, checked again before a prepared pod is run (sdpod
 * run-prepared; a user may have edited its manifest since): the manifest is
 * valid and each app can start from its image's tree. Errors name the
 * manifest's path; the pod is left as it is. */
int pod_check_prepared(const PodStore *ps, ImageStore *is, Pod *p, Error **err);

/* Renders one app's root into a pod directory: makes sure the image's tree
 * exists, and creates the app's overlay directories (apps/NAME/upper, owned
 * by root_uid, the host's id of the pod's root; work; and lower, where the
 * idmapped tree is attached while the overlay is made). The app's root is
 * an overlay of the shared tree, mounted at /opt/stage2/NAME/rootfs in the
 * pod when it runs (pod-run.h). */
int pod_render_app(int pod_fd, ImageStore *is, const PodApp *app, uid_t root_uid, Error **err);
/* The directories of pod_render_app(), without the tree. */
int pod_create_app_dirs(int pod_fd, const char *app, uid_t root_uid, Error **err);
