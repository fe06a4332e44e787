/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/macro.h"
#include "cli/cli.h"
#include "config.h"
#include "sdpod.h"

static const char usage[] =
        "Usage: sdpod [--dir=PATH] [--debug] COMMAND [ARGS...]\n"
        "\n"
        "A daemonless, systemd-native pod runtime.\n"
        "\n"
        "Commands:\n"
        "  image         import, list, inspect, remove and garbage-collect images\n"
        "  login         check and store credentials for a registry\n"
        "  logout        remove stored registry credentials\n"
        "  prepare       prepare a pod from images; prints its UUID\n"
        "  run           prepare a pod and run it in the foreground\n"
        "  run-prepared  run a prepared pod in the foreground (pod@.service)\n"
        "  stop          stop running pods\n"
        "  enter         run a command inside a running app\n"
        "  list          list pods\n"
        "  ps            list pods, as podman's ps (-a, -q)\n"
        "  status        show a pod's state, times and app exit statuses\n"
        "  cat-manifest  print a pod's manifest\n"
        "  journal       show a pod's journal: its apps' output and its systemd's log\n"
        "  logs          show a pod's journal, as podman's logs (--tail, -f)\n"
        "  stats         show the CPU, memory, pids and block I/O of running pods\n"
        "  rm            remove exited, prepared or failed pods\n"
        "  gc            collect exited and failed pods\n"
        "  volume        list, inspect and remove named volumes\n"
        "\n"
        "As podman's: 'ps' is list, 'logs' is journal, 'exec' is enter; a podman\n"
        "command that sdpod names otherwise says what sdpod's is (sdpod(1)).\n"
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
        { "login", verb_login, NULL },
        { "logout", verb_logout, NULL },
        { "prepare", verb_prepare, NULL },
        { "run", verb_run, NULL },
        { "run-prepared", verb_run_prepared, NULL },
        { "stop", verb_stop, NULL },
        { "enter", verb_enter, NULL },
        { "list", verb_list, NULL },
        { "status", verb_status, NULL },
        { "cat-manifest", verb_cat_manifest, NULL },
        { "journal", verb_journal, NULL },
        { "stats", verb_stats, NULL },
        { "rm", verb_rm, NULL },
        { "gc", verb_gc, NULL },
        { "volume", verb_volume, NULL },
        /* The names a podman user tries first. */
        { "ps", verb_ps, NULL },
        { "logs", verb_logs, NULL },
        { "exec", verb_enter, NULL },
        /* podman's commands that sdpod has under another name: no run, the
         * hint is what "unknown command" says (cli_dispatch()). */
        { "pod", NULL, "'podapp sandbox' makes a pod to add apps to ('podapp add'); 'sdpod list' lists pods, "
                       "'sdpod rm' removes them" },
        { "create", NULL, "'sdpod prepare'" },
        { "start", NULL, "'sdpod run-prepared POD' (or 'systemctl start pod@UUID.service')" },
        { "inspect", NULL, "'sdpod status --format=json POD', or 'sdpod image inspect IMAGE'" },
        { "container", NULL, "'sdpod list', 'sdpod status', 'sdpod rm'" },
        { "images", NULL, "'sdpod image list'" },
        { "rmi", NULL, "'sdpod image rm'" },
        { "pull", NULL, "'sdpod image pull'" },
        { "load", NULL, "'sdpod image import'" },
        { "tag", NULL, "'sdpod image tag'" },
        { "kill", NULL, "'sdpod stop --force'" },
        { "wait", NULL, "'sdpod status --wait POD'" },
        { "port", NULL, "'sdpod status POD' (its port- lines)" },
        { "top", NULL, "'sdpod stats', or 'sdpod enter POD ps'" },
        { "attach", NULL, "'sdpod journal -f POD', or 'sdpod enter -ti POD'" },
        { "prune", NULL, "'sdpod gc' and 'sdpod image gc'" },
        { "system", NULL, "'sdpod gc' and 'sdpod image gc'" },
        { "generate", NULL, "sdpod-pod-generator(8): a pod definition makes a service" },
        { "version", NULL, "'sdpod --version'" },
        {},
};

int main(int argc, char **argv) {
        return cli_main(argc, argv, "sdpod", usage, verbs);
}
