"""The benchmark's sections: each module measures one thing and its same-run baseline.

Sections import the shared helpers of `scripts.benchmarks`, never each other; `plan` lists them
in the order they run.
"""
