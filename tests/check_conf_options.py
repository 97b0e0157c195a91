#!/usr/bin/env python3
"""claimd.conf(5)'s table of the settings in depth (src/deploy/man/claimd.conf.5.md) against
the binary's own option table (common/config.c, which drives the flags, the environment, the
config file, --help and claimd(8)): every setting that `claimd --example-config` writes has a
row, every option a row names is one `claimd --help` knows, and a default --help names is the
row's. A rule that fails when an option is added, renamed or dropped, or its default changed,
in one place only.

    check_conf_options.py SOURCE_ROOT CLAIMD"""

import re
import subprocess
import sys


def help_defaults(helptext):
    """option -> the first word of the default its --help text names, where it names one."""
    entries, cur = {}, None
    for line in helptext.splitlines():
        m = re.match(r'^  --([a-z0-9-]+)(?: (\S+))?(?:\s{2,}(.*))?$', line)
        if m:
            cur = m.group(1)
            entries[cur] = m.group(3) or ''
        elif cur and re.match(r'^\s{20,}\S', line):
            entries[cur] += ' ' + line.strip()
        else:
            cur = None
    out = {}
    for opt, text in entries.items():
        m = re.search(r'\(default ([^)]*)\)|default ([^;),]+)', text)
        if m:
            out[opt] = first_word(m.group(1) or m.group(2))
    return out


def first_word(text):
    return re.split(r'[\s:;,(]', text.strip().strip('`"'), 1)[0].strip('`"')


def main(root, claimd):
    with open(f'{root}/src/deploy/man/claimd.conf.5.md', encoding='utf-8') as f:
        table = f.read()
    named, defaults = set(), {}
    for line in table.splitlines():
        if line.startswith('| `--'):
            cells = line.split(' | ')
            found = re.findall(r'`--([a-z0-9-]+)', cells[0])
            named.update(found)
            if found and len(cells) > 2:
                defaults[found[0]] = first_word(cells[1])
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
    said = help_defaults(helptext)
    if len(said) < 20:
        problems.append(f'read the defaults of {len(said)} options from --help: its form changed')
    problems += [f'--{o}: the default is {said[o]} in claimd --help, {defaults[o]} in '
                 'claimd.conf.5.md' for o in sorted(said) if o in defaults and
                 defaults[o] != said[o]]
    for p in problems:
        print(f'not ok - {p}')
    if not problems:
        print(f'ok - claimd.conf(5) options: {len(named)} named, every one of the {len(settings)} '
              f'settings among them, and the {len(said)} defaults --help names the same')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1], sys.argv[2]))
