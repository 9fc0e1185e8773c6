"""The command line's output (issues 23 and 25): units, JSON and CSV, batch lookups, names
escaped, one order of names, plots that never write through a symlink, the store key honoured
as ``open_index`` honours it, and every error one line."""

from __future__ import annotations

import csv
import io
import json
import os
import random
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import polydom
from polydom.app.cli import main
from polydom.app.files import replace_file
from polydom.curves.curve_text import curve_text, number_text

pytest.importorskip("matplotlib")


def _publish(url: str, candidates: list, costs: dict, unit: str, n_max: float = 100.0) -> None:
    """Store an index over ``candidates`` (no learner involved) as build 1 of ``url``."""
    from storage import IndexStore

    table = polydom.PolyDomIndex.build(candidates, 0.0, n_max)
    columns = {name: [i] for i, name in enumerate(costs)}
    with IndexStore(url) as store:
        build = store.begin_build({"learner": "t"}, {k: polydom.CostCurve.coerce(v)
                                                     for k, v in costs.items()}, columns)
        store.publish(build, polydom.Index(table, costs, columns, {"cost_unit": unit}))


COSTS = {"x1": "0.001 + 0.0001*n", "x2": "0.002", "x13": "0.0005*n"}


@pytest.fixture(scope="module")
def seconds(tmp_path_factory) -> str:
    """A store in seconds over features x1, x2, x13; candidates named by their features."""
    url = f"sqlite:///{tmp_path_factory.mktemp('units') / 's.db'}"
    curves = {k: polydom.CostCurve.parse(v) for k, v in COSTS.items()}
    sets = [(), ("x1",), ("x2",), ("x13",), ("x1", "x13"), ("x2", "x13"), ("x1", "x2", "x13")]
    candidates = [polydom.Candidate(key, 0.5 + 0.06 * i + 0.01 * len(key),
                                    polydom.CostCurve.total(curves[f] for f in key),
                                    features=set(key), learner="lattice")
                  for i, key in enumerate(sets)]
    _publish(url, candidates, curves, "s")
    return url


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


# ------------------------------------------------------------------- JSON and batch lookups
def test_lookup_json_answers_what_open_index_answers(seconds, capsys):
    index = polydom.open_index(seconds)
    for size, budget in [(10.0, 0.004), (50.0, 0.03), (90.0, 0.1), (5.0, 0.0)]:
        code, out, _ = _run(["lookup", seconds, "--size", str(size), "--budget", str(budget),
                             "--json"], capsys)
        answer = json.loads(out)
        hit = index.lookup(size, budget)
        assert code == (0 if hit is not None else 1) and answer["fits"] == (hit is not None)
        assert answer["unit"] == "s" and answer["budget"] == budget
        if hit is not None:
            assert answer["model"] == hit.to_dict()


def test_lookup_of_many_queries_matches_a_full_scan(seconds, tmp_path, capsys):
    index = polydom.open_index(seconds)
    rng = random.Random(3)
    queries = [(rng.uniform(0, 100), rng.uniform(0, 0.08)) for _ in range(60)]
    path = tmp_path / "q.txt"
    path.write_text("# size budget\n" + "\n".join(f"{s!r}, {b!r}" for s, b in queries) + "\n")
    code, out, _ = _run(["lookup", seconds, "--queries", str(path), "--json"], capsys)
    answers = json.loads(out)
    assert code == 0 and len(answers) == len(queries)
    for (size, budget), answer in zip(queries, answers, strict=True):
        fitting = [c for c in index.candidates if c.cost(size) <= budget]
        best = max(fitting, key=lambda c: (c.accuracy, -c.cost(size)), default=None)
        assert answer["fits"] == (best is not None)
        if best is not None:
            assert set(answer["model"]["features"]) == set(best.features)


def test_lookup_reads_queries_from_standard_input_and_writes_csv(seconds, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("10 0.004\n50 30ms\n"))
    code, out, _ = _run(["lookup", seconds, "--queries", "-", "--csv"], capsys)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and [r["size"] for r in rows] == ["10.0", "50.0"]
    assert rows[1]["budget"] == "0.03" and rows[1]["unit"] == "s"


@pytest.mark.parametrize("text, reason", [
    ("10\n", "line 1 is not 'size budget'"),
    ("10 abc\n", "line 1: budget must be a number with an optional unit (0.5, 5ms, "
                  "2.5e-3s), got 'abc'"),
    ("# nothing\n", "holds no query"),
])
def test_bad_queries_name_the_line(seconds, tmp_path, capsys, text, reason):
    path = tmp_path / "q.txt"
    path.write_text(text)
    code, out, err = _run(["lookup", seconds, "--queries", str(path)], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and reason in err


def test_a_query_the_index_cannot_answer_is_reported_and_the_others_answered(seconds, tmp_path,
                                                                            capsys):
    # issue 28: one out-of-domain size used to abort the whole file with exit status 2
    path = tmp_path / "q.txt"
    path.write_text("10 0.004\n1000 1\n50 0.03\n")
    index = polydom.open_index(seconds)
    code, out, err = _run(["lookup", seconds, "--queries", str(path), "--json"], capsys)
    answers = json.loads(out)
    assert code == 0 and len(answers) == 3
    assert err == "query 2: size 1000.0 is outside the index domain [0.0, 100.0]\n"
    assert answers[1]["fits"] is False and answers[1]["error"] == err.strip()
    assert answers[1]["size"] == 1000.0 and answers[1]["budget"] == 1.0
    for answer, (size, budget) in zip(answers[::2], [(10.0, 0.004), (50.0, 0.03)], strict=True):
        assert "error" not in answer
        assert answer["model"] == index.lookup(size, budget).to_dict()
    code, out, _ = _run(["lookup", seconds, "--queries", str(path), "--csv"], capsys)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and [r["error"] for r in rows] == ["", err.strip(), ""]
    code, out, _ = _run(["lookup", seconds, "--queries", str(path)], capsys)
    assert code == 0 and len(out.splitlines()) == 5 and " error " in out.splitlines()[3]


# ------------------------------------------------------------------- units
def test_unit_converts_costs_and_budgets(seconds, capsys):
    in_s = json.loads(_run(["lookup", seconds, "--size", "50", "--budget", "0.03", "--json"],
                           capsys)[1])
    in_ms = json.loads(_run(["lookup", seconds, "--size", "50", "--budget", "30", "--unit",
                             "ms", "--json"], capsys)[1])
    suffixed = json.loads(_run(["lookup", seconds, "--size", "50", "--budget", "30ms",
                                "--json"], capsys)[1])
    assert in_s["model"]["name"] == in_ms["model"]["name"] == suffixed["model"]["name"]
    assert in_ms["unit"] == in_ms["model"]["unit"] == "ms"
    assert in_ms["model"]["cost"] == pytest.approx(1000 * in_s["model"]["cost"])
    _, out, _ = _run(["inspect", seconds, "--unit", "us"], capsys)
    assert "costs in us" in out and "cost(n_lo) (us)" in out


def test_unknown_or_unconvertible_units_are_errors_naming_the_unit(seconds, tmp_path, capsys):
    code, _, err = _run(["lookup", seconds, "--size", "5", "--budget", "1", "--unit", "parsec"],
                        capsys)
    assert code == 2 and "--unit: unknown unit 'parsec'" in err
    plain = f"sqlite:///{tmp_path / 'u.db'}"
    _publish(plain, [polydom.Candidate("a", 0.9, "1 + n", features={"a"})], {"a": "1 + n"},
             "units")
    code, _, err = _run(["lookup", plain, "--size", "5", "--budget", "1", "--unit", "ms"], capsys)
    assert code == 2 and "not a unit of time" in err and "'units'" in err


def test_a_budget_far_above_every_cost_warns_naming_the_unit(seconds, capsys):
    # 0.77 read off a table in ms, given to a store in seconds: costs at n = 64 are ~0.03 s
    code, out, err = _run(["lookup", seconds, "--size", "64", "--budget", "77"], capsys)
    assert code == 0 and "x1+x2+x13" in out
    assert err.startswith("warning: budget 77 s is ") and "costs are in s" in err
    code, _, err = _run(["lookup", seconds, "--size", "64", "--budget", "0.04"], capsys)
    assert code == 0 and err == ""


# ------------------------------------------------------------------- one order, natural sort
def test_names_and_features_print_in_one_natural_order(seconds, capsys):
    _, out, _ = _run(["inspect", seconds, "--ranges", "0"], capsys)
    assert "x1+x2+x13  " in out and "x13+x1" not in out and "x1+x13+x2" not in out
    rows = list(csv.DictReader(io.StringIO(_run(["inspect", seconds, "--csv"], capsys)[1])))
    assert rows and all(r["candidate"] == r["features"] or r["candidate"] == "{}"
                        for r in rows)
    assert len(rows) == polydom.open_index(seconds).table.entries


def test_hit_names_its_learner_and_prints_without_float_noise():
    cand = polydom.Candidate(("x2", "x13"), 0.9, [54.00000000000001], features={"x13", "x2"},
                             learner="cegb")
    hit = polydom.PolyDomIndex.build([cand], 0.0, 10.0)
    found = polydom.Index(hit, {"x2": "1", "x13": "2"}).lookup(1.0, 100.0)
    assert found.learner == "cegb"
    assert repr(found) == ("Hit(key=('x2', 'x13'), learner='cegb', features=['x2', 'x13'], "
                           "accuracy=0.9, cost=54)")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=False),
                min_size=1, max_size=5))
def test_rounded_curve_text_parses_back_within_its_digits(coefs):
    curve = polydom.CostCurve(coefs)
    back = polydom.CostCurve.parse(curve.text(digits=12))
    scale = max(abs(c) for c in curve.coefficients) or 1.0
    assert back.degree <= curve.degree
    for k, c in enumerate(curve.coefficients):
        got = back.coefficients[k] if k <= back.degree else 0.0
        assert abs(got - c) <= 1e-11 * max(abs(c), 1e-300) or abs(got - c) <= 1e-11 * scale


def test_number_and_curve_text_drop_float_noise():
    assert number_text(54.00000000000001, 6) == "54"
    assert curve_text([9, 0.12000000000000001], 6) == "0.12*n + 9"
    assert str(polydom.CostCurve([9, 0.12000000000000001])) == "0.12000000000000001*n + 9"


# ------------------------------------------------------------------- hostile names (issue 25)
def test_names_with_terminal_escapes_or_newlines_print_escaped(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'evil.db'}"
    evil = "ok\x1b[2J\x1b]0;pwned\x07\nbuild  fake  row\u202e"
    _publish(url, [polydom.Candidate(evil, 0.9, "1", features={"a"}, learner="t\x1b[31m")],
             {"a": "1"}, "s\x1b[5m")
    for argv in (["lookup", url, "--size", "1", "--budget", "5"],
                 ["lookup", url, "--size", "1", "--budget", "5", "--csv"],
                 ["inspect", url], ["inspect", url, "--csv"], ["builds", "list", url]):
        code, out, err = _run(argv, capsys)
        assert code == 0, err
        assert "\x1b" not in out + err and "\x07" not in out and "\u202e" not in out
    _, out, _ = _run(["lookup", url, "--size", "1", "--budget", "5"], capsys)
    assert len(out.splitlines()) == 3  # header, rule, one row: no fake row
    assert "ok\\x1b[2J" in out and "\\n" in out
    answer = json.loads(_run(["lookup", url, "--size", "1", "--budget", "5", "--json"],
                             capsys)[1])
    assert answer["model"]["name"] == evil  # JSON keeps the exact name, escaped by the encoder


def test_plot_replaces_a_symlink_and_leaves_its_target_alone(seconds, tmp_path, capsys):
    foreign = tmp_path / "foreign.txt"
    foreign.write_text("not yours")
    out = tmp_path / "plots"
    out.mkdir()
    (out / "skylines.png").symlink_to(foreign)
    code, _, err = _run(["plot", seconds, "--out", str(out)], capsys)
    assert code == 0, err
    assert foreign.read_text() == "not yours"
    link = out / "skylines.png"
    assert not link.is_symlink() and link.read_bytes()[:4] == b"\x89PNG"
    assert sorted(p.name for p in out.iterdir()) == ["accuracy_at_sizes.png", "cost_curves.png",
                                                     "serving_map.png", "skylines.png"]


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_written_files_get_the_mode_the_umask_gives(tmp_path, umask, mode):
    # issue 28: every PNG was written 0600 (a temporary file's mode) whatever the umask
    target = tmp_path / "out.png"
    target.write_bytes(b"old")
    old = os.umask(umask)
    try:
        replace_file(target, lambda handle: handle.write(b"new"))
        replace_file(tmp_path / "fresh.png", lambda handle: handle.write(b"new"))
    finally:
        os.umask(old)
    for path in (target, tmp_path / "fresh.png"):
        assert stat.S_IMODE(path.stat().st_mode) == mode and path.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh.png", "out.png"]


def test_plots_are_readable_by_others_under_the_usual_umask(seconds, tmp_path, capsys):
    old = os.umask(0o022)
    try:
        code, _, err = _run(["plot", seconds, "--out", str(tmp_path)], capsys)
    finally:
        os.umask(old)
    assert code == 0, err
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir()}
    assert len(modes) == 4 and set(modes.values()) == {0o644}, modes


# ------------------------------------------------------------------- the store key
def test_lookup_with_a_key_refuses_an_unsigned_store_as_open_index_does(seconds, tmp_path,
                                                                        capsys, monkeypatch):
    from storage import StoreKeyError

    key = tmp_path / "key"
    key.write_text("secret-key-of-the-owner\n")
    argv = ["lookup", seconds, "--size", "10", "--budget", "1"]
    for command in (argv + ["--key-file", str(key)], ["inspect", seconds, "--key-file",
                                                      str(key)]):
        code, out, err = _run(command, capsys)
        assert code == 2 and out == "" and "not signed" in err and err.count("\n") == 1
    monkeypatch.setenv("POLYDOM_STORE_KEY", "secret-key-of-the-owner")
    with pytest.raises(StoreKeyError):
        polydom.open_index(seconds)
    code, _, err = _run(argv, capsys)
    assert code == 2 and "not signed" in err


def test_an_empty_or_missing_key_file_is_named(seconds, tmp_path, capsys):
    (tmp_path / "empty").write_text("")
    for path, reason in [(tmp_path / "empty", "is empty"), (tmp_path / "none", "No such file")]:
        code, _, err = _run(["lookup", seconds, "--size", "1", "--budget", "1", "--key-file",
                             str(path)], capsys)
        assert code == 2 and f"--key-file {str(path)!r}" in err and reason in err


# ------------------------------------------------------------------- one-line errors
@pytest.mark.parametrize("argv", [
    ["lookup", "{url}", "--size", "1e400", "--budget", "1"],
    ["lookup", "{url}", "--size", "1", "--budget", "9" * 401],
    ["inspect", "{url}", "--build", str(2**70)],
    ["lookup", "{url}", "--size", "5", "--budget", "1", "--unit", "s\nfake"],
    ["lookup", "{readme}", "--size", "5", "--budget", "1"],
    ["inspect", "{folder}"],
])
def test_odd_arguments_give_one_line_errors(seconds, tmp_path, capsys, argv):
    readme = Path(__file__).resolve().parents[2] / "README.md"
    code, out, err = _run([a.format(url=seconds, readme=readme, folder=tmp_path)
                           for a in argv], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert "Traceback" not in err


def test_errors_name_the_store_or_the_config(tmp_path, capsys):
    readme = Path(__file__).resolve().parents[2] / "README.md"
    code, _, err = _run(["lookup", str(readme), "--size", "5", "--budget", "1"], capsys)
    assert code == 2 and f"store {str(readme)!r}" in err
    binary = tmp_path / "all.db"
    binary.write_bytes(b"SQLite format 3\x00\xf6\xff\xfe")
    code, _, err = _run(["build", str(binary)], capsys)
    assert code == 2 and str(binary) in err and "not UTF-8" in err


def test_lookup_rule_one_se_answers_as_the_index_does(tmp_path, capsys):
    from polydom.app.commands.lookup import RULES as CLI_RULES
    from polydom.index.table import RULES

    assert CLI_RULES == RULES
    url = f"sqlite:///{tmp_path / 'se.db'}"
    cands = [polydom.Candidate("cheap", 0.80, "1", features={"a"}, accuracy_se=0.05),
             polydom.Candidate("dear", 0.82, "2 + n", features={"a", "b"}, accuracy_se=0.05)]
    _publish(url, cands, {"a": "1", "b": "1 + n"}, "s")
    index = polydom.open_index(url)
    for rule in RULES:
        answer = json.loads(_run(["lookup", url, "--size", "1", "--budget", "10", "--rule",
                                  rule, "--json"], capsys)[1])
        assert answer["rule"] == rule
        assert answer["model"]["name"] == index.lookup(1.0, 10.0, rule).key


def test_plan_reads_the_budget_and_prints_costs_in_the_unit_asked_for(seconds, tmp_path,
                                                                      capsys):
    sizes = tmp_path / "sizes.txt"
    sizes.write_text("10\n20\n50\n")
    plans = [json.loads(_run(["plan", seconds, "--sizes", str(sizes), *argv, "--json"],
                             capsys)[1])
             for argv in (["--budget", "0.02"], ["--budget", "20", "--unit", "ms"],
                          ["--budget", "20ms"])]
    assert [p["unit"] for p in plans] == ["s", "ms", "s"]
    assert [b["candidate"] for b in plans[0]["bins"]] == [b["candidate"]
                                                          for b in plans[1]["bins"]]
    assert plans[1]["expected_cost"] == pytest.approx(1000 * plans[0]["expected_cost"])
    assert plans[2]["budget"] == pytest.approx(0.02)
    code, out, _ = _run(["plan", seconds, "--sizes", str(sizes), "--budget", "20", "--unit",
                         "ms"], capsys)
    assert code == 0 and "budget 20 ms per item" in out and "mean cost (ms)" in out
