"""`make golden`: rebuild the shipped sample and store its pages as the golden files.

tests/golden/manifest.json holds the hash of every published file (so every page is compared
byte for byte); the pages listed in FULL_PAGES are also stored whole, so that a failure shows
the difference itself. Review `git diff tests/golden` before committing regenerated files.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from pipeline.build import build
from pipeline.export.pages.bulk import SOURCE_DATE_EPOCH
from pipeline.settings import load_settings
from tests.support.inputs import ROOT, SAMPLE

GOLDEN = ROOT / "tests" / "golden"
# The build time every test build (and `make golden`) states in the bulk files' index
# (SOURCE_DATE_EPOCH): 2026-01-01T00:00:00Z, so that the same input gives the same site.
BUILT_AT = 1767225600


def pin_build_time() -> None:
    """Every build from here on states BUILT_AT as its time."""
    os.environ[SOURCE_DATE_EPOCH] = str(BUILT_AT)


FULL_PAGES = (
    "v1.39.0/catalog/categories/index.json",
    "v1.39.0/help/openapi.json",
    "v1.39.0/stores/tiny7/inventory/products/index.json",
    "v1.39.0/stores/mom-and-pop/inventory/products/index.json",
    "v1.39.0/stores/mom-and-pop/inventory/products/offset=30.json",
    "v1.39.0/stores/tokyo-cards_01/inventory/products/index.json",
    "v1.39.0/stores/3d05ef67/inventory/products/channelId=1.json",
    "v1.39.0/stores/3d05ef67/inventory/products/categoryId=3.json",
    "v1.39.0/stores/a1b2c3d4/inventory/products/groupId=1001&offset=10.json",
    "v1.39.0/stores/card-cellar/inventory/products/channelId=1.json",
    "v1.39.0/stores/3d05ef67/inventory/categories/index.json",
    "v1.39.0/stores/3d05ef67/inventory/groups/channelId=1.json",
    "v1.39.0/catalog/categories/1/groups/index.json",
    "v1.39.0/catalog/categories/3/printings/index.json",
    "v1.39.0/catalog/conditions/index.json",
    "v1.39.0/pricing/group/1001/index.json",
)


def build_sample(output: Path) -> Path:
    build(load_settings(None, input=SAMPLE, output=output))
    return output


def main() -> None:
    pin_build_time()
    with tempfile.TemporaryDirectory() as tmp:
        output = build_sample(Path(tmp) / "out")
        if GOLDEN.exists():
            shutil.rmtree(GOLDEN)
        GOLDEN.mkdir(parents=True)
        shutil.copyfile(output / "manifest.json", GOLDEN / "manifest.json")
        for page in FULL_PAGES:
            target = GOLDEN / "site" / page
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(output / "site" / page, target)
    print(f"golden files written to {GOLDEN.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
