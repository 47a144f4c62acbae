"""A page opened in headless Chromium (Debian's ``chromium`` package): its layout width and a screenshot.

The page is copied beside itself with a probe script appended, so its relative
links (charts under ``topics/``) resolve as in the original; Chromium's
``--dump-dom`` then prints the DOM with what the probe measured on ``load``:
the document's scroll width against the window's width, the milliseconds
from navigation start to the end of the load event's handlers, and the table
cells narrower than their longest word (its content sticks out, ``scrollWidth >
clientWidth``, or a word is wider than the cell's content box, which is what a
browser allowed to break words anywhere does instead of sticking out).
"""
from __future__ import annotations

import html
import json
import re
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Dict, Optional

__all__ = ["chromium", "measure_page", "screenshot"]

_PROBE = """<script>
window.addEventListener("load", function () {
  var d = document.documentElement, wide = [];
  document.querySelectorAll("body *").forEach(function (e) {
    if (e.getBoundingClientRect().right > d.clientWidth + 1 && wide.length < 5) { wide.push(e.tagName); }
  });
  // A cell narrower than its longest word: the word sticks out (scrollWidth > clientWidth), or, where CSS
  // lets the browser break words anywhere, the word is split, which scrollWidth alone does not show; so each
  // word (a run between spaces, hyphens and <wbr>s, which are a text's own break points) is measured too.
  var cells = document.querySelectorAll("td, th"), narrow = [];
  cells.forEach(function (c) {
    var st = getComputedStyle(c), room = c.clientWidth - parseFloat(st.paddingLeft) - parseFloat(st.paddingRight);
    var longest = 0, word = "";
    var walk = document.createTreeWalker(c, NodeFilter.SHOW_TEXT), node;
    while ((node = walk.nextNode())) {
      var re = /[^\\s-]+-?/g, m;
      while ((m = re.exec(node.data))) {
        var r = document.createRange();
        r.setStart(node, m.index);
        r.setEnd(node, m.index + m[0].length);
        var w = 0;
        Array.prototype.forEach.call(r.getClientRects(), function (q) { w += q.width; });
        if (w > longest) { longest = w; word = m[0]; }
      }
    }
    if (c.scrollWidth > c.clientWidth || longest > room + 0.5) {
      narrow.push([word, Math.ceil(longest), Math.floor(room), c.scrollWidth, c.clientWidth]);
    }
  });
  document.body.setAttribute("data-probe", JSON.stringify(
    {scroll: d.scrollWidth, client: d.clientWidth, ms: performance.now(), wide: wide,
     cells: cells.length, narrow: narrow.slice(0, 10), narrow_count: narrow.length}));
});
</script>"""
_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
          "--disable-dev-shm-usage", "--window-size=1280,900"]


def chromium() -> Optional[str]:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def measure_page(page: Path, timeout_s: float = 120.0) -> Dict:
    """``{"scroll", "client", "ms", "wide", "cells", "narrow", "narrow_count"}`` of ``page`` opened at 1280 px;
    ``narrow`` holds up to ten cells narrower than their longest word as [word, its width, the cell's content
    width, scrollWidth, clientWidth]."""
    probe = page.with_name(f".probe-{page.name}")
    text = page.read_text()
    probe.write_text(text.replace("</body>", _PROBE + "</body>") if "</body>" in text else text + _PROBE)
    try:
        out = subprocess.run([chromium(), *_FLAGS, "--virtual-time-budget=30000", "--dump-dom", probe.as_uri()],
                             capture_output=True, text=True, timeout=timeout_s)
    finally:
        probe.unlink()
    m = re.search(r'data-probe="([^"]*)"', out.stdout)
    if m is None:
        raise AssertionError(f"chromium printed no probe (exit {out.returncode}): {out.stderr[-2000:]}")
    return json.loads(html.unescape(m.group(1)))


def screenshot(page: Path, to: Path, timeout_s: float = 120.0) -> tuple:
    """Render ``page`` at 1280 px into the PNG ``to``; returns its (width, height)."""
    subprocess.run([chromium(), *_FLAGS, f"--screenshot={to}", page.as_uri()], capture_output=True,
                   timeout=timeout_s, check=False)
    data = to.read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise AssertionError(f"{to}: not a PNG")
    return struct.unpack(">II", data[16:24])
