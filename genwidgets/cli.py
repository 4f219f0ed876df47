"""The ``genwidgets`` command: ``genwidgets simulate [flags]`` runs the gateway simulator.

The command itself lives with the simulator (``genwidgets.simulator.cli``); this module
only names the subcommands. The help text is plain text: it is what ``--help`` prints.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import __version__
from ._config import DEMO_KEY, ENV_API_KEY, ENV_BASE_URL
from .simulator import cli as simulator_cli

DESCRIPTION = "Tools for genwidgets, widgets for an asynchronous generation gateway."
EPILOG = f"""\
examples:
  genwidgets simulate                  a local gateway on http://127.0.0.1:8765
  genwidgets simulate --speed 10       ten times faster
  genwidgets simulate --help           every flag of the simulator, with its default

Then, in Python: export {ENV_BASE_URL}=http://127.0.0.1:8765 and
{ENV_API_KEY}={DEMO_KEY}, and use genwidgets as with the real gateway."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="genwidgets",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"genwidgets {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    simulate = commands.add_parser(
        "simulate",
        help="run the local gateway simulator",
        description="Run the local gateway simulator (the whole queue protocol, real media).",
        formatter_class=simulator_cli.HelpFormatter,
    )
    simulator_cli.add_simulate_arguments(simulate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "simulate":
        return simulator_cli.simulate(args, parser)
    parser.error(f"unknown command {args.command!r}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
