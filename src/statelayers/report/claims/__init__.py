"""The claims check: which of the paper's findings (docs/study.md, 1-7) this run reproduces.

- :mod:`~statelayers.report.claims.engine`: quantities, margins, rooms, sub-claim
  statuses, the conjunction that makes a verdict, fragility;
- :mod:`~statelayers.report.claims.findings`: the seven finding rules, one function each,
  and the analysis choices they read (:class:`~statelayers.report.claims.findings.Choices`);
- :mod:`~statelayers.report.claims.runs`: which runs learned their task;
- :mod:`~statelayers.report.claims.check`: the verdicts, the same under each
  alternative choice (``robustness.csv``), and findings 2 and 4 with a signed variant in
  its family's place (``extension_claims.csv``, an extension);
- :mod:`~statelayers.report.claims.writer`: ``claims.md``.
"""

from statelayers.report.claims.check import ClaimsCheck, check_claims
from statelayers.report.claims.findings import Choices
from statelayers.report.claims.writer import claims_markdown

__all__ = ["Choices", "ClaimsCheck", "check_claims", "claims_markdown"]
