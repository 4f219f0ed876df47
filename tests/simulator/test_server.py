"""Starting and stopping: the context manager, idempotence, the embedded singleton."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading

import httpx
import pytest

from genwidgets.simulator import SimConfig, SimulatorServer, SimulatorStartError, embedded

pytestmark = pytest.mark.timeout(60)


def test_context_manager_serves_then_stops() -> None:
    with SimulatorServer(SimConfig(speed=20)) as sim:
        assert sim.running
        assert httpx.get(sim.base_url + "/").json()["service"] == "genwidgets gateway simulator"
        url = sim.base_url
    assert not sim.running
    with pytest.raises(httpx.TransportError):
        httpx.get(url + "/", timeout=2)


def test_start_and_stop_are_idempotent() -> None:
    sim = SimulatorServer(SimConfig(speed=20))
    assert sim.start() is sim.start()
    port = sim.port
    assert sim.port == port and sim.running
    sim.stop()
    sim.stop()
    assert not sim.running


def test_busy_port_is_a_clear_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(SimulatorStartError, match=f"127.0.0.1:{port}"):
            SimulatorServer(port=port).start()


def test_embedded_is_one_shared_demo_speed_server() -> None:
    found: list[SimulatorServer] = []
    threads = [threading.Thread(target=lambda: found.append(embedded())) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(s) for s in found}) == 1
    sim = found[0]
    assert sim is embedded() and sim.running
    assert sim.base_url.startswith("http://127.0.0.1:")
    assert sim.config.speed == 1.0
    reply = httpx.post(
        f"{sim.base_url}/v1/queue/asset-get",
        json={"Id": "asset-demo"},
        headers={"Authorization": "Bearer sim-demo-key"},
    )
    assert reply.status_code == 200


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"speed": 0}, "speed must be a finite number > 0"),
        ({"workers": 0}, "workers must be an integer from 1"),
        ({"fail_rate": 1.5}, "between 0 and 1"),
        ({"error_rate": -0.1}, "between 0 and 1"),
        ({"rate_limit": 0}, "rate_limit must be > 0"),
        ({"latency": -1}, "latency must be between 0"),
        ({"keys": ()}, "keys must be"),
    ],
)
def test_config_rejects_bad_values_naming_the_range(kwargs: dict[str, object], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        SimConfig(**kwargs)  # type: ignore[arg-type]


def test_config_repr_hides_the_keys() -> None:
    text = repr(SimConfig(keys=("secret-key-123",)))
    assert "secret-key-123" not in text and "speed=1.0" in text
    assert "secret-key-123" not in repr(SimulatorServer(SimConfig(keys=("secret-key-123",))))


def _embedded_in_a_fresh_process(speed: str) -> subprocess.CompletedProcess[str]:
    """A client with no address in a new process (the embedded simulator is one per
    process) with ``GENWIDGETS_SIM_SPEED`` set: it prints the simulator's speed."""
    code = (
        "import genwidgets as gw\n"
        "from genwidgets.simulator import embedded\n"
        "try:\n"
        "    gw.Client(ledger=False).close()\n"
        "except gw.GenwidgetsError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
        "else:\n"
        "    print(embedded().config.speed)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("GENWIDGETS_")}
    env["GENWIDGETS_SIM_SPEED"] = speed
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("speed", "said"),
    [
        ("4", "4.0"),
        (" 0.5 ", "0.5"),
        ("", "1.0"),
        ("fast", "SimulatorStartError the embedded simulator did not start: GENWIDGETS_SIM_SPEED"),
        ("0", "SimulatorStartError the embedded simulator did not start: GENWIDGETS_SIM_SPEED"),
        ("nan", "SimulatorStartError the embedded simulator did not start: GENWIDGETS_SIM_SPEED"),
    ],
)
def test_the_embedded_simulators_speed_comes_from_its_setting(speed: str, said: str) -> None:
    done = _embedded_in_a_fresh_process(speed)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith(said)
    if "Error" in said:
        assert "> 0 and <=" in done.stdout and "Traceback" not in done.stderr
