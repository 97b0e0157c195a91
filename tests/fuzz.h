/* What every fuzz target of tests/ defines. Built with -DCLAIMD_LIBFUZZER a target is a plain
 * libFuzzer target; otherwise it is linked with fuzz_main.c, which replays files and directories
 * of inputs through it (how each corpus in tests/corpus/ runs as an ordinary unit test),
 * and checks that at least a given number of them were accepted. */
#ifndef CLAIMD_TESTS_FUZZ_H
#define CLAIMD_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* Runs one input; aborts on a broken invariant. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* After a replay: one line of what the target saw (name: the program's name). */
void fuzz_report(const char *name);

/* How many units of input (frames, lines, expressions, files, as the target reads them) the
 * target has accepted so far: the replay counts an input accepted when this grows while it
 * runs, and fails below its --min-accepted (a replay of inputs all refused tests little). */
unsigned long fuzz_accepted(void);

#endif
