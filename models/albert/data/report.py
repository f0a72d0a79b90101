"""What create_pretraining_data counted and says: the running totals and warnings, the reason
when no instance was made, summary.json, and the closing line."""

from __future__ import annotations

import dataclasses
import logging
import os

from albert.data.chunks import ChunkOutput
from albert.data.corpus import InputSkips, ReadStats

# The tool these lines are of (they are logged as its own).
logger = logging.getLogger("albert.create_pretraining_data")


@dataclasses.dataclass
class Totals:
    stats: ReadStats = dataclasses.field(default_factory=ReadStats)
    tokens: int = 0
    masked: int = 0
    swapped: int = 0
    short_documents: int = 0
    chunks: int = 0
    warnings: list = dataclasses.field(default_factory=list)
    inputs: InputSkips = dataclasses.field(default_factory=InputSkips)

    def add(self, out: ChunkOutput) -> None:
        self.stats.add(out.stats)
        self.tokens += out.tokens
        self.masked += out.masked
        self.swapped += out.swapped
        self.short_documents += out.short_documents
        self.chunks += 1

    def add_file(self, path: str, stats: ReadStats) -> None:
        self.stats.add(stats)
        if stats.lines and stats.bad_lines == stats.lines:
            self.warn(f"input {path}: every one of its {stats.lines} lines was skipped as invalid "
                      "UTF-8 (is it in another encoding? convert it, e.g. iconv -t utf-8)")

    def warn(self, message: str) -> None:
        logger.warning("warning: %s", message)
        self.warnings.append(message)


def no_instances_message(totals: Totals) -> str:
    s = totals.stats
    if s.lines and s.bad_lines == s.lines:
        return (f"no instances: every line of the input ({s.lines} lines) was skipped as invalid "
                "UTF-8; convert the files to UTF-8 (e.g. iconv -f latin1 -t utf-8)")
    skipped = {k: v for k, v in skipped_counts(totals).items() if v}
    detail = f" (skipped: {', '.join(f'{v} {k}' for k, v in skipped.items())})" if skipped else ""
    if s.documents == 0:
        return f"no instances: the input has 0 documents{detail}"
    return (f"no instances: the input has {s.documents} documents and none was long enough for "
            f"a sentence pair{detail}")


def skipped_counts(totals: Totals) -> dict:
    s = totals.stats
    return {
        "invalid_utf8_lines": s.bad_lines,
        "invalid_json_lines": s.bad_json_lines,
        "null_texts": s.null_texts,
        "redirects": s.redirects,
        "non_article_pages": s.non_article_pages,
        "disambiguation_pages": s.disambiguation_pages,
        "empty_documents": s.empty_documents,
        "sentences_with_holes": s.sentences_with_holes,
        "sentences_with_markup": s.sentences_with_markup,
        "short_documents": totals.short_documents,
        **totals.inputs.as_dict(),
    }


def summary(totals: Totals, records: dict, files: list[str], out: str, elapsed: float,
            gzip: bool, settings: dict) -> dict:
    """summary.json, less the vocabulary: `records` is {split: [records per shard]}, `settings`
    the flags as given."""
    train, val = sum(records["train"]), sum(records["validation"])
    instances = train + val
    ext = ".tfrecord.gz" if gzip else ".tfrecord"

    def names(split):
        n = len(records[split])
        return [os.path.join(out, split, f"part-{j:05d}-of-{n:05d}{ext}") for j in range(n)]

    s = totals.stats
    return {
        "instances": instances,
        "train_instances": train,
        "validation_instances": val,
        "tokens": totals.tokens,
        "masked_tokens": totals.masked,
        "swapped_fraction": totals.swapped / instances,
        "documents": s.documents,
        "short_documents_skipped": totals.short_documents,
        "invalid_utf8_lines_skipped": s.bad_lines,
        "skipped": skipped_counts(totals),
        "read": {"files": s.files, "lines": s.lines, "pages": s.pages},
        "input_files": files,
        "seconds": round(elapsed, 3),
        "instances_per_second": round(instances / max(elapsed, 1e-9), 1),
        "train_files": names("train"),
        "validation_files": names("validation"),
        "records_per_train_file": records["train"],
        "records_per_validation_file": records["validation"],
        "shuffle": "global: every record in a random shard, every shard in random order",
        "warnings": totals.warnings,
        "settings": settings,
    }


def closing_line(summary: dict, output_dir: str) -> str:
    skipped = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in summary["skipped"].items() if v)
    return (f"wrote {summary['instances']} instances ({summary['instances_per_second']:.0f}/s, "
            f"{summary['masked_tokens']} masked tokens) from {summary['documents']} documents to "
            f"{output_dir}; skipped {skipped or 'nothing'}")
