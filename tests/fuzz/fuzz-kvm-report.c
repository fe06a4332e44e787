/* SPDX-License-Identifier: Apache-2.0 */
/* What a VM of the kvm flavor reports to its supervisor on the host
 * (kvm/kvm-run.h): lines on a virtio-serial port, written by the guest,
 * which is hostile. The input is split into lines as the supervisor splits
 * them; each line is either refused or parsed into a report within its
 * ranges (an app name of [a-z0-9-], a code of 0-255; neither for ready and
 * the heartbeat, alive), and the report,
 * written in the guest's format, parses back to the same report. */
#include <string.h>

#include "fuzz.h"
#include "kvm/kvm-run.h"

static void check_line(const char *line, size_t n) {
        KvmReport r;
        Error *err = NULL;
        if (kvm_report_parse(line, n, &r, &err) < 0) {
                fuzz_error_done("report", err);
                return;
        }
        if (r.code < 0 || r.code > 255)
                fuzz_fail("a report with code %d", r.code);
        if ((r.kind == KVM_REPORT_READY || r.kind == KVM_REPORT_ALIVE) && (r.code != 0 || r.app[0] != 0))
                fuzz_fail("a %s report with a code or an app", r.kind == KVM_REPORT_READY ? "ready" : "heartbeat");
        if (r.kind == KVM_REPORT_STATUS &&
            (r.app[0] == 0 || strspn(r.app, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(r.app)))
                fuzz_fail("a status report of app \"%s\"", r.app);
        char buf[KVM_REPORT_LINE_MAX + 2];
        kvm_report_format(&r, buf);
        size_t k = strlen(buf);
        if (k == 0 || buf[k - 1] != '\n')
                fuzz_fail("a report written without its newline: \"%s\"", buf);
        KvmReport again;
        if (kvm_report_parse(buf, k - 1, &again, &err) < 0)
                fuzz_fail("\"%.*s\", written as \"%s\", does not parse back: %s", (int) n, line, buf, err ? err->msg : "");
        if (again.kind != r.kind || again.code != r.code || strcmp(again.app, r.app) != 0)
                fuzz_fail("\"%.*s\", written as \"%s\", parses back as another report", (int) n, line, buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *s = (const char *) data;
        for (size_t start = 0; start < size;) {
                const char *nl = memchr(s + start, '\n', size - start);
                size_t end = nl ? (size_t) (nl - s) : size;
                check_line(s + start, end - start);
                start = end + 1;
        }
        return 0;
}
