"""Training machinery every task shares: the run spec, the update (trainer) and the loop, the
optimizers, checkpoints and the run directory, ranks, precision, XLA, batch and memory plans."""
