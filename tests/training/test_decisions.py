"""The tool-decision probe measures the probability the student gives each tool's name at the turn's
decision point — the same number as the name token's probability inside the rendered completion."""

from __future__ import annotations

import pytest
import torch
from test_sft_data import _run

from training.common.loading import load_model_and_tokenizer
from training.sft.data import trajectory_rows
from training.sft.decisions import decision_report, format_report, tool_names, tool_probs
from training.sft.train import render_turn


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    model, tok = load_model_and_tokenizer(tiny_model_dir, dtype=torch.float32)
    return model.eval(), tok


@pytest.fixture
def rows(counter, lexical_backend):
    return trajectory_rows(_run("good", counter, lexical_backend))


def _name_prob_in_completion(model, tok, row) -> float:
    """The probability of the completion's tool-name token, read inside the turn as SFT renders it."""
    prompt, full = render_turn(row, tok)
    assert full.startswith(prompt)
    assert '"arguments": "{' not in full  # earlier calls' arguments as objects, as trained and served
    name = row["completion"][0]["tool_calls"][0]["function"]["name"]
    head = full[: full.index('"' + name + '"', len(prompt)) + 1]  # up to the name's opening quote
    ids = tok(head, return_tensors="pt", add_special_tokens=False).input_ids
    with torch.no_grad():
        p = torch.softmax(model(ids).logits[0, -1].float(), -1)
    return float(p[tok.encode(name, add_special_tokens=False)[0]])


def test_probe_reads_the_name_token_where_the_rendered_turn_has_it(tiny, rows) -> None:
    model, tok = tiny
    for row in rows:
        probs = tool_probs(model, tok, row)
        target = row["completion"][0]["tool_calls"][0]["function"]["name"]
        assert probs[target] == pytest.approx(_name_prob_in_completion(model, tok, row), rel=1e-4)
        assert 0 < sum(probs.values()) <= 1 + 1e-6


def test_report_groups_rows_by_the_tool_they_call(tiny, rows) -> None:
    model, tok = tiny
    report = decision_report(model, tok, rows)
    assert [(d.tool, d.rows) for d in report] == [("search", 2), ("fold", 1), ("answer", 1)]
    for d in report:
        assert list(d.mean_prob) == tool_names(rows[0]) and 0 <= d.argmax_right <= d.rows
    assert tool_names(rows[0]) == [
        "search",
        "read",
        "timeline",
        "dates",
        "resolve",
        "fold",
        "unfold",
        "answer",
    ]  # the registry's tools, its order
    table = format_report(report)
    assert table.splitlines()[2].startswith("| search | 2 |")


# Qwen2.5's way with tool calls (the packaged students' template): arguments rendered with `tojson`, so a
# row's JSON-string arguments would be quoted twice unless turned back into objects first, as SFT does
QWEN25_CALLS = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content or '' }}"
    "{% for c in m.tool_calls or [] %}<tool_call>\n"
    '{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments | tojson }}}\n</tool_call>'
    "{% endfor %}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def test_probe_renders_earlier_calls_as_sft_trains_on_them(tiny_model_dir, rows) -> None:
    model, tok = load_model_and_tokenizer(tiny_model_dir, dtype=torch.float32)
    tok.chat_template = QWEN25_CALLS
    row = next(r for r in rows if any(m.get("tool_calls") for m in r["prompt"]))
    assert '"arguments": "{' not in render_turn(row, tok)[0]
    target = row["completion"][0]["tool_calls"][0]["function"]["name"]
    probs = tool_probs(model.eval(), tok, row)
    assert probs[target] == pytest.approx(_name_prob_in_completion(model, tok, row), rel=1e-4)
