//! The linear-chain CRF model: data, feature map, parameter layout and unary scores.
//!
//! Feature map (Le Priol et al. 2018 App. B). Token `t` of a sequence of
//! length `T` has attributes `x_t` (a row of width `A`, sparse or dense); its label `y_t` is in
//! `0..K`. The parameters are
//!
//! | block | shape | meaning |
//! |---|---|---|
//! | emission `E` | `K x A` | weight of attribute `a` under label `k` |
//! | `bias` | `K` | label `k` anywhere |
//! | `start` | `K` | label `k` at `t = 1` (`B[:, 1]`) |
//! | `end` | `K` | label `k` at `t = T` (`B[:, 2]`) |
//! | transition `W` | `K x K` | `y_t = k` followed by `y_{t+1} = l` |
//!
//! so `d = K A + 3K + K^2`, and the chain scores are
//!
//! ```text
//! theta_t(k) = sum_a x_{t,a} E[k,a] + bias[k] + [t=1] start[k] + [t=T] end[k]
//! theta_{t,t+1}(k,l) = W[k,l]
//! ```
//!
//! (for `T = 1` both `start` and `end` apply to the single token). Inside the solver the weights
//! live in one vector `w` in the order [emission attribute-major `A x K` | bias | start | end |
//! transition], so that the emission columns of one attribute are contiguous (a sparse token
//! reads and writes `K` adjacent numbers per attribute). [`CrfWeights`] is the exported,
//! label-major view.

use std::ops::Range;

use crate::data::{CsrView, DenseView, Rows};
use crate::error::{Result, SdcaError};

/// Row views that can list a row's stored entries: what the CRF needs beyond [`Rows`] (the
/// active attribute set of a sequence, for sparse scatter updates).
pub trait TokenRows: Rows {
    /// Calls `f(column, value)` for every stored entry of `row` (dense rows: every non-zero).
    fn for_each_entry<F: FnMut(usize, f64)>(&self, row: usize, f: F);
    /// The stored entries of `row` as slices (the loops over them need no closure).
    fn row_ref(&self, row: usize) -> RowRef<'_>;
    /// An upper bound on the number of entries [`TokenRows::for_each_entry`] visits in `rows`.
    fn entries_in(&self, rows: Range<usize>) -> usize;
}

/// A row's stored entries: sparse `(columns, values)`, or dense values (the non-zeros count).
#[derive(Debug, Clone, Copy)]
pub enum RowRef<'a> {
    /// Column indices and their values.
    Sparse(&'a [u32], &'a [f64]),
    /// One value per column.
    Dense(&'a [f64]),
}

impl TokenRows for CsrView<'_> {
    #[inline(always)]
    fn row_ref(&self, row: usize) -> RowRef<'_> {
        let (idx, val) = self.row(row);
        RowRef::Sparse(idx, val)
    }

    #[inline(always)]
    fn for_each_entry<F: FnMut(usize, f64)>(&self, row: usize, mut f: F) {
        let (idx, val) = self.row(row);
        for (&j, &x) in idx.iter().zip(val) {
            f(j as usize, x);
        }
    }

    fn entries_in(&self, rows: Range<usize>) -> usize {
        (rows.start..rows.end).map(|r| self.row(r).0.len()).sum()
    }
}

impl TokenRows for DenseView<'_> {
    #[inline(always)]
    fn row_ref(&self, row: usize) -> RowRef<'_> {
        RowRef::Dense(self.row(row))
    }

    #[inline(always)]
    fn for_each_entry<F: FnMut(usize, f64)>(&self, row: usize, mut f: F) {
        for (j, &x) in self.row(row).iter().enumerate() {
            if x != 0.0 {
                f(j, x);
            }
        }
    }

    fn entries_in(&self, rows: Range<usize>) -> usize {
        rows.len().saturating_mul(self.n_cols())
    }
}

/// Checks sequence offsets: `starts[0] = 0`, strictly increasing, `starts[n] = n_rows`.
pub(crate) fn check_starts(starts: &[usize], n_rows: usize) -> Result<()> {
    if starts.len() < 2 {
        return Err(SdcaError::Empty { what: "zero sequences" });
    }
    for (sequence, w) in starts.windows(2).enumerate() {
        let (start, end) = (w[0], w[1]);
        if end < start || end > n_rows || (sequence == 0 && start != 0) {
            return Err(SdcaError::SequenceOffsets { sequence, start, end, n_rows });
        }
        if end == start {
            return Err(SdcaError::EmptySequence { sequence, row: start });
        }
    }
    let last = starts[starts.len() - 1];
    if last != n_rows {
        return Err(SdcaError::ShapeMismatch {
            what: "last sequence offset vs feature rows",
            expected: n_rows,
            got: last,
        });
    }
    Ok(())
}

/// The training data of a CRF fit, validated together.
///
/// Sequence `i` is the token rows `starts[i]..starts[i + 1]` of `x`; `y` holds one label in
/// `0..n_labels` per row.
#[derive(Debug, Clone, Copy)]
pub struct CrfProblem<'a, D: TokenRows> {
    x: &'a D,
    starts: &'a [usize],
    y: &'a [u32],
    n_labels: usize,
    max_len: usize,
}

impl<'a, D: TokenRows> CrfProblem<'a, D> {
    /// Checks `n_labels >= 1`, one label per row and each `< n_labels`, and offsets that start at
    /// 0, strictly increase (no empty sequence) and end at the number of rows.
    pub fn new(x: &'a D, starts: &'a [usize], y: &'a [u32], n_labels: usize) -> Result<Self> {
        let n_rows = x.n_rows();
        if n_labels == 0 {
            return Err(SdcaError::InvalidParameter {
                name: "n_labels",
                message: "got 0; a crf needs at least one label".into(),
            });
        }
        if y.len() != n_rows {
            return Err(SdcaError::ShapeMismatch {
                what: "labels vs feature rows",
                expected: n_rows,
                got: y.len(),
            });
        }
        check_starts(starts, n_rows)?;
        if let Some(row) = y.iter().position(|&l| l as usize >= n_labels) {
            return Err(SdcaError::LabelOutOfRange { row, label: y[row], n_labels });
        }
        let max_len = starts.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
        Ok(Self { x, starts, y, n_labels, max_len })
    }

    /// The feature rows.
    pub fn x(&self) -> &'a D {
        self.x
    }

    /// The labels, one per row.
    pub fn y(&self) -> &'a [u32] {
        self.y
    }

    /// The sequence offsets (`n + 1` entries).
    pub fn starts(&self) -> &'a [usize] {
        self.starts
    }

    /// Number of labels `K`.
    pub fn n_labels(&self) -> usize {
        self.n_labels
    }

    /// Number of attributes `A` (feature columns).
    pub fn n_attributes(&self) -> usize {
        self.x.n_cols()
    }

    /// Number of sequences `n`.
    pub fn n_sequences(&self) -> usize {
        self.starts.len() - 1
    }

    /// Number of tokens `N` (rows).
    pub fn n_tokens(&self) -> usize {
        self.y.len()
    }

    /// Rows of sequence `i`.
    pub fn sequence(&self, i: usize) -> Range<usize> {
        self.starts[i]..self.starts[i + 1]
    }

    /// Length of the longest sequence.
    pub fn max_len(&self) -> usize {
        self.max_len
    }
}

/// Where each block sits in the solver's weight vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Labels `K`.
    pub k: usize,
    /// Attributes `A`.
    pub a: usize,
}

impl Layout {
    /// Offset of `[bias | start | end]` (3K numbers).
    #[inline]
    pub fn bias(&self) -> usize {
        self.a * self.k
    }
    /// Offset of the transition block (K^2 numbers).
    #[inline]
    pub fn trans(&self) -> usize {
        self.a * self.k + 3 * self.k
    }
    /// Dimension `d = K A + 3K + K^2`.
    #[inline]
    pub fn dim(&self) -> usize {
        self.trans() + self.k * self.k
    }
}

/// How an emission matrix is laid out: `E[k, a] = em[a * a_stride + k * k_stride]`; attributes
/// `>= n_attr` are ignored (unknown at prediction time).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Emission<'w> {
    pub em: &'w [f64],
    pub a_stride: usize,
    pub k_stride: usize,
    pub n_attr: usize,
}

/// Labels per register block of [`unary_scores`]: sixteen running scores (four AVX2 registers).
const COLS: usize = 16;

crate::simd::kernel! {
    /// Unary scores `theta` (`T x K`) of the token rows `rows`. Each score is `bias (+ start)
    /// (+ end)` plus the token's entries in their order; with the labels contiguous in `em`, a
    /// block of [`COLS`] scores stays in registers while the token's entries stream by (one pass
    /// over the entries per block).
    pub(crate) fn unary_scores<D: TokenRows>(
        x: &D,
        rows: Range<usize>,
        e: Emission<'_>,
        bias: (&[f64], &[f64], &[f64]),
        k: usize,
        theta: &mut [f64],
    ) as unary_scores_portable {
        let t_len = rows.len();
        debug_assert!(theta.len() == t_len * k);
        for (t, row) in rows.enumerate() {
            let th = &mut theta[t * k..(t + 1) * k];
            init_scores(th, bias, t, t_len);
            if e.k_stride == 1 {
                let mut c0 = 0;
                while c0 < k {
                    let w = (k - c0).min(COLS);
                    let mut acc = [0.0; COLS];
                    acc[..w].copy_from_slice(&th[c0..c0 + w]);
                    match x.row_ref(row) {
                        RowRef::Sparse(idx, val) => {
                            for (&a, &xv) in idx.iter().zip(val) {
                                add_scaled_row(&mut acc, w, e, a as usize, c0, xv);
                            }
                        }
                        RowRef::Dense(val) => {
                            for (a, &xv) in val.iter().enumerate() {
                                if xv != 0.0 {
                                    add_scaled_row(&mut acc, w, e, a, c0, xv);
                                }
                            }
                        }
                    }
                    th[c0..c0 + w].copy_from_slice(&acc[..w]);
                    c0 += COLS;
                }
            } else {
                x.for_each_entry(row, |a, xv| {
                    if a < e.n_attr {
                        let base = a * e.a_stride;
                        for (kk, s) in th.iter_mut().enumerate() {
                            *s += xv * e.em[base + kk * e.k_stride];
                        }
                    }
                });
            }
        }
    }
}

crate::simd::kernel! {
    /// [`unary_scores`] from a copy of only the emission rows a sequence reads: `em` holds them
    /// (`|rows| x K`, labels contiguous) and `loc[e]` is the row of the `e`-th entry
    /// of `rows` in [`TokenRows::for_each_entry`] order (counted over the whole range; every
    /// attribute known). The same operations in the same order as [`unary_scores`], so the
    /// same bits as scoring at the weights the rows were copied from: the parallel CRF solver's
    /// oracle threads score their own tokens from the rows the driver copied for them.
    pub(crate) fn unary_scores_local<D: TokenRows>(
        x: &D,
        rows: Range<usize>,
        loc: &[u32],
        em: &[f64],
        bias: (&[f64], &[f64], &[f64]),
        k: usize,
        theta: &mut [f64],
    ) as unary_scores_local_portable {
        let t_len = rows.len();
        debug_assert!(theta.len() == t_len * k);
        let mut first = 0;
        for (t, row) in rows.enumerate() {
            let th = &mut theta[t * k..(t + 1) * k];
            init_scores(th, bias, t, t_len);
            let r = x.row_ref(row);
            let mut e = first;
            let mut c0 = 0;
            while c0 < k {
                let w = (k - c0).min(COLS);
                let mut acc = [0.0; COLS];
                acc[..w].copy_from_slice(&th[c0..c0 + w]);
                e = first;
                match r {
                    RowRef::Sparse(_, val) => {
                        for &xv in val {
                            add_scaled_local(&mut acc, w, em, loc[e] as usize * k + c0, xv);
                            e += 1;
                        }
                    }
                    RowRef::Dense(val) => {
                        for &xv in val {
                            if xv != 0.0 {
                                add_scaled_local(&mut acc, w, em, loc[e] as usize * k + c0, xv);
                                e += 1;
                            }
                        }
                    }
                }
                th[c0..c0 + w].copy_from_slice(&acc[..w]);
                c0 += COLS;
            }
            first = e;
        }
    }
}

/// The attribute-free part of token `t`'s scores in a chain of `t_len`: `th = bias (+ start at
/// t = 0) (+ end at t = t_len - 1)`, added in that order. Shared by [`unary_scores`] and
/// [`unary_scores_local`], whose scores must have the same bits.
#[inline(always)]
fn init_scores(th: &mut [f64], (bias, start, end): (&[f64], &[f64], &[f64]), t: usize, t_len: usize) {
    th.copy_from_slice(bias);
    if t == 0 {
        th.iter_mut().zip(start).for_each(|(s, b)| *s += b);
    }
    if t + 1 == t_len {
        th.iter_mut().zip(end).for_each(|(s, b)| *s += b);
    }
}

/// `acc[..w] += xv * em[base..base + w]`: [`add_scaled_row`] on a copied row.
#[inline(always)]
fn add_scaled_local(acc: &mut [f64; COLS], w: usize, em: &[f64], base: usize, xv: f64) {
    if w == COLS {
        if let Ok(em) = <&[f64; COLS]>::try_from(&em[base..base + COLS]) {
            for c in 0..COLS {
                acc[c] += xv * em[c];
            }
        }
    } else {
        for (s, wv) in acc[..w].iter_mut().zip(&em[base..base + w]) {
            *s += xv * wv;
        }
    }
}

/// `acc[..w] += xv * E[c0..c0 + w, a]` (labels contiguous; unknown attributes ignored).
#[inline(always)]
fn add_scaled_row(acc: &mut [f64; COLS], w: usize, e: Emission<'_>, a: usize, c0: usize, xv: f64) {
    if a >= e.n_attr {
        return;
    }
    let base = a * e.a_stride + c0;
    if w == COLS {
        if let Ok(em) = <&[f64; COLS]>::try_from(&e.em[base..base + COLS]) {
            for c in 0..COLS {
                acc[c] += xv * em[c];
            }
        }
    } else {
        for (s, wv) in acc[..w].iter_mut().zip(&e.em[base..base + w]) {
            *s += xv * wv;
        }
    }
}

/// A fitted CRF's weights, borrowed and shape-checked: the input of prediction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CrfWeights<'a> {
    n_labels: usize,
    n_attributes: usize,
    emission: &'a [f64],
    transition: &'a [f64],
    start: &'a [f64],
    end: &'a [f64],
    bias: &'a [f64],
}

impl<'a> CrfWeights<'a> {
    /// Wraps weights after checking their shapes and finiteness: `emission` is `K x A`
    /// (`n_labels x n_attributes`) row-major (`emission[k * A + a]`), `transition` `K x K` (`transition[k * K + l]` for
    /// `y_t = k`, `y_{t+1} = l`), `start`, `end` and `bias` have `K` entries each.
    pub fn new(
        n_labels: usize,
        n_attributes: usize,
        emission: &'a [f64],
        transition: &'a [f64],
        start: &'a [f64],
        end: &'a [f64],
        bias: &'a [f64],
    ) -> Result<Self> {
        let k = n_labels;
        if k == 0 {
            return Err(SdcaError::InvalidParameter {
                name: "n_labels",
                message: "got 0; a crf needs at least one label".into(),
            });
        }
        for (what, got, expected) in [
            ("crf emission length (n_labels * n_attributes)", emission.len(), k.saturating_mul(n_attributes)),
            ("crf transition length (n_labels^2)", transition.len(), k.saturating_mul(k)),
            ("crf start length (n_labels)", start.len(), k),
            ("crf end length (n_labels)", end.len(), k),
            ("crf bias length (n_labels)", bias.len(), k),
        ] {
            if got != expected {
                return Err(SdcaError::ShapeMismatch { what, expected, got });
            }
        }
        for (name, v) in [
            ("emission", emission),
            ("transition", transition),
            ("start", start),
            ("end", end),
            ("bias", bias),
        ] {
            if let Some(x) = v.iter().find(|x| !x.is_finite()) {
                return Err(SdcaError::InvalidParameter {
                    name: "model",
                    message: format!("crf {name} weight {x} is not finite; refit the model"),
                });
            }
        }
        Ok(Self { n_labels: k, n_attributes, emission, transition, start, end, bias })
    }

    /// Builds a view of weights known to be consistent (fit output).
    pub(crate) fn from_parts(
        (n_labels, n_attributes): (usize, usize),
        emission: &'a [f64],
        transition: &'a [f64],
        (start, end, bias): (&'a [f64], &'a [f64], &'a [f64]),
    ) -> Self {
        debug_assert!(emission.len() == n_labels * n_attributes && transition.len() == n_labels * n_labels);
        Self { n_labels, n_attributes, emission, transition, start, end, bias }
    }

    /// Number of labels `K`.
    pub fn n_labels(&self) -> usize {
        self.n_labels
    }

    /// Number of attributes `A` the model knows.
    pub fn n_attributes(&self) -> usize {
        self.n_attributes
    }

    /// Emission weights, `K x A` row-major.
    pub fn emission(&self) -> &'a [f64] {
        self.emission
    }

    /// Transition weights, `K x K` row-major.
    pub fn transition(&self) -> &'a [f64] {
        self.transition
    }

    /// Label bias at the first token.
    pub fn start(&self) -> &'a [f64] {
        self.start
    }

    /// Label bias at the last token.
    pub fn end(&self) -> &'a [f64] {
        self.end
    }

    /// Label bias at every token.
    pub fn bias(&self) -> &'a [f64] {
        self.bias
    }

    /// The emission in the layout of [`unary_scores`].
    pub(crate) fn emission_view(&self) -> Emission<'a> {
        Emission { em: self.emission, a_stride: 1, k_stride: self.n_attributes, n_attr: self.n_attributes }
    }
}

/// Estimated peak bytes of a CRF fit of `problem` with `slots` concurrent steps (1 when
/// single-threaded, `2 n_threads` otherwise): the marginals `8 (K N + K^2 (N - n))`, the weights and their work copy `16 d`, per-sequence state (gaps, entropies, offsets,
/// sum tree), the per-sequence attribute index (`8` bytes per stored entry) and per slot the
/// step's work buffers (`O(T_max K^2 + |active| K)`).
pub fn memory_estimate<D: TokenRows>(problem: &CrfProblem<'_, D>, slots: usize) -> u64 {
    let x = problem.x();
    let entries = x.entries_in(0..problem.n_tokens());
    let max_entries =
        (0..problem.n_sequences()).map(|i| x.entries_in(problem.sequence(i))).max().unwrap_or(0);
    memory_bytes(
        (problem.n_tokens(), problem.n_sequences(), problem.max_len()),
        (problem.n_labels(), problem.n_attributes()),
        (entries, max_entries.min(problem.n_attributes())),
        slots,
    )
}

/// [`memory_estimate`] from the sizes: `(tokens, sequences, longest)`, `(labels, attributes)`,
/// `(stored entries, largest active set)` and the slot count.
pub(crate) fn memory_bytes(
    (n_tokens, n_sequences, max_len): (usize, usize, usize),
    (n_labels, n_attributes): (usize, usize),
    (entries, max_active): (usize, usize),
    slots: usize,
) -> u64 {
    let (nt, ns, k, a, tm) =
        (n_tokens as u128, n_sequences as u128, n_labels as u128, n_attributes as u128, max_len as u128);
    let mul = |xs: &[u128]| xs.iter().fold(1u128, |acc, &x| acc.saturating_mul(x));
    let slot = [
        // Scores, nu / delta nodes, log factors, forward-backward vectors: 9 T K numbers, plus
        // back-pointers, scale factors and edge scratch.
        mul(&[76, tm, k]),
        mul(&[16, tm]),
        mul(&[16, k, k]),
        // nu / delta edges.
        mul(&[8, tm.saturating_sub(1), k, k]),
        // The direction on the active attributes and the dense rest.
        mul(&[8, max_active as u128, k]),
        mul(&[24, k]),
        mul(&[8, k, k]),
        // The transitions at the weights of the slot's scores (parallel pipeline).
        mul(&[24, k, k]),
    ]
    .iter()
    .fold(0u128, |acc, &x| acc.saturating_add(x));
    let parts = [
        // Marginals: nodes and edges.
        mul(&[8, k, nt]),
        mul(&[8, k, k, nt.saturating_sub(ns)]),
        // Weights and their resync copy: 2 x 8 (K A + 3K + K^2).
        mul(&[16, a, k]),
        mul(&[48, k]),
        mul(&[16, k, k]),
        // Per sequence: gaps, entropies, offsets, block gaps, sum tree.
        mul(&[64, ns + 1]),
        mul(&[16, ns.max(1).next_power_of_two()]),
        // Attribute index: a position per stored entry, active sets, and the map building it.
        mul(&[8, entries as u128]),
        mul(&[4, a]),
        // Transition exponentials.
        mul(&[16, k, k]),
        mul(&[slots.max(1) as u128, slot]),
    ];
    let total = parts.iter().fold(0u128, |acc, &x| acc.saturating_add(x));
    u64::try_from(total).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problem_validation_names_the_sequence() {
        let x = DenseView::new(&[1.0; 10], 5, 2).unwrap();
        let y = [0u32, 1, 2, 0, 1];
        assert!(CrfProblem::new(&x, &[0, 1, 3, 5], &y, 3).is_ok());
        let p = CrfProblem::new(&x, &[0, 1, 3, 5], &y, 3).unwrap();
        assert_eq!((p.n_sequences(), p.n_tokens(), p.max_len(), p.sequence(1)), (3, 5, 2, 1..3));
        assert_eq!(
            CrfProblem::new(&x, &[0, 1, 3, 5], &y, 2).unwrap_err(),
            SdcaError::LabelOutOfRange { row: 2, label: 2, n_labels: 2 }
        );
        assert_eq!(
            CrfProblem::new(&x, &[0, 1, 1, 5], &y, 3).unwrap_err(),
            SdcaError::EmptySequence { sequence: 1, row: 1 }
        );
        assert_eq!(
            CrfProblem::new(&x, &[0, 3, 2, 5], &y, 3).unwrap_err(),
            SdcaError::SequenceOffsets { sequence: 1, start: 3, end: 2, n_rows: 5 }
        );
        assert!(matches!(
            CrfProblem::new(&x, &[1, 3, 5], &y, 3),
            Err(SdcaError::SequenceOffsets { sequence: 0, .. })
        ));
        assert!(matches!(CrfProblem::new(&x, &[0, 3, 4], &y, 3), Err(SdcaError::ShapeMismatch { .. })));
        assert!(matches!(
            CrfProblem::new(&x, &[0, 3, 7], &y, 3),
            Err(SdcaError::SequenceOffsets { sequence: 1, .. })
        ));
        assert!(matches!(CrfProblem::new(&x, &[0], &y, 3), Err(SdcaError::Empty { .. })));
        assert!(matches!(CrfProblem::new(&x, &[0, 5], &y[..4], 3), Err(SdcaError::ShapeMismatch { .. })));
        assert!(matches!(
            CrfProblem::new(&x, &[0, 5], &y, 0),
            Err(SdcaError::InvalidParameter { name: "n_labels", .. })
        ));
        let msg = CrfProblem::new(&x, &[0, 1, 1, 5], &y, 3).unwrap_err().to_string();
        assert!(msg.starts_with("sequence 1 (at row 1) is empty"), "{msg}");
    }

    #[test]
    fn unary_scores_follow_the_feature_map() {
        // Two labels, three attributes; the sparse row 1 has an attribute the model lacks.
        let indptr = [0i64, 2, 4];
        let indices = [0u32, 2, 1, 3];
        let values = [1.0, 2.0, -1.0, 5.0];
        let x = CsrView::new(&indptr, &indices, &values, 4).unwrap();
        let emission = [1.0, 2.0, 3.0, 10.0, 20.0, 30.0]; // K x A, A = 3
        let w = CrfWeights::new(2, 3, &emission, &[0.0; 4], &[0.5, 0.0], &[0.0, -0.5], &[1.0, 1.0]).unwrap();
        let mut theta = [0.0; 4];
        unary_scores(&x, 0..2, w.emission_view(), (w.bias(), w.start(), w.end()), 2, &mut theta);
        assert_eq!(theta, [1.0 + 0.5 + 7.0, 1.0 + 70.0, 1.0 - 2.0, 1.0 - 0.5 - 20.0]);
        // Single token: start and end both apply.
        let mut theta = [0.0; 2];
        unary_scores(&x, 0..1, w.emission_view(), (w.bias(), w.start(), w.end()), 2, &mut theta);
        assert_eq!(theta, [1.0 + 0.5 + 7.0, 1.0 - 0.5 + 70.0]);
    }

    /// The scores from copied rows have the bits of the scores from the whole weights, sparse
    /// and dense, with a label count that fills a register block and leaves a remainder.
    #[test]
    fn local_scores_match_unary_scores_bit_for_bit() {
        let (t_len, a, k) = (5, 11, COLS + 3);
        let mut seed = 7u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        };
        // Dense rows with zeros (skipped) and a sparse view of the same entries plus an explicit
        // zero (kept: a stored entry).
        let mut dense = vec![0.0; t_len * a];
        let (mut indptr, mut indices, mut values) = (vec![0i64], vec![], vec![]);
        for r in 0..t_len {
            for c in 0..a {
                if (r + c) % 3 != 0 {
                    dense[r * a + c] = next();
                    indices.push(c as u32);
                    values.push(dense[r * a + c]);
                } else if r == 2 && c == 4 {
                    indices.push(c as u32);
                    values.push(0.0);
                }
            }
            indptr.push(indices.len() as i64);
        }
        let em_full: Vec<f64> = (0..a * k).map(|_| next() * 1e3).collect();
        let b: Vec<f64> = (0..3 * k).map(|_| next()).collect();
        let bias = (&b[..k], &b[k..2 * k], &b[2 * k..]);
        let e = Emission { em: &em_full, a_stride: k, k_stride: 1, n_attr: a };
        let sparse = CsrView::new(&indptr, &indices, &values, a).unwrap();
        let dview = DenseView::new(&dense, t_len, a).unwrap();
        fn local<D: TokenRows>(x: &D, t_len: usize, em_full: &[f64], k: usize) -> (Vec<u32>, Vec<f64>) {
            let (mut active, mut loc) = (Vec::<usize>::new(), vec![]);
            for r in 0..t_len {
                x.for_each_entry(r, |c, _| {
                    let q = active.iter().position(|&x| x == c).unwrap_or_else(|| {
                        active.push(c);
                        active.len() - 1
                    });
                    loc.push(q as u32);
                });
            }
            (loc, active.iter().flat_map(|&c| em_full[c * k..(c + 1) * k].to_vec()).collect())
        }
        for rows in [0..t_len, 1..2, 2..4] {
            let nn = rows.len() * k;
            let (mut want, mut got) = (vec![0.0; nn], vec![0.0; nn]);
            unary_scores(&sparse, rows.clone(), e, bias, k, &mut want);
            let skip: usize = (0..rows.start).map(|r| sparse.row(r).0.len()).sum();
            let (loc, em) = local(&sparse, t_len, &em_full, k);
            unary_scores_local(&sparse, rows.clone(), &loc[skip..], &em, bias, k, &mut got);
            assert!(want.iter().zip(&got).all(|(x, y)| x.to_bits() == y.to_bits()), "sparse {rows:?}");
            unary_scores(&dview, rows.clone(), e, bias, k, &mut want);
            let skip: usize =
                (0..rows.start).map(|r| dview.row(r).iter().filter(|&&v| v != 0.0).count()).sum();
            let (loc, em) = local(&dview, t_len, &em_full, k);
            unary_scores_local(&dview, rows.clone(), &loc[skip..], &em, bias, k, &mut got);
            assert!(want.iter().zip(&got).all(|(x, y)| x.to_bits() == y.to_bits()), "dense {rows:?}");
        }
    }

    #[test]
    fn weights_are_shape_checked() {
        let ok = CrfWeights::new(2, 3, &[0.0; 6], &[0.0; 4], &[0.0; 2], &[0.0; 2], &[0.0; 2]).unwrap();
        assert_eq!(ok.n_attributes(), 3);
        assert!(CrfWeights::new(2, 3, &[0.0; 5], &[0.0; 4], &[0.0; 2], &[0.0; 2], &[0.0; 2]).is_err());
        assert!(CrfWeights::new(2, 3, &[0.0; 6], &[0.0; 3], &[0.0; 2], &[0.0; 2], &[0.0; 2]).is_err());
        assert!(CrfWeights::new(2, 3, &[0.0; 6], &[0.0; 4], &[0.0; 2], &[0.0; 1], &[0.0; 2]).is_err());
        assert!(CrfWeights::new(2, 3, &[f64::NAN; 6], &[0.0; 4], &[0.0; 2], &[0.0; 2], &[0.0; 2]).is_err());
        assert!(CrfWeights::new(0, 0, &[], &[], &[], &[], &[]).is_err());
    }

    #[test]
    fn memory_estimate_is_dominated_by_edges() {
        // POS-like: N = 9.1e5 tokens, n = 38 219 sequences, K = 45: about 13 GiB of edges.
        let bytes = memory_bytes((910_000, 38_219, 200), (45, 190_000), (910_000 * 13, 2_600), 16);
        let edges = 8.0 * 45.0 * 45.0 * (910_000.0 - 38_219.0);
        assert!(bytes as f64 > edges && (bytes as f64) < 1.1 * edges, "{bytes}");
        let max = usize::MAX;
        assert_eq!(memory_bytes((max, 1, max), (max, max), (max, max), max), u64::MAX);
    }
}
