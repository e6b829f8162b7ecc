"""The last step of every tool that writes a file of the repository from its sources.

``python tools/<tool>.py`` writes the file; ``--check`` compares instead and exits 1 when the
committed file differs (the tests run the tools that way). Imported by the tools as a sibling
module (``python tools/x.py`` puts ``tools/`` first on the import path).
"""

from __future__ import annotations

import sys
from pathlib import Path


def write_or_check(target: Path, text: str, *, check: bool, what: str) -> None:
    """Write ``text`` (UTF-8) to ``target``; with ``check``, compare instead.

    Prints ``wrote <target>``, or ``<what> is up to date`` / ``<what> differs``.

    Raises:
        SystemExit: with ``check``: 0 when ``target`` holds ``text``, 1 when it differs.
    """
    if check:
        same = target.read_text(encoding="utf-8") == text
        print(f"{what} is up to date" if same else f"{what} differs")
        sys.exit(0 if same else 1)
    target.write_text(text, encoding="utf-8")
    print(f"wrote {target}")
