#!/usr/bin/env python3
"""Functions longer than a limit (issue 16 item 8): a definition starts at column 0 with a name and
'(' and ends at the first '}' in column 0. Usage: long_functions.py [LIMIT] [ROOT]; prints
"lines  file:line  name", longest first."""
import os, re, sys

START = re.compile(r'^(?:[A-Za-z_][\w\s\*]*?[\s\*])?([A-Za-z_]\w*)\s*\([^;]*$')


def main(limit, root):
    found = []
    for top in ('src', 'python', 'matlab'):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for n in names:
                if not n.endswith(('.c', '.cu', '.inc', '.cpp', '.cc')):
                    continue
                path = os.path.join(dirpath, n)
                lines = open(path, encoding='utf-8', errors='replace').read().split('\n')
                start = name = None
                for i, line in enumerate(lines):
                    if start is None:
                        m = START.match(line)
                        if m and not line.startswith(('static const', 'typedef', '#', ' ', '\t', '/', '}')) \
                                and m.group(1) not in ('if', 'for', 'while', 'switch', 'return'):
                            start, name = i, m.group(1)
                    elif line.startswith('}'):
                        if i - start + 1 > limit:
                            found.append((i - start + 1, os.path.relpath(path, root), start + 1, name))
                        start = None
                    elif line and not line[0].isspace() and START.match(line) and '{' in line and not line.startswith('}'):
                        start, name = i, START.match(line).group(1)  # a one-line prototype was taken
    for n, path, line, name in sorted(found, reverse=True):
        print('%5d  %s:%d  %s' % (n, path, line, name))
    print('%d functions over %d lines' % (len(found), limit))


if __name__ == '__main__':
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 120, sys.argv[2] if len(sys.argv) > 2 else '.')
