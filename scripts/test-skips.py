#!/usr/bin/env python3
"""Prints why each skipped test skipped (make test's summary; issue 39 item 11): ctest lists a skip
as "***Skipped" without its reason unless run with -V. Reads the JUnit file ctest wrote
(--output-junit) and prints, per skipped test, the line of its output that says why (the first
line holding "skip", else its last line).
    python3 scripts/test-skips.py BUILD/junit.xml"""
import sys
import xml.etree.ElementTree as ET


def reason(text):
    lines = [l.strip() for l in (text or "").splitlines() if l.strip()]
    for l in lines:
        if "skip" in l.lower():
            return l
    return lines[-1] if lines else "(no output)"


def main(path):
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        print("test-skips: cannot read %s: %s" % (path, e))
        return 0
    skipped = []
    for case in root.iter("testcase"):
        if case.find("skipped") is not None:
            out = case.find("system-out")
            skipped.append((case.get("name"), reason(out.text if out is not None else "")))
    if skipped:
        print("%d test%s skipped, and why:" % (len(skipped), "" if len(skipped) == 1 else "s"))
        width = max(len(n) for n, _ in skipped)
        for name, why in skipped:
            print("  %-*s  %s" % (width, name, why))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "build/junit.xml"))
