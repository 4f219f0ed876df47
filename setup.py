"""The build step pyproject.toml cannot say: the teaching notebooks go inside the wheel.

They live in ``notebooks/`` (where the README and the tests find them) and are copied
into the built package as ``genwidgets/notebooks/``, so ``genwidgets notebooks DIR``
finds them in a package installed from an index. Everything else is in pyproject.toml.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

NOTEBOOKS = Path(__file__).resolve().parent / "notebooks"


class BuildWithNotebooks(build_py):
    """``build_py``, then the notebooks (``*.ipynb`` and the marimo ``*.py``) copied in."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):  # an editable install reads notebooks/
            return
        target = Path(self.build_lib) / "genwidgets" / "notebooks"
        self.mkpath(str(target))
        for path in sorted(NOTEBOOKS.iterdir()):
            if path.suffix in (".ipynb", ".py"):
                self.copy_file(str(path), str(target / path.name))


setup(cmdclass={"build_py": BuildWithNotebooks})
