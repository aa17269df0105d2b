"""The malformed inputs ``benchmarks/bad_inputs.py`` tries, one ``Case`` each, by family.

Every case writes its own inputs into a fresh folder (``Ctx.dir``) and returns the CLI
arguments that feed them to coalign. Run configs and datasets name ``Ctx.sentinel`` as their
model: a file that exists but is not a GGUF model, so a run that accepts its input stops at its
first LLM call with an error naming that file, instead of loading a model. A bad input that
gets that far was silently accepted; a good one (``good=True``) was rightly accepted.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
FIXTURE_PAIRS = ROOT / "examples" / "audit" / "fixture_pairs.jsonl"
FIXTURE_CONTRACT = ROOT / "examples" / "audit" / "fixture_contract.json"
TABLE = ROOT / "benchmarks" / "tables" / "multihop_qa"  # only read (replay / status)
SENTINEL = "probe-sentinel.gguf"


class Ctx:
    """Where one case writes its inputs; ``root`` is shared (sentinel, base run dir)."""

    def __init__(self, root: Path, name: str) -> None:
        self.root, self.dir = root, root / "cases" / name
        self.dir.mkdir(parents=True)
        self.sentinel = root / SENTINEL
        if not self.sentinel.exists():
            self.sentinel.write_bytes(b"NOT A GGUF MODEL\n")

    def write(self, name: str, content: str | bytes) -> Path:
        path = self.dir / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        return path

    @property
    def run(self) -> Path:
        return self.dir / "run"

    @property
    def disk(self) -> Path:
        """A folder the probe mounts as the case's ``disk`` says (read-only, full)."""
        path = self.dir / "disk"
        path.mkdir(exist_ok=True)
        return path

    def base_run(self) -> Path:
        """A copy of a run dir made by ``coalign optimize`` (stopped at the sentinel)."""
        base = self.root / "base-run"
        if not base.exists():
            cfg = self.root / "base.yaml"
            cfg.write_text(yaml.safe_dump(config(self)))
            made = subprocess.run([sys.executable, "-m", "coalign", "optimize", str(cfg),
                                   "--run-dir", str(base)], capture_output=True, text=True,
                                  timeout=300, cwd=self.root)
            if not (base / "run.sqlite").exists():
                raise RuntimeError(f"could not make the base run dir: {made.stderr[-500:]}")
            (base / "run.lock").unlink(missing_ok=True)
        shutil.copytree(base, self.run)
        return self.run


@dataclass(frozen=True)
class Case:
    name: str
    family: str
    make: Callable[[Ctx], list[str]]
    good: bool = False  # a legitimate input: it must be accepted
    ok_codes: tuple[int, ...] = (0,)  # exit codes of a correct result (good cases)
    marker: str | None = None  # stdout text that shows the input was accepted
    # how Ctx.disk is mounted for the run: "read-only", "full" or "nearly-full" (one page free)
    disk: str | None = None
    check: Callable[[Ctx, str, str], bool] | None = None  # (ctx, stdout, stderr): all is well


def config(ctx: Ctx, **over: Any) -> dict[str, Any]:
    """A small valid run config (sentinel model), with top-level fields replaced."""
    return {"system": "multihop_qa", "model": str(ctx.sentinel), "data": "world",
            "split": {"train": 1, "val": 1, "test": 1}, "budget": {"iterations": 1}, **over}


# -- run configs: coalign optimize ------------------------------------------------------------

ACCEPTED_RUN = "; run dir "  # printed once the job is open, before any model work


def _optimize(name: str, content: str | bytes | Callable[[Ctx], Any], suffix: str = ".yaml",
              good: bool = False) -> Case:
    def make(ctx: Ctx) -> list[str]:
        raw = content(ctx) if callable(content) else content
        if not isinstance(raw, str | bytes):
            raw = json.dumps(raw) if suffix == ".json" else yaml.safe_dump(raw)
        path = ctx.write("run" + suffix, raw)
        return ["optimize", str(path), "--run-dir", str(ctx.run)]
    return Case(name, "run-config", make, good=good, marker=ACCEPTED_RUN)


def _over(**over: Any) -> Callable[[Ctx], Any]:
    return lambda ctx: config(ctx, **over)


def _data_file(rows: str) -> Callable[[Ctx], Any]:
    return lambda ctx: config(ctx, data=str(ctx.write("rows.jsonl", rows)),
                              split={"train": 1, "val": 1, "test": 1})


def _config_dir(ctx: Ctx) -> list[str]:
    (ctx.dir / "run.yaml").mkdir()
    return ["optimize", str(ctx.dir / "run.yaml"), "--run-dir", str(ctx.run)]


ROW = {"id": "a", "inputs": {"question": "q?", "paragraphs": []}, "target": "x"}


def rows(*objs: Any) -> str:
    return "".join((o if isinstance(o, str) else json.dumps(o)) + "\n" for o in objs)


def _row(**over: Any) -> dict[str, Any]:
    return {**ROW, **over}


RUN_CONFIGS = [
    _optimize("empty yaml file", ""),
    _optimize("comments-only yaml", "# nothing here\n"),
    _optimize("empty json file", "", ".json"),
    _optimize("yaml list", "- system\n- multihop_qa\n"),
    _optimize("yaml scalar", "multihop_qa\n"),
    _optimize("json array", "[]", ".json"),
    _optimize("invalid yaml", "system: [unclosed\n"),
    _optimize("invalid json", "{", ".json"),
    _optimize("invalid utf-8", b"system: multihop\xff_qa\n"),
    _optimize("duplicate yaml key", lambda ctx: yaml.safe_dump(config(ctx)) + "seed: 1\nseed: 2\n"),
    _optimize("duplicate json key",
              lambda ctx: json.dumps(config(ctx))[:-1] + ', "seed": 1, "seed": 2}', ".json"),
    Case("config path is a directory", "run-config", _config_dir),
    _optimize("unknown top-level key", _over(sytem="multihop_qa")),
    _optimize("unknown split key", _over(split={"train": 1, "val": 1, "test": 1, "dev": 1})),
    _optimize("unknown budget key", _over(budget={"iterations": 1, "steps": 3})),
    _optimize("split.train a string", _over(split={"train": "three", "val": 1, "test": 1})),
    _optimize("split.train zero", _over(split={"train": 0, "val": 1, "test": 1})),
    _optimize("split.val negative", _over(split={"train": 1, "val": -1, "test": 1})),
    _optimize("split.train a fraction", _over(split={"train": 1.5, "val": 1, "test": 1})),
    _optimize("split larger than the data", _data_file(rows(ROW, _row(id="b")))),
    _optimize("budget.iterations negative", _over(budget={"iterations": -1})),
    _optimize("budget.iterations true", _over(budget={"iterations": True})),
    _optimize("budget.rollout_n one", _over(budget={"iterations": 1, "rollout_n": 1})),
    _optimize("budget.text_candidates zero", _over(budget={"iterations": 1,
                                                           "text_candidates": 0})),
    _optimize("budget.min_alignment above 1", _over(budget={"iterations": 1,
                                                            "min_alignment": 1.5})),
    _optimize("budget not a mapping", _over(budget=[1, 2])),
    _optimize("unknown gate", _over(gate="lenient")),
    _optimize("gate_confidence 1", _over(gate_confidence=1.0)),
    _optimize("gate_confidence a word", _over(gate_confidence="high")),
    _optimize("early_reject 1", _over(early_reject=1.0)),
    _optimize("cost_weight negative", _over(cost_weight=-1)),
    _optimize("cost_weight NaN", lambda ctx: json.dumps(config(ctx))[:-1] + ', "cost_weight": NaN}',
              ".json"),
    _optimize("seed a string", _over(seed="x")),
    _optimize("workers zero", _over(workers=0)),
    _optimize("workers negative", _over(workers=-2)),
    _optimize("unknown system", _over(system="nosuch")),
    _optimize("system null", _over(system=None)),
    _optimize("unknown dataset", _over(data="nosuch")),
    _optimize("dataset file missing", lambda ctx: config(ctx, data=str(ctx.dir / "absent.jsonl"))),
    _optimize("dataset path a directory", lambda ctx: config(ctx, data=str(ctx.dir))),
    _optimize("dataset with repeated ids", _data_file(rows(ROW, _row(id="b"), ROW))),
    # only the rows the split needs are read (docs/data.md: limit): a repeat after them is
    # never used
    _optimize("dataset with an id repeated after the rows used",
              _data_file(rows(ROW, _row(id="b"), _row(id="c"), ROW)), good=True),
    _optimize("unknown model", _over(model="no-such-model")),
    _optimize("unknown proposer", _over(proposer="no-such-model")),
    _optimize("unknown backbone", _over(backbone="nosuch")),
    _optimize("unknown component", _over(components=["nosuch"])),
    _optimize("empty component list", _over(components=[])),
    _optimize("components a string", _over(components="answer_generator")),
    _optimize("unknown text_optimizer", _over(text_optimizer="nosuch")),
    _optimize("start: unknown component", _over(start={"nosuch": {"prompt": "x"}})),
    _optimize("start: unknown param", _over(start={"retriever": {"kk": 3}})),
    _optimize("start: k not an option", _over(start={"retriever": {"k": 7}})),
    _optimize("start: prompt a number", _over(start={"answer_generator": {"prompt": 5}})),
    _optimize("start not a mapping", _over(start="x")),
    _optimize("choice_costs: unknown slot", _over(choice_costs={"nosuch.model": {"a": 1}})),
    _optimize("choice_costs: not a per-instance choice",
              _over(choice_costs={"retriever.k": {"3": 1}})),
    _optimize("choice_costs: unknown option",
              _over(system="pubmedqa_select", data="pubmedqa",
                    choice_costs={"answerer.model": {"gpt-9": 1.0}})),
    _optimize("choice_costs: negative cost",
              _over(system="pubmedqa_select", data="pubmedqa",
                    choice_costs={"answerer.model": {"smollm2-135m": -1.0}})),
    _optimize("choice_costs: cost a word", _over(choice_costs={"retriever.k": {"3": "cheap"}})),
    _optimize("endpoint: unknown key", _over(endpoint={"timeout": 5})),
    _optimize("endpoint: timeout_s negative", _over(endpoint={"timeout_s": -5})),
    _optimize("endpoint: concurrency zero", _over(endpoint={"concurrency": 0})),
    _optimize("endpoint: max_retries negative", _over(endpoint={"max_retries": -1})),
    _optimize("endpoint not a mapping", _over(endpoint="fast")),
    _optimize("lm: not replay", _over(lm="openai:gpt-4o")),
    _optimize("lm: replay of a missing dir", lambda ctx: config(ctx, lm=f"replay:{ctx.dir}/no")),
    _optimize("lm: replay table of another dataset", _over(lm=f"replay:{TABLE}")),
    _optimize("valid yaml config", lambda ctx: config(ctx), good=True),
    _optimize("valid json config", lambda ctx: config(ctx), ".json", good=True),
]


# -- dataset files: coalign evaluate --data FILE.jsonl ----------------------------------------

def _dataset(name: str, content: str | bytes | Callable[[Ctx], Path], good: bool = False,
             limit: str = "5") -> Case:
    def make(ctx: Ctx) -> list[str]:
        path = content(ctx) if callable(content) else ctx.write("rows.jsonl", content)
        return ["evaluate", "multihop_qa", "--data", str(path), "--limit", limit, "--model",
                str(ctx.sentinel), "--workers", "1", "--run-dir", str(ctx.run)]
    return Case(name, "dataset", make, good=good)


def _dir_named(name: str) -> Callable[[Ctx], Path]:
    def make(ctx: Ctx) -> Path:
        (ctx.dir / name).mkdir()
        return ctx.dir / name
    return make


DATASETS = [
    _dataset("repeated ids", rows(ROW, _row(id="b"), _row(id="a"))),
    _dataset("repeated ids, int and string", rows(_row(id=1), _row(id="1"))),
    _dataset("missing target", rows(ROW, {"id": "b", "inputs": ROW["inputs"]})),
    _dataset("null target", rows(_row(target=None))),
    _dataset("NaN target", rows('{"id": "a", "inputs": {"question": "q", "paragraphs": []}, '
                                '"target": NaN}')),
    _dataset("Infinity target", rows('{"id": "a", "inputs": {"question": "q", "paragraphs": '
                                     '[]}, "target": -Infinity}')),
    _dataset("invalid JSON row", rows(ROW, '{"id": "b", "inputs": {')),
    _dataset("row is an array", rows([1, 2, 3])),
    _dataset("row is a string", rows('"just text"')),
    _dataset("missing id", rows({"inputs": ROW["inputs"], "target": "x"})),
    _dataset("null id", rows(_row(id=None))),
    _dataset("fractional id", rows(_row(id=1.5))),
    _dataset("boolean id", rows(_row(id=True))),
    _dataset("missing inputs", rows({"id": "a", "target": "x"})),
    _dataset("inputs a list", rows(_row(inputs=["q?"]))),
    _dataset("inputs a string", rows(_row(inputs="q?"))),
    _dataset("inputs lack a system field", rows(_row(inputs={"question": "q?"}))),
    _dataset("meta a list", rows(_row(meta=[1]))),
    _dataset("invalid UTF-8", b'{"id": "a", "inputs": {"question": "q\xff", "paragraphs": []},'
                              b' "target": "x"}\n'),
    _dataset("deep nesting", '{"id": "a", "inputs": {"question": "q", "paragraphs": []}, '
                             '"target": ' + "[" * 100000 + "]" * 100000 + "}\n"),
    _dataset("empty file", ""),
    _dataset("blank lines only", "\n  \n\n"),
    _dataset("a directory named .jsonl", _dir_named("rows.jsonl")),
    _dataset("a directory", _dir_named("rows")),
    _dataset("missing file", lambda ctx: ctx.dir / "absent.jsonl"),
    _dataset("negative limit", rows(ROW), limit="-1"),
    _dataset("valid rows", rows(ROW, _row(id="b")), good=True),
    _dataset("valid rows, int ids, blank lines and meta",
             "\n" + rows(_row(id=7, meta={"k": 1})) + "\n" + rows(_row(id=8)), good=True),
]


# -- system configs: coalign evaluate --config C.json -----------------------------------------

def _sysconfig(name: str, content: str | bytes | None, good: bool = False) -> Case:
    def make(ctx: Ctx) -> list[str]:
        path = ctx.dir / "config.json"
        if content is None:
            path.mkdir()
        else:
            ctx.write("config.json", content)
        return ["evaluate", "multihop_qa", "--config", str(path), "--limit", "1", "--model",
                str(ctx.sentinel), "--run-dir", str(ctx.run)]
    return Case(name, "system-config", make, good=good)


SYSTEM_CONFIGS = [
    _sysconfig("invalid JSON", "{"),
    _sysconfig("a list", "[]"),
    _sysconfig("component params a number", '{"retriever": 5}'),
    _sysconfig("unknown component", '{"nosuch": {"k": 3}}'),
    _sysconfig("unknown param", '{"retriever": {"kk": 3}}'),
    _sysconfig("k not an option", '{"retriever": {"k": 7}}'),
    _sysconfig("prompt a number", '{"answer_generator": {"prompt": 5}}'),
    _sysconfig("invalid UTF-8", b'{"answer_generator": {"prompt": "\xff"}}'),
    _sysconfig("a directory", None),
    _sysconfig("empty file", ""),
    _sysconfig("valid config", '{"retriever": {"k": 5}}', good=True),
]


# -- flags --------------------------------------------------------------------------------------

def _flags(name: str, *args: str | Callable[[Ctx], str], good: bool = False,
           ok_codes: tuple[int, ...] = (0,)) -> Case:
    def make(ctx: Ctx) -> list[str]:
        return [a(ctx) if callable(a) else a for a in args]
    return Case(name, "flags", make, good=good, ok_codes=ok_codes)


def _eval(name: str, *flags: str | Callable[[Ctx], str], system: str = "multihop_qa") -> Case:
    return _flags(name, "evaluate", system, "--limit", "1", "--workers", "1",
                  "--model", lambda ctx: str(ctx.sentinel),
                  "--run-dir", lambda ctx: str(ctx.run), *flags)


def _table(name: str, command: str, directory: Callable[[Ctx], str], *flags: str,
           good: bool = False) -> Case:
    return _flags(name, "table", command, directory, *flags, good=good)


def _space(content: str) -> Callable[[Ctx], str]:
    return lambda ctx: str(ctx.write("space.json", content).parent)


def _sentinel_table(ctx: Ctx) -> str:
    """A table dir with the real table's space, its model the sentinel (digest left out, so
    the edit is allowed): a build that accepts its flags stops at its first LLM call."""
    space = json.loads((TABLE / "space.json").read_text())
    del space["digest"]
    return str(ctx.write("space.json", json.dumps({**space, "model": str(ctx.sentinel)})).parent)


def _valid_config(ctx: Ctx) -> str:
    return str(ctx.write("run.yaml", yaml.safe_dump(config(ctx))))


FLAGS = [
    _eval("--limit 0", "--limit", "0"),
    _eval("--limit negative", "--limit", "-1"),
    _eval("--limit a word", "--limit", "abc"),
    _eval("--workers 0", "--workers", "0"),
    _eval("--workers negative", "--workers", "-1"),
    _eval("--seed a word", "--seed", "abc"),
    _eval("--lm not replay", "--lm", "nosuch"),
    _eval("--lm replay of a missing dir", "--lm", lambda ctx: f"replay:{ctx.dir}/no"),
    _eval("--lm replay of a file", "--lm", lambda ctx: f"replay:{ctx.write('t', 'x')}"),
    _eval("--lm replay: table lacks the questions", "--lm", f"replay:{TABLE}"),
    _eval("--timeout negative", "--timeout", "-1"),
    _eval("--timeout NaN", "--timeout", "nan"),
    _eval("--timeout a word", "--timeout", "abc"),
    _eval("--retries negative", "--retries", "-1"),
    _eval("--concurrency 0", "--concurrency", "0"),
    _eval("--data unknown", "--data", "nosuch"),
    _eval("--run-dir a file", "--run-dir", lambda ctx: str(ctx.write("file", "x"))),
    _eval("unknown option", "--bogus"),
    _eval("unknown system", system="nosuch"),
    _eval("unknown model", "--model", "no-such-model"),
    _flags("missing SYSTEM argument", "evaluate"),
    _flags("unknown command", "evaluat", "multihop_qa"),
    _flags("audit without --contract", "audit", str(ROOT / "examples" / "audit" /
                                                     "fixture_pairs.jsonl")),
    _flags("optimize --timeout negative", "optimize", _valid_config, "--timeout", "-5",
           "--run-dir", lambda ctx: str(ctx.run)),
    _flags("optimize --run-dir a file", "optimize", _valid_config,
           "--run-dir", lambda ctx: str(ctx.write("file", "x"))),
    _table("table status: missing dir", "status", lambda ctx: str(ctx.dir / "absent")),
    _table("table status: dir without space.json", "status", lambda ctx: str(ctx.dir)),
    _table("table status: space.json not JSON", "status", _space("{")),
    _table("table status: space.json a list", "status", _space("[]")),
    _table("table status: space.json missing fields", "status", _space('{"format": 1}')),
    _table("table status: a file", "status", lambda ctx: str(ctx.write("t", "x"))),
    _table("table build: dir without space.json", "build", lambda ctx: str(ctx.dir)),
    _table("table build: --part a word", "build", lambda ctx: str(ctx.dir), "--part", "x"),
    _table("table build: space.json not JSON", "build", _space("{")),
    _table("table build: --part 3/2", "build", _sentinel_table, "--part", "3/2"),
    _table("table build: --part 1/0", "build", _sentinel_table, "--part", "1/0"),
    _table("table build: --level unknown", "build", _sentinel_table, "--level", "nosuch"),
    _table("table build: --seal-every 0", "build", _sentinel_table, "--seal-every", "0"),
    _table("table build: --minutes negative", "build", _sentinel_table, "--minutes", "-1"),
    _table("table build: --limit negative", "build", _sentinel_table, "--limit", "-1"),
    _table("table build of a valid space", "build", _sentinel_table, "--limit", "1", good=True),
    _table("table status of a real table", "status", lambda ctx: str(TABLE), good=True),
]
