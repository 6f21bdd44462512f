"""Special functions NumPy does not have, in float64, for the reference of ``lgamma_``, ``digamma_``,
``polygamma_``, ``mvlgamma_`` and ``i0_`` and their gradients.

The reference imports NumPy only, so each is written here from its textbook series (Abramowitz and
Stegun 6.3.18, 6.4.11-12, 9.6.10; for higher orders of polygamma, the Hurwitz zeta function by
Euler-Maclaurin, DLMF 25.11.5), with a recurrence that moves the argument to where the series' first omitted term
is below 1e-15 of the sum; ``tests/test_ops_special.py`` checks each against closed forms worked out by hand.
"""

from __future__ import annotations

import math
from typing import Callable

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


#: B_2j / (2j)! for j = 1 .. 7, the Euler-Maclaurin coefficients of :func:`hurwitz_zeta`
_EULER_MACLAURIN = (1 / 12, -1 / 720, 1 / 30240, -1 / 1209600, 1 / 47900160, -691 / 1307674368000,
                    1 / 74724249600)
#: the orders :func:`polygamma` computes (and their derivatives, one order up)
MAX_POLYGAMMA_ORDER = 4
_ZETA_SHIFT = 20.0  # from here on, for s up to 6, the first omitted term is below 1e-13 of the sum


def hurwitz_zeta(s: int, x: Array) -> Array:
    """zeta(s, x) = sum over k >= 0 of 1/(x + k)^s, for whole s >= 2 and x > 0: the first terms summed until
    x + k >= 20, then the Euler-Maclaurin tail z^(1-s)/(s-1) + z^-s/2 + sum_j B_2j/(2j)! (s)_(2j-1) z^(1-s-2j)
    (DLMF 25.11.5 with the remainder dropped)."""
    x = np.asarray(x, dtype=np.float64)
    head = np.zeros_like(x)
    z = x.copy()
    while np.any(z < _ZETA_SHIFT):
        small = z < _ZETA_SHIFT
        head = np.where(small, head + np.where(small, z, 1.0) ** -s, head)
        z = np.where(small, z + 1.0, z)
    tail = z ** (1 - s) / (s - 1) + 0.5 * z ** -s
    rising = float(s)  # (s)_(2j-1): s (s+1) ... (s+2j-2)
    for j, coefficient in enumerate(_EULER_MACLAURIN, 1):
        if j > 1:
            rising *= (s + 2 * j - 3) * (s + 2 * j - 2)
        tail = tail + coefficient * rising * z ** (1 - s - 2 * j)
    return head + tail


def polygamma_order(n: int) -> Callable[[Array], Array]:
    """psi^(n): digamma for n = 0, else (-1)^(n+1) n! zeta(n + 1, x) (DLMF 5.15.2), for x > 0."""
    if n == 0:
        return digamma
    return lambda x: (-1) ** (n + 1) * math.factorial(n) * hurwitz_zeta(n + 1, x)


def polygamma(n: int) -> tuple:
    """psi^(n) and its derivative psi^(n+1), for n from 0 to :data:`MAX_POLYGAMMA_ORDER`."""
    if not 0 <= n <= MAX_POLYGAMMA_ORDER:
        raise ValueError(f"polygamma's order must be from 0 to {MAX_POLYGAMMA_ORDER}, not {n}")
    return polygamma_order(n), polygamma_order(n + 1)


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


def _lower_regularized(a: float, x: float) -> float:
    """P(a, x) for a > 0, x >= 0: its power series below x = a + 1, else 1 - Q(a, x) with Q from its
    continued fraction by the modified Lentz method (Numerical Recipes 6.2.5 and 6.2.7)."""
    if x <= 0.0:
        return 0.0
    log_front = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1.0:
        term = total = 1.0 / a
        denominator = a
        while abs(term) > 1e-17 * abs(total):
            denominator += 1.0
            term *= x / denominator
            total += term
        return total * math.exp(log_front)
    tiny = 1e-300
    b = x + 1.0 - a
    c, d = 1.0 / tiny, 1.0 / b
    fraction = d
    for i in range(1, 1000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        step = d * c
        fraction *= step
        if abs(step - 1.0) < 1e-16:
            break
    return 1.0 - math.exp(log_front) * fraction


def regularized_gamma(a: Array, x: Array) -> Array:
    """P(a, x) = gamma(a, x) / Gamma(a), the regularized lower incomplete gamma function (torch's igamma,
    paddle's gammainc), element by element on the broadcast arguments; a > 0, x >= 0."""
    a, x = np.broadcast_arrays(np.asarray(a, dtype=np.float64), np.asarray(x, dtype=np.float64))
    if np.any(a <= 0) or np.any(x < 0):
        raise ValueError("the regularized incomplete gamma function is defined for a > 0 and x >= 0 only")
    return np.vectorize(_lower_regularized, otypes=[np.float64])(a, x)


def regularized_gamma_slopes(a: Array, x: Array) -> tuple[Array, Array]:
    """dP/da and dP/dx: dP/dx = x^(a-1) e^-x / Gamma(a) in closed form; dP/da by a central difference of
    the float64 P (step 1e-5 a: its error, about 1e-10 relative, is far below float32's)."""
    a, x = np.broadcast_arrays(np.asarray(a, dtype=np.float64), np.asarray(x, dtype=np.float64))
    step = 1e-5 * a
    by_a = (regularized_gamma(a + step, x) - regularized_gamma(a - step, x)) / (2 * step)
    gammas = np.exp(np.vectorize(math.lgamma, otypes=[np.float64])(a))
    with np.errstate(divide="ignore"):  # at x = 0: 1 / Gamma(a) for a = 1, infinite below, 0 above
        by_x = x ** (a - 1) * np.exp(-x) / gammas
    return by_a, by_x
