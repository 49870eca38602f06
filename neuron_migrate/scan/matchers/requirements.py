"""`match.requirements`: the dependencies a project declares, in the files pip, build backends and
conda read.

Dependency files: requirements files (`requirements*.txt`, `requirement.txt`, `dev-requirements.in`, `constraints.txt`,
any `.txt`/`.in` in a `requirements/` directory), `pyproject.toml` (PEP 621 dependencies and
extras, build requirements, dependency groups, Poetry's dependency tables; uv's and Poetry's
package indexes), `setup.cfg` (install/setup requirements and extras) and conda's
`environment*.yml` (or any YAML file with a top-level `dependencies:` list, `scan.engine`), and
Replicate's `cog.yaml` (`build.python_packages`). A dependency is matched by the rules' globs on
its keys:

- its name as pip compares names (PEP 503: `Flash_Attn` is `flash-attn`);
- the name with its version's local label (`torch==2.4.0+cu121`: `torch+cu121`) or conda build
  string (`pytorch=2.1=py3.10_cuda11.8_0`: `pytorch+py3.10_cuda11.8_0`);
- `index:` and a package index or find-links URL (`--extra-index-url .../whl/cu121`);
- for a VCS checkout or a forge's source archive with no `#egg=` (`git+https://github.com/NVIDIA/apex`),
  its repository's name and `repo:` with its owner and name (`repo:dao-ailab/flash-attention`: a
  repository need not be named like the package it builds).

A file its format's parser rejects is reported (NM008) at the parser's line, and yields nothing
else. Requirements files have no syntax to reject: a line that names no dependency is passed over.
"""

from __future__ import annotations

import bisect
import configparser
import fnmatch
import re
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from neuron_migrate.findings import Finding, Span
from neuron_migrate.ruleset.model import Rule
from neuron_migrate.scan.diagnostics import BROKEN_DEPENDENCIES, Diagnosis

# What the walk's name test lets through (`is_dependency_file` decides).
DEPENDENCY_NAMES = ("pyproject.toml", "setup.cfg", "*requirement*.txt", "*requirement*.in", "*constraints*.txt",
                    "*constraints*.in", "environment*.yml", "environment*.yaml")
_REQUIREMENTS_NAME = re.compile(r"(?:[\w.-]*[-_.])?(?:requirements?|constraints)(?:[-_.][\w.-]*)?\.(?:txt|in)", re.I)
_ENVIRONMENT_NAME = re.compile(r"environment(?:[-_.][\w.-]*)?\.ya?ml", re.I)
_CONDA_DEPENDENCIES = re.compile(r"^dependencies:[ \t]*(?:#[^\n]*)?\n(?:[ \t]*(?:#[^\n]*)?\n)*[ \t]*- ", re.M)
_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
_SEPARATORS = re.compile(r"[-_.]+")
# The keywords of a build script's `setup()` that list dependencies, read like a requirements file
# (`scan.analyze`).
SETUP_DEPENDENCIES = frozenset({"install_requires", "extras_require", "setup_requires", "tests_require"})
_OTHER_DEVICE_BUILDS = ("cpu", "xpu", "rocm", "hpu", "npu", "neuron")  # local labels of builds that are not CUDA's
_LOCAL = re.compile(r"\d\+([A-Za-z0-9][A-Za-z0-9._]*)")  # a version's local label (`2.4.0+cu121`)
INDEX_OPTIONS = ("--index-url", "--extra-index-url", "-i", "--find-links", "-f")
_EGG = re.compile(r"#egg=([A-Za-z0-9._-]+)")
_EXTRAS = re.compile(r"\s*\[([^\]]*)\]")
_WHEEL = re.compile(r"/([A-Za-z0-9_.]+)-[^/]*\.(?:whl|tar\.gz|zip)(?:[#?]|$)")
# A repository's owner and name: a VCS URL's path (`git+ssh://git@host/owner/name.git@v1`), or a
# forge archive's first two segments (`https://github.com/owner/name/archive/v1.zip`).
_VCS = re.compile(r"(?:git|hg|svn|bzr)\+[a-z]+://[^/]+/(?:[^#?]*/)?([\w.-]+)/([\w.-]+?)(?:\.git)?(?:@[^/#?]*)?/?(?:[#?]|$)")
_ARCHIVE = re.compile(r"[a-z]+://[^/]+/([\w.-]+)/([\w.-]+?)(?:\.git)?/(?:archive|tarball|zipball)/")


@dataclass(frozen=True, slots=True)
class Declared:
    """One declared dependency or package index: where it is written and the keys rules match."""

    line: int
    col: int
    end_col: int
    text: str  # as written: the finding's symbol
    keys: tuple[str, ...]


def is_dependency_file(rel: str) -> bool:
    parent, _, name = rel.rpartition("/")
    if name in ("pyproject.toml", "setup.cfg") or _REQUIREMENTS_NAME.fullmatch(name) or _ENVIRONMENT_NAME.fullmatch(name):
        return True
    return parent.rpartition("/")[2] == "requirements" and name.endswith((".txt", ".in"))


def normalise(name: str) -> str:
    return _SEPARATORS.sub("-", name).lower()


def requirement_findings(text: str, rel: str, rules: Sequence[Rule], *, conda: bool = False) -> list[Finding]:
    """Each rule's findings on the dependencies `text` declares (`conda`: it is a conda
    environment whatever its name). Raises Diagnosis (NM008) for a file its format's parser rejects."""
    found: list[Finding] = []
    lines = text.split("\n")
    for dep in declared(text, rel, conda=conda):
        for rule in matching(dep.keys, rules):
            found.append(rule.finding(rel, Span(dep.line, dep.col, dep.line, dep.end_col), dep.text, lines[dep.line - 1]))
    return found


def matching(keys: Sequence[str], rules: Sequence[Rule]) -> list[Rule]:
    """The rules whose `match.requirements` globs match one of a dependency's keys."""
    return [rule for rule in rules
            if any(fnmatch.fnmatchcase(key, pattern) for key in keys for pattern in rule.match.requirements)]


def is_conda_environment(text: str) -> bool:
    """Whether YAML text reads as a conda environment (a top-level `dependencies:` list), as
    `ffcv-conda.yml` or `env.yaml` may, beside the `environment*.yml` names."""
    return _CONDA_DEPENDENCIES.search(text) is not None


def is_cog_config(rel: str) -> bool:
    """Replicate's build spec (`cog.yaml`): its `build.python_packages` are requirement lines and
    its `build.run` commands shell commands."""
    return rel.rpartition("/")[2] == "cog.yaml"


def declared(text: str, rel: str, *, conda: bool = False) -> list[Declared]:
    name = rel.rpartition("/")[2]
    if name == "pyproject.toml":
        return _pyproject(text)
    if name == "cog.yaml":
        return _cog(text)
    if name == "setup.cfg":
        return _setup_cfg(text)
    if conda or _ENVIRONMENT_NAME.fullmatch(name):
        return _environment(text)
    return list(_requirements_lines(text))


# -- requirements files ----------------------------------------------------------------------

def _requirements_lines(text: str) -> Iterator[Declared]:
    lines = text.split("\n")
    number = 0
    while number < len(lines):
        start = number
        line = lines[number]
        number += 1
        while line.endswith("\\") and number < len(lines):  # a continued line is one requirement
            line = line[:-1] + " " + lines[number].strip()
            number += 1
        code = re.sub(r"(^|\s)#.*", "", line).rstrip()
        stripped = code.strip()
        if not stripped:
            continue
        col = len(code) - len(code.lstrip())
        dep = _requirement_line(stripped)
        if dep:
            written = lines[start]
            shown = stripped if stripped in written else written.strip()
            at = written.find(shown) if shown in written else col
            yield Declared(start + 1, at, at + len(shown), shown, dep)


def _requirement_line(line: str) -> tuple[str, ...] | None:
    """The keys of one logical line of a requirements file (options other than indexes and
    editable installs name no dependency)."""
    if line.startswith("-"):
        if line.startswith("--"):  # `--extra-index-url URL`, `--extra-index-url=URL`
            option, _, value = line.replace("=", " ", 1).partition(" ")
        else:  # `-f URL`, `-fURL`
            option, value = line[:2], line[2:]
        value = value.strip()
        if option in INDEX_OPTIONS and value:
            return (f"index:{value}",)
        if option in ("-e", "--editable") and value:
            return _url_keys(value) or _path_keys(value) or None
        return None
    return requirement_keys(line)


def requirement_keys(spec: str) -> tuple[str, ...]:
    """The keys of a PEP 508 requirement (`flash-attn>=2.5`, `torch==2.4.0+cu121`,
    `name @ https://...`) or a bare URL to an archive or VCS checkout."""
    spec = spec.split(";", 1)[0].strip()  # environment markers
    if "://" in spec and " @ " not in spec and "@" not in spec.split("://", 1)[0]:
        return _url_keys(spec)
    if spec.startswith((".", "/", "~")) or "/" in spec.partition(" ")[0]:
        return _path_keys(spec)
    match = _NAME.match(spec)
    if match is None:
        return ()
    name = normalise(match.group())
    local = _LOCAL.search(spec, match.end())
    # An extra that is itself a CUDA package or build (`optimum[onnxruntime-gpu]`, `jax[cuda12]`)
    # installs it.
    extras = _EXTRAS.match(spec, match.end())
    named = tuple(normalise(e.strip()) for e in extras.group(1).split(",") if e.strip()) if extras else ()
    return _keys(name, local.group(1).lower() if local is not None else None) + named


def _path_keys(path: str) -> tuple[str, ...]:
    """A local checkout installed by its path (`submodules/diff-gaussian-rasterization`, 3D
    Gaussian Splatting's environment.yml): the directory names the package."""
    match = _NAME.match(path.split(None, 1)[0].rstrip("/").rsplit("/", 1)[-1])
    return (normalise(match.group()),) if match is not None else ()


def _keys(name: str, label: str | None) -> tuple[str, ...]:
    """A dependency's keys: its name, and with its version's local label; a build for another
    device (`triton==3.2.0+xpu`, `torch==2.4.0+cpu`) is keyed by the label only, so it is not
    taken for the CUDA package of that name."""
    if label is None:
        return (name,)
    if label.startswith(_OTHER_DEVICE_BUILDS):
        return (f"{name}+{label}",)
    return (name, f"{name}+{label}")


def _url_keys(url: str) -> tuple[str, ...]:
    """A URL's dependency: `#egg=name`, or the repository a VCS URL or forge archive names, or an
    archive's file name (`flash_attn-2.5.8+cu122...whl`)."""
    egg = _EGG.search(url)
    if egg is not None:
        return requirement_keys(egg.group(1))
    repo = _VCS.match(url) or _ARCHIVE.match(url)
    if repo is not None:
        owner, name = repo.group(1).lower(), normalise(repo.group(2))
        return (name, f"repo:{owner}/{name}")
    wheel = _WHEEL.search(url)
    if wheel is not None:
        local = _LOCAL.search(url, wheel.end(1))
        return _keys(normalise(wheel.group(1)), local.group(1).lower() if local is not None else None)
    return ()


# -- pyproject.toml, setup.cfg, environment.yml ---------------------------------------------------

class _Locator:
    """Finds where each value parsed from a file is written: its next occurrence after the last
    one found for the same text (the same requirement in two extras is two findings)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.after: dict[str, int] = {}
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def find(self, value: str, keys: tuple[str, ...], pattern: re.Pattern[str] | None = None,
             start: int = 0) -> Declared | None:
        """`start`: where the list holding the value begins (not the same name in a `keywords`
        list above it)."""
        if not keys:
            return None
        begin = max(self.after.get(value, 0), start)
        written = value
        if pattern is None:  # the value as a quoted string, else as written (setup.cfg, YAML)
            escaped = value.replace("\\", "\\\\").replace('"', '\\"')  # in a TOML basic string: `"x < \"3\""`
            if escaped != value and escaped in self.text:
                written = escaped
            pattern = re.compile(rf"[\"']({re.escape(written)})[\"']|({re.escape(written)})")
        found = pattern.search(self.text, begin)
        at = found.start(found.lastindex or 1) if found else -1
        if at < 0:
            at = 0
        else:
            self.after[value] = at + len(written)
        line = bisect.bisect_right(self.starts, at)
        col = at - self.starts[line - 1]
        return Declared(line, col, col + len(written), value, keys)


# Where pyproject.toml's dependency lists begin.
_PROJECT_DEPENDENCIES = re.compile(r"^[ \t]*dependencies[ \t]*=", re.M)
_REQUIRES = re.compile(r"^[ \t]*requires[ \t]*=", re.M)
_OPTIONAL = re.compile(r"^[ \t]*(?:\[project\.optional-dependencies\]|optional-dependencies[ \t]*=)", re.M)
_GROUPS = re.compile(r"^[ \t]*\[dependency-groups\]", re.M)


def _pyproject(text: str) -> list[Declared]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = re.search(r"line (\d+)", str(exc))
        end = len(text.rstrip("\n").split("\n")) if "end of document" in str(exc) else 1
        raise _broken(text, f"invalid TOML: {exc}", int(line.group(1)) if line else end) from None
    except RecursionError:
        raise _broken(text, "invalid TOML: nested too deeply", 1) from None
    at = _Locator(text)
    out: list[Declared | None] = []
    project = _table(data.get("project"))
    # Each list is looked for from its key on: a name may be written before it as a keyword.
    lists = [(project.get("dependencies"), _PROJECT_DEPENDENCIES), (_table(data.get("build-system")).get("requires"), _REQUIRES)]
    lists += [(group, _OPTIONAL) for group in _table(project.get("optional-dependencies")).values()]
    lists += [(group, _GROUPS) for group in _table(data.get("dependency-groups")).values()]
    for specs, key in lists:
        start = key.search(text)
        out += [at.find(spec, requirement_keys(spec), start=start.start() if start else 0) for spec in _strings(specs)]
    tool = _table(data.get("tool"))
    poetry = _table(tool.get("poetry"))
    tables = [_table(poetry.get("dependencies")), _table(poetry.get("dev-dependencies"))]
    tables += [_table(_table(g).get("dependencies")) for g in _table(poetry.get("group")).values()]
    for table in tables:
        for name, spec in table.items():
            version = spec if isinstance(spec, str) else _table(spec).get("version")
            keys = requirement_keys(f"{name}=={version}" if isinstance(version, str) else name)
            out.append(at.find(name, keys, re.compile(rf"^[ \t]*[\"']?({re.escape(name)})[\"']?[ \t]*=", re.M)))
    for source in [*_list(_table(tool.get("uv")).get("index")), *_list(poetry.get("source"))]:
        url = _table(source).get("url")
        if isinstance(url, str):
            out.append(at.find(url, (f"index:{url}",)))
    return [d for d in out if d is not None]


def _setup_cfg(text: str) -> list[Declared]:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error as exc:
        raise _broken(text, f"invalid setup.cfg: {exc.message.splitlines()[0]}", getattr(exc, "lineno", 1) or 1) from None
    values: list[str] = []
    if parser.has_section("options"):
        values += [parser.get("options", key, fallback="") for key in ("install_requires", "setup_requires")]
    if parser.has_section("options.extras_require"):
        values += [value for _, value in parser.items("options.extras_require")]
    at = _Locator(text)
    out = []
    for value in values:
        for spec in value.split("\n"):
            spec = re.sub(r"(^|\s)[#;].*", "", spec).strip()
            if spec:
                out.append(at.find(spec, requirement_keys(spec)))
    return [d for d in out if d is not None]


def _yaml(text: str) -> Any:
    import yaml  # a dependency of the tool already (rules are YAML)

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise _broken(text, f"invalid YAML: {getattr(exc, 'problem', None) or exc}",
                      mark.line + 1 if mark is not None else 1) from None
    except RecursionError:
        raise _broken(text, "invalid YAML: nested too deeply", 1) from None


def cog_commands(text: str) -> list[str]:
    """A `cog.yaml`'s `build.run` commands (a string, or a mapping with `command`)."""
    run = _list(_table(_table(_yaml(text)).get("build")).get("run"))
    return [c for c in (item if isinstance(item, str) else _table(item).get("command") for item in run)
            if isinstance(c, str)]


def _cog(text: str) -> list[Declared]:
    """`build.python_packages`: requirement lines, each with the options it carries
    (`"torch==1.11.0 --extra-index-url=https://download.pytorch.org/whl/cu113"`)."""
    at = _Locator(text)
    out: list[Declared | None] = []
    for spec in _strings(_table(_table(_yaml(text)).get("build")).get("python_packages")):
        parts = spec.split()
        keys = requirement_keys(parts[0]) if parts else ()
        options = iter(parts[1:])
        for option in options:
            name, _, value = option.partition("=")
            if name in INDEX_OPTIONS:
                value = value or next(options, "")
                keys += (f"index:{value}",) if value else ()
        out.append(at.find(spec, keys, _list_item(spec)))
    return [d for d in out if d is not None]


def _environment(text: str) -> list[Declared]:
    data = _yaml(text)
    at = _Locator(text)
    out: list[Declared | None] = []
    for item in _list(_table(data).get("dependencies")):
        if isinstance(item, str):
            out.append(at.find(item, _conda_keys(item), _list_item(item)))
        for spec in _strings(_table(item).get("pip")):
            keys = _requirement_line(spec.strip())
            out.append(at.find(spec, keys, _list_item(spec)) if keys else None)
    return [d for d in out if d is not None]


def _list_item(value: str) -> re.Pattern[str]:
    """Where a YAML list holds `value` as an item (`- cuda`), not inside another (a channel
    `- nvidia/label/cuda-12.4.1`)."""
    return re.compile(rf"^[ \t]*-[ \t]*[\"']?({re.escape(value)})[\"']?[ \t]*(?:#.*)?$", re.M)


def _broken(text: str, detail: str, line: int) -> Diagnosis:
    lines = text.split("\n")
    line = min(max(line, 1), len(lines))
    return Diagnosis(BROKEN_DEPENDENCIES, " ".join(detail.split()), line=line, source_line=lines[line - 1])


def _conda_keys(spec: str) -> tuple[str, ...]:
    """`nvidia::cuda-nvcc`, `pytorch-cuda=12.1`, `pytorch=2.1=py3.10_cuda11.8_0`, `cudnn>=8`."""
    spec = spec.rpartition("::")[2].strip()
    match = _NAME.match(spec)
    if match is None:
        return ()
    name = normalise(match.group())
    parts = re.split(r"[ =]+", spec[match.end():].strip(" =<>!~"))
    build = parts[1] if len(parts) > 1 and parts[1] else ""
    return (name, f"{name}+{build.lower()}") if build else (name,)


def _table(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _strings(value: Any) -> list[str]:
    return [v for v in _list(value) if isinstance(v, str)]
