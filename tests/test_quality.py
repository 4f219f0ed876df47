"""The project's own standing checks: the tools (ruff, mypy, import-linter, configured in
pyproject.toml) over the package, and the few house rules no tool has."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "genwidgets"
SOURCES = sorted(PACKAGE.rglob("*.py"))

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
    done = run("mypy", "--no-incremental", "genwidgets", "benchmarks")
    assert done.returncode == 0, done.stdout + done.stderr


# --------------------------------------------------------------------------- structure
#
# The layer table and the import circles are import-linter's contracts; private names
# read through an object or a module, imports inside functions and dynamic imports are
# ruff's rules; both configured in pyproject.toml (docs/decisions.md#structure-checks).
# What follows in this file is what neither tool sees.


def test_imports_keep_the_layer_table_and_close_no_circle() -> None:
    """import-linter's contracts: layers import downward only (imports inside functions
    and under ``TYPE_CHECKING`` count), each top-level module has its layer, and no
    circle joins the modules of a package."""
    code = "import sys, importlinter.cli as c; sys.exit(c.lint_imports(no_cache=True))"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=280
    )
    assert done.returncode == 0, done.stdout + done.stderr


def circles_through_a_package(graph: grimp.ImportGraph) -> list[str]:
    """``package ⇄ module`` for each module inside a package that the package's
    ``__init__`` reaches and that reaches it back. import-linter's ``acyclic_siblings``
    compares the children of each package and sets the package's own ``__init__`` aside,
    so a circle through one is this check's (grimp is import-linter's graph)."""
    return [
        f"{package} ⇄ {module}"
        for package in sorted(m for m in graph.modules if graph.find_children(m))
        for module in sorted(graph.find_descendants(package))
        if graph.chain_exists(importer=package, imported=module)
        and graph.chain_exists(importer=module, imported=package)
    ]


def test_no_circle_runs_through_a_package() -> None:
    circles = circles_through_a_package(grimp.build_graph("genwidgets", cache_dir=None))
    assert not circles, "import circles through a package's __init__:\n" + "\n".join(circles)


def test_the_package_circle_check_sees_a_circle_through_an_init(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inner = tmp_path / "circle_probe" / "inner"
    inner.mkdir(parents=True)
    (inner.parent / "__init__.py").write_text("")
    (inner / "__init__.py").write_text("from . import a\n")
    (inner / "a.py").write_text("from . import b\n")
    (inner / "b.py").write_text("from circle_probe import inner\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("circle_probe", cache_dir=None)
    assert circles_through_a_package(graph) == [
        "circle_probe.inner ⇄ circle_probe.inner.a",
        "circle_probe.inner ⇄ circle_probe.inner.b",
    ]
    (inner / "b.py").write_text("import json\n")
    assert circles_through_a_package(grimp.build_graph("circle_probe", cache_dir=None)) == []


def test_ruff_finds_each_spelling_the_structure_rules_forbid(tmp_path: Path) -> None:
    """pyproject.toml's rules see a private name read through a module or an object,
    an import inside a function and ``importlib`` in any spelling; a ``# noqa: CODE -
    why`` on its line lets one through."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import importlib\n"
        "from importlib.resources import files\n"
        "from genwidgets.imgm import lexer\n"
        "lexer._helper()\n"
        "def f(job):\n"
        "    import json\n"
        "    from genwidgets.jobs import job as j  # noqa: PLC0415 - a reason\n"
        "    return job._state, json, j, files, importlib\n"
    )
    done = run(
        "ruff", "check", "--no-cache", "--output-format", "concise",
        "--config", str(ROOT / "pyproject.toml"), str(probe),
    )  # fmt: skip
    found = {
        (int(line), code)
        for line, code in re.findall(r":(\d+):\d+: ([A-Z]+\d+)", done.stdout)
        if code in {"SLF001", "PLC0415", "TID251"}
    }
    assert found == {(1, "TID251"), (2, "TID251"), (4, "SLF001"), (6, "PLC0415"), (8, "SLF001")}


#: The one place allowed a dynamic import: the facade's lazy table, whose every
#: entry is also spelled out under ``TYPE_CHECKING`` (pinned below).
FACADE = "genwidgets/__init__.py"


def test_the_facade_table_hides_no_dependency() -> None:
    """Each entry of ``_LAZY`` is imported by the same name from the same module
    under ``TYPE_CHECKING`` (what readers, mypy and import-linter see)."""
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


# --------------------------------------------------------------------------- docstrings
#
# Module docstrings say what and why in a few lines; the choices made where the spec is
# silent live in docs/decisions.md, linked from the code that makes them. (A module holds
# one noun, however many lines that takes: docs/decisions.md#one-noun-per-module.)
MAX_DOCSTRING_LINES = 33  # the longest is the error tree, drawn whole in errors.py


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


def test_module_docstrings_stay_short() -> None:
    problems = long_docstrings(SOURCES, MAX_DOCSTRING_LINES)
    hint = "\nmove the choices to docs/decisions.md and link them from the code"
    assert not problems, "\n".join(problems) + hint


def test_the_docstring_check_counts_the_lines(tmp_path: Path) -> None:
    long, short = tmp_path / "long.py", tmp_path / "short.py"
    long.write_text('"""One\n\ntwo\nthree."""\n\nclass Board:\n    pass\n')
    short.write_text('"""One line."""\n')
    assert long_docstrings([long, short], 3) == [f"{long}: module docstring of 4 lines (limit 3)"]
    assert long_docstrings([long, short], 4) == []


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


# --------------------------------------------------------------------------- what ruff misses
#
# A name with a leading underscore belongs to its module: modules of one package share
# what they need through names without one, listed in the lending module's ``__all__``
# (docs/decisions.md#package-internal-names). ruff's SLF001 sees a private name read
# through a module or an object (``lexer._helper``); its PLC2701 lets a package's own
# modules import each other's private names, so ``from .lexer import _helper`` is ours.
# And ruff's banned-api (TID251) bans ``importlib`` but cannot ban the ``__import__``
# builtin. Each exception to a rule says why beside it: ruff's PGH004 asks for the codes
# of a noqa comment, nothing asks for the reason.
MODULES = {
    ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): path
    for path in SOURCES
}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _imported_from(node: ast.ImportFrom, module: str, path: Path) -> str:
    """The absolute name of the module a ``from ... import`` reads (relative ones resolved)."""
    if not node.level:
        return node.module or ""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    base_parts = package.split(".")
    base_parts = base_parts[: len(base_parts) - (node.level - 1)]
    return ".".join([*base_parts, *([node.module] if node.module else [])])


def unseen_imports(module: str, path: Path) -> list[str]:
    """``line N: ...`` for each private name ``module`` imports from another module of
    ours (a private *module*, ``from .. import _config``, is a module, not a name) and
    for each ``__import__``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Name) and node.id == "__import__":
            found.append(f"line {node.lineno}: __import__")
        if not isinstance(node, ast.ImportFrom):
            continue
        base = _imported_from(node, module, path)
        if base.partition(".")[0] == "genwidgets" and base != module:
            found += [
                f"line {node.lineno}: {alias.name} from {base}"
                for alias in node.names
                if _private(alias.name) and f"{base}.{alias.name}" not in MODULES
            ]
    return found


def test_no_module_imports_what_ruff_cannot_see() -> None:
    found = [
        f"{path.relative_to(ROOT)}: {line}"
        for module, path in MODULES.items()
        for line in unseen_imports(module, path)
    ]
    assert not found, (
        "private names crossing module boundaries (give the name no underscore and list it "
        "in its module's __all__, or keep it where it is used) or __import__:\n" + "\n".join(found)
    )


def test_the_unseen_import_check_sees_each_spelling(tmp_path: Path) -> None:
    """A private name taken by ``from``, relative or not, and ``__import__`` are seen;
    a private module, a dunder, a public name and another library's names are not."""
    probe = tmp_path / "_crossing_probe.py"

    def seen(code: str) -> list[str]:
        probe.write_text(code + "\n")
        return unseen_imports("genwidgets.imgm._crossing_probe", probe)

    assert seen("from .lexer import _helper") == ["line 1: _helper from genwidgets.imgm.lexer"]
    assert seen("def f():\n    from ..errors import _tree") == [
        "line 2: _tree from genwidgets.errors"
    ]
    assert seen("from genwidgets.imgm.lexer import _x") == ["line 1: _x from genwidgets.imgm.lexer"]
    assert seen("json = __import__('json')") == ["line 1: __import__"]
    assert seen("from .. import _config\nfrom .lexer import scan_text, __all__") == []
    assert seen("from typing import _SpecialForm") == []


NOQA = re.compile(r"#\s*noqa:\s*[A-Z]+\d+(?:[\s,]+[A-Z]+\d+)*(?P<why>.*)$")


def unreasoned_exceptions(paths: list[Path]) -> list[str]:
    """``path:line`` for each ``# noqa: CODE`` with no reason after its codes."""
    found = []
    for path in paths:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = NOQA.search(line)
            if match and not re.search(r"[A-Za-z]{2}", match["why"]):
                where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
                found.append(f"{where}:{number}")
    return found


def test_every_exception_to_a_rule_says_why() -> None:
    """docs/decisions.md#structure-checks: an import inside a function, a private name
    read on another object, each ``# noqa`` in the package says why on its line."""
    found = unreasoned_exceptions(SOURCES)
    assert not found, "a `# noqa: CODE` without its reason (`# noqa: CODE - why`):\n" + "\n".join(
        found
    )


def test_the_exception_check_reads_the_reason_on_the_line(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import av  # noqa: PLC0415\n"
        "import av  # noqa: PLC0415 - PyAV loads only for a video\n"
        "import av  # noqa: F401, PLC0415 -\n"
        "x = open('f')  # noqa: SIM115 (closed by exit)\n"
    )
    assert unreasoned_exceptions([probe]) == [f"{probe}:1", f"{probe}:3"]


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
