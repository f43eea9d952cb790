"""The Rust extension's modules import one way: no cycle between ``native/src`` modules.

``tests/unit/test_import_layers.py`` holds the Python packages to one direction; this does the same for
the crate. A module's imports are every ``crate::``, ``super::`` and ``self::`` path in its code (``use``
lines and paths written inline), resolved to the deepest module the path names; a path to an item of
the crate root (``crate::Columns``, a re-export) is an import of ``lib.rs``. A cycle is any group of
modules that reach each other (a strongly connected component of two or more).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2] / "native" / "src"
ROOT = "crate"
PATH = re.compile(r"\b(crate|super|self)((?:::\w+)+)")
GROUP = re.compile(r"\b(crate|super|self)((?:::\w+)*)::\{([^{}]*(?:\{[^{}]*\}[^{}]*)*)\}")
BARE_USE = re.compile(r"\buse\s+(?!crate\b|super\b|self\b)(\w+)((?:::\w+)*)")
COMMENT = re.compile(r"//[^\n]*")
STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def module_of(path: Path, source: Path) -> str:
    """``lib.rs`` is the crate root; ``a.rs`` and ``a/mod.rs`` are ``a``; ``a/b.rs`` is ``a::b``."""
    parts = list(path.relative_to(source).with_suffix("").parts)
    if parts == ["lib"]:
        return ROOT
    if parts[-1] == "mod":
        parts.pop()
    return "::".join(parts)


def _paths(code: str) -> Iterable[tuple[str, list[str]]]:
    """Every ``crate::``/``super::``/``self::`` path in the code, ``use`` groups expanded one level, and
    every ``use`` of a name in scope (``use decode::Columns`` beside ``mod decode``: anchor ``self``;
    a name that is no child module, ``std`` say, resolves to the module itself and is dropped)."""
    for match in BARE_USE.finditer(code):
        yield "self", [match.group(1), *[p for p in match.group(2).split("::") if p]]
    for match in GROUP.finditer(code):
        head = [p for p in match.group(2).split("::") if p]
        for member in re.split(r",(?![^{]*\})", match.group(3)):
            first = re.match(r"\s*(\w+)", member)
            if first and first.group(1) != "self":
                yield match.group(1), [*head, first.group(1)]
            else:
                yield match.group(1), head
    for match in PATH.finditer(GROUP.sub("", code)):
        yield match.group(1), [p for p in match.group(2).split("::") if p]


def _resolve(anchor: str, parts: list[str], here: str, modules: set[str]) -> str:
    """The deepest module a path names, from where it is written."""
    if anchor == "crate":
        base: list[str] = []
    elif anchor == "self":
        base = [] if here == ROOT else here.split("::")
    else:  # super
        base = [] if here == ROOT else here.split("::")[:-1]
    found = "::".join(base) or ROOT
    for length in range(1, len(parts) + 1):
        candidate = "::".join([*base, *parts[:length]])
        if candidate in modules:
            found = candidate
    return found


def module_imports(source: Path) -> dict[str, set[str]]:
    """Each module of the crate under ``source`` and the other modules it imports."""
    files = {module_of(path, source): path for path in sorted(source.rglob("*.rs"))}
    modules = set(files)
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        code = STRING.sub('""', COMMENT.sub("", path.read_text()))
        targets = {_resolve(anchor, parts, module, modules) for anchor, parts in _paths(code)}
        graph[module] = targets - {module}
    return graph


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of two or more modules (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_rust_modules_import_one_way() -> None:
    graph = module_imports(SOURCE)
    assert {"python", "reader", "decode"} <= set(graph), sorted(graph)  # the walk found the crate
    assert cycles(graph) == [], {module: sorted(targets) for module, targets in graph.items()}


def test_a_cycle_through_an_inline_path_or_a_re_export_is_found(tmp_path: Path) -> None:
    """The cycle issue 27 names (``python.rs`` uses ``reader``, ``reader.rs`` took ``put`` from
    ``python``), written the ways the crate writes imports, and a child using its parent's re-export."""
    (tmp_path / "lib.rs").write_text("pub mod python;\nmod reader;\npub mod pq;\npub use pq::writer::Out;\n")
    (tmp_path / "python.rs").write_text(
        "// use crate::nothing;\n"
        "fn f() { m.add_class::<crate::reader::TopicReader>(); }\n"
        "pub(crate) fn put() {}\n"
    )
    (tmp_path / "reader.rs").write_text("use crate::{librdkafka::{self, Api}, python::put};\n")
    (tmp_path / "pq").mkdir()
    (tmp_path / "pq" / "mod.rs").write_text("pub mod writer;\npub mod rle;\n")
    (tmp_path / "pq" / "writer.rs").write_text(
        "use super::rle::Rle;\npub struct Out;\nfn g() -> crate::Out {}\n"
    )
    (tmp_path / "pq" / "rle.rs").write_text('pub struct Rle;\nconst S: &str = "crate::python";\n')
    graph = module_imports(tmp_path)
    assert graph["python"] == {"reader"}
    assert graph["reader"] == {"python", ROOT}  # `librdkafka` is no module here: the root's item
    assert graph["pq::writer"] == {"pq::rle", ROOT}
    assert graph["pq::rle"] == set()  # a path inside a string is no import
    assert graph[ROOT] == {"pq::writer"}  # `pub use pq::writer::Out`; `mod` lines are no imports
    assert cycles(graph) == [["crate", "pq::writer"], ["python", "reader"]]


PARQUET_ORDER = ("thrift", "rle", "schema", "writer", "columns", "datapoints", "raw")
"""The order `parquet/mod.rs` states: each of the writer's modules imports only those before it."""


def test_the_parquet_writers_modules_import_only_those_before_them() -> None:
    graph = module_imports(SOURCE)
    inside = sorted(module.removeprefix("parquet::") for module in graph if module.startswith("parquet::"))
    assert inside == sorted(PARQUET_ORDER), "update PARQUET_ORDER and the order parquet/mod.rs states"
    backwards = sorted(
        f"parquet::{module} -> {target}"
        for position, module in enumerate(PARQUET_ORDER)
        for target in graph[f"parquet::{module}"]
        if target.startswith("parquet") and target.removeprefix("parquet::") not in PARQUET_ORDER[:position]
    )
    assert not backwards, "\n".join(backwards)
