/* SPDX-License-Identifier: Apache-2.0 */
/* registry-client - lib/image/registry.h from the command line, for the
 * tests that run a real registry (test-registry-login and the pull tests):
 *
 *   registry-client [OPTIONS] ping REGISTRY
 *   registry-client [OPTIONS] manifest [--head] REFERENCE
 *       prints "digest DIGEST", "media-type TYPE", "size N", then the body
 *   registry-client [OPTIONS] blob REFERENCE DIGEST [OFFSET]
 *       writes the blob (from OFFSET) to stdout; "start N" on stderr
 *   registry-client [OPTIONS] url REFERENCE URL [MAX]
 *   registry-client [OPTIONS] parallel-blobs REFERENCE DIGEST...
 *       fetches the blobs at once on one Registry, prints "DIGEST SHA256 SIZE"
 *
 * OPTIONS: --tls-verify=BOOL --cert-dir=DIR --authfile=FILE --creds=USER:PASS
 * Exit status: 0, or the errno of the failure (ENOENT 2, EACCES 13, ...),
 * its message on stderr as "registry-client: MESSAGE". */
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>

#include "basic/sha256.h"
#include "image/reference.h"
#include "image/registry.h"

static volatile sig_atomic_t got_signal;

static void on_signal(int sig) {
        got_signal = sig;
}

static int interrupted(void) {
        return got_signal;
}

static int fail(Error *err, int r) {
        fprintf(stderr, "registry-client: %s\n", err && err->msg ? err->msg : strerror(-r));
        error_free(err);
        return -r;
}

static int write_sink(const void *data, size_t size, void *userdata) {
        return fwrite(data, 1, size, stdout) == size ? 0 : -EIO;
}

typedef struct Job {
        Registry *r;
        const char *digest;
        Sha256 hash;
        uint64_t size;
        int result;
        char *msg;
} Job;

static int hash_sink(const void *data, size_t size, void *userdata) {
        Job *j = userdata;
        sha256_update(&j->hash, data, size);
        j->size += size;
        return 0;
}

static void *job_run(void *p) {
        Job *j = p;
        Error *err = NULL;
        sha256_init(&j->hash);
        int64_t r = registry_get_blob(j->r, j->digest, 0, hash_sink, j, &err);
        j->result = r < 0 ? (int) r : 0;
        if (err)
                j->msg = strdup(err->msg);
        error_free(err);
        return NULL;
}

int main(int argc, char **argv) {
        enum { OPT_TLS = 0x100, OPT_CERT_DIR, OPT_AUTHFILE, OPT_CREDS, OPT_HEAD };
        static const struct option options[] = {
                { "tls-verify", required_argument, NULL, OPT_TLS },
                { "cert-dir", required_argument, NULL, OPT_CERT_DIR },
                { "authfile", required_argument, NULL, OPT_AUTHFILE },
                { "creds", required_argument, NULL, OPT_CREDS },
                { "head", no_argument, NULL, OPT_HEAD },
                {},
        };
        RegistryOptions opts = { .tls_verify = -1, .interrupted = interrupted };
        bool head = false;
        int c;
        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case OPT_TLS:
                        opts.tls_verify = streq(optarg, "true") ? 1 : 0;
                        break;
                case OPT_CERT_DIR:
                        opts.cert_dir = optarg;
                        break;
                case OPT_AUTHFILE:
                        opts.auth_file = optarg;
                        break;
                case OPT_CREDS: {
                        char *colon = strchr(optarg, ':');
                        if (!colon)
                                return 22;
                        *colon = '\0';
                        opts.username = optarg;
                        opts.password = colon + 1;
                        break;
                }
                case OPT_HEAD:
                        head = true;
                        break;
                default:
                        return 22;
                }
        if (argc - optind < 2)
                return 22;
        const char *verb = argv[optind], *arg = argv[optind + 1];
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);

        Error *err = NULL;
        ImageReference ref = {};
        int r;
        if (streq(verb, "ping")) {
                ref.registry = (char *) arg;
        } else if ((r = image_reference_parse(arg, &ref, &err)) < 0)
                return fail(err, r);
        Registry *reg = NULL;
        r = registry_open(&ref, &opts, &reg, &err);
        if (r < 0)
                return fail(err, r);

        if (streq(verb, "ping")) {
                r = registry_ping(reg, &err);
        } else if (streq(verb, "manifest")) {
                char *body = NULL, *mt = NULL, digest[DIGEST_STRING_SIZE];
                size_t size = 0;
                r = registry_get_manifest(reg, ref.digest ?: ref.tag, head, head ? NULL : &body, &size, &mt, digest, &err);
                if (r >= 0) {
                        printf("digest %s\nmedia-type %s\n", digest, mt);
                        if (!head)
                                printf("size %zu\n%s\n", size, body);
                }
                free(body);
                free(mt);
        } else if (streq(verb, "blob") && argc - optind >= 3) {
                uint64_t offset = argc - optind >= 4 ? strtoull(argv[optind + 3], NULL, 10) : 0;
                int64_t start = registry_get_blob(reg, argv[optind + 2], offset, write_sink, NULL, &err);
                r = start < 0 ? (int) start : 0;
                if (start >= 0)
                        fprintf(stderr, "start %" PRId64 "\n", start);
        } else if (streq(verb, "url") && argc - optind >= 3) {
                char *body = NULL;
                size_t size = 0, max = argc - optind >= 4 ? strtoull(argv[optind + 3], NULL, 10) : 1 << 20;
                r = registry_get_url(reg, argv[optind + 2], max, &body, &size, &err);
                if (r >= 0)
                        fwrite(body, 1, size, stdout);
                free(body);
        } else if (streq(verb, "parallel-blobs")) {
                size_t n = (size_t) (argc - optind - 2);
                Job *jobs = calloc(n, sizeof(Job));
                pthread_t *threads = calloc(n, sizeof(pthread_t));
                for (size_t i = 0; i < n; i++) {
                        jobs[i] = (Job) { .r = reg, .digest = argv[optind + 2 + i] };
                        pthread_create(&threads[i], NULL, job_run, &jobs[i]);
                }
                r = 0;
                for (size_t i = 0; i < n; i++) {
                        pthread_join(threads[i], NULL);
                        uint8_t d[SHA256_DIGEST_SIZE];
                        char hex[SHA256_HEX_SIZE];
                        sha256_final(&jobs[i].hash, d);
                        sha256_to_hex(d, hex);
                        if (jobs[i].result < 0) {
                                fprintf(stderr, "registry-client: %s\n", strempty(jobs[i].msg));
                                r = jobs[i].result;
                        } else
                                printf("%s sha256:%s %" PRIu64 "\n", jobs[i].digest, hex, jobs[i].size);
                        free(jobs[i].msg);
                }
                free(jobs);
                free(threads);
        } else
                r = -EINVAL;
        registry_free(reg);
        if (!streq(verb, "ping"))
                image_reference_done(&ref);
        if (r < 0)
                return fail(err, r);
        return 0;
}
