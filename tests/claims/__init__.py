"""Tests of claims and gauges on the paths the simulator runs, and of the
papers' programs (examples/papers/)."""
