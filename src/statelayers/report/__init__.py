"""Stage 5, the report: tables, statistics, the claims check, figures and the README
section, from the measurements' tables (no torch)."""
