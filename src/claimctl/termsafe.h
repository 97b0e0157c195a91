/* termsafe — text that came from elsewhere (a row's payload, an error, a queue or group
 * name) made safe to print on a terminal: nothing in it can move the cursor, clear the
 * screen, set the window title, or make the terminal answer with bytes of its own. Pure. */
#ifndef CLAIMD_TERMSAFE_H
#define CLAIMD_TERMSAFE_H

#include <stddef.h>

/* Filters the len bytes at s in place and returns the length left (never more than len):
 * - an escape sequence goes whole: ESC [ ... final byte (CSI); ESC ] / P / X / ^ / _ ...
 *   up to BEL, ESC \ or the end of the line (OSC, DCS and the other strings); ESC with
 *   intermediate bytes and a final byte; ESC and one byte;
 * - every other control character goes: C0 but newline and tab (so a carriage return and
 *   a backspace too), DEL, and C1 (U+0080..U+009F);
 * - a byte that is not part of valid UTF-8 becomes '?';
 * - everything else stays, newlines and tabs included. */
size_t termsafe(char *s, size_t len);

#endif
