"""A local gateway simulator: the whole queue protocol, real media, fault switches.

``genwidgets simulate`` runs it in the foreground; :func:`embedded` in a background
thread of this process (what ``gw.Client()`` uses when no gateway is configured).

``DEMO_KEY`` is the key a simulator accepts unless ``SimConfig(keys=...)`` says
otherwise: documented, not a secret (``gw.Client(server.base_url, DEMO_KEY)``).
"""

from .._config import DEMO_KEY
from .config import SimConfig
from .server import SimulatorServer, SimulatorStartError, embedded

__all__ = ["DEMO_KEY", "SimConfig", "SimulatorServer", "SimulatorStartError", "embedded"]
