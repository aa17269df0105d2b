"""The agent policy: scores each candidate action of a state with the shared backbone.

A state (question + passages seen) is encoded once; every candidate action is encoded as a
short suffix on that cached prefix and the policy head reads its ``<eoa>`` token. Rollouts run
a batch of episodes in lock-step so each step is one forward pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from coalign.data import Example
from coalign.rubric._env import Action, SearchEnv, Trajectory
from coalign.rubric._model import ArcoModel, expand_cache, last_hidden, pad_batch
from coalign.rubric._text import StepEncoder

__all__ = ["Decision", "Policy", "MASKED"]

MASKED = -1e9  # finite, so KL terms over padded candidate slots stay free of nan


@dataclass(frozen=True)
class Decision:
    """One choice made in a rollout: which trajectory and step, among which candidates."""

    traj: int
    position: int
    state: tuple[int, ...]
    candidates: tuple[Action, ...]
    choice: int


class Policy:
    """pi(a | h): softmax over the candidate actions of a state."""

    def __init__(self, model: ArcoModel, encoder: StepEncoder, env: SearchEnv) -> None:
        self.model = model
        self.encoder = encoder
        self.env = env

    def state_ids(self, traj: Trajectory) -> list[int]:
        obs = [s.observation for s in traj.steps if s.action.kind == "search"]
        return self.encoder.policy_state(traj.question, obs)

    def logits(
        self, states: Sequence[Sequence[int]], candidates: Sequence[Sequence[Action]],
        model: ArcoModel | None = None,
    ) -> torch.Tensor:
        """``(n_states, max_candidates)`` logits; empty slots hold ``MASKED``."""
        model = model or self.model
        ids, lens = pad_batch([list(s) for s in states])
        _, cache = model(ids)
        valid = torch.arange(ids.shape[1]).unsqueeze(0) < lens.unsqueeze(1)
        owner = [i for i, cs in enumerate(candidates) for _ in cs]
        suffix = [self.encoder.policy_action(a.kind, a.text) for cs in candidates for a in cs]
        sids, slens = pad_batch(suffix)
        index = torch.tensor(owner, dtype=torch.long)
        hidden, _ = model(sids, expand_cache(cache, index), valid[index], lens[index])
        flat = model.policy_logit(last_hidden(hidden, slens))
        width = max(len(cs) for cs in candidates)
        out = torch.full((len(states), width), MASKED)
        slot = torch.tensor([j for cs in candidates for j in range(len(cs))], dtype=torch.long)
        return out.index_put((index, slot), flat)

    @torch.no_grad()
    def rollout(
        self, examples: Sequence[Example], generator: torch.Generator | None = None,
        greedy: bool = False, temperature: float = 1.0,
    ) -> tuple[list[Trajectory], list[Decision]]:
        """Play one episode per example; sample (or take the argmax when ``greedy``)."""
        trajs = [Trajectory(e) for e in examples]
        decisions: list[Decision] = []
        while True:
            active = [i for i, t in enumerate(trajs) if not t.done]
            if not active:
                return trajs, decisions
            states = [self.state_ids(trajs[i]) for i in active]
            cands = [self.env.candidates(trajs[i]) for i in active]
            logits = self.logits(states, cands)
            if greedy:
                choices = logits.argmax(-1)
            else:
                probs = torch.softmax(logits / temperature, -1)
                choices = torch.multinomial(probs, 1, generator=generator).squeeze(-1)
            for row, i in enumerate(active):
                c = int(choices[row])
                decisions.append(Decision(i, len(trajs[i].steps), tuple(states[row]),
                                          tuple(cands[row]), c))
                self.env.step(trajs[i], cands[row][c])

    def decision_logits(
        self, decisions: Sequence[Decision], model: ArcoModel | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Candidate logits of each decision (with grad) and the chosen slot indices."""
        logits = self.logits([d.state for d in decisions], [d.candidates for d in decisions],
                             model)
        return logits, torch.tensor([d.choice for d in decisions], dtype=torch.long)
