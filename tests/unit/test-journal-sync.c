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

#include "basic/macro.h"
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
 * requests (each up to its NUL), checks them, and answers as told: both
 * (ANSWER_OK), or the first so. */
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
        static const char ok[] = "{\"parameters\":{}}";
        static const char error[] = "{\"error\":\"org.varlink.service.MethodNotFound\",\"parameters\":{}}";
        static const char *const methods[] = { "\"method\":\"io.systemd.Journal.Synchronize\"",
                                               "\"method\":\"io.systemd.Journal.FlushToVar\"" };
        char junk[1024];
        memset(junk, 'x', sizeof(junk));
        /* Synchronize, then FlushToVar, each read up to its NUL. */
        for (size_t m = 0; m < ELEMENTSOF(methods); m++) {
                char req[512] = "";
                size_t n = 0;
                while (c >= 0 && n < sizeof(req) - 1) {
                        ssize_t r = read(c, req + n, 1);
                        if (r <= 0)
                                _exit(2);
                        if (req[n++] == 0)
                                break;
                }
                if (!strstr(req, methods[m]))
                        _exit(3);
                switch (answer) {
                case ANSWER_OK:
                        (void) write(c, ok, sizeof(ok));
                        continue;
                case ANSWER_ERROR:
                        (void) write(c, error, sizeof(error));
                        break;
                case ANSWER_NONE:
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
        ASSERT_CONTAINS(err->msg, "did not answer Synchronize");
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
