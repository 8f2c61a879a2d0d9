# Benchmark suite (owned by test/bench).
