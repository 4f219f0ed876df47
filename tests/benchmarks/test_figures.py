"""The headline keys are a contract: the README's benchmark table quotes only keys the
JSON line has. No benchmark runs here."""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.figures import JSON_KEYS  # noqa: E402

TABLE_INTRO = "What the figures of `python benchmarks/run.py` mean"


def _quoted_keys(readme: str) -> list[str]:
    """The backquoted names in the first column of the README's benchmark table."""
    section = readme.split(TABLE_INTRO, 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return [key for row in rows for key in re.findall(r"`([^`]+)`", row.split("|")[1])]


def _known(key: str) -> bool:
    """A key of the JSON line, or a shorthand for some (``_vs_0_1s_warm``,
    ``..._warm_bimodal``: the end of a key)."""
    if key in JSON_KEYS:
        return True
    if key.startswith(("_", "...")):
        return any(k.endswith(key.removeprefix("...")) for k in JSON_KEYS)
    return False


def test_the_readme_quotes_only_keys_the_json_line_has() -> None:
    keys = _quoted_keys((REPO / "README.md").read_text())
    assert len(keys) >= 8
    assert [key for key in keys if not _known(key)] == []


def test_a_renamed_key_would_be_caught() -> None:
    table = f"{TABLE_INTRO}\n\n| key | meaning |\n|---|---|\n| `p95_notice_s_warm2` | x |\n"
    assert _quoted_keys(table) == ["p95_notice_s_warm2"]
    assert not _known("p95_notice_s_warm2") and not _known("..._warm_bimodal2")
    assert _known("..._warm_bimodal") and _known("_vs_0_1s_warm")
