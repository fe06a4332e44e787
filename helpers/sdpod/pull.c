/* SPDX-License-Identifier: Apache-2.0 */
/* sdpod image pull. */
#include <getopt.h>
#include <stdio.h>

#include "cli/cli.h"
#include "cli/pull-view.h"
#include "image/image-pull.h"
#include "sdpod.h"

static const char pull_usage[] =
        "Usage: sdpod image pull [--name=NAME[:TAG]] [--platform=OS/ARCH[/VARIANT]] [--quiet]\n"
        "                        [--tls-verify=BOOL] [--cert-dir=DIR] [--authfile=FILE]\n"
        "                        [--creds=USER:PASSWORD] [--signature-policy=FILE]\n"
        "                        [--registries-d=DIR] [docker://]REGISTRY/REPOSITORY[:TAG|@DIGEST]\n"
        "\n"
        "Pulls an image from a registry into the store and renders its tree; prints\n"
        "the image id. The image is named REGISTRY/REPOSITORY:TAG (or @DIGEST).\n"
        "A reference must name its registry: short names are never guessed.\n"
        "\n"
        "  --name=NAME[:TAG]    also name the image so\n"
        "  --platform=OS/ARCH[/VARIANT]\n"
        "                       which image of a multi-platform index (default:\n"
        "                       linux and this machine's architecture)\n"
        "  -q, --quiet          no progress and no summary on stderr\n"
        "  --tls-verify=BOOL    verify the registry's certificate (default: true,\n"
        "                       unless registries.json marks the registry insecure)\n"
        "  --cert-dir=DIR       CA certificates (*.crt) for the registry\n"
        "  --authfile=FILE      credentials (default: see sdpod-registries(5))\n"
        "  --creds=USER:PASSWORD\n"
        "                       credentials for this pull\n"
        "  --signature-policy=FILE\n"
        "                       the policy for signatures (default:\n"
        "                       /etc/containers/policy.json, else accept anything)\n"
        "  --registries-d=DIR   where signatures are looked up (default:\n"
        "                       /etc/containers/registries.d)\n"
        "\n"
        "On a terminal, stderr shows each layer's bytes and rate; in a script, one\n"
        "summary line. SIGINT (Ctrl-C) stops it: partial downloads are kept, and the\n"
        "next pull resumes them.\n";

int image_pull_verb(int argc, char **argv) {
        static const char *command = "sdpod image pull";
        enum { OPT_NAME = 0x100, OPT_PLATFORM, OPT_TLS_VERIFY, OPT_CERT_DIR, OPT_AUTHFILE, OPT_CREDS,
               OPT_SIGNATURE_POLICY, OPT_REGISTRIES_D };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "quiet", no_argument, NULL, 'q' },
                { "name", required_argument, NULL, OPT_NAME },
                { "platform", required_argument, NULL, OPT_PLATFORM },
                { "tls-verify", required_argument, NULL, OPT_TLS_VERIFY },
                { "cert-dir", required_argument, NULL, OPT_CERT_DIR },
                { "authfile", required_argument, NULL, OPT_AUTHFILE },
                { "creds", required_argument, NULL, OPT_CREDS },
                { "signature-policy", required_argument, NULL, OPT_SIGNATURE_POLICY },
                { "registries-d", required_argument, NULL, OPT_REGISTRIES_D },
                {},
        };
        _cleanup_(pull_options_done) PullOptions opts = { .registry.tls_verify = -1 };
        bool quiet = false;
        Error *err = NULL;
        int c, index;
        while ((c = getopt_long(argc, argv, "hq", options, &index)) >= 0)
                switch (c) {
                case 'h':
                        fputs(pull_usage, stdout);
                        return EXIT_OK;
                case 'q':
                        quiet = true;
                        break;
                case OPT_NAME:
                        opts.name = optarg;
                        break;
                case OPT_PLATFORM ... OPT_REGISTRIES_D:
                        if (pull_options_set(&opts, options[index].name, optarg, &err) < 0) {
                                int status = cli_usage_error(command, "%s", err->msg);
                                error_free(err);
                                return status;
                        }
                        break;
                default:
                        return cli_option_error(command, "hq", argc, argv);
                }
        if (optind != argc - 1)
                return cli_usage_error(command, optind >= argc ? "missing REFERENCE" : "takes one REFERENCE");
        const char *reference = argv[optind];

        _cleanup_image_store_ ImageStore *s = NULL;
        _cleanup_image_ Image *image = NULL;
        if (image_store_open(cli.dir, cli.dir_is_default, STORE_SHARED, &s, &err) < 0)
                return cli_fail(err);
        PullView view;
        PullResult res;
        pull_view_init(&view, quiet);
        pull_view_attach(&view, &opts);
        cli_catch_interrupts();
        int r = image_pull(s, reference, &opts, &image, &res, &err);
        if (r < 0) {
                pull_view_clear(&view);
                int sig = cli_interrupted();
                if (r == -ECANCELED && sig) {
                        error_free(err);
                        cli_note("%s: interrupted (SIG%s); partial downloads are kept for the next pull, "
                                 "nothing else stays", reference, sigabbrev_np(sig));
                        return cli_interrupted_status(sig);
                }
                return cli_fail(err);
        }
        pull_view_done(&view, reference, image, &res);
        puts(image->id);
        return EXIT_OK;
}
