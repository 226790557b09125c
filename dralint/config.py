"""The project configuration: ``.dralint.yaml`` or ``[tool.dralint]`` in ``pyproject.toml``.

Found from the current folder upward, stopping at the first folder that holds a ``.git`` (the
repository root) or at the filesystem root; ``--config FILE`` names one instead. Keys are
spelled like the command-line options (``kube-version``, ``feature-gates``...); the command
line overrides the file. Unknown keys, unknown rule ids and bad values raise ``ConfigError``
naming the file and the line. :func:`options` turns a configuration and what a face sets over it
into the engine's :class:`~dralint.options.Options`: the command line, the language server and the
webhook build them all here.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from .catalog import Catalog
from .findings import Severity
from .globs import glob_regex
from .kube.releases import FEATURE_GATES, KUBE_VERSION, Release, ReleaseError
from .options import Options
from .rule_filter import UsageError, resolve as resolve_rules
from .source import Exclude, Reading

if TYPE_CHECKING:
    import yaml

YAML_NAMES = (".dralint.yaml", ".dralint.yml")
PYPROJECT = "pyproject.toml"
ALL_RULES = "all"
KEYS = ("kube-version", "feature-gates", "select", "ignore", "severity", "per-path-ignores", "strict",
        "fail-on", "report-unused-ignores", "cluster", "exclude", "max-file-size")
_SIZE = re.compile(r"(\d+)\s*(|[KMG]i?B?|B)", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "ki": 1024, "kib": 1024, "m": 1000**2, "mb": 1000**2,
          "mi": 1024**2, "mib": 1024**2, "g": 1000**3, "gb": 1000**3, "gi": 1024**3, "gib": 1024**3}


class ConfigError(ValueError):
    """A configuration file the user must correct (exit code 2); the message names file and line."""


@dataclass(frozen=True)
class PathIgnore:
    """Findings of files matching ``pattern`` (relative to the config's folder) are dropped."""

    pattern: str
    rules: frozenset[str] | None  # rule ids; None means every rule
    regex: re.Pattern[str] = field(compare=False, repr=False)

    def matches(self, relative: str, rule: str) -> bool:
        """Whether a finding of ``rule`` in the file ``relative`` (posix path) is ignored."""
        return (self.rules is None or rule in self.rules) and bool(self.regex.fullmatch(relative))


@dataclass(frozen=True)
class Config:
    """Settings read from one file; ``None`` means the file does not set it."""

    path: Path | None = None
    kube_version: str | None = None
    kube_version_line: int = 0
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    feature_gates_line: int = 0
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    severity: Mapping[str, str] = field(default_factory=dict)
    per_path_ignores: tuple[PathIgnore, ...] = ()
    strict: bool | None = None
    fail_on: Severity | None = None
    report_unused_ignores: bool | None = None
    cluster: tuple[str, ...] = ()  # --cluster paths, resolved against the configuration's folder
    exclude: tuple[str, ...] = ()  # globs relative to the file's folder
    max_file_size: int | None = None

    @property
    def root(self) -> Path:
        """The folder per-path patterns are relative to."""
        return self.path.parent if self.path else Path.cwd()

    def ignored(self, file: str, rule: str) -> bool:
        """Whether the per-path ignores drop a finding of ``rule`` in ``file``."""
        if not self.per_path_ignores or not file or file.startswith("<"):
            return False
        try:
            relative = Path(file).resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:  # outside the configured tree: patterns do not reach it
            return False
        return any(p.matches(relative, rule) for p in self.per_path_ignores)


@dataclass(frozen=True)
class Overrides:
    """What a face sets over the configuration (the command line's options); None or empty leaves the
    file's setting."""

    kube_version: str | None = None
    feature_gates: str = ""  # Name=true,Other=false, over the file's gates
    strict: bool | None = None
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    severities: Mapping[str, str] = field(default_factory=dict)  # rule by rule, over the file's
    cluster: tuple[str, ...] = ()
    report_unused_ignores: bool = False
    excludes: tuple[Exclude, ...] = ()  # read before the file's
    max_file_size: int | None = None


def options(config: Config, overrides: Overrides = Overrides()) -> tuple[Options, list[str]]:
    """The engine options of ``config`` with ``overrides`` over it, and notes for the user (on gates
    that change nothing, prefixed with the file they come from).

    A bad kube-version or feature-gates of the file raises :class:`ConfigError` naming file and line;
    one of the overrides, or of a configuration read from no file (the webhook's policy), raises the
    :class:`~dralint.kube.releases.ReleaseError` naming the setting, for the face to word.
    """
    version = overrides.kube_version or config.kube_version
    try:
        release = Release.parse(version)[0]
    except ReleaseError as exc:
        if overrides.kube_version or config.path is None:
            raise
        raise ConfigError(f"{config.path}:{config.kube_version_line}: {exc}") from None
    notes: list[str] = []
    if config.feature_gates:
        try:
            release, file_notes = release.with_gates(config.feature_gates)
        except ReleaseError as exc:
            if config.path is None:
                raise
            raise ConfigError(f"{config.path}:{config.feature_gates_line}: {exc.reason}") from None
        notes += [f"{config.path}: {note}" if config.path else note for note in file_notes]
    release, override_notes = release.with_gates(overrides.feature_gates)
    notes += override_notes
    limit = overrides.max_file_size if overrides.max_file_size is not None else config.max_file_size
    excludes = overrides.excludes + tuple(Exclude(g, str(config.root)) for g in config.exclude)
    strict = overrides.strict if overrides.strict is not None else config.strict
    built = Options(release=release, strict=strict if strict is not None else True,
                    select=overrides.select if overrides.select is not None else (config.select or ()),
                    ignore=overrides.ignore if overrides.ignore is not None else (config.ignore or ()),
                    severities={**config.severity, **overrides.severities},
                    cluster=overrides.cluster or config.cluster,
                    report_unused_ignores=overrides.report_unused_ignores or bool(config.report_unused_ignores),
                    reading=Reading(excludes, limit) if limit else Reading(excludes))
    return built, notes


def find_config(start: Path) -> Path | None:
    """The nearest configuration file from ``start`` upward, or None.

    A folder's ``.dralint.yaml`` wins over its ``pyproject.toml``, which counts only when it has
    a ``[tool.dralint]`` table. The search stops after the repository root (a folder with ``.git``).
    """
    folder = start.resolve()
    while True:
        for name in YAML_NAMES:
            if (folder / name).is_file():
                return folder / name
        pyproject = folder / PYPROJECT
        if pyproject.is_file() and _has_tool_table(pyproject):
            return pyproject
        if (folder / ".git").exists() or folder.parent == folder:
            return None
        folder = folder.parent


def load_config(path: Path, catalog: Catalog) -> Config:
    """Read and check one configuration file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the configuration: {exc}") from None
    if path.name == PYPROJECT:
        raw, lines = _from_toml(path, text)
    else:
        raw, lines = _from_yaml(path, text)
    return _build(path, raw, _Lines(path, lines), catalog)


# Every way TOML can define ``tool.dralint`` starts a line with a ``[tool.dralint...]`` header, a
# ``tool.dralint...`` or ``tool = {...}`` key at the root, or a ``dralint`` key under ``[tool]``;
# an escaped key (``"dral\u0069nt"``) is met by parsing. A pyproject.toml with none of them is not
# parsed: tomllib's import and parse are a few milliseconds of every start.
_HEADER = re.compile(r"""[ \t]*\[+([^\]#]*)""")
_KEY = re.compile(r"""[ \t]*((?:["']?[\w-]+["']?[ \t]*\.[ \t]*)*["']?[\w-]+["']?)[ \t]*=""")
_QUOTES_AND_BLANKS = str.maketrans("", "", "\"' \t")


def _may_define_tool_table(text: str) -> bool:
    if "\\u" in text or "\\U" in text:
        return True
    table = ""
    for line in text.splitlines():
        header = _HEADER.match(line)
        if header:
            table = header.group(1).translate(_QUOTES_AND_BLANKS)
            if table == "tool.dralint" or table.startswith("tool.dralint."):
                return True
            continue
        key = _KEY.match(line)
        if key:
            name = f"{table}.{key.group(1)}".strip(".").translate(_QUOTES_AND_BLANKS)
            if name in ("tool", "tool.dralint") or name.startswith("tool.dralint."):
                return True
    return False


def _has_tool_table(path: Path) -> bool:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if not _may_define_tool_table(text):
        return False
    import tomllib   # read only where a pyproject.toml may hold the table

    try:
        return "dralint" in tomllib.loads(text).get("tool", {})
    except tomllib.TOMLDecodeError:
        return False


class _Lines:
    """Line numbers of configuration keys, for error messages."""

    def __init__(self, path: Path, lines: Mapping[tuple[str, ...], int]) -> None:
        self.path = path
        self.lines = lines

    def error(self, key: tuple[str, ...], message: str) -> ConfigError:
        # A key inside an inline value has no line of its own: name its parent's line.
        while key and key not in self.lines:
            key = key[:-1]
        line = self.lines.get(key, 1)
        return ConfigError(f"{self.path}:{line}: {message}")


def _from_yaml(path: Path, text: str) -> tuple[Any, dict[tuple[str, ...], int]]:
    import yaml  # read only where a .dralint.yaml is met

    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark else ""
        raise ConfigError(f"{path}{where}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    lines: dict[tuple[str, ...], int] = {}
    if node is not None:
        _yaml_lines(node, (), lines)
    return ({} if raw is None else raw), lines


def _yaml_lines(node: yaml.Node, prefix: tuple[str, ...], lines: dict[tuple[str, ...], int]) -> None:
    import yaml

    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            path = prefix + (str(key.value),)
            lines[path] = key.start_mark.line + 1
            _yaml_lines(value, path, lines)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[prefix + (str(i),)] = item.start_mark.line + 1
            _yaml_lines(item, prefix + (str(i),), lines)


_TOML_TABLE = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(?:#.*)?$")
_TOML_KEY = re.compile(r"""^\s*("[^"]*"|'[^']*'|[A-Za-z0-9_-]+)\s*=""")


def _from_toml(path: Path, text: str) -> tuple[Any, dict[tuple[str, ...], int]]:
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    # tomllib keeps no positions: find `[tool.dralint...]` headers and `key =` lines by hand.
    lines: dict[tuple[str, ...], int] = {}
    table: tuple[str, ...] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        header = _TOML_TABLE.match(line)
        if header:
            parts = tuple(p.strip().strip("\"'") for p in header.group(1).split("."))
            table = parts[2:] if parts[:2] == ("tool", "dralint") else None
            if table:
                lines.setdefault(table, number)
            continue
        key = _TOML_KEY.match(line)
        if key and table is not None:
            lines.setdefault(table + (key.group(1).strip("\"'"),), number)
    return data.get("tool", {}).get("dralint", {}), lines


def _build(path: Path, raw: Any, lines: _Lines, catalog: Catalog) -> Config:
    if not isinstance(raw, dict):
        raise lines.error((), "the configuration must be a mapping of settings")
    for key in raw:
        if key not in KEYS:
            close = difflib.get_close_matches(str(key).replace("_", "-"), KEYS, n=1)
            hint = f"; did you mean {close[0]}?" if close else f" (known keys: {', '.join(KEYS)})"
            raise lines.error((str(key),), f"unknown key {key!r}{hint}")

    def rules(key: tuple[str, ...], value: Any) -> tuple[str, ...]:
        tokens = _tokens(value, lambda: lines.error(key, f"{key[0]} must be a list of rule ids or names"))
        for i, token in enumerate(tokens):
            try:
                resolve_rules(catalog, token, key[0])
            except UsageError as exc:
                # A list item has its own line (in block style); a comma-separated string has one.
                raise lines.error(key + (str(i),) if isinstance(value, list) else key, str(exc)) from None
        return tokens

    def boolean(key: str) -> bool | None:
        value = raw.get(key)
        if value is not None and not isinstance(value, bool):
            raise lines.error((key,), f"{key} must be true or false")
        return value

    kube_version = raw.get("kube-version")
    if kube_version is not None:
        if not isinstance(kube_version, str) or not re.fullmatch(r"1\.\d+", kube_version):
            # Unquoted, YAML reads 1.30 as the number 1.3: insist on a string.
            raise lines.error(("kube-version",), f"kube-version must be a quoted release like \"1.35\", "
                                                 f"not {kube_version!r}")
    severity: dict[str, str] = {}
    for token, level in _mapping(raw, "severity", lines).items():
        rules(("severity", token), [token])
        if level not in {s.value for s in Severity}:
            raise lines.error(("severity", token), f"severity of {token} must be error, warning or info, not {level!r}")
        severity[token] = level
    fail_on = raw.get("fail-on")
    if fail_on is not None and fail_on not in {s.value for s in Severity}:
        raise lines.error(("fail-on",), f"fail-on must be error, warning or info, not {fail_on!r}")
    return Config(
        path=path,
        kube_version=kube_version,
        kube_version_line=lines.lines.get((KUBE_VERSION,), 0),
        feature_gates=_gates(raw, lines),
        feature_gates_line=lines.lines.get((FEATURE_GATES,), 0),
        select=rules(("select",), raw["select"]) if "select" in raw else None,
        ignore=rules(("ignore",), raw["ignore"]) if "ignore" in raw else None,
        severity=severity,
        per_path_ignores=tuple(_path_ignore(pattern, value, catalog, lines, rules)
                               for pattern, value in _mapping(raw, "per-path-ignores", lines).items()),
        strict=boolean("strict"),
        fail_on=Severity(fail_on) if fail_on else None,
        report_unused_ignores=boolean("report-unused-ignores"),
        cluster=_cluster(raw, path, lines),
        exclude=_tokens(raw.get("exclude", []), lambda: lines.error(("exclude",), "exclude must be a list of globs")),
        max_file_size=_config_size(raw.get("max-file-size"), lines),
    )


def _config_size(value: Any, lines: _Lines) -> int | None:
    if value is None:
        return None
    try:
        return parse_size(value if isinstance(value, str) else str(value) if isinstance(value, int) else "")
    except ValueError as exc:
        raise lines.error(("max-file-size",), f"max-file-size: {exc}") from None


def parse_size(text: str) -> int:
    """A size: plain bytes (``16777216``) or a quantity (``64MiB``, ``64Mi``, ``50MB``, ``1GiB``)."""
    match = _SIZE.fullmatch(text.strip())
    if match is None or int(match.group(1)) <= 0:
        raise ValueError(f"{text!r} is not a size such as 64MiB or 67108864 (bytes)")
    return int(match.group(1)) * _UNITS[match.group(2).lower()]


def _tokens(value: Any, error: Any) -> tuple[str, ...]:
    """A list of strings, or one comma-separated string, as a tuple of stripped tokens."""
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise error()
    return tuple(v.strip() for v in value if v.strip())


def _cluster(raw: Mapping[str, Any], path: Path, lines: _Lines) -> tuple[str, ...]:
    """``cluster``: files or folders of cluster state, resolved against the configuration's folder
    (the editor's server and a run from a subfolder read the same state)."""
    value = raw.get("cluster")
    if value is None:
        return ()
    tokens = _tokens(value, lambda: lines.error(("cluster",), "cluster must be a list of files or folders"))
    return tuple(str(path.parent / token) for token in tokens)


def _mapping(raw: Mapping[str, Any], key: str, lines: _Lines) -> Mapping[str, Any]:
    value = raw.get(key) or {}
    if not isinstance(value, dict):
        raise lines.error((key,), f"{key} must be a mapping")
    return value


def _gates(raw: Mapping[str, Any], lines: _Lines) -> dict[str, bool]:
    value = raw.get("feature-gates") or {}
    if isinstance(value, str):  # the command line's spelling: Name=true,Other=false
        pairs = [item.partition("=") for item in value.split(",") if item.strip()]
        value = {name.strip(): setting.strip().lower() for name, _, setting in pairs}
        value = {k: {"true": True, "false": False}.get(v, v) for k, v in value.items()}
    if not isinstance(value, dict) or not all(isinstance(v, bool) for v in value.values()):
        raise lines.error(("feature-gates",), "feature-gates must map gate names to true or false")
    return dict(value)


def _path_ignore(pattern: str, value: Any, catalog: Catalog, lines: _Lines, rules: Any) -> PathIgnore:
    key = ("per-path-ignores", pattern)
    if value == ALL_RULES or value == [ALL_RULES]:
        ids = None
    else:
        tokens = rules(key, value)
        ids = frozenset(rule for token in tokens for rule in resolve_rules(catalog, token, "per-path-ignores"))
    return PathIgnore(pattern, ids, glob_regex(pattern))
