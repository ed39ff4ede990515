"""Benchmarks of the Copy-as-Decode mechanism on llama.cpp."""
