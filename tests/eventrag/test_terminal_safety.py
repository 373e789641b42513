"""No document, file name or model can drive the terminal: `index`, `retrieve` and `ask`'s printers
show ESC / CSI / OSC / BEL / C1 as visible characters. Real stores, the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from app import app

CLEAR_AND_RED = "\x1b[2J\x1b[31mPWNED\x1b[0m"
OSC_TITLE = "\x1b]0;owned title\x07"
OSC_CLIPBOARD = "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07"
C1_CSI = "\x9b2J"
RAW = ("\x1b", "\x07", "\x9b", "\x9d")  # what a terminal acts on: ESC, BEL, C1 CSI, C1 OSC



def _no_raw_controls(text: str) -> None:
    for ch in RAW:
        assert ch not in text, (ch, text)


def test_control_sequences_in_documents_and_names_never_reach_the_terminal(env: Path, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "screen.md").write_text(
        f"Milo Vance rebuilt the tower of Vrana in 1887. {CLEAR_AND_RED} {OSC_TITLE} {OSC_CLIPBOARD} {C1_CSI} "
        "[bold red]not markup[/]", encoding="utf-8")
    (corpus / "evil\x1b[31mname.md").write_text("Nora Vance painted the tower of Vrana in 1901.", encoding="utf-8")
    (corpus / "empty\x1b]0;t\x07.txt").write_text("", encoding="utf-8")  # listed as skipped, by name
    runner = CliRunner()
    out = runner.invoke(app, ["index", str(corpus), "--extract", "rules", "--index", "ctl"])
    assert out.exit_code == 0, out.output
    _no_raw_controls(out.output)
    assert "empty␛]0;t␇.txt" in out.output  # the skipped file's name, made visible
    for mode in ("naive", "event"):
        res = runner.invoke(app, ["retrieve", "Who rebuilt or painted the tower of Vrana?", "--mode", mode,
                                  "--index", "ctl", "--top-k", "10"])
        assert res.exit_code == 0, res.output
        _no_raw_controls(res.output)  # was: ESC[2J, OSC 0 and OSC 52 written raw
        flat = res.output.replace("\n", "").replace("│", "").replace(" ", "")
        assert "␛[2J␛[31mPWNED" in flat and "␛]52;c;" in flat and "\\x9b2J" in flat, res.output
        assert "evil␛[31mname.md" in flat and "[boldred]notmarkup[/]" in flat
    res = runner.invoke(app, ["retrieve", "Who rebuilt the tower of Vrana?", "--mode", "naive", "--index", "ctl",
                              "--json"])
    assert res.exit_code == 0, res.output
    _no_raw_controls(res.output)
    text = " ".join(c["text"] for c in json.loads(res.output)["chunks"])
    assert CLEAR_AND_RED in text and C1_CSI in text  # JSON carries the data exactly, as \u escapes


def test_ask_printers_show_model_text_without_acting_on_it(capsys: pytest.CaptureFixture[str]) -> None:
    from cli.ask import print_event

    nasty = f"{CLEAR_AND_RED} {OSC_CLIPBOARD} {C1_CSI} [bold red]x[/]"
    print_event({"type": "items", "items": [nasty]})
    print_event({"type": "tool_call", "name": "search", "arguments": {"query": nasty}})
    print_event({"type": "tool_result", "content": nasty, "error": False})
    print_event({"type": "invalid", "text": nasty})
    out = capsys.readouterr().out
    _no_raw_controls(out)
    # every printer shows the text, its controls made visible (␛ for text, \x1b in a call's repr)
    assert out.count("PWNED") >= 3 and "␛[2J␛[31mPWNED" in out and "[bold red]x[/]" in out
