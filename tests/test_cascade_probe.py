"""The probe of ``benchmarks/cascade_probe.py`` on a small lookup: the chain, the answers, the
oracle and the cost it reports are the ones worked out by hand."""

import numpy as np

from benchmarks.cascade_probe import probe_seed
from coalign.compare import Lookup, Split


def test_the_probe_answers_with_the_first_passing_link_and_counts_every_link_run():
    #                 train   val        test
    scores = np.array([[1, 0, 1, 1, 1, 1, 0, 0, 1, 0],    # best on validation: the answer
                       [0, 1, 0, 0, 0, 0, 1, 1, 0, 0],    # passes where the answer fails
                       [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]], dtype=float)
    passed = scores >= 1.0
    lookup = Lookup(scores, ["a.model"], [3], np.array([[0], [1], [2]]),
                    costs=np.full(scores.shape, 2.0))
    split = Split(train=(0, 1), val=(2, 3, 4), test=(5, 6, 7, 8, 9))
    got = probe_seed(lookup, passed, lookup.costs, ["a.model"], split, depth=1)
    assert got["chain"] == [0, 1]
    assert got["single_test"] == 0.4 and got["cascade_test"] == 0.8
    assert got["oracle_test"] == 0.8
    # test questions 6, 7, 9 fail the answer's check and run a second link
    assert got["escalated"] == 0.6
    assert got["cost_ratio"] == (2 * 2 + 3 * 4) / 5 / 2
