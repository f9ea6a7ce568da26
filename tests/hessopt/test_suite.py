"""The main job: python -m hessopt runs the suite and prints a table, a summary and the race."""
import subprocess
import sys

import numpy as np
import pytest

import hessopt
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


def test_summary_counts_solved_false_successes_and_evaluations_for_both_libraries():
    problem, loose = problems.get("watson", 9), {"gtol": 1e-5}   # scipy's test stops it early
    runs = [run_hessopt(problems.get("rosenbrock"), "newton-cg"), run_hessopt(problem, "newton-cg"),
            run_hessopt(problem, "newton-cg", loose), run_scipy(problem, "newton-cg")]
    assert [r.false_success for r in runs] == [False, False, True, runs[3].success]
    row = format_summary(runs).splitlines()[3].replace(",", "").split()
    # method, solved / runs, false successes, evaluations, seconds: hessopt's, then scipy's
    assert row[:5] == ["newton-cg", "2", "/", "3", "1"]
    assert int(row[5]) == sum(r.evaluations for r in runs[:3])
    assert row[7:11] == ["1" if runs[3].solved else "0", "/", "1", str(int(runs[3].false_success))]
    assert int(row[11]) == runs[3].evaluations


def test_suite_runs_keep_no_iterates_and_use_the_defaults():
    problem = problems.get("beale")
    run = run_hessopt(problem, "newton-cg")
    default = hessopt.minimize(problem.fun, problem.x0, method="newton-cg")
    assert run.nit == default.nit and run.f == default.fun
    assert "x" not in hessopt.minimize(problem.fun, problem.x0, method="newton-cg",
                                       options={"keep_iterates": False}).history


def test_main_takes_gtol_for_tight_or_loose_runs(capsys):
    arguments = ["--problems", "powell_badly_scaled", "--methods", "newton-cg"]
    assert main([*arguments, "--gtol", "1e-5"]) == 0
    loose = capsys.readouterr().out
    assert main(arguments) == 0
    default = capsys.readouterr().out
    assert "NO*" in loose.split("powell_badly_scaled")[1].splitlines()[0]   # scipy's test: early
    assert " yes " in default.split("powell_badly_scaled")[1].splitlines()[0]


def test_rosenbrock_race_reaches_the_minimum_with_the_defaults():
    runs = rosenbrock_race(40)
    ours = [r for r in runs if not r.method.startswith("scipy")]
    assert all(r.gnorm <= 1e-8 and r.solved and r.success for r in ours)


def test_python_dash_m_hessopt_runs(tmp_path):
    result = subprocess.run([sys.executable, "-m", "hessopt", "--problems", "rosenbrock",
                             "--methods", "newton"], capture_output=True, text=True, timeout=120,
                            check=True)
    assert "rosenbrock" in result.stdout and "newton" in result.stdout
    assert np.isfinite(float(result.stdout.split("rosenbrock")[1].split()[3]))
