"""Generation: a model evaluated by its URL (templates, the items sent, the run that stores the replies)."""
