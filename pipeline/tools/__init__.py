"""Tools beside the pipeline: synthetic inputs of any size (`generate`) and the benchmark
(`bench`, `make bench`)."""
