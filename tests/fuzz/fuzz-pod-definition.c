/* SPDX-License-Identifier: Apache-2.0 */
/* pod_definition_render(): a pod definition (sdpod-pod-generator(8)) to the
 * unit the host's systemd runs as root. The definition is the operator's,
 * but a typo in it must never turn into a unit that does something else: a
 * definition is either refused with an error that names the file, leaving
 * nothing rendered, or it becomes units whose every line is one that
 * systemd reads as written (a comment, a section, KEY=VALUE; no control
 * character, valid UTF-8) with one ExecStart=, the generator's own, and
 * the same input renders the same units twice. */
#include <string.h>

#include "basic/utf8.h"
#include "fuzz.h"
#include "unit/pod-definition.h"

#define PATH POD_DEFINITIONS_DIR "/fuzz.pod"

static void check_unit_text(const char *name, const char *text) {
        if (!utf8_is_valid(text))
                fuzz_fail("%s: not UTF-8", name);
        size_t exec_start = 0;
        for (const char *l = text; *l;) {
                size_t n = strcspn(l, "\n");
                if (l[n] != '\n')
                        fuzz_fail("%s: its last line has no newline", name);
                /* A tab is whitespace to systemd, as in the operator's own
                 * unit files (the campaign of issue 29 found them passed
                 * through [Unit] lines: read as written). */
                for (size_t i = 0; i < n; i++)
                        if (((unsigned char) l[i] < 0x20 && l[i] != '\t') || l[i] == 0x7f)
                                fuzz_fail("%s: a control character 0x%02x in \"%.*s\"", name, (unsigned char) l[i],
                                          (int) n, l);
                if (n > 0 && l[0] != '#' && l[0] != '[') {
                        size_t key = strspn(l, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789");
                        if (key == 0 || key >= n || l[key] != '=')
                                fuzz_fail("%s: a line systemd would not read as KEY=VALUE: \"%.*s\"", name, (int) n, l);
                        exec_start += key == strlen("ExecStart") && strncmp(l, "ExecStart", key) == 0;
                }
                if (n > 0 && l[0] == '[' && l[n - 1] != ']')
                        fuzz_fail("%s: a broken section line \"%.*s\"", name, (int) n, l);
                l += n + 1;
        }
        if (exec_start != 1)
                fuzz_fail("%s: %zu ExecStart= lines", name, exec_start);
}

static void check_same(const PodUnits *a, const PodUnits *b) {
        if (a->n_files != b->n_files)
                fuzz_fail("rendered twice: %zu files, then %zu", a->n_files, b->n_files);
        for (size_t i = 0; i < a->n_files; i++)
                if (strcmp(a->files[i].path, b->files[i].path) != 0 ||
                    !!a->files[i].content != !!b->files[i].content ||
                    (a->files[i].content && strcmp(a->files[i].content, b->files[i].content) != 0) ||
                    !!a->files[i].link_target != !!b->files[i].link_target ||
                    (a->files[i].link_target && strcmp(a->files[i].link_target, b->files[i].link_target) != 0))
                        fuzz_fail("rendered twice: %s differs", a->files[i].path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        PodUnits u = {};
        Error *err = NULL;
        int r = pod_definition_render(PATH, (const char *) data, size, "/usr/bin/sdpod", &u, &err);
        if (r < 0) {
                if (r == -ENOMEM)
                        fuzz_fail("out of memory");
                if (!err || !err->msg || strncmp(err->msg, PATH ":", strlen(PATH ":")) != 0)
                        fuzz_fail("an error that does not name the file: %s", err && err->msg ? err->msg : "(none)");
                if (u.n_files || u.files)
                        fuzz_fail("a refused definition left units");
                fuzz_error_done("definition", err);
                return 0;
        }
        if (u.n_files == 0 || strcmp(u.files[0].path, "fuzz.service") != 0 || !u.files[0].content)
                fuzz_fail("the first unit is not fuzz.service");
        check_unit_text(u.files[0].path, u.files[0].content);
        for (size_t i = 1; i < u.n_files; i++) {
                const UnitFile *f = &u.files[i];
                if (f->content || !f->link_target || strchr(f->path, '/') == NULL ||
                    strcmp(strrchr(f->path, '/') + 1, "fuzz.service") != 0)
                        fuzz_fail("%s: not a .wants/.requires link to fuzz.service", f->path);
        }
        PodUnits again = {};
        if (pod_definition_render(PATH, (const char *) data, size, "/usr/bin/sdpod", &again, NULL) < 0)
                fuzz_fail("accepted once, refused the second time");
        check_same(&u, &again);
        pod_units_done(&again);
        pod_units_done(&u);
        return 0;
}
