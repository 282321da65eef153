"""Model grading: everything the model-graded evaluators share (the evaluators themselves live in
:mod:`vision_eval.evaluators`: ``output_graders``, ``context_graders``, ``select_best``, ``llm_judge``).

- :mod:`~vision_eval.grading.base`: ``GradedEvaluator``, the one base class of every model-graded evaluator
  (images, calls, samples, panels, failures as ``error`` rows).
- :mod:`~vision_eval.grading.settings`: ``GradedSettings``, the settings they all accept.
- :mod:`~vision_eval.grading.calls`: ``Asker`` (one judgement's calls through the run's scheduler) and ``Usage``.
- :mod:`~vision_eval.grading.parsers`: promptfoo's grading contracts as pure reply parsers.
- :mod:`~vision_eval.grading.prompts`: the default grading prompt templates and how ``prompt:`` is read.
- :mod:`~vision_eval.grading.outcomes`: the typed results, ``Grade`` / ``GradeFailure`` per judgement and
  ``JudgeResult`` / ``JudgeFailure`` per judge and row.
- :mod:`~vision_eval.grading.reliability`: aggregation of samples and panels, agreement and kappa (pure maths).
- :mod:`~vision_eval.grading.calibration`: dataset-level calibration against human labels, a panel's agreement.
"""
