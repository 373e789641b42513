"""Exporting a trained student to GGUF and serving it through llama.cpp in its training format.

Fast tests here (converter extraction, freshness of an export, the generator seam of HFChatModel);
the real export of the packaged 0.5B and its generation through llama.cpp run in test_student_slow.py."""

from __future__ import annotations

import io
import os
import tarfile
import time

import pytest

from eventfold.llm.gguf_generator import exported_gguf
from eventfold.llm.transformers_backend import HFChatModel
from eventfold.llm.types import LLMError, Message, ToolSpec
from training.common.export import ExportError, _extract_converter, export_gguf, export_lora_gguf

SEARCH = ToolSpec(name="search", description="Search.", parameters={"type": "object", "properties": {
    "query": {"type": "string"}}, "required": ["query"]})


def _sdist(path, members: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def test_only_the_converter_is_extracted_and_nothing_outside(tmp_path) -> None:
    sdist = tmp_path / "llama_cpp_python-9.9.9.tar.gz"
    _sdist(sdist, {
        "llama_cpp_python-9.9.9/vendor/llama.cpp/convert_hf_to_gguf.py": b"print('convert')",
        "llama_cpp_python-9.9.9/vendor/llama.cpp/convert_lora_to_gguf.py": b"print('lora')",
        "llama_cpp_python-9.9.9/vendor/llama.cpp/convert_hf_to_gguf_update.py": b"print('not needed')",
        "llama_cpp_python-9.9.9/vendor/llama.cpp/conversion/__init__.py": b"",
        "llama_cpp_python-9.9.9/vendor/llama.cpp/gguf-py/gguf/__init__.py": b"",
        "llama_cpp_python-9.9.9/vendor/llama.cpp/src/llama.cpp": b"int main(){}",
        "llama_cpp_python-9.9.9/vendor/llama.cpp/gguf-py/../../../../escape.py": b"x",
        "llama_cpp_python-9.9.9/llama_cpp/llama.py": b"",
    })  # fmt: skip
    dest = tmp_path / "tree"
    _extract_converter(sdist, dest)
    files = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    assert files == [
        "conversion/__init__.py", "convert_hf_to_gguf.py", "convert_lora_to_gguf.py", "gguf-py/gguf/__init__.py"
    ]
    assert not (tmp_path / "escape.py").exists()

    empty = tmp_path / "llama_cpp_python-0.0.1.tar.gz"
    _sdist(empty, {"llama_cpp_python-0.0.1/setup.py": b""})
    with pytest.raises(ExportError, match="convert_hf_to_gguf.py"):
        _extract_converter(empty, tmp_path / "tree2")
    no_lora = tmp_path / "llama_cpp_python-0.0.2.tar.gz"  # an sdist without the LoRA converter is refused
    _sdist(no_lora, {"llama_cpp_python-0.0.2/vendor/llama.cpp/convert_hf_to_gguf.py": b""})
    with pytest.raises(ExportError, match="convert_lora_to_gguf.py"):
        _extract_converter(no_lora, tmp_path / "tree3")


def test_an_export_older_than_the_weights_is_not_served(tmp_path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"w")
    assert exported_gguf(tmp_path) is None
    gguf = tmp_path / "student-q8_0.gguf"
    gguf.write_bytes(b"GGUF")
    assert exported_gguf(tmp_path) == gguf
    old = time.time() - 60
    os.utime(gguf, (old, old))  # the weights were trained again after the export
    assert exported_gguf(tmp_path) is None
    assert exported_gguf(tmp_path, "f16") is None


def test_export_refuses_a_folder_that_is_not_a_model(tmp_path) -> None:
    with pytest.raises(ExportError, match="config.json"):
        export_gguf(tmp_path, tmp_path / "cache")
    with pytest.raises(ExportError, match="adapter_config.json"):
        export_lora_gguf(tmp_path, tmp_path, tmp_path / "cache")


class ScriptedGenerator:
    """Test double of LlamaCppTokenGenerator: returns fixed token ids, records the prompt ids."""

    def __init__(self, reply_ids: list[int]):
        self.reply_ids = reply_ids
        self.prompts: list[list[int]] = []
        self.reused_tokens = 7

    def generate(self, ids: list[int], max_new: int, temperature: float | None, stop=None) -> list[int]:
        self.prompts.append(ids)
        out = []
        for tok in self.reply_ids[:max_new]:  # as the real generator: up to where ``stop`` holds
            out.append(tok)
            if stop is not None and stop(out):
                break
        return out


def test_a_generator_replaces_the_torch_model_in_the_same_format(tiny_model_dir) -> None:
    from trl.chat_template_utils import add_response_schema

    from training.common.loading import load_tokenizer

    tok = add_response_schema(load_tokenizer(tiny_model_dir))
    reply = '<tool_call>\n{"name": "search", "arguments": {"query": "storm"}}\n</tool_call><|im_end|>'
    gen = ScriptedGenerator(tok(reply, add_special_tokens=False).input_ids)
    chat = HFChatModel(tok, None, name="tiny-gguf", generator=gen)
    msgs = [Message(role="system", content="s"), Message(role="user", content="When was the storm?")]
    resp = chat.chat(msgs, tools=[SEARCH], temperature=0.0)
    assert resp.tool_calls[0].name == "search" and resp.tool_calls[0].arguments == {"query": "storm"}
    # the prompt reached the generator as the tokenizer's own ids of the rendered chat template
    assert gen.prompts == [tok(chat.render(msgs, [SEARCH]), add_special_tokens=False).input_ids]
    assert resp.finish_reason == "stop" and chat.reused_tokens == 7
    with pytest.raises(LLMError, match="tokenizer-only"):
        HFChatModel(tok).chat(msgs)


def test_a_forced_call_ends_where_its_json_closes(tiny_model_dir) -> None:
    """With the call opener forced, generation stops at the token that closes the call's JSON object:
    the random token a student wrote after it (and its end-of-turn) is neither generated nor parsed."""
    from trl.chat_template_utils import add_response_schema

    from eventfold.llm.transformers_backend import call_closed, call_opener_ids
    from training.common.loading import load_tokenizer

    tok = add_response_schema(load_tokenizer(tiny_model_dir))
    opener = call_opener_ids(tok)
    call = 'search", "arguments": {"query": "a {brace} and a \\"quote}\\""}}\n'
    gen = ScriptedGenerator(tok(call + "junk words<|im_end|>", add_special_tokens=False).input_ids)
    chat = HFChatModel(tok, None, name="tiny-gguf", generator=gen)
    msgs = [Message(role="system", content="s"), Message(role="user", content="When was the storm?")]
    resp = chat.chat(msgs, tools=[SEARCH], tool_choice="required", temperature=0.0)
    assert resp.tool_calls[0].arguments == {"query": 'a {brace} and a "quote}"'}
    assert tok.decode(opener) + call == tok.decode(opener + tok(call, add_special_tokens=False).input_ids)
    n_call = len(tok(call, add_special_tokens=False).input_ids)  # the closing newline may be a token of its own
    assert resp.usage.completion_tokens in (n_call - 1, n_call)
    assert resp.finish_reason == "stop"
    assert not call_closed('<tool_call>\n{"name": "search", "arguments": {"query": "}}"')
    assert call_closed('<tool_call>\n{"name": "x", "arguments": {}}') and not call_closed("no call here }")


def test_settings_asking_for_llama_cpp_without_an_export_fail_clearly(tiny_model_dir) -> None:
    from eventfold.settings import LLMSettings

    llm = LLMSettings(backend="transformers", hf_model_dir=tiny_model_dir, hf_generate="llama_cpp")
    with pytest.raises(LLMError, match="eventfold model export"):
        HFChatModel.from_settings(llm)
    auto = HFChatModel.from_settings(llm.model_copy(update={"hf_generate": "auto"}))  # no export: torch
    assert auto.generator is None and auto.model is not None


def test_the_serve_hint_after_training_says_whether_a_current_gguf_is_there(tmp_path, capsys) -> None:
    from cli.train import _serve_hint

    (tmp_path / "model.safetensors").write_bytes(b"w")
    _serve_hint(tmp_path)
    assert "eventfold model export" in capsys.readouterr().out
    (tmp_path / "student-q8_0.gguf").write_bytes(b"g")  # written after the weights: current
    _serve_hint(tmp_path)
    out = capsys.readouterr().out
    assert "llama.cpp" in out and "model export" not in out
