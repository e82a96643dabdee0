//! Small numerical kernels shared by the losses, the solvers and the CRF: one copy each.

/// `x ln x`, extended by continuity with `0 ln 0 = 0` (and 0 for `x < 0`, which callers never
/// pass on purpose: an entropy term of a clamped probability).
#[inline]
pub fn xlogx(x: f64) -> f64 {
    if x > 0.0 {
        x * x.ln()
    } else {
        0.0
    }
}

/// `ln sum_j exp(v_j)`, shifted by the maximum so that it neither overflows nor underflows;
/// `-inf` for an empty or all `-inf` input, `+inf` when an entry is `+inf`.
pub fn log_sum_exp(v: &[f64]) -> f64 {
    let m = v.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(x));
    if !m.is_finite() {
        return m;
    }
    m + v.iter().map(|&x| (x - m).exp()).sum::<f64>().ln()
}

/// The bracket `[lo, hi]` left after `steps` golden-section steps on a concave `f` (one new
/// evaluation each), narrowing towards its maximum.
pub fn golden_section(mut lo: f64, mut hi: f64, steps: usize, mut f: impl FnMut(f64) -> f64) -> (f64, f64) {
    let ratio = (5f64.sqrt() - 1.0) / 2.0;
    let (mut m1, mut m2) = (hi - ratio * (hi - lo), lo + ratio * (hi - lo));
    let (mut f1, mut f2) = (f(m1), f(m2));
    for _ in 0..steps {
        if f1 < f2 {
            (lo, m1, f1) = (m1, m2, f2);
            m2 = lo + ratio * (hi - lo);
            f2 = f(m2);
        } else {
            (hi, m2, f2) = (m2, m1, f1);
            m1 = hi - ratio * (hi - lo);
            f1 = f(m1);
        }
    }
    (lo, hi)
}

/// The best of `f` on `[0, hi]` for a concave `f`: `steps` golden-section steps, then the
/// bracket's midpoint against both ends, so that a maximum at an end is kept. `None` when no
/// candidate is finite.
pub fn argmax_concave(hi: f64, steps: usize, mut f: impl FnMut(f64) -> f64) -> Option<(f64, f64)> {
    let (lo, up) = golden_section(0.0, hi, steps, &mut f);
    [0.5 * (lo + up), 0.0, hi].into_iter().map(|c| (c, f(c))).filter(|(_, value)| value.is_finite()).fold(
        None,
        |best: Option<(f64, f64)>, cv| match best {
            Some(b) if b.1 >= cv.1 => Some(b),
            _ => Some(cv),
        },
    )
}

/// `u . v` with four running sums, so that the loop vectorises (a single running sum must keep
/// its order, which forbids SIMD); deterministic for given inputs.
#[inline]
pub fn dot(u: &[f64], v: &[f64]) -> f64 {
    let (uc, vc) = (u.chunks_exact(4), v.chunks_exact(4));
    let tail: f64 = uc.remainder().iter().zip(vc.remainder()).map(|(a, b)| a * b).sum();
    let mut acc = [0.0; 4];
    for (a, b) in uc.zip(vc) {
        for k in 0..4 {
            acc[k] += a[k] * b[k];
        }
    }
    (acc[0] + acc[2]) + (acc[1] + acc[3]) + tail
}

/// `sum_j (a_j - b_j)^2`.
pub fn dist_sq(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_sum_exp_edge_cases() {
        assert_eq!(log_sum_exp(&[]), f64::NEG_INFINITY);
        assert_eq!(log_sum_exp(&[f64::NEG_INFINITY; 3]), f64::NEG_INFINITY);
        assert!((log_sum_exp(&[1000.0, 1000.0]) - (1000.0 + 2f64.ln())).abs() < 1e-12);
        assert!((log_sum_exp(&[-1000.0, -1000.0]) - (-1000.0 + 2f64.ln())).abs() < 1e-12);
        assert!((log_sum_exp(&[-1000.0, f64::NEG_INFINITY]) + 1000.0).abs() < 1e-12);
        assert_eq!(log_sum_exp(&[0.0, f64::INFINITY]), f64::INFINITY);
    }

    #[test]
    fn xlogx_is_continuous_at_zero() {
        assert_eq!(xlogx(0.0), 0.0);
        assert!((xlogx(1e-300) - 1e-300 * (1e-300f64).ln()).abs() < 1e-310);
        assert_eq!(xlogx(1.0), 0.0);
    }

    #[test]
    fn golden_section_finds_interior_and_end_maxima() {
        let (lo, hi) = golden_section(-3.0, 5.0, 80, |x| -(x - 1.25) * (x - 1.25));
        assert!(lo <= 1.25 && 1.25 <= hi && hi - lo < 1e-12, "{lo} {hi}");
        // A maximum at an end of [0, hi] survives: the candidates include both ends.
        assert_eq!(argmax_concave(2.0, 12, |x| x), Some((2.0, 2.0)));
        assert_eq!(argmax_concave(2.0, 12, |x| -x), Some((0.0, 0.0)));
        assert_eq!(argmax_concave(2.0, 12, |_| f64::NAN), None);
    }
}
