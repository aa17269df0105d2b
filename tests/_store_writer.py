"""Child of the kill -9 store test: writes pairs until killed (free of heavy imports)."""

from coalign.pairs import PreferencePair
from coalign.store import RunStore


def make_pair(i: int) -> PreferencePair:
    return PreferencePair("gen", f"ex{i}", {"q": "x"}, {"a": "1"}, {"a": "2"}, 0.9, 0.1, "a")


def write_forever(path) -> None:
    store = RunStore(path)
    i = 0
    while True:
        store.put_pairs([make_pair(i)])
        i += 1
