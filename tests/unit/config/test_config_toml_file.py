"""config.toml load and atomic save (R-CFG-5, R-PATH-1)."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from app.config import toml_file
from app.config.errors import ConfigFileError, ConfigWriteError
from app.config.schema import Config


def test_absent_file_is_all_defaults(tmp_path: Path) -> None:
    # R-PATH-1
    loaded = toml_file.load(tmp_path / "config.toml")
    assert loaded.config == Config()
    assert loaded.raw is None and toml_file.parse(loaded.raw, tmp_path / "config.toml").as_string() == ""


def test_unknown_keys_load_and_are_logged_by_name_only(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # R-CFG-5: unknown keys never make load fail
    path = tmp_path / "config.toml"
    path.write_text('[limits]\nmax_connections = 5\nmystery = "s3cret"\n\n[plugins.x]\nenabled = true\n')
    with caplog.at_level(logging.WARNING):
        loaded = toml_file.load(path)
    assert loaded.config.limits.max_connections == 5
    assert loaded.unknown_keys == ("limits.mystery", "plugins")
    assert "limits.mystery" in caplog.text and "s3cret" not in caplog.text


def test_invalid_toml_names_line_not_content(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[providers.p]\napi_key = "sk-secret\n')
    with pytest.raises(ConfigFileError) as info:
        toml_file.load(path)
    assert "line" in str(info.value) and "sk-secret" not in str(info.value)


def test_schema_errors_name_fields_not_values(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[limits]\nmax_connections = "lots-of-them"\n')
    with pytest.raises(ConfigFileError) as info:
        toml_file.load(path)
    assert "limits.max_connections" in str(info.value)
    assert "lots-of-them" not in str(info.value)
    assert info.value.errors[0]["field"] == "limits.max_connections"


def test_save_is_0600_even_with_a_permissive_umask(tmp_path: Path) -> None:
    # R-CFG-5
    path = tmp_path / "config.toml"
    path.write_text("# old\n")
    os.chmod(path, 0o644)
    old_umask = os.umask(0)
    try:
        toml_file.save(path, "# new\n")
    finally:
        os.umask(old_umask)
    assert path.read_text() == "# new\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["config.toml"]  # no temp file left


def test_save_creates_a_missing_config_dir_0700(tmp_path: Path) -> None:
    path = tmp_path / "cfg" / "config.toml"
    toml_file.save(path, "a = 1\n")
    assert stat.S_IMODE((tmp_path / "cfg").stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_failed_replace_leaves_the_old_file_and_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # R-CFG-5: a failure at the rename leaves the old bytes
    path = tmp_path / "config.toml"
    path.write_bytes(b"# old\n")

    def boom(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("app.config.toml_file.os.replace", boom)
    with pytest.raises(OSError):
        toml_file.save(path, "# new\n")
    assert path.read_bytes() == b"# old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["config.toml"]


def test_symlinked_config_is_written_through(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "zeroclaw.toml"
    real.parent.mkdir()
    real.write_text("# old\n")
    link = tmp_path / "config.toml"
    link.symlink_to(real)
    toml_file.save(link, "# new\n")
    assert link.is_symlink() and real.read_text() == "# new\n"


def test_render_refuses_text_that_would_not_read_back(tmp_path: Path) -> None:
    doc = toml_file.parse(b"[limits]\nmax_connections = 5\n", tmp_path / "config.toml")
    with pytest.raises(ConfigWriteError):
        toml_file.render(doc, Config())  # the document says 5, the expectation says 1024
