"""Systems and metrics by import path: resolved, called and checked before anything is
written; every mistake is one ConfigError line naming the path."""

from __future__ import annotations

import itertools
import json
import sys
import textwrap

import pytest

from coalign.data import Example
from coalign.errors import CoalignError, ConfigError
from coalign.imports import check_metric, load_metric, load_task, resolve
from coalign.job import Job, parse_run_config

_names = itertools.count()

TOY = """
from coalign.component import FunctionComponent
from coalign.params import Choice
from coalign.system import System
from coalign.task import Task


def scale(inputs, config, ctx):
    return {"guess": inputs["value"] * config["factor"]}


def system(model):
    comp = FunctionComponent("scaler", scale, ["value"], ["guess"],
                             params={"factor": Choice([1, 2, 3], 1)})
    return System("toy_scale", [comp], ["value"], "guess")


def closeness(prediction, example):
    return 1.0 / (1.0 + abs(prediction - example.target))


def task(model):
    return Task(system(model), closeness, "closeness")
"""


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """Writes a module into the current directory (tmp_path) and returns its name; sys.path
    and sys.modules are restored afterwards."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    written = []

    def write(source: str) -> str:
        name = f"byo_user_{next(_names)}"
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
        written.append(name)
        return name

    yield write
    for name in written:
        sys.modules.pop(name, None)


def test_a_factory_and_metric_from_the_current_directory(user_module):
    mod = user_module(TOY)
    task = load_task(f"{mod}:task", "any-model")
    assert task.system.name == "toy_scale" and task.metric_name == "closeness"
    bare = load_task(f"{mod}:system", "m", metric=f"{mod}:closeness")  # a System + a metric
    assert bare.metric_name == "closeness"
    example = Example("a", {"value": 2}, 4)
    assert bare.metric(4, example) == 1.0
    check_metric(bare, example, f"{mod}:system", f"{mod}:closeness")
    assert load_task("multihop_qa", "m", metric="em").metric_name == "em"
    assert resolve(f"{mod}:Task.reward", "system").__name__ == "reward"  # a dotted attribute


@pytest.mark.parametrize("source, spec, match", [
    ("", "{mod}:", r"^system '{mod}:': expected an import path module.name:attribute"),
    ("", "my-mod:build", r"^system 'my-mod:build': expected an import path"),
    ("", "byo_absent_module:build", r"^system 'byo_absent_module:build': no module named "
     r"'byo_absent_module' in .+; run coalign from its folder or install it$"),
    ("import byo_absent_dependency\n", "{mod}:build", r"^system '{mod}:build': importing {mod} "
     r"failed: ModuleNotFoundError: No module named 'byo_absent_dependency'$"),
    ("raise RuntimeError('no GPU here')\n", "{mod}:build",
     r"^system '{mod}:build': importing {mod} failed: RuntimeError: no GPU here$"),
    ("def build(model:\n", "{mod}:build", r"importing {mod} failed: SyntaxError: "),
    ("", "{mod}:build", r"^system '{mod}:build': module {mod} has no attribute 'build'$"),
    ("build = 3\n", "{mod}:build", r"^system '{mod}:build' is a int, not a function; expected "
     r"factory\(model\) -> coalign.task.Task$"),
    ("def build(model, retriever):\n    pass\n", "{mod}:build", r"^system '{mod}:build' takes "
     r"\(model, retriever\); expected factory\(model\) -> coalign.task.Task$"),
    ("def build(model):\n    return []\n", "{mod}:build",
     r"^system '{mod}:build' returned a list, expected a coalign.task.Task; write it as"),
    (TOY, "{mod}:system", r"^system '{mod}:system' returned a System, expected a "
     r"coalign.task.Task \(a System needs a metric: give the run config one\)"),
    ("def build(model):\n    raise ValueError('unknown model ' + model)\n", "{mod}:build",
     r"^system '{mod}:build': calling it with model 'm' failed: ValueError: unknown model m$"),
    ("", "nosuch", r"^unknown system 'nosuch'; available: \[.*'multihop_qa'.*\], or an import"),
])
def test_a_bad_system_path_is_one_line(user_module, source, spec, match):
    mod = user_module(source)
    with pytest.raises(ConfigError, match=match.format(mod=mod)) as info:
        load_task(spec.format(mod=mod), "m")
    assert "\n" not in str(info.value)


def test_a_bad_metric_path_is_one_line(user_module):
    mod = user_module(TOY + "\n\ndef one(prediction):\n    return 1.0\n")
    with pytest.raises(ConfigError, match=rf"^metric '{mod}:one' takes \(prediction\); "
                                          r"expected metric\(prediction, example\) -> float$"):
        load_metric(f"{mod}:one")
    with pytest.raises(ConfigError, match=rf"^metric '{mod}:nope': module {mod} has no "):
        load_task(f"{mod}:task", "m", metric=f"{mod}:nope")
    with pytest.raises(ConfigError, match=r"^metric: unknown name 'f2'; choose one of"):
        load_metric("f2")


@pytest.mark.parametrize("body, match", [
    ("return None", r"returned None \(NoneType\) for example 'a'; write it as "
                    r"metric\(prediction, example\) -> float returning a finite number$"),
    ("return '0.5'", r"returned '0.5' \(str\) for example 'a'"),
    ("return float('nan')", r"returned nan \(float\)"),
    ("return {'f1': 1.0}", r"returned \{'f1': 1.0\} \(dict\)"),
    ("return example.meta['gold']", r"failed on example 'a' with its own target and with an "
                                    r"empty prediction: KeyError: 'gold'$"),
])
def test_a_metric_returning_no_number_is_refused(user_module, body, match):
    mod = user_module(f"def metric(prediction, example):\n    {body}\n")
    task = load_task("multihop_qa", "m", metric=f"{mod}:metric")
    with pytest.raises(ConfigError, match=rf"^metric '{mod}:metric' " + match):
        check_metric(task, Example("a", {}, "gold"), "multihop_qa", f"{mod}:metric")


@pytest.mark.parametrize("body", [
    "return prediction == example.target",  # a bool is a number
    "return len(prediction) / 10",  # fails on the target 3, scores the empty prediction
])
def test_a_metric_returning_a_number_on_either_probe_passes(user_module, body):
    mod = user_module(f"def metric(prediction, example):\n    {body}\n")
    task = load_task("multihop_qa", "m", metric=f"{mod}:metric")
    check_metric(task, Example("a", {}, 3), "multihop_qa", f"{mod}:metric")


def test_job_checks_user_code_and_data_before_the_run_dir_is_written(user_module, tmp_path):
    mod = user_module(TOY + "\n\ndef silent(prediction, example):\n    pass\n")
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"v": i, "answer": 2 * i}) + "\n" for i in range(6)))
    base = {"system": f"{mod}:system", "metric": f"{mod}:closeness", "backbone": "hashing",
            "data": {"path": str(rows), "fields": {"value": "v", "target": "answer"}},
            "split": {"train": 2, "val": 2, "test": 2}}
    run_dir = tmp_path / "run"
    for change, match in [
        ({"metric": f"{mod}:silent"}, rf"^metric '{mod}:silent' returned None"),
        ({"data": {"path": str(rows), "fields": {"number": "v", "target": "answer"}}},
         r"^dataset '.*rows.jsonl': system 'toy_scale' needs input 'value', missing from "
         r"example '0' \(it has \['number'\]\)"),
        ({"data": {"path": str(rows), "fields": {"value": "w", "target": "answer"}}},
         r"^rows.jsonl line 1: field 'w' missing \(data.fields maps 'value' to 'w'"),
        ({"system": f"{mod}:absent"}, rf"^system '{mod}:absent': module {mod} has no "),
    ]:
        with pytest.raises(CoalignError, match=match):  # a ConfigError, or a DataError
            Job.open(parse_run_config({**base, **change}), run_dir)
        assert not run_dir.exists()
    job = Job.open(parse_run_config(base), run_dir)
    assert job.task.metric_name == "closeness" and job.data_read.endswith(
        "rows.jsonl read as records mapped by data.fields")
    job.store.close()


@pytest.mark.parametrize("data, match", [
    ({"path": "x.jsonl", "bogus": 1}, r"field 'data.bogus': Extra inputs"),
    ({"fields": {"q": "q"}}, r"field 'data.path': Field required"),
    ({"path": "x.jsonl", "fields": {"q": 1}}, r"field 'data.fields.q': Input should be a valid "
                                               "string"),
    (3, r"field 'data': Input should be a valid string"),
])
def test_a_data_mapping_in_a_run_config_is_checked_by_field(data, match):
    with pytest.raises(ConfigError, match=match):
        parse_run_config({"data": data})


def test_the_new_settings_keep_old_digests_and_survive_a_round_trip():
    assert parse_run_config({}).digest == parse_run_config({"metric": None}).digest
    cfg = parse_run_config({"metric": "em", "data": {"path": "x.jsonl",
                                                     "ground_truth": "gt.json"}})
    again = parse_run_config(cfg.redacted().model_dump())  # as a run dir stores it
    assert again.digest == cfg.digest and str(again.data) == "x.jsonl"
