# sweep's seed for upstream nanoGPT, passed to train.py as a config file: its configurator execs
# this inside train.py's globals, before train.py seeds torch with torch.manual_seed(1337 +
# seed_offset). nanoGPT draws the weights, the batches and dropout from that one generator, so the
# run's init seed moves all three (nanoGPT has one seed: use `seeds: [1, 2, 3]`).
import os as _os
_sweep_seed = int(_os.environ.get("SWEEP_INIT_SEED", "0"))
_torch_manual_seed = torch.manual_seed  # noqa: F821 (train.py's torch)
torch.manual_seed = lambda seed: _torch_manual_seed(seed + 1000 * _sweep_seed)  # noqa: F821
