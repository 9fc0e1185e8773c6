"""The polydom command line: inspect and lookup against stored indexes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from polydom.app.cli import main
from storage import IndexStore
from tests.storage_support import COSTS, GROUPS, index_of, random_candidates

ROOT = Path(__file__).resolve().parents[2]


def published(url, n=60, seed=4):
    index = index_of(random_candidates(n, seed=seed))
    with IndexStore(url) as store:
        store.publish(store.begin_build({"alpha": 1.25, "learner": "cli-test"}, COSTS, GROUPS),
                      index)
    return index


def test_inspect_prints_builds_and_every_skyline_entry(store_url, capsys):
    index = published(store_url)
    assert main(["inspect", store_url, "--ranges", "0"]) == 0
    out = capsys.readouterr().out
    assert "cli-test" in out and "complete" in out
    assert f"{len(index.table)} ranges, {index.table.entries} entries" in out
    table = out.split("skylines of build")[1].splitlines()[3:]
    assert [line.split()[4] for line in table] == [
        c.key for sky in index.table.skylines for c in sky
    ]


def test_inspect_limits_the_ranges_it_prints(store_url, capsys):
    index = published(store_url)
    assert main(["inspect", store_url, "--ranges", "1"]) == 0
    out = capsys.readouterr().out
    assert f"... {len(index.table) - 1} more ranges" in out


def test_lookup_prints_what_the_index_answers(store_url, capsys):
    index = published(store_url)
    rng = np.random.default_rng(0)
    for n, b in zip(rng.uniform(0, 1000, 5).tolist(), rng.uniform(20, 100, 5).tolist(),
                    strict=True):
        want = index.lookup(n, b)
        code = main(["lookup", store_url, "--size", repr(n), "--budget", repr(b)])
        out = capsys.readouterr().out
        if want is None:
            assert code == 1 and "no candidate" in out
        else:
            assert code == 0 and out.splitlines()[2].split()[1] == want.key


def test_lookup_with_nothing_in_budget_exits_1(store_url, capsys):
    published(store_url)
    assert main(["lookup", store_url, "--size", "10", "--budget", "0"]) == 1
    assert capsys.readouterr().out == (
        "nothing fits: no candidate of build 1 costs at most 0 units at size 10\n"
    )


@pytest.mark.parametrize(
    "argv, reason",
    [
        (["lookup", "{url}", "--size", "-3", "--budget", "1"], "argument --size"),
        (["lookup", "{url}", "--size", "nan", "--budget", "1"], "argument --size"),
        (["lookup", "{url}", "--size", "3"], "--budget"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_arguments_exit_2_with_a_one_line_reason(tmp_path, capsys, argv, reason):
    url = str(tmp_path / "x.db")
    try:
        code = main([a.format(url=url) for a in argv])
    except SystemExit as exc:  # argparse's own checks exit; checks of arguments together return
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and reason in err


def test_unreadable_store_or_size_exit_2_with_a_one_line_reason(tmp_path, capsys):
    assert main(["inspect", str(tmp_path / "missing.db")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"polydom inspect: error: url 'sqlite:///{tmp_path / 'missing.db'}': no such SQLite file"
    )
    url = f"sqlite:///{tmp_path / 'x.db'}"
    published(url)
    assert main(["lookup", url, "--size", "5000", "--budget", "1"]) == 2
    assert "size 5000.0 is outside the index domain" in capsys.readouterr().err


def test_python_dash_m_polydom_cli_runs(tmp_path):
    url = f"sqlite:///{tmp_path / 'x.db'}"
    index = published(url)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    helped = subprocess.run([sys.executable, "-m", "polydom.app.cli", "--help"], env=env,
                            capture_output=True, text=True, check=True)
    assert "inspect" in helped.stdout and "lookup" in helped.stdout
    done = subprocess.run(
        [sys.executable, "-m", "polydom.app.cli", "lookup", url, "--size", "3", "--budget", "80"],
        env=env, capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[2].split()[1] == index.lookup(3.0, 80.0).key
