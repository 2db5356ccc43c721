"""What each job is given from the config, and the checks that stop a config no job could run."""

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from study_config import BAD_CONFIGS, with_bad_value

from statelayers import settings, sweep
from statelayers.models.registry import ARCHS
from statelayers.tasks.formal import TASKS

REPO = Path(__file__).parents[1]
CONFIG = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
NOT_SETTINGS = settings.RUNTIME_KEYS + settings.PER_PAIR_KEYS


def overlaid(*overlays: str) -> dict:
    """config.yaml with ``overlays`` (files of config/) merged on, as Snakemake merges them."""
    from snakemake.utils import update_config

    config = yaml.safe_load(yaml.safe_dump(CONFIG))
    for overlay in overlays:
        update_config(config, yaml.safe_load((REPO / "config" / overlay).read_text()))
    return config


@pytest.mark.parametrize("path,value,message", BAD_CONFIGS)
def test_a_bad_config_is_refused_by_the_workflows_checks_with_a_message_naming_it(path, value, message):
    """The two checks workflow/rules/common.smk runs before any job: the schema (with its
    defaults filled in, as Snakemake's ``validate`` does), then :func:`settings.check_config`.
    tests/test_workflow_variants.py shows end to end that Snakemake stops on them."""
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    config = with_bad_value(yaml.safe_load(yaml.safe_dump(CONFIG)), path, value)
    with pytest.raises((WorkflowError, ValueError)) as refusal:
        validate(config, schema=str(REPO / "workflow" / "schemas" / "config.schema.yaml"))
        settings.check_config(config)
    assert message in str(refusal.value)


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
        (
            {"model__options": {"transformer": {"heads": 4}, "transformer/s3": {"heads": 3}}},
            "model.options.transformer/s3.heads (3) must divide",
        ),
        ({"task_params__dyck__max_depth": 50}, "max_depth (50) exceeds train_length"),
        ({"eval_lengths": [60, 80]}, "eval_lengths must include train_length"),
        ({"erasures__eval_lengths": [80]}, "erasures.eval_lengths must include train_length"),
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
    variant = settings.train_settings(config, "mamba_noconv", "s3")
    assert (variant["lr"], variant["batch_size"]) == (0.02, 8)
    assert settings.train_settings(config, "lstm", "s3")["lr"] == CONFIG["training"]["lr"]
    assert not set(NOT_SETTINGS) & set(variant)  # where a job runs is not what it trains


def test_a_pretrained_model_erases_on_its_own_number_of_sequences():
    assert settings.erasure_settings(CONFIG, pretrained=False)["sequences"] == CONFIG["erasures"]["sequences"]
    assert settings.erasure_settings(CONFIG, pretrained=True)["sequences"] == 32
    assert "eval_lengths" not in settings.erasure_settings(CONFIG, pretrained=False)


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


def test_a_pairs_override_beats_its_architectures_which_beats_its_familys():
    config = changed(
        training__pair_budgets=None,  # floors under max_steps: tested below
        training__overrides={
            "mamba": {"lr": 0.01, "batch_size": 8, "max_steps": 50},
            "mamba_noconv": {"lr": 0.02, "batch_size": 16},
            "mamba/s3": {"batch_size": 24},
            "mamba_noconv/s3": {"max_steps": 900},
        },
    )
    on_s3 = settings.train_settings(config, "mamba_noconv", "s3")
    assert (on_s3["lr"], on_s3["batch_size"], on_s3["max_steps"]) == (0.02, 24, 900)
    on_parity = settings.train_settings(config, "mamba_noconv", "parity")
    assert (on_parity["lr"], on_parity["batch_size"], on_parity["max_steps"]) == (0.02, 16, 50)
    assert settings.train_settings(config, "mamba", "s3")["max_steps"] == 50


@pytest.mark.parametrize(
    "section, key",
    [
        ("training__overrides", "lstm/s4"),
        ("training__overrides", "rwkv/s3"),
        ("model__options", "lstm/code"),
        ("sweep__pairs", "mamba3/parity"),
    ],
)
def test_an_unknown_pair_key_is_an_error_that_names_it(section, key):
    with pytest.raises(ValueError, match=f"unknown key '{key}'"):
        settings.check_config(changed(**{section: {key: {}}}))


def test_a_pairs_model_options_reach_that_pair_only_and_the_start_token_any_family():
    options = {
        **CONFIG["model"]["options"],
        "transformer": {"heads": 4},
        "transformer/parity": {"start_token": True, "rotary_pct": 1.0},
        "lstm/s3": {},
    }
    config = changed(model__options=options)
    settings.check_config(config)
    spec = settings.model_spec(config, "transformer", "parity")
    assert spec["options"] == {"heads": 4, "start_token": True, "rotary_pct": 1.0}
    assert settings.model_spec(config, "transformer", "s3")["options"] == {"heads": 4}
    assert settings.model_spec(config, "lstm", "parity")["options"] == {}


def test_the_default_config_builds_and_trains_each_pair_at_the_sweeps_selected_point():
    """The Transformer's sequential block with a start token on every task; the LSTM's start
    token and learning rate on s3 only; a pair without keys of its own as before."""
    transformer = {"heads": 4, "rotary_pct": 1.0, "use_parallel_residual": False, "start_token": True}
    for task in ("parity", "s3", "dyck"):
        assert settings.model_spec(CONFIG, "transformer", task)["options"] == transformer
    assert settings.model_spec(CONFIG, "lstm", "s3")["options"] == {"start_token": True}
    assert settings.model_spec(CONFIG, "lstm", "parity")["options"] == {}
    assert settings.model_spec(CONFIG, "gru", "dyck") == {
        "arch": "gru",
        "task": "dyck",
        "task_params": CONFIG["task_params"]["dyck"],
        "d_model": 128,
        "n_layers": 4,
        "options": {},
        "target_params": 830000,
    }
    shared = {k: v for k, v in CONFIG["training"].items() if k not in NOT_SETTINGS}
    assert settings.train_settings(CONFIG, "transformer", "s3")["lr"] == 0.0003
    parity = settings.train_settings(CONFIG, "transformer", "parity")
    assert (parity["lr"], parity["max_steps"]) == (0.0003, 3400)  # the family's lr, the pair's budget
    assert settings.train_settings(CONFIG, "lstm", "s3")["lr"] == 0.003
    assert settings.train_settings(CONFIG, "lstm", "dyck") == shared


def point_training(config, arch, task, **point):
    """A sweep point's training settings from the pair's own, as the workflow resolves them."""
    return sweep.point_training(config, arch, task, settings.train_settings(config, arch, task), **point)


def test_the_sweep_trains_every_point_on_as_many_sequences():
    small = point_training(CONFIG, "lstm", "s3", lr=0.01, batch_size=32)
    large = point_training(CONFIG, "lstm", "s3", lr=0.01, batch_size=64)
    assert (small["max_steps"], small["eval_every"]) == (600, 50)
    assert (large["max_steps"], large["eval_every"]) == (300, 25)
    assert small["max_steps"] * 32 == large["max_steps"] * 64 and large["lr"] == 0.01


def test_the_sweep_grid_crosses_each_familys_blocks_with_the_start_token_lr_and_batch():
    points = sweep.sweep_points(changed(sweep__pairs=None))
    grid = CONFIG["sweep"]
    per_block = len(grid["start_token"]) * len(grid["lr"]) * len(grid["batch_size"]) * len(grid["seeds"])
    assert len(points) == 3 * per_block * (2 + 4)  # the Transformer's two blocks, one for the others
    assert {p["block"] for p in points if p["arch"] == "transformer"} == {"parallel", "sequential"}
    assert {p["block"] for p in points if p["arch"] == "gru"} == {"default"}
    assert len(sweep.sweep_points(changed(sweep__pairs={}))) == 0
    options = sweep.point_options(CONFIG, "transformer", "sequential", True)
    spec = settings.model_spec(CONFIG, "transformer", "parity", options)
    assert spec["options"] == {
        "heads": 4,
        "rotary_pct": 1.0,
        "use_parallel_residual": False,
        "start_token": True,
    }


def test_sweep_pairs_sweep_only_the_pairs_named_each_on_its_own_grid():
    config = changed(
        sweep__pairs={
            "transformer": {"lr": [0.0003]},
            "transformer/dyck": {"batch_size": [32]},
            "lstm/s3": {},
        }
    )
    points = sweep.sweep_points(config)
    assert {(p["arch"], p["task"]) for p in points} == {
        ("transformer", "parity"),
        ("transformer", "s3"),
        ("transformer", "dyck"),
        ("lstm", "s3"),
    }
    assert {p["lr"] for p in points if p["arch"] == "transformer"} == {0.0003}
    assert {p["batch_size"] for p in points if p["task"] == "dyck"} == {32}
    assert {p["batch_size"] for p in points if p["task"] == "parity"} == {32, 64}
    assert {p["lr"] for p in points if p["arch"] == "lstm"} == set(CONFIG["sweep"]["lr"])
    # a pair whose grid has batch 64 only counts the budget at 64: no smaller batch to scale from
    alone = changed(sweep__pairs={"gru/s3": {"batch_size": [64]}})
    assert point_training(alone, "gru", "s3", lr=0.001, batch_size=64)["max_steps"] == (
        CONFIG["sweep"]["max_steps"]
    )
    with pytest.raises(ValueError, match="gru/parity"):
        point_training(alone, "gru", "parity", lr=0.001, batch_size=64)


def test_learnability_trains_a_pair_with_its_own_settings_to_the_learnability_cap():
    config = changed(training__overrides={"lstm/s3": {"lr": 0.003, "max_steps": 100}})
    capped = settings.learnability_settings(config, "lstm", "s3")
    assert (capped["lr"], capped["max_steps"]) == (0.003, CONFIG["learnability"]["max_steps"])


def test_learnability_covers_every_pair_or_the_listed_ones_in_the_study_order():
    assert len(settings.learnability_pairs(CONFIG)) == len(CONFIG["architectures"]) * len(CONFIG["tasks"])
    listed = changed(learnability__pairs=["mamba2/s3", "transformer/s3"])
    assert settings.learnability_pairs(listed) == [("transformer", "s3"), ("mamba2", "s3")]
    with pytest.raises(ValueError, match="codedepth"):
        settings.learnability_pairs(changed(learnability__pairs=["lstm/codedepth"]))


STUDY_BUDGETS = {
    "transformer/parity": 3400,
    "mamba/parity": 1200,
    "mamba_noconv/parity": 1200,
    "mamba_signed/parity": 1200,
    "mamba2/parity": 4650,
    "mamba2_noconv/parity": 4650,
    "mamba2_signed/parity": 4650,
}
"""The steps each pair trains for where not the config's ``training.max_steps``
(benchmarks/README.md says where each comes from); the Conv1D-ablated and signed
variants take their family's key."""


@pytest.mark.parametrize(
    "overlays, budgets",
    [
        ((), STUDY_BUDGETS),
        (("conv1d.yaml",), STUDY_BUDGETS),
        (("s3.yaml",), STUDY_BUDGETS | {"mamba_signed/s3": 3000}),
        (("learnability_s3.yaml",), STUDY_BUDGETS),
        (
            ("learnability_mamba_parity.yaml",),
            STUDY_BUDGETS
            | {"mamba/parity": 600, "mamba_noconv/parity": 600, "mamba_signed/parity": 600},
        ),
        (
            ("learnability_mamba2_parity.yaml",),
            STUDY_BUDGETS
            | {"mamba2/parity": 1500, "mamba2_noconv/parity": 1500, "mamba2_signed/parity": 1500},
        ),
        (("paper.yaml",), {}),  # 20 000 steps for every pair
        (("test.yaml",), {}),  # 6
        (("default_budget.yaml",), {}),  # 600
    ],
)
def test_every_pair_trains_for_the_steps_it_did_when_budgets_were_overrides(overlays, budgets):
    """Budgets as floors resolve as the overrides and their resets in every overlay did,
    and change nothing but ``max_steps``."""
    config = overlaid(*overlays)
    unbudgeted = yaml.safe_load(yaml.safe_dump(config))
    unbudgeted["training"]["pair_budgets"] = None
    for arch in ARCHS:
        for task in TASKS:
            resolved = settings.train_settings(config, arch, task)
            expected = budgets.get(f"{arch}/{task}", config["training"]["max_steps"])
            assert resolved["max_steps"] == expected, (overlays, arch, task)
            assert resolved | {"max_steps": 0} == settings.train_settings(unbudgeted, arch, task) | {
                "max_steps": 0
            }


def test_a_pair_budget_is_a_floor_under_the_most_specific_key_and_null_switches_budgets_off():
    config = changed(
        training__overrides={"gru/s3": {"max_steps": 900}},
        training__pair_budgets={"gru": 700, "gru/dyck": 500, "gru/s3": 800},
    )
    assert settings.train_settings(config, "gru", "parity")["max_steps"] == 700  # the family's floor
    assert settings.train_settings(config, "gru", "dyck")["max_steps"] == 600  # its own, below max_steps
    assert settings.train_settings(config, "gru", "s3")["max_steps"] == 900  # an override above its floor
    assert settings.pair_budget(config, "gru", "dyck") == 500
    off = changed(training__pair_budgets=None)
    assert {settings.train_settings(off, "transformer", task)["max_steps"] for task in TASKS[:3]} == {600}
    assert settings.pair_budget(off, "transformer", "parity") is None


def test_an_unknown_pair_budget_key_is_an_error_that_names_it():
    with pytest.raises(ValueError, match="training.pair_budgets: unknown key 'lstm/s4'"):
        settings.check_config(changed(training__pair_budgets={"lstm/s4": 100}))


def test_the_default_budget_overlay_puts_every_pair_back_at_the_shared_budget_and_schedule_only():
    overlay = yaml.safe_load((REPO / "config" / "default_budget.yaml").read_text())
    assert set(overlay) == {"training"} and set(overlay["training"]) == {"pair_budgets", "overrides"}
    assert all(set(keys) == {"decay_fraction"} for keys in overlay["training"]["overrides"].values())
    assert CONFIG["training"]["pair_budgets"]  # what it switches off
    config, shared = overlaid("default_budget.yaml"), CONFIG["training"]
    for arch in ARCHS:
        for task in TASKS:
            trained = settings.train_settings(config, arch, task)
            assert (trained["max_steps"], trained["decay_fraction"]) == (
                shared["max_steps"],
                shared["decay_fraction"],
            )


@pytest.mark.parametrize("overlay", ["paper.yaml", "test.yaml"])
def test_an_overlay_trains_every_pair_for_its_own_step_budget(overlay):
    """Snakemake merges an overlay onto config.yaml key by key: the default study's
    per-pair budgets (sized for its 600 steps) must not reach the paper's or the tests'."""
    config = overlaid(overlay)
    values = yaml.safe_load((REPO / "config" / overlay).read_text())
    budgets = {
        settings.train_settings(config, arch, task)["max_steps"]
        for arch in config["architectures"]
        for task in config["tasks"]
    }
    assert budgets == {values["training"]["max_steps"]}


def mirrored(overlay: dict, base: dict, path: str = "") -> list[str]:
    """The keys of ``overlay`` that set the value ``base`` has already."""
    keys = []
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            keys += mirrored(value, base[key], f"{path}{key}.")
        elif key in base and base[key] == value:
            keys.append(path + key)
    return keys


@pytest.mark.parametrize(
    "overlay",
    [
        "paper.yaml", "default_budget.yaml", "conv1d.yaml", "s3.yaml", "learnability_s3.yaml", "test.yaml",
        "pretrained.yaml",
    ],  # fmt: skip
)
def test_an_overlay_states_only_what_it_changes(overlay):
    assert mirrored(yaml.safe_load((REPO / "config" / overlay).read_text()), CONFIG) == []


def test_fine_tuning_states_only_what_it_changes_of_the_shared_training_settings():
    fine_tuning = CONFIG["pretrained"]["training"]
    assert mirrored(fine_tuning, settings.shared_training(CONFIG)) == []
    assert settings.pretrained_training(CONFIG) == settings.shared_training(CONFIG) | fine_tuning


def test_no_config_sets_retries_the_profiles_do():
    """Retries are how Snakemake runs, not what the study computes: the workflow profiles
    hold them (profiles/default is loaded by default, profiles/slurm by name)."""
    for path in (REPO / "config").glob("*.yaml"):
        assert "retries" not in yaml.safe_load(path.read_text()), path
    for profile in ("default", "slurm"):
        retries = yaml.safe_load((REPO / "profiles" / profile / "config.yaml").read_text())["retries"]
        assert isinstance(retries, int) and retries >= 1
    rules = "".join(path.read_text() for path in (REPO / "workflow" / "rules").glob("*.smk"))
    assert "retries" not in rules + (REPO / "Snakefile").read_text()


def undescribed(schema: dict, defs: dict, path: str = "") -> list[str]:
    """Every key of the schema's properties (and pattern properties), at any depth, without a
    description of its own or of the definition it refers to."""
    missing = []
    for keyword in ("properties", "patternProperties"):
        for key, sub in schema.get(keyword, {}).items():
            referred = defs.get(sub.get("$ref", "").removeprefix("#/$defs/"), {})
            if "description" not in sub and "description" not in referred:
                missing.append(path + key)
            missing += undescribed(sub, defs, f"{path}{key}.")
    for keyword in ("additionalProperties", "items"):
        if isinstance(schema.get(keyword), dict):
            missing += undescribed(schema[keyword], defs, f"{path}*.")
    return missing


def test_every_key_of_the_config_schema_has_a_description():
    schema = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())
    defs = schema["$defs"]
    assert undescribed(schema, defs) == []
    assert [name for sub in defs.values() for name in undescribed(sub, defs)] == []


@pytest.mark.parametrize(
    "changes, pretrained, message",
    [
        ({"training__device": "cuda"}, [], "training.device is 'cuda'"),
        ({"training__mamba_backend": "cuda"}, [], "training.mamba_backend is 'cuda'"),
        ({"training__mamba_backend": "cuda", "architectures": ["gru"]}, ["pythia-x"], "mamba_backend"),
    ],
)
def test_cuda_asked_for_on_a_machine_without_a_gpu_is_named(changes, pretrained, message):
    config = changed(**changes)
    with pytest.raises(ValueError, match=message):
        settings.check_devices(config, pretrained, has_gpu=False)
    settings.check_devices(config, pretrained, has_gpu=True)


def test_the_cuda_mamba_backend_needs_no_gpu_without_a_mamba_job():
    settings.check_devices(changed(training__mamba_backend="cuda", architectures=["gru"]), [], has_gpu=False)


def test_the_scale_line_names_the_budgets_that_raise_a_pairs_steps_only():
    budgets = "{'transformer/parity': 3400, 'mamba/parity': 1200, 'mamba2/parity': 4650}"
    assert f"per-pair step budgets {budgets}" in settings.run_scale(CONFIG, [], [])
    assert "step budgets" not in settings.run_scale(overlaid("paper.yaml"), [], [])


def test_an_overlay_replaces_leaves_and_lists_and_keeps_what_it_does_not_name():
    base = {"training": {"lr": 0.001, "overrides": {"gru": {"lr": 0.003}}}, "seeds": [0, 1, 2]}
    overlay = {"training": {"overrides": {"lstm": {"lr": 0.01}}}, "seeds": [0]}
    assert settings.overlaid(base, overlay) == {
        "training": {"lr": 0.001, "overrides": {"gru": {"lr": 0.003}, "lstm": {"lr": 0.01}}},
        "seeds": [0],
    }
    assert base["training"]["overrides"] == {"gru": {"lr": 0.003}}  # the base is not modified
