"""``coalign arco show`` prints an episode with criteria and scores; bad input exits 2."""

import torch
from typer.testing import CliRunner

import coalign.cli._arco  # noqa: F401  (registers the command)
from coalign.cli._app import app
from coalign.data import make_world
from coalign.rubric import ArcoModel, BackboneConfig, RubricSpec, build_encoder, save_checkpoint
from tests.test_rubric_model import one_torch_thread  # noqa: F401  (autouse fixture)


def _checkpoint(path):
    world = make_world(seed=3, n_questions=12, n_paragraphs=8)
    encoder = build_encoder(world, ["the answer appears in a retrieved passage"], 2000)
    torch.manual_seed(0)
    model = ArcoModel(BackboneConfig(len(encoder.vocab), d_model=16, n_layers=1, n_heads=2,
                                     d_ff=32))
    save_checkpoint(path, model, encoder, RubricSpec(k=2),
                    {"world_seed": 3, "world_questions": 12, "train": 8})


def test_show_prints_steps_criteria_and_scores(tmp_path):
    _checkpoint(tmp_path / "ck")
    result = CliRunner().invoke(app, ["arco", "show", str(tmp_path / "ck"), "--index", "1"])
    assert result.exit_code == 0, result.output
    assert "Q:" in result.output and "criteria" in result.output
    assert "R = " in result.output and "sum_t s_t" in result.output
    assert "1." in result.output and "2." in result.output  # K=2 numbered criteria


def test_show_rejects_missing_checkpoint_and_bad_index(tmp_path):
    runner = CliRunner()
    missing = runner.invoke(app, ["arco", "show", str(tmp_path / "nope")])
    assert missing.exit_code == 2
    assert "missing meta.json" in missing.output
    _checkpoint(tmp_path / "ck")
    bad = runner.invoke(app, ["arco", "show", str(tmp_path / "ck"), "--index", "99"])
    assert bad.exit_code == 2 and "--index" in bad.output
