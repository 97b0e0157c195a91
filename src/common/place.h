/* place — a place in claim order as the store writes it (store_cursor): opaque to everyone but
 * the store, which alone reads its bytes. A worker reports the place its claim reached, the
 * supervisor keeps the furthest (store_place_after compares two) and hands it to the next
 * claimer, and the wire carries it as PLACE_SIZE bytes. All zero bytes: none. */
#ifndef CLAIMD_PLACE_H
#define CLAIMD_PLACE_H

#include <stdbool.h>
#include <stdint.h>

#define PLACE_SIZE 20

struct place {
	uint8_t b[PLACE_SIZE];
};

static inline bool place_none(const struct place *p)
{
	for (int i = 0; i < PLACE_SIZE; i++)
		if (p->b[i])
			return false;
	return true;
}

#endif
