#!/usr/bin/env python3
"""Makes a man page: the scdoc template (or a page in Markdown, md2scd.py) with
@CLAIMD_OPTIONS@ and @CLAIMCTL_COMMANDS@ filled in
from the built binaries' --help (so the options and commands have one home, the tables in
src/common/config.c and src/common/ctl.c), @HTTP_ROUTES@ from the API's OpenAPI document
(src/console/openapi.json) and @HTTP_METRICS@ from the metrics' declarations
(src/console/metrics.c), then scdoc.

    mkman.py TEMPLATE OUTPUT CLAIMD CLAIMCTL SCDOC VERSION
"""

import json
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


SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')


def http_routes():
    with open(os.path.join(SRC, 'console', 'openapi.json'), encoding='utf-8') as f:
        doc = json.load(f)
    out = []
    for path, item in doc['paths'].items():
        for method in ('get', 'put', 'post', 'delete'):
            op = item.get(method)
            if not op:
                continue
            out.append(f'*{method.upper()} {esc(path)}*')
            text = [op.get('summary', '').rstrip('.') + '.']
            params = [p['name'] for p in op.get('parameters', []) if p['in'] != 'path']
            if params:
                text.append('Parameters: ' + ', '.join(params) + '.')
            codes = sorted(op.get('responses', {}))
            text.append('Answers: ' + ', '.join(codes) + '.')
            out.append('\t' + esc(' '.join(text)) + '\n')
    return '\n'.join(out)


def http_metrics():
    with open(os.path.join(SRC, 'console', 'metrics.c'), encoding='utf-8') as f:
        code = f.read()
    out = []
    for name, kind, helps in re.findall(r'head\(b, "(\w+)", "(\w+)",\s*((?:"[^"]*"\s*)+)\)', code):
        text = ''.join(re.findall(r'"([^"]*)"', helps))
        out.append(f'*{esc(name)}* ({kind})')
        out.append('\t' + esc(text) + '\n')
    if not out:
        sys.exit('mkman.py: no metrics found in metrics.c')
    return '\n'.join(out)


def main():
    template, output, claimd, claimctl, scdoc, version = sys.argv[1:7]
    with open(template, encoding='utf-8') as f:
        text = f.read()
    if template.endswith('.md'):
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import md2scd
        text = md2scd.convert(text)
        for marker in re.findall(r'@[A-Z]+(?:\\_[A-Z]+)*@', text):
            text = text.replace(marker, marker.replace('\\_', '_'))
    if '@CLAIMD_OPTIONS@' in text:
        text = text.replace('@CLAIMD_OPTIONS@', claimd_options(claimd))
    if '@CLAIMCTL_COMMANDS@' in text:
        text = text.replace('@CLAIMCTL_COMMANDS@', claimctl_commands(claimctl))
    if '@HTTP_ROUTES@' in text:
        text = text.replace('@HTTP_ROUTES@', http_routes())
    if '@HTTP_METRICS@' in text:
        text = text.replace('@HTTP_METRICS@', http_metrics())
    text = text.replace('@VERSION@', version)
    page = subprocess.run([scdoc], input=text, check=True, capture_output=True, text=True).stdout
    with open(output, 'w', encoding='utf-8') as f:
        f.write(page)


if __name__ == '__main__':
    main()
