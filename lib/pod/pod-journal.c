/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "basic/strv.h"
#include "manifest/pod-manifest.h"
#include "pod/pod-journal.h"
#include "unit/app-unit.h"

int pod_journal_exec(const PodStore *ps, const Pod *p, const char *app, char **args, Error **err) {
        if (faccessat(p->fd, POD_JOURNAL_DIR, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? error_set(err, -ENOENT, "pod %s has no journal: it has not run (it is %s)",
                                                   p->uuid, pod_state_to_string(p->state))
                                       : error_sys(err, -errno, "pod %s: %s/", p->uuid, POD_JOURNAL_DIR);
        _cleanup_free_ char *unit = NULL;
        if (app) {
                _cleanup_pod_manifest_ PodManifest *m = NULL;
                if (pod_manifest_read_at(p->fd, "pod", "pod manifest", &m, err) < 0)
                        return error_prefix(err, "pod %s", p->uuid);
                if (!pod_manifest_find_app(m, app))
                        return error_set(err, -ENOENT, "pod %s has no app \"%s\"", p->uuid, app);
                if (asprintf(&unit, "--unit=" APP_UNIT_FORMAT, app) < 0)
                        return error_sys(err, -ENOMEM, "pod %s", p->uuid);
        }
        _cleanup_free_ char *path = pod_path(ps, p), *dir_arg = NULL;
        if (!path || asprintf(&dir_arg, "--directory=%s/%s", path, POD_JOURNAL_DIR) < 0)
                return error_sys(err, -ENOMEM, "pod %s", p->uuid);
        size_t n = strv_length(args);
        _cleanup_free_ char **argv = calloc(n + 4, sizeof(char *));
        if (!argv)
                return error_sys(err, -ENOMEM, "pod %s", p->uuid);
        size_t k = 0;
        argv[k++] = "journalctl";
        argv[k++] = dir_arg;
        if (unit)
                argv[k++] = unit;
        for (size_t i = 0; i < n; i++)
                argv[k++] = args[i];
        fflush(NULL);
        execvp("journalctl", argv);
        return error_sys(err, -errno, "pod %s: cannot execute journalctl (apt-get install systemd)", p->uuid);
}
