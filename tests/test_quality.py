"""The project's own standing checks: lint, types, layering, clean notebooks."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "genwidgets"

pytestmark = pytest.mark.timeout(300)
SECRET = re.compile(r"""GENWIDGETS_API_KEY *= *["'][^"']{6,}|Bearer [A-Za-z0-9._-]{12,}""")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=280
    )


def test_ruff_is_clean() -> None:
    done = run("ruff", "check", "genwidgets", "tests", "benchmarks")
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_is_clean() -> None:
    done = run("mypy", "--no-incremental", "genwidgets")
    assert done.returncode == 0, done.stdout + done.stderr


# catalog → protocol → jobs → widgets; the simulator beside them.
LAYER = {"catalog": 0, "protocol": 1, "jobs": 2, "widgets": 3}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.level:
                parts = path.relative_to(ROOT).with_suffix("").parts[: -node.level]
                found.add(".".join([*parts, node.module]))
            else:
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


@pytest.mark.parametrize("layer", sorted(LAYER))
def test_layers_import_downward_only(layer: str) -> None:
    upward = {name for name, rank in LAYER.items() if rank > LAYER[layer]} | {"simulator"}
    offenders = []
    for path in (PACKAGE / layer).rglob("*.py"):
        for module in _imports(path):
            parts = module.split(".")
            if parts[0] == "genwidgets" and len(parts) > 1 and parts[1] in upward:
                offenders.append(f"{path.relative_to(ROOT)} imports {module}")
    assert not offenders, offenders


def test_committed_notebooks_have_no_outputs_and_no_keys() -> None:
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = json.loads(path.read_text())
        for cell in nb["cells"]:
            if cell["cell_type"] == "code":
                assert cell.get("outputs") == [], f"{path.name} has outputs"
                assert cell.get("execution_count") is None, f"{path.name} has counts"
        assert "widgets" not in nb.get("metadata", {}), f"{path.name} has widget state"
        text = path.read_text()
        # the same pattern as the before-stop hook: a quoted key value or a bearer token
        assert not SECRET.search(text), f"{path.name} seems to hold a key"
