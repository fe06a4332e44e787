/* SPDX-License-Identifier: Apache-2.0 */
#include <getopt.h>
#include <time.h>

#include "basic/json-util.h"
#include "basic/time-util.h"
#include "cli/cli.h"
#include "pod/pod-ref.h"
#include "pod/pod-stats.h"
#include "sdpod.h"

static const char stats_usage[] =
        "Usage: sdpod stats [--format=table|json] [--no-legend] [--interval=DURATION] [POD...]\n"
        "\n"
        "Shows what running pods use, from their cgroups on the host: CPU (time used\n"
        "and percent of one CPU over a short sample), memory (usage and limit), pids\n"
        "(tasks: processes and threads, and their limit) and block I/O (bytes read and\n"
        "written), for each pod (APP \"(pod)\") and each of its apps. Without UUID,\n"
        "every running pod. One sample; for a refreshing view, run it under watch(1).\n"
        "A figure the host cannot give (its cgroup controller is not there for the\n"
        "pod) shows as \"-\"; a limit that is not set as \"max\".\n"
        "\n"
        "  --format=json          one JSON array of pods (see sdpod(1) for the keys)\n"
        "  --no-legend            no header line in the table\n"
        "  --interval=DURATION    how long the CPU sample is (default 500ms; 0: no\n"
        "                         sample, no CPU percentage)\n";

#define STATS_DEFAULT_INTERVAL_USEC (500 * 1000)

static const char *fmt_bytes(uint64_t v, bool limit, char buf[static 32]) {
        if (v == POD_STATS_UNKNOWN)
                return NULL;
        if (limit && v == POD_STATS_NO_LIMIT)
                return "max";
        format_bytes(v, buf);
        return buf;
}

static const char *fmt_count(uint64_t v, bool limit, char buf[static 32]) {
        if (v == POD_STATS_UNKNOWN)
                return NULL;
        if (limit && v == POD_STATS_NO_LIMIT)
                return "max";
        snprintf(buf, 32, "%" PRIu64, v);
        return buf;
}

static const char *fmt_cpu_time(uint64_t usec, char buf[static 32]) {
        if (usec == POD_STATS_UNKNOWN)
                return NULL;
        snprintf(buf, 32, "%.2fs", (double) usec / USEC_PER_SEC);
        return buf;
}

static const char *fmt_percent(double p, char buf[static 32]) {
        if (p < 0)
                return NULL;
        snprintf(buf, 32, "%.1f%%", p);
        return buf;
}

static int table_add_figures(Table *t, const char *uuid, const char *name, const char *app, const CgroupFigures *before,
                             const CgroupFigures *now) {
        char pct[32], cpu[32], mem[32], memlim[32], pids[32], pidslim[32], rd[32], wr[32];
        if (!now->sampled_usec)
                return table_add_row(t, uuid, name, app, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        return table_add_row(t, uuid, name, app, fmt_percent(cgroup_cpu_percent(before, now), pct),
                             fmt_cpu_time(now->cpu_usec, cpu), fmt_bytes(now->memory_bytes, false, mem),
                             fmt_bytes(now->memory_limit_bytes, true, memlim), fmt_count(now->tasks, false, pids),
                             fmt_count(now->tasks_limit, true, pidslim), fmt_bytes(now->io_read_bytes, false, rd),
                             fmt_bytes(now->io_write_bytes, false, wr));
}

/* A figure or null: never a made-up 0. A limit that is not set is null too
 * (the usage beside it says whether the controller is there). */
static struct json_object *json_figure(uint64_t v) {
        return v == POD_STATS_UNKNOWN || v == POD_STATS_NO_LIMIT ? NULL : json_object_new_int64((int64_t) v);
}

static int json_add_figures(struct json_object *o, const CgroupFigures *before, const CgroupFigures *now) {
        static const CgroupFigures none = {
                .cpu_usec = POD_STATS_UNKNOWN, .memory_bytes = POD_STATS_UNKNOWN,
                .memory_limit_bytes = POD_STATS_UNKNOWN, .tasks = POD_STATS_UNKNOWN,
                .tasks_limit = POD_STATS_UNKNOWN, .io_read_bytes = POD_STATS_UNKNOWN,
                .io_write_bytes = POD_STATS_UNKNOWN,
        };
        const CgroupFigures *f = now->sampled_usec ? now : &none;
        double pct = cgroup_cpu_percent(before, now);
        char pct_text[32];
        snprintf(pct_text, sizeof(pct_text), "%.2f", pct); /* as printed, not 17 digits */
        if (json_object_object_add(o, "cpu_usec", json_figure(f->cpu_usec)) < 0 ||
            json_object_object_add(o, "cpu_percent", pct < 0 ? NULL : json_object_new_double_s(pct, pct_text)) < 0 ||
            json_object_object_add(o, "memory_bytes", json_figure(f->memory_bytes)) < 0 ||
            json_object_object_add(o, "memory_limit_bytes", json_figure(f->memory_limit_bytes)) < 0 ||
            json_object_object_add(o, "pids", json_figure(f->tasks)) < 0 ||
            json_object_object_add(o, "pids_limit", json_figure(f->tasks_limit)) < 0 ||
            json_object_object_add(o, "io_read_bytes", json_figure(f->io_read_bytes)) < 0 ||
            json_object_object_add(o, "io_write_bytes", json_figure(f->io_write_bytes)) < 0)
                return -ENOMEM;
        return 0;
}

static struct json_object *pod_stats_json(const PodStats *s) {
        _cleanup_json_ struct json_object *o = json_object_new_object(), *apps = json_object_new_array();
        if (!o || !apps || json_add_string(o, "uuid", s->uuid) < 0 ||
            json_object_object_add(o, "name", s->name ? json_object_new_string(s->name) : NULL) < 0 ||
            json_add_string(o, "cgroup", s->cgroup_path) < 0 || json_add_figures(o, &s->before, &s->now) < 0)
                return NULL;
        for (size_t i = 0; i < s->n_apps; i++) {
                const PodAppStats *a = &s->apps[i];
                struct json_object *e = json_object_new_object();
                if (!e || json_object_array_add(apps, e) < 0 || json_add_string(e, "name", a->name) < 0 ||
                    json_object_object_add(e, "running", json_object_new_boolean(a->running)) < 0 ||
                    json_add_figures(e, &a->before, &a->now) < 0)
                        return NULL;
        }
        if (json_object_object_add(o, "apps", TAKE_PTR(apps)) < 0)
                return NULL;
        return TAKE_PTR(o);
}

typedef struct StatsList {
        PodStats *pods;
        size_t n, allocated;
} StatsList;

static int stats_list_add(StatsList *l, Pod *p, Error **err) {
        if (l->n == l->allocated) {
                size_t a = l->allocated ? l->allocated * 2 : 8;
                PodStats *n = reallocarray(l->pods, a, sizeof(PodStats));
                if (!n)
                        return error_sys(err, -ENOMEM, "pod %s", p->uuid);
                l->pods = n;
                l->allocated = a;
        }
        int r = pod_stats_open(p, &l->pods[l->n], err);
        if (r >= 0)
                l->n++;
        return r;
}

static int add_running(PodStore *s, Pod *p, void *userdata) {
        if (p->state != POD_STATE_RUNNING)
                return 0;
        _cleanup_error_ Error *err = NULL;
        /* A pod that exits meanwhile is not an error: it was not asked for. */
        int r = stats_list_add(userdata, p, &err);
        return r == -ENOMEM ? r : 0;
}

int verb_stats(int argc, char **argv) {
        enum { OPT_NO_LEGEND = 0x100, OPT_INTERVAL };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "format", required_argument, NULL, 'f' },
                { "no-legend", no_argument, NULL, OPT_NO_LEGEND },
                { "interval", required_argument, NULL, OPT_INTERVAL },
                {},
        };
        OutputFormat format = FORMAT_TABLE;
        bool legend = true;
        uint64_t interval = STATS_DEFAULT_INTERVAL_USEC;
        int c, r;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        fputs(stats_usage, stdout);
                        return EXIT_OK;
                case 'f':
                        if ((r = cli_parse_format(argv[0], optarg, &format)) != 0)
                                return r;
                        break;
                case OPT_NO_LEGEND:
                        legend = false;
                        break;
                case OPT_INTERVAL:
                        if (parse_duration(optarg, &interval) < 0 || interval > 60 * USEC_PER_SEC)
                                return cli_usage_error(argv[0], "--interval=%s: not a duration of at most 60s (like 500ms, 2s; 0 for none)",
                                                       optarg);
                        break;
                default:
                        return cli_option_error(argv[0], "h", argc, argv);
                }

        Error *err = NULL;
        _cleanup_pod_store_ PodStore *ps = NULL;
        if (cli_open_pods_to_read(&ps, &err) < 0)
                return cli_fail(err);
        StatsList l = {};
        int status = EXIT_OK;
        if (optind == argc) {
                if ((r = pod_foreach(ps, add_running, &l, &err)) < 0)
                        status = cli_fail(err ?: (error_sys(&err, r, "cannot list the pods"), err));
        } else
                for (int i = optind; i < argc; i++) {
                        _cleanup_pod_ Pod *p = NULL;
                        err = NULL;
                        if (pod_resolve(ps, argv[i], &p, &err) < 0 || stats_list_add(&l, p, &err) < 0) {
                                int s = cli_fail(err);
                                status = status ?: s; /* the first failure's, as rm */
                        }
                }

        /* One sample for all pods at once: the wait is the same however
         * many there are. */
        for (size_t i = 0; i < l.n; i++)
                pod_stats_sample(&l.pods[i]);
        if (interval > 0 && l.n > 0) {
                struct timespec ts = { .tv_sec = interval / USEC_PER_SEC, .tv_nsec = (interval % USEC_PER_SEC) * 1000 };
                while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                        ;
                for (size_t i = 0; i < l.n; i++)
                        pod_stats_sample(&l.pods[i]);
        }

        int out = EXIT_OK;
        if (format == FORMAT_JSON) {
                struct json_object *array = json_object_new_array();
                for (size_t i = 0; array && i < l.n; i++) {
                        struct json_object *o = pod_stats_json(&l.pods[i]);
                        if (!o || json_object_array_add(array, o) < 0) {
                                json_object_put(o);
                                json_object_put(array);
                                array = NULL;
                        }
                }
                out = cli_print_json(array);
                json_object_put(array);
        } else if (l.n > 0 || optind == argc) {
                _cleanup_(table_freep) Table *t = table_new(11, "UUID", "NAME", "APP", "CPU%", "CPU", "MEM", "MEM-LIMIT",
                                                            "PIDS", "PIDS-LIMIT", "READ", "WRITE");
                for (size_t i = 0; t && i < l.n; i++) {
                        const PodStats *s = &l.pods[i];
                        char short_uuid[9];
                        snprintf(short_uuid, sizeof(short_uuid), "%.8s", s->uuid);
                        if (table_add_figures(t, short_uuid, s->name, "(pod)", &s->before, &s->now) < 0)
                                break;
                        for (size_t k = 0; k < s->n_apps; k++)
                                if (table_add_figures(t, short_uuid, s->name, s->apps[k].name, &s->apps[k].before,
                                                      &s->apps[k].now) < 0)
                                        break;
                }
                if (!t)
                        out = cli_fail(NULL);
                else {
                        table_print(t, legend);
                        out = fflush(stdout) == 0 ? EXIT_OK : EXIT_ERROR;
                }
        }
        for (size_t i = 0; i < l.n; i++)
                pod_stats_done(&l.pods[i]);
        free(l.pods);
        return status ?: out;
}
