"""The position curriculum (``training.curriculum``): the loss covers the first ``k``
positions, ``k`` rises at the threshold, and with it off training is what it was."""

from pathlib import Path

import pytest
import torch
import yaml
from study_config import CONFIG, cpu_run, train_config, training_settings

from statelayers import files
from statelayers.models.spec import ModelSpec
from statelayers.models.tagger import build_model
from statelayers.settings import train_settings
from statelayers.tasks.curriculum import PositionCurriculum
from statelayers.tasks.data import make_split
from statelayers.training import accumulate_gradients, prepare_run, train

REPO = Path(__file__).resolve().parents[1]
SPEC = {"arch": "gru", "task": "s3", "task_params": {}, "d_model": 8, "n_layers": 1, "options": {},
        "target_params": 1}  # fmt: skip
TRAINING = training_settings(
    max_steps=12, batch_size=4, lr=0.01, warmup_fraction=0.1, eval_every=3, log_every=2
)


def test_it_starts_at_start_and_rises_by_step_only_at_the_threshold_up_to_the_length():
    curriculum = PositionCurriculum(start=4, step=3, threshold=0.9, length=10)
    assert curriculum.covered == 4
    assert curriculum.update(0.89) == 4
    assert curriculum.update(0.9) == 7
    assert curriculum.update(1.0) == 10
    assert curriculum.update(1.0) == 10
    assert PositionCurriculum(start=50, step=1, threshold=0.5, length=10).covered == 10


@pytest.mark.parametrize("bad", [{"start": 0}, {"step": 0}, {"threshold": 0.0}, {"threshold": 1.5}])
def test_a_curriculum_that_could_never_cover_a_position_or_rise_is_refused(bad):
    with pytest.raises(ValueError, match="curriculum"):
        PositionCurriculum(**({"start": 2, "step": 2, "threshold": 0.9, "length": 10} | bad))


def test_the_default_config_has_it_off_for_every_pair():
    assert CONFIG["training"]["curriculum"] is None
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    for arch in config["architectures"]:
        for task in config["tasks"]:
            assert train_settings(config, arch, task)["curriculum"] is None


def test_the_loss_and_accuracy_cover_only_the_first_k_positions():
    torch.manual_seed(0)
    model = build_model(ModelSpec("gru", 6, 6, d_model=8, n_layers=1))
    tokens = torch.randint(0, 6, (4, 10), generator=torch.Generator().manual_seed(1))
    labels = torch.randint(0, 6, (4, 10), generator=torch.Generator().manual_seed(2))
    config = train_config(batch_size=4)

    def gradients(labels, positions):
        model.zero_grad()
        loss, acc = accumulate_gradients(model, tokens, labels, config, torch.device("cpu"), positions)
        return loss, [p.grad.clone() for p in model.parameters()]

    loss, grads = gradients(labels, 5)
    later = labels.clone()
    later[:, 5:] = (later[:, 5:] + 1) % 6
    same_loss, same_grads = gradients(later, 5)
    assert torch.equal(loss, same_loss) and all(torch.equal(a, b) for a, b in zip(grads, same_grads))
    earlier = labels.clone()
    earlier[:, 4] = (earlier[:, 4] + 1) % 6
    assert not torch.equal(gradients(earlier, 5)[0], loss)


@pytest.fixture
def validation(tmp_path):
    path = tmp_path / "validation.parquet"
    files.write_parquet(make_split("s3", "validation", 16, 10, seed=0), path)
    return path


def trained(validation, **settings):
    inputs = cpu_run(SPEC, TRAINING | settings, validation)
    run = prepare_run(inputs)
    outcome = train(run.model, run.stream, run.validation, inputs.config, inputs.seed, run.device)
    return run.model, outcome.history


def test_off_trains_bit_for_bit_as_a_curriculum_that_covers_every_position_from_the_start(validation):
    """With the curriculum off nothing is sliced or read back; covering all 10 positions
    from step 1 runs the sliced path, which must then be the same arithmetic."""
    off_model, off_history = trained(validation, curriculum=None)
    full_model, full_history = trained(validation, curriculum={"start": 10, "step": 1, "threshold": 1.0})
    for off, full in zip(off_model.state_dict().values(), full_model.state_dict().values()):
        assert torch.equal(off, full)
    drop = ("seconds", "covered_positions")
    assert [{k: v for k, v in row.items() if k not in drop} for row in full_history] == [
        {k: v for k, v in row.items() if k != "seconds"} for row in off_history
    ]
    assert all("covered_positions" not in row for row in off_history)


def test_a_run_logs_the_covered_positions_as_they_rise(validation):
    _, history = trained(validation, curriculum={"start": 1, "step": 2, "threshold": 0.05})
    covered = [row["covered_positions"] for row in history]
    assert covered == sorted(covered) and covered[0] >= 1 and covered[-1] == 10
