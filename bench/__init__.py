"""Benchmarks (design §16): each script prints one JSON line; the README reports them."""
