#!/usr/bin/env python3
"""The man pages written in Markdown (src/deploy/man/md2scd.py): each construct the pages use
as scdoc takes it, what it does not take refused, and every page of the folder converted and
accepted by scdoc when scdoc is there.

    test_md2scd.py SOURCE_ROOT [SCDOC]"""

import os
import subprocess
import sys

ROOT = sys.argv[1]
sys.path.insert(0, os.path.join(ROOT, 'src', 'deploy', 'man'))
import md2scd  # noqa: E402

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print('not ok - ' + what)


TITLE = 'x(5) "claimd 1" "File Formats Manual"\n\n'
cases = [
    ('# Name\n\nplain a*b_c \\ d', '# NAME\n\nplain a\\*b\\_c \\\\ d\n'),
    ('## Sub `work_items`', '## Sub *work\\_items*\n'),
    ('a `code_x`, **bold**, *em*, [see](#anchor) and [site](https://e.org)',
     'a *code\\_x*, *bold*, _em_, see and site (https://e.org)\n'),
    ('- one\n  two\n- three', '- one two\n- three\n'),
    ('```sh\na \\ b *c*\n```', '```\na \\\\ b *c*\n```\n'),
    ('| col | default | meaning |\n| --- | --- | --- |\n| `--x N` | 4 | what \\| it is |',
     '*--x N*\n\tdefault: 4. what | it is\n'),
    ('text\n\n![a picture](p.png)\n\nmore', 'text\n\nmore\n'),
]
for md, want in cases:
    got = md2scd.convert(TITLE + md)[len(TITLE):]
    check(got == want, f'{md!r} gave {got!r}, want {want!r}')
for bad in ('no title line\n', TITLE + '<b>html</b>\n', TITLE + '| a | b |\n| x | y |\n',
            TITLE + '| a | b |\n| --- | --- |\n| only one |\n'):
    try:
        md2scd.convert(bad)
        check(False, f'{bad!r} was taken')
    except ValueError:
        pass

scdoc = sys.argv[2] if len(sys.argv) > 2 else None
man = os.path.join(ROOT, 'src', 'deploy', 'man')
pages = [f for f in sorted(os.listdir(man)) if f.endswith('.md') and f != 'README.md']
check(len(pages) >= 5, f'the Markdown pages: {pages}')
for f in pages:
    with open(os.path.join(man, f), encoding='utf-8') as fh:
        text = md2scd.convert(fh.read())
    if scdoc:
        r = subprocess.run([scdoc], input=text, capture_output=True, text=True)
        check(r.returncode == 0, f'{f}: scdoc refused it: {r.stderr.strip()}')
if failures:
    sys.exit(1)
print(f'ok - md2scd: {len(cases)} constructs, refusals, {len(pages)} pages'
      + (' accepted by scdoc' if scdoc else ''))
