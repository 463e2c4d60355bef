"""Secrets kept out of what leaves the machine (exports, the hub, OTel): the rules
(rules.py: each a pattern and what must hold around a match) and the redactor that
applies them with the user's own patterns (redactor.py)."""
