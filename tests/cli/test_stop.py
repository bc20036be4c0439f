"""A stop the user asked for (SIGTERM, Ctrl-C) takes effect even where a library swallows the exception its
signal raised (:mod:`ibo_pymc.stop`): seen in CI, a SIGTERM that arrived while ArviZ's import loaded matplotlib's
3-D axes became matplotlib's warning "Unable to import Axes3D", and the run went on to write its output."""

from __future__ import annotations

import os
import signal
import time

import pytest

from ibo_pymc import stop
from ibo_pymc.cli._common import run
from ibo_pymc.io import atomic_path

STOPS = [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")]


def _signal_swallowed(sig) -> None:
    """Send ``sig`` to this process and lose the exception its handler raises, as a broad ``except`` around a
    library's import did."""
    try:
        os.kill(os.getpid(), sig)
        time.sleep(2)  # the handler runs at the next bytecode boundary, well within this
    except BaseException:
        pass


@pytest.fixture(autouse=True)
def _sigint_as_in_a_terminal():
    """SIGINT with Python's default handler for the test (a background job, CI's included, starts with SIGINT
    ignored, and the commands leave an ignored SIGINT alone), restored afterwards."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


@pytest.mark.parametrize(("sig", "code", "word"), STOPS)
def test_a_swallowed_stop_commits_no_output(tmp_path, capsys, sig, code, word):
    dest = tmp_path / "fit.nc"
    dest.write_text("previous result")

    def main(argv):
        _signal_swallowed(sig)
        with atomic_path(dest) as tmp:  # the commit point raises the recorded stop instead of renaming
            tmp.write_text("new result")
        return 0

    before = signal.getsignal(sig)
    assert run(main, [], "ibo-test") == code
    assert dest.read_text() == "previous result" and [p.name for p in tmp_path.iterdir()] == ["fit.nc"]
    err = capsys.readouterr().err
    assert word in err and "internal error" not in err
    assert stop.requested() is None and signal.getsignal(sig) is before  # nothing outlives the command


@pytest.mark.parametrize(("sig", "code", "word"), STOPS)
def test_a_swallowed_stop_ends_the_command_that_writes_nothing_after_it(capsys, sig, code, word):
    assert run(lambda argv: _signal_swallowed(sig), [], "ibo-test") == code
    assert word in capsys.readouterr().err


def test_a_stop_a_library_turned_into_its_own_error_is_still_a_stop(capsys):
    def main(argv):
        _signal_swallowed(signal.SIGTERM)
        raise SystemError("initialization of _ext raised unreported exception")  # how C extensions report it

    assert run(main, [], "ibo-test") == 143
    assert "internal error" not in capsys.readouterr().err


def test_without_a_stop_the_command_and_its_writes_are_untouched(tmp_path):
    dest = tmp_path / "out.txt"

    def main(argv):
        with atomic_path(dest) as tmp:
            tmp.write_text("done")
        return 0

    assert run(main, [], "ibo-test") == 0 and dest.read_text() == "done"
