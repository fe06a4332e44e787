/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The kvm flavor (sdpod-stage1(7)): the pod is a virtual machine. The run
 * entrypoint holds the pod's lock, as nspawn does for the nspawn flavor,
 * and supervises QEMU, its child; inside the guest runs the nspawn
 * flavor's stage1 (systemd as PID 1, the generator's app and reaper
 * units), so that the manifest means there what it means in a container.
 *
 *   machine     QEMU with KVM where the host can run Debian's kernel in
 *               it, TCG elsewhere (kvm_accel()); q35, the image's kernel
 *               (Debian's cloud kernel) and initramfs (kvm-init, the
 *               guest's /init), no display; its one NIC the pod's
 *               network's (kvm-net.h), none with --net=none
 *   disks       read-only erofs images, each a virtio disk named by its
 *               serial: "stage1", the image's (the nspawn flavor's stage1
 *               rootfs); "pod", made at each start from the pod's manifest
 *               (/sdpod/pod in the guest); "app-I", made from the tree of
 *               the I-th app's image (one disk per distinct tree, the
 *               apps of one image sharing it); made in the pod's cgroup
 *               once the pid file and the signals are set up (a stop
 *               reaches them), removed when the pod ends. What the apps
 *               write stays in the guest's memory (tmpfs overlays)
 *   QEMU        runs as the first id of the pod's range (a pod without
 *               one is refused: two QEMUs of one id could trace each
 *               other), with an environment of its own (none of the
 *               caller's), no_new_privs, QEMU's own seccomp sandbox, in a
 *               network namespace of its own with nothing in it, in the
 *               pod's cgroup (its memory and CPU limits hold it), and dies
 *               with the supervisor (PR_SET_PDEATHSIG). Its files are fds
 *               the supervisor opened (/proc/self/fd/N): it can open
 *               nothing of the host by path but what any user can
 *   console     the guest's serial console (the guest's journal forwards
 *               to it) goes to the pod's console log (pod-log.h) and,
 *               escaped, to the supervisor's stdout
 *   report      a virtio-serial port "sdpod.report", guest to host: lines
 *               of at most KVM_REPORT_LINE_MAX bytes, "ready" (the pod's
 *               systemd is up: READY=1), "status NAME CODE" (an app's exit
 *               status, recorded in status/NAME by the supervisor), "exit
 *               CODE" (the pod's exit code), "alive" (a heartbeat: kvm-init
 *               once before systemd, then pod-helper lifeline every
 *               KVM_HEARTBEAT_USEC). A line that is none of these, an app
 *               not in the manifest, a code that is not 0-255, more than
 *               KVM_REPORT_LINES_MAX lines but heartbeats, or more than
 *               KVM_HEARTBEATS_PER_SEC_MAX heartbeats in a second end the
 *               pod: the guest is hostile, and nothing it says is taken
 *               for more
 *   hang        no report line for the hang timeout (KVM_HANG_TIMEOUT_USEC,
 *               $SDPOD_KVM_HANG_TIMEOUT seconds), counted from QEMU's
 *               start and from each line: the guest hung (or never
 *               booted); QEMU is killed, the pod ends 125, its log says
 *               "the guest hung". The guest can only keep itself alive
 *               this way, as any pod can by running. A host-side deadline
 *               rather than QEMU's watchdog device (i6300esb): a device
 *               QEMU emulates fires only while QEMU runs (not when it is
 *               stopped or wedged) and only once the guest's systemd arms
 *               it (not in a boot that hangs before)
 *   command     a port "sdpod.command", host to guest: "stop" when the
 *               supervisor gets SIGTERM (sdpod stop): the guest's systemd
 *               stops the apps in order and exits; SIGKILL to QEMU after
 *               KVM_STOP_TIMEOUT_USEC
 *   exit        the supervisor exits with the pod's exit code as the
 *               guest reported it, 128+N when QEMU was killed by signal N,
 *               125 when the guest ended without saying (its init failed,
 *               its kernel panicked), after killing what is left in the
 *               pod's cgroup
 *
 * Refused (flavor-check.h): --net=host and ns:, several networks,
 * volumes, terminals, mutable pods; podapp and enter cannot reach the
 * guest yet. */

#include <stdbool.h>
#include <stdint.h>

#include "basic/error.h"

#define KVM_FLAVOR "kvm"
#define KVM_STOP_TIMEOUT_USEC (30 * 1000000ULL)
#define KVM_REPORT_LINE_MAX 256
#define KVM_REPORT_LINES_MAX 4096
/* The guest's heartbeat period, and the default of the hang timeout: 12
 * beats, sized for TCG on a loaded 2-core host, where a boot's silences
 * (QEMU's start to kvm-init, kvm-init to the lifeline) took up to 10 s
 * (sdpod-stage1(7)). */
#define KVM_HEARTBEAT_USEC (5 * 1000000ULL)
#define KVM_HANG_TIMEOUT_USEC (60 * 1000000ULL)
#define KVM_HANG_TIMEOUT_MAX_SEC 86400
#define KVM_HEARTBEATS_PER_SEC_MAX 64
/* The guest's memory without --pod-memory; with it, the pod's memory
 * less KVM_QEMU_OVERHEAD (QEMU itself, TCG's translated code), at least
 * KVM_GUEST_MIN. */
#define KVM_GUEST_MEMORY (512ULL << 20)
#define KVM_QEMU_OVERHEAD (128ULL << 20)
#define KVM_GUEST_MIN (128ULL << 20)

/* "kvm" when this host can run the guest under KVM (/dev/kvm opens, the
 * CPU has vmx or svm, and KVM is not PVM's, which runs only PVM-built
 * kernels), else "tcg"; $SDPOD_KVM_ACCEL overrides. */
const char *kvm_accel(void);

/* The run entrypoint: the working directory is the pod directory, lock_fd
 * its lock. Exits with the pod's exit code; returns only on failure. */
int kvm_run_exec(const char *uuid, int lock_fd, Error **err);

/* A report line from the guest (without its newline), parsed; the
 * supervisor's one parser of what the guest says (fuzzed:
 * tests/fuzz/fuzz-kvm-report.c). */
typedef enum KvmReportKind {
        KVM_REPORT_READY,
        KVM_REPORT_STATUS,
        KVM_REPORT_EXIT,
        KVM_REPORT_ALIVE,
} KvmReportKind;
typedef struct KvmReport {
        KvmReportKind kind;
        char app[65];           /* KVM_REPORT_STATUS: an app's name */
        int code;               /* STATUS and EXIT: 0-255 */
} KvmReport;
/* -EBADMSG with err naming what is wrong (printable) for anything else. */
int kvm_report_parse(const char *line, size_t n, KvmReport *ret, Error **err);
/* The line of r as the guest's pod-helper writes it, with its newline:
 * one format, kept beside its parser (kvm-init, which links nothing of
 * ours, writes KVM_REPORT_ALIVE_LINE). */
void kvm_report_format(const KvmReport *r, char buf[static KVM_REPORT_LINE_MAX + 2]);
#define KVM_REPORT_ALIVE_LINE "alive\n"

/* The hang timeout: $SDPOD_KVM_HANG_TIMEOUT (whole seconds, 1 to
 * KVM_HANG_TIMEOUT_MAX_SEC) or KVM_HANG_TIMEOUT_USEC; -EINVAL for
 * another value. */
int kvm_hang_timeout(uint64_t *ret, Error **err);
