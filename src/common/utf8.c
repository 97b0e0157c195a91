#include "common/utf8.h"

/* Strict: no overlong forms, no surrogates, nothing above U+10FFFF. */
size_t utf8_len(const unsigned char *p, size_t n)
{
	unsigned char lo = 0x80, hi = 0xBF;
	size_t k;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xC2 && p[0] <= 0xDF)
		k = 2;
	else if (p[0] >= 0xE0 && p[0] <= 0xEF)
		k = 3;
	else if (p[0] >= 0xF0 && p[0] <= 0xF4)
		k = 4;
	else
		return 0;
	if (p[0] == 0xE0)
		lo = 0xA0;          /* overlong */
	else if (p[0] == 0xED)
		hi = 0x9F;          /* surrogates */
	else if (p[0] == 0xF0)
		lo = 0x90;          /* overlong */
	else if (p[0] == 0xF4)
		hi = 0x8F;          /* above U+10FFFF */
	if (n < k || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < k; i++)
		if (p[i] < 0x80 || p[i] > 0xBF)
			return 0;
	return k;
}

