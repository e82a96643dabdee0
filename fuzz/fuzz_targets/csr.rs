//! `CsrView::new` and `DenseView::new` on arbitrary, possibly invalid buffers, then every row
//! accessor of the views they accept.
//!
//! These constructors are the only gate between user data and the solvers' unchecked indexing
//! (the plugin's `src/convert.rs` validates every Polars column into them), so a view that
//! exists must be safe to read. An independent validity oracle written here must agree with
//! the constructors: a valid buffer is accepted, an invalid one gets a typed error, never a
//! panic. Accepted views are read through every accessor and compared with sums done here.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use sdca_core::crf::TokenRows;
use sdca_core::{CsrView, DenseView, Rows};
use sdca_core_fuzz::{fill, not_internal, same, Num};

/// Row pointers: raw (mostly invalid) or built from small steps (mostly valid).
#[derive(Arbitrary, Debug)]
enum Offsets {
    Raw(Vec<i64>),
    Steps { start: u8, steps: Vec<u8> },
}

#[derive(Arbitrary, Debug)]
struct Input {
    offsets: Offsets,
    indices: Vec<u32>,
    /// Reduce indices modulo `n_cols + slack` (mostly valid, sometimes one past the end).
    index_slack: Option<u8>,
    values: Vec<Num>,
    /// Extra values beyond the indices (a length mismatch when non-zero).
    extra_values: u8,
    n_cols: u16,
    /// Model weights for `dot_checked` (any width).
    w: Vec<Num>,
    dense: Vec<Num>,
    dense_rows: u64,
    dense_cols: u64,
}

/// The rules `CsrView::new` documents, checked independently.
fn csr_is_valid(indptr: &[i64], indices: &[u32], values: &[f64], n_cols: usize) -> bool {
    if indptr.is_empty() || indices.len() != values.len() {
        return false;
    }
    indptr.windows(2).all(|p| {
        let (lo, hi) = (p[0], p[1]);
        if lo < 0 || hi < lo || hi > indices.len() as i64 {
            return false;
        }
        let row = lo as usize..hi as usize;
        let mut seen = indices[row.clone()].to_vec();
        seen.sort_unstable();
        seen.dedup();
        seen.len() == row.len()
            && indices[row.clone()].iter().all(|&j| (j as usize) < n_cols)
            && values[row].iter().all(|x| x.is_finite())
    })
}

fn check_csr(input: &Input) {
    let n_cols = input.n_cols as usize % 64;
    let indptr: Vec<i64> = match &input.offsets {
        Offsets::Raw(v) => v.iter().take(64).copied().collect(),
        Offsets::Steps { start, steps } => {
            let mut at = *start as i64 % 4;
            std::iter::once(at)
                .chain(steps.iter().take(63).map(|&s| {
                    at += s as i64 % 6;
                    at
                }))
                .collect()
        }
    };
    let indices: Vec<u32> = input
        .indices
        .iter()
        .take(256)
        .map(|&j| match input.index_slack {
            Some(slack) => j % (n_cols as u32 + slack as u32 % 3).max(1),
            None => j,
        })
        .collect();
    let values = fill(&input.values, indices.len() + input.extra_values as usize % 2);
    let valid = csr_is_valid(&indptr, &indices, &values, n_cols);
    let view = match CsrView::new(&indptr, &indices, &values, n_cols) {
        Ok(view) => view,
        Err(e) => {
            assert!(!valid, "valid csr rejected: {e}");
            // Bad offsets are `Internal` on purpose: Arrow never produces them.
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    assert!(valid, "invalid csr accepted: {indptr:?} {indices:?} {values:?} n_cols {n_cols}");
    let n = indptr.len() - 1;
    assert_eq!((view.n_rows(), view.n_cols()), (n, n_cols));
    assert_eq!(view.nnz() as i64, indptr[n] - indptr[0]);
    let w = fill(&input.w, n_cols);
    for i in 0..n {
        let (lo, hi) = (indptr[i] as usize, indptr[i + 1] as usize);
        let (idx, val) = view.row(i);
        assert_eq!((idx, val), (&indices[lo..hi], &values[lo..hi]));
        assert_eq!(view.row_nnz(i), hi - lo);
        let dot = idx.iter().zip(val).fold(0.0, |acc, (&j, &x)| acc + x * w[j as usize]);
        assert!(same(view.dot(i, &w), dot));
        assert!(same(
            view.dot_map(i, &w, |v| 2.0 * v),
            idx.iter().zip(val).fold(0.0, |acc, (&j, &x)| acc + x * (2.0 * w[j as usize]))
        ));
        assert!(same(view.sq_norm(i), val.iter().map(|x| x * x).sum()));
        let mut scattered = vec![0.0; n_cols];
        view.axpy(i, 1.0, &mut scattered);
        let mut entries = Vec::new();
        view.for_each_entry(i, |j, x| entries.push((j, x)));
        assert_eq!(entries.len(), hi - lo);
        for (j, x) in entries {
            assert!(same(scattered[j], x));
        }
        // Any model width: Ok exactly when every index of the row fits.
        let narrow = fill(&input.w, input.w.len() % 70);
        assert_eq!(view.dot_checked(i, &narrow).is_ok(), idx.iter().all(|&j| (j as usize) < narrow.len()));
    }
}

fn check_dense(input: &Input) {
    let data = fill(&input.dense, input.dense.len() % 130);
    // Shapes include products that overflow `usize`.
    let (n_rows, n_cols) = (input.dense_rows as usize, input.dense_cols as usize);
    let valid = n_rows.checked_mul(n_cols) == Some(data.len()) && data.iter().all(|x| x.is_finite());
    let view = match DenseView::new(&data, n_rows, n_cols) {
        Ok(view) => view,
        Err(e) => {
            assert!(!valid, "valid dense rejected: {e}");
            not_internal(&e);
            return;
        }
    };
    assert!(valid, "invalid dense accepted: {} values as {n_rows} x {n_cols}", data.len());
    if n_rows == 0 {
        return; // zero rows of any width (even 2^60): nothing to read
    }
    let w = fill(&input.w, n_cols);
    // More than 129 rows only when n_cols = 0: the rows past the first are alike.
    for i in 0..n_rows.min(130) {
        let row = view.row(i);
        assert_eq!(row, &data[i * n_cols..(i + 1) * n_cols]);
        assert!(same(view.dot(i, &w), row.iter().zip(&w).map(|(x, w)| x * w).sum()));
        assert!(view.dot_checked(i, &w).is_ok());
        assert_eq!(view.dot_checked(i, &w[..n_cols.saturating_sub(1)]).is_ok(), n_cols == 0);
    }
}

fuzz_target!(|input: Input| {
    check_csr(&input);
    check_dense(&input);
});
