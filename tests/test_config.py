"""Settings helpers of the base layer: how a local path is shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from genwidgets._config import shown_path


def test_paths_under_the_genwidgets_home_are_shown_from_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "elsewhere"
    monkeypatch.setenv("GENWIDGETS_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    shown = shown_path(home / "outputs" / "abc" / "0.png")
    assert shown == "$GENWIDGETS_HOME/outputs/abc/0.png"
    assert str(tmp_path) not in shown


def test_the_default_home_is_shown_with_a_tilde(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GENWIDGETS_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir("/")
    assert shown_path(tmp_path / ".genwidgets" / "outputs" / "r" / "0.mp4") == (
        "~/.genwidgets/outputs/r/0.mp4"
    )
    assert shown_path(tmp_path / "work" / "out.png") == "~/work/out.png"


def test_other_paths_show_relative_to_the_working_folder_or_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path / "gh"))
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.chdir(tmp_path)
    assert shown_path("batch/out/00001-fox.png") == "batch/out/00001-fox.png"
    assert shown_path("/opt/somewhere/secret-dir/x.png") == "x.png"
