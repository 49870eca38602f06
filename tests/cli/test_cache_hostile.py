"""A scan cache is data from disk: whoever wrote it, whatever it holds, it never crashes a scan,
never serves results for other content, and never puts its text into a source file."""

from __future__ import annotations

import json
import marshal
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from neuron_migrate.ruleset.load import load_pack
from neuron_migrate.scan import cache as cache_mod
from neuron_migrate.scan import engine
from neuron_migrate.scan.cache import CACHE_DIR_NAME

CUDA = "import torch\n\nx = torch.zeros(2).cuda()\ntorch.cuda.synchronize()\n"
PAYLOAD = '__import__("os").system("echo pwned")'


@pytest.fixture(scope="module")
def pack():
    return load_pack()


def _dump(result: Any) -> str:
    return json.dumps([[fr.path, [f.to_dict() for f in fr.findings], [list(map(str, d.__repr__())) for d in fr.directives]]
                       for fr in result.files], sort_keys=True)


def _cache_file(root: Path) -> Path:
    (found,) = (root / CACHE_DIR_NAME).glob("scan-*.marshal")
    return found


def _rewrite_cache(root: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    """Load the cache, let `change` edit its entries in place, write it back (mode 0600, ours)."""
    path = _cache_file(root)
    fmt, key, entries = marshal.loads(path.read_bytes())
    change(entries)
    path.write_bytes(marshal.dumps((fmt, key, entries)))
    path.chmod(0o600)
    return path


def _poison_fixes(entries: dict[str, Any]) -> None:
    """Every fix edit of every finding replaced by code that runs a command."""
    for rel, entry in list(entries.items()):
        rows = tuple(
            row[:8] + (tuple(fix[:3] + (tuple((span, PAYLOAD) for span, _ in fix[3]),) + fix[4:] for fix in row[8]),)
            + row[9:]
            for row in entry[cache_mod.ROWS]
        )
        entries[rel] = entry[: cache_mod.ROWS] + (rows,) + entry[cache_mod.ROWS + 1:]


def _scan(root: Path, pack: Any, **kw: Any) -> Any:
    return engine.scan_paths([root], pack, jobs=1, **kw)


# -- who wrote it -------------------------------------------------------------------------------

@pytest.mark.parametrize("how", ["another user", "group-writable", "world-writable"])
def test_a_cache_file_others_could_write_is_ignored(how: str, tmp_path: Path, pack: Any) -> None:
    (tmp_path / "a.py").write_text(CUDA)
    clean = _scan(tmp_path, pack)
    path = _rewrite_cache(tmp_path, _poison_fixes)
    if how == "another user":
        if os.geteuid() != 0:
            pytest.skip("only root can give a file to another user")
        os.chown(path, 12345, 12345)
        path.chmod(0o644)
    else:
        path.chmod(0o620 if how == "group-writable" else 0o602)
    result = _scan(tmp_path, pack)
    assert len(result.warnings) == 1 and "ignoring the scan cache" in result.warnings[0], result.warnings
    assert _dump(result) == _dump(clean) and PAYLOAD not in _dump(result)


def test_a_cache_file_that_is_a_symlink_is_not_followed(tmp_path: Path, pack: Any) -> None:
    (tmp_path / "a.py").write_text(CUDA)
    clean = _scan(tmp_path, pack)
    path = _cache_file(tmp_path)
    elsewhere = tmp_path / "planted.marshal"
    path.rename(elsewhere)
    path.symlink_to(elsewhere)
    result = _scan(tmp_path, pack)
    assert _dump(result) == _dump(clean) and result.warnings


def test_a_planted_gitignore_link_is_not_written_through(tmp_path: Path, pack: Any) -> None:
    (tmp_path / "a.py").write_text(CUDA)
    (tmp_path / CACHE_DIR_NAME).mkdir()
    victim = tmp_path / "victim"
    (tmp_path / CACHE_DIR_NAME / ".gitignore").symlink_to(victim)
    _scan(tmp_path, pack)
    assert not victim.exists()


# -- what it holds ------------------------------------------------------------------------------

def test_a_poisoned_cache_of_our_own_never_reaches_a_source_file(
    tmp_path: Path, cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's attack: fix edit text in the cache becomes code in the file `rewrite --apply` writes."""
    project = tmp_path / "p"
    project.mkdir()
    (project / "a.py").write_text(CUDA)
    monkeypatch.setenv("NEURON_MIGRATE_CACHE_DIR", str(tmp_path / "cache"))
    assert cli("scan", ".", cwd=project).exit_code == 1
    (found,) = (tmp_path / "cache").glob("scan-*.marshal")
    fmt, key, entries = marshal.loads(found.read_bytes())
    _poison_fixes(entries)
    found.write_bytes(marshal.dumps((fmt, key, entries)))
    shown = cli("scan", ".", "--format", "json", cwd=project)
    assert "echo pwned" in shown.stdout  # the poisoned rows were served to `scan`: the attack is live
    run = cli("rewrite", ".", "--apply", cwd=project)
    assert run.exit_code in (0, 1), run
    text = (project / "a.py").read_text()
    assert "pwned" not in text and 'x = torch.zeros(2).to("neuron")' in text, text


def _malformed_variants() -> list[tuple[str, Callable[[tuple[Any, ...]], Any]]]:
    rows, directives = cache_mod.ROWS, cache_mod.DIRECTIVES

    def row(change: Callable[[tuple[Any, ...]], Any]) -> Callable[[tuple[Any, ...]], Any]:
        return lambda e: e[:rows] + ((change(e[rows][0]),) + e[rows][1:],) + e[rows + 1:]

    return [
        ("entry is a list", lambda e: list(e)),
        ("entry too short", lambda e: e[:5]),
        ("entry too long", lambda e: e + (1,)),
        ("mtime is a string", lambda e: ("x",) + e[1:]),
        ("digest is a str", lambda e: e[:5] + ("abc",) + e[6:]),
        ("rows is a dict", lambda e: e[:rows] + ({},) + e[rows + 1:]),
        ("row too short", row(lambda r: r[:12])),
        ("row is a list", row(list)),
        ("unknown severity", row(lambda r: r[:1] + ("fatal",) + r[2:])),
        ("severity unhashable", row(lambda r: r[:1] + ([],) + r[2:])),
        ("fix target unhashable", row(lambda r: r[:8] + ((({},) + r[8][0][1:],),) + r[9:])),
        ("span of strings", row(lambda r: r[:4] + (("1", "2", "3", "4"),) + r[5:])),
        ("span of three", row(lambda r: r[:4] + ((1, 2, 3),) + r[5:])),
        ("message is None", row(lambda r: r[:5] + (None,) + r[6:])),
        ("fix row truncated", row(lambda r: r[:8] + ((r[8][0][:2],),) + r[9:])),
        ("edit replacement is bytes", row(lambda r: r[:8] + ((r[8][0][:3] + ((((3, 4, 3, 11), b"x"),),) + r[8][0][4:],),) + r[9:])),
        ("unknown target", row(lambda r: r[:8] + ((("gpu",) + r[8][0][1:],),) + r[9:])),
        ("cell is a float", row(lambda r: r[:9] + (1.5,) + r[10:])),
        ("details hold a set", row(lambda r: r[:11] + ({"k": {1, 2}},) + r[12:])),
        ("fingerprint is an int", row(lambda r: r[:12] + (7,))),
        ("directive rows hold a str", lambda e: e[:directives] + (("x",),)),
        ("directive codes not strings", lambda e: e[:directives] + (((1, (2,), None, None),),)),
        ("bool for an int", lambda e: (True,) + e[1:]),
    ]


@pytest.mark.parametrize(("name", "change"), _malformed_variants(), ids=[n for n, _ in _malformed_variants()])
def test_a_malformed_entry_is_a_miss_never_a_crash(name: str, change: Callable[[Any], Any], tmp_path: Path,
                                                   pack: Any, cli: Callable[..., Any]) -> None:
    (tmp_path / "a.py").write_text(CUDA)
    clean = _scan(tmp_path, pack)
    _rewrite_cache(tmp_path, lambda entries: entries.update({"a.py": change(entries["a.py"])}))
    assert _dump(_scan(tmp_path, pack)) == _dump(clean)
    _rewrite_cache(tmp_path, lambda entries: entries.update({"a.py": change(entries["a.py"])}))
    for argv in (["scan", "."], ["rewrite", "."]):
        run = cli(*argv, cwd=tmp_path)
        assert run.exit_code == 1 and "Traceback" not in run.stderr and "internal error" not in run.stderr, run


def test_malformed_top_level_layouts_are_rebuilt(tmp_path: Path, pack: Any) -> None:
    (tmp_path / "a.py").write_text(CUDA)
    clean = _scan(tmp_path, pack)
    path = _cache_file(tmp_path)
    fmt, key, _ = marshal.loads(path.read_bytes())
    for data in (marshal.dumps(None), marshal.dumps((fmt, key)), marshal.dumps((fmt, key, {1: 2, "a.py": None})),
                 marshal.dumps((fmt, key, [])), b"\x00" * 100, marshal.dumps((fmt, key, {"a.py": (0,) * 9}))):
        path.write_bytes(data)
        path.chmod(0o600)
        assert _dump(_scan(tmp_path, pack)) == _dump(clean)


# -- whether it still describes the file -------------------------------------------------------

@pytest.mark.parametrize("racy_ns", [cache_mod.RACY_NS, 0])
def test_a_same_size_edit_with_the_mtime_restored_is_seen(racy_ns: int, tmp_path: Path, pack: Any,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """`cp -p` / `rsync -a` / `tar` restore the mtime; the ctime (racy_ns=0: trusted on stat alone)
    or the content digest (a recent file) still tells."""
    monkeypatch.setattr(cache_mod, "RACY_NS", racy_ns)
    source = tmp_path / "a.py"
    source.write_text(CUDA)
    first = _scan(tmp_path, pack)
    assert [f.span.line for f in first.findings] == [3, 4]
    before = source.stat()
    source.write_text(CUDA.replace("x = torch.zeros(2).cuda()\n", "\nx =torch.zeros(2).cuda()\n"))
    os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert source.stat().st_size == before.st_size and source.stat().st_mtime_ns == before.st_mtime_ns
    assert [f.span.line for f in _scan(tmp_path, pack).findings] == [4, 5]


def test_an_entry_whose_stat_matches_within_the_clock_tick_is_verified(tmp_path: Path, pack: Any) -> None:
    """A change in the same tick as the scan keeps the ctime: such an entry is checked by content."""
    source = tmp_path / "a.py"
    source.write_text(CUDA)
    _scan(tmp_path, pack)
    source.write_text(CUDA.replace("synchronize", "empty_cache"))  # same size
    st = source.stat()

    def same_tick(entries: dict[str, Any]) -> None:  # as if the first scan had seen this stat
        e = entries["a.py"]
        entries["a.py"] = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_mode, st.st_ino) + e[5:]

    _rewrite_cache(tmp_path, same_tick)
    assert "torch.cuda.empty_cache" in {f.symbol for f in _scan(tmp_path, pack).findings}


def test_a_touched_file_is_a_hit_by_content(tmp_path: Path, pack: Any) -> None:
    source = tmp_path / "a.py"
    source.write_text(CUDA)
    _scan(tmp_path, pack)
    os.utime(source, ns=(1, 1))

    class NoParsing:
        def analyze_source(self, *a: Any, **k: Any) -> Any:
            raise AssertionError("a touched file with the same content was parsed again")

        def analyze_file_path(self, *a: Any, **k: Any) -> Any:
            raise AssertionError

    assert len(_scan(tmp_path, pack, analyzer=NoParsing()).findings) == 2
    assert marshal.loads(_cache_file(tmp_path).read_bytes())[2]["a.py"][0] == 1  # re-stamped


def test_rewrite_scans_files_with_fixes_from_the_source(tmp_path: Path, pack: Any) -> None:
    (tmp_path / "a.py").write_text(CUDA)
    (tmp_path / "b.py").write_text("import torch\n\nprint(torch.cuda)\n")
    _scan(tmp_path, pack)
    seen: list[str] = []

    class Recording:
        def analyze_source(self, source: str, path: str, pack: Any, *, cell: Any = None, prelude: str = "") -> Any:
            seen.append(path)
            from neuron_migrate.scan import analyze
            return analyze.analyze_source(source, path, pack, cell=cell)

        def analyze_file_path(self, path: str, pack: Any) -> Any:
            return []

    _scan(tmp_path, pack, analyzer=Recording(), cached_fixes=False)
    assert seen == ["a.py"]  # b.py's finding has no fix: served from the cache
    assert stat.S_IMODE(_cache_file(tmp_path).stat().st_mode) == 0o600


def test_a_clock_that_went_back_does_not_hide_an_edit(tmp_path: Path, pack: Any) -> None:
    """The first scan ran with the clock an hour ahead: the edit's ctime is older than that check,
    yet it differs from the ctime the entry recorded, so the entry is verified by content."""
    source = tmp_path / "a.py"
    source.write_text(CUDA)
    _scan(tmp_path, pack)
    before = source.stat()
    source.write_text(CUDA.replace("synchronize", "empty_cache"))  # same size
    os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns))
    _rewrite_cache(tmp_path, lambda entries: entries.update(
        {"a.py": entries["a.py"][:6] + (entries["a.py"][6] + 3600 * 10**9,) + entries["a.py"][7:]}))
    assert "torch.cuda.empty_cache" in {f.symbol for f in _scan(tmp_path, pack).findings}
