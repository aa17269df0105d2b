"""One source of defaults: the run config's pydantic models; ``LoopSettings`` derives from them."""

import dataclasses
import typing

from coalign.budget import BudgetSpec
from coalign.job import RunConfig
from coalign.optimize import Gate, LoopSettings
from coalign.optimize._kinds import KINDS


def _defaults():
    loop = {f.name: (f.default_factory() if f.default_factory is not dataclasses.MISSING
                     else f.default) for f in dataclasses.fields(LoopSettings)}
    config = {n: f.default for n, f in RunConfig.model_fields.items()}
    budget = {n: f.default for n, f in BudgetSpec.model_fields.items()}
    return loop, config, budget


def test_every_shared_setting_has_one_default():
    loop, config, budget = _defaults()
    assert set(budget) <= set(loop)  # every budget field reaches the loop by name
    # the run config spells the gate as fields, and names extra kinds by import path
    shared = (set(loop) & set(config)) - {"gate", "kinds"}
    assert {"seed", "proposer", "components", "cost_weight", "text_optimizer",
            "weights_optimizer", "optimizers", "choice_costs"} <= shared
    for name in sorted(set(budget) | shared):
        want = budget[name] if name in budget else config[name]
        assert loop[name] == want, name
    gate = loop["gate"]  # the run config spells the gate as three fields
    assert (gate.kind, gate.confidence, gate.early_reject) == (
        config["gate"], config["gate_confidence"], config["early_reject"])
    assert gate == Gate()
    # the run config generates the loop's settings: with every default, the loop's defaults
    assert RunConfig().loop_settings({}) == LoopSettings()
    assert {"temperature", "tau", "min_alignment_pairs"} <= set(budget)  # settable from YAML


def test_the_defaults_are_the_affordable_cli_budget():
    s = LoopSettings()
    assert (s.iterations, s.search_size, s.fresh_inputs, s.rollout_n) == (4, 4, 4, 3)


def test_run_config_optimizer_names_are_the_registry_names():
    text = typing.get_args(RunConfig.model_fields["text_optimizer"].annotation)
    weights = typing.get_args(RunConfig.model_fields["weights_optimizer"].annotation)
    assert set(text) == set(KINDS["text"].optimizers)
    assert set(weights) == set(KINDS["weights"].optimizers)
    # the superseded fields' defaults are the registry's defaults: leaving them out chooses the same
    assert (RunConfig().text_optimizer, RunConfig().weights_optimizer) == (
        KINDS["text"].default, KINDS["weights"].default)


def test_an_unknown_optimizer_name_in_the_python_api_is_one_line():
    import pytest

    from coalign.errors import ConfigError
    from coalign.optimize._local import local_optimizers

    with pytest.raises(ConfigError, match=r"weights_optimizer: unknown 'sgd'; use one of "
                                          r"\['ppo', 'reinforce'\]"):
        local_optimizers(LoopSettings(weights_optimizer="sgd"))
    assert local_optimizers(LoopSettings(weights_optimizer="ppo"))["weights"].ppo


def test_downstream_completions_reach_every_rollout_pair(tmp_path):
    """``budget.completions`` (m) sets how many downstream runs label each rollout candidate."""
    import pytest

    from coalign.errors import ConfigError
    from coalign.job import parse_run_config
    from tests.selector_toy import selector_loop

    assert parse_run_config({"budget": {"completions": 3}}).budget.completions == 3
    with pytest.raises(ConfigError, match="completions"):
        parse_run_config({"budget": {"completions": 0}})
    opt = selector_loop(tmp_path / "m2", completions=2)
    opt.prepare()
    pairs = opt.store.pairs("chooser")
    assert pairs and {p.m for p in pairs} == {2}


def test_stage1_inputs_caps_the_train_inputs_stage_1_rolls_out(tmp_path):
    """``budget.stage1_inputs``: stage 1's pairs come from the first N train inputs only, so the
    loop reaches its first validation after fewer runs."""
    import pytest

    from coalign.errors import ConfigError
    from coalign.job import parse_run_config
    from tests.selector_toy import selector_loop

    assert parse_run_config({"budget": {"stage1_inputs": 3}}).budget.stage1_inputs == 3
    with pytest.raises(ConfigError, match="stage1_inputs"):
        parse_run_config({"budget": {"stage1_inputs": 0}})
    full = selector_loop(tmp_path / "all")
    full.prepare()
    capped = selector_loop(tmp_path / "three", stage1_inputs=3)
    capped.prepare()
    rolled = {p.example_id for p in capped.store.pairs("chooser")}
    assert rolled and rolled <= {e.id for e in capped.train[:3]}
    assert {p.example_id for p in full.store.pairs("chooser")} - rolled  # the others too
    assert capped.account.equivalent_runs() < full.account.equivalent_runs()
