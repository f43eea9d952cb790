"""Imports run one way: dags -> operators/sensors/triggers -> hooks -> domain modules -> contract.

Read from the source with ``ast`` (nothing is imported), so a cycle or a backwards import fails here
with the offending modules named, before it shows up as an ImportError somewhere else. Imports under
``if TYPE_CHECKING:`` count too: a type-only cycle is still two modules that need each other to be read.
"""

from __future__ import annotations

import ast
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
