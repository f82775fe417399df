// Package pytorchddp holds the tests of the PyTorch example: train.py, an
// elastic DDP script in the shape of PyTorch's elastic tutorial that
// reports to Caravan and honours its checkpoint protocol through
// collector/python/caravan_torch.py. The tests run it under real torchrun
// with the gloo backend on CPU, against a real collector on loopback, and
// are skipped when /usr/bin/python3 cannot import torch (tools/build.sh
// torch installs it). README.md has the design and the measurements.
package pytorchddp
