/* tzfile — an IANA time zone (a TZif file of the system's zoneinfo, RFC 8536) as the spans of
 * time in which its offset from UTC is constant. claimd reads the file itself rather than
 * switching the process's TZ: its times are computed on threads, and TZ is one per process.
 *
 * tzfile_parse is pure (no I/O, does not log) and checks every count against the buffer
 * before reading; tzfile_load reads the file of a zone name. Times are seconds from
 * 1970-01-01 00:00 UTC; offsets are seconds east of UTC. Leap seconds, where a file has
 * them, are ignored (claimd's clock, like the database's, has none). */
#ifndef CLAIMD_TZFILE_H
#define CLAIMD_TZFILE_H

#include <stddef.h>
#include <stdint.h>

#define TZFILE_NAME_MAX 64          /* the longest zone name accepted, without its NUL */
#define TZFILE_SIZE_MAX 65536       /* a bigger file is refused */
#define TZFILE_DIR "/usr/share/zoneinfo"   /* where zones are, unless $TZDIR says */

struct tzfile;

/* A span of constant offset: [start, end), start INT64_MIN or end INT64_MAX where it has no
 * beginning or end; off within it, prev_off the offset just before start (= off when
 * start is INT64_MIN). */
struct tzspan {
	int64_t start, end;
	int32_t off, prev_off;
};

/* Parses a TZif file's bytes (versions 1 to 4; the 64-bit data and the footer's rule where
 * the file has them) into a new zone *ret. Returns 0, -ENOMEM, or -EINVAL with what is wrong
 * in err. */
int tzfile_parse(const uint8_t *buf, size_t len, struct tzfile **ret, char *err, size_t errlen);

/* The zone named name ("Europe/Berlin", "UTC"), read from $TZDIR or TZFILE_DIR, into *ret.
 * "UTC" and "Etc/UTC" need no file. A name is letters, digits and '/_+-', its parts not
 * starting with '.'. Returns 0, -EINVAL (a name that cannot be a zone, or a file that is not
 * TZif), -ENOENT (no such zone), or another negative errno when the file could not be read
 * now (-EMFILE, -EIO, -EACCES, -ELOOP, -ENOMEM, ...: it may read later), with what is wrong
 * in err. Blocks on the file. */
int tzfile_load(const char *name, struct tzfile **ret, char *err, size_t errlen);

/* Accepts NULL. */
void tzfile_free(struct tzfile *z);

/* The span that holds utc. */
void tzfile_span(const struct tzfile *z, int64_t utc, struct tzspan *ret);

/* The offset at utc. */
int32_t tzfile_offset(const struct tzfile *z, int64_t utc);

#endif
