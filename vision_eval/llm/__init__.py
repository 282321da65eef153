"""Model calls shared by every model-graded evaluator: prompt templates, judge files, reply parsing,
the engine-wide call scheduler (limits, retries, cache, cost) and the transports (litellm, direct)."""
