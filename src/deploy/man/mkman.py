#!/usr/bin/env python3
"""Makes a man page: the scdoc template with @CLAIMD_OPTIONS@ and @CLAIMCTL_COMMANDS@ filled in
from the built binaries' --help (so the options and commands have one home, the tables in
src/common/config.c and src/common/ctl.c), then scdoc.

    mkman.py TEMPLATE OUTPUT CLAIMD CLAIMCTL SCDOC VERSION
"""

import os
import re
import subprocess
import sys


def esc(text):
    """scdoc's markup characters, taken as they are."""
    return re.sub(r'([\\*_])', r'\\\1', text)


def help_of(binary):
    # A sanitized build's leak report must not make --help fail here.
    env = dict(os.environ, ASAN_OPTIONS='detect_leaks=0')
    return subprocess.run([binary, '--help'], check=True, capture_output=True, text=True,
                          env=env).stdout.splitlines()


def claimd_options(claimd):
    out, entry = [], None
    for line in help_of(claimd):
        m = re.match(r'^  (--[a-z-]+)(?: (\S+))?(?:\s{2,}(.*))?$', line)
        if m:
            name, arg, text = m.groups()
            out.append('*' + esc(name) + '*' + (' _' + esc(arg) + '_' if arg else ''))
            entry = []
            out.append(entry)
            if text:
                entry.append(text)
        elif entry is not None and re.match(r'^\s{20,}\S', line):
            entry.append(line.strip())
        else:
            entry = None
    lines = []
    for item in out:
        if isinstance(item, str):
            lines.append(item)
        else:
            lines.append('\t' + esc(' '.join(item)) + '\n')
    return '\n'.join(lines)


def claimctl_commands(claimctl):
    lines, section, syn, text = [], False, [], []

    def flush():
        if syn:
            lines.append('*claimctl* ' + esc(' '.join(syn)))
            lines.append('\t' + esc(' '.join(text)) + '\n')
        syn.clear()
        text.clear()

    for line in help_of(claimctl):
        if line.startswith('Commands'):
            section = True
            continue
        if not section:
            continue
        if not line.strip() or not line.startswith(' '):
            flush()
            if line.startswith('Options'):
                break
            continue
        body = line.strip()
        if re.match(r'^  [a-z]', line):
            flush()
            syn.append(body)
        elif body.startswith('[') and not text:
            syn.append(body)
        else:
            text.append(body)
    flush()
    return '\n'.join(lines)


def main():
    template, output, claimd, claimctl, scdoc, version = sys.argv[1:7]
    with open(template, encoding='utf-8') as f:
        text = f.read()
    if '@CLAIMD_OPTIONS@' in text:
        text = text.replace('@CLAIMD_OPTIONS@', claimd_options(claimd))
    if '@CLAIMCTL_COMMANDS@' in text:
        text = text.replace('@CLAIMCTL_COMMANDS@', claimctl_commands(claimctl))
    text = text.replace('@VERSION@', version)
    page = subprocess.run([scdoc], input=text, check=True, capture_output=True, text=True).stdout
    with open(output, 'w', encoding='utf-8') as f:
        f.write(page)


if __name__ == '__main__':
    main()
