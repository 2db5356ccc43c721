"""Stage 5, the report: tables, statistics, the claims check, figures, README's verdict
table and docs/results.md, from the measurements' tables (no torch)."""
