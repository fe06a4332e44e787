/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "basic/fs.h"
#include "basic/json-util.h"
#include "basic/relay.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "manifest/pod-manifest.h"
#include "pod/pod-log.h"
#include "pod/pod-journal.h"
#include "pod/stage1.h"
#include "pod/pod-userns.h"
#include "unit/app-unit.h"

/* A name the pod's journald gives its files: system.journal,
 * user-1000.journal, system@...-...-....journal, and "~" for one it found
 * corrupt. Nothing else is read, and no name reaches journalctl (which
 * prints names of files it dislikes). */
static bool journal_file_name_ok(const char *name) {
        size_t n = strlen(name);
        if (n == 0 || n > 200 || name[0] == '.' || strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                                "0123456789@._-~") != n)
                return false;
        return endswith(name, ".journal") || endswith(name, ".journal~");
}

/* The pod's journal files. The directory and everything in it are the
 * pod's (its journald writes them as the pod's root), and journalctl
 * follows symbolic links: given the directory as root, it would open
 * devices that act on an open (a watchdog), or the host's own journal. So:
 *   - only the pod's machine directory (POD/journal/MACHINE-ID, the UUID's
 *     digits), opened here without a symbolic link;
 *   - only regular files with the names journald gives (checked here, and
 *     the only names journalctl prints), at most POD_JOURNAL_FILES_MAX;
 *   - journalctl sees that directory only, at JOURNAL_ROOT_DIR of a root
 *     of its own (journal_private_root()), and runs as the pod's root: a
 *     file the pod swaps for a link after this check (it can, between the
 *     check and journalctl's open) leads to nothing of the host's. (A pod
 *     without a user namespace is the host's root, trusted code:
 *     sdpod-security(7).)
 * Files by their path, not each by an fd of its own: journalctl --follow
 * watches the directory of each path it is given. */
#define JOURNAL_ROOT_DIR "/journal"
static int journal_file_args(const Pod *p, int *ret_dirfd, char ***ret_args, Error **err) {
        char machine[UUID_STRING_MAX], rel[sizeof(POD_JOURNAL_DIR) + UUID_STRING_MAX + 1];
        size_t k = 0;
        for (const char *c = p->uuid; *c; c++)
                if (*c != '-')
                        machine[k++] = *c;
        machine[k] = 0;
        snprintf(rel, sizeof(rel), POD_JOURNAL_DIR "/%s", machine);
        _cleanup_close_ int dfd = open_beneath_no_symlinks(p->fd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
        if (dfd < 0)
                return dfd == -ENOENT ? error_set(err, -ENOENT, "pod %s has no journal: it wrote none", p->uuid)
                                      : error_sys(err, dfd, "pod %s: %s/", p->uuid, rel);
        int list_fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
        _cleanup_closedir_ DIR *d = list_fd >= 0 ? fdopendir(list_fd) : NULL;
        if (!d) {
                if (list_fd >= 0)
                        close(list_fd);
                return error_sys(err, -errno, "pod %s: %s/", p->uuid, rel);
        }
        _cleanup_strv_free_ char **args = NULL;
        size_t n = 0;
        struct dirent *de;
        while ((errno = 0, de = readdir(d))) {
                if (!journal_file_name_ok(de->d_name))
                        continue;
                struct stat st;
                if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
                        continue;
                if (++n > POD_JOURNAL_FILES_MAX)
                        return error_set(err, -E2BIG, "pod %s: more than %d journal files in %s/", p->uuid,
                                         POD_JOURNAL_FILES_MAX, rel);
                _cleanup_free_ char *a = NULL;
                if (asprintf(&a, "--file=" JOURNAL_ROOT_DIR "/%s", de->d_name) < 0 || strv_push(&args, a) < 0)
                        return error_sys(err, -ENOMEM, "pod %s", p->uuid);
        }
        if (errno > 0)
                return error_sys(err, -errno, "pod %s: %s/", p->uuid, rel);
        if (n == 0)
                /* journalctl without a file would show the host's journal */
                return error_set(err, -ENOENT, "pod %s has no journal: it wrote none", p->uuid);
        *ret_dirfd = TAKE_FD(dfd);
        *ret_args = TAKE_PTR(args);
        return 0;
}

/* A detached copy of the mount of path (and of those below it, when
 * recursive) with attrs (MOUNT_ATTR_*) set on each; an fd, or -errno. */
static int clone_tree(int dirfd, const char *path, bool recursive, uint64_t attrs) {
        int fd = open_tree(dirfd, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0));
        struct mount_attr attr = { .attr_set = attrs, .propagation = MS_PRIVATE };
        if (fd >= 0 && mount_setattr(fd, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &attr, sizeof(attr)) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd < 0 ? -errno : fd;
}

static int clone_mount(int dirfd, const char *path, bool recursive, uint64_t attrs, const char *target) {
        _cleanup_close_ int fd = clone_tree(dirfd, path, recursive, attrs);
        if (fd < 0)
                return fd;
        return move_mount(fd, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) < 0 ? -errno : 0;
}

/* journalctl's root: a mount namespace of its own whose root is an empty
 * tmpfs with the host's /usr (and /bin, /lib... as the host has them:
 * links into /usr, or copies of their mounts) read-only and nosuid, the
 * zone of /etc/localtime, and the pod's journal directory (dirfd) at
 * JOURNAL_ROOT_DIR, read-only, nosuid, nodev, noexec. Nothing else of the
 * host: a link the pod plants resolves in this root, where no host file
 * but the distribution's /usr is. */
static int journal_private_root(int dirfd) {
        static const char *const usr_links[] = { "bin", "sbin", "lib", "lib32", "lib64", "libx32" };
        const uint64_t ro = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
        const char *root = "/tmp"; /* any directory: covered in this namespace only */
        char path[PATH_MAX], target[PATH_MAX];
        /* Cloned here: the directory's mount is one of the namespace we
         * leave, which open_tree() can copy from no longer. */
        _cleanup_close_ int journal = clone_tree(dirfd, "", false, ro | MOUNT_ATTR_NOEXEC);
        if (journal < 0)
                return journal;
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
            mount("sdpod-journal", root, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=64k") < 0)
                return -errno;
        int r = 0;
        if (mkdir("/tmp/usr", 0755) < 0 || mkdir("/tmp" JOURNAL_ROOT_DIR, 0755) < 0 || mkdir("/tmp/etc", 0755) < 0 ||
            mkdir("/tmp/.old", 0700) < 0 || mkdir("/tmp/proc", 0555) < 0)
                return -errno;
        /* journalctl --follow watches /proc/self/fd/N, the directory it
         * opened: without a /proc it never sees a new entry. A procfs of
         * its own that shows no process but its own user's (the pod's
         * root, which journalctl becomes). */
        if (mount("proc", "/tmp/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=invisible,subset=pid") < 0)
                return -errno;
        if ((r = clone_mount(AT_FDCWD, "/usr", true, ro, "/tmp/usr")) < 0)
                return r;
        if (move_mount(journal, "", AT_FDCWD, "/tmp" JOURNAL_ROOT_DIR, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                return -errno;
        for (size_t i = 0; i < ELEMENTSOF(usr_links); i++) {
                struct stat st;
                snprintf(path, sizeof(path), "/%s", usr_links[i]);
                snprintf(target, sizeof(target), "%s/%s", root, usr_links[i]);
                if (lstat(path, &st) < 0)
                        continue;
                if (S_ISLNK(st.st_mode)) {
                        char link[PATH_MAX];
                        ssize_t n = readlink(path, link, sizeof(link) - 1);
                        if (n < 0)
                                return -errno;
                        link[n] = 0;
                        if (symlink(link, target) < 0)
                                return -errno;
                } else if (S_ISDIR(st.st_mode) &&
                           (mkdir(target, 0755) < 0 || (r = clone_mount(AT_FDCWD, path, true, ro, target)) < 0))
                        return r < 0 ? r : -errno;
        }
        /* The host's time zone, as a link into its /usr (a copy would do as
         * well; a zone that is a file of its own stays UTC). */
        ssize_t n = readlink("/etc/localtime", path, sizeof(path) - 1);
        if (n > 0) {
                path[n] = 0;
                (void) symlink(path, "/tmp/etc/localtime");
        }
        if (syscall(SYS_pivot_root, root, "/tmp/.old") < 0 || chdir("/") < 0 || umount2("/.old", MNT_DETACH) < 0 ||
            rmdir("/.old") < 0)
                return -errno;
        /* The root itself: nothing to write there either. */
        return mount(NULL, "/", NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0 ? -errno : 0;
}

/* Becomes the pod's root (uid and gid base), without capabilities or a
 * way back to them; /proc/self stays ours to read (dumpable). */
static int become(uid_t base) {
        if (setgroups(0, NULL) < 0 || setresgid(base, base, base) < 0 || setresuid(base, base, base) < 0 ||
            prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
                return -errno;
        return 0;
}

/* journalctl's command line and what it runs with. */
typedef struct JournalCmd {
        char **argv;            /* its strings in file_args, unit and the caller's args */
        char **file_args;
        char *unit;
        int dirfd;
        PodUserns userns;
} JournalCmd;

static void journal_cmd_done(JournalCmd *c) {
        free(c->argv);
        strv_free(c->file_args);
        free(c->unit);
        if (c->dirfd >= 0)
                close(c->dirfd);
}

static int journal_cmd_prepare(const Pod *p, const char *app, char **args, JournalCmd *c, Error **err) {
        if (faccessat(p->fd, POD_JOURNAL_DIR, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? error_set(err, -ENOENT, "pod %s has no journal: it has not run (it is %s)",
                                                   p->uuid, pod_state_to_string(p->state))
                                       : error_sys(err, -errno, "pod %s: %s/", p->uuid, POD_JOURNAL_DIR);
        _cleanup_pod_manifest_ PodManifest *m = NULL;
        if (pod_manifest_read_at(p->fd, "pod", "pod manifest", &m, err) < 0)
                return error_prefix(err, "pod %s", p->uuid);
        if (pod_userns_from_manifest(m, &c->userns, err) < 0)
                return error_prefix(err, "pod %s", p->uuid);
        if (app) {
                if (!pod_manifest_find_app(m, app))
                        return error_set(err, -ENOENT, "pod %s has no app \"%s\"", p->uuid, app);
                if (asprintf(&c->unit, "--unit=" APP_UNIT_FORMAT, app) < 0)
                        return error_sys(err, -ENOMEM, "pod %s", p->uuid);
        }
        int r = journal_file_args(p, &c->dirfd, &c->file_args, err);
        if (r < 0)
                return r;
        size_t n = strv_length(args), n_files = strv_length(c->file_args);
        if (!(c->argv = calloc(n + n_files + 4, sizeof(char *))))
                return error_sys(err, -ENOMEM, "pod %s", p->uuid);
        size_t k = 0;
        c->argv[k++] = "journalctl";
        for (size_t i = 0; i < n_files; i++)
                c->argv[k++] = c->file_args[i];
        if (c->unit)
                c->argv[k++] = c->unit;
        for (size_t i = 0; i < n; i++)
                c->argv[k++] = args[i];
        return 0;
}

/* Only returns on failure. */
static int journal_cmd_exec(const Pod *p, JournalCmd *c, Error **err) {
        int r = journal_private_root(c->dirfd);
        if (r < 0)
                return error_sys(err, r, "pod %s: cannot make a root of its own for journalctl", p->uuid);
        if (c->userns.enabled && (r = become(pod_userns_root(&c->userns))) < 0)
                return error_sys(err, r, "pod %s: cannot become its root (%u) to read its journal", p->uuid,
                                 (unsigned) pod_userns_root(&c->userns));
        /* After become(), which clears it: journalctl --follow ends with
         * the sdpod that reads it. */
        if (prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0) < 0)
                return error_sys(err, -errno, "pod %s: journalctl", p->uuid);
        fflush(NULL);
        execvp("journalctl", c->argv);
        return error_sys(err, -errno, "pod %s: cannot execute journalctl (apt-get install systemd)", p->uuid);
}

/* journalctl of the pod (its app's, with app) with args, prepared in c
 * and run in a child, its output on a pipe whose read end is *ret_fd; its
 * errors on ours, or nowhere when quiet (what journalctl says of the pod's
 * files is unchecked text). Returns its pid. */
static pid_t journal_cmd_start(const Pod *p, const char *app, char **args, bool quiet, JournalCmd *c, int *ret_fd,
                               Error **err) {
        int r = journal_cmd_prepare(p, app, args, c, err);
        if (r < 0)
                return r;
        int pipefd[2];
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return error_sys(err, -errno, "pod %s: pipe", p->uuid);
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) {
                r = -errno;
                close(pipefd[0]);
                close(pipefd[1]);
                return error_sys(err, r, "pod %s: cannot fork journalctl", p->uuid);
        }
        if (pid == 0) {
                int null = quiet ? open("/dev/null", O_WRONLY | O_CLOEXEC) : -1;
                if (dup2(pipefd[1], STDOUT_FILENO) < 0 || (quiet && (null < 0 || dup2(null, STDERR_FILENO) < 0)))
                        _exit(1);
                Error *e = NULL;
                journal_cmd_exec(p, c, &e);
                fprintf(stderr, "sdpod journal: %s\n", e ? e->msg : "journalctl failed");
                _exit(1);
        }
        close(pipefd[1]);
        *ret_fd = pipefd[0];
        return pid;
}

int pod_journal_exec(const PodStore *ps, const Pod *p, const char *app, char **args, Error **err) {
        _cleanup_(journal_cmd_done) JournalCmd c = { .dirfd = -1 };
        (void) ps;
        int r = journal_cmd_prepare(p, app, args, &c, err);
        return r < 0 ? r : journal_cmd_exec(p, &c, err);
}

/* The value of journalctl's -o/--output in args, or NULL. */
static const char *output_mode(char **args) {
        const char *mode = NULL;
        for (char **a = args; a && *a; a++) {
                if (streq(*a, "--"))
                        break;
                if ((streq(*a, "-o") || streq(*a, "--output")) && a[1])
                        mode = *++a;
                else if (startswith(*a, "--output="))
                        mode = *a + strlen("--output=");
                else if (startswith(*a, "-o") && (*a)[2])
                        mode = *a + 2;
        }
        return mode;
}

static bool has_arg(char **args, const char *a1, const char *a2) {
        for (char **a = args; a && *a && !streq(*a, "--"); a++)
                if (streq(*a, a1) || (a2 && streq(*a, a2)))
                        return true;
        return false;
}

/* The operator's pager, as journalctl picks it; NULL for none. */
static const char *pager_command(void) {
        const char *p = getenv("SYSTEMD_PAGER");
        if (!p)
                p = getenv("PAGER");
        if (!p)
                p = "less";
        return *p && !streq(p, "cat") ? p : NULL;
}

static pid_t pager_start(const char *command, int *ret_fd) {
        int pfd[2];
        if (pipe2(pfd, O_CLOEXEC) < 0)
                return -errno;
        pid_t pid = fork();
        if (pid < 0) {
                int r = -errno;
                close(pfd[0]);
                close(pfd[1]);
                return r;
        }
        if (pid == 0) {
                if (dup2(pfd[0], STDIN_FILENO) < 0)
                        _exit(127);
                /* As journalctl's own: quit at the end of a short text,
                 * keep the screen, leave colours alone. */
                (void) setenv("LESS", "FRSXMK", 0);
                execl("/bin/sh", "sh", "-c", command, NULL);
                _exit(127);
        }
        close(pfd[0]);
        *ret_fd = pfd[1];
        return pid;
}

/* A fly or kvm pod's journal is its console log (pod-log.h): of
 * journalctl's options, only --lines=N / -n N mean something to it. */
static unsigned log_lines_of(char **args) {
        for (char **a = args; a && *a && !streq(*a, "--"); a++) {
                const char *v = startswith(*a, "--lines=") ? *a + strlen("--lines=")
                              : (streq(*a, "-n") || streq(*a, "--lines")) && a[1] ? a[1]
                              : startswith(*a, "-n") ? *a + 2 : NULL;
                if (v)
                        return (unsigned) strtoul(v, NULL, 10);
        }
        return 0;
}

static bool pod_has_log(const Pod *p) {
        char flavor[32];
        return stage1_flavor_has_log(stage1_flavor_of(p->fd, flavor));
}

/* pod_journal_show(), and with watcher, a process that it starts once
 * journalctl runs, and ends (SIGTERM) and reaps when the copy is done. */
static int journal_show(const PodStore *ps, const Pod *p, const char *app, char **args, bool raw,
                        pid_t (*watcher)(void *userdata, pid_t journalctl), void *userdata, Error **err) {
        _cleanup_(journal_cmd_done) JournalCmd c = { .dirfd = -1 };
        (void) ps;
        if (pod_has_log(p))
                return pod_log_show(p->fd, p->uuid, log_lines_of(args), raw, err);
        /* Machine formats stay as they are: JSON escapes control
         * characters itself, export is binary for another program. */
        const char *mode = output_mode(args);
        if (mode && (startswith(mode, "json") || streq(mode, "export")))
                raw = true;
        _cleanup_close_ int in = -1;
        pid_t pid = journal_cmd_start(p, app, args, false, &c, &in, err);
        if (pid < 0)
                return pid;
        pid_t watching = watcher ? watcher(userdata, pid) : 0;
        /* journalctl writes to a pipe (no pager, no colours of its own);
         * the pager, when there is one, is ours, in the host's namespace,
         * and shows what the filter let through. */
        int out = STDOUT_FILENO, pager_fd = -1;
        pid_t pager = 0;
        const char *pc = pager_command();
        if (pc && isatty(STDOUT_FILENO) && !has_arg(args, "--no-pager", NULL) && !has_arg(args, "--follow", "-f") &&
            (pager = pager_start(pc, &pager_fd)) > 0) {
                out = pager_fd;
                (void) signal(SIGINT, SIG_IGN); /* Ctrl-C ends journalctl, and the pager's K */
        }
        struct sigaction ign = { .sa_handler = SIG_IGN }, old;
        sigaction(SIGPIPE, &ign, &old);
        (void) printable_copy(in, out, raw); /* a reader gone (a pager quit) ends the copy */
        sigaction(SIGPIPE, &old, NULL);
        if (watching > 0) {
                (void) kill(watching, SIGKILL);
                while (waitpid(watching, NULL, 0) < 0 && errno == EINTR)
                        ;
        }
        close(TAKE_FD(in)); /* journalctl gets EPIPE if it had more */
        if (pager_fd >= 0)
                close(pager_fd);
        int st = 0;
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        return error_sys(err, -errno, "pod %s: journalctl", p->uuid);
        if (pager > 0)
                while (waitpid(pager, NULL, 0) < 0 && errno == EINTR)
                        ;
        /* Ended by the watcher: the pod's end is the follow's. */
        if (watching > 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM)
                return 0;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int pod_journal_show(const PodStore *ps, const Pod *p, const char *app, char **args, bool raw, Error **err) {
        return journal_show(ps, p, app, args, raw, NULL, NULL, err);
}

/* Ends journalctl (pid) once the pod has exited: a process of its own,
 * which the reader ends when journalctl ended first (Ctrl-C). */
static pid_t exit_watcher_start(void *userdata, pid_t journalctl) {
        struct { PodStore *ps; Pod *p; } *w = userdata;
        pid_t pid = fork();
        if (pid != 0)
                return pid;
        (void) prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
        uint64_t started = now_usec();
        Error *e = NULL;
        if (pod_wait(w->ps, w->p, 0, &e) < 0)
                error_free(e); /* gone, or unreadable: nothing left to follow either */
        /* The pod's last entries, and journalctl time to start on a busy
         * machine before it is ended. */
        uint64_t end = now_usec() + POD_JOURNAL_FOLLOW_GRACE_USEC;
        if (end < started + POD_JOURNAL_FOLLOW_MIN_USEC)
                end = started + POD_JOURNAL_FOLLOW_MIN_USEC;
        uint64_t now = now_usec();
        if (end > now)
                usleep((useconds_t) (end - now));
        (void) kill(journalctl, SIGTERM);
        _exit(0);
}

int pod_journal_follow(PodStore *ps, Pod *p, const char *app, char **args, bool raw, bool until_exit, Error **err) {
        struct { PodStore *ps; Pod *p; } w = { ps, p };
        /* A pod that has just started has no journal yet: a follow waits
         * for it a while, as podman's logs -f of a new container works. */
        for (unsigned i = 0; !pod_has_log(p) && has_arg(args, "--follow", "-f") && p->state == POD_STATE_RUNNING &&
                             i < POD_JOURNAL_FOLLOW_WAIT_USEC / (100 * 1000); i++) {
                int dirfd = -1;
                char **files = NULL;
                int r = journal_file_args(p, &dirfd, &files, NULL);
                if (dirfd >= 0)
                        close(dirfd);
                strv_free(files);
                if (r != -ENOENT)
                        break;
                usleep(100 * 1000);
                if (pod_refresh(ps, p, NULL) < 0)
                        break;
        }
        /* A pod that is not running (any more) has nothing to follow: its
         * journal is shown as it is, and that is the end. */
        Error *ignored = NULL;
        if (until_exit && (pod_refresh(ps, p, &ignored) < 0 || p->state != POD_STATE_RUNNING)) {
                error_free(ignored);
                size_t n = strv_length(args), k = 0;
                _cleanup_free_ char **rest = calloc(n + 1, sizeof(char *));
                if (!rest)
                        return error_sys(err, -ENOMEM, "pod %s", p->uuid);
                for (size_t i = 0; i < n; i++)
                        if (!streq(args[i], "--follow") && !streq(args[i], "-f"))
                                rest[k++] = args[i];
                return journal_show(ps, p, app, rest, raw, NULL, NULL, err);
        }
        return journal_show(ps, p, app, args, raw, until_exit ? exit_watcher_start : NULL, &w, err);
}

int pod_journal_cursor_of_last(const PodStore *ps, const Pod *p, const char *app, char **args, uint64_t lines,
                               char **ret, Error **err) {
        char n[32];
        snprintf(n, sizeof(n), "--lines=%llu", (unsigned long long) lines);
        size_t k = strv_length(args);
        _cleanup_free_ char **a = calloc(k + 6, sizeof(char *));
        if (!a)
                return error_sys(err, -ENOMEM, "pod %s", p->uuid);
        memcpy(a, args, k * sizeof(char *));
        /* Newest first: the last line read is the oldest of the N; the
         * output mode given last is journalctl's. */
        a[k++] = "--reverse";
        a[k++] = n;
        a[k++] = "--output=json";
        a[k++] = "--output-fields=__CURSOR";
        a[k++] = "--no-pager";
        _cleanup_(journal_cmd_done) JournalCmd c = { .dirfd = -1 };
        _cleanup_close_ int in = -1;
        (void) ps;
        pid_t pid = journal_cmd_start(p, app, a, true, &c, &in, err);
        if (pid < 0)
                return pid;
        /* Only the last line is kept: the pod decides how many there are,
         * and a line longer than the buffer (the pod's fields are not in
         * it, only the cursor and times) is none of journalctl's. */
        char line[4096], buf[4096];
        size_t len = 0;
        bool have = false, overlong = false, last_overlong = false;
        char last[sizeof(line)];
        ssize_t got;
        while ((got = read(in, buf, sizeof(buf))) != 0) {
                if (got < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                for (ssize_t i = 0; i < got; i++) {
                        if (buf[i] != '\n') {
                                if (len < sizeof(line) - 1)
                                        line[len++] = buf[i];
                                else
                                        overlong = true;
                                continue;
                        }
                        line[len] = 0;
                        memcpy(last, line, len + 1);
                        have = true;
                        last_overlong = overlong;
                        len = 0;
                        overlong = false;
                }
        }
        close(TAKE_FD(in));
        int st;
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        return error_sys(err, -errno, "pod %s: journalctl", p->uuid);
        *ret = NULL;
        if (!have)
                return 0;
        /* journalctl's JSON, whose fields the pod wrote: parsed strictly,
         * as everything (json-util.h). */
        _cleanup_json_ struct json_object *o = NULL;
        Error *ignored = NULL;
        if (!last_overlong && json_parse(last, strlen(last), "journalctl's last entry", &o, &ignored) < 0)
                error_free(ignored);
        const char *cursor = o ? json_object_get_string(json_object_object_get(o, "__CURSOR")) : NULL;
        if (!cursor || !*cursor || strlen(cursor) > 1024 || strcspn(cursor, " \t\n\r") != strlen(cursor))
                return error_set(err, -EBADMSG, "pod %s: journalctl gave no cursor for --lines", p->uuid);
        return (*ret = strdup(cursor)) ? 0 : error_sys(err, -ENOMEM, "pod %s", p->uuid);
}

/* Midnight (local time) of the day of t, days_back days before. */
static int local_midnight(uint64_t now_usec, int days_back, uint64_t *ret) {
        time_t t = (time_t) (now_usec / USEC_PER_SEC);
        struct tm tm;
        if (!localtime_r(&t, &tm))
                return -EINVAL;
        tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
        tm.tm_mday -= days_back;
        tm.tm_isdst = -1;
        time_t m = mktime(&tm);
        if (m < 0)
                return -EINVAL;
        *ret = (uint64_t) m * USEC_PER_SEC;
        return 0;
}

int journal_since_parse(const char *s, uint64_t now_usec, uint64_t *ret) {
        uint64_t v;
        if (streq(s, "now")) {
                *ret = now_usec;
                return 0;
        }
        if (streq(s, "today"))
                return local_midnight(now_usec, 0, ret);
        if (streq(s, "yesterday"))
                return local_midnight(now_usec, 1, ret);
        if (s[0] == '@') {
                /* Whole seconds: journalctl takes them as they are. */
                if (!s[1] || strlen(s + 1) > 12 || strspn(s + 1, "0123456789") != strlen(s + 1))
                        return -EINVAL;
                *ret = strtoull(s + 1, NULL, 10) * USEC_PER_SEC;
                return 0;
        }
        /* A duration before now: "-1h" or "1h ago". */
        const char *ago = strstr(s, " ago");
        if (s[0] == '-' || (ago && streq(ago, " ago"))) {
                _cleanup_free_ char *d = s[0] == '-' ? strdup(s + 1) : strndup(s, (size_t) (ago - s));
                if (!d)
                        return -ENOMEM;
                if (parse_duration(d, &v) < 0 || v > now_usec)
                        return -EINVAL;
                *ret = now_usec - v;
                return 0;
        }
        if (parse_timestamp(s, &v) >= 0) {
                *ret = v;
                return 0;
        }
        /* Local time, as journalctl and date(1) read it. */
        static const char *const formats[] = { "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d" };
        for (size_t i = 0; i < ELEMENTSOF(formats); i++) {
                struct tm tm = {};
                const char *end = strptime(s, formats[i], &tm);
                if (!end || *end || tm.tm_year < 70 || tm.tm_year > 8099)
                        continue;
                tm.tm_isdst = -1;
                time_t t = mktime(&tm);
                if (t < 0)
                        return -EINVAL;
                *ret = (uint64_t) t * USEC_PER_SEC;
                return 0;
        }
        return -EINVAL;
}

int journal_lines_parse(const char *s, uint64_t *ret) {
        if (streq(s, "all")) {
                *ret = UINT64_MAX;
                return 0;
        }
        /* journalctl takes an int: at most 9 digits keeps it one. */
        if (!*s || strlen(s) > 9 || strspn(s, "0123456789") != strlen(s))
                return -EINVAL;
        *ret = strtoull(s, NULL, 10);
        return 0;
}

int pod_journal_tail(const PodStore *ps, const Pod *p, const char *app, unsigned lines, char **ret, Error **err) {
        if (pod_has_log(p)) {
                int r = pod_log_read(p->fd, p->uuid, lines, ret, err);
                if (r >= 0)
                        text_make_printable(*ret, strlen(*ret), true);
                return r;
        }
        char n[32];
        snprintf(n, sizeof(n), "--lines=%u", lines);
        char *args[] = { n, "--output=cat", "--no-pager", "--quiet", NULL };
        _cleanup_(journal_cmd_done) JournalCmd c = { .dirfd = -1 };
        _cleanup_close_ int in = -1;
        (void) ps;
        pid_t pid = journal_cmd_start(p, app, args, true, &c, &in, err);
        if (pid < 0)
                return pid;
        /* What the pod logged goes to a user's terminal: bounded, and made
         * printable (text_make_printable) once it is all read. */
        size_t max = (size_t) lines * 1024, size = 0;
        _cleanup_free_ char *text = malloc(max + 1);
        ssize_t k = 0;
        while (text && size < max && (k = read(in, text + size, max - size)) != 0) {
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                size += (size_t) k;
        }
        if (text)
                text_make_printable(text, size, true);
        close(TAKE_FD(in)); /* journalctl gets EPIPE if it had more */
        int st;
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        return error_sys(err, -errno, "pod %s: journalctl", p->uuid);
        if (!text)
                return error_sys(err, -ENOMEM, "pod %s: journal", p->uuid);
        text[size] = 0;
        *ret = TAKE_PTR(text);
        return 0;
}
