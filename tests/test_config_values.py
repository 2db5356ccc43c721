"""config/config.yaml (checked by its schema) is the one source of every value the study
uses: the library and the rule files take values from it and restate none.

What counts as a restated value:

- in ``src/``, a literal default of a dataclass field or of a function's parameter whose
  name is the name of a key of config/config.yaml and whose value is that key's value
  there (a list compares equal to a tuple of the same items); values that are natural
  defaults of unrelated parameters, ``None``, booleans, ``0``, ``1`` and empty values,
  do not count, so ``seed: int = 0`` or ``threads: int = 1`` in a helper is not flagged,
  while ``max_iter: int = 100`` or ``pca_k = (1, 4, 8)`` is;
- in a rule file (workflow/rules/*.smk, the Snakefile), any constant assigned a number
  at the top level: a rule reads its numbers from the config.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

from study_config import CONFIG

REPO = Path(__file__).resolve().parents[1]


def neutral(value: object) -> bool:
    """A value that many unrelated parameters take by default."""
    return value is None or isinstance(value, bool) or value in (0, 1, "") or value in ((), [])


def comparable(value: object) -> object:
    return tuple(value) if isinstance(value, list) else value


def config_leaves(node: object, leaves: dict | None = None) -> dict[str, set]:
    """Every key of ``node`` at any depth whose value is a scalar or a list of scalars ->
    the values it takes (a key may appear in several sections)."""
    leaves = defaultdict(set) if leaves is None else leaves
    for key, value in node.items() if isinstance(node, dict) else ():
        if isinstance(value, dict):
            config_leaves(value, leaves)
        elif not neutral(value) and (
            not isinstance(value, list) or all(not isinstance(item, (dict, list)) for item in value)
        ):
            leaves[str(key)].add(comparable(value))
    return leaves


def literal(node: ast.AST) -> tuple[bool, object]:
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def named_defaults(tree: ast.AST) -> list[tuple[str, ast.AST]]:
    """(name, default) of every dataclass field and function parameter with a default."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and any(
            "dataclass" in ast.unparse(decorator) for decorator in node.decorator_list
        ):
            found += [
                (statement.target.id, statement.value)
                for statement in node.body
                if isinstance(statement, ast.AnnAssign)
                and isinstance(statement.target, ast.Name)
                and statement.value is not None
            ]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = node.args
            positional = [*args.posonlyargs, *args.args]
            found += [(arg.arg, default) for arg, default in zip(positional[::-1], args.defaults[::-1])]
            found += [
                (arg.arg, default) for arg, default in zip(args.kwonlyargs, args.kw_defaults) if default
            ]
    return found


def restated_in_source(leaves: dict[str, set]) -> list[str]:
    restated = []
    for path in sorted((REPO / "src" / "statelayers").rglob("*.py")):
        where = str(path.relative_to(REPO))
        for name, default in named_defaults(ast.parse(path.read_text())):
            ok, value = literal(default)
            if ok and not neutral(value) and comparable(value) in leaves.get(name, ()):
                restated.append(f"{where}:{default.lineno}: {name} = {value!r}")
    return restated


NUMBER_CONSTANT = re.compile(r"^([A-Za-z_]\w*)\s*=\s*[-+]?(\d[\d_]*\.?\d*(e[-+]?\d+)?|\.\d+)\s*(#.*)?$", re.M)


def test_the_test_of_restated_values_finds_a_dataclass_default_and_a_parameter_default():
    tree = ast.parse(
        "@dataclass\nclass Probe:\n    max_iter: int = 100\n    seed: int = 0\n"
        "def fit(C=1.0, solver='newton-cg', *, pca_k=(1, 4, 8), length=5): ...\n"
    )
    leaves = config_leaves(CONFIG)
    named = [(name, literal(value)[1]) for name, value in named_defaults(tree)]
    flagged = [
        name for name, value in named if not neutral(value) and comparable(value) in leaves.get(name, ())
    ]
    assert flagged == ["max_iter", "solver", "pca_k"]
    assert NUMBER_CONSTANT.search("PRETRAINED_GPU_TOKENS = 8\n") and not NUMBER_CONSTANT.search(
        'NAME = config["x"]\n'
    )


def test_no_config_value_is_restated_as_a_default_in_the_library():
    assert restated_in_source(config_leaves(CONFIG)) == []


def test_no_rule_file_holds_a_number_of_its_own():
    files = [REPO / "Snakefile", *sorted((REPO / "workflow" / "rules").glob("*.smk"))]
    constants = [
        f"{path.relative_to(REPO)}: {match.group(0).strip()}"
        for path in files
        for match in NUMBER_CONSTANT.finditer(path.read_text())
    ]
    assert constants == []
