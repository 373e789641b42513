"""The optional extras of the package: which extra provides a module, and what to run to install it.

A command that reaches code needing an extra that is not installed says so at once, naming the
extra and the install command, instead of a `ModuleNotFoundError` traceback.
"""

from __future__ import annotations

# top-level module -> the extra that installs it (pyproject.toml [project.optional-dependencies]);
# transformers and tokenizers are core (through sentence-transformers), so they are not listed
EXTRA_OF_MODULE: dict[str, str] = {
    "trl": "train", "peft": "train", "accelerate": "train", "datasets": "train", "numba": "train",
    "gguf": "train", "sentencepiece": "train", "deepspeed": "train", "tensorboard": "train",
    "llama_cpp": "local",
    "vllm": "gpu",
    "pypdf": "pdf",
    "uvicorn": "server", "fastapi": "server", "sse_starlette": "server", "starlette_context": "server",
}
# the repository's installer covers these extras as well
_INSTALL_SCRIPT = {"train": "bash scripts/install.sh dev", "local": "bash scripts/install.sh"}


def install_hint(extra: str) -> str:
    """``pip install 'eventfold[train]'`` (or ``bash scripts/install.sh dev`` from a clone)."""
    script = _INSTALL_SCRIPT.get(extra)
    return f"pip install 'eventfold[{extra}]'" + (f" (or `{script}` from a clone)" if script else "")


class MissingExtra(ImportError):
    """An optional extra is not installed; the message names the module, the extra and the command."""

    def __init__(self, module: str, extra: str, what: str = "") -> None:
        self.module, self.extra = module, extra
        need = f"{what} needs" if what else "this needs"
        super().__init__(f"{need} the '{extra}' extra (Python module '{module}' is not installed): "
                         f"{install_hint(extra)}")


def missing_extra(exc: BaseException, what: str = "") -> MissingExtra | None:
    """The `MissingExtra` behind `exc` (a `ModuleNotFoundError` of an extra's module, itself or as the
    cause of another error), or None when `exc` is not about an extra."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, MissingExtra):
            return seen
        if isinstance(seen, ModuleNotFoundError) and seen.name:
            top = seen.name.split(".")[0]
            if top in EXTRA_OF_MODULE:
                return MissingExtra(top, EXTRA_OF_MODULE[top], what)
        seen = seen.__cause__ or seen.__context__
    return None
