//! Memory that grows with the data: sized and checked before it is allocated (DESIGN.md
//! section 6).
//!
//! Some sizes are not bounded by the size of the input: the model width is the largest sparse
//! index plus one (a hashed feature or a corrupt row can make it 2^32), a multiclass fit keeps
//! `n k` duals (an id column passed as the label makes `k = n`), a CRF keeps `K^2` pairwise
//! marginals per token. Every such allocation goes through this module:
//!
//! 1. the fit's size is estimated in bytes ([`linear_bytes`], [`crate::crf::memory_estimate`])
//!    and checked by a [`Budget`] against `max_memory` when the user gave one, else against a
//!    default budget that the caller passes (the plugin passes half of the machine's physical
//!    memory, or of its cgroup limit), before anything is allocated. Over the limit, the error
//!    is [`SdcaError::MemoryLimit`], which names the cause in the data (`the largest sparse
//!    index is 4,294,967,290`, `100,000 classes for 100,000 rows`) and the fix;
//! 2. the allocation itself is fallible ([`zeros`], `try_reserve_exact`): a refusal by the
//!    operating system (an address-space limit, a container's memory limit) is
//!    [`SdcaError::AllocationFailed`], never an abort of the user's process.
//!
//! Callers: the plugin's conversion (with what it knows about the width: the largest sparse
//! index, `n_features`, a vector column) and the core's fit entries ([`crate::fit_from`],
//! [`crate::crf::crf_fit`]); the solvers allocate their data-sized arrays with [`zeros`].

use crate::error::{Result, SdcaError};

/// The limit a fit's estimated memory is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Bytes; `None`: no limit (a core caller without a default budget).
    limit: Option<u64>,
    /// Whether the limit is the user's `max_memory` (else the default budget).
    max_memory: bool,
}

impl Budget {
    /// `max_memory` when given, else the caller's `default` budget (`None`: no limit).
    pub fn new(max_memory: Option<u64>, default: Option<u64>) -> Self {
        match max_memory {
            Some(limit) => Self { limit: Some(limit), max_memory: true },
            None => Self { limit: default, max_memory: false },
        }
    }

    /// The limit in bytes, if any.
    pub fn limit(&self) -> Option<u64> {
        self.limit
    }

    /// `Ok` when `needed` bytes fit; else [`SdcaError::MemoryLimit`] with the cause `cause`
    /// builds (only called on failure).
    pub fn check(&self, needed: u64, cause: impl FnOnce() -> Cause) -> Result<()> {
        match self.limit {
            Some(limit) if needed > limit => {
                let Cause { cause, what, fix } = cause();
                let fix = if self.max_memory { format!("raise max_memory, or {fix}") } else { fix };
                Err(SdcaError::MemoryLimit { cause, what, needed, limit, max_memory: self.max_memory, fix })
            }
            _ => Ok(()),
        }
    }
}

/// What makes a fit large, for [`SdcaError::MemoryLimit`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// The quantity in the data, e.g. `100,000 classes for 100,000 rows`.
    pub cause: String,
    /// What would be allocated, e.g. `the model`, `the dual variables`.
    pub what: &'static str,
    /// How to make it smaller.
    pub fix: String,
}

/// A zeroed vector of `len` elements, allocated fallibly: a refused allocation is
/// [`SdcaError::AllocationFailed`] (with the bytes asked for), not an abort.
pub fn zeros<T: Copy + Default>(len: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| SdcaError::AllocationFailed {
        bytes: (len as u64).saturating_mul(std::mem::size_of::<T>() as u64),
    })?;
    v.resize(len, T::default());
    Ok(v)
}

/// An empty vector with room for `len` elements, allocated fallibly (see [`zeros`]).
pub fn with_capacity<T>(len: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| SdcaError::AllocationFailed {
        bytes: (len as u64).saturating_mul(std::mem::size_of::<T>() as u64),
    })?;
    Ok(v)
}

/// `len` copies of `value`, allocated fallibly (see [`zeros`]).
pub fn filled<T: Copy>(value: T, len: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| SdcaError::AllocationFailed {
        bytes: (len as u64).saturating_mul(std::mem::size_of::<T>() as u64),
    })?;
    v.resize(len, value);
    Ok(v)
}

/// Where a linear model's width `d` comes from, so that the error names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    /// Unknown to the caller (the core's own check): `d` features.
    Features,
    /// One more than the largest index of a sparse column.
    LargestIndex,
    /// The user's `n_features`.
    Declared,
    /// The width of one dense vector column (`Array` / `List`).
    Vector,
}

/// The widest model [`crate::SolverKind::Newton`] may factorise (`d + 1` slots), for the
/// estimate of its Hessian.
const NEWTON_SLOTS: u128 = crate::config::NEWTON_MAX_FEATURES as u128 + 1;

/// The parts of [`linear_bytes`]: `(duals, rows, model)`.
fn linear_parts(n: usize, d: usize, k: usize) -> (u128, u128, u128) {
    let (n, d1, k) = (n as u128, d as u128 + 1, k as u128);
    // Duals: `alpha`, the result's copy and `fit_rows`' scores, `n k` each. Per row: norms,
    // step sizes, the order, the gap sampler's sum tree (up to `4 n`), shrinking lists, the
    // accelerated solver's and Pdprox's copies of the duals, `fit_rows`' gaps and losses.
    // Model: up to twelve `(d + 1) k` arrays (dual sum, primal point, start, result, the
    // accelerated solver's shift, extrapolation and best iterate, Pdprox's gradients and
    // averages). Newton (`d + 1 <= 513`, one output): the Hessian and its factor. Newton-CG
    // (several outputs): its block-Jacobi preconditioner, per class and chunk of at most 32
    // weights the upper triangle and the Cholesky factor (`solver/newton_cg.rs`; the fuzz
    // target `memory` found 156 KB used against an estimate of 80 KB at 77 classes and 9
    // features without it).
    // Saturating: sizes near `usize::MAX` must refuse, not wrap.
    let duals = (24 * n).saturating_mul(k);
    let rows = 160 * n;
    let newton = if d1 <= NEWTON_SLOTS && k == 1 { 16 * d1 * d1 } else { 0 };
    let (width, chunks) = (d1.min(32), d1.div_ceil(32));
    let blocks =
        if k > 1 { (8 * chunks * (width * (width + 1) / 2 + width * width)).saturating_mul(k) } else { 0 };
    (duals, rows, (96 * d1).saturating_mul(k).saturating_add(newton).saturating_add(blocks))
}

/// Bytes a linear fit of `n` rows, `d` features and `k` scores per row allocates, an upper
/// estimate over every solver checked before it starts: `24 n k + 160 n + 96 (d + 1) k`, plus
/// `16 (d + 1)^2` for Newton's Hessian when `d <= 512` and `k = 1`, or Newton-CG's
/// preconditioner blocks (about `12 min(d + 1, 32) (d + 1) k`) when `k > 1`. The input data
/// is borrowed, not counted.
pub fn linear_bytes(n: usize, d: usize, k: usize) -> u64 {
    let (duals, rows, model) = linear_parts(n, d, k);
    u64::try_from(duals.saturating_add(rows).saturating_add(model)).unwrap_or(u64::MAX)
}

/// Checks a linear fit of `n` rows, `d` features (from `width`) and `k` scores per row against
/// `budget`, naming the largest part of [`linear_bytes`] as the cause.
pub fn check_linear(budget: &Budget, n: usize, d: usize, k: usize, width: Width) -> Result<()> {
    budget.check(linear_bytes(n, d, k), || {
        let (duals, rows, model) = linear_parts(n, d, k);
        if duals >= model && duals >= rows && k > 1 {
            return Cause {
                cause: format!("{} classes for {} rows", count(k as u64), count(n as u64)),
                what: "the dual variables",
                fix:
                    "check the label column (an id column passed as a multiclass label?), or fit fewer rows \
                      per group"
                        .into(),
            };
        }
        if rows >= model {
            return Cause {
                cause: format!("{} rows", count(n as u64)),
                what: "the fit",
                fix: "fit fewer rows per group (group_by), or one model over partitions with fit_cocoa"
                    .into(),
            };
        }
        let classes = if k > 1 { format!(" x {} classes", count(k as u64)) } else { String::new() };
        let (cause, fix) = match width {
            Width::LargestIndex => (
                format!("the largest sparse index is {}{classes}", count(d.saturating_sub(1) as u64)),
                "pass n_features= (the width the model needs) or check the column: a hashed or corrupt index",
            ),
            Width::Declared => {
                (format!("n_features={}{classes}", count(d as u64)), "pass a smaller n_features=")
            }
            Width::Vector => (
                format!("dense vectors of width {}{classes}", count(d as u64)),
                "check the vector column's width, or pass the features in sparse form",
            ),
            Width::Features => (
                format!("{} features{classes}", count(d as u64)),
                "fit fewer features (for sparse columns, pass n_features=) or fewer classes",
            ),
        };
        Cause { cause, what: "the model", fix: fix.into() }
    })
}

/// Checks a CRF fit whose estimate ([`crate::crf::memory_estimate`]) is `needed` bytes against
/// `budget`, naming the largest part as the cause: the pairwise marginals (`K^2` per token: many
/// tags), the weights (`K A`: many attributes), the per-sequence work buffers (`K^2` per token
/// of the longest sequence) or the sequences.
pub fn check_crf(
    budget: &Budget,
    needed: u64,
    n_tokens: usize,
    n_sequences: usize,
    n_labels: usize,
    n_attributes: usize,
    max_len: usize,
) -> Result<()> {
    budget.check(needed, || {
        let (nt, k, a, t) = (n_tokens as u128, n_labels as u128, n_attributes as u128, max_len as u128);
        let marginals = (8 * k).saturating_mul(nt.saturating_add(k.saturating_mul(nt)));
        let weights = (24 * k).saturating_mul(a).saturating_add(12 * a);
        let steps = (72 * t).saturating_mul(k).saturating_mul(k);
        let largest = marginals.max(weights).max(steps);
        if largest == marginals && k > 1 {
            Cause {
                cause: format!("{} tags for {} tokens", count(n_labels as u64), count(n_tokens as u64)),
                what: "the marginals",
                fix:
                    "check the tag column (an id column passed as the tag?), or fit fewer sequences per group"
                        .into(),
            }
        } else if largest == weights {
            Cause {
                cause: format!("{} attributes x {} tags", count(n_attributes as u64), count(n_labels as u64)),
                what: "the weights",
                fix:
                    "pass n_features= or check the attribute column (the largest sparse index sets the width)"
                        .into(),
            }
        } else if largest == steps {
            Cause {
                cause: format!(
                    "a sequence of {} tokens with {} tags",
                    count(max_len as u64),
                    count(n_labels as u64)
                ),
                what: "the per-sequence buffers",
                fix: "split long sequences (max_sequence_length= refuses them)".into(),
            }
        } else {
            Cause {
                cause: format!("{} sequences", count(n_sequences as u64)),
                what: "the fit",
                fix: "fit fewer sequences per group".into(),
            }
        }
    })
}

/// `1234567` as `1,234,567`.
pub fn count(v: u64) -> String {
    let digits = v.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (k, c) in digits.chars().enumerate() {
        if k > 0 && (digits.len() - k).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bytes for people: `34.4 GB` (powers of 1000).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["kB", "MB", "GB", "TB", "PB", "EB"];
    if bytes < 1000 {
        return format!("{bytes} bytes");
    }
    let mut v = bytes as f64 / 1000.0;
    let mut unit = 0;
    while v >= 999.95 && unit + 1 < UNITS.len() {
        v /= 1000.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

/// The limit as the error states it.
pub(crate) fn describe_limit(limit: u64, max_memory: bool) -> String {
    if max_memory {
        format!("max_memory={} ({})", count(limit), human_bytes(limit))
    } else {
        format!("the default memory budget of {} (pass max_memory= to set another)", human_bytes(limit))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_bytes_read_as_people_write_them() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(4_294_967_290), "4,294,967,290");
        assert_eq!(human_bytes(999), "999 bytes");
        assert_eq!(human_bytes(34_359_738_320), "34.4 GB");
        assert_eq!(human_bytes(999_960), "1.0 MB");
        assert_eq!(human_bytes(u64::MAX), "18.4 EB");
    }

    #[test]
    fn the_reported_cases_name_their_cause() {
        let budget = Budget::new(None, Some(8_000_000_000));
        // One sparse index near 2^32 (a hashed feature).
        let e = check_linear(&budget, 2, 4_294_967_291, 1, Width::LargestIndex).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with("the largest sparse index is 4,294,967,290: the model would need about 412.3 GB"),
            "{msg}"
        );
        assert!(msg.contains("the default memory budget of 8.0 GB"), "{msg}");
        assert!(
            msg.ends_with(
                "pass n_features= (the width the model needs) or check the column: a hashed or corrupt index"
            ),
            "{msg}"
        );
        // An id column passed as a multiclass label.
        let e = check_linear(&budget, 100_000, 1, 100_000, Width::Features).unwrap_err();
        assert!(
            e.to_string().starts_with(
                "100,000 classes for 100,000 rows: the dual variables would need about 240.0 GB"
            ),
            "{e}"
        );
        // A user cap says so and suggests raising it.
        let e =
            check_linear(&Budget::new(Some(1000), Some(u64::MAX)), 100, 3, 1, Width::Features).unwrap_err();
        assert!(
            matches!(e, SdcaError::MemoryLimit { needed, limit: 1000, max_memory: true, .. } if needed == linear_bytes(100, 3, 1))
        );
        assert!(e.to_string().contains("more than max_memory=1,000 (1.0 kB); raise max_memory, or"), "{e}");
        // Within the budget, and without one.
        assert!(check_linear(&budget, 1000, 100, 10, Width::Features).is_ok());
        assert!(check_linear(&Budget::new(None, None), usize::MAX, usize::MAX, usize::MAX, Width::Features)
            .is_ok());
    }

    #[test]
    fn crf_causes() {
        let budget = Budget::new(None, Some(1_000_000_000));
        let e = check_crf(&budget, 8 * 10u64.pow(15), 100_000, 1000, 100_000, 10, 100).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("100,000 tags for 100,000 tokens: the marginals would need about 8.0 PB"),
            "{e}"
        );
        let e = check_crf(&budget, 2 * 10u64.pow(11), 100, 10, 5, 4_000_000_000, 10).unwrap_err();
        assert!(e.to_string().starts_with("4,000,000,000 attributes x 5 tags: the weights"), "{e}");
        assert!(check_crf(&budget, 10u64.pow(8), 10_000, 100, 9, 1000, 100).is_ok());
    }

    #[test]
    fn estimates_saturate_and_allocations_fail_softly() {
        assert_eq!(linear_bytes(usize::MAX, usize::MAX, usize::MAX), u64::MAX);
        assert_eq!(linear_bytes(10, 3, 1), 24 * 10 + 160 * 10 + 96 * 4 + 16 * 16);
        assert_eq!(linear_bytes(10, 600, 1), 24 * 10 + 160 * 10 + 96 * 601);
        // Several outputs: Newton-CG's blocks, the triangle and the factor of 4 x 4 per class.
        assert_eq!(linear_bytes(10, 3, 4), 24 * 40 + 160 * 10 + 96 * 4 * 4 + 8 * (10 + 16) * 4);
        assert!(matches!(zeros::<f64>(usize::MAX / 4), Err(SdcaError::AllocationFailed { .. })));
        assert_eq!(zeros::<f64>(3).unwrap(), vec![0.0; 3]);
        assert_eq!(filled(7u32, 2).unwrap(), vec![7, 7]);
    }
}
