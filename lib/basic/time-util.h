/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdint.h>

#define USEC_PER_SEC 1000000ULL

/* The realtime clock (timestamps to show and store). */
uint64_t now_usec(void);
/* CLOCK_MONOTONIC (deadlines, durations). */
uint64_t monotonic_usec(void);
/* "2026-11-21T05:44:16.123456Z"; ret must hold 32 bytes. */
void format_timestamp(uint64_t usec, char ret[32]);
/* Parses what format_timestamp() writes (fraction optional). */
int parse_timestamp(const char *s, uint64_t *ret);
/* "30m", "24h", "1h30m", "500ms", "10s", "2d"; a bare number is seconds. */
int parse_duration(const char *s, uint64_t *ret);
