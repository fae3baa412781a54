"""Hand-written example models, each with Skyline's three providers.

Every module here is importable (``from skyline_nb.examples import mlp``) and usable as a CLI
entry file (``skyline-nb time skyline_nb/examples/cnn.py``). They are small on purpose: a CPU
profile at batch 32 takes seconds, so tests and benchmarks can use real models rather than fakes.
Models are built on the CPU; ``profile(device=...)`` moves them and their inputs where needed.
"""

EXAMPLES = ("mlp", "cnn", "transformer", "lstm")
