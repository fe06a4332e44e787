/* SPDX-License-Identifier: Apache-2.0 */
#include "cli.h"
#include "config.h"
#include "macro.h"
#include "sdpod.h"

static const char usage[] =
        "Usage: sdpod [--dir=PATH] [--debug] COMMAND [ARGS...]\n"
        "\n"
        "A daemonless, systemd-native pod runtime.\n"
        "\n"
        "Commands:\n"
        "  image       import, list, inspect, remove and garbage-collect images\n"
        "\n"
        "Global options:\n"
        "  --dir=PATH  data directory (default: $SDPOD_DIR, or " SDPOD_DEFAULT_DIR ")\n"
        "  --debug     print more detail on errors\n"
        "  --help      show this help\n"
        "  --version   show the version\n"
        "\n"
        "Run 'sdpod COMMAND --help' for a command's options. See sdpod(1).\n";

static const Verb verbs[] = {
        { "image", verb_image, "manage images" },
        {},
};

int main(int argc, char **argv) {
        int status;
        int i = cli_parse_globals(argc, argv, usage, &status);
        if (i < 0)
                return status;
        return cli_dispatch(verbs, "sdpod", usage, argc - i, argv + i);
}
