#!/usr/bin/env python3
"""Check a numabal HTML report in headless Chromium: every figure present, drawn, legible.

1. Read the report: each <figure data-figure=NAME> must hold an inline <svg> with drawing
   in it (lines, rectangles or circles), and (with --svg-dir) the same NAME.svg file.
2. Load a copy with a probe script in Chromium (--dump-dom): the page's height, each
   figure's SVG box in page pixels and the smallest text in it as laid out (px at 100%
   zoom: the font size times the figure's scale), which must be at least 12 px.
3. Screenshot the report itself (no script) at that height, 1000 px wide, scale 1.
4. Decode the PNG (zlib, PNG row filters: standard library only) and, inside each box,
   count pixels that are not background and pixels in a series colour (not grey): a drawn
   figure has both. Prints one row per figure; exits 1 if any check fails.
"""
import argparse
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import zlib

WIDTH = 1000
MIN_TEXT_PX = 12
CHROME = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
          "--force-device-scale-factor=1", "--disable-dev-shm-usage"]

PROBE = """<script>
const boxes = [];
document.querySelectorAll('figure[data-figure]').forEach(f => {
  const s = f.querySelector('svg');
  const r = (s || f).getBoundingClientRect();
  const scale = s && s.viewBox.baseVal && s.viewBox.baseVal.width
    ? r.width / s.viewBox.baseVal.width : 1;
  let small = 1000;
  (s ? s.querySelectorAll('text') : []).forEach(t => {
    small = Math.min(small, parseFloat(getComputedStyle(t).fontSize) * scale);
  });
  boxes.push([f.dataset.figure, Math.round(r.left + scrollX), Math.round(r.top + scrollY),
              Math.round(r.width), Math.round(r.height), !!s, Math.round(small * 10) / 10]);
});
document.body.setAttribute('data-boxes', JSON.stringify(boxes));
document.body.setAttribute('data-height', document.documentElement.scrollHeight);
</script>
"""


def png_pixels(path):
    """(width, height, rows of RGB tuples) of an 8-bit RGB or RGBA PNG."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6), f"PNG depth {depth} colour type {ctype}"
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("html")
    ap.add_argument("--svg-dir")
    ap.add_argument("--shot", default=None)
    a = ap.parse_args()
    html = open(a.html, encoding="utf-8").read()
    failed = []

    names = re.findall(r'<figure id="([^"]+)" data-figure="[^"]+">', html)
    if not names:
        failed.append("no figures in the report")
    for n in names:
        body = html.split(f'data-figure="{n}">', 1)[1].split("</figure>", 1)[0]
        marks = len(re.findall(r"<(polyline|path|rect|circle|line)\b", body))
        if "<svg" not in body or marks < 5:
            failed.append(f"{n}: no inline SVG with drawing ({marks} marks)")
        if a.svg_dir and not os.path.getsize(os.path.join(a.svg_dir, n + ".svg")) > 1000:
            failed.append(f"{n}: {n}.svg missing or empty in {a.svg_dir}")
    for bad in ("http://", "https://", "<script", "<link", "@import", "src="):
        if bad in html.replace('xmlns="http://www.w3.org/2000/svg"', ""):
            failed.append(f"not self-contained: the report has {bad!r}")

    with tempfile.TemporaryDirectory() as tmp:
        probe = os.path.join(tmp, "probe.html")
        open(probe, "w", encoding="utf-8").write(html.replace("</body>", PROBE + "</body>"))
        dom = subprocess.run(CHROME + [f"--window-size={WIDTH},1000", "--dump-dom",
                                       "file://" + os.path.abspath(probe)],
                             capture_output=True, text=True, timeout=120).stdout
        m = re.search(r'data-boxes="([^"]*)"', dom)
        hm = re.search(r'data-height="(\d+)"', dom)
        if not m or not hm:
            print("check_report: Chromium did not run the probe; its output began:", dom[:300])
            return 1
        boxes = json.loads(m.group(1).replace("&quot;", '"'))
        height = int(hm.group(1))
        shot = a.shot or os.path.join(tmp, "shot.png")
        subprocess.run(CHROME + [f"--window-size={WIDTH},{height}", f"--screenshot={shot}",
                                 "file://" + os.path.abspath(a.html)],
                       capture_output=True, timeout=120, check=True)
        w, h, bpp, rows = png_pixels(shot)

    print(f"check_report: {a.html}: {len(names)} figures; Chromium page {WIDTH}x{height}, "
          f"screenshot {w}x{h}")
    print(f"{'figure':<24} {'box (x, y, w, h)':<26} {'drawn %':>8} {'colour px':>10} "
          f"{'text px':>8}")
    seen = [b[0] for b in boxes]
    if seen != names:
        failed.append(f"Chromium laid out figures {seen}, the report has {names}")
    for name, x, y, bw, bh, has_svg, small in boxes:
        if not has_svg or bw < 100 or bh < 100:
            failed.append(f"{name}: laid out {bw}x{bh} px (svg: {has_svg})")
            continue
        if x < 0 or y < 0 or x + bw > w or y + bh > h:
            failed.append(f"{name}: box {x},{y} {bw}x{bh} outside the {w}x{h} screenshot")
            continue
        ink = colour = total = 0
        for yy in range(y, y + bh):
            row = rows[yy]
            for xx in range(x, x + bw):
                r, g, b = row[xx * bpp:xx * bpp + 3]
                total += 1
                if min(r, g, b) < 230:
                    ink += 1
                if max(r, g, b) - min(r, g, b) > 60:
                    colour += 1
        pct = 100.0 * ink / max(total, 1)
        print(f"{name:<24} {f'{x}, {y}, {bw}, {bh}':<26} {pct:8.2f} {colour:10d} {small:8.1f}")
        if pct < 1.0 or colour < 50:
            failed.append(f"{name}: looks empty ({pct:.2f}% drawn, {colour} coloured pixels)")
        if small < MIN_TEXT_PX:
            failed.append(f"{name}: text of {small} px (at least {MIN_TEXT_PX} px at 100% zoom)")
    for f in failed:
        print("FAIL:", f)
    if not failed:
        print(f"PASS: all {len(names)} figures of the report are present, drawn and their text "
              f"at least {MIN_TEXT_PX} px")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
