"""Per-test outcomes of medical-image-std 0.8.2's suite, the original against lumen.medical_image,
from the two pytest JUnit XML reports of run_medical_image_suite.sh, as Markdown tables:

    mis_suite_compare.py ORIGINAL.xml LUMEN.xml [--all]

prints the totals, the per-file counts and the tests whose outcome differs (--all: every test).
Exit status 1 when a test that passes against the original does not pass against lumen."""
import sys
import xml.etree.ElementTree as ET


def outcomes(path, messages=None):
    """{(file, test id): "passed" | "failed" | "error" | "skipped"} in the report's order;
    messages (a dict) gets the first line of each non-pass's message."""
    root = ET.parse(path).getroot()
    res = {}
    for case in root.iter("testcase"):
        tags = {child.tag: child for child in case}
        state = ("failed" if "failure" in tags else "error" if "error" in tags
                 else "skipped" if "skipped" in tags else "passed")
        module, _, cls = case.get("classname", "").partition(".")
        name = "%s::%s" % (cls, case.get("name")) if cls else case.get("name")
        res[(module + ".py", name)] = state
        if messages is not None and state != "passed":
            el = tags.get({"failed": "failure", "error": "error"}.get(state, "skipped"))
            msg = (el.get("message") or el.text or "").strip().splitlines()
            messages[(module + ".py", name)] = (msg[0] if msg else "")[:110].replace("|", "/")
    return res


def _counts(states):
    return "%d-%d-%d" % (sum(s == "passed" for s in states), sum(s in ("failed", "error") for s in states),
                         sum(s == "skipped" for s in states))


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    omsg, lmsg = {}, {}
    orig, lum = outcomes(argv[1], omsg), outcomes(argv[2], lmsg)
    keys = list(orig) + [k for k in lum if k not in orig]
    print("| run against | collected | passed | failed | skipped |\n|---|---|---|---|---|")
    for label, res in (("the original `medical_image` 0.8.2", orig), ("`lumen.medical_image`", lum)):
        s = list(res.values())
        print("| %s | %d | %d | %d | %d |" % (label, len(s), s.count("passed"),
                                             sum(x in ("failed", "error") for x in s), s.count("skipped")))
    print("\n| file | original (passed-failed-skipped) | lumen |\n|---|---|---|")
    for f in sorted({k[0] for k in keys}):
        print("| %s | %s | %s |" % (f, _counts([v for k, v in orig.items() if k[0] == f]),
                                   _counts([v for k, v in lum.items() if k[0] == f])))
    rows = [k for k in keys if "--all" in argv or orig.get(k) != lum.get(k)]
    print("\n| test | original | lumen |\n|---|---|---|")
    for k in rows:
        print("| `%s::%s` | %s | %s |" % (k[0], k[1], orig.get(k, "absent"), lum.get(k, "absent")))
    if not rows:
        print("| (none: every test has the same outcome) | | |")
    print("\n| failing on either side | original | lumen | message (lumen's, else the original's) |\n|---|---|---|---|")
    for k in keys:
        if "failed" in (orig.get(k), lum.get(k)) or "error" in (orig.get(k), lum.get(k)):
            print("| `%s::%s` | %s | %s | %s |" % (k[0], k[1], orig.get(k), lum.get(k), lmsg.get(k, omsg.get(k, ""))))
    skips = {}
    for k in keys:
        if orig.get(k) == "skipped" or lum.get(k) == "skipped":
            key = (k[0], orig.get(k), lum.get(k), lmsg.get(k) or omsg.get(k, ""))
            skips[key] = skips.get(key, 0) + 1
    print("\n| skipped (file) | tests | original | lumen | reason (the suite's) |\n|---|---|---|---|---|")
    for (f, o, l, why), n in skips.items():
        print("| %s | %d | %s | %s | %s |" % (f, n, o, l, why))
    regressions = [k for k in keys if orig.get(k) == "passed" and lum.get(k) != "passed"]
    for k in regressions:
        sys.stderr.write("passes on the original, not on lumen: %s::%s\n" % k)
    return 1 if regressions else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
