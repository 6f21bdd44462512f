"""One module per framework: the only modules that import torch or paddle, and only when instantiated."""
