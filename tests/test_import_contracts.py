"""The import contracts of pyproject.toml's [tool.importlinter] hold: `lint-imports` passes.

One contract today: a package's private modules (a last name part starting with "_") are
imported only from within that package; code elsewhere imports the package's public names.
"""

from __future__ import annotations

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
