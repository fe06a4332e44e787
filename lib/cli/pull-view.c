/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>

#include "basic/time-util.h"
#include "cli/cli.h"
#include "cli/pull-view.h"

void pull_view_init(PullView *v, bool quiet) {
        *v = (PullView) { .quiet = quiet, .started_usec = monotonic_usec() };
        progress_line_init(&v->line);
        if (quiet)
                v->line.enabled = false;
}

/* "12.3 MB/s" of bytes over usec, or "" while too early to say. */
static void format_rate(uint64_t bytes, uint64_t usec, char ret[24]) {
        *ret = 0;
        if (usec < 200 * 1000)
                return;
        char b[16];
        format_bytes(bytes * 1000000 / usec, b);
        snprintf(ret, 24, "%s/s", b);
}

static int pull_progress(const PullProgress *p, void *userdata) {
        PullView *v = userdata;
        if (cli_interrupted())
                return -ECANCELED;
        if (!v->line.enabled)
                return 0;
        uint64_t now = monotonic_usec(), done = 0, total = 0;
        /* A line per layer, at most a screenful: the layers are few in
         * practice, the rest is summed up. */
        char text[4096];
        size_t k = 0;
        k += (size_t) snprintf(text + k, sizeof(text) - k, "pulling %s", p->reference);
        for (size_t i = 0; i < p->n_layers; i++) {
                const PullLayerProgress *l = &p->layers[i];
                uint64_t bytes = __atomic_load_n(&l->bytes, __ATOMIC_RELAXED);
                done += bytes;
                total += l->size;
                if (i >= 20 || k >= sizeof(text) - 200)
                        continue;
                char b[16], t[16], rate[24] = "";
                format_bytes(bytes, b);
                format_bytes(l->size, t);
                const char *state = l->state == PULL_LAYER_STORED  ? "in the store"
                                  : l->state == PULL_LAYER_DONE    ? "done"
                                  : l->state == PULL_LAYER_WAITING ? "waiting"
                                                                   : "fetching";
                if (l->started_usec && l->state != PULL_LAYER_STORED)
                        format_rate(bytes - l->resumed, (l->ended_usec ?: now) - l->started_usec, rate);
                k += (size_t) snprintf(text + k, sizeof(text) - k, "\n  %.12s  %-12s %8s / %-8s %s",
                                       digest_hex(l->digest), state, b, t, rate);
        }
        if (p->n_layers > 20 && k < sizeof(text) - 64)
                k += (size_t) snprintf(text + k, sizeof(text) - k, "\n  ... and %zu more layers", p->n_layers - 20);
        char b[16], t[16], rate[24];
        format_bytes(done, b);
        format_bytes(total, t);
        format_rate(done, now - v->started_usec, rate);
        if (k < sizeof(text) - 80)
                snprintf(text + k, sizeof(text) - k, "\n  total %s / %s  %s%s", b, t, rate,
                         p->rendering ? "  syncing the tree" : "");
        progress_lines_show(&v->line, p->rendering, text);
        return 0;
}

static int interrupted(void) {
        return cli_interrupted() != 0;
}

void pull_view_attach(PullView *v, PullOptions *opts) {
        opts->progress = pull_progress;
        opts->userdata = v;
        opts->registry.interrupted = interrupted;
}

void pull_view_clear(PullView *v) {
        progress_line_clear(&v->line);
}

void pull_view_done(PullView *v, const char *reference, const Image *im, const PullResult *res) {
        progress_line_clear(&v->line);
        if (v->quiet)
                return;
        if (res->existing) {
                fprintf(stderr, "%s: the store has it already (%.19s)\n", reference, im->id);
                return;
        }
        char fetched[16], resumed[16] = "";
        format_bytes(res->bytes_fetched, fetched);
        if (res->bytes_resumed) {
                char b[16];
                format_bytes(res->bytes_resumed, b);
                snprintf(resumed, sizeof(resumed), "%s", b);
        }
        uint64_t ms = (monotonic_usec() - v->started_usec) / 1000;
        fprintf(stderr, "pulled %s: %zu of %zu layers fetched, %s%s%s%s in %llu.%01llu s\n", reference,
                res->layers_fetched, res->layers, fetched, *resumed ? " (resumed after " : "", resumed,
                *resumed ? ")" : "", (unsigned long long) (ms / 1000), (unsigned long long) (ms % 1000 / 100));
}

int cli_pull_images(ImageStore *is, PodArgs *args, Error **err) {
        _cleanup_(pull_options_done) PullOptions opts = { .registry.tls_verify = -1 };
        int r, policy = args->pull ? pull_policy_from_string(args->pull) : PULL_MISSING;
        if (policy < 0)
                return error_set(err, -EINVAL, "--pull=%s: expected missing, always or never", args->pull);
        for (size_t i = 0; i < args->n_pull_options; i++) {
                const PodNameValue *o = &args->pull_options[i];
                if ((r = pull_options_set(&opts, o->name, o->value, err)) < 0)
                        return r == -ENOENT ? error_set(err, -EINVAL, "--%s: not an option of a pull", o->name) : r;
        }
        PullView view;
        pull_view_init(&view, false);
        pull_view_attach(&view, &opts);
        for (size_t i = 0; i < args->n_apps; i++) {
                AppArgs *a = &args->apps[i];
                char *id = NULL;
                if (!a->image)
                        continue;       /* --rootfs: no image */
                /* A pull may take long: Ctrl-C stops it cleanly (what was
                 * prepared so far is nothing yet). */
                cli_catch_interrupts();
                r = image_pull_for_use(is, a->image, (PullPolicy) policy, &opts, &id, err);
                pull_view_clear(&view);
                if (r < 0)
                        return r;
                if (r > 0) {
                        /* The app is made from the image pulled, by id: the
                         * reference is not a local name the store knows. */
                        free(a->image);
                        a->image = id;
                }
        }
        return 0;
}
