"""The library's import graph: stages import only earlier stages, and nothing imports in a cycle."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "statelayers"

STAGES = {
    "statelayers": 0,
    "statelayers.files": 0,
    "statelayers.runtime": 0,
    "statelayers.console": 0,
    "statelayers.tasks": 1,
    "statelayers.models": 2,
    "statelayers.pairs": 2,
    "statelayers.training": 3,
    "statelayers.sweep": 3,
    "statelayers.learnability": 3,
    "statelayers.measure": 4,
    "statelayers.report": 5,
    "statelayers.settings": 6,
}
"""Module or package -> its stage: data, models, training, measurements, report, and the
settings the Snakefile hands to jobs (``io``, ``runtime`` and ``console`` serve every
stage; ``pairs`` resolves the per-pair keys for the settings and the sweep)."""


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def stage(module: str) -> int:
    owner = max((name for name in STAGES if module == name or module.startswith(name + ".")), key=len)
    return STAGES[owner]


def imports(module: str) -> set[str]:
    """Every statelayers module ``module`` imports, at the top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "statelayers"}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "statelayers":
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in MODULES else node.module)
    return found


GRAPH = {module: imports(module) for module in MODULES}


def test_every_import_names_a_module_of_the_package():
    assert {target for targets in GRAPH.values() for target in targets} <= set(MODULES)


def test_no_module_imports_from_a_later_stage():
    later = sorted(
        f"{module} (stage {stage(module)}) imports {target} (stage {stage(target)})"
        for module, targets in GRAPH.items()
        for target in targets
        if stage(target) > stage(module)
    )
    assert later == []


def test_the_import_graph_has_no_cycle():
    done, path = set(), []

    def visit(module: str) -> None:
        if module in path:
            raise AssertionError("import cycle: " + " -> ".join([*path[path.index(module) :], module]))
        if module in done:
            return
        path.append(module)
        for target in sorted(GRAPH[module]):
            visit(target)
        path.pop()
        done.add(module)

    for module in sorted(GRAPH):
        visit(module)
