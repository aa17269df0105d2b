"""Write a model-choice candidate space (``space.json``) derived from a committed table's space.

Each LLM component of the system gets a ``model`` param over the bundled models (the table's
task model first, as the starting value) beside a few of the donor space's prompt candidates,
which were made without the pool. ``--probe N`` writes the same space over N questions outside
every table's pool instead (the headroom probe that decides whether the space is built);
``--grow N`` keeps the pool and appends the next N questions outside it (a larger pool: fewer
validation draws decided by noise, and a validation that costs what it would on a real run).

    python -m benchmarks.model_spaces code_gen_models --out benchmarks/tables/code_gen_models
    python -m benchmarks.model_spaces code_gen_models3 --out benchmarks/tables/code_gen_models3
    python -m benchmarks.model_spaces code_gen_models3 --grow 100 \\
        --out benchmarks/tables/code_gen_models3_200
    python -m benchmarks.model_spaces code_gen_models --probe 30 \\
        --out benchmarks/tables/probe-code_gen_models
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from coalign.tables import CandidateSpace, Samples

TABLES = Path(__file__).resolve().parent / "tables"
LAYOUT = "inputs_first"


def _pick(donor: CandidateSpace, key: str, indices: list[int]) -> tuple[list[Any], list[Any]]:
    notes = donor.notes.get(key) or ["?"] * len(donor.params[key])
    return [donor.params[key][i] for i in indices], [notes[i] for i in indices]


def _pool(donor: CandidateSpace, notes: dict[str, Any], probe: int, ids: list[str],
          what: str, grow: int = 0) -> tuple[str, ...]:
    """The donor's pool; with ``probe`` its first ``probe`` questions outside it (in ``ids``'
    order) instead; with ``grow`` the pool followed by its first ``grow`` questions outside it.
    The choice is recorded in ``notes["pool"]``."""
    if probe and grow:
        raise ValueError("--probe and --grow exclude each other")
    outside = [q for q in ids if q not in set(donor.questions)]
    if probe:
        notes["pool"] = f"headroom probe: {what} (outside every table's pool)"
        return tuple(outside[:probe])
    if grow > len(outside):
        raise ValueError(f"--grow {grow}: only {len(outside)} questions lie outside the pool")
    notes["pool"] = donor.notes.get("pool")
    if grow:
        notes["pool"] = f"{notes['pool'] or 'the donor pool'}, then {what}"
    return (*donor.questions, *outside[:grow])


def code_gen_models(probe: int, grow: int = 0) -> CandidateSpace:
    """code_gen with 0.5B / 1.5B per LLM component. The generator keeps the donor's start, the
    example-name hint and the two bootstrapped demos (the prompt that is worst for the 0.5B and
    best for the 1.5B in a 20-problem try); the test generator and the reviser keep their start
    prompts (the reviser always sees its code). Sized by a first probe over a wider space (2
    prompts for both, ``probe-code_gen_models-first``): the reviser made 50 of every 60 calls
    and 80% of the model seconds (it rewrites a whole function, once per failing code and
    feedback), so each prompt it or the test generator adds multiplies the table's cost."""
    from coalign.data import load_mbpp

    donor = CandidateSpace.load(TABLES / "code_gen_chunked")
    models = ["qwen2.5-0.5b", "qwen2.5-1.5b"]
    params: dict[str, list[Any]] = {}
    notes: dict[str, Any] = {"donor": "code_gen_chunked (prompt candidates and pool)"}
    params["code_generator.prompt"], notes["code_generator.prompt"] = _pick(
        donor, "code_generator.prompt", [0, 1, 3])
    params["executor.keep"], notes["executor.keep"] = [3, 0], ["3 generated asserts (start)",
                                                               "only the example test"]
    for comp in ("code_generator", "test_generator", "reviser"):
        params[f"{comp}.model"] = list(models)
        notes[f"{comp}.model"] = ["bundled 0.5B (start)", "bundled 1.5B (about 2x the seconds)"]
    questions = _pool(donor, notes, probe, [e.id for e in load_mbpp(split="test")],
                      f"the {probe or grow} sanitized MBPP test problems after the first 100",
                      grow)
    return CandidateSpace(system="code_gen", dataset="mbpp", questions=questions,
                          params={k: tuple(v) for k, v in params.items()},
                          options={"layout": LAYOUT, "models": models},
                          samples=Samples(0, 1.0), notes=notes)


def code_gen_models3(probe: int, grow: int = 0) -> CandidateSpace:
    """code_gen_models with a third, cheap value for the reviser: the bundled SmolLM2-135M
    (about a quarter of the 0.5B's seconds a call). A model slot of two values leaves a local
    step one open value, so the local reward's pick cannot differ from a random one there; with
    three it can. Only the reviser gets it: it is the last LLM, so its new value adds one call
    per reviser request the table holds (built with ``--reuse code_gen_models``), where a third
    generator or test-generator model would add every downstream call under it."""
    space = code_gen_models(probe, grow)
    models = [*space.models, "smollm2-135m"]
    params = {**space.params, "reviser.model": tuple(models)}
    notes = {**space.notes, "reviser.model": [*space.notes["reviser.model"],
                                               "bundled SmolLM2-135M (about 1/4 the seconds)"]}
    return CandidateSpace(system=space.system, dataset=space.dataset, questions=space.questions,
                          params=params, options={**space.options, "models": models},
                          samples=space.samples, notes=notes)


def multihop_qa_models(probe: int, grow: int = 0) -> CandidateSpace:
    """HotpotQA with 0.5B / 1.5B for the extractor and the answer writer (the rewriter stays on
    the 0.5B: its query matters little next to asking BM25 the question itself), k fixed at 3,
    and the answer writer's start and labelled-demo prompts (the wide table's best lever).
    Small by design: extraction prompts carry the passages, so each model's call there is the
    table's main cost (about 150 model s a question)."""
    from coalign.runner import load_dataset

    donor = CandidateSpace.load(TABLES / "multihop_qa_wide")
    models = ["qwen2.5-0.5b", "qwen2.5-1.5b"]
    params: dict[str, list[Any]] = {}
    notes: dict[str, Any] = {"donor": "multihop_qa_wide (prompt candidates and pool)"}
    params["answer_generator.prompt"], notes["answer_generator.prompt"] = _pick(
        donor, "answer_generator.prompt", [0, 4])
    params["retriever.query"], notes["retriever.query"] = _pick(donor, "retriever.query", [0, 1])
    for comp in ("info_extractor", "answer_generator"):
        params[f"{comp}.model"] = list(models)
        notes[f"{comp}.model"] = ["bundled 0.5B (start)", "bundled 1.5B (about 2x the seconds)"]
    # a probe: after the pool, before the wide space's bootstrap questions at the file's end
    questions = _pool(donor, notes, probe, [e.id for e in load_dataset("hotpotqa")],
                      f"the {probe or grow} HotpotQA dev questions after the first 200", grow)
    options = {**donor.options, "ks": [3], "models": models}
    # the question rewriter's model Choice is left out: it stays at the start model on replay
    return CandidateSpace(system="multihop_qa", dataset="hotpotqa", questions=questions,
                          params={k: tuple(v) for k, v in params.items()}, options=options,
                          samples=Samples(0, 1.0), notes=notes)


SPACES: dict[str, Callable[[int, int], CandidateSpace]] = {"code_gen_models": code_gen_models,
                                                      "code_gen_models3": code_gen_models3,
                                                      "multihop_qa_models": multihop_qa_models}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("space", choices=sorted(SPACES))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--probe", type=int, default=0,
                        help="N questions outside every pool instead of the donor's pool")
    parser.add_argument("--grow", type=int, default=0,
                        help="append the next N questions outside the donor's pool")
    args = parser.parse_args()
    try:
        space = SPACES[args.space](args.probe, args.grow)
    except ValueError as exc:
        parser.error(str(exc))
    path = space.save(args.out)
    print(json.dumps({"space": str(path), "digest": space.digest,
                      "configs": space.n_configs(), "questions": len(space.questions)}))


if __name__ == "__main__":
    main()
