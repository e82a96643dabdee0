//! The CRF entries on tiny random sequences: `CrfProblem::new`, `crf_fit`, then `crf_predict`
//! and `crf_marginals` with the fitted model and with an arbitrary (possibly invalid) one.
//!
//! Inputs: up to 24 token rows of up to 6 attributes (dense or CSR, values from [`Num`]), up to
//! 5 labels, sequence offsets built from small lengths (empty sequences included) or raw, and
//! every `CrfParams` field (`max_epochs <= 16` bounds each run; `max_seconds` stays unset so a
//! failure replays exactly). Errors must be typed and not `Internal`. A fit that returns `Ok`
//! must have finite outputs, `gap >= 0`, `P - D = gap`, per-sequence gaps averaging to `gap`,
//! `converged => gap <= tol P`; prediction must return labels in `0..K` and marginals that are
//! distributions.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use sdca_core::crf::{
    crf_fit, crf_marginals, crf_predict, CrfFit, CrfParams, CrfProblem, CrfWeights, TokenRows,
};
use sdca_core::{CsrView, DenseView};
use sdca_core_fuzz::reference::{REL, UNDERFLOW};
use sdca_core_fuzz::{fill, not_internal, Built, Matrix, Num};

#[derive(Arbitrary, Debug)]
struct Params {
    l2: Option<Num>,
    tol: Num,
    max_epochs: u8,
    check_every: u8,
    sampling: u8,
    non_uniform: Num,
    line_search_tol: Num,
    seed: u16,
    max_memory: Option<u16>,
    max_sequence_length: Option<u8>,
}

impl Params {
    fn get(&self) -> CrfParams {
        CrfParams {
            l2: self.l2.map(Num::get),
            tol: self.tol.get(),
            max_epochs: self.max_epochs as i64 % 17,
            check_every: self.check_every as i64 % 4 - 1,
            sampling: ["uniform", "gap", "max"][self.sampling as usize % 3].into(),
            non_uniform: self.non_uniform.get(),
            line_search_tol: self.line_search_tol.get(),
            seed: self.seed as i64,
            max_memory: self.max_memory.map(|m| m as i64 * 64),
            max_seconds: None,
            max_sequence_length: self.max_sequence_length.map(|m| m as i64 % 8),
            n_threads: Some(self.seed as i64 % 3 + 1),
        }
    }
}

/// Model weights for prediction: values and whether each block has one entry too many.
#[derive(Arbitrary, Debug)]
struct Model {
    n_labels: u8,
    n_attributes: u8,
    values: Vec<Num>,
    wide: [bool; 5],
}

#[derive(Arbitrary, Debug)]
struct Input {
    x: Matrix,
    n_labels: u8,
    labels: Vec<u8>,
    /// Sequence lengths (the last sequence takes the remaining rows).
    lengths: Vec<u8>,
    /// Raw offsets instead of `lengths`.
    raw_starts: Option<Vec<u8>>,
    params: Params,
    model: Model,
}

/// Offsets from lengths `0..=5` (0 makes an empty sequence), ending at `n_rows`.
fn starts(input: &Input, n_rows: usize) -> Vec<usize> {
    if let Some(raw) = &input.raw_starts {
        return raw.iter().take(32).map(|&s| s as usize).collect();
    }
    let mut out = vec![0];
    let mut at = 0;
    for &len in input.lengths.iter().take(32) {
        at = (at + len as usize % 6).min(n_rows);
        out.push(at);
    }
    if at < n_rows || out.len() == 1 {
        out.push(n_rows);
    }
    out
}

/// Predictions of `model` on `x`: labels in `0..K`, marginals that sum to 1 per token.
fn check_predict<D: TokenRows>(model: &CrfWeights<'_>, x: &D, starts: &[usize]) {
    let k = model.n_labels();
    match crf_predict(model, x, starts) {
        Ok(labels) => assert!(labels.iter().all(|&l| (l as usize) < k), "labels {labels:?} with {k} labels"),
        Err(e) => return not_internal(&e),
    }
    let m = match crf_marginals(model, x, starts) {
        Ok(m) => m,
        Err(e) => return not_internal(&e), // scores that overflowed
    };
    assert!(m.log_partition.iter().all(|z| !z.is_nan()), "log Z {:?}", m.log_partition);
    for token in m.node.chunks(k) {
        let total: f64 = token.iter().sum();
        assert!(
            token.iter().all(|p| (0.0..=1.0 + 1e-12).contains(p)) && (total - 1.0).abs() <= 1e-9,
            "marginals {token:?}"
        );
    }
}

/// Mean over the sequences of a bound on `|s(y)|` and `|log Z|`: the sum over tokens of the
/// largest `|theta_t(k)|` counted term by term, the transitions, and `T ln K`.
fn score_scale(fit: &CrfFit, m: &Built, starts: &[usize]) -> f64 {
    let (k, a) = (fit.n_labels, fit.n_attributes);
    let top = |v: &[f64]| v.iter().fold(0.0f64, |t, x| t.max(x.abs()));
    let per_token = |row: usize| {
        (0..k)
            .map(|l| (0..a).map(|j| (m.dense[row * m.d + j] * fit.emission[l * a + j]).abs()).sum::<f64>())
            .fold(0.0f64, f64::max)
            + top(&fit.bias)
            + top(&fit.start)
            + top(&fit.end)
            + top(&fit.transition)
            + (k as f64).ln()
    };
    let total: f64 = starts.windows(2).flat_map(|w| w[0]..w[1]).map(per_token).sum();
    total / fit.n_sequences as f64
}

fn run<D: TokenRows>(x: &D, m: &Built, input: &Input) {
    let starts = starts(input, m.n);
    let n_labels = input.n_labels as usize % 6;
    let y: Vec<u32> = (0..m.n).map(|i| input.labels.get(i).map_or(0, |&l| l as u32 % 7)).collect();

    // An arbitrary model: shapes may be wrong, values anything.
    let md = &input.model;
    let (k, a) = (md.n_labels as usize % 6, md.n_attributes as usize % 8);
    let lens = [k * a, k * k, k, k, k];
    let [emission, transition, start, end, bias]: [Vec<f64>; 5] =
        std::array::from_fn(|b| fill(&md.values, lens[b] + md.wide[b] as usize));
    match CrfWeights::new(k, a, &emission, &transition, &start, &end, &bias) {
        Ok(model) => check_predict(&model, x, &starts),
        Err(e) => not_internal(&e),
    }

    let cfg = match input.params.get().check() {
        Ok(cfg) => cfg,
        Err(e) => return not_internal(&e),
    };
    let problem = match CrfProblem::new(x, &starts, &y, n_labels) {
        Ok(p) => p,
        Err(e) => return not_internal(&e),
    };
    let fit = match crf_fit(&problem, &cfg) {
        Ok(fit) => fit,
        Err(e) => return not_internal(&e),
    };
    let scalars = [fit.l2, fit.primal, fit.dual, fit.gap, fit.mean_line_search_iters];
    let blocks = [&fit.emission, &fit.transition, &fit.start, &fit.end, &fit.bias, &fit.block_gaps];
    assert!(
        scalars.iter().chain(blocks.iter().copied().flatten()).all(|v| v.is_finite()),
        "non-finite output: {fit:?}"
    );
    // As for linear fits: an early check may have had no finite bound yet (+inf, at scores near
    // f64's limit); a NaN or negative entry is never valid.
    assert!(fit.gap_trace.iter().all(|g| *g >= 0.0), "gap trace entry NaN or < 0: {fit:?}");
    // P and D each hold log Z - s(y) per sequence: their rounding scales with the path scores.
    let scale = fit.primal.abs() + fit.dual.abs() + score_scale(&fit, m, &starts);
    let off = (fit.primal - fit.dual - fit.gap).abs();
    assert!(
        fit.gap >= 0.0 && off <= REL * scale + UNDERFLOW,
        "certificate off by {off} (scale {scale}): {fit:?}"
    );
    let mean = fit.block_gaps.iter().sum::<f64>() / fit.n_sequences as f64;
    assert!(fit.block_gaps.iter().all(|g| *g >= 0.0), "block gaps {:?}", fit.block_gaps);
    assert!((mean - fit.gap).abs() <= REL * fit.gap + UNDERFLOW, "block gaps mean {mean} vs gap {}", fit.gap);
    assert!(!fit.converged() || fit.gap <= cfg.tol * fit.primal.max(f64::MIN_POSITIVE), "converged {fit:?}");
    assert!(fit.epochs <= cfg.max_epochs, "{} epochs > {}", fit.epochs, cfg.max_epochs);
    check_predict(&fit.weights(), x, &starts);
}

fuzz_target!(|input: Input| {
    let m = input.x.build(24, 6);
    if m.sparse {
        match CsrView::new(&m.indptr, &m.indices, &m.values, m.d) {
            Ok(x) => run(&x, &m, &input),
            Err(e) => not_internal(&e),
        }
    } else {
        match DenseView::new(&m.dense, m.n, m.d) {
            Ok(x) => run(&x, &m, &input),
            Err(e) => not_internal(&e),
        }
    }
});
