/* SPDX-License-Identifier: Apache-2.0 */
/* journal_sync(): the pod's end waits for its journald to have read the
 * apps' last lines, and never longer than its deadline, whatever journald
 * does. A forked stand-in answers on a socket in a temporary directory as
 * journald would, or does not. */
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/time-util.h"
#include "bus/journal-sync.h"
#include "tests.h"

static char dir[] = "/tmp/test-journal-sync.XXXXXX", path[128];
static pid_t server;

static void cleanup(void) {
        if (server > 0)
                kill(server, SIGKILL);
        unlink(path);
        rmdir(dir);
}

typedef enum Answer { ANSWER_OK, ANSWER_ERROR, ANSWER_NONE, ANSWER_CLOSE, ANSWER_ENDLESS } Answer;

/* A stand-in journald, its socket made after delay_ms, that reads the
 * request (up to its NUL), checks it, and answers as told. */
static void serve(Answer answer, unsigned delay_ms) {
        unlink(path);
        server = fork();
        ASSERT(server >= 0);
        if (server > 0)
                return;
        usleep(delay_ms * 1000);
        int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        strcpy(sa.sun_path, path);
        if (l < 0 || bind(l, (struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(l, 4) < 0)
                _exit(1);
        int c = accept(l, NULL, NULL);
        char req[512] = "";
        size_t n = 0;
        while (c >= 0 && n < sizeof(req) - 1) {
                ssize_t r = read(c, req + n, sizeof(req) - 1 - n);
                if (r <= 0)
                        _exit(2);
                n += (size_t) r;
                if (memchr(req, 0, n))
                        break;
        }
        if (!strstr(req, "\"method\":\"io.systemd.Journal.Synchronize\""))
                _exit(3);
        static const char ok[] = "{\"parameters\":{}}";
        static const char error[] = "{\"error\":\"org.varlink.service.MethodNotFound\",\"parameters\":{}}";
        char junk[1024];
        memset(junk, 'x', sizeof(junk));
        switch (answer) {
        case ANSWER_OK:
                (void) write(c, ok, sizeof(ok));
                break;
        case ANSWER_ERROR:
                (void) write(c, error, sizeof(error));
                break;
        case ANSWER_NONE:
                pause();
                break;
        case ANSWER_CLOSE:
                close(c);
                break;
        case ANSWER_ENDLESS:
                /* No NUL ever: the client stops at its bound. */
                while (write(c, junk, sizeof(junk)) > 0)
                        ;
                break;
        }
        /* Served: kept open until the client is done. */
        pause();
        _exit(0);
}

static void end(void) {
        kill(server, SIGKILL);
        ASSERT(waitpid(server, NULL, 0) == server);
        server = 0;
}

/* journal_sync() with a 300 ms deadline; its result, its time in ms. */
static int sync_timed(unsigned *ms, Error **err) {
        uint64_t t = monotonic_usec();
        int r = journal_sync(path, 300 * 1000, err);
        *ms = (unsigned) ((monotonic_usec() - t) / 1000);
        return r;
}

int main(void) {
        ASSERT(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/io.systemd.journal", dir);
        test_cleanup = cleanup;
        Error *err = NULL;
        unsigned ms;

        /* Answered: done at once. */
        serve(ANSWER_OK, 0);
        ASSERT_EQ_INT(sync_timed(&ms, &err), 0);
        ASSERT(ms < 300);
        end();

        /* An error answer is an error, with journald's words. */
        serve(ANSWER_ERROR, 0);
        ASSERT_EQ_INT(sync_timed(&ms, &err), -EIO);
        ASSERT_CONTAINS(err->msg, "MethodNotFound");
        error_free(err), err = NULL;
        end();

        /* No answer (a journald stuck): the deadline, not more. */
        serve(ANSWER_NONE, 0);
        ASSERT_EQ_INT(sync_timed(&ms, &err), -ETIMEDOUT);
        ASSERT(ms >= 290 && ms < 2000);
        ASSERT_CONTAINS(err->msg, "did not synchronize");
        error_free(err), err = NULL;
        end();

        /* Closed without answering. */
        serve(ANSWER_CLOSE, 0);
        ASSERT_EQ_INT(sync_timed(&ms, &err), -ECONNRESET);
        error_free(err), err = NULL;
        end();

        /* An answer without end: bounded. */
        serve(ANSWER_ENDLESS, 0);
        ASSERT_EQ_INT(sync_timed(&ms, &err), -EBADMSG);
        error_free(err), err = NULL;
        end();

        /* No journald at all (not started yet, or gone): tried until the
         * deadline, then given up. */
        unlink(path);
        ASSERT_EQ_INT(sync_timed(&ms, &err), -ETIMEDOUT);
        ASSERT(ms >= 290 && ms < 2000);
        ASSERT_CONTAINS(err->msg, path);
        error_free(err), err = NULL;

        /* A journald that comes up within the deadline is waited for:
         * its socket appears 100 ms late. */
        serve(ANSWER_OK, 100);
        ASSERT_EQ_INT(sync_timed(&ms, &err), 0);
        ASSERT(ms >= 90);
        end();

        cleanup();
        return 0;
}
