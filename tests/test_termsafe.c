/* test_termsafe — what claimctl prints for people: control characters and escape sequences
 * taken out, text (UTF-8, newlines, tabs) kept. Table-driven, and every case again cut short
 * at each byte (a sequence cut by the end of the text never lets a control byte through). */
#include "claimctl/termsafe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/utf8.h"

#define IN(s) s, sizeof(s) - 1   /* a literal and its length, NULs included */

static const struct {
	const char *in;
	size_t len;
	const char *want;
} cases[] = {
	{ IN("plain text"), "plain text" },
	{ IN("two\nlines\tand a tab"), "two\nlines\tand a tab" },
	{ IN("before\x1b[2J\aafter"), "beforeafter" },                 /* clear screen, BEL */
	{ IN("\x1b[1;31mred\x1b[0m"), "red" },                        /* SGR */
	{ IN("\x1b[?1049h"), "" },                                     /* private mode */
	{ IN("x\x1b]0;title\ay"), "xy" },                              /* OSC ended by BEL */
	{ IN("x\x1b]8;;http://e\x1b\\link\x1b]8;;\x1b\\y"), "xlinky" }, /* OSC ended by ST */
	{ IN("x\x1bP+q544e\x1b\\y"), "xy" },                           /* DCS (a query) */
	{ IN("x\x1b]0;no end\nnext"), "x\nnext" },                     /* a string ends at LF */
	{ IN("x\x1b(By"), "xy" },                                       /* charset */
	{ IN("x\x1b" "cy"), "xy" },                                     /* reset */
	{ IN("x\x1b\x1b[2Jy"), "xy" },                                  /* ESC ESC */
	{ IN("x\x1b[2\ny"), "x\ny" },                                   /* CSI cut by LF */
	{ IN("a\rb\bc\0d\x7f" "e"), "abcde" },                          /* CR, BS, NUL, DEL */
	{ IN("a\xc2\x9b" "2Jb"), "a2Jb" },                              /* C1 CSI, UTF-8 */
	{ IN("a\xc2\x85" "b"), "ab" },                                  /* C1 NEL */
	{ IN("a\x9b" "2Jb"), "a?2Jb" },                                 /* a raw 8-bit CSI */
	{ IN("\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
	  "\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80" },         /* UTF-8 stays */
	{ IN("\xc2\xa0nbsp"), "\xc2\xa0nbsp" },                         /* U+00A0 is not C1 */
	{ IN("a\xff\xfe" "b"), "a??b" },
	{ IN("a\xed\xa0\x80" "b"), "a???b" },                           /* a surrogate */
	{ IN("\x1b["), "" },
	{ IN("\x1b"), "" },
	{ IN("a\xe2\x82"), "a??" },                                     /* cut UTF-8 */
};

/* What is left must be valid UTF-8 with no control character in it but LF and TAB: no C0,
 * no DEL, no C1 (U+0080..U+009F, C2 80..C2 9F). */
static int safe(const unsigned char *p, size_t n)
{
	for (size_t i = 0, k; i < n; i += k) {
		k = utf8_len(p + i, n - i);
		if (k == 0 || (p[i] < 0x20 && p[i] != '\n' && p[i] != '\t') || p[i] == 0x7f ||
		    (k == 2 && p[i] == 0xc2 && p[i + 1] <= 0x9f))
			return 0;
	}
	return 1;
}

int main(void)
{
	char buf[64];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t want = strlen(cases[i].want), got;
		memcpy(buf, cases[i].in, cases[i].len);
		got = termsafe(buf, cases[i].len);
		CHECK(got == want && !memcmp(buf, cases[i].want, want),
		      "case %zu: got \"%.*s\" (%zu bytes), want \"%s\"", i, (int)got, buf, got,
		      cases[i].want);
		for (size_t cut = 0; cut <= cases[i].len; cut++) {
			memcpy(buf, cases[i].in, cut);
			got = termsafe(buf, cut);
			CHECK(got <= cut && safe((unsigned char *)buf, got),
			      "case %zu cut at %zu: %zu bytes left, not all safe", i, cut, got);
		}
	}
	printf("%s\n", failures ? "FAIL" : "ok");
	return failures ? 1 : 0;
}
