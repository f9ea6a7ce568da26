"""The code passes the ruff configuration in pyproject.toml (pycodestyle, pyflakes, bugbear,
pyupgrade and import order; the ignored rules say why there). ruff is in the test extra."""
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_ruff_finds_nothing():
    run = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
                         cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
