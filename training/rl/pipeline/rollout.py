"""Rollout generation for the pipeline: one sibling group per prompt, with behaviour log-probs.

- :func:`sample_group`: HF ``generate`` on a local model (CPU or GPU), full-softmax sampling at the
  configured temperature (no top-k / top-p, so the recorded log-probs are the sampling policy's);
- :func:`hf_rollout_worker`: a rollout worker *process* (the CPU path: processes, not threads, so
  generation is not serialised with the learner by the GIL). It keeps a private model, reloads the
  learner's shared-memory weights whenever their version moved, and sends finished groups with the
  version that generated them;
- :class:`VLLMServerRollout`: the GPU path — a vLLM server (``trl vllm-serve``) generates with
  log-probs through TRL's ``VLLMClient``; the learner pushes weights to it after every step
  (NCCL, ``update_model_params``). Needs a GPU and vLLM: not run on CPU machines.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import torch

from training.rl.pipeline.config import PipelineConfig


@dataclass
class RolloutGroup:
    """One prompt's siblings: completion token ids (up to and including EOS), behaviour log-probs per
    completion token, decoded texts, the policy version that generated them, and (after
    verification) rewards (None = unscorable). Multi-turn rollouts carry ``loss_masks``: the tool
    results inside a completion are model input but not trained on (and split chunks for SIRAS)."""

    prompt: str
    prompt_ids: list[int]
    completions: list[list[int]]
    logprobs: list[list[float]]
    texts: list[str]
    version: int
    rewards: list[float | None] | None = None
    gen_s: float = 0.0
    loss_masks: list[list[int]] | None = None  # 1 = trained; 0 = tool output inside the completion
    meta: dict[str, Any] = field(default_factory=dict)


@torch.no_grad()
def sample_group(model: Any, tok: Any, prompt: str, cfg: PipelineConfig, version: int) -> RolloutGroup:
    """Generate ``cfg.num_generations`` completions of ``prompt`` with their sampling log-probs."""
    t0 = time.perf_counter()
    enc = tok([prompt], return_tensors="pt")
    ids = enc.input_ids.repeat(cfg.num_generations, 1)
    attn = enc.attention_mask.repeat(cfg.num_generations, 1)
    out = model.generate(
        input_ids=ids, attention_mask=attn, do_sample=True, temperature=cfg.temperature, top_k=0, top_p=1.0,
        max_new_tokens=cfg.max_new_tokens, output_scores=True, return_dict_in_generate=True,
        pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
    )  # fmt: skip
    seq = out.sequences[:, ids.shape[1] :]
    scores = torch.stack(out.scores, dim=1).float()  # (n, L, V) processed logits: what was sampled from
    lps = torch.log_softmax(scores, dim=-1).gather(-1, seq.unsqueeze(-1)).squeeze(-1)
    comps, lpl, texts = [], [], []
    for i in range(seq.shape[0]):
        row = seq[i].tolist()
        end = row.index(tok.eos_token_id) + 1 if tok.eos_token_id in row else len(row)
        comps.append(row[:end])
        lpl.append(lps[i, :end].tolist())
        texts.append(tok.decode(row[:end], skip_special_tokens=True))
    return RolloutGroup(prompt, enc.input_ids[0].tolist(), comps, lpl, texts, version,
                        gen_s=time.perf_counter() - t0)  # fmt: skip


def hf_rollout_worker(
    model_dir: str,
    cfg: PipelineConfig,
    shared: dict[str, torch.Tensor],
    version: Any,
    lock: Any,
    prompts: Any,
    out: Any,
    seed: int,
) -> None:  # pragma: no cover - runs in a child process (covered by the pipeline tests end to end)
    """Process entry: take prompts until a None arrives, generate groups with the latest weights."""
    from training.common.loading import load_model_and_tokenizer

    torch.set_num_threads(cfg.torch_threads)
    torch.manual_seed(seed)
    model, tok = load_model_and_tokenizer(model_dir, dtype=torch.float32)
    model.eval()
    mine = -1
    while True:
        prompt = prompts.get()
        if prompt is None:
            return
        if version.value != mine:
            with lock:
                mine = version.value
                model.load_state_dict(shared, strict=True)
        out.put(sample_group(model, tok, prompt, cfg, mine))


class VLLMServerRollout:
    """Sibling groups from a running vLLM server (GPU path; ``trl vllm-serve --model ...``)."""

    def __init__(self, tok: Any, cfg: PipelineConfig) -> None:
        from trl.generation.vllm_client import VLLMClient  # needs vLLM installed (GPU extra)

        self.tok, self.cfg = tok, cfg
        self.client = VLLMClient(host=cfg.vllm_host, server_port=cfg.vllm_port, connection_timeout=240.0)
        self.client.init_communicator(device=torch.cuda.current_device())

    def generate(self, prompt: str, version: int) -> RolloutGroup:
        t0 = time.perf_counter()
        res = self.client.generate(
            [prompt], n=self.cfg.num_generations, temperature=self.cfg.temperature,
            max_tokens=self.cfg.max_new_tokens, logprobs=0,
        )  # fmt: skip
        comps = [list(c) for c in res["completion_ids"]]
        lps = [[float(t[0]) for t in seq] for seq in res["logprobs"]]
        texts = [self.tok.decode(c, skip_special_tokens=True) for c in comps]
        return RolloutGroup(prompt, list(res["prompt_ids"][0]), comps, lps, texts, version,
                            gen_s=time.perf_counter() - t0)  # fmt: skip

    def push_weights(self, model: torch.nn.Module) -> None:
        """After a learner step: new weights to the server, and its prefix cache dropped."""
        self.client.update_model_params(model)
        self.client.reset_prefix_cache()
