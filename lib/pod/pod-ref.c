/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "basic/lock.h"
#include "manifest/app-args.h"
#include "pod/pod-info.h"
#include "pod/pod-ref.h"

bool pod_state_holds_name(PodState s) {
        return s == POD_STATE_PREPARING || s == POD_STATE_PREPARED || s == POD_STATE_RUNNING;
}

typedef struct NameScan {
        const char *name;
        PodNamed *found;
        size_t n;
} NameScan;

static int collect_named(PodStore *s, Pod *p, void *userdata) {
        NameScan *c = userdata;
        PodInfo info;
        int r = pod_info_read(p, false, &info);
        if (r < 0)
                return r;
        bool match = streq_ptr(pod_info_name(&info), c->name);
        uint64_t created = info.created_usec;
        pod_info_done(&info);
        if (!match)
                return 0;
        PodNamed *l = reallocarray(c->found, c->n + 1, sizeof(PodNamed));
        if (!l)
                return -ENOMEM;
        c->found = l;
        l = &c->found[c->n++];
        snprintf(l->uuid, sizeof(l->uuid), "%s", p->uuid);
        l->state = p->state;
        l->created_usec = created;
        return 0;
}

int pod_find_named(PodStore *s, const char *name, PodNamed **ret, size_t *ret_n, Error **err) {
        NameScan c = { .name = name };
        int r = pod_foreach(s, collect_named, &c, err);
        if (r < 0) {
                free(c.found);
                return r == -ENOMEM ? error_sys(err, r, "pods named %s", name) : r;
        }
        *ret = c.found;
        *ret_n = c.n;
        return 0;
}

/* The live pod of the name, else the newest. */
static const PodNamed *pick_named(const PodNamed *found, size_t n) {
        const PodNamed *best = NULL;
        for (size_t i = 0; i < n; i++) {
                if (pod_state_holds_name(found[i].state))
                        return &found[i];
                if (!best || found[i].created_usec > best->created_usec)
                        best = &found[i];
        }
        return best;
}

int pod_resolve(PodStore *s, const char *ref, Pod **ret, Error **err) {
        if (uuid_is_valid(ref))
                return pod_lookup(s, ref, ret, err);
        if (!pod_name_is_valid(ref)) {
                char q[VALUE_QUOTED_MAX];
                return error_set(err, -EINVAL, "%s is neither a pod name nor a pod UUID (or a prefix of one)",
                                 value_quote(ref, q));
        }
        _cleanup_free_ PodNamed *found = NULL;
        size_t n;
        int r = pod_find_named(s, ref, &found, &n, err);
        if (r < 0)
                return r;
        const PodNamed *named = pick_named(found, n);
        if (named) {
                /* It may have been removed since the scan: then the name
                 * names nothing, which is what a lookup a moment later
                 * would have said. */
                r = pod_lookup(s, named->uuid, ret, err);
                return r == -ENOENT ? error_prefix(err, "pod %s", ref) : r;
        }
        if (!uuid_prefix_is_valid(ref))
                return error_set(err, -ENOENT, "no pod named %s", ref);
        _cleanup_error_ Error *e = NULL;
        r = pod_lookup(s, ref, ret, &e);
        if (r == -ENOENT)
                return error_set(err, r, "no pod is named %s or has a UUID starting with it", ref);
        if (r < 0 && err && !*err)
                *err = TAKE_PTR(e);
        return r;
}

int pod_name_claim(PodStore *s, const char *name, int *ret_lock, Error **err) {
        _cleanup_close_ int lock = lock_file_at(s->pods_fd, "names.lock", LOCK_EX);
        if (lock < 0)
                return error_sys(err, lock, "cannot lock %s/pods/names.lock", s->root);
        _cleanup_free_ PodNamed *found = NULL;
        size_t n;
        int r = pod_find_named(s, name, &found, &n, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                if (pod_state_holds_name(found[i].state))
                        return error_set(err, -EEXIST, "a pod named %s is %s already: %s (a name names one pod "
                                         "that is prepared or running; stop or remove it, or choose another name)",
                                         name, pod_state_to_string(found[i].state), found[i].uuid);
        *ret_lock = TAKE_FD(lock);
        return 0;
}
