"""The ``genwidgets`` command. ``genwidgets simulate [flags]`` runs the gateway
simulator; the command itself lives with the simulator (:mod:`genwidgets.simulator.cli`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .simulator import cli as simulator_cli


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="genwidgets", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    simulate = commands.add_parser(
        "simulate",
        help="run the local gateway simulator",
        description="Run the local gateway simulator (the whole queue protocol, real media).",
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
