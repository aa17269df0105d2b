"""The multi-step search agent's world: ``search[query]`` / ``answer[text]``, at most 3 steps.

Each question carries its own small paragraph set (HotpotQA distractors, MuSiQue's 20, or the
generated world's). ``search`` returns the top BM25 passage for the query; ``answer`` ends the
episode with reward = exact match. The last allowed step can only answer.

The policy chooses among *candidate* actions proposed here (queries and answer spans taken from
the question and the passages seen so far), so a tiny model trained on CPU can act at all; the
candidate recall of the gold answer is the ceiling on EM and is reported by the benchmark.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from coalign.data import Example, exact_match, normalize_answer
from coalign.errors import ConfigError
from coalign.retrieval import STOPWORDS, BM25Index

__all__ = [
    "Action",
    "Retriever",
    "SearchEnv",
    "Step",
    "Trajectory",
    "extract_spans",
]

ActionKind = Literal["search", "answer"]
# A run of capitalized words, allowing short lowercase joiners ("Battle of the Bulge").
_JOINERS = r"(?:(?:of|the|de|and|du|von|van|la|le)[ \t]+)*"
_SPAN = re.compile(rf"[A-Z][\w'\-&]*(?:[ \t]+{_JOINERS}[A-Z][\w'\-&]*)*")
_NUMBER = re.compile(r"\b\d[\d,.]*\b")
_ACTION = re.compile(r"^\s*(search|answer)\[(.*)\]\s*$", re.S)
_YES_NO_START = frozenset(
    "is are was were do does did can could has have had will would should".split()
)


class Retriever(Protocol):
    """Ranks a fixed corpus for a query (``coalign.retrieval.BM25Index`` is one)."""

    def search(self, query: str, k: int) -> list[int]: ...


@dataclass(frozen=True)
class Action:
    """One agent action, written ``search[...]`` or ``answer[...]``."""

    kind: ActionKind
    text: str

    def render(self) -> str:
        return f"{self.kind}[{self.text}]"

    @classmethod
    def parse(cls, written: str) -> Action:
        match = _ACTION.match(written)
        if match is None:
            raise ValueError(f"not an action (want search[...] or answer[...]): {written!r}")
        return cls(match.group(1), match.group(2).strip())  # type: ignore[arg-type]


@dataclass(frozen=True)
class Step:
    """An executed action: what was done, what the tool returned, and where it sits."""

    position: int
    action: Action
    observation: str = ""
    passage: int | None = None
    gold_useful: bool | None = None  # known for search steps only (see SearchEnv.step)


@dataclass
class Trajectory:
    """One episode on one example: its steps and the terminal reward R (exact match)."""

    example: Example
    steps: list[Step] = field(default_factory=list)
    reward: float = 0.0

    @property
    def question(self) -> str:
        return str(self.example.inputs["question"])

    @property
    def answer(self) -> str | None:
        last = self.steps[-1] if self.steps else None
        return last.action.text if last is not None and last.action.kind == "answer" else None

    @property
    def done(self) -> bool:
        return self.answer is not None


def extract_spans(text: str) -> list[str]:
    """Capitalized multi-word spans and numbers of ``text``, in order, without duplicates.

    A lone sentence-initial stopword ("The", "It") is dropped; a leading "The " is stripped.
    """
    out: list[str] = []
    seen: set[str] = set()
    for match in [*_SPAN.finditer(text), *_NUMBER.finditer(text)]:
        span = match.group(0).strip(" .,")
        if span.startswith("The ") and len(span) > 4:
            span = span[4:]
        key = normalize_answer(span)
        if not key or key in STOPWORDS or key in seen:
            continue
        seen.add(key)
        out.append(span)
    return out


def _is_yes_no(question: str) -> bool:
    words = question.split()
    return bool(words) and words[0].lower() in _YES_NO_START


class SearchEnv:
    """Episodes over examples shaped ``inputs={"question", "paragraphs": [{"title","text"}]}``.

    Args:
        max_steps: episode length limit; the last step must answer.
        passage_words: observations keep the title and this many words of the passage.
        max_searches: at most this many candidate queries per state.
        max_answers: at most this many candidate answers per state.
        index_factory: builds a retriever over one example's paragraph texts.
    """

    def __init__(
        self,
        max_steps: int = 3,
        passage_words: int = 40,
        max_searches: int = 4,
        max_answers: int = 8,
        index_factory: Callable[[Sequence[str]], Retriever] = BM25Index,
    ) -> None:
        if max_steps < 1:
            raise ConfigError(f"max_steps must be >= 1 (got {max_steps})")
        self.max_steps = max_steps
        self.passage_words = passage_words
        self.max_searches = max_searches
        self.max_answers = max_answers
        self._index_factory = index_factory
        self._indexes: dict[str, Retriever] = {}  # per-example cache: rollouts revisit questions

    # -- text views ---------------------------------------------------------------------------
    @staticmethod
    def paragraphs(example: Example) -> list[Mapping[str, Any]]:
        return list(example.inputs["paragraphs"])

    def passage_text(self, example: Example, index: int) -> str:
        par = self.paragraphs(example)[index]
        words = str(par["text"]).split()[: self.passage_words]
        return f"{par['title']}: {' '.join(words)}"

    @staticmethod
    def gold_titles(example: Example) -> set[str]:
        """Titles of the gold hops: ``meta["hops"]`` (generated world) or supporting titles."""
        meta = example.meta
        return set(meta.get("hops") or meta.get("supporting_titles") or ())

    # -- dynamics -----------------------------------------------------------------------------
    def _index(self, example: Example) -> Retriever:
        if example.id not in self._indexes:
            texts = [f"{p['title']}. {p['text']}" for p in self.paragraphs(example)]
            self._indexes[example.id] = self._index_factory(texts)
        return self._indexes[example.id]

    def candidates(self, traj: Trajectory) -> list[Action]:
        """The actions the policy may choose in ``traj``'s current state (none once done)."""
        if traj.done:
            return []
        if len(traj.steps) >= self.max_steps - 1:
            return self._answers(traj)
        return self._queries(traj) + self._answers(traj)

    @staticmethod
    def _seen_text(traj: Trajectory) -> str:
        return " ".join(s.observation for s in traj.steps if s.action.kind == "search")

    def _answers(self, traj: Trajectory) -> list[Action]:
        question = traj.question
        answers: list[Action] = []
        if _is_yes_no(question):
            answers += [Action("answer", "yes"), Action("answer", "no")]
        keys = {normalize_answer(a.text) for a in answers}
        for span in extract_spans(question) + extract_spans(self._seen_text(traj)):
            if len(answers) >= self.max_answers:
                break
            if normalize_answer(span) not in keys:
                keys.add(normalize_answer(span))
                answers.append(Action("answer", span))
        return answers or [Action("answer", "unknown")]

    def _queries(self, traj: Trajectory) -> list[Action]:
        # The question itself, then leads found in passages (entities the question does not
        # name), then the question's own entities.
        question = traj.question
        in_question = {normalize_answer(s) for s in extract_spans(question)}
        spans = extract_spans(self._seen_text(traj))
        leads = [s for s in spans if normalize_answer(s) not in in_question]
        queries = [question]
        for span in leads + extract_spans(question):
            if len(queries) >= self.max_searches:
                break
            if span not in queries:
                queries.append(span)
        return [Action("search", q) for q in queries]

    def step(self, traj: Trajectory, action: Action) -> Step:
        """Execute ``action`` in place; return the recorded step."""
        if traj.done:
            raise ValueError("the episode has already ended with an answer")
        position = len(traj.steps)
        if action.kind == "search" and position >= self.max_steps - 1:
            raise ValueError(f"step {position + 1} is the last one and must answer")
        if action.kind == "answer":
            step = Step(position, action)
            traj.steps.append(step)
            aliases = traj.example.meta.get("answer_aliases", ())
            traj.reward = exact_match(action.text, str(traj.example.target), aliases)
            return step
        top = self._index(traj.example).search(action.text, 1)
        passage = top[0] if top else 0
        seen = {s.passage for s in traj.steps}
        title = str(self.paragraphs(traj.example)[passage]["title"])
        useful = passage not in seen and title in self.gold_titles(traj.example)
        step = Step(position, action, self.passage_text(traj.example, passage), passage, useful)
        traj.steps.append(step)
        return step

    def answer_recall(self, example: Example) -> bool:
        """Whether the gold answer is an answer candidate once every gold paragraph is seen."""
        traj = Trajectory(example)
        titles = self.gold_titles(example)
        for i, par in enumerate(self.paragraphs(example)):
            if par["title"] in titles:
                traj.steps.append(
                    Step(len(traj.steps), Action("search", str(par["title"])),
                         self.passage_text(example, i), i)
                )
        aliases = example.meta.get("answer_aliases", ())
        target = str(example.target)
        return any(exact_match(a.text, target, aliases) for a in self._answers(traj))
