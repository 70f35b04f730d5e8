"""Tables of runs: a sweep's table written and read back (``table``), a metric's spread across seeds
(``spread``) — what sweeps write and plots read, below both."""
