"""Hostile trees, caches and output paths, drawn at random (bounded; see fuzzing.py).

- trees: FIFOs, devices, symlink loops, dangling and escaping links, undecodable and huge files,
  deep nesting, broken notebooks and .gitignore files, odd names: `scan` and `rewrite --apply`
  finish (exit 0 or 1), with no traceback, and nothing outside the tree changes;
- caches: a valid cache with random bytes changed, or with random values of its structure replaced:
  `scan` and `rewrite --apply` finish, and every file ends up either as it was or as a rewrite
  without any cache writes it (a cache of our own may be wrong about findings, as the user may
  edit any of their files, but its text never reaches a source);
- output paths: chains of symlinks ending at a regular file, nothing, a FIFO, a null or full
  device, a directory or a loop: the report is delivered or the run fails with one line and exit 2,
  and every link and device is still what it was.
"""

from __future__ import annotations

import functools
import json
import marshal
import os
import stat
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
from fuzzing import bounded, cli, no_crash
from hypothesis import given
from hypothesis import strategies as st

CUDA_PY = "import torch\n\nx = torch.zeros(2).cuda()\ntorch.cuda.synchronize()\n"


def _mknod(path: Path, major: int, minor: int) -> bool:
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
    except (OSError, AttributeError):
        return False  # not root or no CAP_MKNOD: the device cases fall back to FIFOs and links
    return True


def _node_kinds(root: Path) -> dict[str, tuple[str, str]]:
    """Every entry under root (not followed) with its type and, for links, the target."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            mode = os.lstat(path).st_mode
            kind = ("link" if stat.S_ISLNK(mode) else "fifo" if stat.S_ISFIFO(mode) else
                    "chr" if stat.S_ISCHR(mode) else "dir" if stat.S_ISDIR(mode) else "file")
            out[os.path.relpath(path, root)] = (kind, os.readlink(path) if kind == "link" else "")
    return out


# -- hostile trees ------------------------------------------------------------------------------

def _hostile(root: Path, name: str, index: int) -> None:
    base = root / f"h{index}"
    base.mkdir()
    if name == "fifo.py":
        os.mkfifo(base / "fifo.py")
    elif name == "device.py":
        if not _mknod(base / "device.py", 1, 5):
            os.mkfifo(base / "device.py")
    elif name == "link-to-dev-zero.py":
        (base / "zero.py").symlink_to("/dev/zero")
    elif name == "self-loop.py":
        (base / "loop.py").symlink_to("loop.py")
    elif name == "dir-loop":
        (base / "sub").mkdir()
        (base / "sub" / "back").symlink_to("..")
    elif name == "dangling.py":
        (base / "dangling.py").symlink_to("nowhere/x.py")
    elif name == "escape.py":
        (base / "escape.py").symlink_to("/etc/hostname")
    elif name == "undecodable.py":
        (base / "bad.py").write_bytes(b"x = '\xff\xfe'\ntorch.cuda.synchronize()\n")
    elif name == "nul.py":
        (base / "nul.py").write_bytes(b"import torch\x00\ntorch.cuda.synchronize()\n")
    elif name == "utf16.py":
        (base / "u16.py").write_bytes("import torch\ntorch.cuda.synchronize()\n".encode("utf-16"))
    elif name == "deep-parens.py":
        (base / "deep.py").write_text("import torch\nx = " + "(" * 3000 + "torch.cuda" + ")" * 3000 + "\n")
    elif name == "deep-dirs":
        deep = base.joinpath(*["d"] * 60)
        deep.mkdir(parents=True)
        (deep / "a.py").write_text(CUDA_PY)
    elif name == "notebook-deep":
        (base / "n.ipynb").write_text("[" * 100_000 + "]" * 100_000)
    elif name == "notebook-cells-not-list":
        (base / "n.ipynb").write_text(json.dumps({"cells": {"a": 1}, "nbformat": 4}))
    elif name == "notebook-source-int":
        (base / "n.ipynb").write_text(json.dumps({"cells": [{"cell_type": "code", "source": 5}], "nbformat": 4}))
    elif name == "gitignore-bad":
        (base / ".gitignore").write_text("[z-a]\n!\n\\\n**/[\n")
        (base / "a.py").write_text(CUDA_PY)
    elif name == "dir-named.py":
        (base / "pkg.py").mkdir()
        (base / "pkg.py" / "a.py").write_text(CUDA_PY)
    elif name == "non-utf8-name":
        (Path(os.fsdecode(os.fsencode(base) + b"/bad\xffname.py"))).write_text(CUDA_PY)
    elif name == "huge-line.py":
        (base / "long.py").write_text("import torch\nx = '" + "a" * 2_000_000 + "'\ntorch.cuda.synchronize()\n")
    elif name == "crlf-cr-mixed.py":
        (base / "mixed.py").write_bytes(b"import torch\r\nx = torch.zeros(1).cuda()\ry = 1\n")
    elif name == "directive-in-string.py":
        (base / "s.py").write_text('import torch\nx = torch.zeros(1).cuda(); s = "# neuron-migrate: ignore[NM102"\n')


HOSTILE = ["fifo.py", "device.py", "link-to-dev-zero.py", "self-loop.py", "dir-loop", "dangling.py", "escape.py",
           "undecodable.py", "nul.py", "utf16.py", "deep-parens.py", "deep-dirs", "notebook-deep",
           "notebook-cells-not-list", "notebook-source-int", "gitignore-bad", "dir-named.py", "non-utf8-name",
           "huge-line.py", "crlf-cr-mixed.py", "directive-in-string.py"]


@functools.cache
def _rewritten(text: str) -> str:
    """`text` as `rewrite --apply` writes it in a tree of its own."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "a.py").write_text(text)
        no_crash(cli("rewrite", "a.py", "--apply", "--no-cache", cwd=tmp))
        return (Path(tmp) / "a.py").read_text()


@bounded(20)
@given(names=st.lists(st.sampled_from(HOSTILE), min_size=1, max_size=6, unique=True), cached=st.booleans())
def test_hostile_trees(names: list[str], cached: bool, tmp_path_factory: pytest.TempPathFactory) -> None:
    top = tmp_path_factory.mktemp("tree")
    outside = top / "outside.txt"
    outside.write_text("keep")
    root = top / "project"
    root.mkdir()
    (root / "ok.py").write_text(CUDA_PY)
    for index, name in enumerate(names):
        _hostile(root, name, index)
    kinds = _node_kinds(root)
    env = {"NEURON_MIGRATE_CACHE_DIR": str(top / "cache")} if cached else {}
    flags = [] if cached else ["--no-cache"]
    for argv in (["scan", ".", "--format", "sarif"], ["rewrite", ".", "--apply"], ["scan", "."]):
        run = cli(*argv, *flags, cwd=root, env=env)
        no_crash(run)
        assert run.exit_code in (0, 1), (argv, run)
    assert outside.read_text() == "keep"
    after = _node_kinds(root)
    assert {k: v for k, v in after.items() if v[0] != "file"} == {k: v for k, v in kinds.items() if v[0] != "file"}
    assert (root / "ok.py").read_text() == _rewritten(CUDA_PY)


# -- hostile caches -----------------------------------------------------------------------------

FILES = {"a.py": CUDA_PY, "pkg/b.py": CUDA_PY + "# neuron-migrate: ignore[NM206]\n",
         "c.py": "import torch\nprint(torch.cuda)\n"}
HOSTILE_VALUES = [None, True, -1, 0, 2**70, 1.5, "", "x", "\udcff", b"", b"x" * 16, (), [], {}, frozenset({1}),
                  (1, 2, 3, 4), ("safe",), {"a": ()}, ((1, 2, 3, 4), 'os.system("x")')]


def _project(root: Path) -> None:
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _replace_at(value: Any, path: list[int], new: Any) -> Any:
    """`value` with the node reached by `path` (indices into tuples/lists/dict items) replaced."""
    if not path:
        return new
    if isinstance(value, dict):
        items = list(value.items())
        if not items:
            return new
        k, v = items[path[0] % len(items)]
        value = dict(value)
        value[k] = _replace_at(v, path[1:], new)
        return value
    if isinstance(value, (tuple, list)) and value:
        i = path[0] % len(value)
        changed = list(value)
        changed[i] = _replace_at(value[i], path[1:], new)
        return type(value)(changed)
    return new


def _outputs(root: Path, env: dict[str, str]) -> tuple[str, dict[str, str]]:
    scan = cli("scan", ".", "--format", "json", cwd=root, env=env)
    no_crash(scan)
    data = json.loads(scan.stdout)
    findings = json.dumps(sorted(json.dumps(f, sort_keys=True) for f in data["findings"]))
    rewrite = cli("rewrite", ".", "--apply", cwd=root, env=env)
    no_crash(rewrite)
    return findings, {rel: (root / rel).read_text() for rel in FILES}


@bounded(30)
@given(mutation=st.one_of(
    st.tuples(st.just("bytes"), st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=8)),
    st.tuples(st.just("truncate"), st.integers(0, 10**6)),
    st.tuples(st.just("structure"), st.lists(st.lists(st.integers(0, 50), min_size=1, max_size=7), min_size=1,
                                             max_size=4), st.lists(st.sampled_from(HOSTILE_VALUES), min_size=4, max_size=4)),
))
def test_hostile_caches(mutation: tuple[Any, ...], tmp_path_factory: pytest.TempPathFactory) -> None:
    top = tmp_path_factory.mktemp("cache")
    clean_root, root = top / "clean", top / "p"
    for r in (clean_root, root):
        r.mkdir()
        _project(r)
    expected = _outputs(clean_root, {"NEURON_MIGRATE_CACHE_DIR": str(top / "clean-cache")})
    env = {"NEURON_MIGRATE_CACHE_DIR": str(top / "cache")}
    no_crash(cli("scan", ".", cwd=root, env=env))
    (cache_file,) = (top / "cache").glob("scan-*.marshal")
    data = cache_file.read_bytes()
    if mutation[0] == "bytes":
        buf = bytearray(data)
        for offset, byte in mutation[1]:
            buf[offset % len(buf)] = byte
        data = bytes(buf)
    elif mutation[0] == "truncate":
        data = data[: mutation[1] % len(data)]
    else:
        value = marshal.loads(data)
        for path, new in zip(mutation[1], mutation[2], strict=False):
            value = _replace_at(value, [2, *path], new)  # inside the entries
        data = marshal.dumps(value)
    cache_file.write_bytes(data)
    cache_file.chmod(0o600)
    _, files = _outputs(root, env)
    for rel, text in files.items():
        assert text in (FILES[rel], expected[1][rel]), (rel, text)


# -- hostile output paths -----------------------------------------------------------------------

TERMINALS = ["regular", "missing", "missing-dir", "fifo", "null", "full", "directory", "loop"]
WRITERS = [["scan", "a.py", "--no-cache", "-q", "--output"], ["scan", "a.py", "--no-cache", "-q", "--output-sarif"],
           ["scan", "a.py", "--no-cache", "-q", "--write-baseline"], ["report", "a.py", "--no-cache", "-q", "--output-json"]]


@bounded(30)
@given(terminal=st.sampled_from(TERMINALS), links=st.integers(0, 3), writer=st.sampled_from(WRITERS),
       relative=st.booleans())
def test_hostile_output_paths(terminal: str, links: int, writer: list[str], relative: bool,
                              tmp_path_factory: pytest.TempPathFactory) -> None:
    root = tmp_path_factory.mktemp("out")
    (root / "a.py").write_text(CUDA_PY)
    end = root / "end"
    ok = terminal in ("regular", "missing", "fifo", "null")
    if terminal == "regular":
        end.write_text("old")
    elif terminal == "missing-dir":
        end = root / "nodir" / "end"
    elif terminal == "fifo":
        os.mkfifo(end)
    elif terminal in ("null", "full"):
        if not _mknod(end, 1, 3 if terminal == "null" else 7):
            pytest.skip("no device nodes here")
    elif terminal == "directory":
        end.mkdir()
    elif terminal == "loop":
        end.symlink_to("end")
    name = end
    for i in range(links):
        link = root / f"link{i}"
        link.symlink_to(os.path.relpath(name, root) if relative else name)
        name = link
    kinds = _node_kinds(root)
    got: list[bytes] = []
    reader = None
    if terminal == "fifo":
        reader = threading.Thread(target=lambda: got.append(end.read_bytes()), daemon=True)
        reader.start()
    run = cli(*writer, str(name.relative_to(root)), cwd=root)
    if reader is not None:
        reader.join(timeout=30)
    no_crash(run)
    if ok:
        assert run.exit_code in (0, 1), run
    else:
        message = run.stderr.strip()
        assert run.exit_code == 2 and len(message.splitlines()) <= 4, run  # ours: one line; typer: a box
    after = _node_kinds(root)
    for rel, (kind, target) in kinds.items():
        assert after.get(rel, ("gone", ""))[0] == kind and after[rel][1] == target, (rel, kind, after.get(rel))
    if terminal in ("regular", "missing"):
        text = end.read_text()
        assert text and text != "old"
    if terminal == "fifo":
        assert got and got[0]
    assert not [p for p in root.iterdir() if p.name.endswith(".tmp")]
