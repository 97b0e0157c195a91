#!/usr/bin/env python3
"""The workflow features through chaos (tests/integration/chaos_workflows.py): a random workload
of graphs, batches, per-key limits and rates, cron schedules, retries, cancels and discards on
two supervisors while workers and a supervisor are SIGKILLed and the database restarts; a
checker reads the rows' history and the handlers' runs and finds no violation of what the
features promise. CLAIMD_CHAOS_SECONDS and CLAIMD_CHAOS_SEED size it (tools/chaos)."""

import harness
from harness import check

import chaos_workflows as chaos


def it_keeps_every_workflow_promise_through_kills_and_a_restart(t):
    sc = chaos.env_scale()
    violations, counts, record = chaos.run(t, sc)
    # It did what it is for: without these the run proved little.
    check(record.kills['worker'] >= 5 and record.kills['supervisor'] == 1 and
          record.kills['db_restart'] == 1, f'the kills: {record.kills}')
    for what, least in (('first starts of rows with parents', 20), ('rows dead cancelled', 1),
                        ('callbacks started', 2), ('keyed claims', 20), ('rated starts', 10),
                        ('running rows cancelled', 5),
                        ('cron ticks', sc.schedules * sc.catch_up_min)):
        check(counts.get(what, 0) >= least, f'{what}: {counts.get(what, 0)}, want at least {least}')
    check(record.actions.get('retry_one', 0) + record.actions.get('retry_bulk', 0) >= 3,
          f'retries done: {record.actions}')
    check(not violations, f'{len(violations)} violations, the first: {violations[:3]}')


if __name__ == '__main__':
    harness.main()
