# shellcheck shell=bash disable=SC2034 # variables are set for the scripts
# SPDX-License-Identifier: Apache-2.0
# Helpers shared by the benchmarks in this directory. Sourced, not run.
#
# Conventions: figures go to stdout, progress and errors to stderr, so
# `bench/foo > result.txt` keeps just the report.

# EPOCHREALTIME and the decimal point of printf must not depend on the
# caller's locale.
export LC_ALL=C

bench_die() {
        printf 'bench: %s\n' "$*" >&2
        exit 1
}

bench_note() {
        printf '[%3ds] %s\n' "$SECONDS" "$*" >&2
}

# The directory this benchmark may fill; removed by bench_cleanup.
BENCH_WORK=

bench_cleanup() {
        [[ -n $BENCH_WORK && -d $BENCH_WORK ]] || return 0
        # A second Ctrl-C would leave half of it behind; ignored here, and so
        # in the rm processes started below too.
        trap '' INT
        bench_note "removing $BENCH_WORK..."
        # Several removals at once: on a file system mounted with "discard",
        # freeing blocks waits for the device, and parallel removals overlap
        # those waits (ext4 without a journal: 5x faster here). Never follow
        # a mount point, should a command under test ever leave one behind.
        find "$BENCH_WORK" -mindepth 2 -maxdepth 2 -print0 |
                xargs -0 -r -n 8 -P 8 rm -rf --one-file-system -- || true
        rm -rf --one-file-system -- "$BENCH_WORK" || true
        BENCH_WORK=
}

# Creates the scratch directory under $1 and arranges for it to go away
# however the script ends. An interrupted foreground command has received the
# same SIGINT, so by the time the trap runs nothing of ours is left running.
bench_make_workdir() {
        local base=$1
        [[ -d $base ]] || bench_die "$base: no such directory"
        trap bench_cleanup EXIT
        trap 'exit 130' INT
        trap 'exit 143' TERM
        trap 'exit 129' HUP
        BENCH_WORK=$(mktemp -d "$base/sdpod-bench.XXXXXX")
}

# Wall time of "$@" in microseconds, left in BENCH_US. A shell variable
# rather than $(...), so timing does not include a fork and the command's own
# output is not captured.
BENCH_US=0
bench_time() {
        local t0 t1
        t0=${EPOCHREALTIME/./}
        "$@"
        t1=${EPOCHREALTIME/./}
        BENCH_US=$((t1 - t0))
}

# "TYPE SOURCE MOUNTPOINT" of the file system holding $1.
bench_fs_of() {
        df -PT -- "$1" | awk 'NR == 2 { print $2, $1, $7 }'
}

bench_machine() {
        local cpu
        cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)
        printf '%s CPUs (%s), Linux %s %s, %s MiB RAM\n' "$(nproc)" "${cpu:-unknown}" \
                "$(uname -r)" "$(uname -m)" "$(awk '/^MemTotal/ { print int($2 / 1024) }' /proc/meminfo)"
}

# Other work on the machine is the usual reason for odd figures.
bench_load() {
        cut -d' ' -f1 /proc/loadavg
}

# Reads lines "KEY MICROSECONDS" and prints "KEY MEDIAN_MS MIN_MS COUNT" for
# each key, keys in order of first appearance.
bench_stats() {
        awk '
        !($1 in n) { keys[nk++] = $1 }
        { v[$1, n[$1]++] = $2 }
        END {
                for (k = 0; k < nk; k++) {
                        key = keys[k]
                        m = n[key]
                        for (i = 0; i < m; i++)
                                s[i] = v[key, i]
                        # insertion sort: a handful of samples, and mawk has no asort
                        for (i = 1; i < m; i++) {
                                x = s[i]
                                for (j = i - 1; j >= 0 && s[j] > x; j--)
                                        s[j + 1] = s[j]
                                s[j + 1] = x
                        }
                        med = m % 2 ? s[(m - 1) / 2] : (s[m / 2 - 1] + s[m / 2]) / 2
                        printf "%s %.1f %.1f %d\n", key, med / 1000, s[0] / 1000, m
                }
        }'
}

# sha256 hex of a file.
bench_sha256_of() {
        sha256sum -- "$1" | cut -d' ' -f1
}

# Moves FILE into LAYOUT's blob directory under its digest; leaves
# "DIGEST SIZE" in REPLY.
bench_add_blob() {
        local layout=$1 file=$2 hex size
        hex=$(bench_sha256_of "$file")
        size=$(stat -c %s -- "$file")
        mv -- "$file" "$layout/blobs/sha256/$hex"
        REPLY="sha256:$hex $size"
}

# bench_oci_layout LAYOUT LAYER COMPRESS: an OCI image layout with one layer. LAYER is the
# uncompressed tar; with COMPRESS=gzip the layer blob is its gzip, as
# registries and builders usually ship it.
bench_oci_layout() {
        local layout=$1 layer=$2 compress=$3
        local diff_id media_type layer_digest layer_size config_digest config_size
        local manifest_digest manifest_size arch
        mkdir -p "$layout/blobs/sha256"
        diff_id=sha256:$(bench_sha256_of "$layer")

        if [[ $compress == gzip ]]; then
                # -n: no name or time in the header, for a reproducible digest
                gzip -n -6 -c -- "$layer" >"$layout/layer.tmp"
                media_type=application/vnd.oci.image.layer.v1.tar+gzip
        else
                ln -- "$layer" "$layout/layer.tmp"
                media_type=application/vnd.oci.image.layer.v1.tar
        fi
        bench_add_blob "$layout" "$layout/layer.tmp"
        read -r layer_digest layer_size <<<"$REPLY"

        # The architecture sdpod picks by default, or it would refuse the image.
        case $(uname -m) in
        x86_64) arch=amd64 ;;
        aarch64) arch=arm64 ;;
        *) arch=$(uname -m) ;;
        esac
        jq -cn --arg arch "$arch" --arg diff "$diff_id" --arg created "$(date -u -d "@${EPOCH:-1700000000}" +%FT%TZ)" '{
                created: $created, architecture: $arch, os: "linux",
                config: { Env: ["PATH=/usr/bin"], Cmd: ["/usr/bin/sh"], WorkingDir: "/" },
                rootfs: { type: "layers", diff_ids: [$diff] }
        }' | tr -d '\n' >"$layout/config.tmp"
        bench_add_blob "$layout" "$layout/config.tmp"
        read -r config_digest config_size <<<"$REPLY"

        jq -cn --arg cd "$config_digest" --argjson cs "$config_size" \
                --arg ld "$layer_digest" --argjson ls "$layer_size" --arg lt "$media_type" '{
                schemaVersion: 2,
                mediaType: "application/vnd.oci.image.manifest.v1+json",
                config: { mediaType: "application/vnd.oci.image.config.v1+json", digest: $cd, size: $cs },
                layers: [ { mediaType: $lt, digest: $ld, size: $ls } ]
        }' | tr -d '\n' >"$layout/manifest.tmp"
        bench_add_blob "$layout" "$layout/manifest.tmp"
        read -r manifest_digest manifest_size <<<"$REPLY"

        jq -n --arg md "$manifest_digest" --argjson ms "$manifest_size" '{
                schemaVersion: 2,
                mediaType: "application/vnd.oci.image.index.v1+json",
                manifests: [ {
                        mediaType: "application/vnd.oci.image.manifest.v1+json", digest: $md, size: $ms,
                        annotations: { "org.opencontainers.image.ref.name": "bench:latest" }
                } ]
        }' >"$layout/index.json"
        printf '{"imageLayoutVersion":"1.0.0"}' >"$layout/oci-layout"
}
