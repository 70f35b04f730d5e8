"""Tests of the simulator (serq.sim)."""
