"""A man page written in Markdown, as scdoc's input: the subset the pages use (headings,
paragraphs, lists, fenced code, tables, `code`, **bold**, *emphasis*, links; images are left
out), so that a page's
reference text is written once, readable on a forge as it is and installed as a man page.

The page's first line is scdoc's title line as it is (`claimd-table(5) "claimd @VERSION@"
"File Formats Manual"`). `#` is a section, `##` and deeper a subsection. A table becomes a
list of terms: the first cell the term, the others its text (a middle cell as "header:
value."). Raises ValueError on what it does not take (an HTML tag, a nested table)."""

import re

SPECIAL = re.compile(r'([\\*_])')


def esc(text):
    return SPECIAL.sub(r'\\\1', text)


INLINE = re.compile(r'`([^`]+)`|\*\*(.+?)\*\*|\*([^*\s][^*]*?)\*|\[([^\]]+)\]\(([^)]+)\)')


def inline(text):
    """Markdown's inline markup as scdoc's: code and bold as bold, emphasis underlined, a link
    as its text (an address outside the page after it)."""
    out, pos = [], 0
    for m in INLINE.finditer(text):
        out.append(esc(text[pos:m.start()]))
        code, bold, em, label, href = m.groups()
        if code is not None:
            out.append('*' + esc(code) + '*')
        elif bold is not None:
            out.append('*' + inline(bold).replace('*', '') + '*')
        elif em is not None:
            out.append('_' + esc(em) + '_')
        else:
            out.append(inline(label))
            if not href.startswith('#'):
                out.append(' (' + esc(href) + ')')
        pos = m.end()
    out.append(esc(text[pos:]))
    return ''.join(out)


def cells(line):
    line = line.strip()
    if line.startswith('|'):
        line = line[1:]
    if line.endswith('|') and not line.endswith('\\|'):
        line = line[:-1]
    return [c.strip().replace('\\|', '|') for c in re.split(r'(?<!\\)\|', line)]


def table(rows):
    head, body = cells(rows[0]), [cells(r) for r in rows[2:]]
    out = []
    for r in body:
        if len(r) != len(head):
            raise ValueError('a table row with %d cells under %d headers: %s'
                             % (len(r), len(head), ' | '.join(r)))
        out.append(inline(r[0]))
        text = ['%s: %s.' % (esc(h), inline(c)) for h, c in zip(head[1:-1], r[1:-1])
                if c and c not in ('-', '—')]
        text.append(inline(r[-1]))
        out.append('\t' + ' '.join(text))
        out.append('')
    return out


def convert(md):
    lines = md.split('\n')
    if not re.match(r'^\S+\(\d\) ', lines[0]):
        raise ValueError('the first line is not a title line: %r' % lines[0])
    out, i = [lines[0], ''], 1
    para = []

    def flush():
        if para:
            out.append(inline(' '.join(para)))
            out.append('')
            para.clear()

    while i < len(lines):
        line = lines[i]
        if re.match(r'^\s*<[a-zA-Z/!]', line):
            raise ValueError('HTML is not taken: %r' % line)
        if line.startswith('```'):
            flush()
            out.append('```')
            i += 1
            while i < len(lines) and not lines[i].startswith('```'):
                out.append(lines[i].replace('\\', '\\\\'))
                i += 1
            out.append('```')
            out.append('')
            i += 1
            continue
        m = re.match(r'^(#+) (.*)$', line)
        if m:
            flush()
            title = inline(m.group(2).strip())
            out.append('# ' + title.upper() if len(m.group(1)) == 1 else '## ' + title)
            out.append('')
            i += 1
            continue
        if line.startswith('|'):
            flush()
            rows = []
            while i < len(lines) and lines[i].startswith('|'):
                rows.append(lines[i])
                i += 1
            if len(rows) < 2 or not re.match(r'^\|[\s:|-]+\|?$', rows[1]):
                raise ValueError('a table without its header line: %r' % rows[0])
            out.extend(table(rows))
            continue
        m = re.match(r'^(\s*)([-*]|\d+\.) (.*)$', line)
        if m:
            flush()
            indent, text = m.group(1), [m.group(3)]
            i += 1
            while i < len(lines) and lines[i].startswith(indent + '  ') and \
                    not re.match(r'^\s*([-*]|\d+\.) ', lines[i]):
                text.append(lines[i].strip())
                i += 1
            mark = '-' if m.group(2) in '-*' else '.'
            out.append(indent + mark + ' ' + inline(' '.join(text)))
            if i >= len(lines) or not re.match(r'^\s*([-*]|\d+\.) ', lines[i]):
                out.append('')
            continue
        if not line.strip():
            flush()
            i += 1
            continue
        if re.match(r'^!\[[^\]]*\]\([^)]*\)$', line.strip()):
            i += 1      # an image: a man page has none
            continue
        para.append(line.strip())
        i += 1
    flush()
    return '\n'.join(out).rstrip('\n') + '\n'
