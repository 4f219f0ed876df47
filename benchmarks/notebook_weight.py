"""Notebook weight: bytes a saved notebook gains per video result.

Each variant is a small notebook executed with nbclient (``store_widget_state=True``,
a kernel of this interpreter registered under a temporary prefix, every folder
isolated) that submits ``videos`` short ``vidVq2-text2video`` tasks (720p, 5 s,
``X-Sim-Duration: 1``) to the embedded simulator and shows them; the same
notebook with zero videos is the baseline, so
``bytes per video = (size(videos) - size(0)) / videos`` of the saved ``.ipynb``.

Each saved file is measured as nbclient wrote it (widget state stored) and as
JupyterLab and Notebook 7 save by default (the same file without its widget state),
and the videos that play from the notebook itself (a ``<video>`` whose source is a
``data:`` URL in the outputs) are counted.

Variants:

- ``ours``: ``display(job)`` for each job (both faces of the task view), default
  ``gw.Client()`` (the ledger keeps a local copy of each output) and the default
  ``GENWIDGETS_SAVED_MEDIA=previews``: each video's lasting face holds its poster and a
  preview (or the whole video when it fits the preview's budget) that plays.
- ``ours_posters``, ``ours_full``: the same with ``GENWIDGETS_SAVED_MEDIA=posters``
  (a poster frame, nothing that plays) and ``full`` (the whole video, up to 10 MB).
- ``ours_no_ledger`` (full run only): ``gw.Client(ledger=False)``: no local copy, so
  the lasting face can keep nothing of the video (its URL dies with the simulator).
- ``embedded``: the peers' way, ``ipywidgets.Video(value=<the mp4 bytes>)`` per
  result (bytes in widget state, base64).
"""

from __future__ import annotations

import concurrent.futures
import json
import re
import tempfile
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

from . import _common as common

ENDPOINT = "vidVq2-text2video"
WIDGET_STATE_MIME = "application/vnd.jupyter.widget-state+json"

SETUP = """\
import os
import time
import genwidgets as gw
os.environ["GENWIDGETS_SAVED_MEDIA"] = {media!r}
client = gw.Client({client_args})
"""

SUBMIT = """\
jobs = [
    client.submit({endpoint!r}, {{"prompt": f"a lighthouse at dusk, take {{i}}"}},
                  headers={{"X-Sim-Duration": "1"}})
    for i in range({videos})
]
"""

SHOW_JOBS = """\
for job in jobs:
    display(job)
"""

WAIT = """\
results = [job.result(timeout=180) for job in jobs]
time.sleep(1.5)  # the views' last throttled writes land while this cell runs
"""

SHOW_EMBEDDED = """\
import ipywidgets as W
results = [job.result(timeout=180) for job in jobs]
for result in results:
    display(W.Video(value=result.outputs[0].read(), format="mp4", autoplay=False, loop=False))
"""

#: variant -> (client arguments, cells, GENWIDGETS_SAVED_MEDIA)
VARIANTS: dict[str, tuple[str, list[str], str]] = {
    "ours": ("", [SUBMIT, SHOW_JOBS, WAIT], "previews"),
    "ours_posters": ("", [SUBMIT, SHOW_JOBS, WAIT], "posters"),
    "ours_full": ("", [SUBMIT, SHOW_JOBS, WAIT], "full"),
    "ours_no_ledger": ("ledger=False", [SUBMIT, SHOW_JOBS, WAIT], "previews"),
    "embedded": ("", [SUBMIT, SHOW_EMBEDDED], "previews"),
}
#: A video the saved notebook itself plays: its source is in the outputs.
PLAYABLE = re.compile(r'<video\b[^>]*\bsrc="data:video/')


def build_notebook(variant: str, videos: int) -> nbformat.NotebookNode:
    client_args, cells, media = VARIANTS[variant]
    notebook = nbformat.v4.new_notebook()
    sources = [SETUP.format(client_args=client_args, media=media)]
    sources += [c.format(endpoint=ENDPOINT, videos=videos) for c in cells]
    notebook.cells = [nbformat.v4.new_code_cell(src) for src in sources]
    return notebook


def anatomy(path: Path) -> dict[str, int]:
    """Where a saved notebook's bytes are: the file, the file as JupyterLab saves it by
    default (no widget state), widget state (and its models), display outputs
    (everything in ``outputs`` except widget views), and the videos it plays itself."""
    notebook = json.loads(path.read_text())
    state = notebook.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE_MIME, {})
    outputs = [o for cell in notebook["cells"] for o in cell.get("outputs", [])]
    default_save = nbformat.reads(path.read_text(), as_version=4)
    default_save.metadata.pop("widgets", None)
    html = "".join(str(o.get("data", {}).get("text/html", "")) for o in outputs)
    return {
        "file": path.stat().st_size,
        "file_default_save": len(nbformat.writes(default_save).encode()),
        "widget_state": len(json.dumps(state)),
        "widget_models": len(state.get("state", {})),
        "outputs": len(json.dumps(outputs)),
        "playable": len(PLAYABLE.findall(html)),
    }


def execute(
    notebook: nbformat.NotebookNode,
    root: Path,
    timeout: int = 300,
    *,
    extra_env: dict[str, str] | None = None,
    kernels: Path | None = None,
) -> None:
    """Execute ``notebook`` in place in a fresh kernel of this interpreter, every folder
    isolated under ``root`` (a first run: no history), widget state stored; ``extra_env``
    goes to the kernel too, ``kernels`` is a kernel spec folder installed once for many."""
    root.mkdir(parents=True)
    env = common.child_env({**common.isolated_dirs(root), **(extra_env or {})})
    if kernels is None:
        kernels = common.install_kernel(root, env)
    with common.kernel_manager(kernels) as manager:
        NotebookClient(
            notebook,
            km=manager,
            timeout=timeout,
            store_widget_state=True,
            resources={"metadata": {"path": str(root)}},
        ).execute(env=env, cwd=str(root))


def execute_and_save(variant: str, videos: int, workdir: Path) -> dict[str, int]:
    """Execute one notebook in a fresh kernel and save it; its :func:`anatomy`."""
    root = workdir / f"{variant}-{videos}"
    notebook = build_notebook(variant, videos)
    execute(notebook, root)
    path = root / "saved.ipynb"
    nbformat.write(notebook, path)
    return anatomy(path)


def _per_video(
    sizes: dict[tuple[str, int], dict[str, int]], variant: str, videos: int, key: str
) -> float:
    return round((sizes[(variant, videos)][key] - sizes[(variant, 0)][key]) / videos, 1)


def run_notebook_weight(
    videos: int = 10,
    variants: tuple[str, ...] = ("ours", "ours_posters", "ours_full", "embedded", "ours_no_ledger"),
) -> dict[str, Any]:
    """Saved bytes per video result, per variant (two notebooks executed at a time)."""
    runs = [(variant, count) for variant in variants for count in (videos, 0)]
    with (
        tempfile.TemporaryDirectory(prefix="gw-bench-nb-") as tmp,
        concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool,
    ):
        futures = {run: pool.submit(execute_and_save, run[0], run[1], Path(tmp)) for run in runs}
        sizes = {run: future.result() for run, future in futures.items()}
    per_variant = {
        variant: {
            "bytes_with_videos": sizes[(variant, videos)]["file"],
            "bytes_without": sizes[(variant, 0)]["file"],
            "bytes_per_video": round(_per_video(sizes, variant, videos, "file")),
            "default_save_bytes_per_video": round(
                _per_video(sizes, variant, videos, "file_default_save")
            ),
            "playable_videos": sizes[(variant, videos)]["playable"],
            "widget_state_bytes_per_video": _per_video(sizes, variant, videos, "widget_state"),
            "widget_models_per_video": _per_video(sizes, variant, videos, "widget_models"),
            "output_bytes_per_video": _per_video(sizes, variant, videos, "outputs"),
        }
        for variant in variants
    }
    return {
        "videos": videos,
        "endpoint": ENDPOINT,
        "variants": per_variant,
        "nb_bytes_per_video": per_variant["ours"]["bytes_per_video"],
        "nb_playable_videos": per_variant["ours"]["playable_videos"],
        "nb_bytes_per_video_embedded": per_variant["embedded"]["bytes_per_video"],
    }
