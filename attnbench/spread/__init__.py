"""Spreading a compare or sweep: placement over this host's GPUs or a Slurm cluster, the workers, the cell groups."""
