"""The special functions the reference computes itself (conformance/ops/special.py), against closed forms
worked out by hand, and the unary ops built on them."""

from __future__ import annotations

import math

import numpy as np

from conformance.ops.special import bessel_i1, digamma, lgamma, trigamma

EULER_GAMMA = 0.5772156649015329


def test_digamma_at_the_closed_forms() -> None:
    # psi(1) = -gamma, psi(1/2) = -gamma - 2 ln 2, psi(n + 1) = psi(n) + 1/n
    np.testing.assert_allclose(digamma(np.array([1.0, 0.5, 2.0, 4.0])),
                               [-EULER_GAMMA, -EULER_GAMMA - 2 * math.log(2.0), 1 - EULER_GAMMA,
                                1 + 1 / 2 + 1 / 3 - EULER_GAMMA], rtol=1e-14)


def test_trigamma_at_the_closed_forms() -> None:
    # psi'(1) = pi^2 / 6, psi'(1/2) = pi^2 / 2, psi'(2) = pi^2 / 6 - 1
    np.testing.assert_allclose(trigamma(np.array([1.0, 0.5, 2.0])),
                               [math.pi ** 2 / 6, math.pi ** 2 / 2, math.pi ** 2 / 6 - 1], rtol=1e-13)


def test_digamma_is_the_slope_of_lgamma_and_trigamma_the_slope_of_digamma() -> None:
    x, h = np.array([0.3, 1.7, 9.5, 25.0]), 1e-5
    np.testing.assert_allclose((lgamma(x + h) - lgamma(x - h)) / (2 * h), digamma(x), rtol=1e-8)
    np.testing.assert_allclose((digamma(x + h) - digamma(x - h)) / (2 * h), trigamma(x), rtol=1e-7)


def test_lgamma_at_whole_and_half_numbers() -> None:
    # Gamma(5) = 24, Gamma(1/2) = sqrt(pi), Gamma(3/2) = sqrt(pi) / 2
    np.testing.assert_allclose(lgamma(np.array([5.0, 0.5, 1.5])),
                               [math.log(24.0), 0.5 * math.log(math.pi), 0.5 * math.log(math.pi) - math.log(2.0)])


def test_bessel_i1_by_its_values_and_symmetry() -> None:
    # I_1(0) = 0; I_1(1) and I_1(2) from Abramowitz and Stegun table 9.8; I_1 is odd
    np.testing.assert_allclose(bessel_i1(np.array([0.0, 1.0, 2.0, -1.0])),
                               [0.0, 0.5651591039924851, 1.5906368546373291, -0.5651591039924851], rtol=1e-14)


def test_tetragamma_at_the_closed_forms() -> None:
    from conformance.ops.special import tetragamma

    zeta3 = 1.2020569031595942  # psi''(1) = -2 zeta(3), psi''(1/2) = -14 zeta(3), psi''(2) = psi''(1) + 2
    np.testing.assert_allclose(tetragamma(np.array([1.0, 0.5, 2.0])), [-2 * zeta3, -14 * zeta3, -2 * zeta3 + 2],
                               rtol=1e-13)


def test_the_multivariate_lgamma_is_a_sum_of_lgammas() -> None:
    from conformance.ops.special import mvdigamma, mvlgamma

    # p = 2 at 2.5: log(pi) / 2 + lgamma(2.5) + lgamma(2) = log(pi) / 2 + log(3 sqrt(pi) / 4) + 0
    np.testing.assert_allclose(mvlgamma(np.array([2.5]), 2), [0.5 * math.log(math.pi) +
                                                              math.log(0.75 * math.sqrt(math.pi))])
    # its slope: digamma(2.5) + digamma(2) = (2 - gamma - 2 ln 2 + 2/3) + (1 - gamma)
    np.testing.assert_allclose(mvdigamma(np.array([2.5]), 2),
                               [2 + 2 / 3 - 2 * math.log(2.0) + 1 - 2 * EULER_GAMMA], rtol=1e-14)


def test_higher_polygamma_orders_agree_with_trigamma_tetragamma_and_closed_forms() -> None:
    """psi^(n) from the Hurwitz zeta function against the series of trigamma and tetragamma, and at 1 and
    1/2 against n! zeta(n + 1) and n! (2^(n+1) - 1) zeta(n + 1) with the signs (-1)^(n+1)."""
    from conformance.ops.special import polygamma, tetragamma

    x = np.array([0.3, 1.0, 2.5, 7.0, 30.0])
    np.testing.assert_allclose(polygamma(1)[0](x), trigamma(x), rtol=1e-13)
    np.testing.assert_allclose(polygamma(2)[0](x), tetragamma(x), rtol=1e-13)
    zeta = {4: np.pi ** 4 / 90, 5: 1.0369277551433699, 6: np.pi ** 6 / 945}
    for n in (3, 4, 5):
        value = polygamma(n - 1)[1](np.array([1.0, 0.5]))  # psi^(n) as the slope of psi^(n-1)
        signed = (-1) ** (n + 1) * math.factorial(n) * zeta[n + 1]
        np.testing.assert_allclose(value, [signed, signed * (2 ** (n + 1) - 1)], rtol=1e-12)
