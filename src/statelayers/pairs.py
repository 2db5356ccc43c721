"""Settings per (architecture, task) pair: which config keys name a pair, and what they set.

``training.overrides``, ``training.pair_budgets``, ``model.options`` and ``sweep.pairs``
take keys of an architecture, its family, or either on one task; the study's settings
(:mod:`statelayers.settings`) and the sweep's grid (:mod:`statelayers.sweep`) resolve them
alike, here.
"""

from __future__ import annotations

from collections.abc import Mapping

from statelayers.models.registry import base_arch


def pair_keys(arch: str, task: str) -> tuple[str, ...]:
    """The keys that may set something for ``arch`` on ``task``, least specific first: its
    family, itself, its family on the task, itself on the task. A setting for one (architecture,
    task) pair beats one for the architecture, and an architecture's own beats its family's
    (a Conv1D-ablated variant is trained and built like its family unless told otherwise)."""
    family = base_arch(arch)
    keys = (family, arch, f"{family}/{task}", f"{arch}/{task}")
    return tuple(dict.fromkeys(keys))  # a family is its own base: no key twice


def resolve(per_key: Mapping, arch: str, task: str) -> dict:
    """What ``per_key`` (architecture or ``arch/task`` keys) sets for one pair, the more
    specific key winning key by key (:func:`pair_keys`)."""
    resolved: dict = {}
    for key in pair_keys(arch, task):
        resolved |= per_key.get(key, {})
    return resolved
