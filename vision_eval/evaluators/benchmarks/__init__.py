"""Benchmark metrics with exact protocols (``official``, ``lmms_eval``, ``lenient``): ``pope``, ``exact_count``,
``relaxed_accuracy``, ``anls``, ``vqa_accuracy``; ``docs/benchmarks.md`` names the reference each reproduces."""
