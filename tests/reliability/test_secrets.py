"""A notebook that used a key, saved with its widget state: the key is nowhere on disk.

The kernel reads the key from an environment variable (a key typed into a cell's
source is the user's own disclosure); everything genwidgets shows, logs, saves
or records must then be free of it: widget state, outputs, reprs, exceptions,
DEBUG logs of genwidgets/httpx/httpcore, the ledger and the downloaded outputs.
"""

from __future__ import annotations

import base64
import os
import secrets
from pathlib import Path

import jupyter_env  # tests/jupyter_env.py (tests/ is on pytest's pythonpath)
import nbformat
import pytest

from genwidgets.simulator import SimConfig, SimulatorServer

pytestmark = [pytest.mark.reliability, pytest.mark.notebook]

CELLS = [
    """\
import logging
import os

import genwidgets as gw

# every DEBUG line of genwidgets, httpx and httpcore goes into the saved outputs
logging.basicConfig(level=logging.DEBUG, force=True)
client = gw.Client(
    base_url=os.environ["RELIABILITY_GATEWAY"], api_key=os.environ["RELIABILITY_KEY"]
)
client""",
    """\
form = gw.form("speechM-02-turbo", client=client, text="a keyed notebook")
form""",
    "form.submit_button.click()  # the button path: the job is displayed inside the form",
    """\
job = form.submit()
job""",
    """\
result = job.result(timeout=60)
print(repr(job), job.payload, result.ok, client, client.jobs, client.history())
print(client.ledger.rows()[:2])
gw.render(result)""",
    """\
try:
    client.job("speechM-02-turbo", "no-such-request").result(timeout=30)
except gw.GatewayError as exc:
    print("caught:", type(exc).__name__, exc, repr(exc))""",
    """\
gw.login(os.environ["RELIABILITY_KEY"])  # the session key, used by a client without one
other = gw.Client(base_url=os.environ["RELIABILITY_GATEWAY"])
print(other, other.run("asset-get", {"Id": "asset-demo"}, timeout=60).ok)""",
]


def _files_holding(root: Path, needles: list[bytes]) -> list[str]:
    return sorted(
        str(path.relative_to(root))
        for path in root.rglob("*")
        if path.is_file() and any(n in path.read_bytes() for n in needles)
    )


@pytest.mark.timeout(180)
def test_a_saved_notebook_and_genwidgets_home_never_hold_the_key(tmp_path: Path) -> None:
    key = f"rel-secret-{secrets.token_hex(16)}"
    needles = [key.encode(), base64.b64encode(key.encode()), key.encode().hex().encode()]
    source = tmp_path / "keyed.ipynb"
    nbformat.write(
        nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS]), source
    )
    workdir = tmp_path / "work"
    workdir.mkdir()
    root = tmp_path / "jupyter"

    with SimulatorServer(SimConfig(keys=(key,), speed=20), host="127.0.0.1", port=0) as sim:
        with jupyter_env.isolated_kernel(root) as kernel_name:
            os.environ["RELIABILITY_GATEWAY"] = sim.base_url
            os.environ["RELIABILITY_KEY"] = key
            nb, _seconds = jupyter_env.execute(source, workdir, kernel_name=kernel_name)
        used_keys = [task.key for task in sim.state.scheduler.tasks.values()]

    # the notebook really used the key: three tasks created with it, and it ran through
    assert used_keys == [key] * 3
    assert jupyter_env.error_outputs(nb) == []
    text = jupyter_env.output_text(nb)
    assert "caught: RequestNotFound" in text
    assert "DEBUG" in text  # the logs were on
    assert jupyter_env.widget_state(nb), "no widget state was saved"
    assert jupyter_env.task_views(jupyter_env.widget_state(nb))
    saved = workdir / source.name
    assert needles[0] not in saved.read_bytes()
    assert all(n not in saved.read_bytes() for n in needles)

    home = root / "genwidgets-home"
    assert (home / "ledger.sqlite3").is_file()
    assert any((home / "outputs").rglob("*.mp3"))
    assert _files_holding(home, needles) == []
    assert _files_holding(tmp_path, needles) == []  # nor anywhere else the kernel wrote
