"""Seed 004's measurement as it was made: the device memory F.relu and F.relu_ allocate on a 10000 x 10000
float32 tensor (a case may make at most 4096 x 4096: cases/device/relu_bytes_allocated.yaml judges that one).

    python benchmarks/relu_memory.py

Prints, for each, the bytes torch.cuda.memory_allocated grew by and the peak above the start
(max_memory_allocated); on a machine without a GPU it says so and exits 3."""

from __future__ import annotations

import sys

SIDE = 10_000


def measure(torch, inplace: bool) -> tuple[int, int]:
    """(bytes still allocated after the call, peak bytes above the start) for one relu."""
    x = torch.full((SIDE, SIDE), -0.5, device="cuda")
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    start = torch.cuda.memory_allocated()
    y = torch.nn.functional.relu_(x) if inplace else torch.nn.functional.relu(x)
    torch.cuda.synchronize()
    grown, peak = torch.cuda.memory_allocated() - start, torch.cuda.max_memory_allocated() - start
    del x, y
    torch.cuda.empty_cache()
    return grown, peak


def main() -> int:
    import torch

    if not torch.cuda.is_available():
        print(f"no GPU is visible: torch.cuda.is_available() is False (torch {torch.__version__})")
        return 3
    print(f"seed 004 on {torch.cuda.get_device_name(0)}, torch {torch.__version__}, a {SIDE} x {SIDE} float32 "
          f"tensor ({SIDE * SIDE * 4:,} bytes):")
    for name, inplace in (("F.relu(x)", False), ("F.relu_(x)", True)):
        grown, peak = measure(torch, inplace)
        print(f"  {name:<11} allocated {grown:>13,} bytes ({grown / 2**20:7.1f} MiB), peak {peak:>13,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
