"""Judge agents for generated images: definitions, prompts, replies, guideline documents and panel math."""
