"""``judge_agents``: panels of judge agents scoring generated images against a brief."""
