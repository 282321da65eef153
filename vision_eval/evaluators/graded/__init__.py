"""Model-graded evaluators: ``llm_judge`` (the Markdown judges), promptfoo's grading contracts (``llm_rubric``,
``g_eval``, ``factuality``, ``closed_qa``, ``context_recall``, ``context_faithfulness``, ``select_best``)."""
