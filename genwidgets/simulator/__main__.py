"""``python -m genwidgets.simulator [flags]`` is ``genwidgets simulate [flags]``."""

import sys

from .cli import main

sys.exit(main(sys.argv[1:]))
