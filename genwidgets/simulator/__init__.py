"""A local gateway simulator: the whole queue protocol, real media, fault switches.

``genwidgets simulate`` (or ``python -m genwidgets.simulator``) runs it in the
foreground; :func:`embedded` runs one in a background thread of this process
(what ``gw.Client()`` uses when no gateway is configured). See :mod:`.app` for
the routes and HTTP codes, :mod:`.outputs` for the media produced (drawn and
encoded by :mod:`.synth`, from inputs read by :mod:`.inputs`: never from the
internet), and :mod:`.world` for the referenced operations and dependency checks.

``DEMO_KEY`` is the key a simulator accepts unless ``SimConfig(keys=...)`` says
otherwise: documented, not a secret (``gw.Client(server.base_url, DEMO_KEY)``).
"""

from .._config import DEMO_KEY
from .config import SimConfig
from .server import SimulatorServer, SimulatorStartError, embedded

__all__ = ["DEMO_KEY", "SimConfig", "SimulatorServer", "SimulatorStartError", "embedded"]
