/* SPDX-License-Identifier: Apache-2.0 */
/* sdpod image pull (image-pull.h). Everything a registry sends is hostile:
 * documents are bounded (REGISTRY_MANIFEST_MAX) and parsed by oci-manifest,
 * every blob is checked against the digest and size its manifest gives,
 * and the manifest against the digest the reference or index gives, so a
 * registry can make a pull fail but cannot make it store other content
 * than what was asked for. */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "basic/fs.h"
#include "basic/json-util.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "image/image-pull.h"
#include "image/layer-stream.h"
#include "image/oci-manifest.h"
#include "image/reference.h"
#include "image/signature.h"
#include "image/tree.h"

/* How often a pull waiting for another one's download of a blob looks
 * whether it is done, or it was interrupted. */
#define LOCK_POLL_USEC (50 * 1000)
#define COPY_BUFFER_SIZE (1U << 20)

int pull_policy_from_string(const char *s) {
        if (streq(s, "missing"))
                return PULL_MISSING;
        if (streq(s, "always"))
                return PULL_ALWAYS;
        if (streq(s, "never"))
                return PULL_NEVER;
        return -EINVAL;
}

static int parse_tls_verify(const char *s) {
        if (streq(s, "true") || streq(s, "yes") || streq(s, "1"))
                return 1;
        if (streq(s, "false") || streq(s, "no") || streq(s, "0"))
                return 0;
        return -EINVAL;
}

int pull_options_set(PullOptions *o, const char *option, const char *value, Error **err) {
        if (streq(option, "tls-verify")) {
                int v = parse_tls_verify(value);
                if (v < 0)
                        return error_set(err, -EINVAL, "--tls-verify=%s: expected true or false", value);
                o->registry.tls_verify = v;
                return 0;
        }
        if (streq(option, "creds")) {
                /* USER:PASSWORD; the password may hold ':' */
                const char *colon = strchr(value, ':');
                if (!colon || colon == value)
                        return error_set(err, -EINVAL, "--creds: expected USER:PASSWORD");
                free((char *) o->registry.username);
                if (!(o->registry.username = strndup(value, (size_t) (colon - value))))
                        return error_sys(err, -ENOMEM, "--creds");
                o->registry.password = colon + 1;
                return 0;
        }
        const char **field = streq(option, "cert-dir")           ? &o->registry.cert_dir
                           : streq(option, "authfile")           ? &o->registry.auth_file
                           : streq(option, "signature-policy")   ? &o->signature_policy
                           : streq(option, "registries-d")       ? &o->registries_d
                           : streq(option, "platform")           ? &o->platform
                                                                 : NULL;
        if (!field)
                return -ENOENT;
        if (!*value)
                return error_set(err, -EINVAL, "--%s: expected a value", option);
        *field = value;
        return 0;
}

void pull_options_done(PullOptions *o) {
        /* Only the user name of --creds is a copy. */
        free((char *) o->registry.username);
        o->registry.username = NULL;
}

/* --- one pull ---------------------------------------------------------------------------- */

typedef struct PullLayer {
        const OciDescriptor *desc;
        const char *diff_id;    /* NULL: the config gives none */
        /* Under Pull.lock: */
        bool claimed;           /* by a worker or by the main thread */
        bool by_main;           /* claimed by the main thread: streams into the tree */
        bool stored;            /* in the store, verified */
        int error;              /* a worker's failure (< 0), its message in err */
        Error *err;
} PullLayer;

typedef struct Pull {
        ImageStore *store;
        const PullOptions *opts;
        const char *source;     /* the reference as given, for messages */
        ImageReference ref;
        Registry *registry;
        int partial_fd;         /* images/partial */
        OciManifest manifest;
        OciConfig config;
        char manifest_digest[DIGEST_STRING_SIZE];
        char *manifest_body;    /* of the image manifest */
        size_t manifest_size;
        char *config_body;
        size_t config_size;
        PullLayer *layers;
        PullLayerProgress *progress;    /* what the progress callback sees */
        size_t n_layers;
        LayerBudget budget;
        pthread_mutex_t lock;
        pthread_cond_t changed;
        bool stop;              /* the pull failed: workers stop */
        PullResult result;
} Pull;

static bool interrupted(const Pull *p) {
        return p->opts->registry.interrupted && p->opts->registry.interrupted();
}

static int report(Pull *p, bool rendering) {
        if (!p->opts->progress)
                return interrupted(p) ? -ECANCELED : 0;
        PullProgress pp = {
                .reference = p->source,
                .layers = p->progress,
                .n_layers = p->n_layers,
                .rendering = rendering,
        };
        return p->opts->progress(&pp, p->opts->userdata);
}

/* The manifest the reference names; an index is resolved to the image for
 * the platform. Sets p->manifest_digest to the digest of the top document
 * (what a signature signs) and ret_id to the image manifest's digest. */
static int fetch_manifest(Pull *p, char ret_id[DIGEST_STRING_SIZE], Error **err) {
        char os[32], arch[32], variant[32];
        int r = oci_platform_parse(p->opts->platform, os, arch, variant, err);
        if (r < 0)
                return r;
        const char *reference = p->ref.digest ? p->ref.digest : p->ref.tag;
        _cleanup_free_ char *body = NULL, *media_type = NULL;
        size_t size;
        r = registry_get_manifest(p->registry, reference, false, &body, &size, &media_type, p->manifest_digest, err);
        if (r < 0)
                return r;
        memcpy(ret_id, p->manifest_digest, DIGEST_STRING_SIZE);

        /* An index (maybe of indexes): choose, then fetch what was chosen,
         * by digest, which registry_get_manifest() verifies. */
        for (unsigned depth = 0;; depth++) {
                char what[256];
                snprintf(what, sizeof(what), "%s: manifest %s", p->source, ret_id);
                r = oci_document_is_index(body, size, media_type, what, err);
                if (r < 0)
                        return r;
                if (r == 0) {
                        if ((r = oci_manifest_parse(body, size, what, &p->manifest, err)) < 0)
                                return r;
                        /* Stored with the image: the record names it. */
                        p->manifest_body = TAKE_PTR(body);
                        p->manifest_size = size;
                        return 0;
                }
                if (depth >= 2)
                        return error_set(err, -EBADMSG, "%s: indexes nested more than twice", what);
                OciPlatform platform = { .os = os, .architecture = arch, .variant = variant };
                _cleanup_(oci_descriptor_done) OciDescriptor d = {};
                _cleanup_error_ Error *e = NULL;
                r = oci_index_select(body, size, what, &platform, NULL, &d, &e);
                if (r == -ENOENT)
                        return error_set(err, r, "%s; choose one with --platform", e->msg);
                if (r < 0)
                        return error_set(err, r, "%s", e->msg);
                free(body);
                free(media_type);
                body = media_type = NULL;
                r = registry_get_manifest(p->registry, d.digest, false, &body, &size, &media_type, ret_id, err);
                if (r < 0)
                        return r;
                if (size != d.size)
                        return error_set(err, -EBADMSG, "%s: manifest %s: %zu bytes, the index says %llu", p->source,
                                         d.digest, size, (unsigned long long) d.size);
        }
}

/* Writes a small verified document (manifest, config) into the store. */
static int store_document(Pull *p, const void *data, size_t size, const char *digest, Error **err) {
        if (image_store_has_blob(p->store, digest))
                return 0;
        int r = image_store_write_blob(p->store, data, size, digest);
        return r < 0 ? error_sys(err, r, "%s: storing %s", p->source, digest) : 0;
}

/* A small blob (a config) into memory, verified against its digest and
 * size before anyone reads it. */
typedef struct MemorySink {
        char *data;
        size_t size, max;
} MemorySink;

static int memory_sink_write(const void *data, size_t size, void *userdata) {
        MemorySink *m = userdata;
        if (size > m->max - m->size)
                return -EFBIG;
        memcpy(m->data + m->size, data, size);
        m->size += size;
        return 0;
}

static int fetch_small_blob(Pull *p, const OciDescriptor *d, char **ret, size_t *ret_size, Error **err) {
        MemorySink m = { .max = (size_t) d->size };
        if (!(m.data = malloc(m.max + 1)))
                return error_sys(err, -ENOMEM, "%s", p->source);
        _cleanup_error_ Error *e = NULL;
        int64_t k = registry_get_blob(p->registry, d->digest, 0, memory_sink_write, &m, &e);
        int r = k < 0 ? (int) k : 0;
        if (r == -EFBIG)
                r = error_set(err, -EBADMSG, "%s: blob %s: more than the %llu bytes its descriptor says", p->source,
                              d->digest, (unsigned long long) d->size);
        else if (r < 0 && err && !*err)
                *err = TAKE_PTR(e);
        char hex[SHA256_HEX_SIZE];
        if (r >= 0) {
                sha256_hex_of(m.data, m.size, hex);
                if (m.size != d->size || !streq(hex, digest_hex(d->digest)))
                        r = error_set(err, -EBADMSG, "%s: blob %s: content does not match its digest "
                                      "(%zu bytes hashing to " DIGEST_PREFIX "%s)", p->source, d->digest, m.size, hex);
        }
        if (r < 0) {
                free(m.data);
                return r;
        }
        m.data[m.size] = 0;
        *ret = m.data;
        *ret_size = m.size;
        return 0;
}

/* Signatures from a lookaside (signature.h): fetched with the registry's
 * TLS settings. */
static int fetch_signature(const char *url, size_t max, char **ret, size_t *ret_size, void *userdata, Error **err) {
        return registry_get_url(userdata, url, max, ret, ret_size, err);
}

/* --- layers ------------------------------------------------------------------------------ */

typedef struct Sink {
        Pull *pull;
        size_t index;
        LayerStream *stream;
        bool main_thread;       /* may call the progress callback */
        Error *err;             /* why the sink stopped the transfer */
} Sink;

static int sink_write(const void *data, size_t size, void *userdata) {
        Sink *s = userdata;
        Pull *p = s->pull;
        if (__atomic_load_n(&p->stop, __ATOMIC_RELAXED) || interrupted(p))
                return error_set(&s->err, -ECANCELED, "%s: interrupted", p->source);
        int r = layer_stream_feed(s->stream, data, size, &s->err);
        if (r < 0)
                return r;
        __atomic_add_fetch(&p->progress[s->index].bytes, size, __ATOMIC_RELAXED);
        __atomic_add_fetch(&p->result.bytes_fetched, size, __ATOMIC_RELAXED);
        r = s->main_thread ? report(p, false) : 0;
        return r < 0 ? error_set(&s->err, r, "%s: interrupted", p->source) : 0;
}

/* Opens and locks images/partial/HEX, the download of one blob in progress
 * (or interrupted), into *ret_fd; -1 there when the store got the blob
 * meanwhile (another pull fetched it while we waited). */
static int lock_partial(Pull *p, const char *digest, int *ret_fd, Error **err) {
        const char *hex = digest_hex(digest);
        *ret_fd = -1;
        for (;;) {
                if (image_store_has_blob(p->store, digest))
                        return 0;
                /* Only a regular file is a partial download: anything else
                 * at its name is never opened (a device would be, by open
                 * itself) and would fail the S_ISREG check below forever, a
                 * FIFO in a busy loop. O_NONBLOCK for what slips in between. */
                struct stat pre;
                if (fstatat(p->partial_fd, hex, &pre, AT_SYMLINK_NOFOLLOW) >= 0 && !S_ISREG(pre.st_mode))
                        return error_set(err, -EIO, "%s: partial download of %s: images/partial/%s is not a regular file "
                                         "(remove it)", p->source, digest, hex);
                _cleanup_close_ int fd = openat(p->partial_fd, hex,
                                                O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
                if (fd < 0)
                        return error_sys(err, -errno, "%s: partial download of %s", p->source, digest);
                if (fstat(fd, &pre) < 0)
                        return error_sys(err, -errno, "%s: partial download of %s", p->source, digest);
                if (!S_ISREG(pre.st_mode))
                        return error_set(err, -EIO, "%s: partial download of %s: images/partial/%s is not a regular file "
                                         "(remove it)", p->source, digest, hex);
                while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                        if (errno != EWOULDBLOCK)
                                return error_sys(err, -errno, "%s: locking the partial download of %s", p->source, digest);
                        /* Another pull fetches it: each blob is fetched once. */
                        if (__atomic_load_n(&p->stop, __ATOMIC_RELAXED) || interrupted(p))
                                return error_set(err, -ECANCELED, "%s: interrupted", p->source);
                        usleep(LOCK_POLL_USEC);
                }
                /* Still the file of that name? The pull that held it may have
                 * moved it into the store, or removed it as corrupt. */
                struct stat a, b;
                if (fstat(fd, &a) < 0)
                        return error_sys(err, -errno, "%s: partial download of %s", p->source, digest);
                if (fstatat(p->partial_fd, hex, &b, AT_SYMLINK_NOFOLLOW) >= 0 && a.st_ino == b.st_ino &&
                    a.st_dev == b.st_dev && S_ISREG(b.st_mode)) {
                        *ret_fd = TAKE_FD(fd);
                        return 0;
                }
        }
}

static void layer_options(const Pull *p, LayerOptions *ret) {
        *ret = (LayerOptions) { .whiteouts = true, .budget = (LayerBudget *) &p->budget };
}

/* Applies a layer the store has to the tree, once (a blob fetched ahead of
 * its turn, or one an earlier pull left): read from the store, through the
 * same pass, which checks the diff_id that only the uncompressed bytes
 * show. */
static int apply_stored(Pull *p, size_t i, int rootfd, Error **err) {
        PullLayer *l = &p->layers[i];
        _cleanup_close_ int fd = image_store_open_blob(p->store, l->desc->digest);
        if (fd < 0)
                return error_sys(err, fd, "%s: layer %s", p->source, l->desc->digest);
        LayerOptions lo;
        layer_options(p, &lo);
        LayerStreamSpec spec = {
                .digest = l->desc->digest,
                .size = (int64_t) l->desc->size,
                .diff_id = l->diff_id,
                .blob_fd = -1,
                .rootfd = rootfd,
                .layer = &lo,
        };
        LayerStream *ls = NULL;
        int r = layer_stream_start(&spec, &ls, err);
        if (r < 0)
                return r;
        _cleanup_free_ uint8_t *buf = malloc(COPY_BUFFER_SIZE);
        if (!buf) {
                layer_stream_abort(ls);
                return error_sys(err, -ENOMEM, "%s", p->source);
        }
        for (;;) {
                ssize_t k = read(fd, buf, COPY_BUFFER_SIZE);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        layer_stream_abort(ls);
                        return error_sys(err, -errno, "%s: reading layer %s", p->source, l->desc->digest);
                }
                if (k == 0)
                        break;
                if ((r = layer_stream_feed(ls, buf, (size_t) k, err)) < 0 ||
                    (r = report(p, false)) < 0) {
                        layer_stream_abort(ls);
                        return r == -ECANCELED ? error_set(err, r, "%s: interrupted", p->source) : r;
                }
        }
        return layer_stream_end(ls, NULL, err);
}

/* Fetches layer i into the store, streaming it into the tree at rootfd as
 * it arrives (rootfd -1: only stored). */
static int fetch_layer(Pull *p, size_t i, int rootfd, bool main_thread, Error **err) {
        PullLayer *l = &p->layers[i];
        PullLayerProgress *lp = &p->progress[i];
        const char *digest = l->desc->digest;
        _cleanup_close_ int fd = -1;
        int r = lock_partial(p, digest, &fd, err);
        if (r < 0)
                return r;
        if (fd < 0) {
                /* Stored by another pull while we waited. */
                lp->state = PULL_LAYER_STORED;
                return rootfd >= 0 ? apply_stored(p, i, rootfd, err) : 0;
        }

        struct stat st;
        if (fstat(fd, &st) < 0)
                return error_sys(err, -errno, "%s: partial download of %s", p->source, digest);
        uint64_t have = (uint64_t) st.st_size;
        if (have > l->desc->size) {
                /* Longer than the blob: not a prefix of it. */
                if (ftruncate(fd, 0) < 0)
                        return error_sys(err, -errno, "%s: partial download of %s", p->source, digest);
                have = 0;
        }
        lp->resumed = have;
        lp->bytes = have;
        lp->started_usec = monotonic_usec();
        lp->state = PULL_LAYER_FETCHING;
        __atomic_add_fetch(&p->result.bytes_resumed, have, __ATOMIC_RELAXED);

        LayerOptions lo;
        layer_options(p, &lo);
        LayerStreamSpec spec = {
                .digest = digest,
                .size = (int64_t) l->desc->size,
                .diff_id = l->diff_id,
                .blob_fd = fd,
                .resume_size = have,
                .rootfd = rootfd,
                .layer = &lo,
        };
        Sink sink = { .pull = p, .index = i, .main_thread = main_thread };
        r = layer_stream_start(&spec, &sink.stream, err);
        if (r < 0)
                return r;
        if (have < l->desc->size) {
                Error *e = NULL;
                int64_t k = registry_get_blob(p->registry, digest, have, sink_write, &sink, &e);
                if (k < 0) {
                        layer_stream_abort(sink.stream);
                        /* The sink's reason, when it stopped it, says more. */
                        r = sink.err ? sink.err->code : (int) k;
                        Error *why = sink.err ?: e;
                        if (err && !*err)
                                *err = why;
                        else
                                error_free(why);
                        error_free(why == e ? sink.err : e);
                        goto fail;
                }
        }
        /* Checks size, digest, extraction and diff_id, and syncs the blob. */
        r = layer_stream_end(sink.stream, NULL, err);
        if (r < 0)
                goto fail;
        /* Verified: it joins the store now (see image-pull.h). */
        if (renameat(p->partial_fd, digest_hex(digest), p->store->blobs_fd, digest_hex(digest)) < 0)
                return error_sys(err, -errno, "%s: storing layer %s", p->source, digest);
        lp->ended_usec = monotonic_usec();
        lp->state = PULL_LAYER_DONE;
        __atomic_add_fetch(&p->result.layers_fetched, 1, __ATOMIC_RELAXED);
        return 0;

fail:
        /* Bad bytes are not kept for a resume: the next pull starts over.
         * An interruption or a lost connection keeps them. Nothing at all
         * (a blob the registry does not have, as each of the thousands of
         * layers a manifest may name) is not kept either: no empty file
         * per layer, pull after pull. We hold its lock: a pull waiting for
         * it finds the name gone and starts over. */
        if (r == -EBADMSG || r == -EFBIG || (fstat(fd, &st) >= 0 && st.st_size == 0))
                (void) unlinkat(p->partial_fd, digest_hex(digest), 0);
        return r;
}

/* Worker threads fetch layers ahead of the main thread's turn. */
static void *worker(void *userdata) {
        Pull *p = userdata;
        pthread_mutex_lock(&p->lock);
        for (;;) {
                size_t i;
                for (i = 0; i < p->n_layers && (p->layers[i].claimed || p->layers[i].stored); i++)
                        ;
                if (p->stop || i == p->n_layers)
                        break;
                p->layers[i].claimed = true;
                pthread_mutex_unlock(&p->lock);
                Error *e = NULL;
                int r = fetch_layer(p, i, -1, false, &e);
                pthread_mutex_lock(&p->lock);
                if (r < 0) {
                        p->layers[i].error = r;
                        p->layers[i].err = e;
                        p->stop = true;
                } else
                        p->layers[i].stored = true;
                pthread_cond_broadcast(&p->changed);
        }
        pthread_mutex_unlock(&p->lock);
        return NULL;
}

/* Waits for a worker's layer i: 0 when it is stored, its error else. */
static int wait_for_worker(Pull *p, size_t i, Error **err) {
        pthread_mutex_lock(&p->lock);
        while (!p->layers[i].stored && !p->layers[i].error) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += 100 * 1000 * 1000;
                if (ts.tv_nsec >= 1000000000) {
                        ts.tv_sec++;
                        ts.tv_nsec -= 1000000000;
                }
                (void) pthread_cond_timedwait(&p->changed, &p->lock, &ts);
                pthread_mutex_unlock(&p->lock);
                int r = report(p, false);
                pthread_mutex_lock(&p->lock);
                if (r < 0 && !p->layers[i].stored) {
                        p->stop = true;
                        pthread_mutex_unlock(&p->lock);
                        return error_set(err, r, "%s: interrupted", p->source);
                }
        }
        int r = p->layers[i].error;
        if (r < 0) {
                if (err && !*err)
                        *err = TAKE_PTR(p->layers[i].err);
        }
        pthread_mutex_unlock(&p->lock);
        return r;
}

/* The layers, in order, into the tree at rootfd. */
static int fetch_layers(Pull *p, int rootfd, Error **err) {
        pthread_t threads[PULL_PARALLEL - 1];
        size_t n_threads = 0;
        int r = 0;
        /* Layers the store has are applied from it, never fetched. */
        for (size_t i = 0; i < p->n_layers; i++)
                if (image_store_has_blob(p->store, p->layers[i].desc->digest)) {
                        p->layers[i].stored = p->layers[i].claimed = true;
                        p->progress[i].state = PULL_LAYER_STORED;
                        p->progress[i].bytes = p->layers[i].desc->size;
                }
        size_t to_fetch = 0;
        for (size_t i = 0; i < p->n_layers; i++)
                to_fetch += !p->layers[i].claimed;
        /* The first layer to fetch is the main thread's, before a worker
         * could take it: it streams into the tree. */
        for (size_t i = 0; i < p->n_layers; i++)
                if (!p->layers[i].claimed) {
                        p->layers[i].claimed = p->layers[i].by_main = true;
                        break;
                }
        /* The main thread fetches one, the workers the others. */
        for (size_t k = 0; k + 1 < to_fetch && k < ELEMENTSOF(threads); k++) {
                if (pthread_create(&threads[k], NULL, worker, p) != 0) {
                        r = error_sys(err, -EAGAIN, "%s: starting a download", p->source);
                        break;
                }
                n_threads++;
        }

        for (size_t i = 0; r >= 0 && i < p->n_layers; i++) {
                pthread_mutex_lock(&p->lock);
                if (!p->layers[i].claimed)
                        p->layers[i].claimed = p->layers[i].by_main = true;
                bool mine = p->layers[i].by_main;
                pthread_mutex_unlock(&p->lock);
                if (mine) {
                        /* Its turn: it streams into the tree as it arrives. */
                        r = fetch_layer(p, i, rootfd, true, err);
                        pthread_mutex_lock(&p->lock);
                        if (r >= 0)
                                p->layers[i].stored = true;
                        pthread_mutex_unlock(&p->lock);
                } else if ((r = wait_for_worker(p, i, err)) >= 0)
                        r = apply_stored(p, i, rootfd, err);
                if (r >= 0)
                        r = report(p, false) < 0 ? error_set(err, -ECANCELED, "%s: interrupted", p->source) : 0;
        }

        pthread_mutex_lock(&p->lock);
        if (r < 0)
                p->stop = true;
        pthread_mutex_unlock(&p->lock);
        for (size_t k = 0; k < n_threads; k++)
                pthread_join(threads[k], NULL);
        /* The main thread stopped because a worker failed (not because of
         * a signal): the worker's reason is the pull's, e.g. the digest of
         * a corrupt layer, not "interrupted". */
        if (r == -ECANCELED && !interrupted(p))
                for (size_t i = 0; i < p->n_layers; i++)
                        if (p->layers[i].error < 0 && p->layers[i].error != -ECANCELED) {
                                r = p->layers[i].error;
                                if (err) {
                                        error_free(*err);
                                        *err = TAKE_PTR(p->layers[i].err);
                                }
                                break;
                        }
        for (size_t i = 0; i < p->n_layers; i++)
                error_free(TAKE_PTR(p->layers[i].err));
        return r;
}

/* --- the image --------------------------------------------------------------------------- */

static int fetch_config(Pull *p, Image *im, Error **err) {
        const OciDescriptor *d = &p->manifest.config;
        if (d->size > OCI_JSON_MAX)
                return error_set(err, -EBADMSG, "%s: config %s: %llu bytes, more than %u", p->source, d->digest,
                                 (unsigned long long) d->size, OCI_JSON_MAX);
        _cleanup_free_ char *data = NULL;
        size_t size = 0;
        int r = fetch_small_blob(p, d, &data, &size, err);
        if (r < 0)
                return r;
        char what[256];
        snprintf(what, sizeof(what), "%s: config %s", p->source, d->digest);
        if ((r = oci_config_parse(data, size, what, &p->config, err)) < 0)
                return r;
        /* The app's defaults, from the "config" object inside. */
        _cleanup_json_ struct json_object *o = NULL;
        if ((r = json_parse(data, size, what, &o, err)) < 0 ||
            (r = image_app_from_oci_config(o, what, &im->app, err)) < 0)
                return r;
        if (!(im->config = strdup(d->digest)) || (p->config.os && !(im->os = strdup(p->config.os))) ||
            (p->config.architecture && !(im->architecture = strdup(p->config.architecture))))
                return error_sys(err, -ENOMEM, "%s", p->source);
        /* Stored with the manifest, once the image is complete. */
        p->config_body = TAKE_PTR(data);
        p->config_size = size;
        return 0;
}

static int check_platform(Pull *p, Error **err) {
        char os[32], arch[32], variant[32];
        int r = oci_platform_parse(p->opts->platform, os, arch, variant, err);
        if (r < 0)
                return r;
        if ((p->config.os && !streq(p->config.os, os)) ||
            (p->config.architecture && !streq(p->config.architecture, arch)))
                return error_set(err, -ENOENT, "%s: the image is for %s/%s, not %s/%s (choose with --platform)",
                                 p->source, strempty(p->config.os), strempty(p->config.architecture), os, arch);
        return 0;
}

/* A policy that cannot be read is the operator's error (-EIO: exit 1, not
 * "no such image"); an image it refuses is content that may not run here
 * (-EKEYREJECTED: exit 5, as other bad content). The messages name the
 * reference, the file and the requirement. */
static int check_signature(Pull *p, Error **err) {
        _cleanup_(signature_policy_freep) SignaturePolicy *policy = NULL;
        _cleanup_error_ Error *e = NULL;
        int r = signature_policy_load(p->opts->signature_policy, &policy, &e);
        if (r < 0)
                return error_set(err, r == -ENOENT ? -EIO : r, "%s", e->msg);
        r = signature_policy_check(policy, p->opts->registries_d, p->ref.registry, p->ref.repository, p->ref.tag,
                                   p->manifest_digest, fetch_signature, p->registry, &e);
        if (r == -EPERM)
                return error_set(err, -EKEYREJECTED, "%s", e->msg);
        if (r < 0)
                return error_set(err, r == -ENOENT ? -EIO : r, "%s", e->msg);
        return 0;
}

static int build_image(Pull *p, const char *id, Image *im, Error **err) {
        if (!(im->id = strdup(id)) || !(im->manifest = strdup(id)))
                return error_sys(err, -ENOMEM, "%s", p->source);
        im->format = IMAGE_FORMAT_OCI;
        size_t n = p->manifest.n_layers;
        if (p->config.diff_ids && p->config.n_diff_ids != n)
                return error_set(err, -EBADMSG, "%s: the config lists %zu layers (rootfs.diff_ids), the manifest %zu",
                                 p->source, p->config.n_diff_ids, n);
        if (!(im->layers = calloc(n ?: 1, sizeof(ImageLayer))))
                return error_sys(err, -ENOMEM, "%s", p->source);
        im->n_layers = n;
        im->size = p->manifest_size + p->manifest.config.size;
        for (size_t i = 0; i < n; i++) {
                const OciDescriptor *d = &p->manifest.layers[i];
                if (!(im->layers[i].digest = strdup(d->digest)) ||
                    !(im->layers[i].media_type = strdup(d->media_type ?: DOCKER_MT_LAYER)))
                        return error_sys(err, -ENOMEM, "%s", p->source);
                im->layers[i].size = d->size;
                im->size += d->size;
        }
        return 0;
}

static int pull_run(Pull *p, Image **ret, Error **err) {
        int r = image_reference_parse(p->source, &p->ref, err);
        if (r < 0)
                return r;
        if ((r = registry_open(&p->ref, &p->opts->registry, &p->registry, err)) < 0)
                return r;

        /* The names it gets: the reference's, and --name. */
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_free_ char *ref_name = image_reference_format(&p->ref), *name = NULL;
        if (!ref_name || image_name_normalize(ref_name, &name) < 0 || strv_push(&names, name) < 0)
                return error_sys(err, -ENOMEM, "%s", p->source);
        free(TAKE_PTR(name)); /* strv_push() copied it */
        if (p->opts->name) {
                if (image_name_normalize(p->opts->name, &name) < 0)
                        return error_set(err, -EINVAL, "image name \"%s\": not a valid name[:tag]", p->opts->name);
                if (strv_push(&names, name) < 0)
                        return error_sys(err, -ENOMEM, "%s", p->source);
                free(TAKE_PTR(name));
        }

        /* A HEAD first: when the reference names an image manifest the
         * store has (a tag pulled before, --pull=always of an unchanged
         * tag), nothing else is fetched. An index's digest is not an image
         * id: then the manifests are fetched as below. */
        char id[DIGEST_STRING_SIZE];
        _cleanup_image_ Image *existing = NULL;
        const char *reference = p->ref.digest ? p->ref.digest : p->ref.tag;
        if (registry_get_manifest(p->registry, reference, true, NULL, NULL, NULL, id, NULL) >= 0 &&
            image_store_load(p->store, digest_hex(id), &existing, NULL) >= 0 && image_store_has_tree(p->store, id))
                memcpy(p->manifest_digest, id, sizeof(id));
        else {
                image_free(TAKE_PTR(existing));
                if ((r = fetch_manifest(p, id, err)) < 0)
                        return r;
        }
        /* Before anything else is fetched: an image the policy refuses
         * costs the registry two documents and the signatures. */
        if ((r = check_signature(p, err)) < 0)
                return r;

        /* The store has it: only the names change. */
        if (existing || (image_store_load(p->store, digest_hex(id), &existing, NULL) >= 0 &&
                         image_store_has_tree(p->store, id))) {
                p->result.existing = true;
                p->result.layers = existing->n_layers;
                if ((r = image_store_commit(p->store, existing, names, err)) < 0)
                        return r;
                *ret = TAKE_PTR(existing);
                return 0;
        }

        _cleanup_image_ Image *im = calloc(1, sizeof(Image));
        if (!im)
                return error_sys(err, -ENOMEM, "%s", p->source);
        if ((r = fetch_config(p, im, err)) < 0 || (r = check_platform(p, err)) < 0 || (r = build_image(p, id, im, err)) < 0)
                return r;

        p->n_layers = p->manifest.n_layers;
        p->result.layers = p->n_layers;
        if (!(p->layers = calloc(p->n_layers ?: 1, sizeof(PullLayer))) ||
            !(p->progress = calloc(p->n_layers ?: 1, sizeof(PullLayerProgress))))
                return error_sys(err, -ENOMEM, "%s", p->source);
        for (size_t i = 0; i < p->n_layers; i++) {
                p->layers[i].desc = &p->manifest.layers[i];
                p->layers[i].diff_id = p->config.diff_ids ? p->config.diff_ids[i] : NULL;
                memcpy(p->progress[i].digest, p->manifest.layers[i].digest, DIGEST_STRING_SIZE);
                p->progress[i].size = p->manifest.layers[i].size;
        }

        if (image_store_has_tree(p->store, id)) {
                /* A tree without a record: an earlier pull or import of the
                 * same image got this far. Its layers may be gone. */
                for (size_t i = 0; r >= 0 && i < p->n_layers; i++)
                        if (!image_store_has_blob(p->store, p->layers[i].desc->digest))
                                r = fetch_layer(p, i, -1, true, err);
        } else {
                TreeStaging t;
                if ((r = tree_staging_begin(p->store, id, &t, err)) < 0)
                        return r;
                r = fetch_layers(p, t.rootfd, err);
                if (r >= 0)
                        r = report(p, true) < 0 ? error_set(err, -ECANCELED, "%s: interrupted", p->source) : 0;
                if (r >= 0)
                        r = tree_staging_commit(p->store, &t, id, err);
                else
                        tree_staging_abort(p->store, &t, NULL);
        }
        if (r < 0)
                return r;

        /* The documents last: a pull that failed leaves only verified
         * layers, which the next pull need not fetch again. */
        if ((r = store_document(p, p->config_body, p->config_size, p->manifest.config.digest, err)) < 0 ||
            (r = store_document(p, p->manifest_body, p->manifest_size, id, err)) < 0)
                return r;
        im->imported_at = now_usec();
        if ((r = fsync_dir_at(p->store->blobs_fd, ".")) < 0)
                return error_sys(err, r, "%s: syncing the blob store", p->source);
        if ((r = image_store_commit(p->store, im, names, err)) < 0)
                return r;
        *ret = TAKE_PTR(im);
        return 0;
}

int image_pull(ImageStore *s, const char *reference, const PullOptions *opts, Image **ret, PullResult *ret_result,
               Error **err) {
        static const PullOptions no_options = { .registry.tls_verify = -1 };
        Pull p = {
                .store = s,
                .opts = opts ?: &no_options,
                .source = reference,
                .partial_fd = -1,
                .lock = PTHREAD_MUTEX_INITIALIZER,
                .changed = PTHREAD_COND_INITIALIZER,
        };
        p.budget = (LayerBudget) { .max_entries = p.opts->max_entries, .max_bytes = p.opts->max_bytes };
        Image *im = NULL;
        int r = image_store_open_partial(s, &p.partial_fd);
        if (r < 0)
                r = error_sys(err, r, "%s: the store's partial downloads", reference);
        else
                r = pull_run(&p, &im, err);
        /* A registry that stopped answering is unreachable, as one that
         * refuses connections: not an object "busy" (-ETIMEDOUT's exit 4). */
        if (r == -ETIMEDOUT) {
                r = -EIO;
                if (err && *err)
                        (*err)->code = r;
        }
        if (r >= 0 && ret)
                *ret = im;
        else
                image_free(im);
        if (ret_result)
                *ret_result = p.result;
        closep(&p.partial_fd);
        registry_free(p.registry);
        image_reference_done(&p.ref);
        oci_manifest_done(&p.manifest);
        oci_config_done(&p.config);
        free(p.layers);
        free(p.progress);
        free(p.manifest_body);
        free(p.config_body);
        return r < 0 ? r : 0;
}

int image_pull_for_use(ImageStore *s, const char *arg, PullPolicy policy, const PullOptions *opts, char **ret_id,
                       Error **err) {
        if (!image_reference_is_remote(arg))
                return 0;
        ImageReference ref = {};
        int r = image_reference_parse(arg, &ref, err);
        if (r < 0)
                return r;
        _cleanup_free_ char *formatted = image_reference_format(&ref), *name = NULL;
        image_reference_done(&ref);
        if (!formatted || image_name_normalize(formatted, &name) < 0)
                return error_sys(err, -ENOMEM, "%s", arg);
        _cleanup_image_ Image *im = NULL;
        if (policy != PULL_ALWAYS) {
                Error *e = NULL;
                r = image_store_resolve(s, name, &im, &e);
                if (r >= 0) {
                        error_free(e);
                        return (*ret_id = strdup(im->id)) ? 1 : error_sys(err, -ENOMEM, "%s", arg);
                }
                error_free(e);
                if (r != -ENOENT)
                        return error_set(err, r, "image %s", arg);
                if (policy == PULL_NEVER)
                        return error_set(err, -ENOENT, "image %s is not in the store, and --pull=never", name);
        }
        if ((r = image_pull(s, arg, opts, &im, NULL, err)) < 0)
                return r;
        return (*ret_id = strdup(im->id)) ? 1 : error_sys(err, -ENOMEM, "%s", arg);
}
