#!/usr/bin/env python3
"""Writes src/view/view_page.c, the C string of src/view/view_page.html (the page of lumen view):
edit the HTML, then run this script (the C file is committed, so a build needs no Python).
    python3 scripts/make_view_page.py"""
import os

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
src = os.path.join(HERE, "src", "view", "view_page.html")
html = open(src).read().rstrip("\n")
lines = ['"' + l.replace("\\", "\\\\").replace('"', '\\"') + '\\n"' for l in html.split("\n")]
c = ("/* The page of `lumen view` (view_http.h): plain HTML and JavaScript written here, no library and\n"
     "   no network access; it asks the server for the run's maps, a voxel's curves and an ROI's\n"
     "   statistics (view_data.h). Model curves come from the C library (lumen_fit_plan_eval on the\n"
     "   server), never from JavaScript. GENERATED from view_page.html by scripts/make_view_page.py. */\n"
     "#include \"view/view_http.h\"\n\nconst char lumen_view_page[] =\n" + "\n".join(lines) + ";\n")
open(os.path.join(HERE, "src", "view", "view_page.c"), "w").write(c)
