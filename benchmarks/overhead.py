"""Framework overhead per component call: coalign vs DSPy on the same 2-component program.

Both programs are question -> query -> answer with an LM that returns instantly, so the time
measured is the framework's own work per component call (prompt rendering, dispatch, tracing,
parsing). DSPy uses its ``DummyLM`` with ``dspy.Predict`` modules; coalign uses ``LLMComponent``s
in a ``System`` with a no-op LM backend. Needs the ``bench`` extra for DSPy.

    python -m benchmarks.overhead [--quick] [--json PATH]
"""

from __future__ import annotations

import argparse
import statistics
import time

from benchmarks._results import add_json_option, write_result
from coalign.component import LLMComponent
from coalign.lm import LMRequest, LMResponse
from coalign.runtime import Runtime
from coalign.system import System


class NoopLM:
    """Returns a fixed short answer at once: isolates framework overhead."""

    name = "noop"

    def generate(self, request: LMRequest) -> LMResponse:
        return LMResponse("Paris", 10, 1, "noop")

    def close(self) -> None:
        return None


def coalign_us_per_call(iterations: int, repeats: int) -> float:
    system = System("two", [
        LLMComponent("rewrite", ["question"], "query", "Rewrite as a search query.", model="noop"),
        LLMComponent("answer", ["question", "query"], "answer", "Answer briefly.", model="noop"),
    ], inputs=["question"], output="answer")
    runtime, config = Runtime(lms={"noop": NoopLM()}), system.default_config()
    inputs = {"question": "What is the capital of France?"}
    for i in range(200):  # warm-up
        system.run(f"w{i}", inputs, config, runtime)
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for i in range(iterations):
            system.run(f"e{i}", inputs, config, runtime)
        samples.append((time.perf_counter() - t0) / (iterations * 2) * 1e6)
    return statistics.median(samples)


def dspy_us_per_call(iterations: int, repeats: int) -> float | None:
    try:
        import dspy
        from dspy.utils.dummies import DummyLM
    except ImportError:
        return None

    class Program(dspy.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rewrite = dspy.Predict("question -> query")
            self.answer = dspy.Predict("question, query -> answer")

        def forward(self, question: str):
            query = self.rewrite(question=question).query
            return self.answer(question=question, query=query)

    total = 200 + iterations * repeats
    answers = [a for _ in range(total) for a in ({"query": "capital France"}, {"answer": "Paris"})]
    dspy.configure(lm=DummyLM(answers))
    program = Program()
    for _ in range(200):
        program(question="What is the capital of France?")
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(iterations):
            program(question="What is the capital of France?")
        samples.append((time.perf_counter() - t0) / (iterations * 2) * 1e6)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations")
    add_json_option(parser)
    args = parser.parse_args()
    iterations, repeats = (500, 3) if args.quick else (3000, 5)
    ours = coalign_us_per_call(iterations, repeats)
    theirs = dspy_us_per_call(max(100, iterations // 10), repeats)
    print(f"{'framework':<10} {'us per component call':>22}")
    print(f"{'coalign':<10} {ours:>22.1f}")
    print(f"{'dspy':<10} {theirs:>22.1f}" if theirs is not None
          else f"{'dspy':<10} {'not installed (pip install .[bench])':>22}")
    if args.json:
        write_result(args.json, {"coalign_us_per_call": ours, "dspy_us_per_call": theirs})


if __name__ == "__main__":
    main()
