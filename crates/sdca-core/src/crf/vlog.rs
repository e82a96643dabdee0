//! Sums of `log` terms over the lattice, vectorised.
//!
//! The line search, the chain entropy and the certificate's divergence each take one `log` per
//! lattice cell; the C library's `log` is a scalar call, and it dominated the CRF epoch. [`ln`]
//! is musl's `log` (fdlibm's algorithm: reduce to `m 2^k` with `m` in `[sqrt(2)/2, sqrt(2))`,
//! then `log(m) = f - f^2/2 + s (f^2/2 + R(s^2))` with `s = f / (2 + f)` and a degree-14 minimax
//! `R`), error below 1 ulp, written without branches for positive normal inputs so that a loop
//! over four lanes compiles to SIMD. The folds below run the same arithmetic on every machine
//! (four lanes added in a fixed order, no fused multiply-add), so results do not depend on the
//! instruction set; on x86-64 with AVX2 the same code is compiled for 256-bit registers and
//! chosen at run time.
//!
//! Inputs must be positive normal numbers (callers clamp at `1e-300`).
//!
//! [`exp_sub`] exponentiates a slice the same way (the forward-backward's `K^2` transition
//! factors and `T K` unary factors per oracle, a scalar `exp` call each before): fdlibm's
//! `exp` (reduce `x = k ln 2 + r`, `|r| <= ln(2)/2`, then `exp(r) = 1 + 2r / (R(r) - r)` with a
//! degree-5 minimax `R` in `r^2`, scale by `2^k`), error below 1 ulp, branch-free for
//! `x` in `[-708, 709]`; other inputs (underflow to subnormals or zero, overflow, `NaN`) take
//! the C library's `exp`.

// musl's constants as printed there (checked against their bit patterns in the tests).
#[allow(clippy::excessive_precision)]
const LN2_HI: f64 = 6.931_471_803_691_238_164_9e-1;
#[allow(clippy::excessive_precision)]
const LN2_LO: f64 = 1.908_214_929_270_587_700_02e-10;
#[allow(clippy::excessive_precision)]
const LG1: f64 = 6.666_666_666_666_735_13e-1;
#[allow(clippy::excessive_precision)]
const LG2: f64 = 3.999_999_999_940_941_908e-1;
#[allow(clippy::excessive_precision)]
const LG3: f64 = 2.857_142_874_366_239_149e-1;
#[allow(clippy::excessive_precision)]
const LG4: f64 = 2.222_219_843_214_978_396e-1;
#[allow(clippy::excessive_precision)]
const LG5: f64 = 1.818_357_216_161_805_012e-1;
#[allow(clippy::excessive_precision)]
const LG6: f64 = 1.531_383_769_920_937_332e-1;
#[allow(clippy::excessive_precision)]
const LG7: f64 = 1.479_819_860_511_658_591e-1;
/// `2^52 + 1023`: `from_bits(0x4330... | e) - MAGIC` is the unbiased exponent `e - 1023`.
const MAGIC: f64 = 4_503_599_627_371_519.0;
// fdlibm's `exp` constants (`e_exp.c`, checked against their bit patterns in the tests).
/// `1 / ln 2` (fdlibm's `invln2`, the same bits).
const INV_LN2: f64 = std::f64::consts::LOG2_E;
#[allow(clippy::excessive_precision)]
const P1: f64 = 1.666_666_666_666_660_190_37e-1;
#[allow(clippy::excessive_precision)]
const P2: f64 = -2.777_777_777_701_559_338_42e-3;
#[allow(clippy::excessive_precision)]
const P3: f64 = 6.613_756_321_437_934_361_17e-5;
#[allow(clippy::excessive_precision)]
const P4: f64 = -1.653_390_220_546_525_153_90e-6;
#[allow(clippy::excessive_precision)]
const P5: f64 = 4.138_136_797_057_238_460_39e-8;
/// `1.5 * 2^52`: `x + ROUND - ROUND` rounds `x` (`|x| < 2^51`) to the nearest integer, and the
/// low bits of `x + ROUND` hold that integer.
const ROUND: f64 = 6_755_399_441_055_744.0;
/// Range of [`exp`]'s branch-free path: `2^k` stays a normal number.
const EXP_LO: f64 = -708.0;
const EXP_HI: f64 = 709.0;

/// `e^x` (fdlibm's `exp`, < 1 ulp) for `x` in `[-708, 709]`; elsewhere (and for `NaN`) the C
/// library's.
#[inline(always)]
pub(crate) fn exp(x: f64) -> f64 {
    if !(EXP_LO..=EXP_HI).contains(&x) {
        return x.exp();
    }
    let t = x * INV_LN2 + ROUND;
    let kf = t - ROUND;
    let hi = x - kf * LN2_HI;
    let lo = kf * LN2_LO;
    let r = hi - lo;
    let rr = r * r;
    let c = r - rr * (P1 + rr * (P2 + rr * (P3 + rr * (P4 + rr * P5))));
    let y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);
    y * f64::from_bits(t.to_bits().wrapping_add(1023) << 52)
}

crate::simd::kernel! {
    /// `out[j] = e^(x[j] - shift)` ([`exp`]), in four lanes (the same bits with or without
    /// AVX2), over slices of equal length.
    pub(crate) fn exp_sub(x: &[f64], shift: f64, out: &mut [f64]) as exp_sub_portable {
        debug_assert_eq!(x.len(), out.len());
        for (o, &v) in out.iter_mut().zip(x) {
            *o = exp(v - shift);
        }
    } avx2: avx2::exp_sub
}

/// Natural logarithm of a positive normal `x` (musl `log`, < 1 ulp); branch-free.
#[inline(always)]
pub(crate) fn ln(x: f64) -> f64 {
    let ix = x.to_bits();
    // Reduce x into [sqrt(2)/2, sqrt(2)): shift the high word so that the exponent field
    // rounds at sqrt(2), then rebuild the mantissa with the exponent of sqrt(2)/2.
    let hx = (ix >> 32) + (0x3ff0_0000 - 0x3fe6_a09e);
    let dk = f64::from_bits(0x4330_0000_0000_0000 | (hx >> 20)) - MAGIC;
    let m = f64::from_bits((((hx & 0x000f_ffff) + 0x3fe6_a09e) << 32) | (ix & 0xffff_ffff));
    let f = m - 1.0;
    let hfsq = 0.5 * f * f;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * (LG2 + w * (LG4 + w * LG6));
    let t2 = z * (LG1 + w * (LG3 + w * (LG5 + w * LG7)));
    let r = t2 + t1;
    s * (hfsq + r) + dk * LN2_LO - hfsq + f + dk * LN2_HI
}

/// Lanes of the folds.
const LANES: usize = 4;

/// `sum_j g(p_j, b_j, log p_j, a_j)` with `p_j = max(a_j + gamma b_j, 1e-300)`, for a term `g`
/// with `M` outputs, over equal-length slices, in four lanes added as `(l0 + l1) + (l2 + l3)`.
/// The tail (fewer than four cells) is padded with `a = 1, b = 0`, whose terms must be zero.
/// This is the portable version; `avx2` below performs the same operations in the same order.
#[inline(always)]
fn fold<const M: usize>(
    a: &[f64],
    b: &[f64],
    gamma: f64,
    g: impl Fn(f64, f64, f64, f64) -> [f64; M],
) -> [f64; M] {
    debug_assert_eq!(a.len(), b.len());
    let mut acc = [[0.0; LANES]; M];
    let mut lane = |x: [f64; LANES], y: [f64; LANES]| {
        for l in 0..LANES {
            let p = (x[l] + gamma * y[l]).max(1e-300);
            let v = g(p, y[l], ln(p), x[l]);
            for m in 0..M {
                acc[m][l] += v[m];
            }
        }
    };
    let (ac, ar) = a.split_at(a.len() - a.len() % LANES);
    let (bc, br) = b.split_at(ac.len());
    for (x, y) in ac.chunks_exact(LANES).zip(bc.chunks_exact(LANES)) {
        lane([x[0], x[1], x[2], x[3]], [y[0], y[1], y[2], y[3]]);
    }
    if !ar.is_empty() {
        let (mut x, mut y) = ([1.0; LANES], [0.0; LANES]);
        x[..ar.len()].copy_from_slice(ar);
        y[..br.len()].copy_from_slice(br);
        lane(x, y);
    }
    acc.map(|a| (a[0] + a[1]) + (a[2] + a[3]))
}

crate::simd::kernel! {
    /// `[sum d log p, sum d^2 / p, sum p log p]` with `p = max(mu + gamma d, 1e-300)`, over
    /// slices of equal length.
    #[inline]
    pub(crate) fn line_terms(mu: &[f64], d: &[f64], gamma: f64) -> [f64; 3] as line_terms_portable {
        fold(mu, d, gamma, |p, d, l, _| [d * l, d * d / p, p * l])
    } avx2: avx2::line_terms
}

crate::simd::kernel! {
    /// `[sum p log p, sum p (log p - lq)]` over `p >= 0` and finite `lq` of equal length (a
    /// zero `p` gives zero terms, `0 * log 1e-300`: `0 log 0 = 0`).
    #[inline]
    pub(crate) fn entropy_kl(p: &[f64], lq: &[f64]) -> [f64; 2] as entropy_kl_portable {
        fold(p, lq, 0.0, |_, lq, l, p| [p * l, p * (l - lq)])
    } avx2: avx2::entropy_kl
}

crate::simd::kernel! {
    /// `sum p log p` over `p >= 0` (`0 log 0 = 0`).
    #[inline]
    pub(crate) fn xlogx_sum(p: &[f64]) -> f64 as xlogx_portable {
        let [s] = fold(p, p, 0.0, |_, _, l, p| [p * l]);
        s
    } avx2: avx2::xlogx
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    //! The folds with AVX2 intrinsics: the operations of [`super::ln`] and [`super::fold`], in
    //! the same order, on four lanes at once (bit-identical results). Each needs AVX2 and
    //! nothing else: no slice length makes them read or write out of bounds.
    use std::arch::x86_64::*;

    use super::*;

    #[inline(always)]
    unsafe fn c(x: f64) -> __m256d {
        _mm256_set1_pd(x)
    }

    #[inline(always)]
    unsafe fn ln4(x: __m256d) -> __m256d {
        let ix = _mm256_castpd_si256(x);
        let hx = _mm256_add_epi64(_mm256_srli_epi64(ix, 32), _mm256_set1_epi64x(0x3ff0_0000 - 0x3fe6_a09e));
        let e = _mm256_or_si256(_mm256_set1_epi64x(0x4330_0000_0000_0000), _mm256_srli_epi64(hx, 20));
        let dk = _mm256_sub_pd(_mm256_castsi256_pd(e), c(MAGIC));
        let hi = _mm256_add_epi64(
            _mm256_and_si256(hx, _mm256_set1_epi64x(0x000f_ffff)),
            _mm256_set1_epi64x(0x3fe6_a09e),
        );
        let lo = _mm256_and_si256(ix, _mm256_set1_epi64x(0xffff_ffff));
        let m = _mm256_castsi256_pd(_mm256_or_si256(_mm256_slli_epi64(hi, 32), lo));
        let f = _mm256_sub_pd(m, c(1.0));
        let hfsq = _mm256_mul_pd(_mm256_mul_pd(c(0.5), f), f);
        let s = _mm256_div_pd(f, _mm256_add_pd(c(2.0), f));
        let z = _mm256_mul_pd(s, s);
        let w = _mm256_mul_pd(z, z);
        let t1 = _mm256_mul_pd(
            w,
            _mm256_add_pd(c(LG2), _mm256_mul_pd(w, _mm256_add_pd(c(LG4), _mm256_mul_pd(w, c(LG6))))),
        );
        let t2 = _mm256_mul_pd(
            z,
            _mm256_add_pd(
                c(LG1),
                _mm256_mul_pd(
                    w,
                    _mm256_add_pd(c(LG3), _mm256_mul_pd(w, _mm256_add_pd(c(LG5), _mm256_mul_pd(w, c(LG7))))),
                ),
            ),
        );
        let r = _mm256_add_pd(t2, t1);
        let mut out = _mm256_mul_pd(s, _mm256_add_pd(hfsq, r));
        out = _mm256_add_pd(out, _mm256_mul_pd(dk, c(LN2_LO)));
        out = _mm256_sub_pd(out, hfsq);
        out = _mm256_add_pd(out, f);
        _mm256_add_pd(out, _mm256_mul_pd(dk, c(LN2_HI)))
    }

    /// [`ln4`] of `N` vectors at once, each step made for all of them before the next: the
    /// same operations per lane (the same bits), but `N` independent chains side by side.
    /// One `ln4` is a chain of about 30 dependent operations (a division among them), longer
    /// than the out-of-order window can overlap across loop iterations, so a loop of single
    /// `ln4`s waited on its latency.
    #[inline(always)]
    unsafe fn ln4n<const N: usize>(x: [__m256d; N]) -> [__m256d; N] {
        let (mut dk, mut f, mut hfsq, mut s) = ([c(0.0); N], [c(0.0); N], [c(0.0); N], [c(0.0); N]);
        for j in 0..N {
            let ix = _mm256_castpd_si256(x[j]);
            let hx =
                _mm256_add_epi64(_mm256_srli_epi64(ix, 32), _mm256_set1_epi64x(0x3ff0_0000 - 0x3fe6_a09e));
            let e = _mm256_or_si256(_mm256_set1_epi64x(0x4330_0000_0000_0000), _mm256_srli_epi64(hx, 20));
            dk[j] = _mm256_sub_pd(_mm256_castsi256_pd(e), c(MAGIC));
            let hi = _mm256_add_epi64(
                _mm256_and_si256(hx, _mm256_set1_epi64x(0x000f_ffff)),
                _mm256_set1_epi64x(0x3fe6_a09e),
            );
            let lo = _mm256_and_si256(ix, _mm256_set1_epi64x(0xffff_ffff));
            let m = _mm256_castsi256_pd(_mm256_or_si256(_mm256_slli_epi64(hi, 32), lo));
            f[j] = _mm256_sub_pd(m, c(1.0));
        }
        for j in 0..N {
            hfsq[j] = _mm256_mul_pd(_mm256_mul_pd(c(0.5), f[j]), f[j]);
            s[j] = _mm256_div_pd(f[j], _mm256_add_pd(c(2.0), f[j]));
        }
        let (mut z, mut w) = ([c(0.0); N], [c(0.0); N]);
        for j in 0..N {
            z[j] = _mm256_mul_pd(s[j], s[j]);
        }
        for j in 0..N {
            w[j] = _mm256_mul_pd(z[j], z[j]);
        }
        let (mut t1, mut t2) = ([c(LG6); N], [c(LG7); N]);
        for (cf1, cf2) in [(LG4, LG5), (LG2, LG3)] {
            for j in 0..N {
                t1[j] = _mm256_add_pd(c(cf1), _mm256_mul_pd(w[j], t1[j]));
                t2[j] = _mm256_add_pd(c(cf2), _mm256_mul_pd(w[j], t2[j]));
            }
        }
        let mut out = [c(0.0); N];
        for j in 0..N {
            t1[j] = _mm256_mul_pd(w[j], t1[j]);
            t2[j] = _mm256_mul_pd(z[j], _mm256_add_pd(c(LG1), _mm256_mul_pd(w[j], t2[j])));
        }
        for j in 0..N {
            let r = _mm256_add_pd(t2[j], t1[j]);
            out[j] = _mm256_mul_pd(s[j], _mm256_add_pd(hfsq[j], r));
        }
        for j in 0..N {
            out[j] = _mm256_add_pd(out[j], _mm256_mul_pd(dk[j], c(LN2_LO)));
            out[j] = _mm256_sub_pd(out[j], hfsq[j]);
        }
        for j in 0..N {
            out[j] = _mm256_add_pd(out[j], f[j]);
            out[j] = _mm256_add_pd(out[j], _mm256_mul_pd(dk[j], c(LN2_HI)));
        }
        out
    }

    #[inline(always)]
    unsafe fn hsum(v: __m256d) -> f64 {
        let mut a = [0.0; LANES];
        _mm256_storeu_pd(a.as_mut_ptr(), v);
        (a[0] + a[1]) + (a[2] + a[3])
    }

    /// Loads four cells at `i`, or the padded tail.
    #[inline(always)]
    unsafe fn load(a: &[f64], i: usize, pad: f64) -> __m256d {
        if i + LANES <= a.len() {
            _mm256_loadu_pd(a.as_ptr().add(i))
        } else {
            let mut t = [pad; LANES];
            t[..a.len() - i].copy_from_slice(&a[i..]);
            _mm256_loadu_pd(t.as_ptr())
        }
    }

    /// [`super::exp`] of four lanes; lanes outside its branch-free range are recomputed by it.
    #[inline(always)]
    unsafe fn exp4(x: __m256d) -> __m256d {
        let t = _mm256_add_pd(_mm256_mul_pd(x, c(INV_LN2)), c(ROUND));
        let kf = _mm256_sub_pd(t, c(ROUND));
        let hi = _mm256_sub_pd(x, _mm256_mul_pd(kf, c(LN2_HI)));
        let lo = _mm256_mul_pd(kf, c(LN2_LO));
        let r = _mm256_sub_pd(hi, lo);
        let rr = _mm256_mul_pd(r, r);
        let mut poly = _mm256_add_pd(c(P4), _mm256_mul_pd(rr, c(P5)));
        poly = _mm256_add_pd(c(P3), _mm256_mul_pd(rr, poly));
        poly = _mm256_add_pd(c(P2), _mm256_mul_pd(rr, poly));
        poly = _mm256_add_pd(c(P1), _mm256_mul_pd(rr, poly));
        let cc = _mm256_sub_pd(r, _mm256_mul_pd(rr, poly));
        let q = _mm256_div_pd(_mm256_mul_pd(r, cc), _mm256_sub_pd(c(2.0), cc));
        let y = _mm256_sub_pd(c(1.0), _mm256_sub_pd(_mm256_sub_pd(lo, q), hi));
        let bits = _mm256_slli_epi64(_mm256_add_epi64(_mm256_castpd_si256(t), _mm256_set1_epi64x(1023)), 52);
        let out = _mm256_mul_pd(y, _mm256_castsi256_pd(bits));
        let inside =
            _mm256_and_pd(_mm256_cmp_pd(x, c(EXP_LO), _CMP_GE_OQ), _mm256_cmp_pd(x, c(EXP_HI), _CMP_LE_OQ));
        if _mm256_movemask_pd(inside) == 0b1111 {
            return out;
        }
        let mut v = [0.0; LANES];
        _mm256_storeu_pd(v.as_mut_ptr(), x);
        _mm256_loadu_pd(v.map(super::exp).as_ptr())
    }

    /// Safe to call with AVX2 for any lengths (the shorter slice bounds the loop, as the
    /// portable zip does).
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn exp_sub(x: &[f64], shift: f64, out: &mut [f64]) {
        debug_assert_eq!(x.len(), out.len());
        let n = x.len().min(out.len());
        let sh = c(shift);
        let mut i = 0;
        while i + LANES <= n {
            let v = exp4(_mm256_sub_pd(_mm256_loadu_pd(x.as_ptr().add(i)), sh));
            _mm256_storeu_pd(out.as_mut_ptr().add(i), v);
            i += LANES;
        }
        for j in i..n {
            out[j] = super::exp(x[j] - shift);
        }
    }

    /// Vectors per round of [`line_terms`] (see [`ln4n`]), and its cells.
    const BATCH: usize = 4;
    const BATCH_CELLS: usize = BATCH * LANES;

    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn line_terms(mu: &[f64], d: &[f64], gamma: f64) -> [f64; 3] {
        debug_assert_eq!(mu.len(), d.len());
        let (g, floor) = (c(gamma), c(1e-300));
        let (mut s1, mut s2, mut s3) = (c(0.0), c(0.0), c(0.0));
        let mut i = 0;
        // Two vectors per round (independent chains, see `ln4n`), their terms added in cell
        // order as below: the same sums.
        while i + BATCH_CELLS <= mu.len() {
            let (mut y, mut p) = ([g; BATCH], [g; BATCH]);
            for j in 0..BATCH {
                y[j] = _mm256_loadu_pd(d.as_ptr().add(i + j * LANES));
                let x = _mm256_loadu_pd(mu.as_ptr().add(i + j * LANES));
                p[j] = _mm256_max_pd(_mm256_add_pd(x, _mm256_mul_pd(g, y[j])), floor);
            }
            let l = ln4n(p);
            for j in 0..BATCH {
                s1 = _mm256_add_pd(s1, _mm256_mul_pd(y[j], l[j]));
                s2 = _mm256_add_pd(s2, _mm256_div_pd(_mm256_mul_pd(y[j], y[j]), p[j]));
                s3 = _mm256_add_pd(s3, _mm256_mul_pd(p[j], l[j]));
            }
            i += BATCH_CELLS;
        }
        while i < mu.len() {
            let (x, y) = (load(mu, i, 1.0), load(d, i, 0.0));
            let p = _mm256_max_pd(_mm256_add_pd(x, _mm256_mul_pd(g, y)), floor);
            let l = ln4(p);
            s1 = _mm256_add_pd(s1, _mm256_mul_pd(y, l));
            s2 = _mm256_add_pd(s2, _mm256_div_pd(_mm256_mul_pd(y, y), p));
            s3 = _mm256_add_pd(s3, _mm256_mul_pd(p, l));
            i += LANES;
        }
        [hsum(s1), hsum(s2), hsum(s3)]
    }

    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn entropy_kl(p: &[f64], lq: &[f64]) -> [f64; 2] {
        debug_assert_eq!(p.len(), lq.len());
        let (zero, floor) = (c(0.0), c(1e-300));
        let (mut s1, mut s2) = (c(0.0), c(0.0));
        let mut i = 0;
        while i < p.len() {
            let (x, y) = (load(p, i, 1.0), load(lq, i, 0.0));
            let l = ln4(_mm256_max_pd(_mm256_add_pd(x, _mm256_mul_pd(zero, y)), floor));
            s1 = _mm256_add_pd(s1, _mm256_mul_pd(x, l));
            s2 = _mm256_add_pd(s2, _mm256_mul_pd(x, _mm256_sub_pd(l, y)));
            i += LANES;
        }
        [hsum(s1), hsum(s2)]
    }

    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn xlogx(p: &[f64]) -> f64 {
        let (zero, floor) = (c(0.0), c(1e-300));
        let mut s1 = c(0.0);
        let mut i = 0;
        while i < p.len() {
            let x = load(p, i, 1.0);
            let l = ln4(_mm256_max_pd(_mm256_add_pd(x, _mm256_mul_pd(zero, x)), floor));
            s1 = _mm256_add_pd(s1, _mm256_mul_pd(x, l));
            i += LANES;
        }
        hsum(s1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;
    use std::f64::consts::{FRAC_1_SQRT_2, SQRT_2};

    fn ulps(a: f64, b: f64) -> f64 {
        ((a - b) / (b.abs() * f64::EPSILON).max(f64::MIN_POSITIVE)).abs()
    }

    #[test]
    fn constants_are_musls() {
        let bits = [
            (LN2_HI, 0x3fe6_2e42_fee0_0000u64),
            (LN2_LO, 0x3dea_39ef_3579_3c76),
            (LG1, 0x3fe5_5555_5555_5593),
            (LG2, 0x3fd9_9999_9997_fa04),
            (LG3, 0x3fd2_4924_9422_9359),
            (LG4, 0x3fcc_71c5_1d8e_78af),
            (LG5, 0x3fc7_4664_96cb_03de),
            (LG6, 0x3fc3_9a09_d078_c69f),
            (LG7, 0x3fc2_f112_df3e_5244),
        ];
        for (x, b) in bits {
            assert_eq!(x.to_bits(), b, "{x}");
        }
    }

    #[test]
    fn exp_constants_are_fdlibms() {
        let bits = [
            (INV_LN2, 0x3ff7_1547_652b_82feu64),
            (P1, 0x3fc5_5555_5555_553e),
            (P2, 0xbf66_c16c_16be_bd93),
            (P3, 0x3f11_566a_af25_de2c),
            (P4, 0xbebb_bd41_c5d2_6bf1),
            (P5, 0x3e66_3769_72be_a4d0),
        ];
        for (x, b) in bits {
            assert_eq!(x.to_bits(), b, "{x}");
        }
    }

    #[test]
    fn exp_is_within_one_ulp_of_std_and_the_same_in_every_lane() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let mut worst: f64 = 0.0;
        let mut xs: Vec<f64> = (0..100_000).map(|_| rng.random_range(-760.0..720.0)).collect();
        xs.extend((0..100_000).map(|_| rng.random_range(-3.0..3.0)));
        xs.extend([0.0, -0.0, 1.0, -1.0, EXP_LO, EXP_HI, -745.2, -746.0, 710.0, f64::NAN]);
        xs.extend([f64::NEG_INFINITY, f64::INFINITY, 1e-300, -1e-18, 0.5 * std::f64::consts::LN_2]);
        for &x in &xs {
            let (a, b) = (exp(x), x.exp());
            if b.is_normal() && a.is_finite() {
                worst = worst.max(ulps(a, b));
            } else {
                assert!(a == b || (a.is_nan() && b.is_nan()) || (a - b).abs() < 1e-300, "{x}: {a} vs {b}");
            }
        }
        // fdlibm's bound is 1 ulp against the exact value; std's own rounding adds up to 0.5.
        assert!(worst <= 1.5, "worst {worst} ulps");
        assert_eq!(exp(0.0), 1.0);
        for len in [0usize, 1, 3, 4, 5, 9, xs.len()] {
            let mut out = vec![0.0; len];
            exp_sub(&xs[..len], 0.25, &mut out);
            for (o, &x) in out.iter().zip(&xs) {
                let e = exp(x - 0.25);
                assert!(o.to_bits() == e.to_bits() || (o.is_nan() && e.is_nan()), "{x}");
            }
        }
    }

    #[test]
    fn ln_is_within_one_ulp_of_std() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let mut worst: f64 = 0.0;
        for _ in 0..200_000 {
            let e: f64 = rng.random_range(-300.0..3.0);
            let x = 10f64.powf(e) * rng.random_range(1.0..10.0);
            worst = worst.max(ulps(ln(x), x.ln()));
        }
        // musl's bound is 1 ulp against the exact value; std's own rounding adds up to 0.5.
        assert!(worst <= 1.5, "worst {worst} ulps");
        for x in [1.0, 2.0, 0.5, f64::MIN_POSITIVE, 1e-300, FRAC_1_SQRT_2, SQRT_2, 1.0 - 1e-16] {
            assert!(ulps(ln(x), x.ln()) <= 1.5 || (ln(x) - x.ln()).abs() < 1e-300, "{x}");
        }
        assert_eq!(ln(1.0), 0.0);
    }

    #[test]
    fn folds_match_plain_sums() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(2);
        for len in [0usize, 1, 3, 4, 7, 81, 1000] {
            let mu: Vec<f64> = (0..len).map(|_| rng.random_range(0.0..1.0)).collect();
            let d: Vec<f64> = mu.iter().map(|m| rng.random_range(-m..1.0 - m)).collect();
            let g = 0.37;
            let [a, b, c] = line_terms(&mu, &d, g);
            let (mut ea, mut eb, mut ec) = (0.0, 0.0, 0.0);
            for (m, d) in mu.iter().zip(&d) {
                let p = (m + g * d).max(1e-300);
                ea += d * p.ln();
                eb += d * d / p;
                ec += p * p.ln();
            }
            let tol = 1e-13 * (1.0 + len as f64);
            assert!(
                (a - ea).abs() < tol && (b - eb).abs() < tol * (1.0 + eb) && (c - ec).abs() < tol,
                "{len}"
            );
            // The generic body gives the same bits as the dispatched one.
            assert_eq!(line_terms_portable(&mu, &d, g), [a, b, c]);
            let mut p = mu.clone();
            if len > 2 {
                p[1] = 0.0;
            }
            let lq: Vec<f64> = (0..len).map(|_| rng.random_range(-5.0..0.0)).collect();
            let [h, kl] = entropy_kl(&p, &lq);
            let eh: f64 = p.iter().map(|&p| if p > 0.0 { p * p.ln() } else { 0.0 }).sum();
            let ekl: f64 =
                p.iter().zip(&lq).map(|(&p, q)| if p > 0.0 { p * (p.ln() - q) } else { 0.0 }).sum();
            assert!((h - eh).abs() < tol && (kl - ekl).abs() < tol, "{len}");
            assert!((xlogx_sum(&p) - eh).abs() < tol);
            assert_eq!(xlogx_portable(&p), xlogx_sum(&p));
            assert_eq!(entropy_kl_portable(&p, &lq), [h, kl]);
        }
    }
}
