#!/usr/bin/env python3
"""The source tree's layout, as src/README.md states it: what each folder may include, no
circle among modules (a module is foo.c with foo.h and its private foo_int.h; one includes another when any of its
files includes the other's header), no file over 800 lines, and a README in every folder.
Prints what breaks a rule and exits 1; exits 0 when all hold."""

import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..')
SRC = os.path.join(ROOT, 'src')
MAX_LINES = 800

# folder -> folders (or single headers) it may include from, besides its own
ALLOWED = {
    'common': set(),
    'store': {'common'},
    'worker': {'common', 'store'},
    'supervisor': {'common', 'store', 'worker/handler.h'},
    'claimctl': {'common'},
    '.': {'common', 'store', 'worker', 'supervisor'},   # src/claimd.c, the entry point
}


def sources():
    for d, _, files in os.walk(SRC):
        for f in sorted(files):
            if f.endswith(('.c', '.h')):
                yield os.path.relpath(os.path.join(d, f), SRC)


def includes(path):
    with open(os.path.join(SRC, path), encoding='utf-8') as f:
        return re.findall(r'^\s*#\s*include\s+"([^"]+)"', f.read(), re.M)


def module(path):
    """foo.c and foo.h are module foo; a private header foo_int.h is foo's insides."""
    base, ext = os.path.splitext(path)
    return base[:-4] if ext == '.h' and base.endswith('_int') else base


def find_cycle(graph):
    """A list of modules forming a circle, or None."""
    state, stack = {}, []

    def visit(m):
        state[m] = 'open'
        stack.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 'open':
                return stack[stack.index(n):] + [n]
            if n not in state:
                found = visit(n)
                if found:
                    return found
        stack.pop()
        state[m] = 'done'
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def main():
    problems = []
    graph = {}
    files = list(sources())
    for path in files:
        folder = os.path.dirname(path) or '.'
        with open(os.path.join(SRC, path), encoding='utf-8') as f:
            n = sum(1 for _ in f)
        if n > MAX_LINES:
            problems.append(f'{path}: {n} lines (at most {MAX_LINES})')
        for inc in includes(path):
            target = os.path.normpath(inc)
            tfolder = os.path.dirname(target) or '.'
            if not os.path.exists(os.path.join(SRC, target)):
                continue  # a system or plugin header written with quotes
            if tfolder != folder and tfolder not in ALLOWED.get(folder, set()) and \
                    target not in ALLOWED.get(folder, set()):
                problems.append(f'{path}: includes {inc}, but {folder}/ may not include from '
                                f'{tfolder}/')
            if module(target) != module(path):
                graph.setdefault(module(path), set()).add(module(target))
    cycle = find_cycle(graph)
    if cycle:
        problems.append('modules include each other in a circle: ' + ' -> '.join(cycle))
    for d, _, _ in os.walk(SRC):
        if not os.path.exists(os.path.join(d, 'README.md')):
            problems.append(f'{os.path.relpath(d, ROOT)}/ has no README.md')
    for p in problems:
        print('not ok - ' + p)
    if problems:
        return 1
    print(f'ok - layout: {len(files)} files, {len(graph)} modules, folder rules, no circles, '
          f'none over {MAX_LINES} lines')
    return 0


if __name__ == '__main__':
    sys.exit(main())
