"""What each job is given from the config, and the checks that stop a config no job could run."""

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from statelayers import settings

CONFIG = yaml.safe_load((Path(__file__).parents[1] / "config" / "config.yaml").read_text())


def changed(**changes):
    """The default config with ``changes`` (dotted keys) applied."""
    config = yaml.safe_load(yaml.safe_dump(CONFIG))
    for dotted, value in changes.items():
        *path, last = dotted.split("__")
        node = config
        for key in path:
            node = node[key]
        node[last] = value
    return config


def test_the_default_config_passes_the_cross_field_checks():
    settings.check_config(CONFIG)


@pytest.mark.parametrize(
    "changes,message",
    [
        ({"model__options__transformer": {"heads": 3}}, "heads (3) must divide model.d_model (128)"),
        ({"task_params__dyck__max_depth": 50}, "max_depth (50) exceeds train_length"),
        ({"eval_lengths": [60, 80]}, "eval_lengths must include train_length"),
        ({"interventions__eval_lengths": [80]}, "interventions.eval_lengths must include train_length"),
    ],
)
def test_settings_that_cannot_work_together_are_named(changes, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        settings.check_config(changed(**changes))


def test_heads_need_not_divide_d_model_without_a_transformer():
    settings.check_config(changed(model__options__transformer={"heads": 3}, architectures=["lstm"]))


def test_an_architecture_trains_with_its_familys_then_its_own_overrides():
    config = changed(
        training__overrides={"mamba": {"lr": 0.01, "batch_size": 8}, "mamba_noconv": {"lr": 0.02}}
    )
    twin = settings.train_settings(config, "mamba_noconv")
    assert (twin["lr"], twin["batch_size"]) == (0.02, 8)
    assert settings.train_settings(config, "lstm")["lr"] == CONFIG["training"]["lr"]
    assert not set(settings.RUNTIME_KEYS) & set(twin)  # where a job runs is not what it trains


def test_a_pretrained_model_erases_on_its_own_number_of_sequences():
    assert settings.intervention_settings(CONFIG, pretrained=False)["sequences"] == 12
    assert settings.intervention_settings(CONFIG, pretrained=True)["sequences"] == 32
    assert "eval_lengths" not in settings.intervention_settings(CONFIG, pretrained=False)


def test_the_scale_line_says_seeds_steps_and_overrides():
    scale = settings.run_scale(CONFIG, pretrained=[], patching_tasks=[])
    assert scale.startswith(f"{len(CONFIG['seeds'])} seeds; 5 architectures x 3 tasks; 4 layers")
    assert f"at most {CONFIG['training']['max_steps']} steps" in scale and "per-architecture" in scale


def test_a_missing_local_pretrained_directory_is_named(tmp_path):
    with pytest.raises(ValueError, match="local directory ./nowhere does not exist"):
        settings.check_pretrained_sources({"tiny": "./nowhere"}, lambda name: str(tmp_path / name))
    (tmp_path / "tiny").mkdir()  # fetched already: the source is not consulted
    settings.check_pretrained_sources({"tiny": "./nowhere"}, lambda name: str(tmp_path / name))


def test_the_settings_module_does_not_import_torch():
    code = "import sys, statelayers.settings; print('torch' in sys.modules)"
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"
    )
