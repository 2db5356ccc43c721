"""The architecture registry: the one list of names, importable without torch."""

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from statelayers.models.registry import (
    ARCHS,
    FAMILIES,
    NO_CONV,
    REGISTRY,
    SIGNED,
    VARIANTS,
    base_arch,
    display_name,
    layer_label,
    line_style,
)

REPO = Path(__file__).resolve().parents[1]


def test_the_config_schema_allows_exactly_the_registrys_architectures():
    schema = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())
    assert schema["$defs"]["arch"]["enum"] == list(ARCHS)


def test_every_architecture_is_built_from_a_family_of_the_registry():
    assert set(FAMILIES) | set(VARIANTS) == set(ARCHS) and set(NO_CONV) | SIGNED == set(VARIANTS)
    assert {base_arch(arch) for arch in ARCHS} == set(FAMILIES)
    assert base_arch("pythia-14m") == "pythia-14m"


def test_figures_and_readme_share_one_distinct_display_name_per_architecture():
    names = [display_name(arch) for arch in ARCHS]
    assert len(set(names)) == len(names)
    assert [line_style(arch)[0] for arch in ARCHS] == names
    assert line_style("pythia-14m") == ("pythia-14m", None, "o")
    assert len({REGISTRY[arch].colour for arch in ARCHS}) == len(ARCHS)


def test_layer_labels_follow_the_papers_numbering():
    assert [layer_label(layer) for layer in range(4)] == ["emb", "L0", "L1", "L2"]


@pytest.mark.parametrize("module", ["statelayers.models.registry", "statelayers.report.figures"])
def test_the_module_imports_without_torch(module):
    code = f"import sys, {module}; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
