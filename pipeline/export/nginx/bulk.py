"""The nginx location of the bulk files (docs/serving.md, "Bulk files"): each from its file,
with its content type (`api.responses.CONTENT_TYPES`); a name no file has is the 404 of
`location /` (`URL not found.`), as in front of a bucket. No bulk file is answered live."""

from __future__ import annotations

import re
from collections.abc import Callable

from pipeline.api.responses import CONTENT_TYPES
from pipeline.api.urls import BULK_DIR, BULK_NAMES
from pipeline.export.nginx.syntax import regex_location

NOT_FOUND = "/.errors/404"  # no location of its own: `location /` answers it


def bulk_location(only_get: str, serve: Callable[[str, str], str]) -> str:
    """The location: the file named by the path (a trailing slash allowed, as everywhere)."""
    types = {end.lstrip("."): kind.partition(";")[0] for end, kind in CONTENT_TYPES.items()}
    charset_types = sorted(
        {kind.partition(";")[0] for kind in CONTENT_TYPES.values() if ";" in kind}
    )
    listed = " ".join(f"{kind} {end};" for end, kind in types.items())
    return (
        f"{regex_location(f'^/{re.escape(BULK_DIR)}/(?<bulk_file>{BULK_NAMES})/?$')}\n"
        f"{only_get}"
        f"        types {{ {listed} }}\n"
        f"        charset_types {' '.join(charset_types)};\n"
        f"{serve(f'/{BULK_DIR}/$bulk_file', NOT_FOUND)}    }}"
    )
