#!/usr/bin/env python3
"""Renders a lumen report.html in headless Chromium and checks it (issue 17, item 11).

usage: report_browser_check.py REPORT.html [--screenshot OUT.png] [--browser PATH] [--timeout S]

Talks the Chrome DevTools Protocol over --remote-debugging-pipe (the browser reads commands
from its fd 3 and writes replies and events to its fd 4, JSON messages ending in a NUL byte);
standard library only. Checks, after the load event:
  - there is at least one <img> and every <img> loaded (complete and naturalWidth > 0);
  - every <svg> has a non-zero rendered size (getBoundingClientRect); none is allowed;
  - no uncaught exception (Runtime.exceptionThrown), no console.error / console.assert
    (Runtime.consoleAPICalled) and no log entry of level "error" (Log.entryAdded: failed
    resource loads such as a missing image), no crashed renderer, no failed navigation.
Saves a full-page PNG screenshot when --screenshot is given.
Prints one line per finding ("FAIL: ...") and a summary line ("ok: ...").
Exit status: 0 the page passed, 1 findings, 2 the check itself could not run (no browser,
the browser failed to start or crashed, a timeout, a usage error).
"""
import argparse
import base64
import fcntl
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

MAX_SHOT_HEIGHT = 16384  # px; a longer page is cut there (Chromium's texture limit)

# Collects what the page shows; awaits images that are still loading (e.g. loading="lazy"
# below the fold: made eager first), at most 20 s, and the fonts.
CHECK_JS = r"""
(async () => {
  const imgs = Array.from(document.images);
  const pending = imgs.filter(i => !i.complete);
  for (const i of pending) { if (i.loading === 'lazy') i.loading = 'eager'; }
  await Promise.race([
    Promise.all(pending.map(i => new Promise(r => {
      if (i.complete) return r();
      i.addEventListener('load', r, {once: true});
      i.addEventListener('error', r, {once: true});
    }))),
    new Promise(r => setTimeout(r, 20000))]);
  if (document.fonts && document.fonts.ready) await document.fonts.ready;
  const describe = e => {
    let s = e.tagName.toLowerCase();
    if (e.id) s += '#' + e.id;
    if (typeof e.className === 'string' && e.className) s += '.' + e.className.trim().split(/\s+/).join('.');
    else if (e.className && e.className.baseVal) s += '.' + e.className.baseVal.trim().split(/\s+/).join('.');
    const label = e.getAttribute('aria-label') || (e.querySelector && e.querySelector('title') ?
      e.querySelector('title').textContent : '');
    if (label) s += ' "' + label.trim().slice(0, 60) + '"';
    return s;
  };
  return {
    title: document.title,
    readyState: document.readyState,
    imgs: imgs.map((i, k) => ({index: k, src: i.getAttribute('src') || '', complete: i.complete,
                               w: i.naturalWidth, h: i.naturalHeight})),
    svgs: Array.from(document.querySelectorAll('svg')).map((s, k) => {
      const r = s.getBoundingClientRect();
      return {index: k, what: describe(s), w: r.width, h: r.height};
    }),
  };
})()
"""


class ProtocolError(Exception):
    """The check could not run (exit status 2)."""


class Browser:
    def __init__(self, exe, profile, timeout):
        self.timeout = timeout
        self.next_id = 0
        self.events = []  # (sessionId, method, params) in arrival order
        self.q = queue.Queue()
        self.stderr = tempfile.TemporaryFile()
        to_r, to_w = os.pipe()      # we write commands -> browser fd 3
        from_r, from_w = os.pipe()  # browser fd 4 -> we read
        # Copies at fd >= 10 so that bash's "3<&A 4>&B" cannot clobber one with the other (dash
        # takes only one-digit descriptors, hence bash).
        a = fcntl.fcntl(to_r, fcntl.F_DUPFD_CLOEXEC, 10)
        b = fcntl.fcntl(from_w, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(to_r)
        os.close(from_w)
        args = [exe,
                '--headless=new', '--remote-debugging-pipe', '--no-sandbox', '--disable-gpu',
                '--no-first-run', '--no-default-browser-check', '--user-data-dir=' + profile,
                '--disable-dev-shm-usage',  # containers often have a small /dev/shm
                '--disable-extensions', '--disable-background-networking',
                '--disable-component-update', '--disable-sync', '--disable-default-apps',
                '--mute-audio', '--hide-scrollbars', '--window-size=1280,900',
                'about:blank']
        self.proc = subprocess.Popen(
            [shutil.which('bash') or '/bin/bash', '-c',
             'exec "$@" 3<&%d 4>&%d %d<&- %d>&-' % (a, b, a, b), 'bash'] + args,
            stdin=subprocess.DEVNULL, stdout=self.stderr, stderr=self.stderr,
            pass_fds=(a, b), start_new_session=True)
        os.close(a)
        os.close(b)
        self.w = to_w
        self.r = from_r
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        parts = []  # the message being received (a screenshot is megabytes)
        while True:
            try:
                chunk = os.read(self.r, 1 << 20)
            except OSError:
                chunk = b''
            if not chunk:
                self.q.put(None)
                return
            *done, rest = chunk.split(b'\0')
            for piece in done:
                msg = b''.join(parts) + piece
                parts = []
                try:
                    self.q.put(json.loads(msg))
                except ValueError:
                    self.q.put({'_bad': msg[:200]})
            if rest:
                parts.append(rest)

    def stderr_tail(self, n=1500):
        try:
            self.stderr.seek(0)
            data = self.stderr.read().decode('utf-8', 'replace')
        except OSError:
            return ''
        return data[-n:]

    def _pump(self, deadline):
        """Takes one message; False when the deadline passed. Raises when the browser is gone."""
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        try:
            msg = self.q.get(timeout=left)
        except queue.Empty:
            return None
        if msg is None:
            try:
                rc = self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                rc = 'none yet: still running'
            raise ProtocolError('the browser closed the DevTools pipe (exit status %s); its output:\n%s'
                                % (rc, self.stderr_tail()))
        if '_bad' in msg:
            raise ProtocolError('unparsable DevTools message: %r' % msg['_bad'])
        if 'method' in msg:
            self.events.append((msg.get('sessionId'), msg['method'], msg.get('params', {})))
        return msg

    def send(self, method, params=None, session=None, timeout=None):
        self.next_id += 1
        mid = self.next_id
        msg = {'id': mid, 'method': method, 'params': params or {}}
        if session:
            msg['sessionId'] = session
        try:
            os.write(self.w, json.dumps(msg).encode() + b'\0')
        except OSError as e:
            raise ProtocolError('cannot write to the browser (%s); its output:\n%s'
                                % (e, self.stderr_tail()))
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            m = self._pump(deadline)
            if m is None:
                raise ProtocolError('no reply to %s within %g s' % (method, timeout or self.timeout))
            if m.get('id') == mid:
                if 'error' in m:
                    raise ProtocolError('%s failed: %s' % (method, m['error'].get('message', m['error'])))
                return m.get('result', {})

    def wait_event(self, method, session, timeout):
        """Waits for an event (also one already received); False on timeout."""
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for s, meth, _ in self.events[seen:]:
                if meth == method and s == session:
                    return True
            seen = len(self.events)
            if self._pump(deadline) is None:
                return False

    def drain(self, seconds):
        deadline = time.monotonic() + seconds
        while self._pump(deadline) is not None:
            pass

    def close(self):
        if self.proc.poll() is None:
            try:
                os.write(self.w, json.dumps({'id': 999999, 'method': 'Browser.close'}).encode() + b'\0')
            except OSError:
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)  # our own session: the browser's processes
            except OSError:
                pass
            self.proc.wait()
        for fd in (self.w, self.r):
            try:
                os.close(fd)
            except OSError:
                pass


def fmt_remote(args):
    out = []
    for a in args:
        if 'value' in a:
            out.append(str(a['value']))
        elif 'description' in a:
            out.append(a['description'])
        else:
            out.append(a.get('type', '?'))
    return ' '.join(out)


def check(path, shot, exe, timeout):
    """Returns (findings, notes)."""
    url = 'file://' + os.path.abspath(path)
    findings, notes = [], []
    with tempfile.TemporaryDirectory(prefix='lumen-chromium-', ignore_cleanup_errors=True) as profile:
        br = Browser(exe, profile, timeout)
        try:
            t = br.send('Target.createTarget', {'url': 'about:blank'})
            s = br.send('Target.attachToTarget', {'targetId': t['targetId'], 'flatten': True})['sessionId']
            for dom in ('Page', 'Runtime', 'Log', 'Inspector'):
                br.send(dom + '.enable', session=s)
            nav = br.send('Page.navigate', {'url': url}, session=s)
            if nav.get('errorText'):
                findings.append('navigation to %s failed: %s' % (url, nav['errorText']))
            elif not br.wait_event('Page.loadEventFired', s, timeout):
                findings.append('no load event within %g s (the page hangs)' % timeout)
            res = br.send('Runtime.evaluate', {'expression': CHECK_JS, 'awaitPromise': True,
                                               'returnByValue': True}, session=s, timeout=timeout)
            if 'exceptionDetails' in res:
                raise ProtocolError('the check script failed: %s'
                                    % res['exceptionDetails'].get('exception', {}).get('description', res))
            page = res['result']['value']
            br.drain(0.5)  # late console/log events
            imgs, svgs = page['imgs'], page['svgs']
            if not imgs:
                findings.append('no <img> in the page')
            for i in imgs:
                if not (i['complete'] and i['w'] > 0):
                    findings.append('<img> #%d src="%s" did not load (complete=%s, naturalWidth=%d)'
                                    % (i['index'], i['src'], str(i['complete']).lower(), i['w']))
            for v in svgs:
                if not (v['w'] > 0 and v['h'] > 0):
                    findings.append('<svg> #%d %s has a zero rendered size (%gx%g)'
                                    % (v['index'], v['what'], v['w'], v['h']))
            notes.append('title "%s", %d <img> (%d loaded), %d <svg> (%d with a non-zero size)'
                         % (page['title'], len(imgs), sum(1 for i in imgs if i['complete'] and i['w'] > 0),
                            len(svgs), sum(1 for v in svgs if v['w'] > 0 and v['h'] > 0)))
            if shot:
                m = br.send('Page.getLayoutMetrics', session=s)
                size = m.get('cssContentSize') or m['contentSize']
                w = max(1, int(size['width'] + 0.999))
                h = max(1, int(size['height'] + 0.999))
                if h > MAX_SHOT_HEIGHT:
                    notes.append('page is %d px high; the screenshot stops at %d' % (h, MAX_SHOT_HEIGHT))
                    h = MAX_SHOT_HEIGHT
                png = br.send('Page.captureScreenshot', {
                    'format': 'png', 'captureBeyondViewport': True,
                    'clip': {'x': 0, 'y': 0, 'width': w, 'height': h, 'scale': 1}}, session=s)
                os.makedirs(os.path.dirname(os.path.abspath(shot)), exist_ok=True)
                with open(shot, 'wb') as f:
                    f.write(base64.b64decode(png['data']))
                notes.append('screenshot %s (%dx%d)' % (os.path.abspath(shot), w, h))
            br.drain(0.1)
        finally:
            br.close()
        for sess, method, p in br.events:
            if sess != s:
                continue
            if method == 'Runtime.exceptionThrown':
                d = p.get('exceptionDetails', {})
                desc = d.get('exception', {}).get('description') or d.get('text', '')
                line = d.get('lineNumber')
                findings.append('uncaught exception: %s (%s:%s)' % (desc.splitlines()[0] if desc else '?',
                                                                   d.get('url', ''),
                                                                   line + 1 if line is not None else '?'))
            elif method == 'Runtime.consoleAPICalled' and p.get('type') in ('error', 'assert'):
                findings.append('console.%s: %s' % (p['type'], fmt_remote(p.get('args', []))))
            elif method == 'Log.entryAdded' and p.get('entry', {}).get('level') == 'error':
                e = p['entry']
                findings.append('console error (%s): %s%s' % (e.get('source', '?'), e.get('text', ''),
                                                              ' [%s]' % e['url'] if e.get('url') else ''))
            elif method == 'Inspector.targetCrashed':
                raise ProtocolError('the renderer crashed')
    return findings, notes


def find_browser():
    for name in ('chromium', 'chromium-browser'):
        p = shutil.which(name)
        if p:
            return p
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('report')
    ap.add_argument('--screenshot', help='write a full-page PNG here')
    ap.add_argument('--browser', help='chromium executable (default: chromium, chromium-browser on PATH)')
    ap.add_argument('--timeout', type=float, default=60.0, help='seconds to wait for the page (default 60)')
    a = ap.parse_args()
    exe = a.browser or find_browser()
    if not exe:
        print('ERROR: no chromium / chromium-browser on PATH', file=sys.stderr)
        return 2
    if not os.path.isfile(a.report):
        print('ERROR: %s: no such file' % a.report, file=sys.stderr)
        return 2
    try:
        findings, notes = check(a.report, a.screenshot, exe, a.timeout)
    except ProtocolError as e:
        print('ERROR: %s: %s' % (a.report, e), file=sys.stderr)
        return 2
    for f in findings:
        print('FAIL: %s: %s' % (a.report, f))
    for n in notes:
        print('ok: %s: %s' % (a.report, n) if not findings else 'note: %s: %s' % (a.report, n))
    return 1 if findings else 0


if __name__ == '__main__':
    sys.exit(main())
