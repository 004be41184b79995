#!/usr/bin/env python3
"""File-level dependency cycles among lumen's object files (issue 16 item 6): reads the symbols
each object defines and uses (nm), links A -> B when A uses a symbol B defines, and prints every
cycle (strongly connected component of more than one file). Usage: file_cycles.py BUILD_DIR;
exit 1 when there is a cycle."""
import os, subprocess, sys
from collections import defaultdict


def objects(build):
    found = {}
    for dirpath, _, names in os.walk(os.path.join(build, 'CMakeFiles')):
        for n in names:
            if n.endswith('.o') and '/src/' in dirpath + '/':
                src = os.path.join(dirpath, n)[:-2]
                rel = src[src.index('/src/') + 1:]
                found.setdefault(rel, os.path.join(dirpath, n))  # one object per source file
    return found


def symbols(obj):
    out = subprocess.run(['nm', '-P', obj], capture_output=True, text=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        p = line.split()
        if len(p) < 2:
            continue
        (used if p[1] == 'U' else defined if p[1] in 'TDBRVWG' else set()).add(p[0])
    return defined, used


def sccs(graph):
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)
    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def main(build):
    objs = objects(build)
    owner, uses = {}, {}
    for src, obj in objs.items():
        d, u = symbols(obj)
        uses[src] = u
        for s in d:
            owner.setdefault(s, src)
    graph = defaultdict(set)
    for src in objs:
        graph[src]
        for s in uses[src]:
            if s in owner and owner[s] != src:
                graph[src].add(owner[s])
    cycles = [sorted(c) for c in sccs(graph) if len(c) > 1]
    for c in sorted(cycles):
        print('cycle (%d files): %s' % (len(c), ' '.join(c)))
    print('%d object files, %d cycles' % (len(objs), len(cycles)))
    return 1 if cycles else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1]))
