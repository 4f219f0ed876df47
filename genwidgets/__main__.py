"""``python -m genwidgets [command]`` is the ``genwidgets`` command, for an environment
whose scripts folder is not on the PATH."""

import sys

from .cli import main

sys.exit(main(sys.argv[1:]))
