"""The shared argument types (polydom.app.arguments): every verb words a bad number the same
way, and refuses it before the store is opened."""

from __future__ import annotations

import argparse

import pytest

from polydom.app import arguments
from polydom.app.cli import main


@pytest.mark.parametrize(
    "check, good, bad",
    [
        (arguments.positive, [("0.5", 0.5), ("3", 3.0)], ["0", "-1", "inf", "nan", "x"]),
        (arguments.fraction, [("0.95", 0.95)], ["0", "1", "1.5", "nan", "x"]),
        (arguments.positive_count, [("1", 1), ("20", 20)], ["0", "-3", "1.5", "x"]),
        (arguments.port, [("0", 0), ("65535", 65535)], ["-1", "65536", "80.5", "x"]),
        (arguments.count, [("0", 0)], ["-1", "x"]),
        (arguments.non_negative, [("0", 0.0)], ["-0.5", "inf", "x"]),
    ],
)
def test_each_type_keeps_what_is_in_bounds_and_names_what_is_not(check, good, bad):
    for text, value in good:
        assert check(text) == value
    for text in bad:
        with pytest.raises(argparse.ArgumentTypeError, match=f"got {text!r}"):
            check(text)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["serve", "{db}", "--port", "70000"], "--port: expected a port in [0, 65535], got"),
        (["serve", "{db}", "--refresh", "0"], "--refresh: expected a finite number > 0, got"),
        (["serve", "{db}", "--max-body", "0"], "--max-body: expected an integer >= 1, got"),
        (["serve", "{db}", "--build", "0"], "--build: expected a build id >= 1, got"),
        (["recalibrate", "{db}", "--quantile", "1"], "--quantile: expected a number in (0, 1)"),
        (["recalibrate", "{db}", "--last", "0"], "--last: expected an integer >= 1, got"),
        (["recalibrate", "{db}", "--build", "x"], "--build: expected an integer, got 'x'"),
        (["browse", "{db}", "--port", "-1"], "--port: expected a port in [0, 65535], got"),
    ],
)
def test_serve_recalibrate_and_browse_refuse_bad_options_before_opening_the_store(
        tmp_path, capsys, argv, message):
    db = tmp_path / "none.db"
    with pytest.raises(SystemExit) as exit_:
        main([word.format(db=db) for word in argv])
    out, err = capsys.readouterr()
    assert exit_.value.code == 2 and out == "" and err.count("\n") == 1
    assert message in err
    assert not db.exists()


@pytest.mark.parametrize("verb", ["serve", "recalibrate", "lookup", "inspect"])
def test_store_options_are_the_same_on_every_store_verb(verb, capsys):
    with pytest.raises(SystemExit):
        main([verb, "--help"])
    text = capsys.readouterr().out
    assert "--build" in text and "--key-file FILE" in text and "URL" in text
