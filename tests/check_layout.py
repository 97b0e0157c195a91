#!/usr/bin/env python3
"""The source tree's layout, as src/README.md states it: what each folder may include, no
circle among modules (a module is foo.c with foo.h and its private foo_int.h; one includes
another when any of its files includes the other's header), no circle of calls between
files (file A uses a function that file B defines, directly or through others, and B one of
A's), no file over 800 lines, and a README in every folder that names each of its source
files (in backquotes: the file, or its module, `foo` for foo.c, foo.h and foo_int.h). Prints
what breaks a rule and exits 1; exits 0 when all hold."""

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
    # the operator's surface reads the supervisor through one header, and the supervisor
    # never includes the surface (it drives it through surface.h's struct surface_ops)
    'console': {'common', 'store', 'supervisor/surface.h'},
    'claimctl': {'common'},
    '.': {'common', 'store', 'worker', 'supervisor', 'console'},   # src/claimd.c, the entry point
}

# System headers a folder may not include: what it must know nothing of.
FORBIDDEN_SYSTEM = {
    'supervisor': {'jansson.h': 'JSON', 'microhttpd.h': 'HTTP'},
    'worker': {'microhttpd.h': 'HTTP'},
    'store': {'microhttpd.h': 'HTTP'},
}


# Circles of calls the tree still has, each to be split where its concern ends (the lower side
# signals the upper through a struct of callbacks). A new circle fails, and so does one listed
# here that is gone (take it off the list).
KNOWN_CALL_CIRCLES = []


def sources():
    for d, _, files in os.walk(SRC):
        for f in sorted(files):
            if f.endswith(('.c', '.h')):
                yield os.path.relpath(os.path.join(d, f), SRC)


def includes(path):
    with open(os.path.join(SRC, path), encoding='utf-8') as f:
        return re.findall(r'^\s*#\s*include\s+"([^"]+)"', f.read(), re.M)


def system_includes(path):
    with open(os.path.join(SRC, path), encoding='utf-8') as f:
        return re.findall(r'^\s*#\s*include\s+<([^>]+)>', f.read(), re.M)


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


def c_text(path):
    """path's text without comments, strings and character constants."""
    with open(os.path.join(SRC, path), encoding='utf-8') as f:
        text = f.read()
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    text = re.sub(r'//[^\n]*', ' ', text)
    text = re.sub(r'"(\\.|[^"\\\n])*"', '""', text)
    return re.sub(r"'(\\.|[^'\\\n])*'", "''", text)


# A function with external linkage defined at the start of a line (the style's), its body's
# brace at the start of the next line after the parameters.
DEFINITION = re.compile(r'^(?!static\b)(?![ \t#}])[^\n;{}()]*?\b([A-Za-z_]\w*)\(([^;{}]*?)\)\s*'
                        r'(?:__attribute__\(\([^;{]*\)\)\s*)?\n\{', re.M)


def call_graph(files):
    """file -> {file whose functions it names (calls, or takes the address of): the names}."""
    texts = {p: c_text(p) for p in files if p.endswith('.c')}
    defined = {}
    for p, text in texts.items():
        for m in DEFINITION.finditer(text):
            defined.setdefault(m.group(1), set()).add(p)
    graph = {}
    for p, text in texts.items():
        for name in set(re.findall(r'\b[A-Za-z_]\w*\b', text)):
            where = defined.get(name, set())
            if len(where) == 1 and p not in where:
                graph.setdefault(p, {}).setdefault(next(iter(where)), set()).add(name)
    return graph


def circles(graph):
    """The strongly connected sets of more than one node (Tarjan), each a set."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def call_circle_problems(files):
    graph = call_graph(files)
    problems = []
    found = circles(graph)
    for comp in found:
        if comp in KNOWN_CALL_CIRCLES:
            continue
        edges = [f'{a} -> {b} ({", ".join(sorted(graph[a][b])[:3])})'
                 for a in sorted(comp) for b in sorted(graph.get(a, {})) if b in comp]
        problems.append('files call each other in a circle: ' + '; '.join(edges))
    for comp in KNOWN_CALL_CIRCLES:
        if comp not in found:
            problems.append('no longer a circle of calls (take it off KNOWN_CALL_CIRCLES): ' +
                            ', '.join(sorted(comp)))
    return problems, len(found)


def unnamed_in_readme(folder, names):
    """The source files of folder (under SRC) that its README.md does not name."""
    with open(os.path.join(SRC, folder, 'README.md'), encoding='utf-8') as f:
        quoted = re.findall(r'`([^`]+)`', f.read())
    words = {w for q in quoted for w in re.split(r'[\s,]+', q)}
    missing = []
    for name in names:
        base = name[:-2]
        mod = base[:-4] if base.endswith('_int') else base
        if not words & {name, base, mod, mod + '.c', mod + '.h', os.path.join(folder, name)}:
            missing.append(name)
    return missing


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
        for inc in system_includes(path):
            what = FORBIDDEN_SYSTEM.get(folder, {}).get(inc)
            if what:
                problems.append(f'{path}: includes <{inc}>, but {folder}/ knows nothing of '
                                f'{what}')
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
    call_problems, ncircles = call_circle_problems(files)
    problems += call_problems
    for d, _, names in os.walk(SRC):
        if not os.path.exists(os.path.join(d, 'README.md')):
            problems.append(f'{os.path.relpath(d, ROOT)}/ has no README.md')
            continue
        for name in unnamed_in_readme(os.path.relpath(d, SRC),
                                      sorted(n for n in names if n.endswith(('.c', '.h')))):
            problems.append(f'{os.path.relpath(d, ROOT)}/README.md does not name {name}')
    for p in problems:
        print('not ok - ' + p)
    if problems:
        return 1
    calls = f'but the {ncircles} listed' if ncircles else 'between files'
    print(f'ok - layout: {len(files)} files, {len(graph)} modules, folder rules (and the '
          f'system headers each may not use), no circles '
          f'of includes, no circle of calls {calls}, none over {MAX_LINES} lines, every file '
          f'named in its folder\'s README')
    return 0


if __name__ == '__main__':
    sys.exit(main())
