/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <gpgme.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "basic/digest.h"
#include "basic/fs.h"
#include "basic/json-util.h"
#include "basic/strv.h"
#include "image/lookaside.h"
#include "image/policy.h"
#include "image/signature.h"

struct SignaturePolicy {
        Policy *policy;
};

/* A setting of the operator's that names a file or directory that is not
 * there is -EINVAL, not -ENOENT: callers take -ENOENT for an unknown image. */
static int setting_missing(int r, Error **err) {
        if (r != -ENOENT)
                return r;
        if (err && *err)
                (*err)->code = -EINVAL;
        return -EINVAL;
}

int signature_policy_load(const char *path, SignaturePolicy **ret, Error **err) {
        _cleanup_(policy_freep) Policy *policy = NULL;
        int r = policy_load(path, &policy, err);
        if (r < 0)
                return setting_missing(r, err);
        SignaturePolicy *p = calloc(1, sizeof(SignaturePolicy));
        if (!p)
                return error_sys(err, -ENOMEM, "signature policy");
        p->policy = TAKE_PTR(policy);
        *ret = p;
        return 0;
}

void signature_policy_free(SignaturePolicy *p) {
        if (!p)
                return;
        policy_free(p->policy);
        free(p);
}

const char *signature_policy_path(const SignaturePolicy *p) {
        return p->policy->path;
}

/* ---- the signed content ---------------------------------------------- */

#define JSON_KEYS_MAX 1024U
#define JSON_DEPTH_MAX 64U

/* json-c keeps the last of two equal keys of an object, another reader may
 * keep the first: a signed document that says two things is refused. The
 * text is valid strict JSON already (json_parse()), so this only
 * walks its strings and brackets; keys are compared decoded. */
static int json_check_duplicate_keys(const char *s, size_t n, const char *what, Error **err) {
        char **keys[JSON_DEPTH_MAX] = {};
        size_t n_keys[JSON_DEPTH_MAX] = {};
        bool object[JSON_DEPTH_MAX] = {};
        size_t depth = 0;
        bool expect_key = false;
        int r = 0;

        for (size_t i = 0; i < n && r == 0; i++) {
                char c = s[i];
                if (c == '"') {
                        size_t start = i++;
                        while (i < n && s[i] != '"')
                                i += s[i] == '\\' ? 2 : 1;
                        if (!(depth > 0 && object[depth - 1] && expect_key))
                                continue;
                        expect_key = false;
                        _cleanup_free_ char *quoted = strndup(s + start, i + 1 - start);
                        _cleanup_json_ struct json_object *k = quoted ? json_tokener_parse(quoted) : NULL;
                        if (!k || !json_object_is_type(k, json_type_string)) {
                                r = error_sys(err, -ENOMEM, "%s", what);
                                break;
                        }
                        const char *key = json_object_get_string(k);
                        char q[VALUE_QUOTED_MAX];
                        if (strlen(key) != (size_t) json_object_get_string_len(k))
                                r = error_set(err, -EBADMSG, "%s: a field name holds a NUL", what);
                        else if (strv_contains(keys[depth - 1], key))
                                r = error_set(err, -EBADMSG, "%s: field %s given twice", what, value_quote(key, q));
                        else if (++n_keys[depth - 1] > JSON_KEYS_MAX)
                                r = error_set(err, -EBADMSG, "%s: more than %u fields in one object", what, JSON_KEYS_MAX);
                        else if (strv_push(&keys[depth - 1], key) < 0)
                                r = error_sys(err, -ENOMEM, "%s", what);
                } else if (c == '{' || c == '[') {
                        if (depth == JSON_DEPTH_MAX) {
                                r = error_set(err, -EBADMSG, "%s: nested too deeply", what);
                                break;
                        }
                        object[depth] = c == '{';
                        depth++;
                        expect_key = c == '{';
                } else if (c == '}' || c == ']') {
                        if (depth == 0)
                                break;
                        depth--;
                        strv_free(keys[depth]);
                        keys[depth] = NULL;
                        n_keys[depth] = 0;
                        expect_key = false;
                } else if (c == ',')
                        expect_key = depth > 0 && object[depth - 1];
                else if (c == '\'')
                        /* json-c takes 'single-quoted' strings even when
                         * strict; JSON has none, and this walk would not
                         * see their keys. */
                        r = error_set(err, -EBADMSG, "%s: not valid JSON: a single-quoted string at byte %zu", what, i);
        }
        for (size_t d = 0; d < JSON_DEPTH_MAX; d++)
                strv_free(keys[d]);
        return r;
}

void signature_payload_done(SignaturePayload *p) {
        if (!p)
                return;
        free(p->manifest_digest);
        free(p->docker_reference);
        free(p->creator);
        *p = (SignaturePayload) {};
}

/* Exactly the fields named, all of them: "critical" is what a signer
 * requires every verifier to understand. */
static int check_exact_fields(struct json_object *o, const char *const *fields, const char *what, Error **err) {
        if (!json_object_is_type(o, json_type_object))
                return error_set(err, -EBADMSG, "%s: expected an object", what);
        size_t n = 0;
        json_object_object_foreach(o, key, val) {
                (void) val;
                bool known = false;
                for (const char *const *f = fields; *f; f++)
                        known = known || streq(*f, key);
                if (!known) {
                        char q[VALUE_QUOTED_MAX];
                        return error_set(err, -EBADMSG, "%s: unknown field %s", what, value_quote(key, q));
                }
                n++;
        }
        for (const char *const *f = fields; *f; f++)
                if (!json_object_object_get_ex(o, *f, NULL))
                        return error_set(err, -EBADMSG, "%s: field \"%s\": missing", what, *f);
        return 0;
}

static int get_exact_string(struct json_object *o, const char *field, const char *what, char **ret, Error **err) {
        const char *const fields[] = { field, NULL };
        int r = check_exact_fields(o, fields, what, err);
        if (r < 0)
                return r;
        const char *v = NULL;
        r = json_get_string(o, field, true, &v, what, err);
        if (r < 0)
                return r;
        if (!(*ret = strdup(v)))
                return error_sys(err, -ENOMEM, "%s", what);
        return 0;
}

int signature_payload_parse(const char *data, size_t size, const char *what, SignaturePayload *ret, Error **err) {
        if (size > SIGNATURE_SIZE_MAX)
                return error_set(err, -EBADMSG, "%s: larger than %u bytes", what, SIGNATURE_SIZE_MAX);
        /* json_parse() refuses a NUL anywhere: the key check below may
         * treat the text as a C string. */
        _cleanup_json_ struct json_object *root = NULL;
        int r = json_parse(data, size, what, &root, err);
        if (r < 0)
                return r;
        r = json_check_duplicate_keys(data, size, what, err);
        if (r < 0)
                return r;
        if (!json_object_is_type(root, json_type_object))
                return error_set(err, -EBADMSG, "%s: expected a JSON object", what);

        json_object_object_foreach(root, key, val) {
                (void) val;
                if (!streq(key, "critical") && !streq(key, "optional")) {
                        char q[VALUE_QUOTED_MAX];
                        return error_set(err, -EBADMSG, "%s: unknown field %s", what, value_quote(key, q));
                }
        }

        _cleanup_free_ char *w = NULL;
        if (asprintf(&w, "%s: critical", what) < 0)
                return error_sys(err, -ENOMEM, "%s", what);
        struct json_object *critical = NULL, *image = NULL, *identity = NULL, *optional = NULL;
        r = json_get_object(root, "critical", true, &critical, what, err);
        if (r < 0)
                return r;
        static const char *const critical_fields[] = { "type", "image", "identity", NULL };
        r = check_exact_fields(critical, critical_fields, w, err);
        if (r < 0)
                return r;
        const char *type = NULL;
        r = json_get_string(critical, "type", true, &type, w, err);
        if (r < 0)
                return r;
        if (!streq(type, SIGNATURE_TYPE)) {
                char q[VALUE_QUOTED_MAX];
                return error_set(err, -EBADMSG, "%s.type: %s, expected \"" SIGNATURE_TYPE "\"", w,
                                 value_quote(type, q));
        }

        _cleanup_(signature_payload_done) SignaturePayload p = {};
        _cleanup_free_ char *wi = NULL, *wd = NULL;
        if (asprintf(&wi, "%s.image", w) < 0 || asprintf(&wd, "%s.identity", w) < 0)
                return error_sys(err, -ENOMEM, "%s", what);
        r = json_get_object(critical, "image", true, &image, w, err);
        if (r < 0)
                return r;
        r = get_exact_string(image, "docker-manifest-digest", wi, &p.manifest_digest, err);
        if (r < 0)
                return r;
        r = json_get_object(critical, "identity", true, &identity, w, err);
        if (r < 0)
                return r;
        r = get_exact_string(identity, "docker-reference", wd, &p.docker_reference, err);
        if (r < 0)
                return r;

        /* "optional" is informative: only its known fields are checked. */
        r = json_get_object(root, "optional", false, &optional, what, err);
        if (r < 0)
                return r;
        if (optional) {
                _cleanup_free_ char *wo = NULL;
                if (asprintf(&wo, "%s: optional", what) < 0)
                        return error_sys(err, -ENOMEM, "%s", what);
                const char *creator = NULL;
                r = json_get_string(optional, "creator", false, &creator, wo, err);
                if (r < 0)
                        return r;
                if (creator && !(p.creator = strdup(creator)))
                        return error_sys(err, -ENOMEM, "%s", what);
                r = json_get_int64(optional, "timestamp", false, &p.timestamp, wo, err);
                if (r < 0)
                        return r;
        }
        *ret = p;
        p = (SignaturePayload) {};
        return 0;
}

/* ---- the default fetcher --------------------------------------------- */

static int hex_value(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

int signature_fetch_file(const char *url, size_t max, char **ret, size_t *ret_size, void *userdata, Error **err) {
        const char *p = startswith(url, "file://");
        if (!p)
                return error_set(err, -EPROTONOSUPPORT, "%s: only file:// URLs can be read here", url);
        const char *local = startswith(p, "localhost/");
        if (local)
                p = local - 1;
        if (p[0] != '/')
                return error_set(err, -EINVAL, "%s: not a local file URL", url);

        _cleanup_free_ char *path = malloc(strlen(p) + 1);
        if (!path)
                return error_sys(err, -ENOMEM, "%s", url);
        size_t n = 0;
        for (size_t i = 0; p[i]; i++) {
                int hi, lo;
                if (p[i] == '%' && (hi = hex_value(p[i + 1])) >= 0 && (lo = hex_value(p[i + 2])) >= 0) {
                        path[n++] = (char) (hi << 4 | lo);
                        i += 2;
                } else
                        path[n++] = p[i];
        }
        path[n] = 0;
        if (strlen(path) != n)
                return error_set(err, -EINVAL, "%s: a NUL byte in the path", url);
        return read_file(path, max, ret, ret_size, err);
}

/* ---- a private keyring ----------------------------------------------- */

static pthread_once_t gpgme_once = PTHREAD_ONCE_INIT;
static bool gpgme_ready;

/* gpgme talks to gpg through pipes, and a gpg that dies early makes a
 * write raise SIGPIPE, whose default action kills sdpod. gpgme's own remedy
 * is to ignore SIGPIPE in the whole process when it is initialized, which
 * every program sdpod starts afterwards (a pod's processes among them) would
 * inherit. Instead the process's disposition is put back, and SIGPIPE is
 * blocked in the verifying thread while gpgme works; one raised meanwhile is
 * taken back before the mask is restored. */
static void gpgme_init_once(void) {
        struct sigaction old;
        bool saved = sigaction(SIGPIPE, NULL, &old) == 0;
        gpgme_ready = gpgme_check_version(NULL) && gpgme_engine_check_version(GPGME_PROTOCOL_OpenPGP) == 0;
        if (saved)
                (void) sigaction(SIGPIPE, &old, NULL);
}

typedef struct PipeGuard {
        sigset_t old_mask;
        bool was_pending;
} PipeGuard;

static void pipe_guard_begin(PipeGuard *g) {
        sigset_t pipe, pending;
        sigemptyset(&pipe);
        sigaddset(&pipe, SIGPIPE);
        g->was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe, &g->old_mask);
}

static void pipe_guard_end(PipeGuard *g) {
        sigset_t pipe, pending;
        sigemptyset(&pipe);
        sigaddset(&pipe, SIGPIPE);
        if (!g->was_pending && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE)) {
                struct timespec zero = {};
                while (sigtimedwait(&pipe, NULL, &zero) < 0 && errno == EINTR)
                        ;
        }
        pthread_sigmask(SIG_SETMASK, &g->old_mask, NULL);
}

/* One verification's GnuPG home: a fresh directory, holding only the
 * requirement's keys, never the user's keyring. */
typedef struct Keyring {
        char *home;
        gpgme_ctx_t ctx;
        char **fingerprints; /* the primary keys imported */
} Keyring;

/* Ends whatever gpg left running for the home (it is told never to start
 * an agent, so normally nothing): gpgconf --kill all, by its own PID. */
static void keyring_kill_agents(const char *home) {
        _cleanup_closedir_ DIR *d = opendir(home);
        bool sockets = false;
        struct dirent *de;
        while (d && (de = readdir(d)))
                if (startswith(de->d_name, "S."))
                        sockets = true;
        if (!sockets)
                return;
        const char *gpgconf = gpgme_get_dirinfo("gpgconf-name");
        if (!gpgconf)
                return;
        posix_spawn_file_actions_t fa;
        if (posix_spawn_file_actions_init(&fa) != 0)
                return;
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
        char *argv[] = { (char *) gpgconf, (char *) "--homedir", (char *) home, (char *) "--kill", (char *) "all", NULL };
        /* gpgconf runs with the signal state of a fresh program, not with
         * the SIGPIPE this thread blocks meanwhile. */
        posix_spawnattr_t attr;
        bool have_attr = posix_spawnattr_init(&attr) == 0;
        if (have_attr) {
                sigset_t none, pipe;
                sigemptyset(&none);
                sigemptyset(&pipe);
                sigaddset(&pipe, SIGPIPE);
                posix_spawnattr_setsigmask(&attr, &none);
                posix_spawnattr_setsigdefault(&attr, &pipe);
                posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        }
        pid_t pid;
        extern char **environ;
        if (posix_spawn(&pid, gpgconf, &fa, have_attr ? &attr : NULL, argv, environ) == 0)
                while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                        ;
        if (have_attr)
                posix_spawnattr_destroy(&attr);
        posix_spawn_file_actions_destroy(&fa);
}

static void keyring_done(Keyring *k) {
        if (k->ctx)
                gpgme_release(k->ctx);
        if (k->home) {
                keyring_kill_agents(k->home);
                (void) rm_rf(k->home);
                free(k->home);
        }
        strv_free(k->fingerprints);
        *k = (Keyring) {};
}

static int keyring_new(Keyring *k, Error **err) {
        pthread_once(&gpgme_once, gpgme_init_once);
        if (!gpgme_ready)
                return error_set(err, -ENOPKG, "signature verification: gpgme finds no usable gpg (is gnupg installed?)");

        const char *tmp = getenv("TMPDIR");
        if (asprintf(&k->home, "%s/sdpod-gpg.XXXXXX", tmp && *tmp ? tmp : "/tmp") < 0) {
                k->home = NULL;
                return error_sys(err, -ENOMEM, "signature verification");
        }
        if (!mkdtemp(k->home)) {
                int r = -errno;
                free(k->home);
                k->home = NULL;
                return error_sys(err, r, "signature verification: a temporary GnuPG home");
        }
        /* Verification needs no agent and no key server: gpg must not start
         * one (it would outlive us) nor fetch keys it does not have. */
        _cleanup_close_ int dfd = open(k->home, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return error_sys(err, -errno, "signature verification: %s", k->home);
        static const char conf[] = "no-autostart\nno-auto-key-retrieve\nno-auto-key-locate\n";
        int r = write_file_atomic_at(dfd, "gpg.conf", conf, sizeof(conf) - 1, 0600, err);
        if (r < 0) {
                (void) error_prefix(err, "signature verification: %s", k->home);
                return r;
        }

        gpgme_error_t e = gpgme_new(&k->ctx);
        if (!e)
                e = gpgme_set_protocol(k->ctx, GPGME_PROTOCOL_OpenPGP);
        if (!e)
                e = gpgme_ctx_set_engine_info(k->ctx, GPGME_PROTOCOL_OpenPGP, NULL, k->home);
        if (e)
                return error_set(err, -EIO, "signature verification: gpgme: %s", gpgme_strerror(e));
        gpgme_set_offline(k->ctx, 1);
        return 0;
}

static int keyring_import(Keyring *k, const char *data, size_t size, const char *what, Error **err) {
        gpgme_data_t d = NULL;
        gpgme_error_t e = gpgme_data_new_from_mem(&d, data, size, 0);
        if (e)
                return error_set(err, -ENOMEM, "%s: %s", what, gpgme_strerror(e));
        e = gpgme_op_import(k->ctx, d);
        gpgme_data_release(d);
        if (e)
                return error_set(err, -EBADMSG, "%s: importing the key: %s", what, gpgme_strerror(e));
        gpgme_import_result_t res = gpgme_op_import_result(k->ctx);
        size_t n = 0;
        for (gpgme_import_status_t s = res ? res->imports : NULL; s; s = s->next) {
                if (s->result || !s->fpr)
                        continue;
                if (!strv_contains(k->fingerprints, s->fpr) && strv_push(&k->fingerprints, s->fpr) < 0)
                        return error_sys(err, -ENOMEM, "%s", what);
                n++;
        }
        if (n == 0)
                return error_set(err, -EBADMSG, "%s: no OpenPGP public key in it", what);
        return 0;
}

static int keyring_import_requirement(Keyring *k, const PolicyRequirement *req, Error **err) {
        if (req->key_data) {
                _cleanup_free_ char *what = NULL;
                if (asprintf(&what, "%s.keyData", req->where) < 0)
                        return error_sys(err, -ENOMEM, "%s", req->where);
                return keyring_import(k, req->key_data, req->key_data_size, what, err);
        }
        for (char **p = req->key_paths; p && *p; p++) {
                _cleanup_free_ char *data = NULL, *what = NULL;
                size_t size = 0;
                if (asprintf(&what, "%s: key file %s", req->where, *p) < 0)
                        return error_sys(err, -ENOMEM, "%s", req->where);
                Error *e = NULL;
                int r = read_file(*p, POLICY_KEY_FILE_MAX, &data, &size, &e);
                if (r < 0) {
                        r = error_set(err, r, "%s: %s", req->where, e && e->msg ? e->msg : strerror(-r));
                        error_free(e);
                        return r;
                }
                r = keyring_import(k, data, size, what, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The signed content, bounded: a small compressed message could inflate
 * to gigabytes. */
typedef struct PlainSink {
        char *buf;
        size_t size;
        bool too_large;
} PlainSink;

static ssize_t plain_write(void *handle, const void *buffer, size_t size) {
        PlainSink *s = handle;
        if (size > SIGNATURE_SIZE_MAX - s->size) {
                s->too_large = true;
                errno = EFBIG;
                return -1;
        }
        if (!s->buf && !(s->buf = malloc(SIGNATURE_SIZE_MAX + 1))) {
                errno = ENOMEM;
                return -1;
        }
        memcpy(s->buf + s->size, buffer, size);
        s->size += size;
        s->buf[s->size] = 0;
        return (ssize_t) size;
}

/* Verifies one signed message with the keyring: 0 and its content and
 * signer, or -EPERM with why in *ret_reason. */
static int keyring_verify(Keyring *k, const char *sig, size_t sig_size, char **ret_plain, size_t *ret_plain_size,
                          char **ret_signer, char **ret_reason) {
        gpgme_data_t sig_data = NULL, plain_data = NULL;
        PlainSink sink = {};
        struct gpgme_data_cbs cbs = { .write = plain_write };
        char *reason = NULL;

        gpgme_error_t e = gpgme_data_new_from_mem(&sig_data, sig, sig_size, 0);
        if (!e)
                e = gpgme_data_new_from_cbs(&plain_data, &cbs, &sink);
        if (e) {
                if (sig_data)
                        gpgme_data_release(sig_data);
                return -ENOMEM;
        }
        e = gpgme_op_verify(k->ctx, sig_data, NULL, plain_data);
        gpgme_data_release(sig_data);
        gpgme_data_release(plain_data);

        gpgme_verify_result_t res = e ? NULL : gpgme_op_verify_result(k->ctx);
        gpgme_signature_t s = res ? res->signatures : NULL;
        bool failed = true;
        if (sink.too_large)
                reason = strdup("its signed content is larger than 64 KiB");
        else if (e)
                (void) asprintf(&reason, "not an OpenPGP signed message (gpg: %s)", gpgme_strerror(e));
        else if (!s)
                reason = strdup("not an OpenPGP signed message (no signature in it)");
        else if (s->next)
                reason = strdup("more than one signature in one message");
        else if (gpgme_err_code(s->status) == GPG_ERR_NO_PUBKEY)
                (void) asprintf(&reason, "signature by an unknown key %s", s->fpr ? s->fpr : "(none given)");
        else if (s->status)
                (void) asprintf(&reason, "bad signature (gpg: %s)", gpgme_strerror(s->status));
        else if ((s->summary & GPGME_SIGSUM_RED) || s->validity == GPGME_VALIDITY_NEVER || s->wrong_key_usage ||
                 s->validity_reason)
                (void) asprintf(&reason, "the signature by %s is not valid", s->fpr ? s->fpr : "?");
        else if (!sink.buf)
                reason = strdup("the signed content is empty");
        else
                failed = false;
        if (failed) {
                free(sink.buf);
                *ret_reason = reason;
                return reason ? -EPERM : -ENOMEM;
        }

        /* The signature is good and its key is in the keyring, which holds
         * only the requirement's keys; still, name the key and check that it
         * (or the key whose subkey signed) is one that was imported. */
        gpgme_key_t key = NULL;
        const char *primary = NULL;
        if (s->fpr && gpgme_get_key(k->ctx, s->fpr, &key, 0) == 0 && key)
                primary = key->fpr;
        if (!primary || !strv_contains(k->fingerprints, primary)) {
                (void) asprintf(&reason, "signature by an unknown key %s", s->fpr ? s->fpr : "(none given)");
                if (key)
                        gpgme_key_unref(key);
                free(sink.buf);
                *ret_reason = reason;
                return reason ? -EPERM : -ENOMEM;
        }
        char *signer = strdup(primary);
        gpgme_key_unref(key);
        if (!signer) {
                free(sink.buf);
                return -ENOMEM;
        }
        *ret_plain = sink.buf;
        *ret_plain_size = sink.size;
        *ret_signer = signer;
        return 0;
}

/* ---- the check ------------------------------------------------------- */

typedef struct FetchedSignature {
        char *url;
        char *data;
        size_t size;
        char *problem; /* set when it could not even be read (too large) */
} FetchedSignature;

/* One signature against one signedBy requirement: NULL when it is
 * accepted, else why not (allocated). */
static char *check_one(Keyring *k, const PolicyRequirement *req, const FetchedSignature *sig,
                       const DockerReference *intended, const char *manifest_digest) {
        char *reason = NULL;
        if (sig->problem || !sig->data)
                return strdup(sig->problem ? sig->problem : "could not be read");

        _cleanup_free_ char *plain = NULL, *signer = NULL;
        size_t plain_size = 0;
        int r = keyring_verify(k, sig->data, sig->size, &plain, &plain_size, &signer, &reason);
        if (r < 0)
                return reason ? reason : strdup("out of memory");

        _cleanup_(signature_payload_done) SignaturePayload payload = {};
        Error *e = NULL;
        if (signature_payload_parse(plain, plain_size, "its signed content", &payload, &e) < 0) {
                reason = strdup(e && e->msg ? e->msg : "its signed content is not a simple signing payload");
                error_free(e);
                return reason;
        }

        char q[VALUE_QUOTED_MAX];
        if (!streq(payload.manifest_digest, manifest_digest)) {
                (void) asprintf(&reason, "manifest digest mismatch: signed (by %s) for %s, the image's manifest is %s",
                                signer,
                                digest_is_valid(payload.manifest_digest) ? payload.manifest_digest
                                                                         : value_quote(payload.manifest_digest, q),
                                manifest_digest);
                return reason;
        }
        if (!policy_identity_matches(req, intended, payload.docker_reference)) {
                _cleanup_free_ char *want = docker_reference_to_string(intended);
                const char *mode = policy_identity_to_string(req->identity);
                if (req->identity == POLICY_IDENTITY_EXACT_REFERENCE || req->identity == POLICY_IDENTITY_EXACT_REPOSITORY)
                        (void) asprintf(&reason, "identity mismatch: signed (by %s) for %s, the policy wants %s (%s)",
                                        signer, value_quote(payload.docker_reference, q),
                                        strempty(req->identity_reference), mode);
                else
                        (void) asprintf(&reason, "identity mismatch: signed (by %s) for %s, the image is %s (%s)",
                                        signer, value_quote(payload.docker_reference, q), strempty(want), mode);
                return reason ? reason : strdup("identity mismatch");
        }
        return NULL;
}

static int check_signed_by_guarded(const PolicyRequirement *req, const char *ref_text, const DockerReference *intended,
                                   const char *manifest_digest, const FetchedSignature *sigs, size_t n, Error **err) {
        _cleanup_(keyring_done) Keyring k = {};
        int r = keyring_new(&k, err);
        if (r < 0)
                return r;
        r = keyring_import_requirement(&k, req, err);
        if (r == -ENOENT) {
                /* A requirement whose key file is not there is a broken
                 * policy, as one that is not JSON is. */
                if (err && *err)
                        (*err)->code = -EBADMSG;
                r = -EBADMSG;
        }
        if (r < 0) {
                (void) error_prefix(err, "%s: signature policy", ref_text);
                return r;
        }

        _cleanup_strv_free_ char **reasons = NULL;
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *why = check_one(&k, req, &sigs[i], intended, manifest_digest);
                if (!why)
                        return 0;
                _cleanup_free_ char *line = NULL;
                if (asprintf(&line, "signature %zu (%s): %s", i + 1, sigs[i].url, why) < 0 ||
                    strv_push(&reasons, line) < 0)
                        return error_sys(err, -ENOMEM, "%s", ref_text);
        }

        /* Say why each was refused, the first few of them. */
        _cleanup_free_ char *all = NULL;
        size_t shown = n < 3 ? n : 3;
        for (size_t i = 0; i < shown; i++) {
                char *joined = NULL;
                if (asprintf(&joined, "%s%s%s", strempty(all), all ? "; " : "", reasons[i]) < 0)
                        return error_sys(err, -ENOMEM, "%s", ref_text);
                free(all);
                all = joined;
        }
        if (n == 1)
                return error_set(err, -EPERM, "%s: refused by %s (signedBy): %s", ref_text, req->where, all);
        return error_set(err, -EPERM, "%s: refused by %s (signedBy): none of the %zu signatures is accepted: %s%s",
                         ref_text, req->where, n, all, n > shown ? "; ..." : "");
}

static int check_signed_by(const PolicyRequirement *req, const char *ref_text, const DockerReference *intended,
                           const char *manifest_digest, const FetchedSignature *sigs, size_t n, Error **err) {
        PipeGuard g;
        pipe_guard_begin(&g);
        int r = check_signed_by_guarded(req, ref_text, intended, manifest_digest, sigs, n, err);
        pipe_guard_end(&g);
        return r;
}

static void fetched_done(FetchedSignature *sigs, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(sigs[i].url);
                free(sigs[i].data);
                free(sigs[i].problem);
        }
}

int signature_policy_check(const SignaturePolicy *p, const char *registries_d, const char *registry,
                           const char *repository, const char *tag_or_null, const char *manifest_digest,
                           SignatureFetch fetch, void *userdata, Error **err) {
        char q[VALUE_QUOTED_MAX];
        if (!manifest_digest || !digest_is_valid(manifest_digest))
                return error_set(err, -EINVAL, "signature check: %s is not a sha256 digest",
                                 value_quote(strempty(manifest_digest), q));

        _cleanup_free_ char *ref_text = NULL;
        if (asprintf(&ref_text, "%s/%s%s%s", registry, repository, tag_or_null ? ":" : "@",
                     tag_or_null ? tag_or_null : manifest_digest) < 0)
                return error_sys(err, -ENOMEM, "signature check");
        _cleanup_(docker_reference_done) DockerReference intended = {};
        int r = docker_reference_parse(ref_text, &intended);
        if (r == -ENOMEM)
                return error_sys(err, r, "%s", ref_text);
        if (r < 0)
                return error_set(err, -EINVAL, "signature check: %s is not a valid image reference",
                                 value_quote(ref_text, q));

        const PolicyScope *scope = policy_lookup(p->policy, registry, repository, tag_or_null,
                                                 tag_or_null ? NULL : manifest_digest);

        /* What refuses without looking at signatures refuses before anything
         * is fetched. */
        bool need_signatures = false;
        for (size_t i = 0; i < scope->n_requirements; i++) {
                const PolicyRequirement *req = &scope->requirements[i];
                if (req->type == POLICY_REJECT)
                        return error_set(err, -EPERM, "%s: rejected by the policy for scope %s (%s)", ref_text,
                                         scope->name, req->where);
                if (req->type == POLICY_UNSUPPORTED)
                        return error_set(err, -EPERM, "%s: refused by %s: %s", ref_text, req->where, req->unsupported);
                if (req->type == POLICY_SIGNED_BY)
                        need_signatures = true;
        }
        if (!need_signatures)
                return 0;

        _cleanup_(lookaside_freep) Lookaside *l = NULL;
        r = lookaside_load(registries_d, &l, err);
        if (r < 0) {
                (void) error_prefix(err, "%s: signatures", ref_text);
                return setting_missing(r, err);
        }
        const LookasideEntry *entry = lookaside_find(l, registry, repository, tag_or_null,
                                                     tag_or_null ? NULL : manifest_digest);
        const PolicyRequirement *first = NULL;
        for (size_t i = 0; i < scope->n_requirements && !first; i++)
                if (scope->requirements[i].type == POLICY_SIGNED_BY)
                        first = &scope->requirements[i];
        if (!entry)
                return error_set(err, -EPERM,
                                 "%s: refused by %s (signedBy): no signature found: no lookaside is configured for it "
                                 "in %s",
                                 ref_text, first->where, registries_d ? registries_d : LOOKASIDE_DEFAULT_DIR);

        if (!fetch)
                fetch = signature_fetch_file;
        /* The repository as containers name it in the lookaside: normalized
         * ("busybox" of docker.io is "library/busybox"). */
        const char *path = strchr(intended.name, '/') + 1;
        FetchedSignature sigs[SIGNATURE_COUNT_MAX] = {};
        size_t n = 0;
        _cleanup_free_ char *first_url = NULL;
        for (unsigned i = 1; i <= SIGNATURE_COUNT_MAX; i++) {
                _cleanup_free_ char *url = lookaside_signature_url(entry->url, path, manifest_digest, i);
                if (!url) {
                        fetched_done(sigs, n);
                        return error_sys(err, -ENOMEM, "%s", ref_text);
                }
                if (i == 1 && !(first_url = strdup(url))) {
                        fetched_done(sigs, n);
                        return error_sys(err, -ENOMEM, "%s", ref_text);
                }
                char *data = NULL;
                size_t size = 0;
                Error *e = NULL;
                r = fetch(url, SIGNATURE_SIZE_MAX, &data, &size, userdata, &e);
                if (r == -ENOENT) {
                        error_free(e);
                        break;
                }
                FetchedSignature *s = &sigs[n];
                if (r == -EFBIG) {
                        /* An oversized answer is a bad signature, not a
                         * reason to give up on the ones after it. */
                        s->problem = strdup("larger than 64 KiB");
                        error_free(e);
                } else if (r < 0) {
                        fetched_done(sigs, n);
                        if (err && !*err && e) {
                                *err = TAKE_PTR(e);
                                (void) error_prefix(err, "%s: fetching signature %u", ref_text, i);
                        } else
                                (void) error_sys(err, r, "%s: fetching signature %u (%s)", ref_text, i, url);
                        error_free(e);
                        return r;
                } else if (size > SIGNATURE_SIZE_MAX) {
                        free(data);
                        s->problem = strdup("larger than 64 KiB");
                } else {
                        s->data = data;
                        s->size = size;
                }
                s->url = TAKE_PTR(url);
                n++;
        }

        if (n == 0) {
                r = error_set(err, -EPERM, "%s: refused by %s (signedBy): no signature found at %s (lookaside of %s)",
                              ref_text, first->where, first_url, entry->where);
                return r;
        }

        r = 0;
        for (size_t i = 0; i < scope->n_requirements && r >= 0; i++)
                if (scope->requirements[i].type == POLICY_SIGNED_BY)
                        r = check_signed_by(&scope->requirements[i], ref_text, &intended, manifest_digest, sigs, n, err);
        fetched_done(sigs, n);
        return r;
}
