"""Counts of a pytest JUnit XML report: collected passed failed skipped errors (used by
run_medical_image_suite.sh)."""
import sys
import xml.etree.ElementTree as ET


def counts(path):
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root)
    c = {"collected": 0, "passed": 0, "failed": 0, "skipped": 0, "errors": 0}
    for s in suites:
        for case in s.iter("testcase"):
            c["collected"] += 1
            tags = {child.tag for child in case}
            if "failure" in tags:
                c["failed"] += 1
            elif "error" in tags:
                c["errors"] += 1
            elif "skipped" in tags:
                c["skipped"] += 1
            else:
                c["passed"] += 1
    return c


if __name__ == "__main__":
    c = counts(sys.argv[2])
    print("%-9s collected %d: passed %d, failed %d, skipped %d, errors %d" % (
        sys.argv[1], c["collected"], c["passed"], c["failed"], c["skipped"], c["errors"]))
