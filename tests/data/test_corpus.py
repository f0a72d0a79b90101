"""Corpus inputs: a MediaWiki XML dump, JSONL and Parquet exports, compressed files, directories."""

import bz2
import gzip
import hashlib
import json
import lzma
import os
import subprocess
import sys
from xml.sax.saxutils import escape

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from albert.data.corpus import ReadStats, iter_documents

# -- a small dump in the MediaWiki export format ------------------------------------------------

NAMESPACES = {-2: "Media", -1: "Special", 0: "", 1: "Talk", 2: "User", 6: "File", 10: "Template",
              14: "Category"}
ARTICLES = {
    "Ada Lovelace": """{{Short description|English mathematician}}
{{Infobox person
| name = Ada Lovelace
| birth_date = {{birth date|1815|12|10}}
| occupation = Mathematician
}}
'''Augusta Ada King, Countess of Lovelace''' was an English [[mathematician]] and writer.<ref>\
{{cite book |last=Toole |title=Ada, the Enchantress of Numbers |year=1992}}</ref> She is chiefly \
known for her work on [[Charles Babbage]]'s proposed mechanical general-purpose computer, the \
[[Analytical Engine]].<ref name="fuegi">Fuegi and Francis 2003, page 16.</ref>

== Early life ==
[[File:Ada Lovelace portrait.jpg|thumb|upright|Portrait of Ada by the painter]]
Ada was the only legitimate child of the poet [[Lord Byron]] and the reformer \
[[Anne Isabella Milbanke|Lady Byron]]. Her mother promoted her interest in mathematics and \
logic&nbsp;from an early age.<ref name="fuegi"/>

{| class="wikitable"
|-
! Year !! Event
|-
| 1815 || Born in London
|-
| 1843 || Published the notes
|}

== Work ==
In 1843 she translated an article by the Italian engineer [[Luigi Menabrea]] on the engine. \
She added her own notes, which contain what many consider to be the first computer \
program.<!-- hidden editor comment --> __NOTOC__
[[Category:English mathematicians]]
[[fr:Ada Lovelace]]
""",
    "Analytical Engine": """{{Infobox machine|name=Analytical Engine}}
The '''Analytical Engine''' was a proposed mechanical general-purpose computer designed by \
[[Charles Babbage]]. It was first described in 1837 as the successor to the \
[[Difference Engine]].<ref>Bromley 1982.</ref>

The engine incorporated an arithmetic logic unit, control flow in the form of conditional \
branching and loops, and integrated memory. Babbage was never able to complete construction of \
any of his machines because of conflicts with his chief engineer.

== See also ==
* [[Difference Engine]]
{{Computing history}}
[[Category:Mechanical computers]]
""",
    "Mathematician": """A '''mathematician''' is someone who uses an extensive knowledge of \
[[mathematics]] in their work, typically to solve mathematical problems. Mathematicians are \
concerned with numbers, data, quantity, structure, space, models and change.

Many mathematicians work in universities, where they teach and do research. Others work in \
industry on problems that arise in [[engineering]] and [[finance]].{{citation needed|date=May 2020}}
""",
}
# (title, namespace, wikitext, is a redirect)
OTHER_PAGES = [
    ("Lovelace", 0, "#REDIRECT [[Ada Lovelace]]", True),
    ("Talk:Ada Lovelace", 1,
     "== Sources ==\nThe article needs more sources about her early life and her work. ~~~~",
     False),
    ("Engine (disambiguation)", 0, "'''Engine''' may refer to:\n* [[Analytical Engine]], a "
     "design by Babbage\n* [[Difference Engine]], an earlier design\n{{disambiguation}}", False),
    ("Byron", 0, "'''Byron''' may refer to:\n* [[Lord Byron]], the poet\n* [[Lady Byron]], his "
     "wife and the mother of Ada\n{{Disambiguation|surname}}", False),
]


def _page(title, ns, text, redirect, page_id):
    redirect_tag = f'    <redirect title="{escape(text[12:-2])}" />\n' if redirect else ""
    return (f"  <page>\n    <title>{escape(title)}</title>\n    <ns>{ns}</ns>\n"
            f"    <id>{page_id}</id>\n{redirect_tag}    <revision>\n"
            f"      <id>{1000 + page_id}</id>\n      <model>wikitext</model>\n"
            f"      <format>text/x-wiki</format>\n"
            f'      <text bytes="{len(text.encode())}" xml:space="preserve">{escape(text)}</text>\n'
            "    </revision>\n  </page>\n")


def write_dump(path):
    namespaces = "\n".join(
        f'      <namespace key="{k}" case="first-letter">{v}</namespace>' if v
        else f'      <namespace key="{k}" case="first-letter" />' for k, v in NAMESPACES.items())
    head = ('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" '
            'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" version="0.11" '
            'xml:lang="en">\n  <siteinfo>\n    <sitename>Wikipedia</sitename>\n'
            f"    <dbname>enwiki</dbname>\n    <namespaces>\n{namespaces}\n    </namespaces>\n"
            "  </siteinfo>\n")
    pages = [(t, 0, x, False) for t, x in ARTICLES.items()] + OTHER_PAGES
    body = "".join(_page(*page, i) for i, page in enumerate(pages, 1))
    with bz2.open(path, "wt", encoding="utf-8") as f:
        f.write(head + body + "</mediawiki>\n")


def _cli(module, argv):
    return subprocess.run([sys.executable, "-m", f"albert.{module}", *argv],
                          capture_output=True, text=True, timeout=300)


def _digests(directory):
    return {p: hashlib.sha256((directory / p).read_bytes()).hexdigest()
            for p in sorted(os.listdir(directory))}


@pytest.mark.e2e
def test_wikipedia_dump_becomes_clean_articles(tmp_path):
    dump = tmp_path / "enwiki-test-pages-articles.xml.bz2"
    write_dump(dump)
    stats = ReadStats()
    docs = list(iter_documents([str(dump)], "auto", stats))
    assert len(docs) == 3  # the three articles, one document each
    text = "\n".join(s for d in docs for s in d)
    assert docs[0][0] == ("Augusta Ada King, Countess of Lovelace was an English mathematician "
                          "and writer.")
    assert "the reformer Lady Byron." in text  # a piped link keeps its label
    assert "mathematics and logic from an early age." in text  # &nbsp; decoded
    assert "first computer program." in text
    for debris in ("{{", "}}", "[[", "]]", "|", "Infobox", "Toole", "Fuegi", "Bromley", "thumb",
                   "Portrait of Ada", "wikitable", "Born in London", "Category", "fr:", "NOTOC",
                   "hidden editor comment", "Early life", "See also", "citation needed", "<",
                   "'''", "sources about her early life", "may refer to"):
        assert debris not in text, debris
    assert (stats.pages, stats.redirects, stats.non_article_pages,
            stats.disambiguation_pages, stats.documents) == (7, 1, 1, 2, 3)
    # Parsed in worker processes (the corpus CLI's --processes 2): the same documents in the
    # same order, and the same counts.
    in_workers = ReadStats()
    assert list(iter_documents([str(dump)], "auto", in_workers, processes=2)) == docs
    assert in_workers == stats

    # The whole recipe through the CLIs: dump -> vocabulary -> shuffled records.
    proc = _cli("train_tokenizer", ["--input", str(dump), "--vocab_size", "100",
                                    "--output_dir", str(tmp_path / "vocab"), "--processes", "2"])
    assert proc.returncode == 0, proc.stderr
    assert "from 3 documents" in proc.stdout and "2 disambiguation pages" in proc.stdout
    proc = _cli("create_pretraining_data", [
        "--input", str(dump), "--input_format", "wikipedia", "--spm_model",
        str(tmp_path / "vocab" / "spiece.model"), "--output_dir", str(tmp_path / "records"),
        "--max_seq_length", "32", "--max_predictions_per_seq", "5", "--num_shards", "2",
        "--dupe_factor", "2", "--processes", "2", "--no_progress"])
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "records" / "summary.json").read_text())
    assert summary["documents"] == 3 and summary["train_instances"] > 20
    assert summary["read"]["pages"] == 7
    assert {k: v for k, v in summary["skipped"].items() if v} == {
        "redirects": 1, "non_article_pages": 1, "disambiguation_pages": 2}


# -- JSONL and Parquet (an exported Hugging Face dataset) -----------------------------------------

SENTENCE = "The interpreter reads the file and then executes every statement in it. "


def _records():
    return [{"id": i, "title": f"Page {i}", "content": SENTENCE * (3 + i % 5) + "\n\n"
             + f"Paragraph two of page {i} has its own words. It ends here."}
            for i in range(40)]


@pytest.mark.e2e
def test_jsonl_and_parquet_give_the_same_records(sample_vocab, tmp_path):
    records = _records()
    # The same documents, with one unusable row at the same place in each file.
    lines = [json.dumps(r) for r in records]
    lines.insert(5, "{not json")
    lines.insert(9, json.dumps({"id": 99, "title": "Empty", "content": None}))
    (tmp_path / "wiki.jsonl").write_text("\n".join(lines) + "\n")
    contents = [r["content"] for r in records]
    contents.insert(5, None)
    table = pa.table({"id": list(range(len(contents))), "content": contents})
    pq.write_table(table, tmp_path / "wiki.parquet", row_group_size=7)

    summaries = {}
    for name in ("wiki.jsonl", "wiki.parquet"):
        out = tmp_path / name.replace(".", "_")
        proc = _cli("create_pretraining_data", [
            "--input", str(tmp_path / name), "--text_field", "content", "--spm_model",
            sample_vocab, "--output_dir", str(out), "--max_seq_length", "32",
            "--max_predictions_per_seq", "5", "--num_shards", "2", "--processes", "1",
            "--no_progress"])
        assert proc.returncode == 0, proc.stderr
        summaries[name] = json.loads((out / "summary.json").read_text())
    assert summaries["wiki.jsonl"]["documents"] == summaries["wiki.parquet"]["documents"] == 40
    assert summaries["wiki.jsonl"]["skipped"]["invalid_json_lines"] == 2
    assert summaries["wiki.parquet"]["skipped"]["null_texts"] == 1
    assert _digests(tmp_path / "wiki_jsonl" / "train") == _digests(
        tmp_path / "wiki_parquet" / "train")

    # The same inputs train a vocabulary.
    proc = _cli("train_tokenizer", ["--input", str(tmp_path / "wiki.parquet"), "--text_field",
                                    "content", "--vocab_size", "50", "--output_dir",
                                    str(tmp_path / "vocab"), "--processes", "1"])
    assert proc.returncode == 0, proc.stderr
    assert "from 40 documents" in proc.stdout

    # A wrong --text_field is one error line naming the file and the fields it has.
    for name, expected in (("wiki.jsonl", "has no field 'text' (it has: id, title, content)"),
                           ("wiki.parquet", "no column 'text' (columns: id, content)")):
        proc = _cli("create_pretraining_data", [
            "--input", str(tmp_path / name), "--spm_model", sample_vocab, "--output_dir",
            str(tmp_path / "bad"), "--no_progress"])
        assert proc.returncode == 2
        assert f"error: input {tmp_path / name}: " in proc.stderr and expected in proc.stderr
        assert "Traceback" not in proc.stderr


# -- compressed files, directories, globs and comma lists -----------------------------------------


@pytest.mark.e2e
def test_compressed_inputs_read_like_plain_ones(sample_corpus, sample_vocab, tmp_path):
    documents = [d for d in sample_corpus.read_text().split("\n\n") if d.strip()]
    parts = ["\n\n".join(documents[i::4]) + "\n" for i in range(4)]
    plain, packed = tmp_path / "plain", tmp_path / "packed"
    plain.mkdir()
    packed.mkdir()
    for i, text in enumerate(parts):
        (plain / f"part{i}.txt").write_text(text)
    (packed / "part0.txt").write_text(parts[0])
    with gzip.open(packed / "part1.txt.gz", "wt") as f:
        f.write(parts[1])
    with bz2.open(packed / "part2.txt.bz2", "wt") as f:
        f.write(parts[2])
    with lzma.open(packed / "part3.txt.xz", "wt") as f:
        f.write(parts[3])
    (packed / ".hidden.txt").write_text("never read\n")
    common = ["--spm_model", sample_vocab, "--max_seq_length", "32", "--max_predictions_per_seq",
              "5", "--num_shards", "2", "--validation_fraction", "0.1", "--no_progress"]
    # A comma list and a glob over plain files, one process...
    proc = _cli("create_pretraining_data", [
        "--input", f"{plain}/part0.txt,{plain}/part1.txt", f"{plain}/part[23].txt",
        "--output_dir", str(tmp_path / "a"), "--processes", "1", *common])
    assert proc.returncode == 0, proc.stderr
    # ...and the directory of compressed files, read by two reader processes at once.
    proc = _cli("create_pretraining_data", [
        "--input", str(packed), "--output_dir", str(tmp_path / "b"), "--processes", "2",
        "--readers", "2", *common])
    assert proc.returncode == 0, proc.stderr
    a = json.loads((tmp_path / "a" / "summary.json").read_text())
    b = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert len(b["input_files"]) == 4 and a["documents"] == b["documents"] == len(documents)
    for split in ("train", "validation"):
        assert _digests(tmp_path / "a" / split) == _digests(tmp_path / "b" / split)

    # A compressed file damaged halfway is named (the reader process finds it, mid-run).
    broken = tmp_path / "broken.txt.gz"
    packed_text = gzip.compress(sample_corpus.read_bytes() * 2)
    broken.write_bytes(packed_text[: len(packed_text) // 2])
    proc = _cli("create_pretraining_data", ["--input", str(broken), "--output_dir",
                                            str(tmp_path / "c"), "--processes", "2", *common])
    assert proc.returncode == 2
    assert f"error: input {broken}: cannot be read" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "c").exists()
