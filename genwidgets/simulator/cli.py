"""The simulator's command line: ``python -m genwidgets.simulator [flags]``, also
reached as ``genwidgets simulate [flags]`` (:mod:`genwidgets.cli` delegates here).

Every flag is checked (by argparse or by SimConfig), and a bad value is an argparse
error naming the allowed range.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from .._config import DEMO_KEY
from ..errors import SimulatorStartError
from .config import SimConfig
from .dialects import DIALECTS, ENV_VAR
from .registry import ENDPOINTS
from .server import SimulatorServer


def _number(text: str) -> Any:
    """A flag's number (an integer if it reads as one), else its text: SimConfig
    checks either and names what is allowed."""
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


def _port(text: str) -> int:
    port = _number(text)
    if not isinstance(port, int) or not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port must be an integer from 0 to 65535, got {text!r}")
    return port


def _restriction(text: str) -> tuple[str, tuple[str, ...]]:
    key, sep, names = text.partition("=")
    endpoints = tuple(n.strip() for n in names.split(",") if n.strip())
    if not sep or not key.strip() or not endpoints:
        raise argparse.ArgumentTypeError(
            f"--restrict takes KEY=ENDPOINT[,ENDPOINT...], got {text!r}"
        )
    unknown = [n for n in endpoints if n not in ENDPOINTS]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown endpoint(s) {', '.join(unknown)} in --restrict; known: "
            + ", ".join(sorted(ENDPOINTS))
        )
    return key.strip(), endpoints


#: The SimConfig settings that are flags read as numbers, then checked and defaulted as
#: SimConfig does (``--fail-rate`` sets ``fail_rate``): each one's help.
CHECKED_FLAGS = {
    "speed": "divide every simulated duration by this (2 = twice as fast)",
    "workers": "tasks running at once; the rest queue",
    "fail_rate": "share of tasks that end COMPLETED with an error (0-1)",
    "error_rate": "share of status/result requests answered 502/503 (0-1)",
    "rate_limit": "requests per second per key before RATE_LIMIT_EXCEEDED (default: no limit)",
    "create_rate_limit": "create requests per second per key, besides --rate-limit "
    "(default: no limit)",
    "latency": "seconds added before every answer",
}


class HelpFormatter(argparse.HelpFormatter):
    """``--help`` shows each flag's default, except where there is none to show."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        shown = not (default is None or default is argparse.SUPPRESS or default == [])
        if shown and action.option_strings and "default" not in text:
            text += " (default: %(default)s)"
        return text


def add_simulate_arguments(parser: argparse.ArgumentParser) -> None:
    """The simulator's flags, on ``parser`` (its own, or ``genwidgets simulate``)."""
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=_port, default=8765, help="port (0 picks a free one)")
    parser.add_argument(
        "--key",
        action="append",
        dest="keys",
        metavar="KEY",
        help=f"accepted API key; repeat for several (default: the demo key {DEMO_KEY!r})",
    )
    parser.add_argument(
        "--restrict",
        action="append",
        type=_restriction,
        default=[],
        metavar="KEY=EP[,EP...]",
        help="let KEY use only these endpoints (others answer 'Model not allowed for this user')",
    )
    defaults = SimConfig.model_construct()  # unchecked: only its defaults are read
    for name, text in CHECKED_FLAGS.items():
        flag, default = "--" + name.replace("_", "-"), getattr(defaults, name)
        parser.add_argument(flag, type=_number, default=default, help=text)
    parser.add_argument("--seed", type=int, default=0, help="seed of the fault dice")
    parser.add_argument(
        "--dialect",
        choices=sorted(DIALECTS),
        default=None,
        help="how answers fill what the spec leaves open: spec (default), fal, replicate "
        f"(default from ${ENV_VAR}; see genwidgets.simulator.dialects)",
    )


def build_parser(prog: str = "python -m genwidgets.simulator") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Run the local gateway simulator (the whole queue protocol, real media).",
        formatter_class=HelpFormatter,
    )
    add_simulate_arguments(parser)
    return parser


def config_from(args: argparse.Namespace) -> SimConfig:
    """The :class:`SimConfig` the parsed flags describe."""
    keys = tuple(args.keys) if args.keys else (DEMO_KEY,)
    restrict = dict(args.restrict)
    strangers = sorted(set(restrict) - set(keys))
    if strangers:
        raise ValueError("--restrict names a key that is not given with --key")
    return SimConfig(
        keys=keys,
        restrict=restrict,
        seed=args.seed,
        **{name: getattr(args, name) for name in CHECKED_FLAGS},
        **({"dialect": args.dialect} if getattr(args, "dialect", None) else {}),
    )


def simulate(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Serve in the foreground until Ctrl+C; 1 when the server cannot start."""
    try:
        config = config_from(args)
    except ValueError as exc:
        parser.error(str(exc))
    server = SimulatorServer(config, host=args.host, port=args.port)
    try:
        server.serve_forever(lambda: _announce(server, config))
    except SimulatorStartError as exc:
        print(f"genwidgets: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


def _announce(server: SimulatorServer, config: SimConfig) -> None:
    keys = ", ".join(config.keys) if config.keys == (DEMO_KEY,) else f"{len(config.keys)} given"
    print(f"genwidgets simulator on {server.base_url}", flush=True)
    print(f"  GENWIDGETS_BASE_URL={server.base_url}", flush=True)
    print(f"  API key: {keys}   speed: {config.speed:g}   workers: {config.workers}", flush=True)
    print(f"  dialect: {config.dialect}", flush=True)
    print("  Ctrl+C stops it.", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    return simulate(parser.parse_args(argv), parser)
