/* SPDX-License-Identifier: Apache-2.0 */
/* The records of volumes that keep data that the host reads back
 * (pod/pod-volume.h, pod/pod-userns.h): a named volume's volume.json, a
 * pod name's id range (DATA/id-ranges/NAME) and the sdpod/volumes
 * annotation of a manifest. None is the pod's to write, but each is read
 * strictly, and what is accepted must be what the rest takes for granted. */
#include <string.h>

#include "fuzz.h"
#include "pod/pod-userns.h"
#include "pod/pod-volume.h"

static void check_volume_record(const char *data, size_t size) {
        VolumeRecord v;
        Error *err = NULL;
        if (volume_record_parse(data, size, "volume.json", &v, &err) < 0) {
                fuzz_error_done("volume_record_parse", err);
                return;
        }
        if (!volume_name_is_valid(v.name) || strchr(v.name, '/') || streq(v.name, "..") || streq(v.name, "."))
                fuzz_fail("volume record: accepted name \"%s\"", v.name);
        if (v.has_base && v.base != 0 &&
            (v.base < POD_USERNS_BASE_MIN || v.base > POD_USERNS_BASE_MAX || v.base % POD_USERNS_SIZE != 0))
                fuzz_fail("volume record: accepted base %u", v.base);
        /* What the host writes back it must read as the same record. */
        _cleanup_free_ char *text = NULL;
        if (volume_record_format(&v, &text) < 0)
                return;
        VolumeRecord again;
        if (volume_record_parse(text, strlen(text), "again", &again, &err) < 0)
                fuzz_fail("volume record written back is refused: %s\n%s", err && err->msg ? err->msg : "?", text);
        if (!streq(again.name, v.name) || !streq(again.created, v.created) || again.has_base != v.has_base ||
            again.base != v.base)
                fuzz_fail("volume record changed on the way through: %s", text);
}

static void check_id_range(const char *data, size_t size) {
        PodIdRangeRecord r;
        Error *err = NULL;
        if (pod_id_range_record_parse(data, size, "id-range", &r, &err) < 0) {
                fuzz_error_done("pod_id_range_record_parse", err);
                return;
        }
        if (!*r.name || strchr(r.name, '/') || r.name[0] == '.' || r.base < POD_USERNS_BASE_MIN ||
            r.base > POD_USERNS_BASE_MAX || r.base % POD_USERNS_SIZE != 0)
                fuzz_fail("id range record: accepted name \"%s\", base %u", r.name, r.base);
}

static void check_options(const char *s) {
        static const char *const volumes[] = { "data", "v1", "" };
        for (size_t i = 0; i < ELEMENTSOF(volumes); i++) {
                PodVolumeOptions o;
                Error *err = NULL;
                if (pod_volume_options_parse(s, volumes[i], &o, &err) < 0) {
                        fuzz_error_done("pod_volume_options_parse", err);
                        continue;
                }
                if ((o.named[0] != 0) + o.chown + o.idmap > 1 || (o.named[0] && !volume_name_is_valid(o.named)) ||
                    o.uid >= POD_USERNS_SIZE || o.gid >= POD_USERNS_SIZE)
                        fuzz_fail("volume options: accepted named \"%s\" chown %d idmap %d uid %u gid %u", o.named,
                                  o.chown, o.idmap, o.uid, o.gid);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        check_volume_record((const char *) data, size);
        check_id_range((const char *) data, size);
        /* The annotation is a C string (a manifest's). */
        _cleanup_free_ char *s = malloc(size + 1);
        if (!s)
                return 0;
        memcpy(s, data, size);
        s[size] = 0;
        check_options(s);
        return 0;
}
