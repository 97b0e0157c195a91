#!/usr/bin/env python3
"""openapi.json against the entity tables claimd renders its JSON from (console/entities.h,
dumped by tests/dump_entities): every field of a table is a required member of the schema the
table names (an optional one, written at times, a member not required), of the field's type
and nullability, and the schema has no member that is
neither a field nor one the table says its renderer adds. A field renamed, added, dropped or
made nullable in one place only fails here.

    check_openapi_entities.py OPENAPI_JSON DUMP_ENTITIES"""

import json
import subprocess
import sys


def deref(doc, node):
    """node with its $ref followed (a local one)."""
    seen = 0
    while isinstance(node, dict) and '$ref' in node and seen < 10:
        ref = node['$ref']
        if not ref.startswith('#/'):
            raise ValueError('a $ref outside the document: ' + ref)
        target = doc
        for part in ref[2:].split('/'):
            target = target[part]
        node, seen = target, seen + 1
    return node


def schema_of(doc, where):
    """The object schema a table names: "Job", or "JobPage.attempt_errors[]"."""
    name, _, member = where.partition('.')
    node = deref(doc, doc['components']['schemas'][name])
    if member:
        array = member.endswith('[]')
        node = deref(doc, node['properties'][member.rstrip('[]')])
        if array:
            node = deref(doc, node['items'])
    return node


def types_of(doc, prop):
    """The JSON types a member may have, and whether null is one; None: any."""
    prop = deref(doc, prop)
    if 'const' in prop or 'enum' in prop:
        values = [prop['const']] if 'const' in prop else prop['enum']
        return {'null' if v is None else 'boolean' if isinstance(v, bool) else
                'integer' if isinstance(v, int) else 'number' if isinstance(v, float) else
                'string' if isinstance(v, str) else 'object' for v in values}
    if 'type' in prop:
        t = prop['type']
        return set(t if isinstance(t, list) else [t])
    for key in ('oneOf', 'anyOf'):
        if key in prop:
            out = set()
            for alt in prop[key]:
                got = types_of(doc, alt)
                if got is None:
                    return None
                out |= got
            return out
    if '$ref' not in prop and not prop.keys() - {'description', 'examples', 'example'}:
        return None
    return {'object'} if 'properties' in prop else None


def main(openapi, dumper):
    with open(openapi, encoding='utf-8') as f:
        doc = json.load(f)
    tables = json.loads(subprocess.run([dumper], check=True, capture_output=True,
                                       text=True).stdout)
    problems, nfields = [], 0
    for t in tables:
        where = t['schema']
        try:
            s = schema_of(doc, where)
        except (KeyError, ValueError) as e:
            problems.append(f'{where}: not in the document ({e})')
            continue
        props, required = s.get('properties', {}), set(s.get('required', []))
        extra = set(filter(None, (t['extra'] or '').split(',')))
        names = {f['name'] for f in t['fields']}
        for f in t['fields']:
            nfields += 1
            n = f['name']
            if n not in props:
                problems.append(f'{where}: the table\'s field {n} is not a member')
                continue
            if n not in required and not f['optional']:
                problems.append(f'{where}.{n}: always written, but not required')
            if n in required and f['optional']:
                problems.append(f'{where}.{n}: required, but written only at times')
            got = types_of(doc, props[n])
            if got is None:
                if f['type'] != 'any':
                    problems.append(f'{where}.{n}: any type in the document, '
                                    f'{f["type"]} in the table')
                continue
            want = {f['type']} if f['type'] != 'any' else got - {'null'}
            if got - {'null'} != want and not (f['type'] == 'integer' and
                                               got - {'null'} == {'integer'}):
                problems.append(f'{where}.{n}: {sorted(got - {"null"})} in the document, '
                                f'{f["type"]} in the table')
            if ('null' in got) != f['nullable']:
                problems.append(f'{where}.{n}: ' + ('may be null in the document, never in the '
                                                    'table' if 'null' in got else
                                                    'may be null in the table, never in the '
                                                    'document'))
        for n in sorted(set(props) - names - extra):
            problems.append(f'{where}.{n}: a member that is no field of the table and not '
                            'one its renderer adds')
        for n in sorted(extra - set(props)):
            problems.append(f'{where}: {n}, which its renderer adds, is not a member')
    if len(tables) < 8 or nfields < 60:
        problems.append(f'read {len(tables)} tables of {nfields} fields: the dump changed form')
    for p in problems:
        print('not ok - ' + p)
    if not problems:
        print(f'ok - openapi.json matches {len(tables)} entity tables, {nfields} fields')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1], sys.argv[2]))
