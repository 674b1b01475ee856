"""Datasets: the cases an agent is evaluated on, typed with pydantic.

A dataset is a YAML or JSON file (one :class:`Dataset` object), a JSONL file (one
:class:`Case` per line), or built in Python. Every case has inputs (a prompt, optional
session history, files written into a fresh workspace, attachments), what is expected
(``expected_output`` and free-form ``expected`` properties), the checks that score it
(``evaluators``, added to the dataset's own), metadata and tags::

    name: support-bot
    evaluators:
      - {type: contains, value: "refund"}
    cases:
      - id: refund-policy
        inputs: {prompt: "Can I get my money back?"}
        expected_output: "refund"
        tags: [policy]

:func:`dataset_schema` is the JSON Schema editors validate these files with
(``tether eval schema``; the same document ships as ``dataset.schema.json``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from .errors import DatasetError

__all__ = [
    "SCHEMA_FILE",
    "Attachment",
    "Case",
    "CaseInputs",
    "Check",
    "Dataset",
    "HistoryMessage",
    "Thresholds",
    "dataset_schema",
    "load_dataset",
]

SCHEMA_FILE = Path(__file__).with_name("dataset.schema.json")
"""The dataset JSON Schema shipped with the package (equal to :func:`dataset_schema`)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HistoryMessage(_Strict):
    """One earlier message of the conversation the case continues."""

    role: str = Field(pattern="^(user|assistant|system)$")
    text: str


class Attachment(_Strict):
    """A file given to the model with the prompt: an image is attached as an image, any
    other file's text is appended to the prompt under its name. ``path`` is relative to
    the dataset file."""

    path: str
    mime_type: str | None = None


class CaseInputs(_Strict):
    """What the agent receives."""

    prompt: str = Field(min_length=1)
    history: list[HistoryMessage] = Field(default_factory=list)
    files: dict[str, str] = Field(
        default_factory=dict,
        description="Files written into the case's fresh workspace: relative path -> text.",
    )
    attachments: list[Attachment] = Field(default_factory=list)

    @field_validator("files")
    @classmethod
    def _inside_the_workspace(cls, files: dict[str, str]) -> dict[str, str]:
        for name in files:
            parts = PurePosixPath(name.replace("\\", "/")).parts
            if not name or name.startswith(("/", "\\")) or ".." in parts or ":" in name:
                raise ValueError(
                    f"the file {name!r} must be a relative path inside the workspace "
                    "(no leading /, no drive, no ..)"
                )
        return files


class Check(BaseModel):
    """One evaluator and its settings: ``{type: regex, pattern: "\\\\d+"}``. The settings
    are validated by the evaluator named by ``type`` when the eval starts."""

    model_config = ConfigDict(extra="allow")

    type: str = Field(min_length=1, description="The evaluator's registered name.")
    name: str | None = Field(
        default=None, description="How reports name this check (default: the type)."
    )

    @property
    def label(self) -> str:
        return self.name or self.type

    @property
    def settings(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class Case(_Strict):
    """One evaluated situation."""

    id: str = Field(min_length=1, pattern=r"^[^\s]+$")
    inputs: CaseInputs
    expected_output: str | None = None
    expected: dict[str, Any] = Field(
        default_factory=dict,
        description="Expected properties evaluators read (fields, relevant documents, ...).",
    )
    evaluators: list[Check] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)


class Thresholds(_Strict):
    """Levels below which ``tether eval run`` exits non-zero."""

    min_pass_rate: float | None = Field(default=None, ge=0, le=1)
    min_score: float | None = Field(default=None, ge=0, le=1)
    evaluators: dict[str, float] = Field(
        default_factory=dict, description="Minimum mean score per check label."
    )


class Dataset(_Strict):
    """A named list of cases with the checks every case gets."""

    name: str = "dataset"
    description: str = ""
    evaluators: list[Check] = Field(default_factory=list)
    cases: list[Case] = Field(default_factory=list)
    thresholds: Thresholds = Field(default_factory=Thresholds)
    base_dir: Path | None = Field(default=None, exclude=True, json_schema_extra={"hidden": True})

    @model_validator(mode="after")
    def _unique_ids(self) -> Dataset:
        seen: set[str] = set()
        for case in self.cases:
            if case.id in seen:
                raise ValueError(f"two cases have the id {case.id!r}; case ids must be unique")
            seen.add(case.id)
        return self

    def checks_for(self, case: Case) -> list[Check]:
        """The dataset's checks followed by the case's own."""
        return [*self.evaluators, *case.evaluators]

    def select(self, tags: Iterable[str] = (), ids: Iterable[str] = ()) -> Dataset:
        """The cases carrying any of ``tags`` or named in ``ids`` (all when both are empty)."""
        wanted_tags, wanted_ids = set(tags), set(ids)
        if not wanted_tags and not wanted_ids:
            return self
        cases = [c for c in self.cases if c.id in wanted_ids or wanted_tags & set(c.tags)]
        return self.model_copy(update={"cases": cases})


def dataset_schema() -> dict[str, Any]:
    """The JSON Schema of a dataset file, for editors (YAML language servers, VS Code)."""
    schema = Dataset.model_json_schema()
    schema["properties"].pop("base_dir", None)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "tether eval dataset"
    return schema


def _describe(error: ValidationError) -> str:
    lines = []
    for item in error.errors()[:10]:
        where = ".".join(str(part) for part in item["loc"]) or "(top level)"
        lines.append(f"  {where}: {item['msg']}")
    return "\n".join(lines)


def load_dataset(path: str | Path) -> Dataset:
    """Read a dataset from ``.yaml``/``.yml``/``.json`` (one dataset object) or ``.jsonl``
    (one case per line; the dataset is named after the file).

    Raises :class:`~tether_evals.errors.DatasetError` naming the file, the line or field
    and what was expected.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DatasetError(f"Cannot read the dataset {path}: {exc.strerror or exc}.") from exc
    suffix = path.suffix.lower()
    try:
        if suffix == ".jsonl":
            cases = []
            for number, line in enumerate(text.split("\n"), start=1):
                if not line.strip():
                    continue
                try:
                    cases.append(Case.model_validate(json.loads(line)))
                except (json.JSONDecodeError, ValidationError) as exc:
                    detail = _describe(exc) if isinstance(exc, ValidationError) else f"  {exc}"
                    raise DatasetError(
                        f"{path}, line {number} is not a valid case:\n{detail}\n"
                        "Each line must be one JSON case object (see `tether eval schema`)."
                    ) from exc
            return Dataset(name=path.stem, cases=cases, base_dir=path.parent)
        if suffix in (".yaml", ".yml", ".json"):
            raw = yaml.safe_load(text) if suffix != ".json" else json.loads(text)
            if not isinstance(raw, dict):
                raise DatasetError(
                    f"{path} must hold one dataset object with a `cases` list, "
                    f"not {type(raw).__name__}."
                )
            raw.setdefault("name", path.stem)
            return Dataset.model_validate({**raw, "base_dir": path.parent})
    except ValidationError as exc:
        raise DatasetError(
            f"{path} is not a valid dataset:\n{_describe(exc)}\n"
            "Check the file against the schema printed by `tether eval schema`."
        ) from exc
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        raise DatasetError(f"{path} is not valid {suffix[1:].upper()}: {exc}") from exc
    raise DatasetError(
        f"Unknown dataset format {suffix or '(no extension)'} for {path}: "
        "use .yaml, .yml, .json or .jsonl."
    )
