"""The layers of docs/architecture.md ("Layers and allowed imports"), held by walking the import graph.

Every `import` / `from … import` in engine/ and app/ counts, also those inside functions and under
`TYPE_CHECKING`: a lazy import is still a dependency. Three rules:

1. a generic module (`GENERIC`) imports no model family (`FAMILIES`);
2. the engine imports nothing from the app;
3. the graph between packages (a subpackage, or a module directly under engine/ or app/) has no cycle.

What the code breaks today is listed below, each with its reason, so the test passes now and fails
on any new violation; remove an entry when the code stops needing it (a stale entry fails too).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOP_LEVEL = ("engine", "app")
# A family's own modules; generic code reaches them only through the registry (engine/families), by name.
FAMILIES = ("engine.lm", "engine.permgen")
GENERIC = (  # the layers below the families (docs/architecture.md), and the tools that ask the registry
    "engine.backbones", "engine.bundled_model", "engine.bundles", "engine.checkpoints", "engine.cli.recipes",
    "engine.cli_args", "engine.cli_errors", "engine.coherence", "engine.config", "engine.controls", "engine.data",
    "engine.decode_fields",
    "engine.decoding", "engine.devices", "engine.diagnostics", "engine.evaluation.run", "engine.families",
    "engine.files", "engine.front_door", "engine.heads", "engine.loaded_model", "engine.metrics", "engine.model",
    "engine.objectives", "engine.onnx", "engine.packed_linear", "engine.perplexity", "engine.pos",
    "engine.process_memory", "engine.prompt_join", "engine.selection", "engine.tokenizer", "engine.torch_modes",
    "engine.training", "engine.word_sources",
)

# (importer, imported) modules: generic code that reaches into a family today (none since the family seam).
FAMILY_EXCEPTIONS: dict[tuple[str, str], str] = {}

# (importer, imported) packages: the edges that close today's cycles. Without them the graph between
# packages is acyclic.
CYCLE_EXCEPTIONS = {
    ("app.controls", "app.persistence"): "the controls panel lists presets, which store the controls' values",
    ("engine.metrics", "engine.diagnostics"): "metrics/frequency.py re-exports AGG's groups and I(W) of diagnostics",
    ("engine.pos", "engine.heads"): "POS training data is built for the POSG head, whose groups are POS tags",
}


def module_names(root: Path, top_level: Iterable[str]) -> dict[str, Path]:
    """Dotted name → file of every module under the top-level packages."""
    names = {}
    for top in top_level:
        for path in sorted((root / top).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def import_graph(root: Path, top_level: tuple[str, ...] = TOP_LEVEL) -> dict[str, set[str]]:
    """Module → the modules of `top_level` it imports (anywhere in the file)."""
    modules = module_names(root, top_level)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: climb from the importing package
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, *([base] if base else [])])
                imported.add(base)
                # `from package import module` depends on that module, not only on the package
                imported.update(f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules)
        graph[name] = {m for m in imported if m.partition(".")[0] in top_level and m != name}
    return graph


def package_of(module: str) -> str:
    """engine.decoding.beam → engine.decoding; engine.model → engine.model (a module is its own package)."""
    return ".".join(module.split(".")[:2])


def inside(module: str, prefixes: Iterable[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def family_imports(graph: dict[str, set[str]], generic: Iterable[str], families: Iterable[str]) -> set[tuple[str, str]]:
    """(generic module, family module) for every import of a family by a generic module."""
    generic, families = tuple(generic), tuple(families)
    return {(m, i) for m, imported in graph.items() if inside(m, generic) and not inside(m, families)
            for i in imported if inside(i, families)}


def upward_imports(graph: dict[str, set[str]], lower: str, upper: str) -> set[tuple[str, str]]:
    """(module of `lower`, module of `upper`) for every import from the lower layer into the upper one."""
    return {(m, i) for m, imported in graph.items() if inside(m, [lower]) for i in imported if inside(i, [upper])}


def package_edges(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    return {(package_of(m), package_of(i)) for m, imported in graph.items() for i in imported
            if package_of(m) != package_of(i)}


def find_cycle(edges: set[tuple[str, str]]) -> list[str]:
    """One cycle of the directed graph as [a, b, …, a], or [] when it has none."""
    following: dict[str, list[str]] = {}
    for a, b in sorted(edges):
        following.setdefault(a, []).append(b)
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in following.get(node, []):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        state[node] = 2
        path.pop()
        return []

    for start in sorted(following):
        if start not in state and (cycle := visit(start)):
            return cycle
    return []


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(ROOT)


def test_generic_modules_import_no_model_family(graph: dict[str, set[str]]) -> None:
    found = family_imports(graph, GENERIC, FAMILIES)
    assert sorted(found - FAMILY_EXCEPTIONS.keys()) == [], "a generic module imports a model family"
    assert sorted(FAMILY_EXCEPTIONS.keys() - found) == [], "stale exceptions: the code no longer needs them"


def test_the_engine_imports_nothing_from_the_app(graph: dict[str, set[str]]) -> None:
    assert sorted(upward_imports(graph, "engine", "app")) == []


def test_no_cycle_between_packages(graph: dict[str, set[str]]) -> None:
    edges = package_edges(graph)
    assert find_cycle(edges - CYCLE_EXCEPTIONS.keys()) == []
    assert sorted(CYCLE_EXCEPTIONS.keys() - edges) == [], "stale exceptions: the code no longer needs them"


def test_the_exceptions_have_reasons() -> None:
    assert all(reason.strip() for reason in [*FAMILY_EXCEPTIONS.values(), *CYCLE_EXCEPTIONS.values()])


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_the_checks_catch_synthetic_violations(tmp_path: Path) -> None:
    """A tiny engine/app tree with one of each violation: the lazy family import, the app import, the cycle."""
    root = write_tree(tmp_path, {
        "engine/__init__.py": "",
        "engine/bundles/__init__.py": "",
        "engine/bundles/bundle.py": "def load():\n    from engine.permgen.bundle import Bundle\n    return Bundle\n",
        "engine/permgen/__init__.py": "",
        "engine/permgen/bundle.py": "from engine.bundles.bundle import load\n",
        "engine/decoding/__init__.py": "from . import beam\n",
        "engine/decoding/beam.py": "from ..data import blocks\n",
        "engine/data/__init__.py": "",
        "engine/data/blocks.py": "import engine.decoding.beam\nfrom app.window import Window\n",
        "app/__init__.py": "",
        "app/window.py": "from engine.bundles.bundle import load\n",
    })
    graph = import_graph(root)
    assert graph["engine.decoding"] == {"engine.decoding.beam"}
    assert graph["engine.decoding.beam"] == {"engine.data", "engine.data.blocks"}  # relative import resolved
    assert family_imports(graph, GENERIC, FAMILIES) == {("engine.bundles.bundle", "engine.permgen.bundle")}
    assert upward_imports(graph, "engine", "app") == {("engine.data.blocks", "app.window")}
    edges = package_edges(graph)
    assert find_cycle(edges) == ["engine.bundles", "engine.permgen", "engine.bundles"]
    assert find_cycle(edges - {("engine.bundles", "engine.permgen")}) == ["engine.data", "engine.decoding",
                                                                  "engine.data"]
    assert find_cycle(edges - {("engine.bundles", "engine.permgen"), ("engine.data", "engine.decoding")}) == []
