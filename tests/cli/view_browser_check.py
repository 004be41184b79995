#!/usr/bin/env python3
"""Drives `lumen view` in headless Chromium (tests/cli/test_view_browser.sh; issue 44): opens the
page, clicks a voxel on the canvas with real mouse events, reads the plotted series and the
parameter table, picks another map and slice, draws an ROI with the mouse, saves a screenshot.
Prints one JSON object with what the page showed (the shell test checks it against the maps and
lumen fit); exit 2 when the browser cannot be driven. Reuses report_browser_check.py's DevTools pipe.
    view_browser_check.py URL --browser PATH [--screenshot OUT.png] [--voxel X,Y,Z]"""
import argparse
import base64
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report_browser_check import Browser, ProtocolError  # noqa: E402


def ev(br, s, expr, timeout=30):
    r = br.send("Runtime.evaluate", {"expression": expr, "awaitPromise": True, "returnByValue": True}, session=s,
                timeout=timeout)
    if "exceptionDetails" in r:
        raise ProtocolError("script failed: %s" % r["exceptionDetails"].get("exception", {}).get("description", r))
    return r["result"].get("value")


def wait_for(br, s, expr, timeout=20):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if ev(br, s, expr):
            return time.monotonic() - t0
        time.sleep(0.02)
    raise ProtocolError("timed out waiting for %s" % expr)


def click(br, s, x, y, kind="click"):
    for t in (["mousePressed", "mouseReleased"] if kind == "click" else [kind]):
        br.send("Input.dispatchMouseEvent", {"type": t, "x": x, "y": y, "button": "left", "clickCount": 1}, session=s)


def voxel_xy(br, s, x, y):
    """The page coordinates of voxel (x, y)'s centre on the canvas (y up)."""
    return ev(br, s, """(() => { const r = document.getElementById('cv').getBoundingClientRect(), S = window.lumenView;
      return [r.left + (%d + 0.5) * S.scale, r.top + (S.slice.h - 1 - %d + 0.5) * S.scale]; })()""" % (x, y))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--browser", required=True)
    ap.add_argument("--screenshot")
    ap.add_argument("--voxel", default="9,8,1")
    ap.add_argument("--roi", default="6,6,11,11")
    ap.add_argument("--other-map", default="etofts vp", help="the map picked second: 'MODEL PARAM'")
    a = ap.parse_args()
    vx, vy, vz = (int(v) for v in a.voxel.split(","))
    x0, y0, x1, y1 = (int(v) for v in a.roi.split(","))
    out = {}
    with tempfile.TemporaryDirectory(prefix="lumen-view-chromium-", ignore_cleanup_errors=True) as profile:
        br = Browser(a.browser, profile, 60)
        try:
            t = br.send("Target.createTarget", {"url": "about:blank"})
            s = br.send("Target.attachToTarget", {"targetId": t["targetId"], "flatten": True})["sessionId"]
            for dom in ("Page", "Runtime", "Log"):
                br.send(dom + ".enable", session=s)
            br.send("Emulation.setDeviceMetricsOverride", {"width": 1300, "height": 900, "deviceScaleFactor": 1,
                                                           "mobile": False}, session=s)
            t0 = time.monotonic()
            br.send("Page.navigate", {"url": a.url}, session=s)
            wait_for(br, s, "document.body && document.body.dataset.ready === '1'")
            out["ready_s"] = time.monotonic() - t0
            # the slice of the voxel, then a click on it
            ev(br, s, "(() => { const z = document.getElementById('z'); z.value = %d; z.oninput(); })()" % vz)
            wait_for(br, s, "window.lumenView.slice && window.lumenView.slice.z === %d" % vz)
            px, py = voxel_xy(br, s, vx, vy)
            t1 = time.monotonic()
            click(br, s, px, py)
            wait_for(br, s, "!!document.getElementById('ptable')")
            out["click_s"] = time.monotonic() - t1
            out["voxel"] = ev(br, s, "window.lumenView.voxel")
            out["series"] = json.loads(ev(br, s, "document.getElementById('plot').dataset.series"))
            out["table"] = ev(br, s, """Array.from(document.querySelectorAll('#ptable tr[data-model]')).map(r =>
                [r.dataset.model, r.dataset.param, r.cells[2].textContent, r.cells[3].textContent])""")
            if a.screenshot:  # the page as a user sees it after a click: the map, the curves, the table
                png = br.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session=s)
                with open(a.screenshot, "wb") as f:
                    f.write(base64.b64decode(png["data"]))
            # the arrow key moves the voxel
            br.send("Input.dispatchKeyEvent", {"type": "keyDown", "key": "ArrowRight", "code": "ArrowRight",
                                               "windowsVirtualKeyCode": 39}, session=s)
            wait_for(br, s, "window.lumenView.voxel[0] === %d" % (vx + 1))
            out["after_arrow"] = ev(br, s, "window.lumenView.voxel")
            # another map and slice
            label = a.other_map
            tail = "%s_param-%s.nii.gz" % tuple(label.split(" ", 1))
            ev(br, s, """(() => { const m = document.getElementById('map');
                m.value = Array.from(m.options).find(o => o.textContent === %s).value; m.onchange(); })()""" % json.dumps(label))
            wait_for(br, s, "window.lumenView.slice && window.lumenView.slice.map.endsWith(%s)" % json.dumps(tail))
            ev(br, s, "(() => { const z = document.getElementById('z'); z.value = 0; z.oninput(); })()")
            wait_for(br, s, "window.lumenView.slice.z === 0 && window.lumenView.slice.map.endsWith(%s)" % json.dumps(tail))
            out["slice"] = ev(br, s, "({map: window.lumenView.slice.map, z: window.lumenView.slice.z, v: window.lumenView.slice.values.slice(0, 64)})")
            # an ROI drawn with the mouse on slice z of the voxel
            ev(br, s, "(() => { const z = document.getElementById('z'); z.value = %d; z.oninput(); "
                      "document.getElementById('roimode').checked = true; })()" % vz)
            wait_for(br, s, "window.lumenView.slice.z === %d" % vz)
            ax, ay = voxel_xy(br, s, x0, y0)
            bx, by = voxel_xy(br, s, x1, y1)
            t2 = time.monotonic()
            click(br, s, ax, ay, "mousePressed")
            br.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": bx, "y": by, "button": "left"}, session=s)
            br.send("Input.dispatchMouseEvent", {"type": "mouseReleased", "x": bx, "y": by, "button": "left",
                                                 "clickCount": 1}, session=s)
            wait_for(br, s, "!!document.getElementById('rtable')")
            out["roi_s"] = time.monotonic() - t2
            out["roi"] = ev(br, s, "window.lumenView.roi")
            out["errors"] = ev(br, s, "document.getElementById('err').textContent")
        except ProtocolError as e:
            print(json.dumps({"protocol_error": str(e)}))
            return 2
        finally:
            br.close()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
