#!/usr/bin/env python3
"""claimd.conf(5)'s table of the settings in depth (src/deploy/man/claimd.conf.5.md) against
the binary's own option table (common/config.c, which drives the flags, the environment, the
config file, --help and claimd(8)): every setting that `claimd --example-config` writes has a
row, and every option a row names is one `claimd --help` knows. A rule that fails when an
option is added, renamed or dropped in one place only.

    check_conf_options.py SOURCE_ROOT CLAIMD"""

import re
import subprocess
import sys


def main(root, claimd):
    with open(f'{root}/src/deploy/man/claimd.conf.5.md', encoding='utf-8') as f:
        table = f.read()
    named = set()
    for line in table.splitlines():
        if line.startswith('| `--'):
            first = line.split(' | ', 1)[0]
            named.update(re.findall(r'`--([a-z0-9-]+)', first))
    example = subprocess.run([claimd, '--example-config'], capture_output=True, text=True,
                             check=True).stdout
    settings = set(re.findall(r'^#?([a-z][a-z0-9-]*) =', example, re.M))
    helptext = subprocess.run([claimd, '--help'], capture_output=True, text=True).stdout
    flags = set(re.findall(r'^  --([a-z0-9-]+)', helptext, re.M))
    problems = []
    if len(settings) < 20 or len(flags) < len(settings):
        problems.append(f'read {len(settings)} settings and {len(flags)} flags: '
                        'the binary\'s output changed form')
    problems += [f'claimd.conf.5.md: no row for --{o}' for o in sorted(settings - named)]
    problems += [f'claimd.conf.5.md: --{o} is not an option of claimd --help'
                 for o in sorted(named - flags)]
    for p in problems:
        print(f'not ok - {p}')
    if not problems:
        print(f'ok - claimd.conf(5) options: {len(named)} named, every one of the {len(settings)} '
              'settings among them')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1], sys.argv[2]))
