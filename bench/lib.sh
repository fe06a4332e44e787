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
        bench_oci_image "$1" "$3" bench:latest "$2"
}

# bench_oci_image LAYOUT COMPRESS REF LAYER...: an OCI image layout with
# these layers (uncompressed tars, in order; gzip-compressed in the blobs
# with COMPRESS=gzip), its index entry named REF
# (org.opencontainers.image.ref.name). The layer tars are left alone.
bench_oci_image() {
        local layout=$1 compress=$2 ref=$3
        shift 3
        local layer media_type layer_digest layer_size config_digest config_size
        local manifest_digest manifest_size arch diff_ids='[]' layers='[]'
        mkdir -p "$layout/blobs/sha256"
        for layer; do
                diff_ids=$(jq -c --arg d "sha256:$(bench_sha256_of "$layer")" '. + [$d]' <<<"$diff_ids")
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
                layers=$(jq -c --arg ld "$layer_digest" --argjson ls "$layer_size" --arg lt "$media_type" \
                        '. + [{ mediaType: $lt, digest: $ld, size: $ls }]' <<<"$layers")
        done

        # The architecture sdpod picks by default, or it would refuse the image.
        case $(uname -m) in
        x86_64) arch=amd64 ;;
        aarch64) arch=arm64 ;;
        *) arch=$(uname -m) ;;
        esac
        jq -cn --arg arch "$arch" --argjson diffs "$diff_ids" --arg created "$(date -u -d "@${EPOCH:-1700000000}" +%FT%TZ)" '{
                created: $created, architecture: $arch, os: "linux",
                config: { Env: ["PATH=/usr/bin"], Cmd: ["/usr/bin/sh"], WorkingDir: "/" },
                rootfs: { type: "layers", diff_ids: $diffs }
        }' | tr -d '\n' >"$layout/config.tmp"
        bench_add_blob "$layout" "$layout/config.tmp"
        read -r config_digest config_size <<<"$REPLY"

        jq -cn --arg cd "$config_digest" --argjson cs "$config_size" --argjson layers "$layers" '{
                schemaVersion: 2,
                mediaType: "application/vnd.oci.image.manifest.v1+json",
                config: { mediaType: "application/vnd.oci.image.config.v1+json", digest: $cd, size: $cs },
                layers: $layers
        }' | tr -d '\n' >"$layout/manifest.tmp"
        bench_add_blob "$layout" "$layout/manifest.tmp"
        read -r manifest_digest manifest_size <<<"$REPLY"

        jq -n --arg md "$manifest_digest" --argjson ms "$manifest_size" --arg ref "$ref" '{
                schemaVersion: 2,
                mediaType: "application/vnd.oci.image.index.v1+json",
                manifests: [ {
                        mediaType: "application/vnd.oci.image.manifest.v1+json", digest: $md, size: $ms,
                        annotations: { "org.opencontainers.image.ref.name": $ref }
                } ]
        }' >"$layout/index.json"
        printf '{"imageLayoutVersion":"1.0.0"}' >"$layout/oci-layout"
}

# ---------------------------------------------------------------------------
# A generated image tree (bench/image-import, bench/image-pull): about 110 MB
# in some 3,000 files of 1 KiB to 10 MiB, text and random data, nested
# directories and symlinks, the same for the same seed.
# ---------------------------------------------------------------------------

# Path components that look like a distribution's tree. The words do not
# matter, only that paths get realistic lengths and depths.
readonly BENCH_WORDS=(lib share bin include doc locale python3 site-packages node_modules core util net
        crypto data icons man zoneinfo perl5 gems cache conf plugins modules x86_64-linux-gnu)

# A 30-bit random number; $RANDOM alone has 15 bits.
bench_rand30() {
        REPLY=$(((RANDOM << 15) | RANDOM))
}

# Writes the plan of the tree to stdout, one line per entry:
#   d PATH                     directory
#   f KIND MODE SIZE PATH      regular file, KIND text or bin
#   l TARGET PATH              symlink
# Drawn from $RANDOM seeded with SEED, so the same seed gives the same tree.
# Usage: bench_plan_tree SEED >PLAN
bench_plan_tree() {
        local seed=$1
        RANDOM=$seed
        local -a dirs=(usr usr/bin usr/lib usr/share etc opt var var/lib)
        local -a files=()
        local i n=0 parent d

        # Each new directory hangs under a random earlier one: a few shallow
        # wide directories and some deep chains, as real trees have.
        for ((i = 0; i < 260; i++)); do
                parent=${dirs[RANDOM % ${#dirs[@]}]}
                dirs+=("$parent/${BENCH_WORDS[RANDOM % ${#BENCH_WORDS[@]}]}-$i")
        done
        for d in "${dirs[@]}"; do
                echo "d $d"
        done

        # "count min max percent-text": many small files, some medium ones,
        # a few big ones.
        local -a classes=("3000 1024 16384 70" "85 102400 1048576 50" "5 5242880 10485760 50")
        local class count min max text kind mode size path
        local -a exts
        for class in "${classes[@]}"; do
                read -r count min max text <<<"$class"
                for ((i = 0; i < count; i++, n++)); do
                        bench_rand30
                        size=$((min + REPLY % (max - min + 1)))
                        mode=644
                        if ((RANDOM % 100 < text)); then
                                kind=text
                                exts=(py txt conf h json)
                        else
                                kind=bin
                                exts=(so bin dat pyc)
                                ((RANDOM % 3)) || mode=755
                        fi
                        path=${dirs[RANDOM % ${#dirs[@]}]}/${BENCH_WORDS[RANDOM % ${#BENCH_WORDS[@]}]}-$n.${exts[RANDOM % ${#exts[@]}]}
                        files+=("$path")
                        echo "f $kind $mode $size $path"
                done
        done

        # Symlinks: the usual "libfoo.so -> libfoo.so.1" next to its target,
        # merged-/usr links at the top, and absolute ones (dangling here, as
        # in many images) that only make sense inside a container.
        local f
        for ((i = 0; i < 150; i++)); do
                f=${files[RANDOM % ${#files[@]}]}
                echo "l ${f##*/} ${f%/*}/link-$i-${f##*/}"
        done
        echo "l usr/bin bin"
        echo "l usr/lib lib"
        echo "l usr/bin sbin"
        for ((i = 0; i < 20; i++)); do
                f=${files[RANDOM % ${#files[@]}]}
                echo "l /$f etc/alt-$i"
        done
}

# Makes DIR/text.pool (compressible, code-like lines) and DIR/bin.pool
# (incompressible) holding at least TEXT and BIN bytes. Both are
# deterministic: awk's generator seeded with SEED, and AES-CTR of zeros with
# a key made from SEED.
# Usage: bench_make_pools DIR TEXT BIN SEED
bench_make_pools() {
        local dir=$1 text_bytes=$2 bin_bytes=$3 seed=$4
        head -c "$bin_bytes" /dev/zero |
                openssl enc -aes-128-ctr -K "$(printf '%032x' "$seed")" -iv 00000000000000000000000000000000 \
                        >"$dir/bin.pool"
        awk -v seed="$seed" -v bytes="$text_bytes" '
        BEGIN {
                srand(seed)
                letters = "abcdefghijklmnopqrstuvwxyz_"
                nv = 3000
                for (i = 0; i < nv; i++) {
                        len = 2 + int(rand() * rand() * 14)
                        w = ""
                        for (j = 0; j < len; j++)
                                w = w substr(letters, 1 + int(rand() * 27), 1)
                        vocab[i] = w
                }
                split("( ) = , ; . : { } [ ] -> == + - * / # \"", punct, " ")
                n = 0
                while (n < bytes) {
                        line = substr("                        ", 1, 4 * int(rand() * rand() * 6))
                        k = 1 + int(rand() * 11)
                        for (j = 0; j < k; j++) {
                                # skewed towards a few frequent words, as in code
                                line = line vocab[int(nv * rand() ^ 3)]
                                r = rand()
                                if (r < 0.3)
                                        line = line punct[1 + int(rand() * 18)]
                                else if (r < 0.38)
                                        line = line int(rand() * 65536)
                                line = line " "
                        }
                        print line
                        n += length(line) + 1
                }
        }' >"$dir/text.pool"
}

# Creates the planned tree under ROOT from the plan file; the pools of
# content are made (and removed again) in the directory POOLS.
# Usage: bench_make_tree ROOT PLAN POOLS SEED
bench_make_tree() {
        local root=$1 plan=$2 pools=$3 seed=$4
        local text_bytes bin_bytes
        read -r text_bytes bin_bytes < <(awk '$1 == "f" { s[$2] += $4 } END { print s["text"] + 0, s["bin"] + 0 }' "$plan")
        bench_make_pools "$pools" "$text_bytes" "$bin_bytes" "$seed"

        mkdir -p "$root"
        awk '$1 == "d" { print $2 }' "$plan" | (cd "$root" && xargs mkdir -p --)

        # Each file takes the next SIZE bytes of its pool: the pools are read
        # through shared descriptors, and head -c reads no more than asked.
        local type kind mode size path
        exec 3<"$pools/text.pool" 4<"$pools/bin.pool"
        while read -r type kind mode size path; do
                [[ $type == f ]] || continue
                if [[ $kind == text ]]; then
                        head -c "$size" <&3 >"$root/$path"
                else
                        head -c "$size" <&4 >"$root/$path"
                fi
                [[ $mode == 644 ]] || chmod "$mode" "$root/$path"
        done <"$plan"
        exec 3<&- 4<&-
        rm -f "$pools/text.pool" "$pools/bin.pool"

        local target
        while read -r type target path; do
                [[ $type == l ]] || continue
                ln -s -- "$target" "$root/$path"
        done <"$plan"
}
