"""The report directory: named explicitly, one run at a time, files written whole."""
import pytest

from verify.cli import main
from verify.errors import UsageError
from verify.outdir import locked, prepare_out, write_atomic


def test_an_empty_out_is_refused():
    with pytest.raises(UsageError, match="name a directory"):
        prepare_out("")


def test_a_second_run_into_a_locked_directory_exits_2_and_writes_nothing(tmp_path, capsys):
    out = prepare_out(tmp_path / "r")
    with locked(out):
        code = main(["report", "ahn2023.lemma9", "--budget", "quick", "--tier", "symbolic",
                     "--out", str(out)])
    _, err = capsys.readouterr()
    assert code == 2 and "in use by another icl-verify report run" in err
    assert err.count("\n") == 1 and not (out / "report.tex").exists()
    with locked(out):  # released when the holder ends
        pass


def test_atomic_writes_leave_no_temporary_files(tmp_path):
    path = tmp_path / "report.tex"
    write_atomic(path, "one")
    write_atomic(path, "two")
    assert path.read_text() == "two"
    assert [p.name for p in tmp_path.iterdir()] == ["report.tex"]
