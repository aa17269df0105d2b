"""Check that the docs state no measured result that ``benchmarks/RESULTS.md`` does not hold.

Docs are references (what a feature is, how to use it, its options); every measured result
lives once, in ``benchmarks/RESULTS.md``, beside the committed result file it comes from. A doc
may quote at most a short measured example, and only a figure that stands in RESULTS.md.

Run it from the repository root (exit 0: clean; exit 1: one line per finding,
``FILE:LINE: KIND 'TOKEN': the line``)::

    python -m benchmarks.check_docs
    python -m benchmarks.check_docs --docs docs --readme README.md --results benchmarks/RESULTS.md

What counts as a **measured result** (a *figure*), matched token by token in a doc's prose:

- a decimal number with two or more decimals, signed or not: ``0.452``, ``+0.042``, ``−0.005``;
- a percentage: ``43%``, ``3.75%``;
- a paired or confidence interval of two decimals in brackets: ``[−0.056, −0.026]``;
- a speed-up or ratio: ``2.43x``, ``8.1x``, ``7×`` (a number glued to ``x`` or ``×``);
- a timing: a number followed by a time unit, ``4 min``, ``27 s``, ``16.8 s``, ``15.3 µs``,
  ``967.9 us``, ``12 ms``, ``3 h``, ``7.5 minutes``, ``2 hours`` (``ms``, ``µs``, ``us``, ``s``,
  ``sec``, ``second(s)``, ``min``, ``minute(s)``, ``h``, ``hour(s)``).

A figure passes when the same token (the same characters, after mapping ``-`` to ``−``,
``×`` to ``x`` and collapsing the spaces inside intervals) is one of the figures of RESULTS.md.
An unsigned decimal also passes when RESULTS.md has it with a sign; a signed one needs the
same sign.

Also flagged, anywhere outside code: a **commit hash**, a word of exactly 7 or exactly 40
hexadecimal digits with at least one digit and one letter (``8255fee``): build history belongs
in git, not in the docs.

Exceptions, the only ones: text inside fenced code blocks (lines between ``` or ~~~ fences, and
blocks indented by four spaces after a blank line) and inside inline code spans (`` `...` ``) is
not read. Those hold CLI, config and API examples (``--minutes 60``, ``"timeout_s": 30``,
an example error line), whose numbers are inputs, not measurements. A doc that quotes a
measured figure inside code to dodge this check is still wrong; reviewers read code blocks.

A decimal right after a product or kernel name (``Linux 6.18``, ``kernels older than 5.12``,
``Python 3.12``) is a version number, not a figure.

Findings listed in ``PENDING`` (by file name; empty today) are printed to stderr as
``pending`` and do not fail the run, for a fix that has to land in two steps; ``--strict`` fails
on them too. Every other finding fails.

The docs directory and the results file are parameters (``check(docs_dir, results, readme)``),
so the tests run it on fixtures. It reads each file once and uses a few regular expressions:
well under a second on the whole docs tree.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_SIGN = r"[+\-−]?"
_NUM = r"\d[\d,]*(?:\.\d+)?"
_INTERVAL = re.compile(rf"\[\s*{_SIGN}\d+\.\d+\s*,\s*{_SIGN}\d+\.\d+\s*\]")
_PERCENT = re.compile(rf"(?<![\w.]){_SIGN}{_NUM}\s?%")
_SPEEDUP = re.compile(rf"(?<![\w.]){_NUM}[x×](?![\w])")
_UNIT = r"(?:ms|µs|us|s|secs?|seconds?|min|mins|minutes?|h|hours?)"
_TIMING = re.compile(rf"(?<![\w.]){_NUM}\s?{_UNIT}(?![\w])")
_DECIMAL = re.compile(rf"(?<![\w.]){_SIGN}\d+\.\d{{2,}}(?![\w.]\d)")
_HASH = re.compile(r"(?<![\w-])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])"
                   r"(?:[0-9a-f]{40}|[0-9a-f]{7})(?![\w-])")
_FENCE = re.compile(r"^\s*(```|~~~)")
_VERSION_BEFORE = re.compile(r"(?:Linux|[Kk]ernels?(?: older than| newer than)?|Python|"
                             r"[Vv]ersion|DSPy|Ray|torch|llama\.cpp)\s+$")
# Known findings in files this change could not edit, by file name: reported on stderr as
# "pending", not failed (``--strict`` fails on them too). Remove an entry once its doc is fixed.
PENDING: dict[str, tuple[str, ...]] = {
}
_INLINE_CODE = re.compile(r"(`+)(.+?)\1")

KINDS = (("interval", _INTERVAL), ("percentage", _PERCENT), ("speed-up", _SPEEDUP),
         ("timing", _TIMING), ("decimal", _DECIMAL))


@dataclass(frozen=True)
class Finding:
    path: Path
    line: int
    kind: str
    token: str
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.kind} {self.token!r}: {self.text.strip()}"


def _norm(token: str) -> str:
    token = token.replace("-", "−").replace("\u2009", " ").replace("×", "x")
    token = re.sub(r"\s+", " ", token)
    token = re.sub(r"\[\s*", "[", token)
    token = re.sub(r"\s*\]", "]", token)
    token = re.sub(r"\s*,\s*(?=[+−\d])", ", ", token) if token.startswith("[") else token
    token = re.sub(r"(\d)\s+(?=[%x×])", r"\1", token)
    return token


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, text) of the lines outside code blocks, with inline code blanked out."""
    out: list[tuple[int, str]] = []
    fence: str | None = None
    prev_blank = True
    indented = False
    for number, line in enumerate(text.splitlines(), 1):
        m = _FENCE.match(line)
        if fence is not None:
            if m and m.group(1) == fence:
                fence = None
            prev_blank = False
            continue
        if m:
            fence = m.group(1)
            continue
        blank = not line.strip()
        if indented and not blank and not line.startswith(("    ", "\t")):
            indented = False
        if not indented and prev_blank and line.startswith(("    ", "\t")) and not blank \
                and not line.lstrip().startswith(("-", "*", "|")) and not _in_list(out):
            indented = True
        prev_blank = blank
        if indented or blank:
            continue
        out.append((number, _INLINE_CODE.sub(lambda c: " " * len(c.group(0)), line)))
    return out


def _in_list(lines: list[tuple[int, str]]) -> bool:
    # an indented paragraph right after a list item continues the item; it is not code
    return bool(lines) and lines[-1][1].lstrip().startswith(("- ", "* ", "1. "))


def figures(text: str) -> list[tuple[str, str, int]]:
    """(kind, normalized token, column) of every figure in one line of prose."""
    found: list[tuple[str, str, int]] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in KINDS:
        for m in pattern.finditer(text):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            taken.append((m.start(), m.end()))
            if kind == "decimal" and _VERSION_BEFORE.search(text[max(0, m.start() - 24):m.start()]):
                continue  # a version number: "Linux 6.18", "kernels older than 5.12"
            found.append((kind, _norm(m.group(0)), m.start()))
    return sorted(found, key=lambda f: f[2])


def hashes(text: str) -> list[str]:
    return _HASH.findall(text)


def known_figures(results_text: str) -> set[str]:
    """Every figure of RESULTS.md (code blocks included), signed and unsigned."""
    known: set[str] = set()
    for line in results_text.splitlines():
        for kind, token, _ in figures(line):
            known.add(token)
            if kind == "decimal" and token[0] in "+−":
                known.add(token[1:])
        # the decimals inside an interval stand on their own too
        for m in _DECIMAL.finditer(line):
            token = _norm(m.group(0))
            known.add(token)
            if token[0] in "+−":
                known.add(token[1:])
    return known


def check_text(path: Path, text: str, known: set[str]) -> list[Finding]:
    findings: list[Finding] = []
    for number, line in prose_lines(text):
        for kind, token, _ in figures(line):
            if token not in known:
                findings.append(Finding(path, number, kind, token, line))
        for h in hashes(line):
            findings.append(Finding(path, number, "commit hash", h, line))
    return findings


def doc_paths(docs_dir: Path, readme: Path | None = None) -> list[Path]:
    paths = sorted(Path(docs_dir).glob("*.md"))
    if readme is not None and Path(readme).is_file():
        paths.append(Path(readme))
    return paths


def is_pending(finding: Finding, pending: dict[str, tuple[str, ...]] | None = None) -> bool:
    return finding.token in (PENDING if pending is None else pending).get(finding.path.name, ())


def check(docs_dir: Path, results: Path, readme: Path | None = None) -> list[Finding]:
    """Findings for every ``*.md`` directly in ``docs_dir`` (and ``readme``) against ``results``
    (``PENDING`` ones included: filter them with ``is_pending``)."""
    known = known_figures(Path(results).read_text(encoding="utf-8"))
    findings: list[Finding] = []
    for path in doc_paths(docs_dir, readme):
        findings.extend(check_text(path, path.read_text(encoding="utf-8"), known))
    return findings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.check_docs",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=Path, default=ROOT / "docs", help="docs directory")
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md",
                        help="also check this file (pass '' to skip)")
    parser.add_argument("--results", type=Path, default=ROOT / "benchmarks" / "RESULTS.md",
                        help="the results page every figure must stand in")
    parser.add_argument("--strict", action="store_true",
                        help="fail on the PENDING findings too")
    args = parser.parse_args(argv)
    readme = args.readme if str(args.readme) not in ("", ".") else None
    failed = 0
    for finding in check(args.docs, args.results, readme):
        try:
            shown = finding.path.resolve().relative_to(Path.cwd().resolve())
        except ValueError:
            shown = finding.path
        line = f"{shown}:{finding.line}: {finding.kind} {finding.token!r}: {finding.text.strip()}"
        if is_pending(finding) and not args.strict:
            print("pending: " + line, file=sys.stderr)
        else:
            print(line)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
