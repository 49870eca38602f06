"""Fetch the pinned third-party packages of the real-code corpus into a cache outside git.

    python benchmarks/corpus/fetch.py [--dest DIR]

Each package of `packages.yaml` is one registry artifact (a wheel or a source distribution)
pinned by file name and sha256. Wheels come through `pip download --no-deps --only-binary :all:`.
Source distributions come straight from the index's simple page (PEP 503) by their pinned file
name: `pip download` of an sdist runs its setup.py to read metadata, and the setup.py files worth
annotating are exactly those that import torch or look for nvcc. Every artifact is checked against
its sha256 before it is extracted; an sdist's top directory is stripped, so annotation paths are
the same for both kinds (`whisper/transcribe.py`, `setup.py`).

The cache is `$NEURON_MIGRATE_CORPUS_DIR`, else `~/.cache/neuron-migrate/corpus`. A package whose
extracted tree carries a marker with the artifact's sha256 is not fetched again.
"""

from __future__ import annotations

import argparse
import hashlib
import html.parser
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
PACKAGES_FILE = HERE / "packages.yaml"
SIMPLE_INDEX = "https://pypi.org/simple"
MARKER = ".corpus-sha256"


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    artifact: str
    sha256: str
    files: tuple[str, ...]

    @property
    def key(self) -> str:
        return f"{self.name}-{self.version}"


def load_packages(path: Path = PACKAGES_FILE) -> list[Package]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return [
        Package(str(p["name"]), str(p["version"]), str(p["artifact"]), str(p["sha256"]).lower(),
                tuple(str(f) for f in p["files"]))
        for p in data["packages"]
    ]


def cache_dir() -> Path:
    env = os.environ.get("NEURON_MIGRATE_CORPUS_DIR")
    return Path(env) if env else Path.home() / ".cache" / "neuron-migrate" / "corpus"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.hrefs += [v for k, v in attrs if k == "href" and v]


def _download_sdist(pkg: Package, into: Path) -> Path:
    page_url = f"{SIMPLE_INDEX}/{pkg.name}/"
    with urllib.request.urlopen(page_url, timeout=120) as resp:
        parser = _Links()
        parser.feed(resp.read().decode("utf-8", "replace"))
    for href in parser.hrefs:
        url = urllib.parse.urljoin(page_url, href)
        if urllib.parse.unquote(urllib.parse.urlsplit(url).path).rsplit("/", 1)[-1] == pkg.artifact:
            target = into / pkg.artifact
            with urllib.request.urlopen(url.split("#", 1)[0], timeout=300) as resp, target.open("wb") as out:
                shutil.copyfileobj(resp, out)
            return target
    raise RuntimeError(f"{pkg.artifact} is not listed on {page_url}")


def _download_wheel(pkg: Package, into: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:",
         "--dest", str(into), f"{pkg.name}=={pkg.version}"],
        check=True,
    )
    target = into / pkg.artifact
    if not target.is_file():
        got = ", ".join(sorted(p.name for p in into.iterdir())) or "nothing"
        raise RuntimeError(f"pip download of {pkg.name}=={pkg.version} gave {got}, not {pkg.artifact}")
    return target


def _extract(archive: Path, dest: Path) -> None:
    """Extract `archive` into `dest`, stripping an sdist's single top directory."""
    if archive.name.endswith(".whl"):
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(dest)
        return
    with tarfile.open(archive) as tf:
        members = [m for m in tf.getmembers() if m.isfile() or m.isdir()]
        tops = {m.name.split("/", 1)[0] for m in members}
        if len(tops) != 1:
            raise RuntimeError(f"{archive.name}: expected one top directory, found {sorted(tops)}")
        for m in members:
            if "/" not in m.name:
                continue
            m.name = m.name.split("/", 1)[1]
            tf.extract(m, dest, filter="data")


def fetch_one(pkg: Package, root: Path) -> Path:
    """The extracted tree of `pkg` under `root`, fetching and extracting it when missing."""
    tree = root / pkg.key
    marker = tree / MARKER
    if marker.is_file() and marker.read_text(encoding="utf-8").strip() == pkg.sha256:
        return tree
    artifacts = root / "artifacts"
    artifacts.mkdir(parents=True, exist_ok=True)
    archive = artifacts / pkg.artifact
    if not archive.is_file() or sha256_of(archive) != pkg.sha256:
        with tempfile.TemporaryDirectory(dir=artifacts) as tmp:
            download = _download_wheel if pkg.artifact.endswith(".whl") else _download_sdist
            got = download(pkg, Path(tmp))
            digest = sha256_of(got)
            if digest != pkg.sha256:
                raise RuntimeError(f"{pkg.artifact}: sha256 {digest}, pinned {pkg.sha256}")
            os.replace(got, archive)
    # Extract next to the final place, then swap it in, so a failed run never leaves half a tree.
    staging = Path(tempfile.mkdtemp(dir=root, prefix=f".{pkg.key}-"))
    staging.chmod(0o755)
    try:
        _extract(archive, staging)
        (staging / MARKER).write_text(pkg.sha256 + "\n", encoding="utf-8")
        if tree.exists():
            shutil.rmtree(tree)
        os.replace(staging, tree)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return tree


def fetch_all(root: Path | None = None, packages: list[Package] | None = None) -> dict[str, Path]:
    root = root or cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    return {pkg.name: fetch_one(pkg, root) for pkg in (packages or load_packages())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dest", type=Path, default=None, help="cache directory (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        trees = fetch_all(args.dest)
    except (OSError, RuntimeError, subprocess.CalledProcessError) as exc:
        print(f"fetch: {exc}", file=sys.stderr)
        return 1
    for name, tree in trees.items():
        print(f"{name}: {tree}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
