/* Fuzz target for a line of the HTTP API's jobs:batch (common/jobline) and the add request
 * it becomes (ctl_from_params): a line that parses and makes a request must encode on the
 * control protocol and decode back. Anything else aborts.
 *
 *     tools/fuzz jobline
 * Otherwise linked with fuzz_main.c to replay tests/corpus/jobline. */
#include "common/jobline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/ctl.h"
#include "fuzz.h"

static unsigned long parsed, requests;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *names[JOBLINE_PARAMS_MAX + 1], *values[JOBLINE_PARAMS_MAX + 1];
	struct ctl_request req, back;
	struct jobline jl;
	char err[256];
	struct buf b;

	if (jobline_parse((const char *)data, size, &jl, err, sizeof(err)) < 0)
		return 0;
	parsed++;
	if (jl.n > JOBLINE_PARAMS_MAX || !jl.payload)
		abort();
	names[0] = "queue";
	values[0] = "q";
	memcpy(names + 1, jl.names, jl.n * sizeof(*names));
	memcpy(values + 1, jl.values, jl.n * sizeof(*values));
	if (ctl_from_params(CTL_ADD, names, values, jl.n + 1, jl.payload, jl.payload_len, &req, err,
			    sizeof(err)) == 0) {
		requests++;
		buf_init(&b);
		if (ctl_encode(&req, &b, err, sizeof(err)) < 0 ||
		    ctl_decode(b.data, b.len - 1, &back, err, sizeof(err)) < 0 ||
		    back.payload_len != req.payload_len ||
		    memcmp(back.payload, req.payload, req.payload_len) != 0) {
			fprintf(stderr, "fuzz_jobline: a line's request does not round-trip: %s\n", err);
			abort();
		}
		buf_free(&b);
	}
	jobline_free(&jl);
	return 0;
}

void fuzz_report(const char *name)
{
	printf("%s: %lu lines parsed, %lu made add requests, all round-tripped\n", name, parsed,
	       requests);
}

unsigned long fuzz_accepted(void)
{
	return parsed;
}
