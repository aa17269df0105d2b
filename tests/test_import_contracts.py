"""The import contracts of pyproject.toml's [tool.importlinter] hold: `lint-imports` passes.

Three contracts: a package's private modules (a last name part starting with "_") are imported
only from within that package; no import cycles between sibling modules; and the layers (from
the CLI down to errors/files): nothing imports a layer above its own, and every top-level module
has its place.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept():
    lint_imports = Path(sys.executable).with_name("lint-imports")
    assert lint_imports.exists(), f"{lint_imports} is missing: pip install -e '.[dev]'"
    result = subprocess.run([str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"lint-imports failed (exit {result.returncode}):\n{output}"


def _lint(cwd: Path, pythonpath: Path) -> subprocess.CompletedProcess[str]:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    return subprocess.run([str(lint_imports), "--no-cache"], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env=env)


def test_an_upward_import_and_an_unplaced_module_break_the_layers_contract(tmp_path):
    # a copy of the package where a foundation module imports the CLI, and one with a new
    # top-level module no layer names
    for case, edit in (("upward", lambda pkg: (pkg / "errors.py").write_text(
                            (pkg / "errors.py").read_text() + "\nimport coalign.cli\n")),
                       ("unplaced", lambda pkg: (pkg / "newthing.py").write_text("x = 1\n"))):
        src = tmp_path / case / "src"
        shutil.copytree(ROOT / "src" / "coalign", src / "coalign",
                        ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(ROOT / "pyproject.toml", tmp_path / case / "pyproject.toml")
        shutil.copytree(ROOT / "benchmarks", tmp_path / case / "benchmarks",  # a root package
                        ignore=shutil.ignore_patterns("__pycache__", "results", "tables"))
        edit(src / "coalign")
        result = _lint(tmp_path / case, src)
        output = result.stdout + result.stderr
        assert result.returncode != 0, f"{case}: lint-imports passed:\n{output}"
        assert "Layers: nothing imports a layer above its own BROKEN" in output, output
        assert ("coalign.errors -> coalign.cli" if case == "upward"
                else "coalign.newthing") in output, output
