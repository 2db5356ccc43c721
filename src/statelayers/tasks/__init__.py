"""Stage 1, the data: the formal tasks, Code-Depth, and their Parquet splits.

Nothing here imports torch or any later stage.
"""
