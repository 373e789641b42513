"""The real student: the packaged Qwen2.5-Coder-0.5B GGUF loaded through the GGUF path (dequantized
once, then read from the cache), one LoRA SFT step (the adapter changes, the loss is finite) and its
GGUF export served through llama.cpp. The RL loop is tested on the tiny student
(tests/training/test_lora_gguf_slow.py); the real student's RL step is measured by bench/rl_step.py."""

from __future__ import annotations

import json
import math
import os

import pytest
import torch

from eventfold.models import get_model, is_installed, model_file
from eventfold.settings import Settings
from training.common.loading import SOURCE_FILE, converted_dir, resolve_model_dir
from training.config import SFTRunConfig

pytestmark = pytest.mark.slow

NAME = "qwen2.5-coder-0.5b"


@pytest.fixture(scope="module")
def student_dir():
    settings = Settings()
    if not is_installed(settings.models_dir, get_model(NAME)):
        path = model_file(settings.models_dir, NAME)
        if os.environ.get("CI"):
            pytest.fail(f"{path} missing: run `eventfold model pull {NAME}`")
        pytest.skip(f"{path} not on this machine")
    d = resolve_model_dir(packaged=NAME)  # first run: dequantize (~2.5 min); later: the cache
    assert d == converted_dir(model_file(settings.models_dir, NAME), settings.cache_dir)
    assert json.loads((d / SOURCE_FILE).read_text())["parameters"] > 600_000_000
    assert resolve_model_dir(packaged=NAME) == d  # second resolve: no conversion
    return d


def _lora_params(model) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in model.named_parameters() if "lora_" in n}


def test_sft_step_with_lora(tmp_path, student_dir) -> None:
    from training.sft.train import build_trainer

    tools = [{"type": "function", "function": {"name": "answer", "description": "Finish with a short answer.",
              "parameters": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}}}]
    row = {
        "prompt": [{"role": "system", "content": "You are a research agent."},
                   {"role": "user", "content": "What is the capital of France?"}],
        "completion": [{"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": "answer", "arguments": json.dumps({"answer": "Paris"})}}]}],
        "tools": json.dumps(tools),
    }  # fmt: skip
    cfg = SFTRunConfig.model_validate({
        "model": {"packaged": NAME}, "output_dir": str(tmp_path / "sft"), "data_dir": str(tmp_path),
        "max_length": 512, "lora": {"enabled": True, "r": 4, "alpha": 8, "layers": [22, 23]},
        "optim": {"learning_rate": 1e-3, "max_steps": 1, "per_device_train_batch_size": 1, "save_steps": 100},
    })  # fmt: skip
    trainer = build_trainer(cfg, [row])
    tok = trainer.processing_class
    ex = trainer.train_dataset[0]
    trained = tok.decode([t for t, lab in zip(ex["input_ids"], ex["labels"], strict=True) if lab != -100])
    assert trained.startswith("<tool_call>") and '"Paris"' in trained and "capital" not in trained
    before = _lora_params(trainer.model)
    out = trainer.train()
    after = _lora_params(trainer.model)
    assert math.isfinite(out.training_loss) and out.training_loss > 0
    assert any(not torch.equal(before[n], after[n]) for n in before)


def test_gguf_export_serves_the_student_in_its_training_format(student_dir) -> None:
    """llama.cpp's converter turns the student directory into a Q8_0 GGUF; through llama.cpp the student
    reads the same prompt tokens and its native tool call parses as with torch."""
    from trl.chat_template_utils import add_response_schema

    from agent.tools.repair import parse_text_call
    from eventfold.llm.gguf_generator import LlamaCppTokenGenerator
    from eventfold.llm.transformers_backend import HFChatModel
    from eventfold.llm.types import Message, ToolSpec
    from training.common.export import export_gguf
    from training.common.loading import load_model_and_tokenizer

    gguf = export_gguf(student_dir, Settings().cache_dir)
    assert gguf.name == "student-q8_0.gguf" and gguf.read_bytes()[:4] == b"GGUF"
    assert export_gguf(student_dir, Settings().cache_dir) == gguf  # current: not exported again
    model, tok = load_model_and_tokenizer(student_dir)
    tok = add_response_schema(tok)
    answer = ToolSpec(name="answer", description="Finish with a short answer.", parameters={
        "type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]})
    msgs = [Message(role="system", content="You are a research agent. Call a tool."),
            Message(role="user", content="What is the capital of France? Answer with the answer tool.")]
    torch_chat = HFChatModel(tok, model.eval(), max_new_tokens=40)
    gen = LlamaCppTokenGenerator(gguf, n_ctx=1024, eos_ids=(tok.eos_token_id,))
    gguf_chat = HFChatModel(tok, None, max_new_tokens=40, generator=gen)
    a = torch_chat.chat(msgs, tools=[answer], temperature=0.0)
    b = gguf_chat.chat(msgs, tools=[answer], temperature=0.0)
    assert a.usage.prompt_tokens == b.usage.prompt_tokens

    def executed(resp):  # a native <tool_call>, or the plain-JSON call the agent repairs (both seen at 0.5B)
        return resp.tool_calls or [parse_text_call(resp.text, ["answer"])]

    ca, cb = executed(a), executed(b)
    assert [c.name for c in cb] == [c.name for c in ca] == ["answer"], (a.text, b.text)
    assert "paris" in str(cb[0].arguments).lower()
    again = gguf_chat.chat(msgs, tools=[answer], temperature=0.0)  # same prompt: its prefix comes from the cache
    assert again.text == b.text and gen.reused_tokens >= b.usage.prompt_tokens - 1
    gen.close()
