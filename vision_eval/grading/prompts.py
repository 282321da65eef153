"""Grading prompts: the default templates of the model-graded assertions (sandboxed Jinja2; override with
``prompt:``), the variables every template sees, and how a ``prompt:`` setting is read.

Each default asks for the reply format of promptfoo's contract for that assertion, so custom promptfoo grading
prompts keep working. ``{{ image_references }}`` renders as "Image 1, Image 2" with the pixels placed
right after each label.
"""

from __future__ import annotations

from pathlib import Path

TEXT_VARIABLES = ("input", "output", "expected_output")
"""Row variables every template sees (a missing value renders as empty text)."""
PROMPTFOO_ALIASES = {"completion": "output", "ideal": "expected_output", "question": "input", "answer": "output"}
"""promptfoo's grading-prompt variable names, so a promptfoo ``rubricPrompt`` renders unchanged."""


class TextList(list[str]):
    """A list that renders as promptfoo renders it (``{{ steps }}`` -> lines), yet iterates in templates."""

    def __init__(self, items: list[str], separator: str = "\n") -> None:
        super().__init__(items)
        self.separator = separator

    def __str__(self) -> str:
        return self.separator.join(str(i) for i in self)


def load_prompt(text: str | None, default: str) -> str:
    """The ``prompt:`` setting (a file path or the template text), else ``default``."""
    if not text:
        return default
    path = Path(text).expanduser()
    if "\n" not in text and len(text) < 1024 and path.suffix and path.is_file():
        return path.read_text(encoding="utf-8")
    return text


IMAGES = (
    "{% if image_references %}The grading concerns these images, which you can see: {{ image_references }}.\n\n"
    "{% endif %}"
)

LLM_RUBRIC = (
    "You grade an output against a rubric written by the user. The output passes when what the rubric states is "
    "true of it. You can see the images the output is about: judge what they actually show, not what the output "
    "claims.\n\n" + IMAGES + "<Input>\n{{ input }}\n</Input>\n<Output>\n{{ output }}\n</Output>\n"
    "<Rubric>\n{{ rubric }}\n</Rubric>\n\n"
    "Reply with one JSON object and nothing else: "
    '{"reason": "<why, citing the images or the output>", "pass": <true or false>, '
    '"score": <a number from 0.0 to 1.0>}'
)

GEVAL_STEPS = (
    "You design evaluation procedures. From the evaluation criteria below, write 3 or 4 short, concrete steps a "
    "grader who can see the images should follow to judge a reply. Only the steps, no commentary.\n\n"
    "Evaluation criteria:\n{{ criteria }}\n\n"
    'Reply with one JSON object and nothing else: {"steps": ["<step 1>", "<step 2>", "..."]}'
)

GEVAL_SCORE = (
    "You rate one reply on one metric. Read the criteria and follow the steps.\n\n"
    "Evaluation criteria:\n{{ criteria }}\n\nEvaluation steps:\n{% for step in steps %}- {{ step }}\n{% endfor %}\n"
    + IMAGES
    + "Source text:\n{{ input }}\n\nReply:\n{{ output }}\n\n"
    "Give a score from 0 (the reply does not meet the criteria at all) to {{ max_score }} (it fully meets them) "
    "and a short reason that refers to the images, the source and the reply but does not repeat the score.\n"
    'Reply with one JSON object and nothing else: {"score": <integer 0..{{ max_score }}>, "reason": "<why>"}'
)

FACTUALITY = (
    "You compare the facts of a submitted answer with an expert answer to the same question. The images the "
    "question is about are attached; style, grammar and punctuation do not matter.\n\n" + IMAGES + "[BEGIN DATA]\n"
    "[Question]: {{ input }}\n[Expert]: {{ expected_output }}\n[Submission]: {{ output }}\n[END DATA]\n\n"
    "Which case applies?\n"
    "(A) The submission is a subset of the expert answer and fully consistent with it.\n"
    "(B) The submission is a superset of the expert answer and fully consistent with it.\n"
    "(C) The submission contains the same details as the expert answer.\n"
    "(D) The submission and the expert answer disagree.\n"
    "(E) They differ, but the differences do not matter for factuality.\n\n"
    'Reply with one JSON object and nothing else: {"category": "<A, B, C, D or E>", "reason": "<why>"}'
)

CLOSED_QA = (
    "You check whether a submission meets a criterion. The images the task is about are attached.\n\n"
    + IMAGES
    + "[BEGIN DATA]\n[Task]: {{ input }}\n[Submission]: {{ output }}\n[Criterion]: {{ criteria }}\n[END DATA]\n\n"
    "Does the submission meet the criterion? Reason step by step first, without stating the answer up front. "
    'Then write the single character "Y" or "N" (no quotes, no punctuation) on its own line, and repeat that '
    "letter alone on a final line.\n\nReasoning:"
)

CONTEXT_RECALL = (
    "Given a context (text and images) and an answer, take each sentence of the answer and decide whether it "
    "can be attributed to the context. Think before concluding.\n\n" + IMAGES + "context: {{ context }}\n"
    "answer: {{ expected_output }}\n\n"
    "Write one numbered line per sentence of the answer: the sentence, a short justification, then "
    '"So [Attributed]" or "So [Not attributed]".\nclassification:'
)

FAITHFULNESS_STATEMENTS = (
    "Given a question and an answer, break every sentence of the answer into one or more short, self-contained "
    "statements. Write one statement per line and nothing else.\n\n"
    "question: {{ input }}\nanswer: {{ output }}\nstatements:"
)

FAITHFULNESS_VERDICTS = (
    "Consider the context (text and images) and the statements below, and decide for each statement whether the "
    "context supports it. Explain each briefly, then give the verdicts in order on a last line exactly in this "
    'form: "Final verdict for each statement in order: Yes. No. Yes." (one Yes or No per statement).\n\n'
    + IMAGES
    + "context: {{ context }}\nstatements:\n{% for s in statements %}{{ loop.index }}. {{ s }}\n{% endfor %}\n"
    "Answer:"
)

SELECT_BEST = (
    "Several candidate outputs answer the same request. Pick the one that best meets this criterion: "
    "{{ criteria }}\n\n" + IMAGES + "Request:\n{{ input }}\n\nCandidates:\n"
    '{% for candidate in candidates %}<Text index="{{ loop.index0 }}">\n{{ candidate }}\n</Text>\n{% endfor %}\n'
    "Output the index of the best candidate. You must output a single integer."
)
