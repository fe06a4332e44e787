/* SPDX-License-Identifier: Apache-2.0 */
#include <getopt.h>
#include <stdarg.h>

#include "basic/digest.h"
#include "basic/json-util.h"
#include "basic/quantity.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "cli/cli.h"
#include "cli/progress.h"
#include "image/image-import.h"
#include "image/image-store.h"
#include "pod/pod-info.h"
#include "sdpod.h"
#include "unit/app-isolators.h"

static int open_store(StoreAccess access, ImageStore **ret, Error **err) {
        /* Only the default data directory is created on demand: a --dir
         * that does not exist is more likely a typo than a wish. */
        return image_store_open(cli.dir, cli.dir_is_default, access, ret, err);
}

static const char import_usage[] =
        "Usage: sdpod image import [--name=NAME[:TAG]] [--platform=OS/ARCH[/VARIANT]] [--ref=REF]\n"
        "                          [--max-entries=N] [--max-size=SIZE] PATH\n"
        "\n"
        "Imports an image and renders its file system tree; prints the image id.\n"
        "PATH is an OCI image layout (directory or tar), a docker archive\n"
        "(docker save, podman save) or an ACI (tar, optionally compressed).\n"
        "\n"
        "  --name=NAME[:TAG]  also name the image so (the tag defaults to latest)\n"
        "  --platform=OS/ARCH[/VARIANT]\n"
        "                     which image of a multi-platform index (default: linux\n"
        "                     and this machine's architecture)\n"
        "  --ref=REF          which image of a layout or archive holding several\n"
        "                     (its org.opencontainers.image.ref.name or RepoTag)\n"
        "  --max-entries=N    refuse an image whose file system tree has more than N\n"
        "                     entries, all layers together (100000, 1M, ...)\n"
        "  --max-size=SIZE    refuse one whose files add up to more than SIZE bytes\n"
        "                     (512M, 2Gi, ...; sparse files count by their size)\n"
        "\n"
        "On a terminal, stderr shows how far it got (bytes read, layer rendered).\n"
        "SIGINT (Ctrl-C) or SIGTERM stops it: it removes what it had staged, says\n"
        "how much, and exits with 128 + the signal's number.\n";

typedef struct ImportView {
        ProgressLine line;
} ImportView;

static int import_progress(const ImportProgress *p, void *userdata) {
        ImportView *v = userdata;
        if (cli_interrupted())
                return -ECANCELED;
        if (!v->line.enabled)
                return 0;
        char done[16], total[16];
        format_bytes(p->bytes, done);
        format_bytes(p->total, total);
        unsigned pct = p->total ? (unsigned) (p->bytes >= p->total ? 100 : p->bytes * 100 / p->total) : 0;
        if (p->stage == IMPORT_RENDERING)
                progress_line_show(&v->line, false, "rendering layer %zu of %zu: %s of %s (%u%%)", p->layer,
                                   p->n_layers, done, total, pct);
        else if (p->total)
                progress_line_show(&v->line, false, "reading: %s of %s (%u%%)", done, total, pct);
        else
                progress_line_show(&v->line, false, "reading: %s", done);
        return 0;
}

static int image_import_verb(int argc, char **argv) {
        static const char *command = "sdpod image import";
        enum { OPT_NAME = 0x100, OPT_PLATFORM, OPT_REF, OPT_MAX_ENTRIES, OPT_MAX_SIZE };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "name", required_argument, NULL, OPT_NAME },
                { "platform", required_argument, NULL, OPT_PLATFORM },
                { "ref", required_argument, NULL, OPT_REF },
                { "max-entries", required_argument, NULL, OPT_MAX_ENTRIES },
                { "max-size", required_argument, NULL, OPT_MAX_SIZE },
                {},
        };
        ImportOptions opts = {};
        int c;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        fputs(import_usage, stdout);
                        return EXIT_OK;
                case OPT_NAME:
                        opts.name = optarg;
                        break;
                case OPT_PLATFORM:
                        opts.platform = optarg;
                        break;
                case OPT_REF:
                        opts.ref = optarg;
                        break;
                case OPT_MAX_ENTRIES:
                        /* a count, with the suffixes of a quantity (1M) */
                        if (parse_quantity_bytes(optarg, &opts.max_entries) < 0 || opts.max_entries == 0)
                                return cli_usage_error(command, "--max-entries=%s: expected a positive number such "
                                                       "as 100000 or 1M", optarg);
                        break;
                case OPT_MAX_SIZE:
                        if (parse_quantity_bytes(optarg, &opts.max_bytes) < 0 || opts.max_bytes == 0)
                                return cli_usage_error(command, "--max-size=%s: expected a size such as 512M or 2Gi",
                                                       optarg);
                        break;
                default:
                        return cli_option_error(command, "h", argc, argv);
                }
        if (optind != argc - 1)
                return cli_usage_error(command, optind >= argc ? "missing PATH" : "takes one PATH");

        Error *err = NULL;
        _cleanup_image_store_ ImageStore *s = NULL;
        _cleanup_image_ Image *image = NULL;
        if (open_store(STORE_SHARED, &s, &err) < 0)
                return cli_fail(err);

        ImportView view;
        uint64_t freed = 0;
        progress_line_init(&view.line);
        opts.progress = import_progress;
        opts.userdata = &view;
        opts.ret_freed = &freed;
        cli_catch_interrupts();
        int r = image_import(s, argv[optind], &opts, &image, &err);
        progress_line_clear(&view.line);
        int sig = cli_interrupted();
        if (r == -ECANCELED && sig) {
                char bytes[16];
                format_bytes(freed, bytes);
                error_free(err);
                cli_note("%s: interrupted (SIG%s); removed what it had staged (%s)", argv[optind], sigabbrev_np(sig),
                     bytes);
                return cli_interrupted_status(sig);
        }
        if (r < 0)
                return cli_fail(err);
        /* A signal that came once the import was committing changed nothing. */
        puts(image->id);
        return EXIT_OK;
}

static struct json_object *image_summary_json(const Image *im) {
        _cleanup_json_ struct json_object *o = json_object_new_object();
        char ts[32];
        format_timestamp(im->imported_at, ts);
        if (!o || json_add_string(o, "id", im->id) < 0 || json_add_strv(o, "names", im->names) < 0 ||
            json_object_object_add(o, "size", json_object_new_int64((int64_t) im->size)) < 0 ||
            json_add_string(o, "imported_at", ts) < 0 ||
            json_add_string(o, "format", image_format_to_string(im->format)) < 0)
                return NULL;
        return TAKE_PTR(o);
}

static const char list_usage[] =
        "Usage: sdpod image list [--format=table|json] [--no-legend]\n"
        "\n"
        "Lists the images in the store: id, names, size, import time.\n"
        "\n"
        "  --format=json   one JSON array of objects with the keys id, names,\n"
        "                  size (bytes), imported_at (RFC 3339, UTC) and format\n"
        "  --no-legend     no header line in the table\n";

static int image_list_verb(int argc, char **argv) {
        static const char *command = "sdpod image list";
        OutputFormat format = FORMAT_TABLE;
        bool legend = true;
        int status, first = cli_parse_verb_options(argc, argv, list_usage, &format, &legend, &status);
        if (first < 0)
                return status;
        if (first != argc)
                return cli_usage_error(command, "takes no arguments");

        Error *err = NULL;
        _cleanup_image_store_ ImageStore *s = NULL;
        Image **l = NULL;
        size_t n = 0;
        if (open_store(STORE_READ, &s, &err) < 0 || image_store_list(s, &l, &n, &err) < 0)
                return cli_fail(err);

        if (format == FORMAT_JSON) {
                _cleanup_json_ struct json_object *a = json_object_new_array();
                for (size_t i = 0; a && i < n; i++) {
                        struct json_object *o = image_summary_json(l[i]);
                        if (!o || json_object_array_add(a, o) < 0) {
                                json_object_put(o);
                                json_object_put(TAKE_PTR(a));
                        }
                }
                image_list_free(l, n);
                return cli_print_json(a);
        }

        _cleanup_(table_freep) Table *t = table_new(5, "ID", "NAMES", "SIZE", "FORMAT", "IMPORTED");
        for (size_t i = 0; t && i < n; i++) {
                char size[16], ts[32], id[20];
                format_bytes(l[i]->size, size);
                format_timestamp(l[i]->imported_at, ts);
                ts[19] = 0; /* seconds are enough for people */
                ts[10] = ' ';
                snprintf(id, sizeof(id), "%.12s", digest_hex(l[i]->id));
                _cleanup_free_ char *names = NULL;
                for (char **k = l[i]->names; k && *k; k++) {
                        char *m = NULL;
                        if (asprintf(&m, "%s%s%s", strempty(names), names ? "," : "", *k) >= 0) {
                                free(names);
                                names = m;
                        }
                }
                table_add_row(t, id, names, size, image_format_to_string(l[i]->format), ts);
        }
        image_list_free(l, n);
        if (!t)
                return cli_fail(NULL);
        table_print(t, legend);
        return EXIT_OK;
}

static const char inspect_usage[] =
        "Usage: sdpod image inspect IMAGE\n"
        "\n"
        "Prints the store's record of an image as JSON: id, names, size, format,\n"
        "manifest and config digests, layers, and the app defaults taken from the\n"
        "image config (exec, env, working_dir, user, group, ports).\n"
        "IMAGE is a name, an id or a unique prefix of an id.\n";

static int image_inspect_verb(int argc, char **argv) {
        static const char *command = "sdpod image inspect";
        int status, i = cli_parse_verb_options(argc, argv, inspect_usage, NULL, NULL, &status);
        if (i < 0)
                return status;
        if (i != argc - 1)
                return cli_usage_error(command, i >= argc ? "missing IMAGE" : "takes one IMAGE");
        Error *err = NULL;
        _cleanup_image_store_ ImageStore *s = NULL;
        _cleanup_image_ Image *image = NULL;
        if (open_store(STORE_READ, &s, &err) < 0 || image_store_resolve(s, argv[i], &image, &err) < 0)
                return cli_fail(err);
        _cleanup_json_ struct json_object *o = image_to_json(image);
        return cli_print_json(o);
}

static const char cat_manifest_usage[] =
        "Usage: sdpod image cat-manifest IMAGE\n"
        "\n"
        "Prints the image's manifest byte for byte as stored (its sha256 is the\n"
        "manifest digest): the OCI image manifest (for docker archives, one made\n"
        "on import), or the ACI image manifest.\n";

static int image_cat_manifest_verb(int argc, char **argv) {
        static const char *command = "sdpod image cat-manifest";
        int status, i = cli_parse_verb_options(argc, argv, cat_manifest_usage, NULL, NULL, &status);
        if (i < 0)
                return status;
        if (i != argc - 1)
                return cli_usage_error(command, i >= argc ? "missing IMAGE" : "takes one IMAGE");
        Error *err = NULL;
        _cleanup_image_store_ ImageStore *s = NULL;
        _cleanup_image_ Image *image = NULL;
        if (open_store(STORE_READ, &s, &err) < 0 || image_store_resolve(s, argv[i], &image, &err) < 0)
                return cli_fail(err);
        _cleanup_close_ int fd = image_store_open_blob(s, image->manifest);
        if (fd < 0) {
                error_sys(&err, fd, "image %s: manifest %s", image->id, image->manifest);
                return cli_fail(err);
        }
        /* Byte for byte, so that its sha256 is the manifest digest. */
        char buf[65536];
        ssize_t k;
        while ((k = read(fd, buf, sizeof(buf))) > 0)
                fwrite(buf, 1, (size_t) k, stdout);
        return k < 0 || fflush(stdout) != 0 ? EXIT_ERROR : EXIT_OK;
}

static const char rm_usage[] =
        "Usage: sdpod image rm [--force] IMAGE...\n"
        "\n"
        "Removes names and images, as docker rmi does. IMAGE is a name, an id or a\n"
        "unique prefix of an id. By a name: only that name goes while the image has\n"
        "others; with its last name, the image goes too. By an id: the image goes,\n"
        "unless it has several names. Prints the id of each image removed (nothing\n"
        "for a name alone). Blobs and trees are freed by 'sdpod image gc'; pods that\n"
        "use an image keep its tree until they are removed.\n"
        "\n"
        "  -f, --force   remove the image whatever names it has\n";

static int image_rm_verb(int argc, char **argv) {
        static const char *command = "sdpod image rm";
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "force", no_argument, NULL, 'f' },
                {},
        };
        bool force = false;
        int c;
        while ((c = getopt_long(argc, argv, "hf", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        fputs(rm_usage, stdout);
                        return EXIT_OK;
                case 'f':
                        force = true;
                        break;
                default:
                        return cli_option_error(command, "hf", argc, argv);
                }
        int i = optind;
        if (i >= argc)
                return cli_usage_error(command, "missing IMAGE");
        Error *err = NULL;
        _cleanup_image_store_ ImageStore *s = NULL;
        if (open_store(STORE_SHARED, &s, &err) < 0)
                return cli_fail(err);
        int status = EXIT_OK;
        _cleanup_strv_free_ char **removed_ids = NULL;
        for (; i < argc; i++) {
                _cleanup_(image_removal_done) ImageRemoval rm = {};
                if (image_store_remove(s, argv[i], force, &rm, &err) < 0) {
                        int k = cli_fail(TAKE_PTR(err));
                        status = status ?: k;
                        continue;
                }
                if (rm.image_removed) {
                        puts(rm.id);
                        (void) strv_push(&removed_ids, rm.id);
                } else {
                        _cleanup_free_ char *left = NULL;
                        for (char **k = rm.names_left; k && *k; k++) {
                                char *m = NULL;
                                if (asprintf(&m, "%s%s%s", strempty(left), left ? ", " : "", *k) >= 0) {
                                        free(left);
                                        left = m;
                                }
                        }
                        cli_note("removed the name %s; image %s stays, named %s", rm.name, rm.id, strempty(left));
                }
        }
        if (removed_ids) {
                /* Safe either way (gc keeps the trees pods use); said so
                 * that nobody wonders why gc frees less than expected. */
                _cleanup_pod_store_ PodStore *ps = NULL;
                _cleanup_strv_free_ char **in_use = NULL;
                if (pod_store_open(cli.dir, false, false, &ps, NULL) >= 0 && pod_store_image_ids(ps, &in_use, NULL) >= 0)
                        for (char **k = removed_ids; *k; k++)
                                if (strv_contains(in_use, *k))
                                        cli_note("image %s is used by a pod: its tree stays until no pod uses it", *k);
        }
        return status;
}

static const char tag_usage[] =
        "Usage: sdpod image tag IMAGE NAME[:TAG]\n"
        "\n"
        "Gives an image another name (the tag defaults to latest). IMAGE is a name,\n"
        "an id or a unique prefix of an id. A name names one image: when another\n"
        "image has NAME[:TAG], it loses it (and stays in the store, if need be\n"
        "without names: its id still names it). Prints the image id.\n";

static int image_tag_verb(int argc, char **argv) {
        static const char *command = "sdpod image tag";
        int status, i = cli_parse_verb_options(argc, argv, tag_usage, NULL, NULL, &status);
        if (i < 0)
                return status;
        if (argc - i != 2)
                return cli_usage_error(command, argc - i < 2 ? "expected IMAGE and NAME[:TAG]" : "takes IMAGE and one NAME[:TAG]");
        Error *err = NULL;
        _cleanup_image_store_ ImageStore *s = NULL;
        _cleanup_(image_tagged_done) ImageTagged t = {};
        if (open_store(STORE_SHARED, &s, &err) < 0 || image_store_tag(s, argv[i], argv[i + 1], &t, &err) < 0)
                return cli_fail(err);
        if (t.previous)
                cli_note("the name %s moved from image %s%s", t.name, t.previous,
                        t.previous_names_left ? "" : " (which has no name left: 'sdpod image rm' it by id)");
        puts(t.id);
        return EXIT_OK;
}

static const char untag_usage[] =
        "Usage: sdpod image untag NAME[:TAG]...\n"
        "\n"
        "Takes names away from the images that have them. The images stay in the\n"
        "store, also when they have no name left (their id still names them).\n"
        "Prints the id of the image each name was taken from.\n";

static int image_untag_verb(int argc, char **argv) {
        static const char *command = "sdpod image untag";
        int status, i = cli_parse_verb_options(argc, argv, untag_usage, NULL, NULL, &status);
        if (i < 0)
                return status;
        if (i >= argc)
                return cli_usage_error(command, "missing NAME");
        Error *err = NULL;
        _cleanup_image_store_ ImageStore *s = NULL;
        if (open_store(STORE_SHARED, &s, &err) < 0)
                return cli_fail(err);
        status = EXIT_OK;
        for (; i < argc; i++) {
                _cleanup_free_ char *id = NULL;
                if (image_store_untag(s, argv[i], &id, NULL, &err) < 0) {
                        int k = cli_fail(TAKE_PTR(err));
                        status = status ?: k;
                        continue;
                }
                puts(id);
        }
        return status;
}

static const char gc_usage[] =
        "Usage: sdpod image gc\n"
        "\n"
        "Removes blobs and rendered trees that no image references, and what\n"
        "interrupted imports left behind; prints what it removed and the disk\n"
        "space freed. Trees that pods use are kept, also when their image was\n"
        "removed. It does not wait for running imports, removals or prepares:\n"
        "while they run, it frees only what dead imports left, and says so.\n";

static int image_gc_verb(int argc, char **argv) {
        static const char *command = "sdpod image gc";
        int status, i = cli_parse_verb_options(argc, argv, gc_usage, NULL, NULL, &status);
        if (i < 0)
                return status;
        if (i != argc)
                return cli_usage_error(command, "takes no arguments");
        Error *err = NULL;
        _cleanup_image_store_ ImageStore *s = NULL;
        _cleanup_pod_store_ PodStore *ps = NULL;
        _cleanup_strv_free_ char **in_use = NULL;
        ImageGcStats st;
        if (open_store(STORE_GC, &s, &err) < 0)
                return cli_fail(err);
        /* The pods are read under the exclusive store lock: a prepare holds
         * it shared until its manifest names the images it uses. Without
         * it, gc touches no tree and needs no pods. */
        if (s->exclusive &&
            (pod_store_open(cli.dir, false, false, &ps, &err) < 0 || pod_store_image_ids(ps, &in_use, &err) < 0))
                return cli_fail(err);
        if (image_store_gc(s, in_use, &st, &err) < 0)
                return cli_fail(err);
        char bytes[16];
        format_bytes(st.bytes, bytes);
        printf("removed %u blobs, %u trees, %u leftovers of interrupted imports (%s freed)\n", st.blobs, st.trees,
               st.leftovers, bytes);
        if (st.partial)
                cli_note("imports, removals or prepares are running (%u staging directories in use): blobs and trees "
                     "were not collected; run 'sdpod image gc' again when they are done", st.busy);
        return EXIT_OK;
}

static const char image_usage[] =
        "Usage: sdpod image COMMAND [ARGS...]\n"
        "\n"
        "Commands:\n"
        "  import PATH        import an OCI layout/archive, docker archive or ACI\n"
        "  pull REFERENCE     pull an image from a registry\n"
        "  list               list images\n"
        "  inspect IMAGE      show an image's record as JSON\n"
        "  cat-manifest IMAGE print an image's manifest\n"
        "  tag IMAGE NAME     give an image another name\n"
        "  untag NAME...      take names away from images\n"
        "  rm IMAGE...        remove names and images\n"
        "  gc                 free blobs and trees no image uses\n";

int verb_image(int argc, char **argv) {
        static const Verb verbs[] = {
                { "import", image_import_verb, NULL },
                { "pull", image_pull_verb, NULL },
                { "list", image_list_verb, NULL },
                { "inspect", image_inspect_verb, NULL },
                { "cat-manifest", image_cat_manifest_verb, NULL },
                { "tag", image_tag_verb, NULL },
                { "untag", image_untag_verb, NULL },
                { "rm", image_rm_verb, NULL },
                { "gc", image_gc_verb, NULL },
                {},
        };
        return cli_dispatch(verbs, "sdpod image", image_usage, argc - 1, argv + 1);
}
