#!/usr/bin/env python3
"""The store's claim path against a real server, through tests/claim_stress: forked claimers
claim every row exactly once and leave it done, and a claimer whose lease ran out is fenced
out of the row's new claim (see claim_stress.c for the phases)."""

import os
import subprocess

import harness
from harness import check, check_eq

STRESS_BIN = os.environ.get('CLAIM_STRESS_BIN') or os.path.join(
    os.environ.get('CLAIMD_BUILD_DIR', os.path.join(harness.SOURCE_ROOT, 'build')),
    'tests', 'claim_stress')


def run_stress(t, db, nproc, nrows, batch):
    argv = [STRESS_BIN, db.dsn, str(nproc), str(nrows), str(batch)]
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=240)
    t.note(r.stdout.rstrip())
    check_eq(r.returncode, 0, f'{" ".join(argv)} exit code (stderr: {r.stderr.strip()[-2000:]!r})')
    check('claim_stress: OK' in r.stdout, f'claim_stress did not finish: {r.stdout!r}')
    # Independent of claim_stress's own checks: every inserted row is done, claimed once.
    rows = db.sql("SELECT state, attempts, claim_token, COUNT(*) FROM work_items "
                  "WHERE payload LIKE 'item-%' GROUP BY state, attempts, claim_token")
    check_eq(rows, [('done', '1', '2', str(nrows))], 'inserted rows by (state, attempts, token: claimed, then finished)')


def it_eight_claimers_claim_every_row_once_and_complete_it(t):
    run_stress(t, t.database(), 8, 10000, 16)


def it_two_claimers_one_row_at_a_time(t):
    run_stress(t, t.database(), 2, 1000, 1)


def it_four_claimers_batches_of_64(t):
    run_stress(t, t.database(), 4, 5000, 64)


if __name__ == '__main__':
    harness.main()
