"""Telemetry checked where it is used, and recalibration steps backed by evidence (issue 35
item 3, issue 37 item 4).

A timing is checked when it is read, whatever wrote it (rows added with SQL to a store made
before the table's CHECK constraints), and the table refuses such rows on both dialects
where it has them.  A recalibration is robust to preempted timings, says how many timings
back each scale, warns below its minimum, and refuses a step beyond its bound unless asked.
"""

from __future__ import annotations

import math
import shutil
import sqlite3

import numpy as np
import pytest
import sqlalchemy as sa

import learners
import polydom
from polydom.app.cli import main
from polydom.errors import TelemetryError
from polydom.pipeline.recalibrate import MAX_STEP, robust_scale
from storage import IndexStore
from tests.storage_support import execute_sql

#: The curves in seconds (c0 + c1 * n) over n in [0, 100].
BELIEVED = {"a": (1e-4, 1e-6), "b": (2e-4, 0.0)}


def _build(url: str) -> str:
    acc = {frozenset(): 0.5, frozenset({"a"}): 0.8, frozenset({"b"}): 0.7,
           frozenset({"a", "b"}): 0.9}
    polydom.build_index({a: f"{c0!r} + {c1!r}*n" for a, (c0, c1) in BELIEVED.items()},
                        learners.SyntheticLearner(acc.get), n_max=100.0, store=url,
                        cost_unit="s")
    return url


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    path = tmp_path_factory.mktemp("telemetry") / "index.db"
    _build(f"sqlite:///{path}")
    return path


@pytest.fixture
def built(tmp_path, template):
    shutil.copyfile(template, tmp_path / "index.db")
    return f"sqlite:///{tmp_path / 'index.db'}"


def _served(factor: float, per_atom: int, seed: int = 0, preempted: int = 0):
    """``per_atom`` timings per atom at ``factor`` times its curve (less up to 10%), the
    first ``preempted`` of each 30-60x slower (a preempted thread)."""
    rng = np.random.default_rng(seed)
    out = []
    for atom, (c0, c1) in BELIEVED.items():
        for k, n in enumerate(rng.uniform(0.0, 100.0, per_atom)):
            slow = rng.uniform(30.0, 60.0) if k < preempted else 1.0
            out.append((atom, float(n), factor * slow * (c0 + c1 * n) * rng.uniform(0.9, 1.0)))
    return out


def _legacy_table(path) -> None:
    """Make ``served_timings`` as a store made before its CHECK constraints has it."""
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE served_timings")
        conn.execute("CREATE TABLE served_timings (\n\tid INTEGER NOT NULL, \n\tbuild_id "
                     "INTEGER NOT NULL, \n\tfeature TEXT NOT NULL, \n\tsize DOUBLE NOT NULL, "
                     "\n\tseconds DOUBLE NOT NULL, \n\trecorded_at VARCHAR(32) NOT NULL, "
                     "\n\tPRIMARY KEY (id)\n)")


def _current_build(url: str) -> int:
    with IndexStore(url, create=False) as store:
        return store.current_build_id()


def test_a_subnormal_timing_is_refused_when_recorded(built):
    with pytest.raises(TelemetryError, match=r"at least 1e-09 s .* got 5e-324"):
        polydom.store_timings(built, [("a", 1.0, 5e-324)])


@pytest.mark.parametrize("seconds", [0.0, 5e-324, 2 * 86400.0, 1e300, "fast"])
def test_a_timing_written_with_sql_is_refused_when_read(built, tmp_path, seconds, capsys):
    polydom.store_timings(built, _served(2.0, 30))
    _legacy_table(tmp_path / "index.db")  # a store made before the CHECK constraints
    polydom.store_timings(built, _served(2.0, 30))
    with sqlite3.connect(tmp_path / "index.db") as conn:
        conn.execute("INSERT INTO served_timings (build_id, feature, size, seconds, "
                     "recorded_at) VALUES (1, 'a', 5.0, ?, 'x')", (seconds,))
    with pytest.raises(TelemetryError, match=r"stored timing id 61: seconds") as caught:
        polydom.recalibrate(built)
    assert "\n" not in str(caught.value)
    assert main(["recalibrate", built]) == 2
    out, err = capsys.readouterr()
    assert "stored timing id 61" in err and "published" not in out
    assert _current_build(built) == 1


@pytest.mark.parametrize("size", [-1.0, 1e309])
def test_a_size_written_with_sql_is_refused_when_read(built, tmp_path, size):
    _legacy_table(tmp_path / "index.db")
    polydom.store_timings(built, _served(2.0, 30))
    with sqlite3.connect(tmp_path / "index.db") as conn:
        conn.execute("INSERT INTO served_timings (build_id, feature, size, seconds, "
                     "recorded_at) VALUES (1, 'a', ?, 0.001, 'x')", (size,))
    with pytest.raises(TelemetryError, match=r"stored timing id 61: size"):
        polydom.recalibrate(built)


def test_the_table_refuses_such_rows_on_both_dialects(store_url):
    url = _build(store_url)
    sqlite = url.startswith("sqlite")
    nan, inf = ("NULL", "1e999") if sqlite else ("'NaN'::float8", "'Infinity'::float8")
    for size, seconds in [("5.0", "0"), ("5.0", "5e-324"), ("5.0", "172800"), ("5.0", nan),
                          ("5.0", inf), ("-1.0", "0.001"), (inf, "0.001")]:
        with pytest.raises(sa.exc.DBAPIError):
            execute_sql(url, "INSERT INTO served_timings (build_id, feature, size, seconds, "
                             f"recorded_at) VALUES (1, 'a', {size}, {seconds}, 'x')")
    execute_sql(url, "INSERT INTO served_timings (build_id, feature, size, seconds, "
                     "recorded_at) VALUES (1, 'a', 5.0, 0.001, 'x')")  # in bounds: taken


def test_37_timings_with_2_preempted_move_no_scale_beyond_its_bound_and_say_so(built, capsys):
    polydom.store_timings(built, _served(1.5, 37, preempted=2))
    report = polydom.recalibrate(built)
    for atom in BELIEVED:
        assert 1.2 < report.scales[atom] <= 1.5  # the machine's 1.5x, not the preemptions'
        assert 1 / MAX_STEP <= report.scales[atom] <= MAX_STEP
        assert report.evidence[atom] == 35 and report.set_aside[atom] == 2
    assert polydom.open_index(built).info["recalibrated"]["evidence"] == report.evidence
    assert main(["recalibrate", built, "--build", "1"]) == 0
    out = capsys.readouterr().out
    assert "a: x1.4" in out or "a: x1.5" in out or "a: x1.3" in out
    assert out.count("from 35 timings, 2 set aside beyond the fence") == 2


def test_the_plain_quantile_of_the_same_timings_was_moved_x30_or_more():
    """Why a robust estimator: the old rule (the 0.95-quantile, 'higher') of 37 ratios is
    the second largest, a preempted timing."""
    rng = np.random.default_rng(0)
    ratios = np.concatenate([rng.uniform(0.9, 1.0, 35), [40.0, 55.0]])
    assert float(np.quantile(ratios, 0.95, method="higher")) >= 40.0
    scale, aside = robust_scale(ratios, 0.95)
    assert scale <= 1.0 and aside == 2


def test_a_step_beyond_the_bound_is_refused_in_one_line_unless_asked(built, capsys):
    polydom.store_timings(built, _served(50.0, 40))
    with pytest.raises(TelemetryError, match=r"x\d\d.*from 40 timings.*\[1/8, 8\]") as caught:
        polydom.recalibrate(built)
    assert "\n" not in str(caught.value) and "max_step=" in str(caught.value)
    assert _current_build(built) == 1
    assert main(["recalibrate", built]) == 2
    assert "outside one step's bound" in capsys.readouterr().err
    assert main(["recalibrate", built, "--max-step", "64"]) == 0
    assert _current_build(built) == 2


def test_no_recalibration_makes_a_curve_zero_even_unbounded(built):
    polydom.store_timings(built, [(a, 50.0, 1e-9) for a in BELIEVED for _ in range(30)])
    with pytest.raises(TelemetryError, match="outside one step's bound"):
        polydom.recalibrate(built)
    report = polydom.recalibrate(built, max_step=math.inf)
    index = polydom.open_index(built)
    for atom in BELIEVED:
        assert 0 < report.scales[atom] < 1e-4
        assert float(index.costs[atom](0.0)) > 0 and float(index.costs[atom](100.0)) > 0


def test_too_little_evidence_warns_in_one_line_naming_the_atoms(built):
    polydom.store_timings(built, [*_served(2.0, 30)[:30], *_served(2.0, 30)[30:35]])
    with pytest.warns(RuntimeWarning, match=r"atoms b have fewer than 20 timings") as caught:
        report = polydom.recalibrate(built)
    assert all("\n" not in str(w.message) for w in caught)
    assert report.borrowed == ["b"] and report.evidence.get("b", 0) == 0
    assert report.evidence["a"] == 30
