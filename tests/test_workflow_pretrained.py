"""The workflow with pretrained backbones (tiny hub-format models the tests save): the
whole chain with patching, and the stops before or at the fetch job."""

import pandas as pd
import pytest
from tiny_hf import save_tiny
from workflow_run import copy_workflow, overlay, snakemake

pytestmark = pytest.mark.workflow


@pytest.mark.parametrize(
    "source,offline,message",
    [
        ("./no/such/dir", False, "local directory ./no/such/dir does not exist"),
        ("EleutherAI/not-fetched", True, "EleutherAI/not-fetched is not fetched and HF_HUB_OFFLINE is set"),
    ],
)
def test_unavailable_pretrained_weights_stop_before_any_job(tmp_path, source, offline, message):
    root = copy_workflow(tmp_path)
    models = overlay(
        root,
        "models.yaml",
        {"pretrained": {"enabled": True, "models": [{"name": "pythia-x", "source": source}]}},
    )
    env = {"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")} if offline else {}
    result = snakemake(root, "--configfile", "config/test.yaml", str(models), check=False, env=env)
    assert result.returncode != 0
    assert f"pretrained.models.pythia-x: {message}" in result.stdout + result.stderr
    assert not (root / "results").exists()


def test_an_unsupported_pretrained_model_stops_at_its_fetch_job(tmp_path):
    root = copy_workflow(tmp_path)
    source = str(save_tiny(tmp_path / "hub-bert", "bert"))
    pretrained = {"enabled": True, "models": [{"name": "bert-x", "source": source}]}
    models = overlay(
        root, "bert.yaml", {"architectures": ["gru"], "tasks": ["dyck"], "pretrained": pretrained}
    )
    result = snakemake(root, "--configfile", "config/test.yaml", str(models), check=False)
    assert result.returncode != 0
    log = (root / "results" / "logs" / "fetch_pretrained" / "bert-x.log").read_text()
    assert (
        "pretrained model 'bert-x'" in log and "is a 'bert' model; supported: gpt_neox, mamba, mamba2" in log
    )
    assert not (root / "resources" / "models" / "bert-x").exists()


def test_pretrained_models_and_patching_run_the_whole_chain(tmp_path):
    """Tiny GPT-NeoX and Mamba saved like hub models stand in for Pythia and Mamba-130M."""
    root = copy_workflow(tmp_path)
    sources = {kind: str(save_tiny(tmp_path / f"hub-{kind}", kind)) for kind in ("gpt_neox", "mamba")}
    study = overlay(
        root,
        "pretrained.yaml",
        {
            "architectures": ["gru"],
            "tasks": ["parity", "dyck"],
            "pretrained": {
                "enabled": True,
                "models": [
                    {"name": "neox-tiny", "source": sources["gpt_neox"]},
                    {"name": "mamba-tiny", "source": sources["mamba"]},
                ],
            },
            "patching": {"enabled": True},
        },
    )
    snakemake(root, "--configfile", "config/test.yaml", str(study), env={"HF_HUB_OFFLINE": "1"})
    assert (root / "resources" / "models" / "neox-tiny" / "config.json").exists()
    tables = root / "results" / "tables"
    probes = pd.read_csv(tables / "pretrained_probes.csv")
    assert set(probes["arch"]) == {"neox-tiny", "mamba-tiny"} and set(probes["task"]) == {"parity", "dyck"}
    assert set(probes["layer"]) == {0, 1, 2, 3}  # embedding + the tiny models' 3 blocks
    erasures = pd.read_csv(tables / "pretrained_erasures.csv")
    assert {"probe", "pca", "random"} <= set(erasures["method"]) and set(erasures["layer"]) == {0, 1, 2, 3}
    assert erasures["drop"].abs().sum() > 0
    assert set(pd.read_csv(tables / "probes.csv")["arch"]) == {"gru"}  # the small study's tables stay its own
    patching = pd.read_csv(tables / "patching.csv")
    assert set(patching["arch"]) == {"gru", "neox-tiny", "mamba-tiny"}
    assert set(patching["direction"]) == {"denoising", "noising"}
    for figure in ("pretrained_profiles", "patching"):
        assert (root / "results" / "figures" / f"{figure}.png").stat().st_size > 10_000
    meta = (root / "results" / "models" / "mamba-tiny" / "dyck" / "seed0" / "model.json").read_text()
    assert '"pretrained": "resources/models/mamba-tiny"' in meta and '"backend": "torch"' in meta
