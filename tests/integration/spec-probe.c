/* SPDX-License-Identifier: Apache-2.0 */
/* spec-probe WHAT: what test-shim-cri-spec.sh asks inside a container,
 * each answer one line on stdout. Static: it runs in any root, and the
 * test installs it set-user-ID root.
 *
 *   euid          "euid=N": who it runs as (root only through its
 *                 set-user-ID bit, when the container may gain privileges)
 *   personality   "personality: ok" or the error: personality(2) with
 *                 ADDR_NO_RANDOMIZE, which containerd's default seccomp
 *                 profile refuses and an unconfined container may do
 *   mkdir PATH    "mkdir: ok" or the error */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv) {
        if (argc >= 2 && strcmp(argv[1], "euid") == 0) {
                printf("euid=%u\n", (unsigned) geteuid());
                return 0;
        }
        if (argc >= 2 && strcmp(argv[1], "personality") == 0) {
                int r = personality(ADDR_NO_RANDOMIZE);
                printf("personality: %s\n", r < 0 ? strerror(errno) : "ok");
                return r < 0;
        }
        if (argc >= 3 && strcmp(argv[1], "mkdir") == 0) {
                int r = mkdir(argv[2], 0755);
                printf("mkdir: %s\n", r < 0 ? strerror(errno) : "ok");
                return r < 0;
        }
        fprintf(stderr, "usage: spec-probe euid|personality|mkdir PATH\n");
        return 2;
}
