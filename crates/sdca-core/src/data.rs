//! Row views over feature matrices, borrowed from the caller's buffers.
//!
//! SDCA touches one example at a time, so the solvers need row access: a CSR view for sparse
//! features (Arrow's `List(Struct{index, value})` is CSR already: the list offsets are the row
//! pointer) and a row-major dense view. Both are validated once, in their constructors, so every
//! view that exists is safe to index without bounds checks in the hot loops.

use crate::error::{Result, SdcaError};

/// Row access shared by the solvers: the kernels of one coordinate step.
pub trait Rows: Sync {
    /// Number of rows (examples).
    fn n_rows(&self) -> usize;
    /// Number of columns (features).
    fn n_cols(&self) -> usize;
    /// `x_i . w` (`w.len() >= n_cols`).
    fn dot(&self, i: usize, w: &[f64]) -> f64;
    /// `sum_j x_ij * f(v_j)`: a dot product with a coordinate map applied on the fly, used when
    /// `w = grad g*(v)` is not stored (elastic net keeps only `v`).
    fn dot_map<F: Fn(f64) -> f64>(&self, i: usize, v: &[f64], f: F) -> f64;
    /// `v += a * x_i`.
    fn axpy(&self, i: usize, a: f64, v: &mut [f64]);
    /// `||x_i||^2`.
    fn sq_norm(&self, i: usize) -> f64;
    /// Calls `f(j, x_ij)` for the stored entries of row `i` (every column for dense rows).
    fn for_each_nz<F: FnMut(usize, f64)>(&self, i: usize, f: F);
    /// `out[c] = sum_j x_ij f(v[j k + c])` with `k = out.len()`: the `k` scores of row `i`
    /// against a feature-major `n_cols x k` matrix (multiclass); `k = 1` is [`Rows::dot_map`].
    #[inline(always)]
    fn dot_block<F: Fn(f64) -> f64>(&self, i: usize, v: &[f64], out: &mut [f64], f: F) {
        let k = out.len();
        if k == 1 {
            out[0] = self.dot_map(i, v, f);
            return;
        }
        out.iter_mut().for_each(|o| *o = 0.0);
        self.for_each_nz(i, |j, x| {
            for (o, &vj) in out.iter_mut().zip(&v[j * k..(j + 1) * k]) {
                *o += x * f(vj);
            }
        });
    }
    /// `v[j k + c] += x_ij a[c]` with `k = a.len()`; `k = 1` is [`Rows::axpy`].
    #[inline(always)]
    fn axpy_block(&self, i: usize, a: &[f64], v: &mut [f64]) {
        let k = a.len();
        if k == 1 {
            self.axpy(i, a[0], v);
            return;
        }
        self.for_each_nz(i, |j, x| {
            for (vj, &ac) in v[j * k..(j + 1) * k].iter_mut().zip(a) {
                *vj += x * ac;
            }
        });
    }
    /// `x_i . w` for a model of width `w.len()`, which may differ from the view's: a sparse
    /// index outside `w`, or a dense row of another width, is an error (prediction path).
    fn dot_checked(&self, i: usize, w: &[f64]) -> Result<f64>;
    /// A hint that row `i` is read soon, a few rows before [`Rows::prefetch_row`]: fetches
    /// what locating the row needs (a CSR row's offsets). No effect on results.
    #[inline(always)]
    fn prefetch_offsets(&self, _i: usize) {}
    /// A hint that row `i` is read soon: fetches its first entries into the cache (passes in
    /// random row order otherwise wait on memory at every row). No effect on results.
    #[inline(always)]
    fn prefetch_row(&self, _i: usize) {}
}

/// Asks the CPU to bring the cache line holding `p` into its caches (no effect on results; a
/// no-op off x86-64). `p` need not be dereferenceable: a prefetch never faults.
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht0` is part of SSE, which every x86-64 CPU has, and it reads nothing
    // architecturally: any address is allowed.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// A compressed-sparse-row matrix borrowed from Arrow buffers.
///
/// `indptr` may start anywhere (Arrow list arrays can be slices); row `i` is
/// `indices[indptr[i]..indptr[i + 1]]`.
#[derive(Debug, Clone, Copy)]
pub struct CsrView<'a> {
    indptr: &'a [i64],
    indices: &'a [u32],
    values: &'a [f64],
    n_cols: usize,
}

impl<'a> CsrView<'a> {
    /// Validates and wraps CSR buffers.
    ///
    /// Checks: `indptr` non-decreasing and inside the child arrays, every index `< n_cols`, no
    /// index twice in a row (unsorted rows are allowed), every value finite. Costs one pass over
    /// the non-zeros (plus a sort of each unsorted row).
    pub fn new(indptr: &'a [i64], indices: &'a [u32], values: &'a [f64], n_cols: usize) -> Result<Self> {
        if indptr.is_empty() {
            return Err(SdcaError::Internal("csr indptr must have n_rows + 1 entries".into()));
        }
        if indices.len() != values.len() {
            return Err(SdcaError::ShapeMismatch {
                what: "sparse indices and values",
                expected: indices.len(),
                got: values.len(),
            });
        }
        let mut scratch: Vec<u32> = Vec::new();
        for (row, w) in indptr.windows(2).enumerate() {
            let (lo, hi) = (w[0], w[1]);
            if lo < 0 || hi < lo || hi as usize > indices.len() {
                return Err(SdcaError::Internal(format!(
                    "row {row}: list offsets {lo}..{hi} outside the child arrays"
                )));
            }
            let (idx, val) = (&indices[lo as usize..hi as usize], &values[lo as usize..hi as usize]);
            for (&j, &x) in idx.iter().zip(val) {
                if j as usize >= n_cols {
                    return Err(SdcaError::IndexOutOfRange { row, index: j as i64, n_features: n_cols });
                }
                if !x.is_finite() {
                    return Err(SdcaError::NonFiniteFeature { row, value: x });
                }
            }
            // Duplicates: free for sorted rows (the common case); unsorted rows are sorted in a
            // scratch copy.
            if idx.windows(2).any(|p| p[0] >= p[1]) {
                scratch.clear();
                scratch.extend_from_slice(idx);
                scratch.sort_unstable();
                if let Some(p) = scratch.windows(2).find(|p| p[0] == p[1]) {
                    return Err(SdcaError::DuplicateIndex { row, index: p[0] });
                }
            }
        }
        Ok(Self { indptr, indices, values, n_cols })
    }

    #[inline(always)]
    fn span(&self, i: usize) -> (usize, usize) {
        debug_assert!(i + 1 < self.indptr.len());
        // SAFETY: `i < n_rows` is a caller invariant (solvers iterate over `0..n_rows`), and the
        // constructor checked that every `indptr` entry is a valid non-negative offset.
        unsafe { (*self.indptr.get_unchecked(i) as usize, *self.indptr.get_unchecked(i + 1) as usize) }
    }

    /// Number of stored entries in row `i`.
    pub fn row_nnz(&self, i: usize) -> usize {
        let (lo, hi) = self.span(i);
        hi - lo
    }

    /// Total number of stored entries over all rows.
    pub fn nnz(&self) -> usize {
        (self.indptr[self.indptr.len() - 1] - self.indptr[0]) as usize
    }

    /// The indices and values of row `i`.
    pub fn row(&self, i: usize) -> (&'a [u32], &'a [f64]) {
        let (lo, hi) = self.span(i);
        (&self.indices[lo..hi], &self.values[lo..hi])
    }
}

impl Rows for CsrView<'_> {
    fn n_rows(&self) -> usize {
        self.indptr.len() - 1
    }
    fn n_cols(&self) -> usize {
        self.n_cols
    }
    #[inline]
    fn dot(&self, i: usize, w: &[f64]) -> f64 {
        self.dot_map(i, w, |x| x)
    }
    #[inline]
    fn dot_map<F: Fn(f64) -> f64>(&self, i: usize, v: &[f64], f: F) -> f64 {
        assert!(v.len() >= self.n_cols);
        let (lo, hi) = self.span(i);
        let mut acc = 0.0;
        for k in lo..hi {
            // SAFETY: `lo..hi` lies inside the child arrays and every index is `< n_cols <=
            // v.len()`, both checked in `new` and by the assert above.
            unsafe {
                let j = *self.indices.get_unchecked(k) as usize;
                acc += *self.values.get_unchecked(k) * f(*v.get_unchecked(j));
            }
        }
        acc
    }
    #[inline]
    fn axpy(&self, i: usize, a: f64, v: &mut [f64]) {
        assert!(v.len() >= self.n_cols);
        let (lo, hi) = self.span(i);
        for k in lo..hi {
            // SAFETY: as in `dot_map`.
            unsafe {
                let j = *self.indices.get_unchecked(k) as usize;
                *v.get_unchecked_mut(j) += a * *self.values.get_unchecked(k);
            }
        }
    }
    fn sq_norm(&self, i: usize) -> f64 {
        self.row(i).1.iter().map(|x| x * x).sum()
    }
    #[inline]
    fn for_each_nz<F: FnMut(usize, f64)>(&self, i: usize, mut f: F) {
        let (idx, val) = self.row(i);
        for (&j, &x) in idx.iter().zip(val) {
            f(j as usize, x);
        }
    }
    #[inline(always)]
    fn prefetch_offsets(&self, i: usize) {
        prefetch(self.indptr.as_ptr().wrapping_add(i));
    }
    #[inline(always)]
    fn prefetch_row(&self, i: usize) {
        let lo = self.span(i).0;
        // The indices and the values of a row of 12 entries: one line and two.
        prefetch(self.indices.as_ptr().wrapping_add(lo));
        prefetch(self.values.as_ptr().wrapping_add(lo));
        prefetch(self.values.as_ptr().wrapping_add(lo + 8));
    }
    fn dot_checked(&self, i: usize, w: &[f64]) -> Result<f64> {
        let (idx, val) = self.row(i);
        let mut acc = 0.0;
        for (&j, &x) in idx.iter().zip(val) {
            match w.get(j as usize) {
                Some(wj) => acc += x * wj,
                None => {
                    return Err(SdcaError::IndexOutOfRange { row: i, index: j as i64, n_features: w.len() })
                }
            }
        }
        Ok(acc)
    }
}

/// A row-major dense matrix.
#[derive(Debug, Clone, Copy)]
pub struct DenseView<'a> {
    data: &'a [f64],
    n_rows: usize,
    n_cols: usize,
}

impl<'a> DenseView<'a> {
    /// Validates and wraps a row-major buffer of `n_rows * n_cols` finite values.
    pub fn new(data: &'a [f64], n_rows: usize, n_cols: usize) -> Result<Self> {
        // Checked: a shape whose product wraps around would accept a buffer too short to index.
        if n_rows.checked_mul(n_cols) != Some(data.len()) {
            return Err(SdcaError::ShapeMismatch {
                what: "dense feature buffer (n_rows * n_features)",
                expected: n_rows.saturating_mul(n_cols),
                got: data.len(),
            });
        }
        if let Some(k) = data.iter().position(|x| !x.is_finite()) {
            return Err(SdcaError::NonFiniteFeature { row: k / n_cols.max(1), value: data[k] });
        }
        Ok(Self { data, n_rows, n_cols })
    }

    /// Row `i` as a slice.
    #[inline(always)]
    pub fn row(&self, i: usize) -> &'a [f64] {
        &self.data[i * self.n_cols..(i + 1) * self.n_cols]
    }
}

impl Rows for DenseView<'_> {
    fn n_rows(&self) -> usize {
        self.n_rows
    }
    fn n_cols(&self) -> usize {
        self.n_cols
    }
    #[inline]
    fn dot(&self, i: usize, w: &[f64]) -> f64 {
        self.row(i).iter().zip(&w[..self.n_cols]).map(|(x, w)| x * w).sum()
    }
    #[inline]
    fn dot_map<F: Fn(f64) -> f64>(&self, i: usize, v: &[f64], f: F) -> f64 {
        self.row(i).iter().zip(&v[..self.n_cols]).map(|(x, v)| x * f(*v)).sum()
    }
    #[inline]
    fn axpy(&self, i: usize, a: f64, v: &mut [f64]) {
        for (vj, x) in v[..self.n_cols].iter_mut().zip(self.row(i)) {
            *vj += a * x;
        }
    }
    fn sq_norm(&self, i: usize) -> f64 {
        self.row(i).iter().map(|x| x * x).sum()
    }
    #[inline]
    fn for_each_nz<F: FnMut(usize, f64)>(&self, i: usize, mut f: F) {
        for (j, &x) in self.row(i).iter().enumerate() {
            f(j, x);
        }
    }
    #[inline(always)]
    fn dot_block<F: Fn(f64) -> f64>(&self, i: usize, v: &[f64], out: &mut [f64], f: F) {
        if out.len() == 1 {
            out[0] = self.dot_map(i, v, f);
            return;
        }
        dense_dot_block(self.row(i), v, out, &f)
    }
    #[inline(always)]
    fn axpy_block(&self, i: usize, a: &[f64], v: &mut [f64]) {
        if a.len() == 1 {
            self.axpy(i, a[0], v);
            return;
        }
        dense_axpy_block(self.row(i), a, v)
    }
    #[inline(always)]
    fn prefetch_row(&self, i: usize) {
        let row = self.data.as_ptr().wrapping_add(i * self.n_cols);
        for line in (0..self.n_cols.min(32)).step_by(8) {
            prefetch(row.wrapping_add(line));
        }
    }
    fn dot_checked(&self, i: usize, w: &[f64]) -> Result<f64> {
        if w.len() != self.n_cols {
            return Err(SdcaError::ShapeMismatch {
                what: "model width vs dense feature columns",
                expected: w.len(),
                got: self.n_cols,
            });
        }
        Ok(self.dot(i, w))
    }
}

/// Classes per sweep of the dense block kernels: each sweep's classes have their sums (or
/// their `a` values) in registers for the whole row.
const SWEEP: usize = 16;

/// Calls `$kernel::<W>($($arg),*, c0)` with `W = $width` (`1..=SWEEP`) a compile-time
/// constant, so that the loop over a sweep's classes unrolls into whole vector registers.
macro_rules! by_width {
    ($width:expr, $kernel:ident($($arg:expr),*)) => {
        match $width {
            1 => $kernel::<1>($($arg),*),
            2 => $kernel::<2>($($arg),*),
            3 => $kernel::<3>($($arg),*),
            4 => $kernel::<4>($($arg),*),
            5 => $kernel::<5>($($arg),*),
            6 => $kernel::<6>($($arg),*),
            7 => $kernel::<7>($($arg),*),
            8 => $kernel::<8>($($arg),*),
            9 => $kernel::<9>($($arg),*),
            10 => $kernel::<10>($($arg),*),
            11 => $kernel::<11>($($arg),*),
            12 => $kernel::<12>($($arg),*),
            13 => $kernel::<13>($($arg),*),
            14 => $kernel::<14>($($arg),*),
            15 => $kernel::<15>($($arg),*),
            _ => $kernel::<SWEEP>($($arg),*),
        }
    };
}

crate::simd::kernel! {
    /// `out[c] = sum_j x_j f(v[j k + c])` for a dense row `x` and `k = out.len() >= 2` scores,
    /// each feature's `k` weights being contiguous. The classes go in sweeps of up to
    /// [`SWEEP`], each a compile-time width whose sums stay in registers for the whole row: a
    /// loop over all `k` classes per feature instead kept the sums in memory, and each feature
    /// waited on the previous one's stores (1.7 times slower on a 784 x 10 block, 1.6 on 16 x
    /// 26); blocks of 8 (overlapping the block before when 8 does not divide `k`) swept a
    /// 784 x 10 row twice, each feature waiting on its two sums' latency (1.6 times slower
    /// than one sweep of 10, CPU time of 400,000 rows). Each score is still summed over the features in order, so the
    /// bits do not depend on the sweeps. Zero entries are not skipped: on Fashion-MNIST (half
    /// zeros) the mispredicted tests cost more than the skipped terms.
    #[inline(always)]
    fn dense_dot_block<F: Fn(f64) -> f64>(row: &[f64], v: &[f64], out: &mut [f64], f: &F)
        as dense_dot_block_portable {
        let k = out.len();
        debug_assert!(k >= 2 && v.len() >= row.len() * k);
        for c0 in (0..k).step_by(SWEEP) {
            by_width!((k - c0).min(SWEEP), dense_dot_sweep(row, v, out, f, c0));
        }
    }
}

/// [`dense_dot_block`]'s sweep over the `W` classes from `c0`.
#[inline(always)]
fn dense_dot_sweep<const W: usize>(
    row: &[f64],
    v: &[f64],
    out: &mut [f64],
    f: &impl Fn(f64) -> f64,
    c0: usize,
) {
    let k = out.len();
    let mut acc = [0.0f64; W];
    for (&x, vj) in row.iter().zip(v.chunks_exact(k)) {
        let w = &vj[c0..c0 + W];
        for c in 0..W {
            acc[c] += x * f(w[c]);
        }
    }
    out[c0..c0 + W].copy_from_slice(&acc);
}

crate::simd::kernel! {
    /// `v[j k + c] += x_j a[c]` for a dense row `x` and `k = a.len()`: one sweep over the row
    /// per [`SWEEP`] classes, the sweep's `a` values in registers (a loop over `a.len()`
    /// classes per feature kept a run-time trip count and a scalar tail: 2.1 times slower on a
    /// 784 x 10 block, 4 on 100 x 3).
    #[inline(always)]
    fn dense_axpy_block(row: &[f64], a: &[f64], v: &mut [f64]) as dense_axpy_block_portable {
        let k = a.len();
        debug_assert!(k >= 1 && v.len() >= row.len() * k);
        for c0 in (0..k).step_by(SWEEP) {
            by_width!((k - c0).min(SWEEP), dense_axpy_sweep(row, a, v, c0));
        }
    }
}

/// [`dense_axpy_block`]'s sweep over the `W` classes from `c0`.
#[inline(always)]
fn dense_axpy_sweep<const W: usize>(row: &[f64], a: &[f64], v: &mut [f64], c0: usize) {
    let k = a.len();
    let mut sweep = [0.0f64; W];
    sweep.copy_from_slice(&a[c0..c0 + W]);
    let a = sweep;
    for (&x, vj) in row.iter().zip(v.chunks_exact_mut(k)) {
        let w = &mut vj[c0..c0 + W];
        for c in 0..W {
            w[c] += x * a[c];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csr_kernels_match_dense() {
        let indptr = [0i64, 2, 2, 5];
        let indices = [3u32, 0, 1, 2, 3];
        let values = [1.0, 2.0, -1.0, 0.5, 4.0];
        let csr = CsrView::new(&indptr, &indices, &values, 4).unwrap();
        let dense_buf = [2.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.5, 4.0];
        let dense = DenseView::new(&dense_buf, 3, 4).unwrap();
        let w = [1.0, 2.0, 3.0, 4.0];
        for i in 0..3 {
            assert_eq!(csr.dot(i, &w), dense.dot(i, &w));
            assert_eq!(csr.sq_norm(i), dense.sq_norm(i));
            let (mut a, mut b) = ([0.0; 4], [0.0; 4]);
            csr.axpy(i, 2.0, &mut a);
            dense.axpy(i, 2.0, &mut b);
            assert_eq!(a, b);
        }
        assert_eq!(csr.nnz(), 5);
        assert!(csr.dot_checked(0, &w[..3]).is_err());
        assert_eq!(csr.dot_checked(1, &w[..1]).unwrap(), 0.0);
        assert!(dense.dot_checked(0, &w[..3]).is_err());
    }

    /// The dense block kernels (blocked, AVX2 when the CPU has it, and portable) give the bits of
    /// the generic per-entry loops of a CSR row storing every entry, zeros included, for every
    /// class count around the block widths.
    #[test]
    fn dense_block_kernels_match_the_per_entry_loops() {
        let (n, d) = (3, 7);
        let x: Vec<f64> =
            (0..n * d).map(|t| if t % 5 == 0 { 0.0 } else { ((t * 37) % 11) as f64 / 3.0 - 1.7 }).collect();
        let dense = DenseView::new(&x, n, d).unwrap();
        let indptr: Vec<i64> = (0..=n as i64).map(|i| i * d as i64).collect();
        let indices: Vec<u32> = (0..n * d).map(|t| (t % d) as u32).collect();
        let csr = CsrView::new(&indptr, &indices, &x, d).unwrap();
        for k in 2..=35 {
            let v: Vec<f64> = (0..(d + 1) * k).map(|t| ((t * 53) % 29) as f64 / 7.0 - 2.1).collect();
            let a: Vec<f64> = (0..k).map(|c| if c % 3 == 1 { 0.0 } else { c as f64 * 0.37 - 1.0 }).collect();
            let f = |w: f64| 0.5 * w;
            for i in 0..n {
                let (mut want, mut got, mut portable) = (vec![0.0; k], vec![0.0; k], vec![0.0; k]);
                csr.dot_block(i, &v, &mut want, f);
                dense.dot_block(i, &v, &mut got, f);
                dense_dot_block_portable(dense.row(i), &v, &mut portable, &f);
                assert_eq!(got, want, "scores, k = {k}, row {i}");
                assert_eq!(portable, want, "portable scores, k = {k}, row {i}");
                let (mut want, mut got, mut portable) = (v.clone(), v.clone(), v.clone());
                csr.axpy_block(i, &a, &mut want);
                dense.axpy_block(i, &a, &mut got);
                dense_axpy_block_portable(dense.row(i), &a, &mut portable);
                assert_eq!(got, want, "update, k = {k}, row {i}");
                assert_eq!(portable, want, "portable update, k = {k}, row {i}");
            }
        }
    }

    #[test]
    fn csr_rejects_bad_input() {
        let indptr = [0i64, 2];
        assert!(matches!(
            CsrView::new(&indptr, &[1, 1], &[1.0, 1.0], 3),
            Err(SdcaError::DuplicateIndex { row: 0, index: 1 })
        ));
        assert!(matches!(
            CsrView::new(&indptr, &[1, 7], &[1.0, 1.0], 3),
            Err(SdcaError::IndexOutOfRange { row: 0, index: 7, .. })
        ));
        assert!(matches!(
            CsrView::new(&indptr, &[1, 0], &[1.0, f64::NAN], 3),
            Err(SdcaError::NonFiniteFeature { row: 0, .. })
        ));
        // Sliced offsets (not starting at 0) are fine.
        let sliced = [2i64, 3];
        let v = CsrView::new(&sliced, &[0, 1, 2], &[1.0, 1.0, 5.0], 3).unwrap();
        assert_eq!(v.dot(0, &[1.0, 1.0, 1.0]), 5.0);
    }

    /// Found by the `csr` fuzz target: `2^32 x 2^32` wrapped to 0 and accepted an empty buffer.
    #[test]
    fn dense_rejects_a_shape_whose_size_overflows() {
        let err = DenseView::new(&[], 1 << 32, 1 << 32).unwrap_err();
        assert!(matches!(err, SdcaError::ShapeMismatch { expected: usize::MAX, got: 0, .. }), "{err}");
    }

    #[test]
    fn dense_rejects_non_finite() {
        let err = DenseView::new(&[1.0, f64::INFINITY, 0.0, 0.0], 2, 2).unwrap_err();
        assert_eq!(err, SdcaError::NonFiniteFeature { row: 0, value: f64::INFINITY });
    }
}
