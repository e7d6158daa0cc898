// Precompiled header for every target that includes LibTorch (parsing torch.h costs ~10 s a TU).
#pragma once
#include <torch/torch.h>
