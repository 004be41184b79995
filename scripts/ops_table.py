#!/usr/bin/env python3
"""Prints the markdown table of the image operations of the C op registry (include/lumen/ops.h,
src/filter/op_table.c) for docs/FILTERS.md (--kind filter,statistic) and docs/SEGMENTATION.md
(--kind segment): one row per op (name, aliases, doc) and its options with default and range.

  LUMEN_LIBRARY=build/liblumen.so PYTHONPATH=python python3 scripts/ops_table.py --kind segment
  ... --check docs/SEGMENTATION.md   exits 1 when the table between the markers differs

The docs hold the table between '<!-- ops-table KIND -->' and '<!-- /ops-table -->' lines.
"""
import argparse
import sys

import lumen


def table(kinds):
    # no CUDA column: it depends on the build (lumen filter --help marks the ops without a kernel)
    lines = ["| op | also | what | options: default (range) |", "|---|---|---|---|"]
    for op in lumen.op_registry():
        if op["kind"] not in kinds:
            continue
        opts = "<br>".join("`%s` %s (%s)" % (o["name"], o["default"], o["range"]) for o in op["options"]) or "-"
        lines.append("| `%s` | %s | %s | %s |" % (op["name"], ", ".join(op["aliases"]) or "-",
                                                 op["doc"].replace("|", "\\|"), opts.replace("|", "\\|")))
    return "\n".join(lines) + "\n"


def embedded(path, tag):
    text = open(path).read()
    start = "<!-- ops-table %s -->\n" % tag
    i = text.index(start) + len(start)
    return text[i:text.index("<!-- /ops-table -->", i)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kind", default="filter,statistic")
    ap.add_argument("--check", metavar="DOC", help="compare with the table embedded in DOC")
    a = ap.parse_args()
    t = table(a.kind.split(","))
    if a.check:
        if embedded(a.check, a.kind) != t:
            sys.stderr.write("%s: the ops table differs from scripts/ops_table.py --kind %s (regenerate it)\n"
                             % (a.check, a.kind))
            return 1
        return 0
    sys.stdout.write(t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
