/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sys/uio.h>

#include "basic/fs.h"
#include "image/archive-util.h"
#include "image/layer-stream.h"

/* Between two threads: a ring of buffers the writer fills and the reader
 * (libarchive's read callback) holds one at a time, until it asks for the
 * next. Bounded: a fast source waits for a slow disk. */
#define PIPE_SLOTS 8
#define PIPE_SLOT_SIZE (1U << 20)

typedef struct LayerStream LayerStream;

typedef struct Pipe {
        LayerStream *stream;            /* its lock, its cancel flag */
        uint8_t *buf[PIPE_SLOTS];
        size_t len[PIPE_SLOTS];
        uint64_t w, r;                  /* slots committed by the writer, released by the reader */
        size_t held;                    /* the reader holds slots r .. r + held - 1 */
        size_t fill;                    /* bytes in slot w, which the writer fills (its own until committed) */
        bool closed;                    /* the writer is done */
        bool reader_gone;               /* the reader stopped: what is written is dropped */
} Pipe;

typedef enum Compression {
        COMPRESSION_UNDECIDED,
        COMPRESSION_NONE,
        COMPRESSION_GZIP,
        COMPRESSION_ZSTD,
        COMPRESSION_XZ,
        COMPRESSION_BZIP2,
} Compression;

struct LayerStream {
        LayerStreamSpec spec;
        LayerOptions layer;
        char what[DIGEST_STRING_SIZE + 32];     /* "layer sha256:..." */

        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool cancelled;

        Sha256 blob_hash;
        uint64_t size;                  /* fed so far */
        uint64_t write_offset;          /* of blob_fd */
        uint64_t synced;                /* writeback started up to here */
        /* The blob is written on a thread of its own, so that the disk's
         * pace never holds up the others. It is written once and not read
         * back soon: with O_DIRECT it goes to the disk without passing
         * through the page cache (a copy and fresh pages fewer). */
        Pipe blob;                      /* feeder -> blob writer thread */
        bool have_writer;
        pthread_t writer_thread;
        int writer_r;
        int blob_flags;                 /* blob_fd's own, given back at the end; -1: unchanged */

        uint8_t head[8];                /* the first bytes, until the compression is known */
        size_t n_head;
        Compression compression;

        Pipe compressed;                /* feeder -> decompress thread (or extract thread: no compression) */
        Pipe tar;                       /* decompress thread -> extract thread */
        bool have_decompress, have_extract;
        pthread_t decompress_thread, extract_thread;

        /* Results of the threads, read after they were joined (or under lock). */
        Sha256 tar_hash;
        uint64_t tar_size;
        int decompress_r, extract_r;
        Error *decompress_err, *extract_err;
};

/* Buffers only for a pipe that has a reader: 8 MiB each. Aligned for
 * O_DIRECT writes. */
static int pipe_alloc(Pipe *p) {
        for (size_t i = 0; i < PIPE_SLOTS; i++)
                if (posix_memalign((void **) &p->buf[i], 4096, PIPE_SLOT_SIZE) != 0) {
                        p->buf[i] = NULL;
                        return -ENOMEM;
                }
        return 0;
}

static void pipe_done(Pipe *p) {
        for (size_t i = 0; i < PIPE_SLOTS; i++)
                free(p->buf[i]);
}

/* Writer side. Returns 0, or -ECANCELED when the stream was cancelled. */
static int pipe_commit_locked(Pipe *p) {
        if (p->fill > 0) {
                p->len[p->w % PIPE_SLOTS] = p->fill;
                p->w++;
                p->fill = 0;
                pthread_cond_broadcast(&p->stream->cond);
        }
        return 0;
}

static int pipe_write(Pipe *p, const uint8_t *data, size_t size) {
        LayerStream *s = p->stream;
        while (size > 0) {
                if (p->fill == 0) {
                        /* A new slot: wait until the reader released one. */
                        pthread_mutex_lock(&s->lock);
                        while (p->w - p->r >= PIPE_SLOTS && !p->reader_gone && !s->cancelled)
                                pthread_cond_wait(&s->cond, &s->lock);
                        bool gone = p->reader_gone, cancelled = s->cancelled;
                        pthread_mutex_unlock(&s->lock);
                        if (cancelled)
                                return -ECANCELED;
                        if (gone)
                                return 0; /* the reader stopped; its error tells why */
                }
                size_t n = PIPE_SLOT_SIZE - p->fill < size ? PIPE_SLOT_SIZE - p->fill : size;
                memcpy(p->buf[p->w % PIPE_SLOTS] + p->fill, data, n);
                p->fill += n;
                data += n;
                size -= n;
                if (p->fill == PIPE_SLOT_SIZE) {
                        pthread_mutex_lock(&s->lock);
                        pipe_commit_locked(p);
                        pthread_mutex_unlock(&s->lock);
                }
        }
        return 0;
}

static void pipe_close(Pipe *p) {
        pthread_mutex_lock(&p->stream->lock);
        if (!p->reader_gone)
                pipe_commit_locked(p);
        p->fill = 0;
        p->closed = true;
        pthread_cond_broadcast(&p->stream->cond);
        pthread_mutex_unlock(&p->stream->lock);
}

/* Reader side: the next block (valid until the next call), 0 at the end,
 * -ECANCELED. */
/* Reader side: up to max blocks that are there (valid until the next
 * call), at least one; 0 at the end, -ECANCELED. */
static ssize_t pipe_readv(Pipe *p, struct iovec *iov, size_t max) {
        LayerStream *s = p->stream;
        pthread_mutex_lock(&s->lock);
        if (p->held > 0) {
                p->r += p->held;
                p->held = 0;
                pthread_cond_broadcast(&s->cond);
        }
        while (p->w == p->r && !p->closed && !s->cancelled)
                pthread_cond_wait(&s->cond, &s->lock);
        ssize_t n;
        if (s->cancelled)
                n = -ECANCELED;
        else {
                while (p->held < max && p->r + p->held < p->w) {
                        size_t i = (p->r + p->held) % PIPE_SLOTS;
                        iov[p->held++] = (struct iovec) { .iov_base = p->buf[i], .iov_len = p->len[i] };
                }
                n = (ssize_t) p->held;
        }
        pthread_mutex_unlock(&s->lock);
        return n;
}

static ssize_t pipe_read(Pipe *p, const void **ret) {
        struct iovec iov;
        ssize_t n = pipe_readv(p, &iov, 1);
        if (n > 0) {
                *ret = iov.iov_base;
                n = (ssize_t) iov.iov_len;
        }
        return n;
}

/* The reader will read no more: the writer never waits for it again. */
static void pipe_reader_done(Pipe *p) {
        pthread_mutex_lock(&p->stream->lock);
        p->reader_gone = true;
        p->r += p->held;
        p->held = 0;
        pthread_cond_broadcast(&p->stream->cond);
        pthread_mutex_unlock(&p->stream->lock);
}

static la_ssize_t archive_pipe_read(struct archive *a, void *userdata, const void **ret) {
        ssize_t n = pipe_read(userdata, ret);
        if (n < 0) {
                archive_set_error(a, (int) -n, "interrupted");
                return ARCHIVE_FATAL;
        }
        return n;
}

static bool stream_cancelled(LayerStream *s) {
        pthread_mutex_lock(&s->lock);
        bool c = s->cancelled;
        pthread_mutex_unlock(&s->lock);
        return c;
}

static void stream_cancel(LayerStream *s) {
        pthread_mutex_lock(&s->lock);
        s->cancelled = true;
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->lock);
}

/* layer_apply's progress hook, on the extract thread: stops it when the
 * stream was aborted. */
static int extract_check_cancelled(void *userdata) {
        return stream_cancelled(userdata) ? -ECANCELED : 0;
}

static void *extract_main(void *userdata) {
        LayerStream *s = userdata;
        Pipe *in = s->have_decompress ? &s->tar : &s->compressed;
        struct archive *a = archive_read_new();
        int r;
        if (!a)
                r = error_sys(&s->extract_err, -ENOMEM, "%s", s->what);
        else {
                /* Decompressed already: only the tar format (and the empty
                 * layer some tools write) is read here. */
                archive_read_support_format_tar(a);
                archive_read_support_format_empty(a);
                if (archive_read_open(a, in, NULL, archive_pipe_read, NULL) != ARCHIVE_OK)
                        r = error_set(&s->extract_err, stream_cancelled(s) ? -ECANCELED : -EBADMSG, "%s: %s", s->what,
                                      archive_error_string(a));
                else
                        r = layer_apply_archive(s->spec.rootfd, a, &s->layer, s->what, &s->extract_err);
                archive_read_free(a);
        }
        pipe_reader_done(in);
        pthread_mutex_lock(&s->lock);
        s->extract_r = r;
        pthread_mutex_unlock(&s->lock);
        return NULL;
}

static void *decompress_main(void *userdata) {
        LayerStream *s = userdata;
        struct archive *a = archive_read_new();
        struct archive_entry *e;
        int r = 0;
        if (!a) {
                r = error_sys(&s->decompress_err, -ENOMEM, "%s", s->what);
                goto finish;
        }
        /* The one filter the first bytes named, and the format that passes
         * its output through as it is. */
        switch (s->compression) {
        case COMPRESSION_GZIP:
                archive_read_support_filter_gzip(a);
                break;
        case COMPRESSION_ZSTD:
                archive_read_support_filter_zstd(a);
                break;
        case COMPRESSION_XZ:
                archive_read_support_filter_xz(a);
                break;
        case COMPRESSION_BZIP2:
                archive_read_support_filter_bzip2(a);
                break;
        default:
                break;
        }
        archive_read_support_format_raw(a);
        if (archive_read_open(a, &s->compressed, NULL, archive_pipe_read, NULL) != ARCHIVE_OK ||
            archive_read_next_header(a, &e) != ARCHIVE_OK) {
                r = -EBADMSG;
        } else {
                const void *block;
                size_t size;
                la_int64_t offset;
                int k;
                while ((k = archive_read_data_block(a, &block, &size, &offset)) == ARCHIVE_OK) {
                        if ((uint64_t) offset != s->tar_size) {
                                k = ARCHIVE_FATAL;
                                break;
                        }
                        sha256_update(&s->tar_hash, block, size);
                        s->tar_size += size;
                        if ((r = pipe_write(&s->tar, block, size)) < 0)
                                break;
                }
                if (r >= 0 && k != ARCHIVE_EOF)
                        r = -EBADMSG;
        }
        if (r == -EBADMSG && stream_cancelled(s))
                r = -ECANCELED;
        if (r == -ECANCELED)
                r = error_set(&s->decompress_err, r, "%s: interrupted", s->what);
        else if (r < 0)
                r = error_set(&s->decompress_err, r, "%s: decompressing: %s", s->what,
                              a ? archive_error_string(a) ?: "bad data" : "bad data");
finish:
        if (a)
                archive_read_free(a);
        pipe_reader_done(&s->compressed);
        pipe_close(&s->tar);
        pthread_mutex_lock(&s->lock);
        s->decompress_r = r;
        pthread_mutex_unlock(&s->lock);
        return NULL;
}

static Compression sniff(const uint8_t *p, size_t n) {
        if (n >= 2 && p[0] == 0x1f && p[1] == 0x8b)
                return COMPRESSION_GZIP;
        if (n >= 4 && p[0] == 0x28 && p[1] == 0xb5 && p[2] == 0x2f && p[3] == 0xfd)
                return COMPRESSION_ZSTD;
        if (n >= 6 && memcmp(p, "\xfd" "7zXZ\0", 6) == 0)
                return COMPRESSION_XZ;
        if (n >= 3 && memcmp(p, "BZh", 3) == 0)
                return COMPRESSION_BZIP2;
        return COMPRESSION_NONE;
}

/* Starts the threads the layer needs, once its first bytes told what it is. */
static int stream_decide(LayerStream *s, Error **err) {
        s->compression = sniff(s->head, s->n_head);
        bool compressed = s->compression != COMPRESSION_NONE;
        s->have_extract = s->spec.rootfd >= 0;
        /* The diff_id of a compressed layer is only known by decompressing. */
        s->have_decompress = compressed && (s->have_extract || s->spec.diff_id);
        /* Nobody reads what no thread is started for (set before any runs). */
        if (!s->have_decompress && !(s->have_extract && !compressed))
                s->compressed.reader_gone = true;
        if (!s->have_extract)
                s->tar.reader_gone = true;
        if ((!s->compressed.reader_gone && pipe_alloc(&s->compressed) < 0) ||
            (!s->tar.reader_gone && pipe_alloc(&s->tar) < 0)) {
                s->have_decompress = s->have_extract = false;
                return error_sys(err, -ENOMEM, "%s", s->what);
        }
        int r = 0;
        if (s->have_decompress) {
                r = -pthread_create(&s->decompress_thread, NULL, decompress_main, s);
                if (r < 0)
                        s->have_decompress = false;
        }
        if (r >= 0 && s->have_extract) {
                r = -pthread_create(&s->extract_thread, NULL, extract_main, s);
                if (r < 0)
                        s->have_extract = false;
        }
        if (r < 0)
                return error_sys(err, r, "%s: starting a thread", s->what);
        return 0;
}

/* Errors that say nothing about the bytes of the layer: no use reading
 * on. Any other (a bad tar, a link to nowhere) may come from a corrupt
 * blob, which its digest, checked at the end, names best. */
static bool error_stops_at_once(int r) {
        switch (-r) {
        case ECANCELED: case EFBIG: case ENOSPC: case EDQUOT: case EIO: case ENOMEM: case EROFS: case EMFILE: case ENFILE:
                return true;
        default:
                return false;
        }
}

/* The first error a thread reported that stops the stream at once, or 0. */
static int stream_thread_failure(LayerStream *s, Error **err) {
        pthread_mutex_lock(&s->lock);
        int r = 0;
        Error **e = NULL;
        if (s->writer_r < 0 && s->writer_r != -ECANCELED) {
                r = s->writer_r;
                pthread_mutex_unlock(&s->lock);
                return error_sys(err, r, "%s: writing the blob", s->what);
        }
        if (s->extract_r < 0 && error_stops_at_once(s->extract_r)) {
                r = s->extract_r;
                e = &s->extract_err;
        } else if (s->decompress_r < 0 && error_stops_at_once(s->decompress_r)) {
                r = s->decompress_r;
                e = &s->decompress_err;
        }
        if (r < 0 && err && !*err) {
                *err = *e;
                *e = NULL;
        }
        pthread_mutex_unlock(&s->lock);
        return r;
}

#define DIRECT_ALIGN 4096U
#define WRITER_BATCH 4           /* slots per write: 4 MiB, what the disk takes in one request */

/* Switches blob_fd to O_DIRECT when its file system takes it. */
static void blob_direct_begin(LayerStream *s) {
        s->blob_flags = -1;
        if (s->write_offset % DIRECT_ALIGN != 0)
                return;
        int flags = fcntl(s->spec.blob_fd, F_GETFL);
        if (flags < 0 || (flags & O_DIRECT) || fcntl(s->spec.blob_fd, F_SETFL, flags | O_DIRECT) < 0)
                return; /* tmpfs and others: buffered */
        s->blob_flags = flags;
}

/* Back to buffered writes (for a tail that is not aligned, or for good). */
static void blob_direct_end(LayerStream *s) {
        if (s->blob_flags >= 0)
                (void) fcntl(s->spec.blob_fd, F_SETFL, s->blob_flags);
        s->blob_flags = -1;
}

static int blob_write_buffered(LayerStream *s, const uint8_t *data, size_t size) {
        if (lseek(s->spec.blob_fd, (off_t) s->write_offset, SEEK_SET) < 0)
                return -errno;
        int r = write_all(s->spec.blob_fd, data, size);
        if (r < 0)
                return r;
        s->write_offset += size;
        /* Start writeback now, so that the sync at the end does not have
         * to wait for all of it at once. */
        if (s->write_offset - s->synced >= (8U << 20)) {
                (void) sync_file_range(s->spec.blob_fd, (off64_t) s->synced, (off64_t) (s->write_offset - s->synced),
                                       SYNC_FILE_RANGE_WRITE);
                s->synced = s->write_offset;
        }
        return 0;
}

/* One block of the pipe: full slots are aligned, the last may not be. */
static int blob_put(LayerStream *s, const uint8_t *data, size_t size) {
        while (s->blob_flags >= 0 && size >= DIRECT_ALIGN) {
                size_t aligned = size - size % DIRECT_ALIGN;
                ssize_t k = pwrite(s->spec.blob_fd, data, aligned, (off_t) s->write_offset);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0 && errno == EINVAL) {
                        /* The file system wants another alignment after all. */
                        blob_direct_end(s);
                        break;
                }
                if (k < 0)
                        return -errno;
                if (k == 0 || k % DIRECT_ALIGN != 0)
                        return -EIO;
                data += k;
                size -= (size_t) k;
                s->write_offset += (uint64_t) k;
                s->synced = s->write_offset;
        }
        if (size == 0)
                return 0;
        blob_direct_end(s);
        return blob_write_buffered(s, data, size);
}

/* Full slots are aligned: several go to the disk in one request. */
static int blob_putv(LayerStream *s, const struct iovec *iov, size_t n) {
        size_t full = 0;
        uint64_t bytes = 0;
        while (full < n && iov[full].iov_len % DIRECT_ALIGN == 0) {
                bytes += iov[full].iov_len;
                full++;
        }
        if (s->blob_flags >= 0 && full > 1) {
                ssize_t k;
                do
                        k = pwritev(s->spec.blob_fd, iov, (int) full, (off_t) s->write_offset);
                while (k < 0 && errno == EINTR);
                if (k == (ssize_t) bytes) {
                        s->write_offset += bytes;
                        s->synced = s->write_offset;
                        iov += full;
                        n -= full;
                } else if (k < 0 && errno != EINVAL)
                        return -errno;
                else if (k >= 0) {
                        /* Short: the rest one by one, from where it stopped. */
                        s->write_offset += (uint64_t) k;
                        s->synced = s->write_offset;
                        size_t skip = (size_t) k;
                        for (; n > 0 && skip >= iov->iov_len; iov++, n--)
                                skip -= iov->iov_len;
                        if (n > 0) {
                                int r = blob_put(s, (const uint8_t *) iov->iov_base + skip, iov->iov_len - skip);
                                if (r < 0)
                                        return r;
                                iov++;
                                n--;
                        }
                }
        }
        for (size_t i = 0; i < n; i++) {
                int r = blob_put(s, iov[i].iov_base, iov[i].iov_len);
                if (r < 0)
                        return r;
        }
        return 0;
}

static void *writer_main(void *userdata) {
        LayerStream *s = userdata;
        int r = 0;
        for (;;) {
                struct iovec iov[WRITER_BATCH];
                ssize_t n = pipe_readv(&s->blob, iov, WRITER_BATCH);
                if (n <= 0) {
                        r = (int) n;
                        break;
                }
                r = blob_putv(s, iov, (size_t) n);
                if (r < 0)
                        break;
        }
        pipe_reader_done(&s->blob);
        pthread_mutex_lock(&s->lock);
        s->writer_r = r;
        pthread_mutex_unlock(&s->lock);
        return NULL;
}

static int stream_push(LayerStream *s, const uint8_t *data, size_t size, Error **err) {
        if (s->compression == COMPRESSION_UNDECIDED) {
                size_t n = sizeof(s->head) - s->n_head < size ? sizeof(s->head) - s->n_head : size;
                memcpy(s->head + s->n_head, data, n);
                s->n_head += n;
                if (s->n_head < sizeof(s->head))
                        return 0; /* end() decides for a shorter blob */
                int r = stream_decide(s, err);
                if (r < 0)
                        return r;
                /* The head goes first; what of it came with this call is in data too. */
                r = pipe_write(&s->compressed, s->head, s->n_head - n);
                if (r >= 0)
                        r = pipe_write(&s->compressed, data, size);
                return r < 0 ? error_set(err, r, "%s: interrupted", s->what) : 0;
        }
        int r = pipe_write(&s->compressed, data, size);
        return r < 0 ? error_set(err, r, "%s: interrupted", s->what) : 0;
}

/* Hash, count, then hand on; write to the blob unless the bytes came from it. */
static int stream_take(LayerStream *s, const uint8_t *data, size_t size, bool write_blob, Error **err) {
        if (s->spec.size >= 0 && s->size + size > (uint64_t) s->spec.size)
                return error_set(err, -EBADMSG, "%s: more than the %" PRIi64 " bytes its descriptor says (corrupt)",
                                 s->what, s->spec.size);
        int r = stream_thread_failure(s, err);
        if (r < 0)
                return r;
        sha256_update(&s->blob_hash, data, size);
        s->size += size;
        if (write_blob && s->have_writer) {
                r = pipe_write(&s->blob, data, size);
                if (r < 0)
                        return error_set(err, r, "%s: interrupted", s->what);
        }
        return stream_push(s, data, size, err);
}

int layer_stream_feed(LayerStream *s, const void *data, size_t size, Error **err) {
        return stream_take(s, data, size, true, err);
}

static void stream_free(LayerStream *s) {
        blob_direct_end(s);
        pipe_done(&s->blob);
        pipe_done(&s->compressed);
        pipe_done(&s->tar);
        error_free(s->decompress_err);
        error_free(s->extract_err);
        pthread_cond_destroy(&s->cond);
        pthread_mutex_destroy(&s->lock);
        free(s);
}

static void stream_join(LayerStream *s) {
        if (s->have_writer)
                pthread_join(s->writer_thread, NULL);
        s->have_writer = false;
        if (s->have_decompress)
                pthread_join(s->decompress_thread, NULL);
        if (s->have_extract)
                pthread_join(s->extract_thread, NULL);
        s->have_decompress = s->have_extract = false;
}

void layer_stream_abort(LayerStream *s) {
        if (!s)
                return;
        stream_cancel(s);
        stream_join(s);
        stream_free(s);
}

int layer_stream_start(const LayerStreamSpec *spec, LayerStream **ret, Error **err) {
        static const LayerOptions default_layer = { .whiteouts = true };
        if (!digest_is_valid(spec->digest) || (spec->diff_id && !digest_is_valid(spec->diff_id)))
                return error_set(err, -EINVAL, "layer: \"%s\": not a sha256 digest",
                                 digest_is_valid(spec->digest) ? spec->diff_id : spec->digest);
        LayerStream *s = calloc(1, sizeof(LayerStream));
        if (!s)
                return error_sys(err, -ENOMEM, "layer %s", spec->digest);
        s->spec = *spec;
        s->blob_flags = -1;
        s->layer = spec->layer ? *spec->layer : default_layer;
        s->layer.progress = extract_check_cancelled;
        s->layer.userdata = s;
        snprintf(s->what, sizeof(s->what), "%s %s", spec->what ?: "layer", spec->digest);
        pthread_mutex_init(&s->lock, NULL);
        pthread_cond_init(&s->cond, NULL);
        sha256_init(&s->blob_hash);
        sha256_init(&s->tar_hash);
        s->compressed = (Pipe) { .stream = s };
        s->tar = (Pipe) { .stream = s };

        /* A resumed blob: what is there goes through the pass first. */
        int r = 0;
        if (spec->resume_size > 0) {
                if (spec->blob_fd < 0)
                        r = error_set(err, -EINVAL, "%s: resuming without a blob", s->what);
                _cleanup_free_ uint8_t *buf = r >= 0 ? malloc(PIPE_SLOT_SIZE) : NULL;
                if (r >= 0 && !buf)
                        r = error_sys(err, -ENOMEM, "%s", s->what);
                for (uint64_t off = 0; r >= 0 && off < spec->resume_size;) {
                        size_t want = spec->resume_size - off < PIPE_SLOT_SIZE ? spec->resume_size - off : PIPE_SLOT_SIZE;
                        ssize_t k = pread(spec->blob_fd, buf, want, (off_t) off);
                        if (k < 0 && errno == EINTR)
                                continue;
                        if (k <= 0)
                                r = error_sys(err, k < 0 ? -errno : -EIO, "%s: reading the partial blob back", s->what);
                        else {
                                r = stream_take(s, buf, (size_t) k, false, err);
                                off += (uint64_t) k;
                        }
                }
                if (r >= 0 && (lseek(spec->blob_fd, (off_t) spec->resume_size, SEEK_SET) < 0 ||
                               ftruncate(spec->blob_fd, (off_t) spec->resume_size) < 0))
                        r = error_sys(err, -errno, "%s: resuming", s->what);
                s->write_offset = s->synced = spec->resume_size;
        }
        /* The writer, for the bytes fed from now on. */
        s->blob = (Pipe) { .stream = s };
        s->blob_flags = -1;
        if (r >= 0 && spec->blob_fd >= 0) {
                if (pipe_alloc(&s->blob) < 0)
                        r = error_sys(err, -ENOMEM, "%s", s->what);
                else {
                        blob_direct_begin(s);
                        r = -pthread_create(&s->writer_thread, NULL, writer_main, s);
                        if (r < 0)
                                r = error_sys(err, r, "%s: starting a thread", s->what);
                        else
                                s->have_writer = true;
                }
        }
        if (r < 0) {
                layer_stream_abort(s);
                return r;
        }
        *ret = s;
        return 0;
}

int layer_stream_end(LayerStream *s, uint64_t *ret_size, Error **err) {
        int r = 0;
        if (s->compression == COMPRESSION_UNDECIDED) {
                /* Fewer bytes than the head: decide on what there is. */
                r = stream_decide(s, err);
                if (r >= 0)
                        r = pipe_write(&s->compressed, s->head, s->n_head);
                if (r < 0) {
                        layer_stream_abort(s);
                        return r == -ECANCELED ? error_set(err, r, "%s: interrupted", s->what) : r;
                }
        }
        pipe_close(&s->compressed);
        if (s->have_writer)
                pipe_close(&s->blob);
        stream_join(s);
        if (s->writer_r < 0) {
                r = error_sys(err, s->writer_r, "%s: writing the blob", s->what);
                stream_free(s);
                return r;
        }

        uint8_t md[SHA256_DIGEST_SIZE];
        char hex[SHA256_HEX_SIZE];
        sha256_final(&s->blob_hash, md);
        sha256_to_hex(md, hex);
        if (s->spec.size >= 0 && s->size != (uint64_t) s->spec.size)
                r = error_set(err, -EBADMSG, "%s: size is %" PRIu64 " bytes, its descriptor says %" PRIi64 " (truncated or corrupt)",
                              s->what, s->size, s->spec.size);
        else if (!streq(hex, digest_hex(s->spec.digest)))
                r = error_set(err, -EBADMSG, "%s: content does not match its digest (it hashes to " DIGEST_PREFIX "%s): corrupt or truncated",
                              s->what, hex);
        else if (s->extract_r < 0 || s->decompress_r < 0) {
                /* The decompressor's reason first: the extractor only saw the end of its input. */
                Error **e = s->decompress_r < 0 ? &s->decompress_err : &s->extract_err;
                r = s->decompress_r < 0 ? s->decompress_r : s->extract_r;
                if (err && !*err) {
                        *err = *e;
                        *e = NULL;
                }
        } else if (s->spec.diff_id) {
                /* Uncompressed, the blob is the tar. */
                if (s->compression != COMPRESSION_NONE) {
                        sha256_final(&s->tar_hash, md);
                        sha256_to_hex(md, hex);
                }
                if (!streq(hex, digest_hex(s->spec.diff_id)))
                        r = error_set(err, -EBADMSG, "%s: its uncompressed content hashes to " DIGEST_PREFIX "%s, not to its diff_id %s (corrupt)",
                                      s->what, hex, s->spec.diff_id);
        }
        if (r >= 0 && s->spec.blob_fd >= 0 && !s->spec.blob_synced_by_caller && fsync(s->spec.blob_fd) < 0)
                r = error_sys(err, -errno, "%s: syncing the blob", s->what);
        if (r >= 0 && ret_size)
                *ret_size = s->size;
        stream_free(s);
        return r;
}
