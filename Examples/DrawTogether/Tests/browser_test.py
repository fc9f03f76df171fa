#!/usr/bin/env python3
"""DrawTogether in real browsers: headless Chromium pages on DrawTogether processes that share a Huddle session.

  python3 Examples/DrawTogether/Tests/browser_test.py [--output DIR] [--binary PATH]

1. ana hosts, ben joins with ana's ticket; a page on each.
2. ana draws a stroke with the mouse: it appears on ben's page in ana's colour, every point.
3. ana drops an image on her canvas (a real `drop` event): it appears on ben's page at the same place.
4. ana leaves (SIGTERM); cy joins late with ben's ticket: cy's page shows ana's stroke (sent by ben, the WWDC
   catch-up) and her image (from the journal: ana is gone and never sent it again).
Screenshots of every page are written to DIR (default Examples/DrawTogether/.build/browser-test).

Installs what is missing: Debian's chromium and chromium-driver (apt, as root) and Selenium (pip). Where they cannot
be installed it says so and exits 0 without testing (the only skip). Exits 1 on any failed check.
"""
import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.dirname(HERE)

def make_png(size=48):
    """A small PNG (red, with a white cross) built here, so the screenshot shows where the image landed."""
    import base64
    import struct
    import zlib

    rows = b""
    for y in range(size):
        row = bytearray([0])  # filter: none
        for x in range(size):
            cross = abs(x - y) < 3 or abs(x + y - size + 1) < 3
            row += bytes([255, 255, 255] if cross else [220, 30, 40])
        rows += bytes(row)

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
    return base64.b64encode(png).decode()


PNG_BASE64 = make_png()


def ensure_tools():
    """Returns (chromium, chromedriver) paths, installing them when missing; None when they cannot be had."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver") or ("/usr/bin/chromedriver" if os.path.exists("/usr/bin/chromedriver") else None)
    if not (chromium and driver):
        if os.geteuid() != 0 or not shutil.which("apt-get"):
            print("browser test skipped: chromium and chromium-driver are missing and cannot be installed here "
                  "(needs root and apt-get)")
            return None
        print("installing chromium and chromium-driver (apt-get)...", flush=True)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "update", "-qq"], env=env, check=False, stdout=subprocess.DEVNULL)
        result = subprocess.run(["apt-get", "install", "-y", "-qq", "chromium", "chromium-driver"], env=env,
                                stdout=subprocess.DEVNULL)
        if result.returncode != 0:
            print("browser test skipped: apt-get could not install chromium and chromium-driver")
            return None
        chromium = shutil.which("chromium")
        driver = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    try:
        import selenium  # noqa: F401
    except ImportError:
        print("installing selenium (pip)...", flush=True)
        result = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "selenium"])
        if result.returncode != 0:
            print("browser test skipped: pip could not install selenium")
            return None
    return chromium, driver


class App:
    """One DrawTogether process and the `ready` line it printed."""

    def __init__(self, binary, name, arguments):
        self.name = name
        self.process = subprocess.Popen(
            [binary, "--name", name, "--port", "0"] + arguments,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"{name} exited before it was ready: {self.process.stderr.read()}")
        ready = json.loads(line)
        self.url, self.ticket = ready["url"], ready["ticket"]

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--output", default=os.path.join(PACKAGE, ".build", "browser-test"))
    parser.add_argument("--binary", default=None)
    parser.add_argument("--update-screenshot", action="store_true",
                        help="copy the side-by-side screenshot to Examples/DrawTogether/screenshot.png")
    options = parser.parse_args()
    tools = ensure_tools()
    if tools is None:
        return 0
    chromium, chromedriver = tools
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    binary = options.binary
    if binary is None:
        subprocess.run(["swift", "build", "--package-path", PACKAGE, "--product", "DrawTogether"], check=True)
        bin_path = subprocess.run(["swift", "build", "--package-path", PACKAGE, "--show-bin-path"], check=True,
                                  capture_output=True, text=True).stdout.strip()
        binary = os.path.join(bin_path, "DrawTogether")
    os.makedirs(options.output, exist_ok=True)

    failures = []

    def check(condition, what):
        print(("ok    " if condition else "FAIL  ") + what, flush=True)
        if not condition:
            failures.append(what)

    def browser(size="1060,640"):
        chrome = webdriver.ChromeOptions()
        chrome.binary_location = chromium
        for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", f"--window-size={size}",
                         "--disable-gpu"]:
            chrome.add_argument(argument)
        return webdriver.Chrome(service=Service(executable_path=chromedriver), options=chrome)

    def state(page, expression):
        return page.execute_script(f"return {expression};")

    def wait_for(page, expression, what, seconds=20):
        deadline = time.time() + seconds
        while time.time() < deadline:
            if state(page, expression):
                check(True, what)
                return True
            time.sleep(0.1)
        check(False, f"{what} (waited {seconds} s for `{expression}`)")
        return False

    apps, pages = [], []
    try:
        ana = App(binary, "ana", ["--host"])
        apps.append(ana)
        ben = App(binary, "ben", ["--join", ana.ticket])
        apps.append(ben)
        page_a, page_b = browser(), browser()
        pages += [page_a, page_b]
        page_a.get(ana.url)
        page_b.get(ben.url)
        for page, who in [(page_a, "ana"), (page_b, "ben")]:
            wait_for(page, "window.canvasState.connected && window.canvasState.people.length === 2",
                     f"{who}'s page shows two participants")

        # ana draws a wave: press, move in steps, release, as a person would (offsets from the canvas centre).
        def draw(page, points):
            canvas = page.find_element(By.ID, "canvas")
            actions = ActionChains(page).move_to_element_with_offset(canvas, *points[0]).click_and_hold()
            for (x0, y0), (x1, y1) in zip(points, points[1:]):
                actions = actions.move_by_offset(x1 - x0, y1 - y0)
            actions.release().perform()

        draw(page_a, [(-330 + 12 * step, -150 + round(60 * math.sin(step / 3))) for step in range(40)])
        wait_for(page_a, "window.canvasState.order.length === 1", "ana's page has her stroke")
        drawn = state(page_a, "window.canvasState.strokes[window.canvasState.order[0]]")
        wait_for(page_b, f"window.canvasState.strokes['{drawn['id']}'] && "
                         f"window.canvasState.strokes['{drawn['id']}'].points.length === {len(drawn['points'])}",
                 "ben's page has ana's stroke, every point")
        seen = state(page_b, f"window.canvasState.strokes['{drawn['id']}']")
        check(seen is not None and seen["points"] == drawn["points"], "the stroke's points are the same on both")
        check(seen is not None and seen["color"] == state(page_a, "window.canvasState.me.color"),
              "the stroke is in ana's colour on ben's page")
        # ben draws a circle: it reaches ana the same way.
        draw(page_b, [(150 + round(90 * math.cos(step / 5)), -100 + round(90 * math.sin(step / 5)))
                      for step in range(33)])
        wait_for(page_a, "window.canvasState.order.length === 2 && "
                         "window.canvasState.strokes[window.canvasState.order[1]].points.length === 33",
                 "ana's page has ben's stroke, every point")

        # ana drops an image on her canvas: the page's own drop handler with a real DataTransfer.
        page_a.execute_script("""
            const bytes = Uint8Array.from(atob(arguments[0]), (c) => c.charCodeAt(0));
            const file = new File([bytes], 'cross.png', { type: 'image/png' });
            const transfer = new DataTransfer();
            transfer.items.add(file);
            const box = document.getElementById('canvas').getBoundingClientRect();
            document.getElementById('canvas').dispatchEvent(new DragEvent('drop', {
                dataTransfer: transfer, clientX: box.left + 500, clientY: box.top + 300, bubbles: true }));
        """, PNG_BASE64)
        wait_for(page_b, "Object.keys(window.canvasState.images).length === 1", "ben's page shows ana's image")
        image = state(page_b, "Object.values(window.canvasState.images)[0]")
        check(image is not None and round(image["point"]["x"]) == 500 and round(image["point"]["y"]) == 300,
              "the image is where ana dropped it")
        check(image is not None and image["data"] == PNG_BASE64, "the image's bytes arrived intact")
        page_a.save_screenshot(os.path.join(options.output, "ana.png"))
        page_b.save_screenshot(os.path.join(options.output, "ben.png"))
        # Both pages side by side, as two windows on one screen would show them (README's picture): the two
        # screenshots on one local page, photographed by the browser itself.
        side_by_side = browser(size="2140,780")
        pages.append(side_by_side)
        with open(os.path.join(options.output, "together.html"), "w") as html:
            html.write('<body style="margin:0;padding:8px;background:#d8d8d8;white-space:nowrap">'
                       '<img src="ana.png" style="margin-right:8px;border:1px solid #999">'
                       '<img src="ben.png" style="border:1px solid #999"></body>')
        side_by_side.get("file://" + os.path.abspath(os.path.join(options.output, "together.html")))
        time.sleep(0.5)
        side_by_side.save_screenshot(os.path.join(options.output, "together.png"))
        if options.update_screenshot:
            shutil.copy(os.path.join(options.output, "together.png"), os.path.join(PACKAGE, "screenshot.png"))

        # ana leaves; cy joins late through ben.
        ana.stop()
        wait_for(page_b, "window.canvasState.people.length === 1", "ben's page shows ana gone", seconds=15)
        cy = App(binary, "cy", ["--join", ben.ticket])
        apps.append(cy)
        page_c = browser()
        pages.append(page_c)
        page_c.get(cy.url)
        wait_for(page_c, f"window.canvasState.strokes['{drawn['id']}'] && "
                         f"window.canvasState.strokes['{drawn['id']}'].points.length === {len(drawn['points'])}",
                 "cy, joining late, gets ana's stroke from ben")
        wait_for(page_c, "Object.keys(window.canvasState.images).length === 1",
                 "cy gets ana's image from the journal after ana left")
        time.sleep(0.5)
        page_c.save_screenshot(os.path.join(options.output, "cy.png"))
        print(f"screenshots in {options.output}")
    finally:
        for page in pages:
            page.quit()
        for app in apps:
            app.stop()
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("browser test passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
