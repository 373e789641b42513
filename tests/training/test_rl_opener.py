"""RL turns start from the chat template's tool-call opener, as the agent serves them; the rendering of
whole conversations (SFT rows, saved templates) does not change, and a turn after the episode is free."""

from __future__ import annotations

from pathlib import Path

from transformers import AutoTokenizer
from trl.chat_template_utils import add_response_schema, parse_response

from eventfold.llm.transformers_backend import call_opener_ids
from training.rl.opener import EPISODE_OVER, opener_template, opener_text

CALL = {"role": "assistant", "content": "",
        "tool_calls": [{"type": "function", "function": {"name": "search", "arguments": {"query": "q"}}}]}  # fmt: skip


def test_generation_prompts_end_with_the_opener_until_the_episode_is_over(tiny_model_dir: Path) -> None:
    tok = add_response_schema(AutoTokenizer.from_pretrained(str(tiny_model_dir), local_files_only=True))
    opener = opener_text(tok)
    assert opener.endswith('<tool_call>\n{"name": "')
    forced = opener_template(tok.chat_template, opener)
    user = [{"role": "user", "content": "Who?"}]
    tool = {"role": "tool", "name": "search", "content": "[1] a result"}
    over = {"role": "tool", "name": "answer", "content": f"Answer recorded.\n{EPISODE_OVER}"}

    def render(msgs, gen=True, template=forced) -> str:
        return tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=gen, chat_template=template)

    assert render(user) == render(user, template=tok.chat_template) + opener
    assert render([*user, CALL, tool]).endswith("<|im_start|>assistant\n" + opener)
    assert render([*user, CALL, over]) == render([*user, CALL, over], template=tok.chat_template)  # free
    whole = [*user, CALL, tool]
    assert render(whole, gen=False) == render(whole, gen=False, template=tok.chat_template)  # SFT rows unchanged
    # the policy's continuation after the opener is read as the call, with the rendered prompt as prefix
    prompt = tok(render(user), add_special_tokens=False)["input_ids"]
    assert prompt[-len(call_opener_ids(tok)):] == call_opener_ids(tok)  # the opener as training tokenized it
    rest = tok('search", "arguments": {"query": "Who"}}\n</tool_call>' + tok.eos_token, add_special_tokens=False)
    parsed = parse_response(tok, rest["input_ids"], prefix=prompt)
    assert parsed["tool_calls"][0]["function"] == {"name": "search", "arguments": {"query": "Who"}}
