/* SPDX-License-Identifier: Apache-2.0 */
#include <curl/curl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <strings.h>

#include "basic/digest.h"
#include "basic/fs.h"
#include "basic/json-util.h"
#include "basic/sha256.h"
#include "config.h"
#include "image/auth-challenge.h"
#include "image/registry-auth.h"
#include "image/registry-config.h"
#include "image/registry.h"

#define REDIRECTS_MAX 8
#define STALL_TIMEOUT_S 30L
#define DOCUMENT_TIMEOUT_STALLS 2L  /* a whole document: twice the stall timeout */
#define ERROR_BODY_MAX (64U << 10)  /* what is kept of an error answer, for its message */
#define TOKEN_ANSWER_MAX (1U << 20)
#define TOKEN_MAX (64U << 10)
#define HEADER_VALUE_MAX 8192       /* a longer header we keep is a bad answer */
#define MEDIA_TYPE_MAX 255
#define HANDLE_POOL_MAX 8
#define RECEIVE_BUFFER_SIZE (256L << 10)
#define AUTH_ATTEMPTS_MAX 3
#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif

static const char accept_manifests[] =
        "Accept: " MEDIA_TYPE_OCI_MANIFEST ", " MEDIA_TYPE_OCI_INDEX ", " MEDIA_TYPE_DOCKER_MANIFEST ", "
        MEDIA_TYPE_DOCKER_MANIFEST_LIST;

struct Registry {
        char *registry;    /* host[:port], as references name it */
        char *endpoint;    /* host[:port] of its API: the same but for Docker Hub */
        char *repository;  /* NULL: only ping */
        char *name;        /* "registry/repository" (or the registry): what messages name */
        bool tls_verify;
        bool allow_http;   /* insecure: plain http tried when the TLS handshake fails */
        RegistryCerts certs;
        char *ca_blob;     /* the system's CAs and the certs.d ones, PEM; NULL: curl's default */
        size_t ca_blob_size;
        char *username, *password;
        bool explicit_credentials; /* given by the caller, not from an auth file */
        int (*interrupted)(void);
        long stall_timeout;

        pthread_mutex_t lock; /* guards what follows */
        const char *scheme;   /* "https" or "http"; NULL until an answer decided it */
        char *token;          /* the Bearer token, or NULL */
        bool use_basic;       /* send the Basic credentials to the registry */
        unsigned auth_generation; /* bumped by every change of token/use_basic */
        CURL *pool[HANDLE_POOL_MAX];
        size_t n_pool;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_result;

static void curl_init_once(void) {
        curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ---- what one transfer sees ---- */

/* Two kinds of bad answers: -EBADMSG for content (a document whose digest
 * or size is wrong, an oversized manifest: exit 5, as other bad content);
 * -EPROTO for a registry that misbehaves at the HTTP level (redirect loops
 * or redirects to other schemes, malformed headers, a wrong Content-Range,
 * a token answer that is junk: exit 1, as an unreachable registry), which
 * says nothing about the image. */

typedef enum BodyMode {
        BODY_DISCARD,
        BODY_BUFFER, /* kept up to max; more is an error */
        BODY_SINK,
} BodyMode;

typedef struct Transfer {
        Registry *r;
        /* what the caller wants done with a 2xx body */
        BodyMode mode;
        size_t max;
        RegistrySink sink;
        void *userdata;
        uint64_t offset; /* Range asked for */

        /* the current answer */
        long status;
        char *www_authenticate, *content_type, *docker_digest, *content_range;
        bool header_too_long;
        char *body;
        size_t size;
        bool body_too_big;
        bool started;        /* the first byte of a 2xx body arrived */
        uint64_t skip;       /* bytes of a 200 answer to a Range request still to drop */
        int64_t data_start;  /* where the sink's data starts */
        int sink_error;
        bool interrupted;
        bool bad_range;
} Transfer;

static void transfer_reset_answer(Transfer *t) {
        free(t->www_authenticate);
        free(t->content_type);
        free(t->docker_digest);
        free(t->content_range);
        free(t->body);
        t->www_authenticate = t->content_type = t->docker_digest = t->content_range = t->body = NULL;
        t->size = 0;
        t->status = 0;
        t->header_too_long = t->body_too_big = t->started = t->bad_range = false;
        t->data_start = 0;
        t->skip = 0;
}

static void transfer_done(Transfer *t) {
        transfer_reset_answer(t);
}

static bool status_ok(long status) {
        return status >= 200 && status < 300;
}

/* Keeps the value of a header we use: surrounding blanks trimmed, control
 * characters refused (they end up in messages). */
static void keep_header(Transfer *t, char **slot, const char *v, size_t n) {
        while (n > 0 && (*v == ' ' || *v == '\t'))
                v++, n--;
        while (n > 0 && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' ' || v[n - 1] == '\t'))
                n--;
        if (n > HEADER_VALUE_MAX) {
                t->header_too_long = true;
                return;
        }
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) v[i] < 0x20 && v[i] != '\t') {
                        t->header_too_long = true;
                        return;
                }
        if (*slot) /* the first of repeated headers (several challenges are also allowed in one) */
                return;
        *slot = strndup(v, n);
}

static size_t header_cb(char *data, size_t size, size_t nmemb, void *userdata) {
        Transfer *t = userdata;
        size_t n = size * nmemb;
        if (n >= 5 && memcmp(data, "HTTP/", 5) == 0) {
                /* a new answer (after a 100 Continue too): "HTTP/1.1 200 OK", "HTTP/2 200" */
                transfer_reset_answer(t);
                const char *sp = memchr(data, ' ', n);
                long status = 0;
                for (const char *p = sp ? sp + 1 : data + n; p < data + n && *p >= '0' && *p <= '9' && status < 1000; p++)
                        status = status * 10 + (*p - '0');
                t->status = status;
                return n;
        }
        const char *colon = memchr(data, ':', n);
        if (!colon)
                return n;
        size_t name_len = (size_t) (colon - data);
        const char *v = colon + 1;
        size_t vn = n - name_len - 1;
#define IS(h) (name_len == strlen(h) && strncasecmp(data, h, name_len) == 0)
        if (IS("WWW-Authenticate"))
                keep_header(t, &t->www_authenticate, v, vn);
        else if (IS("Content-Type"))
                keep_header(t, &t->content_type, v, vn);
        else if (IS("Docker-Content-Digest"))
                keep_header(t, &t->docker_digest, v, vn);
        else if (IS("Content-Range"))
                keep_header(t, &t->content_range, v, vn);
#undef IS
        return n;
}

/* "bytes START-END/TOTAL": START, or -1. */
static int64_t content_range_start(const char *s) {
        const char *p = s ? startswith(s, "bytes ") : NULL;
        if (!p || *p < '0' || *p > '9')
                return -1;
        uint64_t v = 0;
        for (; *p >= '0' && *p <= '9'; p++) {
                if (v > (UINT64_C(1) << 62) / 10)
                        return -1;
                v = v * 10 + (uint64_t) (*p - '0');
        }
        return *p == '-' ? (int64_t) v : -1;
}

static bool buffer_append(char **buf, size_t *size, const char *data, size_t n) {
        char *nb = realloc(*buf, *size + n + 1);
        if (!nb)
                return false;
        memcpy(nb + *size, data, n);
        *size += n;
        nb[*size] = '\0';
        *buf = nb;
        return true;
}

static size_t write_body(Transfer *t, const char *data, size_t n);

static size_t write_cb(char *data, size_t size, size_t nmemb, void *userdata) {
        Transfer *t = userdata;
        size_t n = size * nmemb;
        if (!status_ok(t->status)) {
                /* an error answer or a redirect: kept (bounded) for the message */
                if (t->size < ERROR_BODY_MAX)
                        (void) buffer_append(&t->body, &t->size, data, MIN(n, ERROR_BODY_MAX - t->size));
                return n;
        }
        if (!t->started) {
                t->started = true;
                if (t->status == 206) {
                        int64_t start = content_range_start(t->content_range);
                        if (start < 0 || (uint64_t) start != t->offset) {
                                t->bad_range = true;
                                return 0;
                        }
                        t->data_start = start;
                } else {
                        /* Range ignored: the bytes the caller has are skipped,
                         * so that the sink still sees the blob from offset */
                        t->skip = t->offset;
                        t->data_start = (int64_t) t->offset;
                }
        }
        if (t->skip > 0) {
                size_t k = (size_t) MIN((uint64_t) n, t->skip);
                t->skip -= k;
                data += k;
                if (k == n)
                        return n;
                size_t rest = n - k;
                size_t done = write_body(t, data, rest);
                return done == rest ? n : 0;
        }
        return write_body(t, data, n);
}

static size_t write_body(Transfer *t, const char *data, size_t n) {
        switch (t->mode) {
        case BODY_DISCARD:
                return n;
        case BODY_BUFFER:
                if (t->size + n > t->max) {
                        t->body_too_big = true;
                        return 0;
                }
                if (!buffer_append(&t->body, &t->size, data, n)) {
                        t->sink_error = -ENOMEM;
                        return 0;
                }
                return n;
        case BODY_SINK: {
                int r = t->sink(data, n, t->userdata);
                if (r < 0) {
                        t->sink_error = r;
                        return 0;
                }
                return n;
        }
        }
        return 0;
}

static int xferinfo_cb(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
        Transfer *t = userdata;
        if (t->r->interrupted && t->r->interrupted()) {
                t->interrupted = true;
                return 1;
        }
        return 0;
}

/* ---- handles ---- */

static CURL *handle_get(Registry *r) {
        CURL *h = NULL;
        pthread_mutex_lock(&r->lock);
        if (r->n_pool > 0)
                h = r->pool[--r->n_pool];
        pthread_mutex_unlock(&r->lock);
        return h ?: curl_easy_init();
}

/* Back to the pool: its connections stay open for the next call. */
static void handle_put(Registry *r, CURL *h) {
        if (!h)
                return;
        curl_easy_reset(h);
        pthread_mutex_lock(&r->lock);
        if (r->n_pool < HANDLE_POOL_MAX) {
                r->pool[r->n_pool++] = h;
                h = NULL;
        }
        pthread_mutex_unlock(&r->lock);
        if (h)
                curl_easy_cleanup(h);
}

static void slist_freep(struct curl_slist **l) {
        curl_slist_free_all(*l);
}
#define _cleanup_slist_ _cleanup_(slist_freep)

static int slist_add(struct curl_slist **l, const char *header) {
        if (!header)
                return 0;
        struct curl_slist *n = curl_slist_append(*l, header);
        if (!n)
                return -ENOMEM;
        *l = n;
        return 0;
}

static void curl_url_cleanupp(CURLU **u) {
        curl_url_cleanup(*u);
}

static void curl_freep(char **p) {
        curl_free(*p);
}

/* The scheme, host and port of url ("https", "host", 443), for comparing
 * origins. */
static int url_origin(const char *url, char **ret_scheme, char **ret_host, long *ret_port) {
        _cleanup_(curl_url_cleanupp) CURLU *u = curl_url();
        _cleanup_(curl_freep) char *scheme = NULL, *host = NULL, *port = NULL;
        if (!u || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
            curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
            curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
            curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK)
                return -EINVAL;
        *ret_scheme = strdup(scheme);
        *ret_host = strdup(host);
        *ret_port = strtol(port, NULL, 10);
        if (!*ret_scheme || !*ret_host) {
                free(*ret_scheme);
                free(*ret_host);
                return -ENOMEM;
        }
        return 0;
}

/* Whether url is on the registry's own origin, the only one its
 * credentials go to. */
static bool url_is_registry(Registry *r, const char *scheme, const char *url) {
        _cleanup_free_ char *base = NULL, *s1 = NULL, *h1 = NULL, *s2 = NULL, *h2 = NULL;
        long p1, p2;
        if (asprintf(&base, "%s://%s/", scheme, r->endpoint) < 0 || url_origin(base, &s1, &h1, &p1) < 0 ||
            url_origin(url, &s2, &h2, &p2) < 0)
                return false;
        return strcasecmp(s1, s2) == 0 && strcasecmp(h1, h2) == 0 && p1 == p2;
}

static void set_tls(Registry *r, CURL *h) {
        if (!r->tls_verify) {
                curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
                curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
        } else if (r->ca_blob) {
                struct curl_blob blob = { .data = r->ca_blob, .len = r->ca_blob_size, .flags = CURL_BLOB_NOCOPY };
                curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
        }
        if (r->certs.client_cert) {
                curl_easy_setopt(h, CURLOPT_SSLCERT, r->certs.client_cert);
                curl_easy_setopt(h, CURLOPT_SSLKEY, r->certs.client_key);
        }
}

/* The options every request has. */
static void set_common(Registry *r, CURL *h, Transfer *t, const char *url, char *errbuf) {
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_USERAGENT, "sdpod/" SDPOD_VERSION);
        curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L); /* redirects are ours to check */
        /* a TLS handshake that stalls is a stall too */
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, r->stall_timeout);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, r->stall_timeout);
        /* The stall rule alone lets a registry drip a document (a manifest
         * of up to 4 MiB, a token, an error) a few bytes a second, for
         * days. Documents are small: each has a deadline of its own. Blobs
         * (the sink) have none: a big layer may take long on a slow link,
         * and its descriptor bounds its size. */
        if (t->mode != BODY_SINK)
                curl_easy_setopt(h, CURLOPT_TIMEOUT, r->stall_timeout * DOCUMENT_TIMEOUT_STALLS);
        curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, header_cb);
        curl_easy_setopt(h, CURLOPT_HEADERDATA, t);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, write_cb);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, t);
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, xferinfo_cb);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, t);
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
        /* larger reads: fewer calls into the sink for a layer of 100 MB */
        curl_easy_setopt(h, CURLOPT_BUFFERSIZE, RECEIVE_BUFFER_SIZE);
        /* registries compress nothing we fetch: blobs are compressed already */
        curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, NULL);
        set_tls(r, h);
}

/* The message and code of a failed curl_easy_perform(). */
static int curl_failure(Registry *r, Transfer *t, CURLcode c, const char *url, const char *errbuf, const char *what,
                        Error **err) {
        const char *reason = errbuf && *errbuf ? errbuf : curl_easy_strerror(c);
        if (t->interrupted || c == CURLE_ABORTED_BY_CALLBACK)
                return error_set(err, -ECANCELED, "%s: interrupted", what);
        if (c == CURLE_WRITE_ERROR) {
                if (t->sink_error == -ENOMEM)
                        return error_set(err, -ENOMEM, "out of memory");
                if (t->sink_error < 0)
                        return error_sys(err, t->sink_error, "%s", what);
                if (t->body_too_big)
                        return error_set(err, -EBADMSG, "%s: the answer of %s is larger than %zu bytes", what, r->registry,
                                         t->max);
                if (t->bad_range)
                        return error_set(err, -EPROTO, "%s: %s answered bytes other than those asked for (Content-Range)",
                                         what, r->registry);
        }
        switch (c) {
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
                return error_set(err, -EHOSTUNREACH, "%s: cannot reach %s: %s", what, url, reason);
        case CURLE_COULDNT_CONNECT:
                return error_set(err, -ECONNREFUSED, "%s: cannot reach %s: %s", what, url, reason);
        case CURLE_OPERATION_TIMEDOUT:
                if (t->mode != BODY_SINK)
                        return error_set(err, -ETIMEDOUT,
                                         "%s: %s: timed out (nothing for %ld s, no connection, or not all in %ld s): %s",
                                         what, url, r->stall_timeout, r->stall_timeout * DOCUMENT_TIMEOUT_STALLS, reason);
                return error_set(err, -ETIMEDOUT, "%s: %s: timed out (nothing for %ld s, or no connection): %s", what,
                                 url, r->stall_timeout, reason);
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CONNECT_ERROR:
        case CURLE_SSL_CERTPROBLEM:
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_SSL_CIPHER:
                return error_set(err, -EHOSTUNREACH,
                                 "%s: TLS with %s failed: %s (a CA of its own: --cert-dir or /etc/sdpod/certs.d/%s/; "
                                 "a test registry: --tls-verify=false)",
                                 what, url, reason, r->registry);
        case CURLE_RECV_ERROR:
        case CURLE_SEND_ERROR:
        case CURLE_GOT_NOTHING:
        case CURLE_PARTIAL_FILE:
        case CURLE_HTTP2:
        case CURLE_HTTP2_STREAM:
                return error_set(err, -ECONNRESET, "%s: the connection to %s broke: %s", what, url, reason);
        default:
                return error_set(err, -EIO, "%s: %s: %s", what, url, reason);
        }
}

/* Whether a failure to speak https may mean the server speaks plain http. */
static bool worth_trying_http(CURLcode c) {
        switch (c) {
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
        case CURLE_COULDNT_CONNECT:
        case CURLE_OPERATION_TIMEDOUT:
        case CURLE_ABORTED_BY_CALLBACK:
        case CURLE_WRITE_ERROR:
                return false;
        default:
                return true;
        }
}

typedef struct Request {
        const char *path;    /* below /v2/ of the registry ("" for the ping) */
        bool head;
        const char *accept;  /* a whole "Accept: ..." header, or NULL */
        uint64_t offset;
        const char *what;    /* what messages name */
} Request;

static const char *registry_scheme(Registry *r) {
        pthread_mutex_lock(&r->lock);
        const char *s = r->scheme;
        pthread_mutex_unlock(&r->lock);
        return s;
}

/* One request to the registry, following redirects, with the credentials
 * of the moment on the registry's origin only. Returns the HTTP status of
 * the last answer (t holds it), or a negative error. *ret_origin_answered:
 * whether that answer came from the registry itself. */
static int request_once(Registry *r, const Request *q, Transfer *t, bool *ret_origin_answered, Error **err) {
        const char *scheme = registry_scheme(r);
        bool probing = !scheme;
        if (probing)
                scheme = "https";

        _cleanup_free_ char *url = NULL;
        if (asprintf(&url, "%s://%s/v2/%s", scheme, r->endpoint, q->path) < 0)
                return error_set(err, -ENOMEM, "out of memory");

        CURL *h = handle_get(r);
        if (!h)
                return error_set(err, -ENOMEM, "%s: cannot make a curl handle", q->what);
        int ret = 0;
        for (unsigned hop = 0;; hop++) {
                char errbuf[CURL_ERROR_SIZE] = "";
                bool own = url_is_registry(r, scheme, url);
                _cleanup_slist_ struct curl_slist *headers = NULL;
                _cleanup_free_ char *auth = NULL, *range = NULL;
                bool basic = false;
                if (own) {
                        pthread_mutex_lock(&r->lock);
                        if (r->token && asprintf(&auth, "Authorization: Bearer %s", r->token) < 0)
                                auth = NULL;
                        basic = r->use_basic && !r->token;
                        pthread_mutex_unlock(&r->lock);
                }
                if (q->offset > 0 && asprintf(&range, "Range: bytes=%" PRIu64 "-", q->offset) < 0)
                        range = NULL;
                if (slist_add(&headers, q->accept) < 0 || slist_add(&headers, auth) < 0 ||
                    slist_add(&headers, range) < 0 || (q->offset > 0 && !range)) {
                        ret = error_set(err, -ENOMEM, "out of memory");
                        break;
                }
                if (auth)
                        explicit_bzero(auth, strlen(auth));

                curl_easy_reset(h);
                set_common(r, h, t, url, errbuf);
                curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
                curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
                if (q->head)
                        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
                if (basic) {
                        curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long) CURLAUTH_BASIC);
                        curl_easy_setopt(h, CURLOPT_USERNAME, r->username);
                        curl_easy_setopt(h, CURLOPT_PASSWORD, r->password);
                }
                transfer_reset_answer(t);
                t->offset = q->offset;
                CURLcode c = curl_easy_perform(h);
                if (c != CURLE_OK && probing && hop == 0 && r->allow_http && worth_trying_http(c)) {
                        /* an insecure registry that does not speak TLS */
                        probing = false;
                        scheme = "http";
                        free(url);
                        url = NULL;
                        if (asprintf(&url, "http://%s/v2/%s", r->endpoint, q->path) < 0) {
                                ret = error_set(err, -ENOMEM, "out of memory");
                                break;
                        }
                        hop--;
                        continue;
                }
                if (c != CURLE_OK) {
                        ret = curl_failure(r, t, c, url, errbuf, q->what, err);
                        break;
                }
                if (probing || hop == 0) {
                        /* an answer: this scheme it is, for every later call */
                        pthread_mutex_lock(&r->lock);
                        if (!r->scheme)
                                r->scheme = streq(scheme, "http") ? "http" : "https";
                        pthread_mutex_unlock(&r->lock);
                        probing = false;
                }
                if (t->header_too_long) {
                        ret = error_set(err, -EPROTO, "%s: %s answered a malformed or overlong header", q->what, url);
                        break;
                }
                long status = t->status;
                if (status >= 300 && status < 400 && status != 304) {
                        char *next = NULL;
                        if (curl_easy_getinfo(h, CURLINFO_REDIRECT_URL, &next) != CURLE_OK || !next) {
                                ret = error_set(err, -EPROTO, "%s: %s answered %ld without a Location", q->what, url,
                                                status);
                                break;
                        }
                        if (hop + 1 >= REDIRECTS_MAX) {
                                ret = error_set(err, -EPROTO, "%s: more than %d redirects", q->what, REDIRECTS_MAX);
                                break;
                        }
                        _cleanup_free_ char *ns = NULL, *nh = NULL;
                        long np;
                        if (url_origin(next, &ns, &nh, &np) < 0 ||
                            (strcasecmp(ns, "https") != 0 && strcasecmp(ns, "http") != 0)) {
                                char qu[VALUE_QUOTED_MAX];
                                ret = error_set(err, -EPROTO, "%s: %s redirects to %s, which is not an http(s) URL",
                                                q->what, url, value_quote(next, qu));
                                break;
                        }
                        if (strcasecmp(ns, "http") == 0 && startswith(url, "https:") && !r->allow_http) {
                                char qu[VALUE_QUOTED_MAX];
                                ret = error_set(err, -EPROTO, "%s: %s redirects from https to plain http (%s): refused",
                                                q->what, url, value_quote(next, qu));
                                break;
                        }
                        char *copy = strdup(next);
                        if (!copy) {
                                ret = error_set(err, -ENOMEM, "out of memory");
                                break;
                        }
                        free(url);
                        url = copy;
                        continue;
                }
                *ret_origin_answered = own;
                ret = (int) status;
                break;
        }
        handle_put(r, h);
        return ret;
}

/* The "errors" of a distribution API error answer, for a message:
 * ": CODE: message" of the first, quoted; "" when there is none. */
static void error_detail(const Transfer *t, char *buf, size_t size) {
        buf[0] = '\0';
        if (!t->body || t->size == 0 || t->size >= ERROR_BODY_MAX)
                return;
        _cleanup_json_ struct json_object *root = NULL;
        struct json_object *errors, *first, *code, *message;
        if (json_parse(t->body, t->size, "answer", &root, NULL) < 0 || !json_object_is_type(root, json_type_object) ||
            !json_object_object_get_ex(root, "errors", &errors) || !json_object_is_type(errors, json_type_array) ||
            json_object_array_length(errors) == 0 || !(first = json_object_array_get_idx(errors, 0)) ||
            !json_object_is_type(first, json_type_object))
                return;
        const char *code_s = NULL;
        char q2[VALUE_QUOTED_MAX] = "";
        if (json_object_object_get_ex(first, "code", &code) && json_object_is_type(code, json_type_string)) {
                /* a code is an upper-case word; anything else is not shown */
                code_s = json_object_get_string(code);
                if (!*code_s || strlen(code_s) > 64 || code_s[strspn(code_s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")])
                        code_s = NULL;
        }
        if (json_object_object_get_ex(first, "message", &message) && json_object_is_type(message, json_type_string))
                value_quote(json_object_get_string(message), q2);
        if (code_s || q2[0])
                snprintf(buf, size, " (%s%s%s)", strempty(code_s), code_s && q2[0] ? ": " : "", q2);
}

/* The message says what to do: credentials given on the command line are
 * the user's to check; none, or stored ones, are login's to fix. */
static int unauthorized(Registry *r, const char *what, const char *why, Error **err) {
        char q[VALUE_QUOTED_MAX];
        if (r->explicit_credentials)
                return error_set(err, -EACCES, "%s: unauthorized: %s (user %s)", what, why,
                                 value_quote(r->username, q));
        if (r->username)
                return error_set(err, -EACCES, "%s: unauthorized: %s (user %s, stored); run 'sdpod login %s'", what, why,
                                 value_quote(r->username, q), r->registry);
        return error_set(err, -EACCES, "%s: unauthorized: %s; run 'sdpod login %s'", what, why, r->registry);
}

/* A token from the realm of a Bearer challenge. Called with r->lock held. */
static int fetch_token(Registry *r, const AuthChallenge *c, const char *what, Error **err) {
        char q[VALUE_QUOTED_MAX];
        _cleanup_free_ char *rs = NULL, *rh = NULL;
        long rp;
        if (url_origin(c->realm, &rs, &rh, &rp) < 0 || (strcasecmp(rs, "https") != 0 && strcasecmp(rs, "http") != 0))
                return error_set(err, -EPROTO, "%s: token realm %s is not an http(s) URL", what,
                                 value_quote(c->realm, q));
        bool credentials = r->username && r->password;
        if (credentials && strcasecmp(rs, "http") == 0 && !r->allow_http)
                return error_set(err, -EACCES,
                                 "%s: the token realm %s is plain http: not sending credentials there (an insecure "
                                 "registry only)",
                                 what, value_quote(c->realm, q));

        /* a handle of its own: the pool's lock is r->lock, which the caller holds */
        CURL *h = curl_easy_init();
        if (!h)
                return error_set(err, -ENOMEM, "out of memory");
        _cleanup_(curl_url_cleanupp) CURLU *u = curl_url();
        _cleanup_(curl_freep) char *url = NULL;
        _cleanup_free_ char *scope = NULL, *service_q = NULL, *scope_q = NULL;
        const char *scope_v = c->scope;
        if (!scope_v && r->repository) {
                if (asprintf(&scope, "repository:%s:pull", r->repository) < 0)
                        scope = NULL;
                scope_v = scope;
        }
        int ret = 0;
        if (!u || curl_url_set(u, CURLUPART_URL, c->realm, 0) != CURLUE_OK)
                ret = error_set(err, -EPROTO, "%s: token realm %s is not a URL", what, value_quote(c->realm, q));
        else if ((c->service && (asprintf(&service_q, "service=%s", c->service) < 0 ||
                                 curl_url_set(u, CURLUPART_QUERY, service_q, CURLU_APPENDQUERY | CURLU_URLENCODE) != CURLUE_OK)) ||
                 (scope_v && (asprintf(&scope_q, "scope=%s", scope_v) < 0 ||
                              curl_url_set(u, CURLUPART_QUERY, scope_q, CURLU_APPENDQUERY | CURLU_URLENCODE) != CURLUE_OK)) ||
                 curl_url_get(u, CURLUPART_URL, &url, 0) != CURLUE_OK)
                ret = error_set(err, -ENOMEM, "out of memory");
        if (ret < 0) {
                curl_easy_cleanup(h);
                return ret;
        }

        Transfer t = { .r = r, .mode = BODY_BUFFER, .max = TOKEN_ANSWER_MAX };
        char errbuf[CURL_ERROR_SIZE] = "";
        set_common(r, h, &t, url, errbuf);
        /* no redirects: the credentials are for the realm alone */
        curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
        if (credentials) {
                curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long) CURLAUTH_BASIC);
                curl_easy_setopt(h, CURLOPT_USERNAME, r->username);
                curl_easy_setopt(h, CURLOPT_PASSWORD, r->password);
        }
        CURLcode cc = curl_easy_perform(h);
        curl_easy_cleanup(h);
        if (cc != CURLE_OK) {
                ret = curl_failure(r, &t, cc, url, errbuf, what, err);
                if (ret == -EBADMSG) { /* an oversized token answer */
                        ret = -EPROTO;
                        if (err && *err)
                                (*err)->code = ret;
                }
                error_prefix(err, "token server");
                transfer_done(&t);
                return ret;
        }
        long status = t.status;
        if (status == 401 || status == 403) {
                transfer_done(&t);
                return unauthorized(r, what,
                                    credentials ? "the token server refused the credentials"
                                                : "the token server wants credentials",
                                    err);
        }
        if (!status_ok(status)) {
                char detail[2 * VALUE_QUOTED_MAX + 8];
                error_detail(&t, detail, sizeof(detail));
                transfer_done(&t);
                return error_set(err, -EIO, "%s: the token server %s answered HTTP %ld%s", what, value_quote(c->realm, q),
                                 status, detail);
        }

        _cleanup_json_ struct json_object *root = NULL;
        struct json_object *v = NULL;
        ret = json_parse(t.body ?: "", t.size, "the token server's answer", &root, err);
        if (ret == -EBADMSG) { /* an auth server's junk is not the image's */
                ret = -EPROTO;
                if (err && *err)
                        (*err)->code = ret;
                error_prefix(err, "%s", what);
        }
        if (ret >= 0 && (!json_object_is_type(root, json_type_object) ||
                         !((json_object_object_get_ex(root, "token", &v) && json_object_is_type(v, json_type_string) &&
                            json_object_get_string_len(v) > 0) ||
                           (json_object_object_get_ex(root, "access_token", &v) &&
                            json_object_is_type(v, json_type_string) && json_object_get_string_len(v) > 0))))
                ret = error_set(err, -EPROTO, "%s: the token server's answer has no \"token\"", what);
        if (ret >= 0) {
                /* it goes into a header: printable ASCII without blanks only */
                const char *tok = json_object_get_string(v);
                size_t n = strlen(tok);
                bool ok = n <= TOKEN_MAX && n == (size_t) json_object_get_string_len(v);
                for (size_t i = 0; ok && i < n; i++)
                        ok = tok[i] > 0x20 && tok[i] < 0x7f;
                if (!ok)
                        ret = error_set(err, -EPROTO, "%s: the token server's token is not printable ASCII", what);
                else {
                        char *copy = strdup(tok);
                        if (!copy)
                                ret = error_set(err, -ENOMEM, "out of memory");
                        else {
                                if (r->token)
                                        explicit_bzero(r->token, strlen(r->token));
                                free(r->token);
                                r->token = copy;
                        }
                }
        }
        if (t.body)
                explicit_bzero(t.body, t.size);
        transfer_done(&t);
        return ret;
}

/* Answers a 401 of the registry whose authentication was at generation gen:
 * 0 when the next attempt has new credentials to show. */
static int authenticate(Registry *r, const Transfer *t, unsigned gen, const char *what, Error **err) {
        pthread_mutex_lock(&r->lock);
        int ret = 0;
        if (r->auth_generation != gen)
                goto out; /* another call authenticated meanwhile */
        if (!t->www_authenticate) {
                ret = unauthorized(r, what, "the registry answered 401 without a challenge", err);
                goto out;
        }
        AuthChallenge c = {};
        ret = auth_challenge_parse(t->www_authenticate, &c, err);
        if (ret == -EBADMSG) {
                ret = -EPROTO;
                if (err && *err)
                        (*err)->code = ret;
        }
        if (ret < 0) {
                error_prefix(err, "%s", what);
                goto out;
        }
        if (c.scheme == AUTH_SCHEME_BASIC) {
                if (!r->username)
                        ret = unauthorized(r, what, "the registry wants credentials", err);
                else if (r->use_basic)
                        ret = unauthorized(r, what, "the registry refused the credentials", err);
                else
                        r->use_basic = true;
        } else
                ret = fetch_token(r, &c, what, err);
        auth_challenge_done(&c);
        if (ret >= 0)
                r->auth_generation++;
out:
        pthread_mutex_unlock(&r->lock);
        return ret;
}

/* A request with authentication: a 401 is answered once by the challenge
 * it carries. Returns the final status (t holds the answer). */
static int request(Registry *r, const Request *q, Transfer *t, Error **err) {
        unsigned own_gen = UINT_MAX; /* the generation our own authentication made */
        for (unsigned attempt = 0;; attempt++) {
                pthread_mutex_lock(&r->lock);
                unsigned gen = r->auth_generation;
                pthread_mutex_unlock(&r->lock);
                bool origin = false;
                int status = request_once(r, q, t, &origin, err);
                if (status < 0)
                        return status;
                if (status != 401 || !origin)
                        return status;
                /* the credentials we just got are refused (or a race goes on) */
                if (gen == own_gen || attempt + 1 >= AUTH_ATTEMPTS_MAX)
                        return unauthorized(r, q->what,
                                            r->username ? "the registry refused the credentials"
                                                        : "the registry wants credentials",
                                            err);
                int k = authenticate(r, t, gen, q->what, err);
                if (k < 0)
                        return k;
                pthread_mutex_lock(&r->lock);
                own_gen = r->auth_generation;
                pthread_mutex_unlock(&r->lock);
        }
}

/* The message of an unexpected status. */
static int status_error(Registry *r, const Transfer *t, const char *what, const char *unknown, Error **err) {
        char detail[2 * VALUE_QUOTED_MAX + 8];
        error_detail(t, detail, sizeof(detail));
        if (t->status == 404)
                return error_set(err, -ENOENT, "%s: %s%s", what, unknown, detail);
        if (t->status == 401 || t->status == 403)
                return unauthorized(r, what, t->status == 403 ? "access denied" : "the registry refused", err);
        if (t->status == 429)
                return error_set(err, -EIO, "%s: %s answered HTTP 429 (too many requests)%s", what, r->registry, detail);
        return error_set(err, -EIO, "%s: %s answered HTTP %ld%s", what, r->registry, t->status, detail);
}

/* ---- open, free ---- */

/* The system's CA bundle followed by the certs.d CAs: curl takes one
 * blob, which replaces its default file. */
static int build_ca_blob(Registry *r, Error **err) {
        if (!r->tls_verify || !r->certs.ca_pem)
                return 0;
        const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
        _cleanup_free_ char *sys = NULL;
        size_t sys_size = 0;
        const char *bundle = v && v->cainfo ? v->cainfo : "/etc/ssl/certs/ca-certificates.crt";
        if (access(bundle, R_OK) >= 0) {
                int k = read_file(bundle, 16U << 20, &sys, &sys_size, err);
                if (k < 0)
                        return k;
        }
        r->ca_blob = malloc(sys_size + 1 + r->certs.ca_pem_size + 1);
        if (!r->ca_blob)
                return error_set(err, -ENOMEM, "out of memory");
        if (sys_size)
                memcpy(r->ca_blob, sys, sys_size);
        r->ca_blob[sys_size] = '\n';
        memcpy(r->ca_blob + sys_size + 1, r->certs.ca_pem, r->certs.ca_pem_size);
        r->ca_blob_size = sys_size + 1 + r->certs.ca_pem_size;
        r->ca_blob[r->ca_blob_size] = '\0';
        return 0;
}

int registry_open(const ImageReference *ref, const RegistryOptions *opts, Registry **ret, Error **err) {
        static const RegistryOptions no_options = { .tls_verify = -1 };
        if (!opts)
                opts = &no_options;
        pthread_once(&curl_once, curl_init_once);
        if (curl_init_result != CURLE_OK)
                return error_set(err, -EIO, "curl_global_init: %s", curl_easy_strerror(curl_init_result));
        char q[VALUE_QUOTED_MAX];
        if (!ref->registry || !image_registry_is_valid(ref->registry))
                return error_set(err, -EINVAL, "%s: invalid registry", value_quote(strempty(ref->registry), q));
        /* both go into URLs */
        if (ref->repository && !image_repository_is_valid(ref->repository))
                return error_set(err, -EINVAL, "%s: invalid repository", value_quote(ref->repository, q));

        Registry *r = calloc(1, sizeof(*r));
        if (!r)
                return error_set(err, -ENOMEM, "out of memory");
        pthread_mutex_init(&r->lock, NULL);
        r->interrupted = opts->interrupted;
        r->stall_timeout = STALL_TIMEOUT_S;
        const char *e = getenv("SDPOD_REGISTRY_STALL_TIMEOUT");
        if (e && *e) {
                char *end;
                long v = strtol(e, &end, 10);
                if (*end == '\0' && v > 0 && v <= 3600)
                        r->stall_timeout = v;
        }
        int k = 0;
        r->registry = strdup(ref->registry);
        /* Docker Hub is named docker.io; its API is served elsewhere */
        r->endpoint = strdup(streq(ref->registry, DOCKER_HUB) ? DOCKER_HUB_ENDPOINT : ref->registry);
        if (ref->repository) {
                r->repository = strdup(ref->repository);
                if (asprintf(&r->name, "%s/%s", ref->registry, ref->repository) < 0)
                        r->name = NULL;
        } else
                r->name = strdup(ref->registry);
        if (!r->registry || !r->endpoint || !r->name || (ref->repository && !r->repository))
                k = error_set(err, -ENOMEM, "out of memory");

        bool insecure = false;
        if (k >= 0 && opts->tls_verify < 0)
                k = registry_config_insecure(ref->registry, &insecure, err);
        else
                insecure = opts->tls_verify == 0;
        r->tls_verify = !insecure;
        r->allow_http = insecure;
        if (k >= 0)
                k = registry_certs_load(opts->cert_dir, ref->registry, &r->certs, err);
        if (k >= 0)
                k = build_ca_blob(r, err);

        if (k >= 0 && opts->username) {
                r->username = strdup(opts->username);
                r->password = strdup(strempty(opts->password));
                r->explicit_credentials = true;
                if (!r->username || !r->password)
                        k = error_set(err, -ENOMEM, "out of memory");
        } else if (k >= 0) {
                k = registry_auth_lookup(opts->auth_file, ref->registry, &r->username, &r->password, err);
                if (k >= 0)
                        k = 0;
        }
        if (k < 0) {
                registry_free(r);
                return k;
        }
        *ret = r;
        return 0;
}

void registry_free(Registry *r) {
        if (!r)
                return;
        for (size_t i = 0; i < r->n_pool; i++)
                curl_easy_cleanup(r->pool[i]);
        if (r->password)
                explicit_bzero(r->password, strlen(r->password));
        if (r->token)
                explicit_bzero(r->token, strlen(r->token));
        free(r->registry);
        free(r->endpoint);
        free(r->repository);
        free(r->name);
        registry_certs_done(&r->certs);
        free(r->ca_blob);
        free(r->username);
        free(r->password);
        free(r->token);
        pthread_mutex_destroy(&r->lock);
        free(r);
}

/* ---- the calls ---- */

int registry_ping(Registry *r, Error **err) {
        Transfer t = { .r = r, .mode = BODY_DISCARD };
        Request q = { .path = "", .what = r->registry };
        int status = request(r, &q, &t, err);
        if (status >= 0 && !status_ok(status))
                status = status == 404 ? error_set(err, -ENOENT, "%s: not a registry (GET /v2/ answered 404)", r->registry)
                                       : status_error(r, &t, r->registry, "", err);
        transfer_done(&t);
        return status < 0 ? status : 0;
}

static int media_type_of(const Transfer *t, const char *body, size_t size, char **ret) {
        _cleanup_free_ char *mt = NULL;
        if (t->content_type) {
                size_t n = strcspn(t->content_type, "; \t");
                mt = strndup(t->content_type, n);
        } else if (body) {
                _cleanup_json_ struct json_object *root = NULL;
                struct json_object *v;
                if (json_parse(body, size, "manifest", &root, NULL) >= 0 && json_object_is_type(root, json_type_object) &&
                    json_object_object_get_ex(root, "mediaType", &v) && json_object_is_type(v, json_type_string))
                        mt = strdup(json_object_get_string(v));
        }
        if (!mt || !*mt || strlen(mt) > MEDIA_TYPE_MAX)
                return -EBADMSG;
        for (const char *p = mt; *p; p++)
                if (*p <= 0x20 || *p >= 0x7f)
                        return -EBADMSG;
        *ret = TAKE_PTR(mt);
        return 0;
}

int registry_get_manifest(Registry *r, const char *reference, bool head, char **ret_body, size_t *ret_size,
                          char **ret_media_type, char ret_digest[DIGEST_STRING_SIZE], Error **err) {
        if (!r->repository)
                return error_set(err, -EINVAL, "%s: no repository", r->registry);
        bool by_digest = digest_is_valid(reference);
        char what[512];
        if (!by_digest && !image_tag_is_valid(reference)) {
                char q[VALUE_QUOTED_MAX];
                return error_set(err, -EINVAL, "%s: %s is neither a tag nor a sha256 digest", r->name,
                                 value_quote(reference, q));
        }
        snprintf(what, sizeof(what), "%s%s%s", r->name, by_digest ? "@" : ":", reference);

        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/manifests/%s", r->repository, reference) < 0)
                return error_set(err, -ENOMEM, "out of memory");
        Transfer t = { .r = r, .mode = BODY_BUFFER, .max = REGISTRY_MANIFEST_MAX };
        Request q = { .path = path, .head = head, .accept = accept_manifests, .what = what };
        int k = request(r, &q, &t, err);
        if (k >= 0 && !status_ok(k))
                k = status_error(r, &t, what, by_digest ? "manifest unknown" : "unknown repository or tag", err);
        if (k < 0) {
                transfer_done(&t);
                return k;
        }

        char digest[DIGEST_STRING_SIZE] = "";
        const char *header = t.docker_digest;
        bool header_usable = header && digest_is_valid(header);
        if (!head) {
                char hex[SHA256_HEX_SIZE];
                sha256_hex_of(t.body ?: "", t.size, hex);
                digest_from_hex(hex, digest);
                if (by_digest && !streq(digest, reference))
                        k = error_set(err, -EBADMSG, "%s: the registry's manifest has digest %s", what, digest);
                else if (header_usable && !streq(digest, header))
                        k = error_set(err, -EBADMSG, "%s: the manifest's digest %s is not the %s the registry announced",
                                      what, digest, header);
        } else if (by_digest)
                snprintf(digest, sizeof(digest), "%s", reference);
        else if (header_usable)
                snprintf(digest, sizeof(digest), "%s", header);
        else
                k = error_set(err, -EPROTO, "%s: the registry gave no (sha256) Docker-Content-Digest", what);
        if (head && by_digest && header_usable && !streq(header, reference))
                k = error_set(err, -EBADMSG, "%s: the registry announced digest %s", what, header);

        _cleanup_free_ char *mt = NULL;
        if (k >= 0 && media_type_of(&t, t.body, t.size, &mt) < 0)
                k = error_set(err, -EBADMSG, "%s: the manifest has no valid media type", what);
        if (k < 0) {
                transfer_done(&t);
                return k;
        }
        if (ret_media_type)
                *ret_media_type = TAKE_PTR(mt);
        memcpy(ret_digest, digest, DIGEST_STRING_SIZE);
        if (ret_size)
                *ret_size = t.size;
        if (ret_body) {
                *ret_body = t.body ? TAKE_PTR(t.body) : strdup("");
                if (!*ret_body)
                        k = error_set(err, -ENOMEM, "out of memory");
        }
        transfer_done(&t);
        return k;
}

int64_t registry_get_blob(Registry *r, const char *digest, uint64_t offset, RegistrySink sink, void *userdata,
                          Error **err) {
        if (!r->repository)
                return error_set(err, -EINVAL, "%s: no repository", r->registry);
        char what[512];
        snprintf(what, sizeof(what), "%s: blob %s", r->name, digest);
        if (!digest_is_valid(digest))
                return error_set(err, -EINVAL, "%s: invalid digest", what);
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/blobs/%s", r->repository, digest) < 0)
                return error_set(err, -ENOMEM, "out of memory");
        Transfer t = { .r = r, .mode = BODY_SINK, .sink = sink, .userdata = userdata };
        Request q = { .path = path, .offset = offset, .what = what };
        int k = request(r, &q, &t, err);
        if (k >= 0 && !status_ok(k))
                k = status_error(r, &t, what, "blob unknown", err);
        else if (k >= 0 && k != 200 && k != 206)
                k = error_set(err, -EPROTO, "%s: %s answered HTTP %d", what, r->registry, k);
        int64_t start = t.data_start;
        transfer_done(&t);
        return k < 0 ? k : start;
}

int registry_get_url(Registry *r, const char *url, size_t max, char **ret, size_t *ret_size, Error **err) {
        char q[VALUE_QUOTED_MAX];
        value_quote(url, q);
        bool file = startswith(url, "file:");
        if (!file && !startswith(url, "http:") && !startswith(url, "https:"))
                return error_set(err, -EINVAL, "%s: not an http, https or file URL", q);

        CURL *h = handle_get(r);
        if (!h)
                return error_set(err, -ENOMEM, "out of memory");
        _cleanup_free_ char *current = strdup(url);
        if (!current) {
                handle_put(r, h);
                return error_set(err, -ENOMEM, "out of memory");
        }
        Transfer t = { .r = r, .mode = BODY_BUFFER, .max = max };
        int k = 0;
        for (unsigned hop = 0;; hop++) {
                char errbuf[CURL_ERROR_SIZE] = "";
                curl_easy_reset(h);
                set_common(r, h, &t, current, errbuf);
                curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, file ? "file" : "http,https");
                transfer_reset_answer(&t);
                if (file)
                        t.status = 200; /* no status line: every byte is the body */
                CURLcode c = curl_easy_perform(h);
                if (file && (c == CURLE_FILE_COULDNT_READ_FILE || c == CURLE_REMOTE_FILE_NOT_FOUND)) {
                        k = -ENOENT;
                        break;
                }
                if (c != CURLE_OK) {
                        k = t.body_too_big ? error_set(err, -EFBIG, "%s: larger than %zu bytes", q, max)
                                           : curl_failure(r, &t, c, current, errbuf, q, err);
                        break;
                }
                if (file || status_ok(t.status))
                        break;
                if (t.status >= 300 && t.status < 400) {
                        char *next = NULL;
                        if (hop + 1 >= REDIRECTS_MAX || curl_easy_getinfo(h, CURLINFO_REDIRECT_URL, &next) != CURLE_OK ||
                            !next || (!startswith(next, "http:") && !startswith(next, "https:")) ||
                            (startswith(current, "https:") && startswith(next, "http:") && !r->allow_http)) {
                                k = error_set(err, -EPROTO, "%s: a redirect that is refused (too many, or not to http(s))", q);
                                break;
                        }
                        char *copy = strdup(next);
                        if (!copy) {
                                k = error_set(err, -ENOMEM, "out of memory");
                                break;
                        }
                        free(current);
                        current = copy;
                        continue;
                }
                k = t.status == 404 ? -ENOENT : error_set(err, -EIO, "%s: HTTP %ld", q, t.status);
                break;
        }
        handle_put(r, h);
        if (k == -ENOENT)
                k = error_set(err, -ENOENT, "%s: not found", q);
        if (k >= 0) {
                *ret = t.body ? TAKE_PTR(t.body) : strdup("");
                if (!*ret)
                        k = error_set(err, -ENOMEM, "out of memory");
                else if (ret_size)
                        *ret_size = t.size;
        }
        transfer_done(&t);
        return k;
}
