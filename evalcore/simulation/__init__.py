"""Simulated users: an LLM plays the user of a chat task's scenarios (templates, styles, the simulators as stored),
its conversations with the task's blind systems are run and stored as people's are (run), and an audit per skill says
whether simulation ranks the systems as the lab's own people did, and how simulated users behave differently (audit)."""
