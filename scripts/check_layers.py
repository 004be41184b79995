#!/usr/bin/env python3
"""The layering of src/ (docs/ARCHITECTURE.md), checked on the #include lines: a file of a layer
includes public headers (lumen/...), build headers and files of its own or a lower layer, never a
higher one. Usage: check_layers.py [SOURCE_DIR]; prints one line per violation, exit 1 if any.

Layers, low to high (a folder may include its own rank and below):
  0 include/lumen        the public API (includes only lumen/ and system headers)
  1 core, models, solver context/status/images; the model math (written once, LUMEN_HD); the
                         Levenberg-Marquardt solver and the per-curve start driver (templates
                         compiled by cpu, cuda and fit)
  2 io, cpu              file formats; the CPU solver kernels
  3 fit, filter, segment, diag
                         fit plans and backends' interfaces, image operations, segmentation,
                         health checks: they declare the interfaces their backends implement
                         (fit/fit_cuda.h, filter/filter_cuda.h)
  4 cuda                 the CUDA backend: implements fit's and filter's backend interfaces
  5 pipeline             lumen dce / t1 (stages, run log, report)
  6 scale, view          shards, MPI, batches (drive the pipeline); the viewer of a run's outputs
                         (reads what the pipeline wrote, with its string builder)
  7 cli                  the command line (front end: parses, prints, calls the library)
"""
import os, re, sys

RANK = {'core': 1, 'models': 1, 'solver': 1, 'io': 2, 'cpu': 2, 'fit': 3, 'filter': 3, 'segment': 3, 'diag': 3,
        'cuda': 4, 'pipeline': 5, 'scale': 6, 'view': 6, 'cli': 7}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(path):
    parts = path.split(os.sep)
    return parts[1] if parts[0] == 'src' and len(parts) > 2 else None


def main(root):
    bad, files = [], 0
    for top in ('src', os.path.join('include', 'lumen')):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not name.endswith(('.c', '.h', '.cu', '.cuh', '.inc', '.cc', '.cpp')):
                    continue
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, root)
                files += 1
                text = open(full, encoding='utf-8', errors='replace').read()
                mine = layer_of(rel)
                for inc in INCLUDE.findall(text):
                    target = inc.split('/')[0] if '/' in inc else None
                    if rel.startswith(os.path.join('include', 'lumen')):
                        if target not in (None, 'lumen'):
                            bad.append('%s: a public header includes "%s"' % (rel, inc))
                        continue
                    if mine is None or target in (None, 'lumen') or target == mine:
                        continue
                    if target not in RANK:
                        bad.append('%s: includes "%s" of no known layer' % (rel, inc))
                    elif mine not in RANK:
                        bad.append('%s: folder src/%s has no layer in scripts/check_layers.py' % (rel, mine))
                    elif RANK[target] > RANK[mine]:
                        bad.append('%s (layer %d %s) includes "%s" (layer %d %s): a lower layer includes a higher one'
                                   % (rel, RANK[mine], mine, inc, RANK[target], target))
    for b in bad:
        print('FAIL: ' + b)
    print('%s: %d files, %d layering violations' % ('ok' if not bad else 'FAIL', files, len(bad)))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..')))
