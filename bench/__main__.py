"""`python -m bench`: the benchmark (`bench.run`)."""

from bench.run import main

main()
