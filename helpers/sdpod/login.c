/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <termios.h>

#include "cli/cli.h"
#include "cli/progress.h"
#include "image/reference.h"
#include "image/registry-auth.h"
#include "image/registry.h"
#include "sdpod.h"

#define PASSWORD_MAX 4096

static const char login_usage[] =
        "Usage: sdpod login [--username=USER] [--password-stdin] [--authfile=FILE]\n"
        "                   [--tls-verify=BOOL] [--cert-dir=DIR] REGISTRY\n"
        "\n"
        "Checks credentials with the registry (HOST or HOST:PORT), then stores them\n"
        "for pulls from it; prints the file they went to. The user name and the\n"
        "password are asked for on the terminal (the password without echo) unless\n"
        "given.\n"
        "\n"
        "  --username=USER    the user name\n"
        "  --password-stdin   read the password from stdin (needs --username)\n"
        "  --authfile=FILE    store them in FILE (default: $REGISTRY_AUTH_FILE, else\n"
        "                     the containers auth.json; see sdpod-registries(5))\n"
        "  --tls-verify=BOOL  verify the registry's TLS certificate (default: true,\n"
        "                     unless registries.json says the registry is insecure);\n"
        "                     false also allows plain HTTP\n"
        "  --cert-dir=DIR     CA certificates (*.crt) and client.cert/client.key for it\n";

static const char logout_usage[] =
        "Usage: sdpod logout [--authfile=FILE] (--all | REGISTRY)\n"
        "\n"
        "Removes the stored credentials of REGISTRY, or of every registry with\n"
        "--all, from the file sdpod login writes.\n"
        "\n"
        "  --authfile=FILE  the credentials file (default: as sdpod login's)\n"
        "  --all            remove the credentials of every registry\n";

static int parse_bool(const char *s, int *ret) {
        if (streq(s, "true") || streq(s, "1") || streq(s, "yes"))
                *ret = 1;
        else if (streq(s, "false") || streq(s, "0") || streq(s, "no"))
                *ret = 0;
        else
                return -EINVAL;
        return 0;
}

/* The registry as a user may write it: "HOST[:PORT]", also with docker://
 * or https:// before it and a "/" after. */
static int registry_argument(const char *command, const char *arg, char **ret) {
        const char *s = startswith(arg, "docker://") ?: startswith(arg, "https://") ?: startswith(arg, "http://") ?: arg;
        _cleanup_free_ char *r = strdup(s);
        if (!r)
                return cli_usage_error(command, "out of memory");
        size_t n = strlen(r);
        while (n > 0 && r[n - 1] == '/')
                r[--n] = '\0';
        if (!image_registry_is_valid(r)) {
                char q[VALUE_QUOTED_MAX];
                return cli_usage_error(command, "%s: not a registry (expected HOST or HOST:PORT)", value_quote(arg, q));
        }
        *ret = TAKE_PTR(r);
        return 0;
}

static volatile sig_atomic_t prompt_signal;

static void on_prompt_signal(int sig) {
        prompt_signal = sig;
}

/* One line from fd, at most PASSWORD_MAX bytes, without its newline. With
 * no_echo (fd a terminal), the terminal does not show what is typed; a
 * signal while reading restores it and returns -EINTR. */
static int read_line(int fd, bool no_echo, char **ret) {
        struct termios saved, t;
        bool restore = false;
        struct sigaction sa = { .sa_handler = on_prompt_signal }, old_int, old_term;
        if (no_echo && tcgetattr(fd, &saved) >= 0) {
                t = saved;
                t.c_lflag &= ~(tcflag_t) ECHO;
                t.c_lflag |= ECHONL;
                /* no SA_RESTART: a Ctrl-C ends the read, and the echo comes back */
                sigemptyset(&sa.sa_mask);
                sigaction(SIGINT, &sa, &old_int);
                sigaction(SIGTERM, &sa, &old_term);
                restore = tcsetattr(fd, TCSAFLUSH, &t) >= 0;
        }
        char *buf = malloc(PASSWORD_MAX + 1);
        size_t n = 0;
        int r = buf ? 0 : -ENOMEM;
        while (r == 0 && n <= PASSWORD_MAX) {
                char c;
                ssize_t k = read(fd, &c, 1);
                if (k < 0) {
                        r = errno == EINTR ? -EINTR : -errno;
                        break;
                }
                if (k == 0 || c == '\n')
                        break;
                buf[n++] = c;
        }
        if (r == 0 && n > PASSWORD_MAX)
                r = -EFBIG;
        if (restore) {
                tcsetattr(fd, TCSAFLUSH, &saved);
                sigaction(SIGINT, &old_int, NULL);
                sigaction(SIGTERM, &old_term, NULL);
        }
        if (r == 0 && prompt_signal)
                r = -EINTR;
        if (r < 0) {
                if (buf)
                        explicit_bzero(buf, n);
                free(buf);
                return r;
        }
        if (n > 0 && buf[n - 1] == '\r')
                n--;
        buf[n] = '\0';
        *ret = buf;
        return 0;
}

/* Asks on the terminal. */
static int prompt(const char *question, bool no_echo, char **ret) {
        _cleanup_close_ int tty = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
        if (tty < 0)
                return -ENOTTY;
        if (dprintf(tty, "%s", question) < 0)
                return -errno;
        return read_line(tty, no_echo, ret);
}

static int login_verb(int argc, char **argv) {
        static const char *command = "sdpod login";
        enum { OPT_USERNAME = 0x100, OPT_PASSWORD_STDIN, OPT_AUTHFILE, OPT_TLS_VERIFY, OPT_CERT_DIR };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "username", required_argument, NULL, OPT_USERNAME },
                { "password-stdin", no_argument, NULL, OPT_PASSWORD_STDIN },
                { "authfile", required_argument, NULL, OPT_AUTHFILE },
                { "tls-verify", required_argument, NULL, OPT_TLS_VERIFY },
                { "cert-dir", required_argument, NULL, OPT_CERT_DIR },
                {},
        };
        RegistryOptions opts = { .tls_verify = -1 };
        const char *username = NULL;
        bool password_stdin = false;
        int c;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        fputs(login_usage, stdout);
                        return EXIT_OK;
                case OPT_USERNAME:
                        username = optarg;
                        break;
                case OPT_PASSWORD_STDIN:
                        password_stdin = true;
                        break;
                case OPT_AUTHFILE:
                        opts.auth_file = optarg;
                        break;
                case OPT_TLS_VERIFY:
                        if (parse_bool(optarg, &opts.tls_verify) < 0)
                                return cli_usage_error(command, "--tls-verify=%s: expected true or false", optarg);
                        break;
                case OPT_CERT_DIR:
                        opts.cert_dir = optarg;
                        break;
                default:
                        return cli_option_error(command, "h", argc, argv);
                }
        if (optind != argc - 1)
                return cli_usage_error(command, optind >= argc ? "missing REGISTRY" : "takes one REGISTRY");
        if (password_stdin && !username)
                return cli_usage_error(command, "--password-stdin needs --username");
        if (username && (!*username || strchr(username, ':')))
                return cli_usage_error(command, "--username=%s: a user name cannot be empty or contain ':'", username);
        _cleanup_free_ char *registry = NULL;
        int r = registry_argument(command, argv[optind], &registry);
        if (r != 0)
                return r;

        _cleanup_free_ char *user = NULL, *password = NULL;
        if (!username) {
                r = prompt("Username: ", false, &user);
                if (r == -ENOTTY)
                        return cli_usage_error(command, "no terminal to ask for a user name: use --username");
                if (r == -EINTR)
                        return cli_interrupted_status(prompt_signal ?: SIGINT);
                if (r < 0) {
                        fprintf(stderr, "%s: reading the user name: %s\n", command, strerror(-r));
                        return EXIT_ERROR;
                }
                if (!*user || strchr(user, ':'))
                        return cli_usage_error(command, "a user name cannot be empty or contain ':'");
                username = user;
        }
        if (password_stdin)
                r = read_line(STDIN_FILENO, false, &password);
        else {
                r = prompt("Password: ", true, &password);
                if (r == -ENOTTY)
                        return cli_usage_error(command, "no terminal to ask for the password: use --password-stdin");
        }
        if (r == -EINTR)
                return cli_interrupted_status(prompt_signal ?: SIGINT);
        if (r < 0) {
                fprintf(stderr, "%s: reading the password: %s\n", command,
                        r == -EFBIG ? "longer than 4096 bytes" : strerror(-r));
                return EXIT_ERROR;
        }
        if (!*password)
                return cli_usage_error(command, "an empty password");

        Error *err = NULL;
        _cleanup_registry_ Registry *reg = NULL;
        ImageReference ref = { .registry = registry };
        opts.username = username;
        opts.password = password;
        opts.interrupted = cli_interrupted;
        cli_catch_interrupts();
        r = registry_open(&ref, &opts, &reg, &err);
        if (r >= 0)
                r = registry_ping(reg, &err);
        if (r == -ECANCELED && cli_interrupted()) {
                error_free(err);
                return cli_interrupted_status(cli_interrupted());
        }
        if (r < 0) {
                explicit_bzero(password, strlen(password));
                return cli_fail(err);
        }

        _cleanup_free_ char *path = NULL;
        r = registry_auth_store(opts.auth_file, registry, username, password, &path, &err);
        explicit_bzero(password, strlen(password));
        if (r < 0)
                return cli_fail(err);
        printf("Login succeeded: credentials for %s stored in %s\n", registry, path);
        return EXIT_OK;
}

static int logout_verb(int argc, char **argv) {
        static const char *command = "sdpod logout";
        enum { OPT_AUTHFILE = 0x100, OPT_ALL };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "authfile", required_argument, NULL, OPT_AUTHFILE },
                { "all", no_argument, NULL, OPT_ALL },
                {},
        };
        const char *auth_file = NULL;
        bool all = false;
        int c;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        fputs(logout_usage, stdout);
                        return EXIT_OK;
                case OPT_AUTHFILE:
                        auth_file = optarg;
                        break;
                case OPT_ALL:
                        all = true;
                        break;
                default:
                        return cli_option_error(command, "h", argc, argv);
                }
        if (all && optind != argc)
                return cli_usage_error(command, "--all takes no REGISTRY");
        if (!all && optind != argc - 1)
                return cli_usage_error(command, optind >= argc ? "missing REGISTRY (or --all)" : "takes one REGISTRY");
        _cleanup_free_ char *registry = NULL;
        if (!all) {
                int r = registry_argument(command, argv[optind], &registry);
                if (r != 0)
                        return r;
        }

        Error *err = NULL;
        _cleanup_free_ char *path = NULL;
        int r = registry_auth_remove(auth_file, registry, &path, &err);
        if (r < 0)
                return cli_fail(err);
        if (r == 0) {
                fprintf(stderr, "%s: %s%s%s in %s\n", command, all ? "no credentials" : "not logged in to ",
                        strempty(registry), "", strempty(path));
                return EXIT_NOT_FOUND;
        }
        if (all)
                printf("Removed the credentials of every registry from %s\n", path);
        else
                printf("Removed the credentials for %s from %s\n", registry, path);
        return EXIT_OK;
}

int verb_login(int argc, char **argv) {
        return login_verb(argc, argv);
}

int verb_logout(int argc, char **argv) {
        return logout_verb(argc, argv);
}
