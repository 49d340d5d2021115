"""A storefront on another origin, in a real browser: run inside a network namespace of its own
(`unshare -rn python -m tests.support.browser OUTPUT WORKDIR ASKS`), it starts `pipeline serve`
on the build at OUTPUT (the port it takes), nginx on the generated configuration at
127.0.0.1:8080 in front of it, and a page of its own at 127.0.0.1:8081, whose script makes each
request of ASKS (JSON: a server, `nginx` or `serve`, a target, headers, and maybe the earlier
answer whose ETag it names in If-None-Match) and writes what it read into the page; headless
Chromium loads the page, and the page as Chromium left it is printed.

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
from typing import Any

import orjson

from pipeline.export import nginx
from tests.support.servers import nginx_on, preview_server

NGINX_PORT, PAGE_PORT = 8080, 8081
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
# Each request's answer as the script read it: status, the headers a page can read only where
# they are exposed, body; or the error that kept the script from reading it (a preflight
# refused: `TypeError: Failed to fetch`).
SCRIPT = """
const out = document.getElementById("out");
(async () => {
  const read = [];
  for (const ask of ASKS) {
    const headers = {...ask.headers};
    if (ask.etagOf !== undefined) headers["If-None-Match"] = read[ask.etagOf].etag;
    try {
      const r = await fetch(ORIGINS[ask.server] + ask.target, {headers, cache: "no-store"});
      read.push({...ask, status: r.status, etag: r.headers.get("ETag"),
                 range: r.headers.get("Content-Range"), ranges: r.headers.get("Accept-Ranges"),
                 body: await r.text()});
    } catch (e) {
      read.push({...ask, error: String(e)});
    }
  }
  out.textContent = JSON.stringify(read);
})();
"""


def loopback_up() -> None:
    """Bring `lo` up in this namespace (SIOCSIFFLAGS, as `ip link set lo up` does)."""
    get_flags, set_flags, up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        asked = fcntl.ioctl(sock, get_flags, struct.pack("16sh", b"lo", 0))
        flags = struct.unpack("16sh", asked)[1]
        fcntl.ioctl(sock, set_flags, struct.pack("16sh", b"lo", flags | up))


def storefront(folder: Path, origins: dict[str, str], asks: list[dict[str, Any]]) -> Path:
    """The storefront's page, in `folder`."""
    script = f"const ORIGINS = {orjson.dumps(origins).decode()};\n"
    script += f"const ASKS = {orjson.dumps(asks).decode()};\n{SCRIPT}"
    page = folder / "index.html"
    page.write_text(
        f'<!doctype html><html><body><pre id="out">waiting</pre><script>{script}</script>'
        "</body></html>\n"
    )
    return page


def main(output: Path, workdir: Path, asks: list[dict[str, Any]]) -> None:
    assert CHROMIUM, "chromium is not installed: run `make system-deps` (or `make test`)"
    loopback_up()
    with preview_server(output) as serve_port:
        conf = nginx.render(
            output / "site",
            f"127.0.0.1:{NGINX_PORT}",
            f"127.0.0.1:{serve_port}",
            cache=workdir / "c",
        )
        (workdir / "site.conf").write_text(conf)
        front = workdir / "front"
        front.mkdir()
        origins = {
            "nginx": f"http://127.0.0.1:{NGINX_PORT}",
            "serve": f"http://127.0.0.1:{serve_port}",
        }
        storefront(front, origins, asks)
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
    main(Path(sys.argv[1]), Path(sys.argv[2]), orjson.loads(sys.argv[3]))
