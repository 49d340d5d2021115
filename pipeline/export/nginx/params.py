"""How the generated nginx configuration reads a query string as the API does: which query
strings a file may answer, and each parameter's piece of a page's name. What nginx cannot read
as the API would goes to the live upstream."""

from __future__ import annotations

from dataclasses import fields
from urllib.parse import quote

from pipeline.api.operations import STORE_OPERATIONS
from pipeline.api.params import (
    BOOLS,
    CATEGORY_PARAMETERS,
    DEFAULTS,
    INT_RANGES,
    PAGING,
    PARAMETER_NAMES,
    InventoryParams,
)
from pipeline.export.nginx.syntax import quoted

# The maps that name a page of the catalog's materialised operations: a category's groups by
# their paging, the others `index` for any query string the API reads (they take none).
PAGED, PLAIN = "pg", "nq"
# The parameters each operation defines, in the canonical order of its pages' names. The
# store's lists (categories, groups) share one map: the parameters of either (a parameter only
# the other defines names no file, and goes to the upstream).
INVENTORY, CATEGORIES = PARAMETER_NAMES, CATEGORY_PARAMETERS
LISTS = tuple(
    n
    for n in (f.name for f in fields(InventoryParams))
    if any(n in op.parameters for op in STORE_OPERATIONS if op.materialised)
)

# A pair's name that may be a parameter's only as written (no escape, no byte past ASCII: Python
# decodes and lower-cases names, nginx's $arg_ does neither), and a value that is UTF-8 once
# decoded (the API refuses a query string that is not, whatever the parameter).
_NAME_CHAR = r"[^&=%\x80-\xff]"
_C = "%[89ab][0-9a-f]"  # an escaped UTF-8 continuation byte
_VALUE_CHAR = (  # a character, as UTF-8 escaped byte by byte or written as it is
    rf"(?:[^&%\x80-\xff]|%[0-7][0-9a-f]|%c[2-9a-f]{_C}|%d[0-9a-f]{_C}|%e0%[ab][0-9a-f]{_C}"
    rf"|%e[1-9abcef]{_C}{_C}|%ed%[89][0-9a-f]{_C}|%f0%[9ab][0-9a-f]{_C}{_C}"
    rf"|%f[1-3]{_C}{_C}{_C}|%f4%8[0-9a-f]{_C}{_C})"
)
_SPACE, _BLANK = r"(?:\+|%20)", r"(?:\+|%20|%09|%0a|%0b|%0c|%0d)"  # sort: see params._parse_sort


def args_pattern(names: tuple[str, ...]) -> str:
    """A query string nginx can read as the API does, for an operation of these parameters:
    each of them given a value (an empty one is a 400 for most), and any other pair ignored
    whatever it holds (`store_key=`, `sortOrder=` added by a client library), as the API
    ignores it. Matched without case."""
    if not names:  # an operation of no parameters: any pair ignored
        pair = f"(?:{_NAME_CHAR}*(?:={_VALUE_CHAR}*)?)"
        return f"^{pair}(?:&{pair})*$"
    known = "(?:" + "|".join(n.lower() for n in names) + ")"
    pair = f"(?:{known}={_VALUE_CHAR}+|(?!{known}(?:[=&]|$)){_NAME_CHAR}*(?:={_VALUE_CHAR}*)?)"
    return f"^{pair}(?:&{pair})*$"


def value_map(name: str) -> str:
    """`$inv_<name>`: the canonical `name=value&` piece of `$arg_<name>` (the first such
    parameter, as the API takes), "" when absent or the default, and `!` for a value nginx
    cannot write canonically (it goes to the live upstream, which answers it or says why not)."""
    arg, default = name.lower(), getattr(DEFAULTS, name)
    lines = [f"map $arg_{arg} $inv_{arg} {{", '    default "!";', '    "" "";']
    if name in INT_RANGES:  # plain digits, as many as always fit the type; zeros folded
        capture = f"{arg}_v"
        if default is not None:
            lines.append(f'    {quoted(f"~^0*{default}$")} "";')
        digits = len(str(INT_RANGES[name][1])) - 1
        pattern = f"~^0*(?<{capture}>[0-9]{{1,{digits}}})$"
        lines.append(f"    {quoted(pattern)} {quoted(f'{name}=${capture}&')};")
    elif name in BOOLS:
        for value in (True, False):
            piece = "" if value == default else f"{name}={str(value).lower()}&"
            lines.append(f"    {quoted(f'~*^{str(value).lower()}$')} {quoted(piece)};")
    elif name == "sort":
        for field, aliases in (("price", "price|minprice"), ("name", "name|productname")):
            for direction in ("asc", "desc"):
                said = f"{_SPACE}+desc" if direction == "desc" else f"(?:{_SPACE}+asc)?"
                canonical = f"{field} {direction}"
                piece = "" if canonical == default else f"{name}={quote(canonical, safe='')}&"
                pattern = f"~*^{_BLANK}*(?:{aliases}){said}{_BLANK}*$"
                lines.append(f"    {quoted(pattern)} {quoted(piece)};")
    lines.append("}")
    return "\n".join(lines)


def _page_maps(prefix: str, names: tuple[str, ...], note: str = "") -> tuple[str, str]:
    """The two maps of an operation answered from pages named by these parameters:
    `$<prefix>_static`, 1 when nginx reads the query string as the API does, and
    `$<prefix>_page`, the page's name from each parameter's canonical piece (`index` for none;
    `-`, no file, when a value has no canonical piece or the query string is not read)."""
    pieces = "".join(f"$inv_{n.lower()}" for n in names)
    static = (
        f"map $args ${prefix}_static {{\n"
        "    default 0;\n"
        f'    "" 1;{note}\n'
        f"    {quoted('~*' + args_pattern(names))} 1;\n"
        "}"
    )
    page = (
        f'map "${prefix}_static:{pieces}" ${prefix}_page {{\n'
        '    default "-";\n'
        '    "1:" "index";\n'
        f'    "~^1:(?<{prefix}_q>[^!]*)&$" "${prefix}_q";\n'
        "}"
    )
    return static, page


def query_maps() -> str:
    """The maps from a query string to a page's name: the inventory's, the categories' and the
    store's lists', over one map per parameter (`params.value_map`)."""
    inv_static, inv_page = _page_maps(
        "inv", INVENTORY, "  # regular expressions are not tried on an empty value"
    )
    cat_static, cat_page = _page_maps("cat", CATEGORIES)
    list_static, list_page = _page_maps("list", LISTS)
    paged_static, paged_page = _page_maps(PAGED, PAGING)
    plain_static, plain_page = _page_maps(PLAIN, ())
    values = "\n".join(value_map(n) for n in dict.fromkeys((*INVENTORY, *CATEGORIES, *LISTS)))
    return f"""\
# 1 when nginx reads the query string as the API does: the operation's parameters by name
# (`$arg_`), any other pair ignored. Each parameter's value, canonical or `!`, then names the
# file; a name with a `!` is no file, and the request goes to the live upstream.
{inv_static}
{cat_static}
{values}
{inv_page}
{cat_page}
# The store's materialised lists (categories, groups): the channel and the paging.
{list_static}
{list_page}
# The catalog's materialised operations: a category's groups (the paging), the others (none).
{paged_static}
{paged_page}
{plain_static}
{plain_page}
"""


# The live answers' cache key (`headers.live_cache`): what decides an answer, so that a
# parameter the API ignores, whatever its value, shares the entry of the request without it.
LIVE_KEY = "$key_path?$key_query"


def live_key_maps() -> str:
    """The maps of `LIVE_KEY`: the path as the request sent it, then each parameter the API
    reads (a field of `InventoryParams`), as it reads it: its name in any case, the first of
    repeated ones, an empty value (`limit=`, `limit`) apart from an absent one, its value as
    sent; every other pair left out. A query string whose names nginx cannot read as the API
    does (an escape, a byte past ASCII) or whose values are not UTF-8 is its own key, whole."""
    names = [f.name for f in fields(InventoryParams)]
    values = "".join(
        f"map $args $key_{n.lower()} {{\n"
        '    default "";\n'
        f"    {quoted(f'~*(?:^|&){n.lower()}(?:=(?<key_{n.lower()}_v>[^&]*))?(?:&|$)')} "
        f"{quoted(f'{n}=$key_{n.lower()}_v&')};\n"
        "}\n"
        for n in names
    )
    pieces = "".join(f"$key_{n.lower()}" for n in names)
    return (
        "# The live answers' cache key: the path as sent and the parameters the API reads, as\n"
        "# it reads them (any other pair left out); a query string it cannot read so, whole.\n"
        'map $request_uri $key_path {\n    "~^(?<key_p>[^?]*)" $key_p;\n}\n'
        "map $args $key_readable {\n"
        "    default 0;\n"
        '    "" 1;\n'
        f"    {quoted('~*' + args_pattern(()))} 1;\n"
        "}\n"
        f"{values}"
        "map $key_readable $key_query {\n"
        '    default "!$args";\n'
        f"    1 {quoted(pieces)};\n"
        "}\n"
    )
