"""Text that came from outside (documents, file names, servers, users) made safe for where it goes.

Every layer uses these helpers instead of its own variant:

- `terminal_safe(text)`: the one filter for everything that reaches a terminal: C0 and C1 control
  characters (ESC, CSI ``\x9b``, OSC, BEL, ...) and bidi overrides are made visible (``␛``, ``\x9b``,
  ``<U+202E>``), so a document, a file name or a model cannot clear the screen, set the title, write
  the clipboard (OSC 52) or reorder what is shown. Newlines and tabs are kept.
- `console_escape(text)`: for anything printed through rich markup (messages, table cells): the text
  made terminal-safe, then a ``[bold]`` or ``[/x]`` in it is shown as written, never parsed as markup.
- `neutralize_control_tokens(text)`: for every string that reaches a model's prompt: chat-template
  control tokens (``<|im_end|>``, ``<|start_header_id|>``, ``<tool_call>``, ``[INST]``, ``</s>``, ...)
  are rewritten with look-alike brackets, so a tokenizer that parses special tokens in the rendered
  prompt sees plain text instead of a turn boundary.
- `mask_secrets(text, secrets)` / `mask_url(url)`: for every log line and error message: credentials
  in URLs (``https://user:pass@host``), bearer tokens, ``api_key=...`` pairs, ``sk-...`` keys and any
  explicitly known secret values become ``***``.
- `strip_nul(text)`: NUL characters removed (SQLite, Neo4j and tokenizers treat them badly).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

MASK = "***"

# --- console ----------------------------------------------------------------------------------------

# C0 except tab and newline, DEL, C1, and the bidi embedding/override/isolate controls
_TERMINAL_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _visible(m: re.Match[str]) -> str:
    code = ord(m.group())
    if code == 0:
        return ""  # NUL: dropped everywhere (see strip_nul)
    if code < 0x20:
        return chr(0x2400 + code)  # control pictures: ␛ ␇ ␍ ..., one cell like any letter
    if code == 0x7F:
        return "\u2421"  # ␡
    if code <= 0x9F:
        return f"\\x{code:02x}"
    return f"<U+{code:04X}>"


def terminal_safe(text: object) -> str:
    """`text` with every control character a terminal would act on made visible (NUL removed, a
    CRLF line end kept as a newline); tabs and newlines unchanged; otherwise the text as written."""
    s = str(text)
    if not _TERMINAL_CONTROL.search(s):
        return s
    return _TERMINAL_CONTROL.sub(_visible, s.replace("\r\n", "\n"))


def console_escape(text: object) -> str:
    """`text` as a literal for rich markup: terminal-safe (`terminal_safe`), then every ``[`` that
    could open a tag escaped (and a trailing backslash doubled, so a closing tag written after it
    still closes). Printed inside markup (``f"[dim]{console_escape(x)}[/]"``) the console shows
    `text` as written, with its control characters visible."""
    from rich.markup import escape

    return escape(terminal_safe(text))


# --- prompts ----------------------------------------------------------------------------------------

# <|anything|> (ChatML, Llama 3, Phi, fim ...) and DeepSeek's full-width bars <｜...｜>
_PIPE_TOKEN = re.compile(r"<([|\uff5c])([^<>\n]{0,64}?)([|\uff5c])>")
# named tokens some templates treat as special (Qwen tools, Gemma turns, Llama 2 / Mistral, think tags)
_NAMED_TOKEN = re.compile(
    r"<(/?)(s|bos|eos|pad|unk|mask|start_of_turn|end_of_turn|start_of_image|end_of_image|tool_call|"
    r"tool_response|tools|think|SYS|\|?endoftext\|?)>",
    re.IGNORECASE,
)
_SYS_TOKEN = re.compile(r"<<(/?)SYS>>", re.IGNORECASE)
_INST_TOKEN = re.compile(r"\[(/?)(INST|AVAILABLE_TOOLS|TOOL_CALLS|TOOL_RESULTS|SYSTEM_PROMPT)\]", re.IGNORECASE)
# look-alikes: single angle quotation marks and full-width square brackets
_LT, _GT = "\u2039", "\u203a"


def neutralize_control_tokens(text: str) -> str:
    """`text` with every chat control token made inert (and NUL removed); other text unchanged.

    ``<|im_end|>`` becomes ``‹|im_end|›``: the same to a reader, not a token to a tokenizer."""
    if not text:
        return text
    s = strip_nul(text)
    if "<" not in s and "[" not in s:
        return s
    s = _PIPE_TOKEN.sub(lambda m: f"{_LT}{m.group(1)}{m.group(2)}{m.group(3)}{_GT}", s)
    s = _SYS_TOKEN.sub(lambda m: f"{_LT}{_LT}{m.group(1)}SYS{_GT}{_GT}", s)
    s = _NAMED_TOKEN.sub(lambda m: f"{_LT}{m.group(1)}{m.group(2)}{_GT}", s)
    return _INST_TOKEN.sub(lambda m: f"\uff3b{m.group(1)}{m.group(2)}\uff3d", s)


# --- secrets ----------------------------------------------------------------------------------------

_URL_CREDENTIALS = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<cred>[^/\s@:'\"]*(?::[^/\s@'\"]*)?)@")
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]{8,}")
_KEY_VALUE = re.compile(
    r"(?i)\b(api[_-]?key|apikey|access[_-]?token|auth[_-]?token|token|password|passwd|secret)"
    r"(['\"]?\s*[=:]\s*['\"]?)(?!\*\*\*)([^\s'\",&;}]{4,})"
)
_KEY_SHAPES = re.compile(r"\b(sk|pk|rk|hf|ghp|gho|xox[abp])[-_][A-Za-z0-9_\-]{12,}\b")
_SECRET_STR_REPR = re.compile(r"SecretStr\('([^']*)'\)")


def mask_url(url: str | None) -> str:
    """The URL without its ``user:password@`` part (``https://***@host/v1``); None -> ''."""
    if not url:
        return ""
    return _URL_CREDENTIALS.sub(lambda m: f"{m.group('scheme')}{MASK}@", str(url))


def mask_secrets(text: object, secrets: Iterable[str | None] = ()) -> str:
    """`text` with credentials masked: known `secrets` (exact values, >= 4 characters), URL
    credentials, bearer/basic tokens, ``api_key=...``/``password: ...`` pairs and ``sk-...`` style keys."""
    s = str(text)
    for secret in sorted({x for x in secrets if x and len(x) >= 4}, key=len, reverse=True):
        s = s.replace(secret, MASK)
    s = mask_url(s)
    s = _BEARER.sub(lambda m: f"{m.group(1)} {MASK}", s)
    s = _KEY_VALUE.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", s)
    s = _KEY_SHAPES.sub(MASK, s)
    return _SECRET_STR_REPR.sub(f"SecretStr('{MASK}')", s)


class SecretMaskingFilter(logging.Filter):
    """A logging filter that masks secrets in the final message (args merged) and in the traceback text."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        super().__init__()
        self.secrets = [s for s in secrets if s]

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: leave it for logging to report
            return True
        record.msg = mask_secrets(message, self.secrets)
        record.args = None
        if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
            record.exc_text = mask_secrets(logging.Formatter().formatException(record.exc_info), self.secrets)
        elif record.exc_text:
            record.exc_text = mask_secrets(record.exc_text, self.secrets)
        return True


def install_log_masking(secrets: Iterable[str | None] = (), logger: logging.Logger | None = None) -> SecretMaskingFilter:
    """Mask secrets in every record handled by `logger`'s handlers (default: the root logger's).

    The filter goes on the handlers (a logger's own filters do not see records of its children);
    call again after adding handlers. Returns the filter (idempotent: one per handler)."""
    target = logger or logging.getLogger()
    flt = SecretMaskingFilter(secrets)
    for handler in target.handlers:
        for old in [f for f in handler.filters if isinstance(f, SecretMaskingFilter)]:
            handler.removeFilter(old)
        handler.addFilter(flt)
    return flt


# --- NUL --------------------------------------------------------------------------------------------


def strip_nul(text: str) -> str:
    return text.replace("\x00", "") if "\x00" in text else text
