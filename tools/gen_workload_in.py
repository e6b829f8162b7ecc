"""Write the ``WorkloadIn`` class of app/interface/schemas.py from ``WORKLOAD_INPUTS``.

Run from the repository root: ``python tools/gen_workload_in.py [--check]``. ``--check`` exits
1 when the committed class differs from what :data:`app.model.types.WORKLOAD_INPUTS` gives
(``tests/test_workload_in.py`` runs it).

The class is written out so that type checkers see its fields (a model made at run time with
``create_model`` is a class without fields to them). Each field's annotation is the input's
``kind`` (optional); its constraints and description come from
:func:`app.interface.schemas.request_field`, which reads the same input at import time, so the
bounds and descriptions have one source and the annotations are checked against it here.
"""

from __future__ import annotations

import argparse

from written_file import write_or_check

from app.model.types import WORKLOAD_INPUTS, WorkloadInput
from app.settings import PROJECT_ROOT

TARGET = PROJECT_ROOT / "app" / "interface" / "schemas.py"
BEGIN = (
    "# --- WorkloadIn: written by tools/gen_workload_in.py from WORKLOAD_INPUTS; do not edit ---\n"
)
END = "# --- end of the written WorkloadIn ---\n"

#: Request types that are not the core's own: the CUDA-only libraries are a list of those
#: :mod:`app.model.compat` knows (``CudaLibrary``; the core holds them as a tuple of text).
REQUEST_TYPES = {"cuda_only_libraries": "list[CudaLibrary]"}

DOC = '''    """A training job. ``preset`` supplies defaults for every other field.

    Sizes: ``params`` parameters (count), ``seq_len`` tokens per sample, ``image_size`` pixels
    per side, ``micro_batch_size`` samples per GPU per step, ``dataset_gb`` GB on disk,
    ``cpu_ms_per_sample`` CPU milliseconds of data loading per sample on one core.

    One field per outside-given field of :class:`app.model.types.Workload`, described and
    bounded by its :class:`~app.model.types.InputSpec` (:func:`request_field`).
    """
'''


def annotation(given: WorkloadInput) -> str:
    """The request type of an input as source text, optional (``int | None``)."""
    if given.name in REQUEST_TYPES:
        return f"{REQUEST_TYPES[given.name]} | None"
    if given.kind is tuple:
        raise SystemExit(f"{given.name}: a tuple input needs its request type in REQUEST_TYPES")
    return f"{given.kind.__name__} | None"


def render() -> str:
    """The class between the markers (stable: the inputs' order)."""
    lines = [
        BEGIN,
        "class WorkloadIn(CountsIn):\n",
        DOC,
        "\n",
        "    model_config = REQUEST_CONFIG\n",
    ]
    lines.append("\n")
    for name, given in WORKLOAD_INPUTS.items():
        lines.append(f'    {name}: {annotation(given)} = request_field("{name}")\n')
    lines.append("\n\n" + END)  # as ruff format spaces a class from what follows
    return "".join(lines)


def replaced(text: str) -> str:
    """``text`` (the module) with the block between the markers rewritten."""
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[:start] + render() + text[end:]


def main() -> None:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args()
    new = replaced(TARGET.read_text(encoding="utf-8"))
    write_or_check(TARGET, new, check=args.check, what="WorkloadIn (from WORKLOAD_INPUTS)")


if __name__ == "__main__":
    main()
