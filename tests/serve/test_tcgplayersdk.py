"""A public client reads the shipped sample unchanged: `tcgplayersdk`
0.1.2, the one client with a category model, lists the sample's categories from
`pipeline serve` with its own `get_categories` (its model needs `isDirect` and a `modifiedOn`
on every category, as the live service sends them).

The package is installed by uv, at pinned versions, into a throwaway folder; without the
package index (an offline machine), the test is skipped with the reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import reference
from tests.support.clients import client_installed, run_client

PACKAGES = ("tcgplayersdk==0.1.2", "marshmallow==3.26.2", "marshmallow-dataclass==8.7.1")

# Run with the package on the path: the SDK's own call, against the preview server. The token
# request is the live service's business; a valid identity is set instead.
SCRIPT = """
import dataclasses, json, sys
from datetime import datetime, timedelta, timezone
from tcgplayersdk import sdk
from tcgplayersdk.schemas.identity import Identity

sdk.TCGPLAYER_API_URL = sys.argv[1]
client = sdk.TCGPlayerSDK("public", "private")
now = datetime.now(timezone.utc)
client._identity = Identity("token", "bearer", 3600, "user", now, now + timedelta(hours=1))
read = {
    order: [dataclasses.asdict(c) for c in client.get_categories(*order.split()).results]
    for order in ("name False", "popularity True")
}
print(json.dumps(read))
"""


@pytest.fixture(scope="module")
def sdk_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return client_installed(tmp_path_factory, PACKAGES)


@pytest.mark.slow
def test_tcgplayersdk_reads_the_sample_category_listing(
    sdk_path: Path, serve_port: int, sample_data: reference.Data
) -> None:
    read = json.loads(
        run_client(sdk_path, SCRIPT, f"http://127.0.0.1:{serve_port}/v1.39.0", timeout=60)
    )
    sample = sample_data.categories
    by_name = sorted(sample, key=lambda c: (sample[c]["name"].lower(), c))
    assert [c["category_id"] for c in read["name False"]] == by_name
    by_popularity = [c["category_id"] for c in read["popularity True"]]
    assert sorted(by_popularity) == sorted(sample) and by_popularity != by_name
    assert all(c["modified_on"] and isinstance(c["is_direct"], bool) for c in read["name False"])
