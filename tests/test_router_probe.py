"""The router of ``benchmarks/router_probe.py``: routes where the features predict the gain,
stays at the base where nothing is predicted to gain."""

import numpy as np

from benchmarks.router_probe import route


def test_a_router_follows_features_that_predict_the_gain_and_keeps_the_base_otherwise():
    rng = np.random.default_rng(0)
    n = 120
    x = rng.normal(size=(n, 4))
    better_here = x[:, 0] > 0  # config 1 wins exactly where the first feature is positive
    gains = np.zeros((3, n))
    gains[1] = np.where(better_here, 1.0, -1.0)
    gains[2] = -1.0  # never better: never routed to
    fit, test = list(range(80)), list(range(80, n))
    picked = route(x, gains, fit, test)
    assert set(picked) <= {0, 1}
    assert np.mean(picked == np.where(better_here[test], 1, 0)) > 0.9
    # no config ever differs from the base where it was seen: everything stays at the base
    assert (route(x, np.zeros((3, n)), fit, test) == 0).all()
