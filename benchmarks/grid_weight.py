"""Grid weight: what a 10 × 10 grid of 1440 × 1440 images costs the page and the file.

One notebook builds the grid (``genW2.5-t2i-preview``, ``size="1440*1440"``,
10 seeds × 10 prompts, on a simulator at speed 50 started in the kernel) and
waits for it. Two arms:

- ``thumbnails``: the grid as it is: cells show kernel-made thumbnails (at most
  256 px, cached beside the downloaded output), each sent once; the full
  image only when a lightbox opens.
- ``full``: the grid as it was before thumbnails: every cell's full image by
  URL (the notebook patches the grid's output record back to that).

For each arm, JupyterLab runs the notebook in chromium and the Chrome DevTools
network log counts the bytes that reach the page before any lightbox opens:
kernel websocket frames (widget state and messages) plus image responses, from
the moment the page opens until every cell's picture has loaded. Then nbclient
executes the same notebook in a fresh kernel with the widget state stored, and
the saved ``.ipynb`` is weighed.

``python benchmarks/run.py`` runs it (the goal, under 3 MB of grid bytes in the
page, is in ``goals.py``); alone: ``python -m benchmarks.grid_weight [arm ...]``
(about 3 minutes for both arms; it prints JSON). Without chromium, Playwright or
JupyterLab it measures nothing and says which is missing.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

from . import _common as common

CELLS = 100
ENDPOINT = "genW2.5-t2i-preview"
SIZE = "1440*1440"
SETUP = """\
import genwidgets as gw
from genwidgets.simulator import SimConfig, SimulatorServer
{patch}
sim = SimulatorServer(SimConfig(speed=50, workers=8), host="127.0.0.1", port=0).start()
client = gw.Client(base_url=sim.base_url, api_key="sim-demo-key")
words = ["fox", "cat", "owl", "bear", "deer", "wolf", "hare", "lynx", "crow", "seal"]
grid = gw.grid(
    "{endpoint}",
    {{"prompt": "a fox in the snow", "n": 1, "size": "{size}"}},
    x=("seed", "1-10"),
    y=("prompt_sr", words),
    client=client,
    confirm_above=100,
)
grid"""
WAIT = """\
import time
grid.wait(timeout=600)
time.sleep(1.5)  # the view's last throttled write lands while this cell runs
print(grid)"""
PATCHES = {
    "thumbnails": "",
    "full": (
        "import functools\n"
        "import genwidgets.widgets.grid as _grid\n"
        "_grid._output_record = functools.partial(_grid._output_record, full=True)\n"
        "_grid._thumb = lambda output, **_: None\n"
    ),
}
ARMS = tuple(PATCHES)
PICTURES_LOADED_JS = """
(n) => {
  const imgs = [...document.querySelectorAll('.gw-grid .gw-grid-cell .gw-grid-thumb img')];
  return imgs.length === n && imgs.every(i => i.complete && i.naturalWidth > 0);
}
"""


def notebook_for(arm: str, *, wait: bool) -> nbformat.NotebookNode:
    """The grid's notebook; ``wait`` adds a cell that waits for the grid (nbclient
    needs it; in the page a later cell's end would turn the finished grid into
    its static contact sheet before the thumbnails could be counted)."""
    notebook = nbformat.v4.new_notebook()
    setup = SETUP.format(patch=PATCHES[arm], endpoint=ENDPOINT, size=SIZE)
    notebook.cells = [nbformat.v4.new_code_cell(setup)]
    if wait:
        notebook.cells.append(nbformat.v4.new_code_cell(WAIT))
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    return notebook


def page_bytes(arm: str, root: Path) -> dict[str, Any]:
    """Bytes the page receives in JupyterLab for ``arm`` (see the module docstring)."""
    common.tests_on_path()
    from browser import frontend  # tests/browser/frontend.py: one way to run a front-end

    name = f"grid_{arm}.ipynb"
    extra = {name: nbformat.writes(notebook_for(arm, wait=False))}
    counts = {"websocket": 0, "images": 0, "other_http": 0, "image_responses": 0}
    kinds: dict[str, str] = {}
    with frontend.serve("lab", root, extra=extra) as lab, frontend.launch_chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        cdp = page.context.new_cdp_session(page)
        cdp.send("Network.enable")

        def on_response(event: dict[str, Any]) -> None:
            kinds[event["requestId"]] = event["response"].get("mimeType", "")

        def on_finished(event: dict[str, Any]) -> None:
            mime = kinds.get(event["requestId"], "")
            size = int(event.get("encodedDataLength", 0))
            if mime.startswith(("image/png", "image/jpeg", "image/webp", "video/")):
                counts["images"] += size
                counts["image_responses"] += 1
            else:
                counts["other_http"] += size

        def on_frame(event: dict[str, Any]) -> None:
            frame = event["response"]
            data = frame.get("payloadData", "")
            # binary frames (the kernel protocol v1 Lab speaks) come base64-encoded
            counts["websocket"] += len(data) * 3 // 4 if frame.get("opcode") == 2 else len(data)

        cdp.on("Network.responseReceived", on_response)
        cdp.on("Network.loadingFinished", on_finished)
        cdp.on("Network.webSocketFrameReceived", on_frame)
        started = time.monotonic()
        page.goto(lab.page_url(name), wait_until="domcontentloaded", timeout=120_000)
        frontend.wait_for_kernel_idle(page, "lab")
        frontend.run_all(page)
        page.locator(".gw-grid-progress", has_text=f"{CELLS} of {CELLS} done").wait_for(
            timeout=600_000
        )
        page.wait_for_function(PICTURES_LOADED_JS, arg=CELLS, timeout=300_000)
        page.wait_for_timeout(2000)
        seconds = time.monotonic() - started
        lightboxes = page.locator(".gw-grid-lightbox:not([hidden])").count()
        page.close()
    grid_bytes = counts["websocket"] + counts["images"]
    return {
        **counts,
        "grid_bytes": grid_bytes,
        "grid_mb": round(grid_bytes / 1e6, 2),
        "open_lightboxes": lightboxes,
        "seconds": round(seconds, 1),
    }


def saved_size(arm: str, root: Path) -> dict[str, int]:
    """The executed notebook saved with its widget state: its size in bytes."""
    env = common.child_env(common.isolated_dirs(root))
    kernels = common.install_kernel(root, env)
    notebook = notebook_for(arm, wait=True)
    with common.kernel_manager(kernels) as manager:
        NotebookClient(
            notebook,
            km=manager,
            timeout=900,
            store_widget_state=True,
            resources={"metadata": {"path": str(root)}},
        ).execute(env=env, cwd=str(root))
    path = root / "saved.ipynb"
    nbformat.write(notebook, path)
    return {"saved_notebook_bytes": path.stat().st_size}


def missing() -> str:
    """What this machine lacks to drive a page (chromium, Playwright, JupyterLab), or ""."""
    common.tests_on_path()
    from browser import frontend

    if not frontend.CHROMIUM.exists():
        return f"{frontend.CHROMIUM} is missing (apt-get install chromium)"
    for module in ("playwright", "jupyterlab"):
        if importlib.util.find_spec(module) is None:
            return f"the {module} package is missing (pip install -e '.[test]')"
    return ""


def run_grid_weight(arms: Sequence[str] = ARMS) -> dict[str, Any]:
    """Page bytes and saved size per arm; ``grid_bytes`` is the thumbnails arm's page
    bytes (None when it did not run), ``not_measured`` why nothing ran (or "")."""
    found: dict[str, Any] = {}
    reason = missing()
    if not reason:
        with tempfile.TemporaryDirectory(prefix="gw-bench-grid-") as tmp:
            for arm in arms:
                base = Path(tmp) / arm
                (base / "page").mkdir(parents=True)
                (base / "saved").mkdir(parents=True)
                found[arm] = {**page_bytes(arm, base / "page"), **saved_size(arm, base / "saved")}
    return {
        "cells": CELLS,
        "endpoint": ENDPOINT,
        "size": SIZE,
        "arms": found,
        "grid_bytes": found.get("thumbnails", {}).get("grid_bytes"),
        "not_measured": reason,
    }


if __name__ == "__main__":
    chosen = tuple(sys.argv[1:]) or ARMS
    print(json.dumps(run_grid_weight(chosen), indent=2))
