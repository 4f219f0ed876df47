"""Settings helpers of the base layer: how a local path is shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from genwidgets._config import (
    hide_userinfo,
    is_loopback,
    is_loopback_host,
    normal_base_url,
    saved_media,
    served_url,
    shown_path,
)


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


def test_saved_media_is_previews_unless_the_environment_chooses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GENWIDGETS_SAVED_MEDIA", raising=False)
    assert saved_media() == "previews"
    for choice in ("posters", "previews", "full", " Full "):
        monkeypatch.setenv("GENWIDGETS_SAVED_MEDIA", choice)
        assert saved_media() == choice.strip().lower()
    monkeypatch.setenv("GENWIDGETS_SAVED_MEDIA", "everything")
    with pytest.raises(ValueError, match=r"'everything'.*posters, previews, full"):
        saved_media()


def test_a_kept_output_has_a_served_url_only_under_a_server_that_serves_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("GENWIDGETS_HOME", str(tmp_path))
    kept = tmp_path / "outputs" / "gw one" / "req-1" / "out-0.png"
    kept.parent.mkdir(parents=True)
    kept.write_bytes(b"png")
    monkeypatch.delenv("GENWIDGETS_OUTPUTS_URL", raising=False)
    assert served_url(kept) is None  # a kernel no such server started (nbclient, VS Code)
    monkeypatch.setenv("GENWIDGETS_OUTPUTS_URL", "/user/ada/genwidgets/outputs/")
    assert served_url(kept) == "/user/ada/genwidgets/outputs/gw%20one/req-1/out-0.png"
    elsewhere = tmp_path / "ledger.sqlite3"
    elsewhere.write_bytes(b"")
    assert served_url(elsewhere) is None  # not under outputs/: never linked
    assert served_url(tmp_path / "outputs" / ".." / "ledger.sqlite3") is None
    monkeypatch.setenv("GENWIDGETS_OUTPUTS_URL", "http://elsewhere.example/")
    assert served_url(kept) is None  # a path on the same server, never another origin


def test_the_clients_defaults_have_one_home() -> None:
    """The client, its gateway, the async client, fetches and downloads all take their
    defaults from _config (as httpx's): one number, read in one place."""
    import asyncio
    import inspect

    import httpx

    from genwidgets import AsyncClient, Client, _config
    from genwidgets.jobs import downloads
    from genwidgets.protocol import fetch
    from genwidgets.protocol.http import Gateway

    wanted = {
        "timeout": _config.DEFAULT_TIMEOUT_S,
        "max_retries": _config.DEFAULT_MAX_RETRIES,
        "max_in_flight": _config.DEFAULT_MAX_IN_FLIGHT,
    }
    for made in (Client.__init__, Gateway.__init__):
        params = inspect.signature(made).parameters
        assert {name: params[name].default for name in wanted} == wanted
    assert (
        httpx.Timeout(_config.FETCH_TIMEOUT_S, connect=_config.FETCH_CONNECT_TIMEOUT_S)
        == fetch.DEFAULT_TIMEOUT
    )
    assert downloads.DEFAULT_TIMEOUT is fetch.DEFAULT_TIMEOUT
    assert downloads.DEFAULT_MAX_BYTES == fetch.MAX_READ_BYTES == _config.MAX_FETCH_BYTES
    client = AsyncClient("http://127.0.0.1:9", "sk-defaults-test")  # never sends anything
    try:
        assert client._pool.workers == _config.DEFAULT_MAX_IN_FLIGHT
    finally:
        asyncio.run(client.aclose())


def test_this_machine_is_told_by_address_never_by_how_a_name_begins() -> None:
    assert [is_loopback_host(h) for h in ("localhost", "127.0.0.1", "127.5.5.5", "[::1]")] == [
        True
    ] * 4
    others = ("example.com", "10.0.0.1", "0.0.0.0", None, "127.example.com", "127.0.0.1.example")
    assert [is_loopback_host(h) for h in others] == [False] * 6
    assert is_loopback("http://[::1]:8000/x") and is_loopback("http://LOCALHOST:1/")
    assert not is_loopback("http://127.evil.example/queue")


def test_the_key_is_refused_over_plain_http_to_a_host_named_like_loopback() -> None:
    import genwidgets as gw

    with pytest.raises(ValueError, match="allow_insecure"):
        gw.Client("http://127.evil.example", "sk-123456")


def test_a_relative_home_stays_where_it_was_first_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``GENWIDGETS_HOME=gw-home`` then ``%cd data``: the outputs stay beside their
    ledger (they went to data/gw-home, and output paths were relative)."""
    from genwidgets._config import home

    relative = f"gw-home-{tmp_path.name}"  # a value no other test resolved
    (tmp_path / "data").mkdir()
    monkeypatch.setenv("GENWIDGETS_HOME", relative)
    monkeypatch.chdir(tmp_path)
    first = home()
    monkeypatch.chdir(tmp_path / "data")
    assert home() == first == tmp_path / relative and first.is_absolute()


def test_a_gateway_address_no_request_could_go_to_is_refused_naming_the_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An unclosed IPv6 bracket was Python's bare "Invalid IPv6 URL"; another scheme or a
    port out of range made a client whose first create was "sent, outcome unknown"."""
    import genwidgets as gw

    for url in ("https://[::1", "https://gw.test:99999", "ftp://gw.test", "gw.test"):
        with pytest.raises(ValueError, match=r"base_url .* is not a gateway address: expected"):
            gw.Client(url, "sk-123456", ledger=False)
    monkeypatch.setenv("GENWIDGETS_BASE_URL", "https://alice:pw-SECRET@[::1")
    with pytest.raises(ValueError, match="GENWIDGETS_BASE_URL 'https://alice:\\*\\*\\*@") as bad:
        gw.Client(api_key="sk-123456", ledger=False)
    assert "SECRET" not in str(bad.value)
    assert normal_base_url("https://[::1") == "https://[::1"  # stored names never raise
    with gw.Client("https://[::1]:8443/", "sk-123456", ledger=False) as client:
        assert client.gateway_name == "https://[::1]:8443"


def test_a_password_holding_an_at_sign_is_masked_whole() -> None:
    """The userinfo ends at the last ``@`` before the host, as URL parsers split it:
    masking to the first ``@`` showed the password's tail in every name and row."""
    import genwidgets as gw

    assert hide_userinfo("https://alice:se@cret@gw.test/x@y") == "https://alice:***@gw.test/x@y"
    assert hide_userinfo("see https://tok@en@gw.test and a@b") == "see https://***@gw.test and a@b"
    with gw.Client("https://alice:se@cret@GW.test", "sk-123456", ledger=False) as client:
        assert client.gateway_name == "https://alice:***@gw.test"
        assert "cret" not in repr(client)
