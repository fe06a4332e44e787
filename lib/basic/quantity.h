/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The quantities of resource limits, as Kubernetes and docker users write
 * them: bytes (app --memory, --pod-memory, an isolator's limit) and CPUs
 * (--cpus, --pod-cpus). */

#include <stdint.h>

/* A byte quantity as appc (Kubernetes) writes it: digits, an optional
 * fraction, and a suffix k M G T P E (powers of 1000) or Ki Mi Gi Ti Pi Ei
 * (powers of 1024). A fraction of a byte is rounded up. -EINVAL, -ERANGE. */
int parse_quantity_bytes(const char *s, uint64_t *ret);
/* CPUs: "2", "1.5" (at most 3 decimals) or millicores "500m". */
int parse_cpu_millis(const char *s, uint64_t *ret);

/* Thousandths of a CPU as systemd's CPUQuota= takes them: a percentage of
 * one CPU, to a tenth ("150%", "2.5%"). */
#define CPU_QUOTA_MAX 32
void format_cpu_quota(uint64_t millis, char ret[static CPU_QUOTA_MAX]);
