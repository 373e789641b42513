""".pdf support comes with the `pdf` extra (pypdf, also in `dev`); without it a PDF is skipped with the
install command as the reason."""

from __future__ import annotations

import builtins
import os
from pathlib import Path
from typing import Any

import pytest

from eventrag.index.documents import UnsupportedDocument, load_file


def write_pdf(path: Path, text: str) -> Path:
    """A minimal one-page PDF with `text` in Helvetica, with a correct cross-reference table."""
    stream = f"BT /F1 18 Tf 20 60 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 400 144] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(bytes(out))
    return path


def test_pdf_text_is_read_with_the_extra(tmp_path: Path) -> None:
    try:
        import pypdf  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("pypdf is missing in CI: the dev extra installs it")
        pytest.skip("needs the pdf extra (pypdf)")
    [doc] = load_file(write_pdf(tmp_path / "mill.pdf", "Alba Reed founded the Kestrel Mill in 1881."), "docs/mill.pdf")
    assert "Kestrel Mill" in doc.text and doc.doc_id == "docs/mill.pdf"


def test_without_pypdf_the_reason_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_pypdf(name: str, *args: Any, **kw: Any) -> Any:
        if name == "pypdf":
            raise ImportError("No module named 'pypdf'")
        return real_import(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", no_pypdf)
    with pytest.raises(UnsupportedDocument, match=r"eventfold\[pdf\]"):
        load_file(write_pdf(tmp_path / "x.pdf", "Hello"))
