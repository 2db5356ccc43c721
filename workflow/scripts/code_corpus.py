"""Code-Depth's corpus as Parquet (path, source, origin) and its per-split statistics."""

from statelayers import console, files
from statelayers.tasks.codedepth import corpus_statistics, load_corpus

sm = snakemake  # noqa: F821
log = console.start_job(sm.log[0])
corpus = load_corpus(**sm.params.corpus)
files.write_parquet(corpus, sm.output.corpus)
statistics = corpus_statistics(corpus)
files.write_csv(statistics, sm.output.table)
log.info("corpus of %d files (%s):\n%s", len(corpus), sm.params.corpus["source"], statistics.to_string())
