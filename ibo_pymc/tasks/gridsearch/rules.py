"""The choice rules of the grid task's likelihood by name (what ``published`` takes), for the modules that read
them: the choice rule itself (:mod:`.choice`, whose docstring says what each is) and the surrogates (the published
GP's first-observation variance depends on the rule)."""

from __future__ import annotations

#: the choice rules: ``published`` value -> the kernel's code
RULES = {False: 0, "plain": 0, True: 1, "wu2020": 1, "wu2018": 2, "wu2018-line": 3}


def rule_code(published) -> int:
    """The kernel's code of a ``published`` value (:data:`RULES`)."""
    try:
        return RULES[published]
    except (KeyError, TypeError):
        names = ", ".join(repr(k) for k in RULES if isinstance(k, str))
        raise ValueError(f"unknown choice rule {published!r}; expected False, True or one of {names}") from None
