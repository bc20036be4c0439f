"""Print one of the README's two newcomer commands, so that CI runs exactly what the README says.

``python3 .ci/readme_command.py tests`` prints the shell line of the first code
block after "Install and run the tests:"; ``sample`` the one after "Install and
run the main job". Exits 1 naming what is missing, so CI fails when the README
loses either command.
"""

import sys
from pathlib import Path

HEADINGS = {"tests": "Install and run the tests", "sample": "Install and run the main job"}


def command(readme: str, which: str) -> str:
    text = readme.split(HEADINGS[which], 1)
    if len(text) < 2:
        raise SystemExit(f"README.md: no paragraph starting {HEADINGS[which]!r}")
    block = text[1].split("```", 2)
    if len(block) < 3:
        raise SystemExit(f"README.md: no code block after {HEADINGS[which]!r}")
    lines = [ln for ln in block[1].splitlines()[1:] if ln.strip()]
    if len(lines) != 1:
        raise SystemExit(f"README.md: the block after {HEADINGS[which]!r} must hold exactly one command line")
    return lines[0]


if __name__ == "__main__":
    which = sys.argv[1] if len(sys.argv) > 1 else "tests"
    print(command((Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8"), which))
