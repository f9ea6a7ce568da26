"""The main job: python -m hessopt runs the suite and prints a table, a summary and the race."""
import subprocess
import sys

import numpy as np
import pytest

from hessopt import problems
from hessopt.__main__ import main
from hessopt.suite import SCIPY_COUNTERPARTS, format_summary, rosenbrock_race, run_hessopt, run_scipy


def test_main_prints_table_and_summary_and_saves_a_profile(tmp_path, capsys):
    plot = tmp_path / "profile.png"
    assert main(["--problems", "rosenbrock,beale,wood", "--methods", "trust-exact,newton-cg",
                 "--compare-scipy", "--rosenbrock", "20", "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    for method in ("trust-exact", "scipy trust-exact", "newton-cg", "scipy newton-cg"):
        assert method in out
    assert "solved" in out and "false success" in out
    assert "Chained Rosenbrock, n = 20" in out
    assert plot.stat().st_size > 10_000 and plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_main_rejects_unknown_methods():
    with pytest.raises(SystemExit):
        main(["--methods", "bfgs"])


def test_runs_report_what_the_optimizer_returned():
    problem = problems.get("beale")
    run = run_hessopt(problem, "trust-exact", {"gtol": 1e-10})
    assert run.solved and run.success and not run.false_success
    assert run.f == pytest.approx(problem.fmin, abs=1e-12) and run.gnorm <= 1e-10
    assert run.evaluations == run.nfev + run.njev + run.nhev > 0


def test_scipy_counterparts_use_scipy_with_exact_derivatives():
    problem = problems.get("rosenbrock")
    for method in SCIPY_COUNTERPARTS:
        run = run_scipy(problem, method)
        assert run.method == "scipy " + method
        assert run.solved, method


def test_summary_counts_solved_and_false_successes():
    problem = problems.get("rosenbrock")
    runs = [run_hessopt(problem, "trust-exact", {"gtol": 1e-10}),
            run_hessopt(problem, "trust-exact", {"maxiter": 2})]
    summary = format_summary(runs)
    assert "1 / 2" in summary


def test_rosenbrock_race_reaches_the_gradient_tolerance():
    runs = rosenbrock_race(40)
    ours = [r for r in runs if not r.method.startswith("scipy")]
    assert all(r.gnorm < 1e-6 and r.solved for r in ours)


def test_python_dash_m_hessopt_runs(tmp_path):
    result = subprocess.run([sys.executable, "-m", "hessopt", "--problems", "rosenbrock",
                             "--methods", "newton"], capture_output=True, text=True, timeout=120,
                            check=True)
    assert "rosenbrock" in result.stdout and "newton" in result.stdout
    assert np.isfinite(float(result.stdout.split("rosenbrock")[1].split()[3]))
