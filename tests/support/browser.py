"""A storefront on another origin, in a real browser: run inside a network namespace of its own
(`unshare -rn python -m tests.support.browser SITE WORKDIR TARGET...`), it starts nginx on the
generated configuration at 127.0.0.1:8080 and a page of its own at 127.0.0.1:8081, whose script
fetches each TARGET from nginx and writes what it read into the page; headless Chromium loads
the page, and the page as Chromium left it is printed.

The namespace is the test's alone, with only its loopback: the fixed ports cannot be taken by
anyone else, and nothing is picked and released before use."""

from __future__ import annotations

import fcntl
import http.server
import os
import shutil
import socket
import struct
import subprocess
import sys
import threading
from functools import partial
from pathlib import Path

import orjson

from pipeline.export import nginx
from tests.support.servers import nginx_on

NGINX_PORT, PAGE_PORT = 8080, 8081
NGINX_ORIGIN = f"http://127.0.0.1:{NGINX_PORT}"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# As the machine notes have them: no sandbox (a namespace of its own), no GPU, and none of the
# background connections a closed network refuses.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
# Each target's answer as the script read it: status, ETag (readable only where exposed), body.
SCRIPT = """
const out = document.getElementById("out");
Promise.all(TARGETS.map(async (target) => {
  try {
    const r = await fetch(ORIGIN + target);
    return {target, status: r.status, etag: r.headers.get("ETag"), body: await r.text()};
  } catch (e) {
    return {target, error: String(e)};
  }
})).then((read) => { out.textContent = JSON.stringify(read); });
"""


def loopback_up() -> None:
    """Bring `lo` up in this namespace (SIOCSIFFLAGS, as `ip link set lo up` does)."""
    get_flags, set_flags, up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        asked = fcntl.ioctl(sock, get_flags, struct.pack("16sh", b"lo", 0))
        flags = struct.unpack("16sh", asked)[1]
        fcntl.ioctl(sock, set_flags, struct.pack("16sh", b"lo", flags | up))


def storefront(folder: Path, targets: list[str]) -> Path:
    """The storefront's page, in `folder`."""
    script = f"const ORIGIN = {orjson.dumps(NGINX_ORIGIN).decode()};\n"
    script += f"const TARGETS = {orjson.dumps(targets).decode()};\n{SCRIPT}"
    page = folder / "index.html"
    page.write_text(
        f'<!doctype html><html><body><pre id="out">waiting</pre><script>{script}</script>'
        "</body></html>\n"
    )
    return page


def main(site: Path, workdir: Path, targets: list[str]) -> None:
    assert CHROMIUM, "chromium is not installed: run `make system-deps` (or `make test`)"
    loopback_up()
    conf = nginx.render(
        site, f"127.0.0.1:{NGINX_PORT}", f"unix:{workdir / 'nobody.sock'}", cache=workdir / "c"
    )
    (workdir / "site.conf").write_text(conf)
    front = workdir / "front"
    front.mkdir()
    storefront(front, targets)
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(front))
    pages = http.server.ThreadingHTTPServer(("127.0.0.1", PAGE_PORT), handler)
    threading.Thread(target=pages.serve_forever, daemon=True).start()
    with nginx_on(workdir, workdir / "site.conf", NGINX_PORT):
        shown = subprocess.run(
            [
                CHROMIUM,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={workdir / 'profile'}",
                "--virtual-time-budget=10000",
                "--dump-dom",
                f"http://127.0.0.1:{PAGE_PORT}/index.html",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "HOME": str(workdir)},
        )
    pages.shutdown()
    sys.stdout.write(shown.stdout)
    sys.stderr.write(shown.stderr[-4000:])


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:])
