/* SPDX-License-Identifier: Apache-2.0 */
/* What a pod wrote, shown on a terminal (basic/error.h): text_make_printable
 * and value_quote let through printable UTF-8 only. */
#include <stdint.h>

#include "basic/error.h"
#include "tests.h"

static void printable(const char *in, bool keep_newlines, const char *want) {
        char buf[64];
        size_t n = strlen(in);
        memcpy(buf, in, n + 1);
        text_make_printable(buf, n, keep_newlines);
        ASSERT_STREQ(buf, want);
}

static void test_make_printable(void) {
        printable("plain text, 100% ok", false, "plain text, 100% ok");
        printable("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", false, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
        printable("\x1b]0;PWNED\x07\x1b[31mred", false, "?]0;PWNED??[31mred");
        printable("a\x7f" "b", false, "a?b");
        printable("line\nnext\tcol", true, "line\nnext\tcol");
        printable("line\nnext", false, "line?next");
        /* C1 controls: UTF-8-encoded (C2 9B is CSI), and raw bytes */
        printable("x\xc2\x9b" "2J", false, "x??2J");
        printable("x\x9b" "2J\x9d", false, "x?2J?");
        /* overlong forms, surrogates, beyond U+10FFFF, truncated */
        printable("\xc0\x9b", false, "??");
        printable("\xe0\x80\x80", false, "???");
        printable("\xed\xa0\x80", false, "???");
        printable("\xf4\x90\x80\x80", false, "????");
        printable("ab\xe2\x82", false, "ab??");
}

static void test_value_quote(void) {
        char q[VALUE_QUOTED_MAX];
        ASSERT_STREQ(value_quote("web", q), "\"web\"");
        ASSERT_STREQ(value_quote("a\"b\\c", q), "\"a\\\"b\\\\c\"");
        ASSERT_STREQ(value_quote("\x1b[2J", q), "\"\\x1b[2J\"");
        ASSERT_STREQ(value_quote("\xc2\x9b" "1", q), "\"\\xc2\\x9b1\"");
        ASSERT_STREQ(value_quote("caf\xc3\xa9", q), "\"caf\xc3\xa9\"");
        /* at most 64 bytes of the value, whatever they are */
        char big[200];
        memset(big, '\x1b', sizeof(big) - 1);
        big[sizeof(big) - 1] = 0;
        value_quote(big, q);
        ASSERT(strlen(q) < VALUE_QUOTED_MAX);
        ASSERT(strstr(q, "...") != NULL);
}

static void escaped(const char *in, bool final, const char *want, size_t want_used) {
        char out[256];
        size_t n = 0, used = text_escape(in, strlen(in), final, out, &n);
        out[n] = 0;
        ASSERT_STREQ(out, want);
        ASSERT(used == (want_used == SIZE_MAX ? strlen(in) : want_used));
}

static void test_escape(void) {
        escaped("clip:\x1b]52;c;cHduZWQ=\x07 clear:\x1b[2J", true,
                "clip:\\x1b]52;c;cHduZWQ=\\x07 clear:\\x1b[2J", SIZE_MAX);
        escaped("caf\xc3\xa9\tok\r\nnext\r", true, "caf\xc3\xa9\tok\r\nnext\\x0d", SIZE_MAX);
        escaped("x\xc2\x9b" "2J", true, "x\\xc2\\x9b2J", SIZE_MAX);
        /* a character or a line end cut by the read waits for the rest */
        escaped("ab\xe2\x82", false, "ab", 2);
        escaped("ab\xe2\x82", true, "ab\\xe2\\x82", SIZE_MAX);
        escaped("ab\r", false, "ab", 2);
        escaped("ab\r\r", false, "ab", 2);
        /* a console's "\r\r\n" (ONLCR on a line that had its "\r") is a
         * line end too; a carriage return anywhere else is shown */
        escaped("a\r\r\nb\rc", true, "a\r\nb\\x0dc", SIZE_MAX);
        escaped("ab\xe2x", false, "ab\\xe2x", SIZE_MAX);
}

int main(void) {
        RUN(test_make_printable);
        RUN(test_escape);
        RUN(test_value_quote);
        return 0;
}
