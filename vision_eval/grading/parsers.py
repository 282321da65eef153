"""The grading contracts of the model-graded assertions: pure functions from a grader reply to a verdict.

They follow promptfoo's (0.123.1) reading of a grader reply, so a reply a promptfoo grader gives means the same
here, except that a reply that cannot be read raises :class:`GraderError` (the row becomes ``error``, never a
silent fail). JSON is found by the one shared extractor (:func:`vision_eval.llm.replies.find_json_object`:
fenced blocks first, comments and trailing commas tolerated); where it finds none, a brace span is read as
promptfoo reads it, as a YAML flow mapping (:func:`yaml_objects`), so a Python dict reply ``{'pass': True}``
counts. Every difference from promptfoo that remains is listed in ``docs/judges.md``.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

import yaml

from vision_eval.llm.replies import find_json_object

TRUE_WORDS = ("true", "yes", "pass", "y")
FACTUALITY_CATEGORIES = ("A", "B", "C", "D", "E")
FACTUALITY_ALIASES = {"subset": "A", "superset": "B", "agree": "C", "disagree": "D", "differButFactual": "E"}
"""promptfoo's ``options.factuality`` names for the categories."""
GEVAL_MAX = 10


class GraderError(ValueError):
    """A grader reply that does not follow the contract; the row is ``error`` with the reply kept."""


def reply_text(reply: Any) -> str:
    """The text of a reply; a reply whose content is not text (a JSON object from an OpenAI-compatible server)
    is a grader error, as promptfoo refuses it for every type but ``llm_rubric``."""
    if isinstance(reply, str):
        return reply
    if reply is None:
        return ""
    kinds = {dict: "an object", list: "an array", bool: "a boolean", int: "a number", float: "a number"}
    raise GraderError(f"the grader replied with {kinds.get(type(reply), type(reply).__name__)}, not text")


# ---------------------------------------------------------------- promptfoo's reading of a brace span


class _CoreLoader(yaml.SafeLoader):
    """YAML with the core schema of YAML 1.2 (as js-yaml reads it): ``true``/``True``/``TRUE`` are booleans,
    ``null``/``~`` null, ``1e5`` a float, ``017`` the integer 17, ``yes``, ``on`` and ``None`` strings."""


_CoreLoader.yaml_implicit_resolvers = {}
for _tag, _pattern, _first in [
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", "~nN"),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN)$",
        "-+0123456789.",
    ),
]:
    _CoreLoader.add_implicit_resolver(_tag, re.compile(_pattern), list(_first))
_CoreLoader.add_implicit_resolver("tag:yaml.org,2002:null", re.compile(r"^$"), [""])


def _core_int(loader: yaml.SafeLoader, node: yaml.Node) -> int:
    text = str(loader.construct_scalar(node))  # type: ignore[arg-type]
    if text.startswith("0o"):
        return int(text[2:], 8)
    return int(text, 16) if text.startswith("0x") else int(text, 10)


def _core_float(loader: yaml.SafeLoader, node: yaml.Node) -> float:
    text = str(loader.construct_scalar(node)).lower()  # type: ignore[arg-type]
    if text.endswith(".inf"):
        return -math.inf if text.startswith("-") else math.inf
    return math.nan if text == ".nan" else float(text)


_CoreLoader.add_constructor("tag:yaml.org,2002:int", _core_int)
_CoreLoader.add_constructor("tag:yaml.org,2002:float", _core_float)
_NOT_A_LETTER = re.compile(r"[^a-zA-Z]|^$")


def _escaped(line: str, index: int) -> bool:
    backslashes = len(line[:index]) - len(line[:index].rstrip("\\"))
    return backslashes % 2 == 1


def _hash_comments(text: str) -> str:
    """``//`` comments outside quotes become ``#`` (one per two slashes), as promptfoo rewrites them; a ``//`` in
    a token holding ``://`` (a URL) is kept."""
    lines = []
    for line in text.split("\n"):
        state, out, i = "normal", "", 0
        while i < len(line):
            char, after, before = line[i], line[i + 1 : i + 2], line[i - 1 : i] if i else ""
            if state == "normal":
                if char == "'" and _NOT_A_LETTER.match(before):
                    state = "single"
                elif char == '"':
                    state = "double"
                elif char == "/" and after == "/":
                    start = max(line.rfind(" ", 0, i), line.rfind("\t", 0, i)) + 1
                    if "://" not in line[start : i + 2]:
                        slashes = len(line[i:]) - len(line[i:].lstrip("/"))
                        out += "#" * (slashes // 2) + line[i + slashes :]
                        break
            elif state == "single":
                if char == "'" and not _escaped(line, i) and _NOT_A_LETTER.match(after):
                    state = "normal"
            elif char == '"' and not _escaped(line, i):
                state = "normal"
            out += char
            i += 1
        lines.append(out)
    return "\n".join(lines)


MAX_SPAN = 100_000


def yaml_objects(text: str) -> list[dict[str, Any]]:
    """The objects promptfoo finds in a reply (``extractJsonObjects``): from each ``{``, the span up to where the
    braces balance (counted without regard to strings; closing braces are added when the text ends first), read
    as a YAML flow mapping; a span that reads as an object is taken and the search goes on after it."""
    found: list[dict[str, Any]] = []
    i = 0
    while i < len(text):
        if text[i] != "{":
            i += 1
            continue
        depth, j, end = 1, i + 1, min(i + MAX_SPAN, len(text))
        nxt = i + 1
        while j < end and depth > 0:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
            if depth == 0 or j == end:
                try:
                    value = yaml.load(_hash_comments(text[i:j] + "}" * depth), Loader=_CoreLoader)
                except (yaml.YAMLError, ValueError, OverflowError):
                    value = None
                if isinstance(value, dict):
                    found.append(value)
                    nxt = j
                    break
        i = nxt
    return found


def grader_object(reply: Any, required_key: str | None = None) -> dict[str, Any] | None:
    """The JSON object of a grader reply (a reply that is an object already is taken as it is): the shared JSON
    extractor first, then promptfoo's YAML reading of brace spans."""
    if isinstance(reply, dict):
        return reply
    text = reply_text(reply)
    found = find_json_object(text, required_key=required_key)
    if found is not None:
        return found
    objects = yaml_objects(text)
    if required_key is not None:
        objects = [o for o in objects if required_key in o] or objects
    return objects[0] if objects else None


def number(value: Any) -> float | None:
    """A finite number from a JSON value (numeric strings too), else ``None``; booleans are not numbers."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        result = float(value)
    elif isinstance(value, str) and value.strip():
        try:
            result = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return result if math.isfinite(result) else None


@dataclass
class RubricVerdict:
    """An ``llm_rubric`` reply."""

    passed: bool
    score: float
    reason: str


def parse_rubric(reply: Any) -> RubricVerdict:
    """``{"reason", "pass", "score"}`` (a reply that is a JSON object already counts): ``pass`` missing or null ->
    true, a string is true only for true/yes/pass/y (any case); ``score`` missing, null or not numeric -> 1 if pass
    else 0."""
    obj = grader_object(reply)
    if obj is None:
        raise GraderError("grader reply holds no JSON object")
    raw_pass = obj.get("pass")
    if raw_pass is None:
        passed = True
    else:
        passed = raw_pass if isinstance(raw_pass, bool) else str(raw_pass).lower() in TRUE_WORDS
    score = number(obj.get("score"))
    reason = obj.get("reason", "")
    return RubricVerdict(passed, float(passed) if score is None else score, reason if isinstance(reason, str) else "")


def parse_steps(reply: Any) -> list[str]:
    """G-Eval step 1: ``{"steps": [...]}``, a non-empty list of non-blank strings (anything else is a grader
    error, as in promptfoo)."""
    obj = find_json_object(reply_text(reply), required_key="steps")
    steps = obj.get("steps") if obj is not None else None
    if not isinstance(steps, list) or not steps:
        raise GraderError('grader reply holds no {"steps": [...]} list')
    bad = [step for step in steps if not isinstance(step, str) or not step.strip()]
    if bad:
        raise GraderError(f"evaluation steps must be non-blank strings, got {json.dumps(bad[0])[:80]}")
    return [step.strip() for step in steps]


def parse_geval(reply: Any, max_score: int = GEVAL_MAX) -> tuple[float, str]:
    """G-Eval step 2: ``{"score": 0..max, "reason"}``; out of range or a blank reason is a grader error."""
    obj = find_json_object(reply_text(reply), required_key="score")
    if obj is None:
        raise GraderError("grader reply holds no JSON object")
    score = number(obj.get("score"))
    if score is None:
        raise GraderError(f"score is not a number: {obj.get('score')!r}")
    if not 0 <= score <= max_score:
        raise GraderError(f"score {score:g} is outside 0..{max_score}")
    reason = obj.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise GraderError("the reason is blank")
    return score, reason


_SCORE_PREFIX = re.compile(r"""["']?score["']?\s*:\s*["']?\s*$""", re.I)


def weighted_score(logprobs: Any, max_score: int = GEVAL_MAX) -> tuple[float, dict[str, float]] | None:
    """The probability-weighted mean over the allowed scores 0..max at the score token, from OpenAI-shaped
    ``logprobs.content`` (each token with ``top_logprobs``); ``None`` when the score token is not found."""
    if not isinstance(logprobs, list):
        return None
    prefix = ""
    for entry in logprobs:
        token = str(entry.get("token", "")) if isinstance(entry, dict) else ""
        if token.strip().isdigit() and _SCORE_PREFIX.search(prefix):
            probs: dict[str, float] = {}
            for top in entry.get("top_logprobs") or [{"token": token, "logprob": entry.get("logprob", 0.0)}]:
                candidate = str(top.get("token", "")).strip()
                if candidate.isdigit() and 0 <= int(candidate) <= max_score:
                    key = str(int(candidate))
                    probs[key] = probs.get(key, 0.0) + math.exp(float(top.get("logprob", -math.inf)))
            total = sum(probs.values())
            if total <= 0:
                return None
            mean = sum(int(k) * p for k, p in probs.items()) / total
            return mean, {k: p / total for k, p in sorted(probs.items(), key=lambda kv: int(kv[0]))}
        prefix += token
    return None


_LEGACY_OPTION = re.compile(r"\(?([a-eA-E])\)")


def parse_factuality(reply: Any) -> tuple[str, str]:
    """``{"category": "A".."E", "reason"}`` -> (category, reason): the category, spaces trimmed, must be one letter
    A-E in any case (``"(B)"`` is a grader error, as promptfoo fails it); without a category string, the legacy
    ``(A) ...`` form anywhere in the reply."""
    text = reply_text(reply)
    obj = grader_object(text, required_key="category")
    category = obj.get("category") if obj is not None else None
    if isinstance(category, str) and category:
        letter = category.strip().upper()
        if letter not in FACTUALITY_CATEGORIES:
            raise GraderError(f"category {category!r} is not one of A-E")
        reason = obj.get("reason", "")  # type: ignore[union-attr]
        return letter, reason.strip() if isinstance(reason, str) else str(reason)
    match = _LEGACY_OPTION.search(text)  # promptfoo's legacy pattern, unanchored
    if match is None:
        raise GraderError("grader reply names no category A-E")
    return match.group(1).upper(), text[match.end() :].strip()


def parse_closed_qa(reply: Any) -> bool:
    """The last non-space character: ``Y`` passes, ``N`` fails, anything else is a grader error."""
    stripped = reply_text(reply).rstrip()
    if stripped.endswith("Y"):
        return True
    if stripped.endswith("N"):
        return False
    raise GraderError(f"the reply does not end with Y or N (ends with {stripped[-20:]!r})")


ATTRIBUTED = "[attributed]"
NOT_ATTRIBUTED = "[not attributed]"


def parse_recall(reply: Any) -> tuple[int, int]:
    """Context recall -> (attributed, classified): the reply's lines that carry a mark (``[Attributed]`` or
    ``[Not Attributed]``, any case) are the classified sentences; a line is attributed when it carries
    ``[Attributed]`` and not ``[Not Attributed]``. No marked line is a grader error."""
    marked = [line.lower() for line in reply_text(reply).split("\n") if line.strip()]
    marked = [line for line in marked if ATTRIBUTED in line or NOT_ATTRIBUTED in line]
    if not marked:
        raise GraderError("the reply classifies no sentence as [Attributed] or [Not Attributed]")
    return sum(ATTRIBUTED in line and NOT_ATTRIBUTED not in line for line in marked), len(marked)


def parse_statements(reply: Any) -> list[str]:
    """Faithfulness step 1: one statement per non-blank line (as promptfoo splits it)."""
    statements = [line.strip() for line in reply_text(reply).splitlines() if line.strip()]
    if not statements:
        raise GraderError("the grader extracted no statements")
    return statements


FINAL_VERDICT = "final verdict for each statement in order:"
_YES_OR_NO = re.compile(r"\b(?:yes|no)\b")


def parse_faithfulness(reply: Any, statements: int) -> tuple[int, int]:
    """Faithfulness step 2 -> (unsupported, verdicts). After "Final verdict for each statement in order:" the
    '.'-separated verdicts each say yes or no (else a grader error), one without "yes" is unsupported; otherwise
    "verdict: no" / "verdict: yes" are counted. Statements left without a verdict count as unsupported."""
    lowered = reply_text(reply).lower().strip()
    if FINAL_VERDICT in lowered:
        tail = lowered[lowered.index(FINAL_VERDICT) + len(FINAL_VERDICT) :]
        verdicts = [v for v in tail.split(".") if v.strip()]
        if not verdicts:
            raise GraderError("the final verdict line lists no verdicts")
        unclear = [v.strip() for v in verdicts if not _YES_OR_NO.search(v)]
        if unclear:
            raise GraderError(f"a final verdict is neither yes nor no: {unclear[0][:80]!r}")
        no, given = sum("yes" not in v for v in verdicts), len(verdicts)
    else:
        no, yes = lowered.count("verdict: no"), lowered.count("verdict: yes")
        if no + yes == 0:
            raise GraderError("the reply gives no verdict (Yes/No) for any statement")
        given = no + yes
    return no + max(0, statements - given), given


_FIRST_INT = re.compile(r"\d+")


def parse_select_best(reply: Any, candidates: int) -> int:
    """The first integer in the reply is the (0-based) index of the best candidate."""
    match = _FIRST_INT.search(reply_text(reply).strip())
    if match is None:
        raise GraderError("the reply holds no integer")
    index = int(match.group(0))
    if not 0 <= index < candidates:
        raise GraderError(f"index {index} is outside 0..{candidates - 1}")
    return index
