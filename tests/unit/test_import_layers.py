"""Imports run one way: dags -> operators/sensors/triggers -> hooks -> domain modules -> contract.

Read from the source with ``ast`` (nothing is imported), so a cycle or a backwards import fails here
with the offending modules named, before it shows up as an ImportError somewhere else. Imports under
``if TYPE_CHECKING:`` count too: a type-only cycle is still two modules that need each other to be read.

The Rust modules of ``native/src`` are held to the same rule: their ``crate::`` and ``super::`` paths
(outside ``#[cfg(test)]`` blocks) form a graph without cycles, and the Parquet writer's modules import
only those before them, in the order its ``mod.rs`` states.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
PROVIDER = "airflow_provider_kip714"

# Lower layers never import higher ones. Same-layer packages may import each other, without cycles.
LAYERS: dict[str, int] = {
    "exceptions": 0,
    "clock": 0,
    "contract": 0,
    "settings": 1,
    "storage": 1,
    "decoding": 1,
    "subscriptions": 1,
    "telemetry": 1,
    "analytics": 1,
    "spark": 1,
    "findings": 1,
    "native_switches": 1,
    "hooks": 2,
    "troubleshooting": 3,
    "live": 3,
    "triggers": 3,
    "sensors": 4,
    "operators": 4,
    "report": 4,
    "ui": 5,
    "cli": 5,
}


def _modules(root: Path, package: str) -> Iterator[tuple[str, Path]]:
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def _imports(path: Path, module: str) -> set[str]:
    """Absolute names this module imports (``from . import x`` resolved), including lazy and
    ``TYPE_CHECKING`` imports.

    ``from package import name`` yields both ``package`` and ``package.name``; callers keep whichever
    is a module (a submodule import is not a dependency on the package's ``__init__``).
    """
    found: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _provider_graph() -> dict[str, set[str]]:
    modules = dict(_modules(REPO_ROOT, PROVIDER))
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        imported = {target for target in _imports(path, name) if target in modules and target != name}
        # ``from pkg import submodule``: the dependency is the submodule, not pkg/__init__
        graph[name] = {t for t in imported if not any(other.startswith(f"{t}.") for other in imported)}
    return graph


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_every_provider_package_has_a_layer() -> None:
    parts = {_part(module) for module in _provider_graph()} - {""}
    assert parts <= set(LAYERS), f"give these a layer in LAYERS: {sorted(parts - set(LAYERS))}"


def test_no_import_goes_up_a_layer() -> None:
    backwards = sorted(
        f"{module} -> {target}"
        for module, targets in _provider_graph().items()
        for target in targets
        if _part(module) and _part(target) and LAYERS[_part(target)] > LAYERS[_part(module)]
    )
    assert not backwards, "\n".join(backwards)


def test_a_type_only_import_counts() -> None:
    """A cycle through an ``if TYPE_CHECKING:`` import is found (the landing zone's is one way)."""
    zone = f"{PROVIDER}.telemetry.landing_zone"
    assert f"{PROVIDER}.decoding.native_writer" in _provider_graph()[zone]  # imported for types only
    assert _find_cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]


def test_no_cycle_between_modules_or_packages() -> None:
    graph = _provider_graph()
    assert _find_cycle(graph) is None, " -> ".join(_find_cycle(graph) or [])
    packages: dict[str, set[str]] = {}
    for module, targets in graph.items():
        packages.setdefault(_part(module), set()).update(
            _part(t) for t in targets if _part(t) != _part(module) and _part(t)
        )
    packages.pop("", None)
    assert _find_cycle(packages) is None, " -> ".join(_find_cycle(packages) or [])


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        (PROVIDER, ("kip714_dev", "tests", "kio")),
        ("spark_apps", (PROVIDER, "kip714_dev", "tests")),
        ("devtools/kip714_dev", ("tests",)),
    ],
)
def test_runtime_code_never_imports_tooling_or_tests(package: str, forbidden: tuple[str, ...]) -> None:
    offenders = sorted(
        f"{module} imports {imported}"
        for module, path in _modules(REPO_ROOT, package)
        for imported in _imports(path, module)
        if imported.split(".")[0] in forbidden
    )
    assert not offenders, "\n".join(offenders)


NATIVE_SRC = REPO_ROOT / "native" / "src"
PARQUET_ORDER = ("thrift", "rle", "schema", "writer", "columns", "datapoints", "raw")
"""The order ``native/src/parquet/mod.rs`` states: each module imports only those before it."""
_RUST_PATH = re.compile(r"\b(crate|super)((?:::[a-z_][a-z0-9_]*)+)")
_RUST_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_RUST_CHILD_USE = re.compile(r"\buse\s+([a-z_][a-z0-9_]*)::")


def _rust_module(path: Path) -> str:
    """``lib.rs`` -> ``crate``; ``a.rs`` and ``a/mod.rs`` -> ``a``; ``a/b.rs`` -> ``a::b``."""
    parts = path.relative_to(NATIVE_SRC).with_suffix("").parts
    if parts in (("lib",), ("main",)):
        return "crate"
    return "::".join(parts[:-1] if parts[-1] == "mod" else parts)


def _rust_code(path: Path) -> str:
    """The file without comments and without its unit tests (their ``super::`` is the file itself)."""
    text = _RUST_COMMENT.sub("", path.read_text())
    return text.split("#[cfg(test)]\nmod tests", 1)[0]


def _rust_graph() -> dict[str, set[str]]:
    """Module -> the modules it names by path (the deepest module a path starts with)."""
    files = {_rust_module(path): path for path in sorted(NATIVE_SRC.rglob("*.rs"))}
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        parent = module.rpartition("::")[0] or "crate"
        targets = set()
        for anchor, rest in _RUST_PATH.findall(_rust_code(path)):
            segments = rest.strip(":").split("::")
            base = [] if anchor == "crate" or parent == "crate" else parent.split("::")
            candidates = ["::".join([*base, *segments[:n]]) for n in range(len(segments), 0, -1)]
            target = next((c for c in candidates if c in files), "crate" if not base else parent)
            if target != module:
                targets.add(target)
        # a re-export of a child module (``pub use columns::MapSet`` in ``parquet/mod.rs``)
        prefix = "" if module == "crate" else f"{module}::"
        for child in _RUST_CHILD_USE.findall(_rust_code(path)):
            if f"{prefix}{child}" in files:
                targets.add(f"{prefix}{child}")
        graph[module] = targets
    return graph


def test_rust_paths_are_read() -> None:
    """The reader sees what the code names: ``python.rs`` calls into the reader and the writers."""
    graph = _rust_graph()
    assert {"reader", "parquet", "decode", "owned"} <= graph["python"]
    assert {"parquet::rle", "parquet::schema", "parquet::writer"} <= graph["parquet::columns"]
    assert {"parquet::datapoints", "parquet::raw"} <= graph["parquet"]  # its re-exports
    assert _find_cycle({**graph, "parquet::thrift": {"parquet"}}) is not None  # a child naming its parent


def test_no_cycle_between_rust_modules() -> None:
    graph = _rust_graph()
    assert _find_cycle(graph) is None, " -> ".join(_find_cycle(graph) or [])


def test_the_parquet_modules_import_only_those_before_them() -> None:
    graph = _rust_graph()
    modules = sorted(m.removeprefix("parquet::") for m in graph if m.startswith("parquet::"))
    assert sorted(PARQUET_ORDER) == modules, "update PARQUET_ORDER and the order in parquet/mod.rs"
    backwards = sorted(
        f"parquet::{module} -> {target}"
        for index, module in enumerate(PARQUET_ORDER)
        for target in graph[f"parquet::{module}"]
        if target.startswith("parquet::") and target.removeprefix("parquet::") not in PARQUET_ORDER[:index]
    )
    assert not backwards, "\n".join(backwards)
