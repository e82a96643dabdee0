//! Structured inputs shared by the fuzz targets (`fuzz_targets/`), built with `arbitrary`.
//!
//! Raw bytes rarely decode into a problem a solver accepts, so the targets draw shapes, values
//! and parameters from small structured types instead: every input is a problem of bounded size
//! (so one execution is fast and cannot hang), and the fuzzer still reaches every validation
//! error as well as the solvers themselves. Floats come from [`Num`], which favours the values
//! that break numerical code (zero, huge and tiny magnitudes, NaN, infinities, subnormals).

use arbitrary::Arbitrary;
use sdca_core::SdcaError;

/// The contract's objective, recomputed independently (shared with the property tests).
#[path = "../../crates/sdca-core/tests/support/mod.rs"]
pub mod reference;

/// A float, drawn mostly from the magnitudes that break numerical code.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Num {
    /// `0.0`.
    Zero,
    /// `1.0`.
    One,
    /// `-1.0`.
    MinusOne,
    /// `k / 4096` in `[-8, 8)`: the well-scaled range.
    Unit(i16),
    /// `+-10^e`, `e` in `[-330, 330]`: from subnormal to overflow.
    Pow10 {
        /// Sign.
        negative: bool,
        /// Exponent (taken modulo 661, shifted).
        exponent: u16,
    },
    /// `+-1e150`: its square is finite, its cube is not.
    Huge(bool),
    /// `+-1e-150`: its square is tiny but not zero.
    Tiny(bool),
    /// Any bit pattern (NaN, infinities, subnormals included).
    Raw(f64),
}

impl Num {
    /// The value.
    pub fn get(self) -> f64 {
        let sign = |negative: bool| if negative { -1.0 } else { 1.0 };
        match self {
            Num::Zero => 0.0,
            Num::One => 1.0,
            Num::MinusOne => -1.0,
            Num::Unit(k) => k as f64 / 4096.0,
            Num::Pow10 { negative, exponent } => sign(negative) * 10f64.powi((exponent % 661) as i32 - 330),
            Num::Huge(negative) => sign(negative) * 1e150,
            Num::Tiny(negative) => sign(negative) * 1e-150,
            Num::Raw(x) => x,
        }
    }
}

/// `len` values taken cyclically from `pool` (zeros when it is empty).
pub fn fill(pool: &[Num], len: usize) -> Vec<f64> {
    if pool.is_empty() {
        return vec![0.0; len];
    }
    pool.iter().cycle().take(len).map(|v| v.get()).collect()
}

/// A feature matrix: shape, values, which entries are stored, and the storage.
#[derive(Arbitrary, Debug)]
pub struct Matrix {
    rows: u8,
    cols: u8,
    values: Vec<Num>,
    /// Stored-entry pattern, bit per entry, used cyclically (empty: every entry stored).
    mask: Vec<u8>,
    sparse: bool,
    /// Store each CSR row in decreasing index order (unsorted rows are allowed).
    reversed: bool,
}

/// A [`Matrix`] as the buffers the views borrow, with a dense copy for the reference checks.
#[derive(Debug, Clone)]
pub struct Built {
    /// Rows.
    pub n: usize,
    /// Columns.
    pub d: usize,
    /// Row-major `n x d` values (0 where nothing is stored).
    pub dense: Vec<f64>,
    /// CSR row pointer.
    pub indptr: Vec<i64>,
    /// CSR column indices.
    pub indices: Vec<u32>,
    /// CSR values (explicit zeros included where stored).
    pub values: Vec<f64>,
    /// Whether the target should read the CSR buffers (else the dense ones).
    pub sparse: bool,
}

impl Matrix {
    /// Builds at most `max_rows x max_cols` (rows may be 0).
    pub fn build(&self, max_rows: usize, max_cols: usize) -> Built {
        let (n, d) = (self.rows as usize % (max_rows + 1), self.cols as usize % (max_cols + 1));
        let stored =
            |k: usize| self.mask.is_empty() || self.mask[(k / 8) % self.mask.len()] >> (k % 8) & 1 == 1;
        let pool = fill(&self.values, n * d);
        let dense: Vec<f64> = (0..n * d).map(|k| if stored(k) { pool[k] } else { 0.0 }).collect();
        let (mut indptr, mut indices, mut values) = (vec![0i64], Vec::new(), Vec::new());
        for i in 0..n {
            let mut row: Vec<usize> = (0..d).filter(|&j| stored(i * d + j)).collect();
            if self.reversed {
                row.reverse();
            }
            indices.extend(row.iter().map(|&j| j as u32));
            values.extend(row.iter().map(|&j| dense[i * d + j]));
            indptr.push(indices.len() as i64);
        }
        Built { n, d, dense, indptr, indices, values, sparse: self.sparse }
    }
}

/// Fails the run on an error that reports a bug: `Internal` says "please report".
pub fn not_internal(e: &SdcaError) {
    assert!(!matches!(e, SdcaError::Internal(_)), "internal error reached: {e}");
    assert!(!e.to_string().is_empty());
}

/// Whether `x` and `y` are the same float (NaN equal to NaN).
pub fn same(x: f64, y: f64) -> bool {
    x == y || (x.is_nan() && y.is_nan())
}
