"""How the process ends when a run cannot end normally (vision_eval/exits.py), called in this process: the one line
an internal error prints, the log it writes (secrets masked), where it says to report it, and Hydra's complaints."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hydra.errors import HydraException, OverrideParseException
from omegaconf.errors import ConfigKeyError

from vision_eval.exit_codes import EXIT_INTERNAL, EXIT_INTERRUPTED
from vision_eval.exits import LOG_NAME, _report_to, hydra_problem, internal_error, interrupted
from vision_eval.secrets import given_secrets

KEY = "sk-live-0123456789abcdef"


def boom(message: str) -> RuntimeError:
    try:
        raise RuntimeError(message)
    except RuntimeError as exc:
        return exc


def test_an_internal_error_is_one_line_with_exit_4_and_the_traceback_in_the_run_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOME_PROVIDER_API_KEY", "env-secret-value-42")
    code = internal_error(boom(f"bad {KEY} and env-secret-value-42\nsecond line"), tmp_path, [f"judge.api_key={KEY}"])
    assert code == EXIT_INTERNAL == 4
    err = capsys.readouterr().err
    log = tmp_path / LOG_NAME
    assert err.count("\n") == 1
    assert err.startswith("vision-eval: internal error (RuntimeError: bad ")
    assert f"): this is a bug; the traceback is in {log}; please report it to " in err
    assert err.rstrip().endswith(" with that file")
    assert "second line" not in err  # only the message's first line
    text = log.read_text(encoding="utf-8")
    assert "Traceback (most recent call last)" in text and "RuntimeError: bad" in text and "second line" in text
    for output in (err, text):
        assert KEY not in output and "env-secret-value-42" not in output


def test_an_internal_error_without_a_message_or_a_run_directory_logs_to_a_temporary_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    assert internal_error(boom("   "), None, []) == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert "internal error (RuntimeError: ): this is a bug" in err
    (log,) = tmp_path.glob("vision-eval-error-*.log")
    assert log.name.endswith(".log") and f"the traceback is in {log};" in err
    assert re.fullmatch(r"vision-eval-error-\d{8}-\d{6}-\w+\.log", log.name), log.name  # when it happened
    assert "RuntimeError" in log.read_text(encoding="utf-8")


def test_an_unwritable_run_directory_falls_back_to_a_temporary_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    internal_error(boom("x"), tmp_path / "missing" / "run", [])
    (log,) = tmp_path.glob("vision-eval-error-*.log")
    assert f"the traceback is in {log};" in capsys.readouterr().err


def test_the_secrets_a_traceback_hides_come_from_the_command_line_and_key_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("A_TOKEN", "token-value-123456")
    monkeypatch.setenv("b_secret", "secret-value-654321")
    monkeypatch.setenv("PLAIN_SETTING", "plain-value-000000")
    secrets = given_secrets(["judge.api_key=first-key-111111", "other=visible-value-333333"])
    text = secrets.scrub("first-key-111111 token-value-123456 secret-value-654321")
    assert all(value not in text for value in ("first-key-111111", "token-value-123456"))
    assert "secret-value-654321" not in text
    kept = secrets.scrub("visible-value-333333 plain-value-000000")
    assert kept == "visible-value-333333 plain-value-000000"


def test_bugs_are_reported_to_the_declared_tracker_or_the_maintainers(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib import metadata

    class Meta:
        def __init__(self, urls: list[str] | None) -> None:
            self.urls = urls

        def get_all(self, name: str) -> list[str] | None:
            assert name == "Project-URL"
            return self.urls

    urls = ["Homepage, https://example.org", " Bug Tracker , https://example.org/issues "]
    monkeypatch.setattr(metadata, "metadata", lambda name: Meta(urls))
    assert _report_to() == "https://example.org/issues"
    for label in ("Issues", "tracker", "BUGS"):
        monkeypatch.setattr(metadata, "metadata", lambda name, label=label: Meta([f"{label}, https://example.org/b"]))
        assert _report_to() == "https://example.org/b"
    monkeypatch.setattr(metadata, "metadata", lambda name: Meta(["Homepage, https://example.org"]))
    assert _report_to() == "the vision-eval maintainers"
    monkeypatch.setattr(metadata, "metadata", lambda name: Meta(None))
    assert _report_to() == "the vision-eval maintainers"

    def missing(name: str) -> None:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "metadata", missing)
    assert _report_to() == "the vision-eval maintainers"


def test_an_override_hydra_cannot_read_names_it_with_a_quoting_hint() -> None:
    exc = OverrideParseException(override="judge.name=a b", message="mismatched input 'b'\nmore")
    assert hydra_problem(exc, ["judge.name=a b"]) == (
        "cannot read the override 'judge.name=a b': mismatched input 'b'; "
        'quote the value: judge.name="a b" (and the whole argument for the shell); '
        "see https://hydra.cc/docs/advanced/override_grammar/basic/"
    )
    plus = OverrideParseException(override="++x=1 2", message="")
    assert hydra_problem(plus, ["x=1 2"]) == (
        "cannot read the override 'x=1 2': not a valid override; "
        'quote the value: x="1 2" (and the whole argument for the shell); '
        "see https://hydra.cc/docs/advanced/override_grammar/basic/"
    )
    bare = OverrideParseException(override="~", message="no key")
    assert hydra_problem(bare, ["~"]) == (
        "cannot read the override '~': no key; see https://hydra.cc/docs/advanced/override_grammar/basic/"
    )
    spaced = OverrideParseException(override="judge.prompt=a = b", message="bad")  # not as typed: Hydra's text
    assert hydra_problem(spaced, ["other=1"]) == (
        "cannot read the override 'judge.prompt=a = b': bad; "
        'quote the value: judge.prompt="a = b" (and the whole argument for the shell); '
        "see https://hydra.cc/docs/advanced/override_grammar/basic/"
    )
    secret = OverrideParseException(override="judge.api_key=a b", message="bad")
    problem = hydra_problem(secret, ["judge.api_key=a b"])
    assert problem is not None and "judge.api_key=***" in problem and "a b" not in problem.split(";")[0]


def test_other_hydra_and_omegaconf_complaints_are_their_first_line_and_anything_else_is_none() -> None:
    assert hydra_problem(HydraException("Could not find 'dataset/nope'\nAvailable options: a"), []) == (
        "Could not find 'dataset/nope'"
    )
    assert hydra_problem(HydraException("  "), []) == "HydraException"
    assert hydra_problem(ConfigKeyError("Key 'x' is not in struct"), []) is not None
    assert hydra_problem(ValueError("x"), []) is None


class Exited(Exception):
    pass


def test_ctrl_c_prints_the_hint_once_ignores_further_interrupts_and_exits_130(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import signal

    codes: list[int] = []

    def fake_exit(code: int) -> None:
        codes.append(code)
        raise Exited

    handlers: list[object] = []
    monkeypatch.setattr(os, "_exit", fake_exit)
    monkeypatch.setattr(signal, "signal", lambda sig, handler: handlers.append((sig, handler)))
    exc = KeyboardInterrupt()
    exc.hint = "interrupted: 3 of 10 rows kept; resume with: vision-eval run.resume=x"  # type: ignore[attr-defined]
    with pytest.raises(Exited):
        interrupted(exc)
    assert codes == [EXIT_INTERRUPTED] and EXIT_INTERRUPTED == 130
    assert handlers == [(signal.SIGINT, signal.SIG_IGN)]
    assert capsys.readouterr().err == "interrupted: 3 of 10 rows kept; resume with: vision-eval run.resume=x\n"
    with pytest.raises(Exited):
        interrupted(KeyboardInterrupt())
    assert capsys.readouterr().err == "interrupted: nothing was evaluated\n"
