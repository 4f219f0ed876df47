"""The project's own standing checks: lint, types, layering, clean notebooks."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "genwidgets"

pytestmark = pytest.mark.timeout(300)
SECRET = re.compile(r"""GENWIDGETS_API_KEY *= *["'][^"']{6,}|Bearer [A-Za-z0-9._-]{12,}""")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=280
    )


def test_ruff_is_clean() -> None:
    done = run("ruff", "check", "genwidgets", "tests", "benchmarks")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_mypy_is_clean() -> None:
    done = run("mypy", "--no-incremental", "genwidgets")
    assert done.returncode == 0, done.stdout + done.stderr


# --------------------------------------------------------------------------- layering
#
# The layer table: a module may import (at run time) only modules of its own layer
# or of a lower rank. Layers of equal rank stand beside each other and may not
# import each other (the simulator beside the jobs). Imports under
# ``if TYPE_CHECKING:`` count too: a reader follows them as any other, so a type-only
# import upward, or a circle closed by one, is a circle to whoever reads the code
# (docs/decisions.md#the-error-tree-names-no-higher-layer).
#
#   rank  layer       modules
#   0     base        _config, _files, _formats, _html, _palette, _workers, errors
#   1     language    imgm (the imgM prompt language: text in, text out)
#   2     catalog     catalog/**              (validates imgM prompts with it)
#   3     media       media
#   4     protocol    protocol/**
#   5     jobs        jobs/**
#   5     simulator   simulator/**            (beside jobs)
#   6     client      _client, _protocols
#   7     lab         lab/**                  (the prompt lab's model: no widgets)
#   8     widgets     widgets/** (the prompt builder widget among them)
#   8     serve       serve/**                (the class gateway, beside the widgets)
#   9     facade      __init__ (the package), cli, server_extension (Jupyter's entry point)
LAYERS: dict[str, int] = {
    "base": 0,
    "language": 1,
    "catalog": 2,
    "media": 3,
    "protocol": 4,
    "jobs": 5,
    "simulator": 5,
    "client": 6,
    "lab": 7,
    "widgets": 8,
    "serve": 8,
    "facade": 9,
}


def layer_of(module: str) -> str:
    """The layer of one of our modules (``genwidgets.x.y``)."""
    parts = module.split(".")
    head = parts[1] if len(parts) > 1 else ""
    if module in ("genwidgets", "genwidgets.cli", "genwidgets.server_extension"):
        return "facade"
    if head in ("_config", "_files", "_formats", "_html", "_palette", "_workers", "errors"):
        return "base"
    if head in ("_client", "_async_client", "_protocols"):
        return "client"
    if head == "imgm":
        return "language"
    if head == "media":
        return "media"
    if head in ("catalog", "protocol", "jobs", "simulator", "lab", "widgets", "serve"):
        return head
    raise AssertionError(f"{module} has no layer: add it to the layer table in {__file__}")


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _type_only_nodes(tree: ast.AST) -> set[int]:
    """ids of the import nodes inside ``if TYPE_CHECKING:`` blocks."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.attr if isinstance(test, ast.Attribute) else getattr(test, "id", "")
            if name == "TYPE_CHECKING":
                for child in node.body:
                    inside.update(id(n) for n in ast.walk(child))
    return inside


def _imported_from(node: ast.ImportFrom, module: str, path: Path) -> str:
    """The absolute name of the module a ``from ... import`` reads (relative ones resolved)."""
    if not node.level:
        return node.module or ""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    base_parts = package.split(".")
    base_parts = base_parts[: len(base_parts) - (node.level - 1)]
    return ".".join([*base_parts, *([node.module] if node.module else [])])


def imports_of(module: str, path: Path | None = None) -> list[tuple[str, bool]]:
    """Every module of ours that ``module`` imports, in every form (``import genwidgets.x``,
    ``from genwidgets.x import y``, ``from .. import x``, ``from . import y``, inside
    functions too), each with whether the import is type-only."""
    path = path or MODULES[module]
    tree = ast.parse(path.read_text())
    type_only = _type_only_nodes(tree)
    found: list[tuple[str, bool]] = []
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _imported_from(node, module, path)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                targets.append(sub if sub in MODULES else base)
        for target in targets:
            if target == "genwidgets" or target.startswith("genwidgets."):
                while target not in MODULES and "." in target:
                    target = target.rpartition(".")[0]
                found.append((target, id(node) in type_only))
    return found


def _violations() -> dict[str, list[str]]:
    """Upward or sideways imports, by file."""
    found: dict[str, list[str]] = {}
    for module, path in MODULES.items():
        mine = layer_of(module)
        for target, type_only in imports_of(module):
            theirs = layer_of(target)
            if theirs == mine:
                continue
            if LAYERS[theirs] >= LAYERS[mine]:
                where = str(path.relative_to(ROOT))
                how = " (type-only)" if type_only else ""
                found.setdefault(where, []).append(f"{mine} imports {theirs}{how}: {target}")
    return found


def _import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Who imports whom, through every import: lazy ones inside functions and type-only
    ones count (a hidden circle is one)."""
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for target, _type_only in imports_of(module, path):
            if target != module:
                graph[module].add(target)
    return graph


def _cycles(graph: dict[str, set[str]] | None = None) -> list[list[str]]:
    """Import cycles (Tarjan's strongly connected components)."""
    graph = _import_graph(MODULES) if graph is None else graph
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


#: The one place allowed a dynamic import: the facade's lazy table, whose every
#: entry is also spelled out under ``TYPE_CHECKING`` (pinned below).
FACADE = "genwidgets/__init__.py"


def _dynamic_imports() -> dict[str, list[str]]:
    """``importlib`` / ``__import__`` anywhere in the package but the facade: they
    hide real dependencies from readers and from mypy."""
    found: dict[str, list[str]] = {}
    for path in MODULES.values():
        if str(path.relative_to(ROOT)) == FACADE:
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            hit = ""
            if isinstance(node, ast.Import) and any(
                a.name.split(".")[0] == "importlib" for a in node.names
            ):
                hit = "import importlib"
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("importlib"):
                hit = f"from {node.module} import ..."
            elif isinstance(node, ast.Name) and node.id == "__import__":
                hit = "__import__"
            if hit:
                found.setdefault(str(path.relative_to(ROOT)), []).append(
                    f"line {node.lineno}: {hit}"
                )
    return found


def _problems() -> dict[str, list[str]]:
    problems: dict[str, list[str]] = {}
    for where, lines in _violations().items():
        problems.setdefault(where, []).extend(lines)
    for where, lines in _dynamic_imports().items():
        problems.setdefault(where, []).extend(lines)
    for cycle in _cycles():
        for member in cycle:
            where = str(MODULES[member].relative_to(ROOT))
            problems.setdefault(where, []).append("import cycle: " + " ↔ ".join(cycle))
    return problems


def test_every_module_has_a_layer() -> None:
    for module in MODULES:
        layer_of(module)


def test_layers_import_downward_only_with_no_cycles_and_no_importlib() -> None:
    problems = _problems()
    report = "\n".join(f"{w}:\n  " + "\n  ".join(p) for w, p in sorted(problems.items()))
    assert not problems, f"imports against the layer table:\n{report}"


def test_the_facade_table_hides_no_dependency() -> None:
    """Each entry of ``_LAZY`` is imported by the same name from the same module
    under ``TYPE_CHECKING`` (what readers and mypy see), and the facade imports
    nothing dynamically but through ``importlib.import_module``."""
    import genwidgets

    tree = ast.parse((ROOT / FACADE).read_text())
    spelled: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom), ast.dump(stmt)
                for alias in stmt.names:
                    spelled[alias.name] = "." * stmt.level + (stmt.module or "")
    assert spelled == genwidgets._LAZY
    dynamic = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "__import__"]
    assert not dynamic


def test_the_layering_check_sees_every_form_of_import(tmp_path: Path) -> None:
    """The checker itself: each spelling of an import is resolved to its module."""
    probe_name = "genwidgets.protocol._layering_probe"
    probe = tmp_path / "_layering_probe.py"

    def seen(code: str) -> list[tuple[str, bool]]:
        probe.write_text(code + "\n")
        return imports_of(probe_name, probe)

    assert seen("from ..widgets import task") == [("genwidgets.widgets.task", False)]
    assert seen("from .. import _client") == [("genwidgets._client", False)]
    assert seen("import genwidgets.widgets.task") == [("genwidgets.widgets.task", False)]
    assert seen("from genwidgets.jobs.job import Job") == [("genwidgets.jobs.job", False)]
    assert seen("def f():\n    from ..jobs import job") == [("genwidgets.jobs.job", False)]
    assert seen("from . import records") == [("genwidgets.protocol.records", False)]
    assert seen("from .records import Handle") == [("genwidgets.protocol.records", False)]
    assert seen("from ..jobs.ledger import Ledger") == [("genwidgets.jobs.ledger", False)]
    type_only = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .. import _client"
    assert seen(type_only) == [("genwidgets._client", True)]
    assert layer_of("genwidgets.protocol.records") == "protocol"
    assert LAYERS[layer_of("genwidgets.widgets.task")] > LAYERS[layer_of(probe_name)]


def test_a_circle_closed_by_a_type_only_import_is_a_circle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checker itself: a module that names another only for its annotations still
    ties the two into one circle, and an annotation that names a higher layer is
    an upward import."""
    low, high = tmp_path / "low.py", tmp_path / "high.py"
    low.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import high\n")
    high.write_text("from . import low\n")
    probes = {"genwidgets.protocol.low": low, "genwidgets.protocol.high": high}
    for name, path in probes.items():
        monkeypatch.setitem(MODULES, name, path)  # so that ``from . import high`` resolves
    assert _cycles(_import_graph(probes)) == [sorted(probes)]
    high.write_text("import json\n")
    assert _cycles(_import_graph(probes)) == []
    upward = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..jobs.job import Job"
    low.write_text(upward + "\n")
    target, type_only = imports_of("genwidgets.protocol.low", low)[0]
    assert type_only and LAYERS[layer_of(target)] > LAYERS[layer_of("genwidgets.protocol.low")]


def test_committed_notebooks_have_no_outputs_and_no_keys() -> None:
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = json.loads(path.read_text())
        for cell in nb["cells"]:
            if cell["cell_type"] == "code":
                assert cell.get("outputs") == [], f"{path.name} has outputs"
                assert cell.get("execution_count") is None, f"{path.name} has counts"
        assert "widgets" not in nb.get("metadata", {}), f"{path.name} has widget state"
        text = path.read_text()
        # the same pattern as the before-stop hook: a quoted key value or a bearer token
        assert not SECRET.search(text), f"{path.name} seems to hold a key"


# --------------------------------------------------------------------------- module size
#
# One noun per module keeps modules small: a module over MAX_LINES has grown a second
# noun. The failure names the module and its top-level nouns, which is where a split
# starts. Module docstrings say what and why in a few lines; the choices made where the
# spec is silent live in docs/decisions.md, linked from the code that makes them.
MAX_LINES = 600
MAX_DOCSTRING_LINES = 33  # the longest is the error tree, drawn whole in errors.py
SOURCES = sorted(PACKAGE.rglob("*.py"))


def nouns_of(tree: ast.Module) -> list[str]:
    """The top-level classes and functions of a module, in the order written."""
    kinds = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return [node.name for node in tree.body if isinstance(node, kinds)]


def oversized(paths: list[Path], limit: int) -> list[str]:
    """One line per module over ``limit`` lines: its path, its length and its nouns."""
    found = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        count = len(text.splitlines())
        if count > limit:
            nouns = ", ".join(nouns_of(ast.parse(text))) or "no top-level classes or functions"
            where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
            found.append(f"{where}: {count} lines (limit {limit}); its nouns: {nouns}")
    return found


def long_docstrings(paths: list[Path], limit: int) -> list[str]:
    """One line per module whose module docstring has more than ``limit`` lines."""
    found = []
    for path in paths:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False)
        count = len(doc.splitlines()) if doc else 0
        if count > limit:
            where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
            found.append(f"{where}: module docstring of {count} lines (limit {limit})")
    return found


#: Modules whose function-level imports are not yet reasoned, and why. An entry no
#: longer needed fails the test, so the list only shrinks.
UNREASONED_LAZY_IMPORTS: dict[str, str] = {}


def lazy_imports(module: str, path: Path | None = None) -> list[tuple[int, bool]]:
    """``(line, has a reason)`` for each import inside a function of ``module``
    (type-only ones aside): a reason is a ``# lazy: <why>`` comment on its line."""
    path = path or MODULES[module]
    text = path.read_text()
    lines = text.splitlines()
    tree = ast.parse(text)
    type_only = _type_only_nodes(tree)
    found: set[tuple[int, bool]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for sub in ast.walk(node):
                if isinstance(sub, ast.Import | ast.ImportFrom) and id(sub) not in type_only:
                    span = lines[sub.lineno - 1 : (sub.end_lineno or sub.lineno)]
                    found.add((sub.lineno, any("# lazy: " in line for line in span)))
    return sorted(found)


def test_every_function_level_import_says_why_it_is_lazy() -> None:
    """An import inside a function hides a dependency from a reader: keep one only
    where it saves real import time or breaks a real cycle, and say which
    (docs/decisions.md#an-import-inside-a-function-says-why)."""
    bare = {
        module: [line for line, reasoned in lazy_imports(module, path) if not reasoned]
        for module, path in MODULES.items()
    }
    missing = [
        f"{MODULES[m].relative_to(ROOT)}:{lines[0]} (and {len(lines) - 1} more)"
        for m, lines in sorted(bare.items())
        if lines and m not in UNREASONED_LAZY_IMPORTS
    ]
    stale = [m for m in UNREASONED_LAZY_IMPORTS if not bare.get(m)]
    assert not missing, "function-level imports without a '# lazy: <why>':\n" + "\n".join(missing)
    assert not stale, "modules now reasoned (remove them from the list): " + ", ".join(stale)


def test_the_lazy_import_check_reads_the_reason_on_the_line(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from typing import TYPE_CHECKING\n"
        "def f():\n"
        "    import json\n"
        "    import av  # lazy: PyAV loads only for a video\n"
        "    if TYPE_CHECKING:\n"
        "        from . import x\n"
    )
    assert lazy_imports("genwidgets.probe", probe) == [(3, False), (4, True)]


def test_every_module_stays_under_the_size_limit() -> None:
    problems = oversized(SOURCES, MAX_LINES)
    assert not problems, "modules to split by noun:\n" + "\n".join(problems)


def test_module_docstrings_stay_short() -> None:
    problems = long_docstrings(SOURCES, MAX_DOCSTRING_LINES)
    hint = "\nmove the choices to docs/decisions.md and link them from the code"
    assert not problems, "\n".join(problems) + hint


def test_the_size_checks_name_the_module_and_its_nouns(tmp_path: Path) -> None:
    """The checks themselves: a long module is named with its nouns, a short one passes."""
    body = '"""One\n\ntwo\nthree."""\n\nclass Board:\n    pass\n\n\ndef render():\n    pass\n'
    big = tmp_path / "big.py"
    big.write_text(body + "x = 1\n" * 20)
    small = tmp_path / "small.py"
    small.write_text('"""One line."""\n')
    assert oversized([big, small], 20) == [
        f"{big}: {len(body.splitlines()) + 20} lines (limit 20); its nouns: Board, render"
    ]
    assert oversized([big, small], 100) == []
    assert long_docstrings([big, small], 3) == [f"{big}: module docstring of 4 lines (limit 3)"]
    assert long_docstrings([big, small], 4) == []


# --------------------------------------------------------------------------- decision links
DECISIONS = ROOT / "docs" / "decisions.md"
LINK = re.compile(r"docs/decisions\.md#([\w-]+)")


def anchors_of(markdown: str) -> set[str]:
    """The anchors a Markdown page offers: ``<a id>`` tags and GitHub's heading slugs."""
    found = set(re.findall(r'<a id="([\w-]+)"></a>', markdown))
    for heading in re.findall(r"^#{1,6} +(.+?) *$", markdown, flags=re.MULTILINE):
        found.add(re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-"))
    return found


def test_every_link_to_the_decisions_resolves() -> None:
    anchors = anchors_of(DECISIONS.read_text(encoding="utf-8"))
    broken = [
        f"{path.relative_to(ROOT)}: #{anchor}"
        for path in sorted(PACKAGE.rglob("*"))
        if path.suffix in {".py", ".js", ".css"}
        for anchor in LINK.findall(path.read_text(encoding="utf-8"))
        if anchor not in anchors
    ]
    assert not broken, "links to docs/decisions.md with no such section:\n" + "\n".join(broken)


def test_anchors_follow_githubs_heading_slugs() -> None:
    page = '<a id="mib"></a>\n### Sizes in MB are MiB\n## Forms, board, outputs and the CLI\n'
    page += "### `AsyncClient` holds a `Client`; (`genwidgets/catalog/`)\n"
    assert anchors_of(page) == {
        "mib",
        "sizes-in-mb-are-mib",
        "forms-board-outputs-and-the-cli",
        "asyncclient-holds-a-client-genwidgetscatalog",
    }


# --------------------------------------------------------------------------- private names
#
# Split by noun, not by line count (issue 32 point 4). A name with a leading underscore
# belongs to its module: modules of one package share what they need through names
# without one, listed in the lending module's ``__all__`` (the package's ``__init__``
# says which of them are public): docs/decisions.md#package-internal-names. And a
# class owns the state it declares: pieces are composed, not mixins declaring
# attributes and methods that another class provides.

#: (borrowing module, lending module, name): why it may cross for now. An entry that
#: is no longer needed fails the test, so the list only shrinks.
PRIVATE_CROSSINGS_ALLOWED: dict[tuple[str, str, str], str] = {}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_crossings(module: str, path: Path | None = None) -> list[tuple[str, str]]:
    """``(lending module, name)`` for each private name ``module`` takes from another
    module of ours: ``from .x import _y``, and ``x._y`` on a module of ours it imported
    (a private *module*, ``from .. import _config``, is a module, not a crossing)."""
    path = path or MODULES[module]
    tree = ast.parse(path.read_text())
    found: list[tuple[str, str]] = []
    modules_bound: dict[str, str] = {}  # local name -> module of ours
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = _imported_from(node, module, path)
            if base != "genwidgets" and not base.startswith("genwidgets."):
                continue
            for alias in node.names:
                if f"{base}.{alias.name}" in MODULES:
                    modules_bound[alias.asname or alias.name] = f"{base}.{alias.name}"
                elif _private(alias.name) and base != module:
                    found.append((base, alias.name))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name in MODULES:
                    modules_bound[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules_bound
            and _private(node.attr)
            and f"{modules_bound[node.value.id]}.{node.attr}" not in MODULES
        ):
            found.append((modules_bound[node.value.id], node.attr))
    return sorted(set(found))


def test_no_module_takes_a_private_name_of_another() -> None:
    seen = {
        (module, lender, name): str(path.relative_to(ROOT))
        for module, path in MODULES.items()
        for lender, name in private_crossings(module, path)
    }
    crossing = [
        f"{where}: {name} from {lender}"
        for (module, lender, name), where in sorted(seen.items(), key=lambda kv: kv[1])
        if (module, lender, name) not in PRIVATE_CROSSINGS_ALLOWED
    ]
    stale = [str(key) for key in PRIVATE_CROSSINGS_ALLOWED if key not in seen]
    assert not crossing, (
        "private names crossing module boundaries (give the name no underscore and list it "
        "in its module's __all__, or keep it where it is used):\n" + "\n".join(crossing)
    )
    assert not stale, "allowed crossings no longer made (remove them):\n" + "\n".join(stale)


def test_the_crossing_check_sees_each_spelling(tmp_path: Path) -> None:
    """The checker itself: a private name taken by ``from`` or through a module is seen;
    a private module, a dunder, a public name and the module's own names are not."""
    probe_name = "genwidgets.imgm._crossing_probe"
    probe = tmp_path / "_crossing_probe.py"

    def seen(code: str) -> list[tuple[str, str]]:
        probe.write_text(code + "\n")
        return private_crossings(probe_name, probe)

    assert seen("from .lexer import _helper") == [("genwidgets.imgm.lexer", "_helper")]
    assert seen("from . import lexer\nlexer._helper()") == [("genwidgets.imgm.lexer", "_helper")]
    assert seen("from genwidgets.imgm import lexer as lx\nlx._x") == [
        ("genwidgets.imgm.lexer", "_x")
    ]
    assert seen("def f():\n    from ..errors import _tree") == [("genwidgets.errors", "_tree")]
    assert seen("from .. import _config\n_config.home()") == []
    assert seen("from .lexer import scan_text, __all__\nfrom . import lexer\nlexer.__doc__") == []
    assert seen("from typing import _SpecialForm\nimport os\nos._exit") == []


def leaning_classes(paths: list[Path]) -> list[str]:
    """One line per class that leans on another's state: it declares attributes (a bare
    annotation in its body) that it never sets, or stubs methods under ``TYPE_CHECKING``
    that it does not have, and a class of ours mixes it with another class of ours.
    (An abstract base whose subclasses set what it declares, one base each, is fine.)"""
    facts: dict[str, tuple[Path, list[str], list[str]]] = {}
    bases: dict[str, tuple[Path, list[str]]] = {}
    for path in paths:
        for cls in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(cls, ast.ClassDef):
                continue
            names = [getattr(b, "id", getattr(b, "attr", "")) for b in cls.bases]
            bases[cls.name] = (path, names)
            declared = [
                n.target.id
                for n in cls.body
                if isinstance(n, ast.AnnAssign) and n.value is None
                if isinstance(n.target, ast.Name)
            ]
            assigned = {
                node.attr
                for node in ast.walk(cls)
                if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
                if isinstance(node.value, ast.Name) and node.value.id == "self"
            }
            stubs = [
                f.name
                for n in cls.body
                if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.dump(n.test)
                for f in n.body
                if isinstance(f, ast.FunctionDef) and not f.name.startswith("__")
            ]
            unset = [name for name in declared if name not in assigned]
            if unset or stubs:
                facts[cls.name] = (path, unset, stubs)
    found = []
    for child, (path, names) in bases.items():
        ours = [name for name in names if name in bases]
        if len(ours) < 2:
            continue
        for name in ours:
            if name in facts:
                _, unset, stubs = facts[name]
                what = ", ".join([*unset, *(f"{s}()" for s in stubs)])
                where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
                found.append(f"{where}: {child} mixes {' and '.join(ours)}; {name} leans on {what}")
    return sorted(found)


def test_no_class_leans_on_state_another_class_provides() -> None:
    problems = leaning_classes(SOURCES)
    hint = "\ncompose pieces that each own their state (see genwidgets/jobs/ledger/store.py)"
    assert not problems, "mixins declaring each other's state:\n" + "\n".join(problems) + hint


def test_the_leaning_check_tells_a_mixin_from_an_abstract_base(tmp_path: Path) -> None:
    base = "class Element:\n    control: int\n\nclass Text(Element):\n    def __init__(self):\n"
    base += "        self.control = 1\n"
    mixins = "from typing import TYPE_CHECKING\nclass Keeping:\n    path: str\n\n"
    mixins += "class Writing:\n    if TYPE_CHECKING:\n        def _put(self) -> None: ...\n\n"
    mixins += "class Store(Keeping, Writing):\n    def __init__(self):\n        self.path = ''\n"
    (tmp_path / "base.py").write_text(base)
    (tmp_path / "mixins.py").write_text(mixins)
    assert leaning_classes([tmp_path / "base.py"]) == []
    assert leaning_classes([tmp_path / "mixins.py"]) == [
        f"{tmp_path / 'mixins.py'}: Store mixes Keeping and Writing; Keeping leans on path",
        f"{tmp_path / 'mixins.py'}: Store mixes Keeping and Writing; Writing leans on _put()",
    ]


# --- one place works out a field's wire name ------------------------------------------
CATALOG = PACKAGE / "catalog"
FIELD_ATTRIBUTES = {"model_fields", "alias", "validation_alias", "serialization_alias"}
#: (module path, attribute) -> why it must read pydantic's fields itself; none today
WIRE_NAMES_ALLOWED: dict[tuple[str, str], str] = {}


def wire_name_resolutions(paths: list[Path]) -> list[str]:
    """``path:line .attr`` for each read of pydantic's field table or an alias: the
    catalog (``fields_of``, ``EndpointSpec``) answers these, by wire name."""
    found = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in FIELD_ATTRIBUTES:
                found.append(f"{path}:{node.lineno} .{node.attr}")
    return found


def test_only_the_catalog_works_out_wire_names() -> None:
    outside = [p for p in SOURCES if not p.is_relative_to(CATALOG)]
    found = [
        line
        for line in wire_name_resolutions(outside)
        if (str(Path(line.split(":")[0]).relative_to(ROOT)), line.rsplit(".", 1)[1])
        not in WIRE_NAMES_ALLOWED
    ]
    assert not found, (
        "fields read outside the catalog (ask EndpointSpec.fields / billing_fields / "
        "required_fields / prompt_fields / defaults, or catalog.fields_of / field_named; "
        "docs/decisions.md#wire-names):\n" + "\n".join(found)
    )


def test_the_wire_name_check_sees_fields_and_aliases(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "def f(m):\n    return {i.alias or n for n, i in m.model_fields.items()}\n"
        "def g(dump):\n    return dump(by_alias=True)\n"
    )
    assert wire_name_resolutions([probe]) == [f"{probe}:2 .alias", f"{probe}:2 .model_fields"]


# --- each test file beside the module it tests, by name --------------------------------
TESTS = ROOT / "tests"
#: test folders that test the whole rather than one module
CROSS_CUTTING_TESTS = {"benchmarks", "browser", "firsthour", "notebooks", "reliability"}
#: test files named after no module, each with why
TESTS_OF_NO_MODULE = {
    "tests/test_facade.py": "the facade, genwidgets/__init__.py",
    "tests/test_quality.py": "the whole package's rules",
    "tests/test_extras.py": "pyproject's extras",
    "tests/lab/test_readme_grid.py": "the README's prompt-lab example, run as written",
    "tests/lab/test_readme_batch.py": "the README's batch example, run as written",
    "tests/protocol/test_origin.py": "the key kept at the origin, across http, fetch and jobs",
    "tests/protocol/test_tolerance.py": "foreign gateways read tolerantly, across the layer",
}


def modules_a_test_may_name(package: Path) -> set[str]:
    """The names ``tests/<package>/test_<name>[_<aspect>].py`` may use: the package's
    modules (without a leading underscore), its sub-packages, and the package itself."""
    names = {p.stem.lstrip("_") for p in package.glob("*.py") if p.stem != "__init__"}
    names |= {p.name for p in package.iterdir() if (p / "__init__.py").exists()}
    return names | ({package.name} if package != PACKAGE else set())


def misnamed_test_files(tests: Path, package: Path) -> list[str]:
    """Test files under ``tests`` whose name follows no module of ``package``."""
    found = []
    for path in sorted(tests.rglob("test_*.py")):
        rel = path.relative_to(tests)
        if rel.parts[0] in CROSS_CUTTING_TESTS:
            continue
        folder = package.joinpath(*rel.parts[:-1])
        name = rel.stem.removeprefix("test_")
        names = modules_a_test_may_name(folder) if folder.is_dir() else set()
        if not any(name == m or name.startswith(m + "_") for m in names):
            found.append(str(rel))
    return found


def test_every_test_file_is_named_after_the_module_it_tests() -> None:
    """docs/decisions.md#test-names"""
    found = [f"tests/{r}" for r in misnamed_test_files(TESTS, PACKAGE)]
    unnamed = [f for f in found if f not in TESTS_OF_NO_MODULE]
    stale = [f for f in TESTS_OF_NO_MODULE if f not in found]
    assert not unnamed, (
        "test files named after no module (genwidgets/x/y.py is tested in tests/x/test_y.py "
        "or tests/x/test_y_<aspect>.py):\n" + "\n".join(unnamed)
    )
    assert not stale, "allowed test files now named after a module (remove):\n" + "\n".join(stale)


def test_the_naming_check_finds_a_test_of_no_module(tmp_path: Path) -> None:
    package, tests = tmp_path / "pkg", tmp_path / "tests"
    for path in ("pkg/lab/__init__.py", "pkg/lab/run.py", "pkg/_client.py"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    for path in ("lab/test_run.py", "lab/test_run_store.py", "lab/test_lab.py", "test_client.py",
                 "lab/test_grid.py", "test_gridz.py", "browser/test_any.py"):  # fmt: skip
        (tests / path).parent.mkdir(parents=True, exist_ok=True)
        (tests / path).write_text("")
    assert misnamed_test_files(tests, package) == ["lab/test_grid.py", "test_gridz.py"]
