"""A curriculum over positions: the loss covers the first ``k`` positions, and ``k`` rises
as training on them succeeds (the form of kazuki-irie/lie-algebra-state-tracking).

Why positions and not lengths: the causal tagger labels every prefix, so a sequence of
length 40 already trains every shorter length; what a length curriculum changes is which
positions the loss sees. With ``k`` covered positions the step's loss is

.. math::
    \\mathcal L_k = -\\frac{1}{|\\mathcal B|\\,k}
        \\sum_{b \\in \\mathcal B}\\sum_{t=1}^{k}\\log p(y_{b,t} \\mid x_{b,1..t}),

and after the step ``k \\leftarrow \\min(k + \\text{step}, L)`` when the step's training
token accuracy on those ``k`` positions reaches ``threshold``. A model first learns the
short prefixes, whose state holds few group elements, before the loss asks for long ones.
Validation always scores every position, so curves with and without it compare.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class PositionCurriculum:
    """How many positions the loss covers now (``covered``), and when that rises."""

    start: int
    """Positions covered at the first step."""
    step: int
    """Positions added at each rise."""
    threshold: float
    """Training token accuracy on the covered positions that makes ``covered`` rise."""
    length: int
    """The training length: ``covered`` never exceeds it."""
    covered: int = 0

    def __post_init__(self) -> None:
        if self.start < 1 or self.step < 1 or not 0 < self.threshold <= 1:
            raise ValueError(f"curriculum: start and step must be >= 1 and threshold in (0, 1]: {self}")
        self.covered = self.covered or min(self.start, self.length)

    def update(self, accuracy: float) -> int:
        """Account for one step's training token ``accuracy`` on the covered positions;
        return the positions the next step covers."""
        if accuracy >= self.threshold:
            self.covered = min(self.covered + self.step, self.length)
        return self.covered
