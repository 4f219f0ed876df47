"""The README's batch example, run as written against the simulator: the catalogue's rows
become named files with the request inside, and the budget it states holds."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from genwidgets.lab.provenance import read_provenance
from genwidgets.simulator import SimulatorServer

pytestmark = pytest.mark.timeout(180)
README = Path(__file__).resolve().parents[2] / "README.md"


def readme_batch_code() -> str:
    section = README.read_text().split("### Batches from data", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    return code.group(1)


def test_the_readme_batch_runs_as_written(
    gateway_env: SimulatorServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "catalogue.csv").write_text(
        "sku,item,seed\nMUG-1,a blue mug,1\nLAMP-2,a brass lamp,2\nBAG-3,a canvas bag,3\n"
        "HAT-4,a straw hat,4\n"
    )
    namespace: dict[str, object] = {}
    exec("import genwidgets as gw\n" + readme_batch_code(), namespace)
    batch = namespace["batch"]
    said = [(r.status, r.error) for r in batch.rows]  # type: ignore[attr-defined]
    assert [status for status, _ in said] == ["done"] * 4, said
    names = sorted(p.name for p in (tmp_path / "shots").glob("*.png"))
    assert names == [
        "BAG-3-a-canvas-bag-product-photo.png",
        "HAT-4-a-straw-hat-product-photo.png",
        "LAMP-2-a-brass-lamp-product-photo.png",
        "MUG-1-a-blue-mug-product-photo.png",
    ]
    made = read_provenance(tmp_path / "shots" / names[3])
    assert made is not None and made["payload"] == {"prompt": "a blue mug, product photo",
                                                    "seed": 1, "n": 1}  # fmt: skip
    assert (tmp_path / "shots" / "manifest.csv").exists()
    stats = httpx.get(f"{gateway_env.base_url}/_sim/stats", timeout=10).json()
    assert stats["created"] == 4
