"""How exact the kernels a GPU cell runs are, where the float32 spread needs to know
(``Adapter.kernel_precision``): tanh inside cuDNN's RNN kernel (nn.RNN on CUDA), forward and backward,
against torch.tanh on CUDA and nn.RNN on the CPU.

    python benchmarks/kernel_precision.py

Prints the largest relative error, over 200,001 points in [-4, 4], of each result against float64; on a
machine without a GPU it measures the CPU only and says so."""

from __future__ import annotations

import sys

import numpy as np

POINTS = 200_001


def _relative(got, exact: np.ndarray) -> float:
    values = got.detach().cpu().double().numpy().reshape(-1)
    return float(np.max(np.abs(values - exact) / np.maximum(np.abs(exact), 1e-30)))


def rnn_tanh(torch, device: str) -> tuple[float, float]:
    """(forward, backward) relative error of a 1 x 1 nn.RNN computing tanh(x) and its derivative."""
    x = torch.linspace(-4, 4, POINTS, dtype=torch.float32)
    exact = np.tanh(x.double().numpy())
    rnn = torch.nn.RNN(1, 1, device=device)
    with torch.no_grad():
        rnn.weight_ih_l0.fill_(1.0)
        rnn.weight_hh_l0.fill_(0.0)
        rnn.bias_ih_l0.fill_(0.0)
        rnn.bias_hh_l0.fill_(0.0)
    inputs = x.to(device).reshape(1, -1, 1).requires_grad_()
    out, _ = rnn(inputs, torch.zeros(1, POINTS, 1, device=device))
    out.sum().backward()
    return _relative(out, exact), _relative(inputs.grad, 1.0 - exact * exact)


def main() -> int:
    import torch

    rows = [("nn.RNN on the CPU", *rnn_tanh(torch, "cpu"))]
    if torch.cuda.is_available():
        x = torch.linspace(-4, 4, POINTS, dtype=torch.float32, device="cuda").requires_grad_()
        y = torch.tanh(x)
        y.sum().backward()
        exact = np.tanh(x.detach().double().cpu().numpy())
        rows.append(("torch.tanh on CUDA", _relative(y, exact), _relative(x.grad, 1.0 - exact * exact)))
        rows.append(("nn.RNN on CUDA (cuDNN)", *rnn_tanh(torch, "cuda")))
        torch.backends.cudnn.enabled = False
        rows.append(("nn.RNN on CUDA without cuDNN", *rnn_tanh(torch, "cuda")))
        where = f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}"
    else:
        where = f"no GPU is visible (torch {torch.__version__}): the CPU only"
    print(f"tanh over {POINTS:,} points in [-4, 4], largest relative error against float64 ({where}):")
    for name, forward, backward in rows:
        print(f"  {name:<30} forward {forward:.3g}   backward (1 - y^2) {backward:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
