"""A model of validation scores over the finite slots: the portfolio loop's global proposals
and its noise-aware gate.

Every config the loop validates runs on the same validation inputs, so configs compare input
by input. The model is additive with empirical-Bayes shrinkage::

    score(c) = intercept + sum over slots of effect[slot, value of c] + deviation(c) + noise(c)

The effects get a ridge prior (sd ``prior_sd``); ``deviation(c) ~ N(0, tau2)`` is what the
additive part misses; ``noise(c) ~ N(0, sigma2 / n)`` with ``sigma2`` the config x input
interaction variance of the validated configs' per-input rewards (input effects cancel in a
paired design, so they are not noise here). A validated config's posterior mean shrinks its own
mean toward the additive prediction by ``tau2 / (tau2 + sigma2 / n)``: on a small validation set
a config that won by noise is discounted, and one that agrees with what its slots' values did
elsewhere is trusted. Configs never validated get the additive prediction with its uncertainty,
which is what Thompson sampling draws from to propose the next one.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

Picks = tuple[int, ...]  # a value index per slot

# spaces up to this many configs are enumerated whole by a proposal; larger ones are searched
# around the sampled additive optimum
ENUMERATE = 20_000


@dataclass(frozen=True)
class Observation:
    """A validated config: its key (two configs may share the finite slots' values and differ
    elsewhere), its value index per slot and its reward per validation input (in validation
    order)."""

    key: str
    picks: Picks
    rewards: tuple[float, ...]


@dataclass(frozen=True)
class Posterior:
    """The fitted model; ``mean``/``sd`` of the expected validation score of any config."""

    sizes: tuple[int, ...]
    beta: np.ndarray
    cov: np.ndarray  # of beta
    tau2: float
    noise: float  # variance of one config's mean reward from its validation inputs
    observed: dict[str, tuple[Picks, float]]  # validated config's key -> picks, mean reward

    def _x(self, picks: Picks) -> np.ndarray:
        return features(self.sizes, [picks])[0]

    def _prior(self, picks: Picks) -> float:
        """Variance of a config's expected score before its own validation."""
        x = self._x(picks)
        return self.tau2 + float(x @ self.cov @ x)

    def mean(self, picks: Picks, key: str | None = None) -> float:
        """The expected validation score of the config with ``picks`` (and, when it was
        validated, ``key``): its own mean shrunk toward the additive prediction."""
        pred = float(self._x(picks) @ self.beta)
        if key not in self.observed:
            return pred
        prior = self._prior(picks)
        return pred + prior / (prior + self.noise) * (self.observed[key][1] - pred)

    def sd(self, picks: Picks, key: str | None = None) -> float:
        prior = self._prior(picks)
        if key in self.observed:
            return math.sqrt(prior * self.noise / (prior + self.noise))
        return math.sqrt(prior)

    def all_observed_picks(self) -> set[Picks]:
        return {p for p, _ in self.observed.values()}

    def thompson(self, rng: np.random.Generator, allowed: Callable[[Picks], bool]
                 ) -> Picks | None:
        """An ``allowed`` config that is best under one draw from the posterior (the effects
        drawn jointly, each config's deviation on its own); None when none is allowed."""
        beta = rng.multivariate_normal(self.beta, self.cov, method="cholesky")
        pool = [p for p in _candidates(self.sizes, beta, rng) if allowed(p)]
        if not pool:
            return None
        draws = features(self.sizes, pool) @ beta + rng.normal(0.0, math.sqrt(self.tau2),
                                                               len(pool))
        return pool[int(np.argmax(draws))]


def features(sizes: Sequence[int], rows: Sequence[Picks]) -> np.ndarray:
    """Intercept plus one indicator per slot value but the slot's first."""
    width = 1 + sum(n - 1 for n in sizes)
    out = np.zeros((len(rows), width))
    out[:, 0] = 1.0
    for r, picks in enumerate(rows):
        offset = 1
        for n, v in zip(sizes, picks, strict=True):
            if v:
                out[r, offset + v - 1] = 1.0
            offset += n - 1
    return out


def fit(sizes: Sequence[int], observations: Sequence[Observation], *,
        prior_sd: float = 0.1) -> Posterior:
    """The posterior given the validated configs (each scored on the same inputs). With one
    config, the noise is its own per-input variance over n; ``tau2`` is estimated from the
    residuals around the additive fit once there are more configs than effects, and set to a
    quarter of the noise before."""
    sizes = tuple(int(n) for n in sizes)
    by: dict[str, Observation] = {}
    for o in observations:  # a repeat (the same config validated again) keeps the first
        by.setdefault(o.key, o)
    if not by:
        raise ValueError("the score model needs at least one validated config")
    keys = list(by)
    picks = [tuple(by[k].picks) for k in keys]
    lengths = {len(by[k].rewards) for k in keys}
    if len(lengths) != 1 or 0 in lengths:
        raise ValueError("every validated config needs rewards on the same validation inputs")
    rewards = np.array([by[k].rewards for k in keys], dtype=float)  # k x n
    k, n = rewards.shape
    means = rewards.mean(axis=1)
    if k >= 2 and n >= 2:
        inter = (rewards - means[:, None] - rewards.mean(axis=0)[None, :] + rewards.mean())
        sigma2 = float((inter ** 2).sum()) / ((k - 1) * (n - 1))
    else:
        sigma2 = float(rewards.var(ddof=1)) if n >= 2 else 0.0
    noise = max(sigma2, 1e-4) / n
    x = features(sizes, picks)
    d = x.shape[1]
    penalty = np.full(d, noise / prior_sd ** 2)
    penalty[0] = 1e-9  # the intercept is free
    a = x.T @ x + np.diag(penalty)
    beta = np.linalg.solve(a, x.T @ means)
    resid = means - x @ beta
    if k > d:
        tau2 = max(float(resid @ resid) / (k - d) - noise, 1e-4)
    else:
        tau2 = max(noise / 4, 1e-4)
    cov = np.linalg.inv(a) * (noise + tau2)
    cov = (cov + cov.T) / 2
    return Posterior(sizes, beta, cov, tau2, noise,
                     {k: (p, m) for k, p, m in zip(keys, picks, means.tolist(), strict=True)})


def additive(sizes: Sequence[int], rows: Sequence[Picks], values: Sequence[float], *,
             ridge: float = 1e-6) -> Callable[[Picks], float]:
    """A least-squares additive fit of ``values`` (a config's cost per query, say), as a
    predictor for any config."""
    sizes = tuple(int(n) for n in sizes)
    x = features(sizes, rows)
    beta = np.linalg.solve(x.T @ x + ridge * np.eye(x.shape[1]),
                           x.T @ np.asarray(values, dtype=float))
    return lambda picks: float(features(sizes, [picks])[0] @ beta)


def _candidates(sizes: tuple[int, ...], beta: np.ndarray,
                rng: np.random.Generator) -> list[Picks]:
    """Every config of a small space; in a large one, the drawn effects' optimum, its
    one-slot neighbours and a random sample."""
    if math.prod(sizes) <= ENUMERATE:
        return list(itertools.product(*(range(n) for n in sizes)))
    best: list[int] = []
    offset = 1
    for n in sizes:
        effects = [0.0, *beta[offset:offset + n - 1].tolist()]
        best.append(int(np.argmax(effects)))
        offset += n - 1
    out = {tuple(best)}
    for slot, n in enumerate(sizes):
        for v in range(n):
            out.add(tuple(best[:slot] + [v] + best[slot + 1:]))
    for _ in range(2000):
        out.add(tuple(int(rng.integers(n)) for n in sizes))
    return sorted(out)
