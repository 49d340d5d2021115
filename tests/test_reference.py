"""The generated reference (docs/reference.md) and example settings file
(docs/pipeline.example.toml) are what the code generates today, and every command-line option
is a setting or a listed flag-only option."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click
import pytest

from pipeline.cli import main, reference
from pipeline.cli.options import FLAG_ONLY, TOOLS, SettingOption, field_of
from pipeline.cli.reference import COMMAND, EXAMPLE, outputs, sections
from pipeline.settings import load_settings

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("path", list(outputs()), ids=lambda p: p.name)
def test_the_generated_file_is_up_to_date(path: Path) -> None:
    assert path.read_text(encoding="utf-8") == outputs()[path], f"run `{COMMAND}`"


def test_the_check_names_a_file_out_of_date_and_writing_brings_it_up_to_date(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--check` exits 1 naming the stale file and writes nothing; without it, both files are
    written (here into a copy of the docs folder)."""
    for name in ("ROOT", "REFERENCE", "EXAMPLE"):
        here = getattr(reference, name)
        monkeypatch.setattr(reference, name, tmp_path / here.relative_to(ROOT))
    (tmp_path / "docs").mkdir()
    for path, text in outputs().items():
        path.write_text(text, encoding="utf-8")
    assert reference.main_(["--check"]) == 0
    edited = reference.EXAMPLE.read_text(encoding="utf-8") + "# an edit by hand\n"
    reference.EXAMPLE.write_text(edited, encoding="utf-8")
    capsys.readouterr()
    assert reference.main_(["--check"]) == 1
    assert capsys.readouterr().err == f"docs/pipeline.example.toml: out of date: run `{COMMAND}`\n"
    assert reference.EXAMPLE.read_text(encoding="utf-8") == edited
    assert reference.main_([]) == 0
    assert reference.main_(["--check"]) == 0


def test_the_check_passes_on_the_repository() -> None:
    check = [sys.executable, "-m", "pipeline.cli.reference", "--check"]
    done = subprocess.run(check, cwd=ROOT, capture_output=True, text=True)
    assert (done.returncode, done.stderr) == (0, "")


def test_the_example_settings_file_states_the_defaults() -> None:
    assert load_settings(EXAMPLE).model_dump() == load_settings(None).model_dump()


def test_the_example_holds_every_setting() -> None:
    """Every key is in the file, set or (unset by default) commented out, in its section."""
    text = EXAMPLE.read_text(encoding="utf-8")
    for name, _, fields in sections():
        part = text.split(f"\n[{name}]\n", 1)[1] if name else text
        part = part.split("\n[", 1)[0]
        for key, _ in fields:
            leaf = key.rsplit(".", 1)[-1]
            assert f"\n{leaf} = " in part or f"\n# {leaf} = " in part, key


def test_every_option_is_a_setting_or_a_listed_flag() -> None:
    for name, command in main.commands.items():
        for param in command.params:
            if not isinstance(param, click.Option):
                continue  # an argument: what one run works on
            if isinstance(param, SettingOption):
                field_of(param.setting)  # a setting of the model
                assert param.default in (None, False), param.opts  # the settings' default rules
            else:
                assert param.opts[0] in FLAG_ONLY or name in TOOLS, (name, param.opts)


def test_every_listed_flag_is_an_option_of_some_command() -> None:
    flags = {o for c in main.commands.values() for p in c.params for o in p.opts}
    assert set(FLAG_ONLY) <= flags
    assert set(TOOLS) <= set(main.commands)
