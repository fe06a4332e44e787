/* SPDX-License-Identifier: Apache-2.0 */
/* path_normalize_archive_name(): every name of every archive goes through
 * it before extraction decides where to write, so what it lets through is
 * what keeps extraction inside the tree. */
#include "basic/path.h"
#include "fuzz.h"

/* True if name has the component c ("" for an empty one, i.e. "//"). */
static bool has_component(const char *name, const char *c) {
        size_t l = strlen(c);
        for (const char *p = name;;) {
                const char *end = strchrnul(p, '/');
                if ((size_t) (end - p) == l && strncmp(p, c, l) == 0)
                        return true;
                if (!*end)
                        return false;
                p = end + 1;
        }
}

static void check_normalized(const char *in, const char *out) {
        if (!*out)
                return; /* the root of the tree */
        if (out[0] == '/')
                fuzz_fail("\"%s\" -> \"%s\": absolute", in, out);
        if (strstr(out, "//"))
                fuzz_fail("\"%s\" -> \"%s\": \"//\"", in, out);
        if (has_component(out, ".."))
                fuzz_fail("\"%s\" -> \"%s\": \"..\" component", in, out);
        if (has_component(out, "."))
                fuzz_fail("\"%s\" -> \"%s\": \".\" component", in, out);
        if (has_component(out, ""))
                fuzz_fail("\"%s\" -> \"%s\": empty component (trailing \"/\")", in, out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        /* Archive names are C strings (libarchive hands them out so). */
        _cleanup_free_ char *in = malloc(size + 1);
        if (!in)
                return 0;
        memcpy(in, data, size);
        in[size] = 0;

        _cleanup_free_ char *out = NULL;
        int r = path_normalize_archive_name(in, &out);
        if (r == -ENOMEM)
                return 0;
        /* ".." anywhere is refused, and nothing else is. */
        if (has_component(in, "..") != (r == -EINVAL))
                fuzz_fail("\"%s\": returned %d", in, r);
        if (r < 0)
                return 0;
        check_normalized(in, out);

        /* Normalising drops only "", "." and "/": the components are kept in
         * order, so the result is a fixed point. */
        _cleanup_free_ char *again = NULL;
        if (path_normalize_archive_name(out, &again) < 0 || !streq(again, out))
                fuzz_fail("\"%s\" -> \"%s\" -> \"%s\": not a fixed point", in, out, strempty(again));

        /* Extraction splits the result into parent and file name: the name
         * must be a valid file name, the parent again normalised. */
        if (*out) {
                _cleanup_free_ char *parent = NULL, *base = NULL;
                if (path_split(out, &parent, &base) < 0)
                        return 0;
                if (!filename_is_valid(base))
                        fuzz_fail("\"%s\" -> \"%s\": file name \"%s\" is not valid", in, out, base);
                check_normalized(in, parent);
                if (*parent ? strlen(parent) + 1 + strlen(base) != strlen(out) : !streq(base, out))
                        fuzz_fail("\"%s\" -> \"%s\": split into \"%s\" and \"%s\"", in, out, parent, base);
        }
        return 0;
}
