"""The package layout holds: every import in neuron_migrate/ (module level, lazy or type-only) goes
from a package to one it may use, as the README's "Layout" section lists them; the emulated device
(backend/neuron_emu) and the tool meet only where that section says."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "neuron_migrate"

CORE = "core"  # neuron_migrate/__init__, errors, findings, config: the model every package shares

# package -> the packages it may import (itself always). Keep in step with README.md "Layout".
ALLOWED: dict[str, frozenset[str]] = {
    CORE: frozenset(),
    "ruleset": frozenset({CORE}),
    "scan": frozenset({CORE, "ruleset"}),
    "pipeline": frozenset({CORE, "ruleset", "scan"}),
    "rewrite": frozenset({CORE, "ruleset", "scan"}),
    "probe": frozenset({CORE}),
    "check": frozenset({CORE, "ruleset", "scan", "pipeline", "probe"}),
    "emit": frozenset({CORE, "ruleset", "rewrite"}),
    "api": frozenset({CORE, "ruleset", "scan", "pipeline", "rewrite", "check"}),
    "record": frozenset({CORE, "ruleset", "pipeline", "rewrite", "emit", "api"}),
    "cli": frozenset({CORE, "ruleset", "pipeline", "emit", "api", "record"}),
}

# Single modules a package may use beyond its table row, each for a stated reason.
EXCEPTIONS: dict[str, frozenset[str]] = {
    # The probe runs in the user's process: it maps notebook cells, and under --pytest it hands over
    # to the pytest plugin (which itself runs in that process).
    "probe": frozenset({"neuron_migrate.check.notebook", "neuron_migrate.check.pytest_plugin"}),
}


def package_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in ("errors", "findings", "config"):
        return CORE
    if parts[1] == "__main__":
        return "cli"
    if parts[1] == "check" and len(parts) > 2 and parts[2] == "probe":
        return "probe"
    return parts[1]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, of: str = "neuron_migrate") -> list[tuple[int, str]]:
    """(line, imported module) for every import of `of` (a top-level package) in the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}:{node.lineno}: relative import (the layout test reads absolute ones)"
            base = node.module or ""
            # `from neuron_migrate.x import y` may import the submodule y: count the deepest module.
            found += [(node.lineno, f"{base}.{a.name}" if (PACKAGE.parent / f"{base}.{a.name}".replace(".", "/")).exists()
                       or (PACKAGE.parent / (f"{base}.{a.name}".replace(".", "/") + ".py")).exists() else base)
                      for a in node.names]
    return [(line, name) for line, name in found if name == of or name.startswith(of + ".")]


def _violations() -> list[str]:
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        source = package_of(module)
        for line, target in _imports(path):
            dest = package_of(target)
            if dest == source or dest in ALLOWED[source] or target in EXCEPTIONS.get(source, ()):
                continue
            bad.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {source} imports {target} ({dest})")
    return bad


# The emulated device (backend/neuron_emu, its own package) runs inside the user's process: it shares
# the tool's op table and nothing else; only the in-process probe and the pytest plugin import it.
BACKEND = PACKAGE.parent / "backend" / "neuron_emu"
BACKEND_MAY_IMPORT = frozenset({"neuron_migrate.ruleset.ops"})
IMPORTS_BACKEND = frozenset({"probe", "neuron_migrate.check.pytest_plugin"})


def test_the_backend_uses_only_the_op_table() -> None:
    bad = [f"{path.relative_to(PACKAGE.parent)}:{line}: imports {target}"
           for path in sorted(BACKEND.rglob("*.py")) for line, target in _imports(path)
           if target not in BACKEND_MAY_IMPORT]
    assert bad == []
    # ... and what that module imports stays in core and ruleset (no scan, no libcst, no PyYAML up front).
    assert {package_of(t) for _, t in _imports(PACKAGE / "ruleset" / "ops.py")} <= {CORE, "ruleset"}


def _torch_private_names(path: Path) -> list[str]:
    """`torch._x...` / `torch.a._b...` attribute chains and imports in the file (not `torch.ops.*`,
    whose attributes are op names such as `aten._conj`)."""
    def private(parts: list[str]) -> bool:
        return (parts[:1] == ["torch"] and parts[1:2] != ["ops"]
                and any(p.startswith("_") and not p.startswith("__") for p in parts[1:]))

    found = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        parts: list[str] = []
        if isinstance(node, ast.Attribute):
            value: ast.expr = node
            while isinstance(value, ast.Attribute):
                parts.insert(0, value.attr)
                value = value.value
            parts = [value.id, *parts] if isinstance(value, ast.Name) else []
        elif isinstance(node, ast.Import):
            found.update(f"{node.lineno}: {a.name}" for a in node.names if private(a.name.split(".")))
        elif isinstance(node, ast.ImportFrom) and node.module:
            parts = node.module.split(".")
        if private(parts):
            found.add(f"{node.lineno}: {'.'.join(parts)}")
    return sorted(found)


def test_private_torch_symbols_are_used_only_through_the_seam() -> None:
    # backend/neuron_emu/_torch_private.py names every private torch symbol the emulator uses, with
    # the torch versions it was checked on; every other module goes through it.
    bad = [f"{path.relative_to(PACKAGE.parent)}:{hit}" for path in sorted(BACKEND.rglob("*.py"))
           if path.name != "_torch_private.py" for hit in _torch_private_names(path)]
    assert bad == []
    seam = _torch_private_names(BACKEND / "_torch_private.py")
    assert any("torch._C._to_dlpack" in hit for hit in seam)  # the checker sees what the seam holds


def test_only_the_probe_imports_the_backend() -> None:
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        if package_of(module) in IMPORTS_BACKEND or module in IMPORTS_BACKEND:
            continue
        bad += [f"{path.relative_to(PACKAGE.parent)}:{line}: imports {target}" for line, target in _imports(path, "neuron_emu")]
    assert bad == []


def test_every_package_is_in_the_table() -> None:
    packages = {package_of(_module_name(p)) for p in PACKAGE.rglob("*.py")}
    assert packages <= set(ALLOWED), sorted(packages - set(ALLOWED))


def test_packages_import_only_what_the_layout_allows() -> None:
    assert _violations() == []


def test_the_readme_lists_the_same_dependencies() -> None:
    readme = (PACKAGE.parent / "README.md").read_text("utf-8")
    section = readme.split("## Layout", 1)[1].split("\n## ", 1)[0]
    for package, allowed in ALLOWED.items():
        if package == CORE:
            continue
        row = next((line for line in section.splitlines() if line.startswith(f"| `{package}` |")), None)
        assert row is not None, f"README Layout lists no row for {package}"
        listed = {part.strip(" `") for part in row.split("|")[3].split(",") if part.strip(" `—")}
        assert listed == allowed, (package, listed)


@pytest.mark.parametrize("bad", [("ruleset", "neuron_migrate.scan.fixes.registry"),
                                 ("probe", "neuron_migrate.check.analyze")])
def test_the_checker_sees_a_crossing(bad: tuple[str, str]) -> None:
    source, target = bad
    assert package_of(target) not in ALLOWED[source] and target not in EXCEPTIONS.get(source, ())


def test_the_fixer_registry_implements_the_schema_names() -> None:
    from neuron_migrate.ruleset.model import FIXER_NAMES
    from neuron_migrate.scan.fixes.registry import FIXERS

    assert set(FIXERS) == FIXER_NAMES
    assert all(callable(FIXERS[name]) for name in FIXER_NAMES)
