"""Special functions NumPy does not have, in float64, for the reference of ``lgamma_``, ``digamma_``,
``polygamma_``, ``mvlgamma_`` and ``i0_`` and their gradients.

The reference imports NumPy only, so each is written here from its textbook series (Abramowitz and
Stegun 6.3.18, 6.4.11-12, 9.6.10), with a recurrence that moves the argument to where the series' first omitted term
is below 1e-15 of the sum; ``tests/test_ops_special.py`` checks each against closed forms worked out by hand.
"""

from __future__ import annotations

import math

import numpy as np

Array = np.ndarray

_SHIFT = 16.0  # from here on the first term each series leaves out is below 1e-15 of the sum


def lgamma(x: Array) -> Array:
    """log |Gamma(x)|: Python's own ``math.lgamma``, element by element."""
    return np.vectorize(math.lgamma, otypes=[np.float64])(x)


def digamma(x: Array) -> Array:
    """psi(x) = d/dx log Gamma(x), for x > 0: psi(x) = psi(x + n) - sum 1/(x + k), then the asymptotic
    series ln z - 1/(2z) - sum B_2k / (2k z^2k)."""
    x = np.asarray(x, dtype=np.float64)
    shift = np.zeros_like(x)
    z = x.copy()
    while np.any(z < _SHIFT):
        small = z < _SHIFT
        shift = np.where(small, shift + 1.0 / np.where(small, z, 1.0), shift)
        z = np.where(small, z + 1.0, z)
    w = 1.0 / (z * z)
    tail = w * (1 / 12 - w * (1 / 120 - w * (1 / 252 - w * (1 / 240 - w * (1 / 132)))))
    return np.log(z) - 0.5 / z - tail - shift


def trigamma(x: Array) -> Array:
    """psi'(x), for x > 0: psi'(x) = psi'(x + n) + sum 1/(x + k)^2, then 1/z + 1/(2z^2) + sum B_2k / z^(2k+1)."""
    x = np.asarray(x, dtype=np.float64)
    shift = np.zeros_like(x)
    z = x.copy()
    while np.any(z < _SHIFT):
        small = z < _SHIFT
        shift = np.where(small, shift + 1.0 / np.where(small, z * z, 1.0), shift)
        z = np.where(small, z + 1.0, z)
    w = 1.0 / (z * z)
    series = (1.0 / z) * (1.0 + 0.5 / z + w * (1 / 6 - w * (1 / 30 - w * (1 / 42 - w * (1 / 30)))))
    return series + shift


def tetragamma(x: Array) -> Array:
    """psi''(x), for x > 0: psi''(x) = psi''(x + n) - sum 2/(x + k)^3, then
    -1/z^2 - 1/z^3 - sum (2k + 1) B_2k / z^(2k+2)."""
    x = np.asarray(x, dtype=np.float64)
    shift = np.zeros_like(x)
    z = x.copy()
    while np.any(z < _SHIFT):
        small = z < _SHIFT
        shift = np.where(small, shift - 2.0 / np.where(small, z * z * z, 1.0), shift)
        z = np.where(small, z + 1.0, z)
    w = 1.0 / (z * z)
    series = -w * (1.0 + 1.0 / z + w * (0.5 - w * (1 / 6 - w * (1 / 6 - w * (3 / 10 - w * (5 / 6))))))
    return series + shift


def polygamma(n: int) -> tuple:
    """psi^(n) and its derivative psi^(n+1), for the orders the reference has: 0 and 1."""
    return {0: (digamma, trigamma), 1: (trigamma, tetragamma)}[n]


def mvlgamma(x: Array, p: int) -> Array:
    """The multivariate log-gamma function of dimension p: p(p-1)/4 log pi + sum_j lgamma(x + (1 - j)/2)."""
    return p * (p - 1) / 4 * math.log(math.pi) + sum(lgamma(x + (1 - j) / 2) for j in range(1, p + 1))


def mvdigamma(x: Array, p: int) -> Array:
    """The derivative of :func:`mvlgamma`: sum_j digamma(x + (1 - j)/2)."""
    return sum(digamma(x + (1 - j) / 2) for j in range(1, p + 1))


def bessel_i1(x: Array) -> Array:
    """I_1(x), the derivative of I_0: sum over k of (x/2)^(2k+1) / (k! (k+1)!), summed until its terms
    no longer change the sum (the cases' arguments are small: |x| below 20 takes under 60 terms)."""
    x = np.asarray(x, dtype=np.float64)
    half = x / 2.0
    term = half.copy()
    total = term.copy()
    for k in range(1, 200):
        term = term * half * half / (k * (k + 1))
        total = total + term
        if np.all(np.abs(term) <= 1e-17 * np.abs(total)):
            break
    return total
