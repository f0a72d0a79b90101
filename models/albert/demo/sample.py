"""The bundled English corpus: CPython's own help texts, so no download is ever needed.

    python -m albert.demo.sample --output corpus.txt                  # pydoc topics, ~0.45 MB
    python -m albert.demo.sample --output big.txt --source docstrings --max_mb 5

`pydoc`: the 79 help topics every CPython ships (`pydoc_data.topics`), one document per topic.
`docstrings`: docstrings of the standard library's modules, classes and functions (several MB of
English prose), one document per module; used by the data-generation benchmark.
`pydoc+facts`: the help topics, then `albert.demo.facts`' registry of project facts said in
varied wording (the demo's pretraining text; its question set asks in that language).
Written in BERT's layout: one sentence per line, documents separated by blank lines.
"""

from __future__ import annotations

import ast
import os
import re
import sys
import sysconfig
from collections.abc import Iterator
from pydoc_data.topics import topics

from albert.cli import flags
from albert.data.text import split_sentences
from albert.demo.facts import registry_documents

_RULE = re.compile(r"^[*=\-~^]{3,}$")


def _paragraphs(text: str) -> list[str]:
    """Unwrap hard-wrapped text into paragraphs; drop heading underlines and code-ish lines."""
    paragraphs, current = [], []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or _RULE.match(stripped) or stripped.startswith(">>>"):
            if current:
                paragraphs.append(" ".join(current))
                current = []
            continue
        current.append(stripped)
    if current:
        paragraphs.append(" ".join(current))
    # Prose only: a paragraph of a few words is a heading or a signature.
    return [p for p in paragraphs if len(p.split()) >= 6]


def _document(text: str) -> list[str]:
    return [s for p in _paragraphs(text) for s in split_sentences(p)]


def pydoc_documents() -> Iterator[list[str]]:
    for name in sorted(topics):
        doc = _document(topics[name])
        if doc:
            yield doc


def docstring_documents() -> Iterator[list[str]]:
    stdlib = sysconfig.get_paths()["stdlib"]
    for root, dirs, files in os.walk(stdlib):
        dirs[:] = sorted(d for d in dirs if d not in ("test", "tests", "site-packages", "idlelib"))
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            try:
                with open(os.path.join(root, name), encoding="utf-8") as f:
                    tree = ast.parse(f.read())
            except (SyntaxError, UnicodeDecodeError, ValueError):
                continue
            texts = [ast.get_docstring(node) or "" for node in ast.walk(tree)
                     if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)]
            doc = [s for t in texts if t for s in _document(t)]
            if doc:
                yield doc


def pydoc_and_fact_documents() -> Iterator[list[str]]:
    """The help topics, then albert.demo.facts' registry: the demo's pretraining text."""
    yield from pydoc_documents()
    yield from registry_documents()


def write_corpus(path: str, source: str = "pydoc", max_bytes: int | None = None) -> int:
    """Write the corpus; returns its size in bytes."""
    documents = {"pydoc": pydoc_documents, "docstrings": docstring_documents,
                 "pydoc+facts": pydoc_and_fact_documents}[source]()
    written = 0
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for doc in documents:
            block = "\n".join(doc) + "\n\n"
            f.write(block)
            written += len(block.encode())
            if max_bytes and written >= max_bytes:
                break
    return written


def build_parser() -> flags.Parser:
    p = flags.Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("--output", required=True, help="the corpus file to write")
    p.add_argument("--source", choices=("pydoc", "docstrings", "pydoc+facts"), default="pydoc",
                   help="pydoc: the help topics; docstrings: the standard library's docstrings; "
                        "pydoc+facts: the help topics and the demo's registry")
    p.add_argument("--max_mb", type=float, default=None,
                   help="stop after this many MB (default: the whole source)")
    return p


def main(argv=None):
    args = build_parser().parse_args(argv)
    size = write_corpus(args.output, args.source,
                        int(args.max_mb * 1e6) if args.max_mb else None)
    print(f"wrote {size / 1e6:.2f} MB to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
