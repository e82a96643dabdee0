//! The one error type of the core.
//!
//! Every variant carries the numbers a user needs to find the bad value (row, index, value,
//! expected against got). Messages start lowercase, name where the problem is, and say the fix;
//! the plugin adds the column or group name in front.

use thiserror::Error;

/// Everything that can go wrong in `sdca-core`.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Error)]
pub enum SdcaError {
    /// Distributed workers were lost more often than allowed.
    #[error("workers were lost {restarts} times (max_restarts={max_restarts}); check the cluster or raise max_restarts")]
    WorkersLost {
        /// Restarts asked for so far.
        restarts: u32,
        /// The allowance.
        max_restarts: u32,
    },
    /// A parameter is out of its range or is not one of the allowed names.
    #[error("invalid parameter `{name}`: {message}")]
    InvalidParameter {
        /// Parameter name as the user spells it.
        name: &'static str,
        /// What is wrong and what is allowed.
        message: String,
    },
    /// A feature value is NaN or infinite.
    #[error("row {row}: feature value {value} is not finite; remove or impute it")]
    NonFiniteFeature {
        /// Row (0-based, within the group).
        row: usize,
        /// The offending value.
        value: f64,
    },
    /// A sparse feature index is outside `[0, n_features)`.
    #[error("row {row}: feature index {index} >= n_features {n_features}; pass a larger n_features or fix the index")]
    IndexOutOfRange {
        /// Row (0-based, within the group).
        row: usize,
        /// The offending index.
        index: i64,
        /// The declared or model width.
        n_features: usize,
    },
    /// A sparse feature index is negative.
    #[error("row {row}: feature index {index} is negative; indices must be >= 0")]
    NegativeIndex {
        /// Row (0-based, within the group).
        row: usize,
        /// The offending index.
        index: i64,
    },
    /// The same sparse index appears twice in one row.
    #[error("row {row}: feature index {index} appears more than once; sum the duplicates before fitting")]
    DuplicateIndex {
        /// Row (0-based, within the group).
        row: usize,
        /// The repeated index.
        index: u32,
    },
    /// A label is NaN/inf or outside the loss's domain.
    #[error("row {row}: label {value} is not valid for loss `{loss}`; {expected}")]
    InvalidLabel {
        /// Row (0-based, within the group).
        row: usize,
        /// The offending label (as f64).
        value: f64,
        /// Loss name.
        loss: &'static str,
        /// What the loss accepts.
        expected: &'static str,
    },
    /// A sample weight is negative, NaN or infinite.
    #[error("row {row}: sample weight {value} is invalid; weights must be finite and >= 0")]
    InvalidWeight {
        /// Row (0-based, within the group).
        row: usize,
        /// The offending weight.
        value: f64,
    },
    /// The problem has no rows, or every row has weight zero.
    #[error(
        "no rows to fit ({what}); an empty group cannot be fitted, filter it out or use on_error=\"null\""
    )]
    Empty {
        /// Which count was zero.
        what: &'static str,
    },
    /// A classification problem whose labels contain a single class.
    #[error("all labels are {label}: a classifier needs at least two classes in every group; filter such groups or use on_error=\"null\"")]
    OneClass {
        /// The single label value.
        label: String,
    },
    /// Two lengths that must agree do not.
    #[error("{what}: expected {expected}, got {got}")]
    ShapeMismatch {
        /// What was measured.
        what: &'static str,
        /// Expected size.
        expected: usize,
        /// Actual size.
        got: usize,
    },
    /// An impossible state: a bug in polars-sdca.
    #[error("internal error: {0}; please report this as a bug")]
    Internal(String),
    /// A CRF label is outside `0..n_labels`.
    #[error("row {row}: label {label} >= n_labels {n_labels}; encode labels as 0..n_labels-1 or pass a larger n_labels")]
    LabelOutOfRange {
        /// Row (0-based, within the group).
        row: usize,
        /// The offending label.
        label: u32,
        /// Number of labels of the model.
        n_labels: usize,
    },
    /// A CRF sequence has no rows.
    #[error("sequence {sequence} (at row {row}) is empty; drop empty sequences before fitting")]
    EmptySequence {
        /// Sequence (0-based, within the group).
        sequence: usize,
        /// Row where the empty sequence sits.
        row: usize,
    },
    /// CRF sequence offsets go backwards or do not cover the rows.
    #[error("sequence {sequence}: offsets {start}..{end} are not inside 0..{n_rows} in increasing order; sort rows by sequence and pass one offset per sequence boundary")]
    SequenceOffsets {
        /// Sequence (0-based, within the group).
        sequence: usize,
        /// Its first row.
        start: usize,
        /// One past its last row.
        end: usize,
        /// Number of rows.
        n_rows: usize,
    },
    /// A CRF sequence is longer than `max_sequence_length`.
    #[error("sequence {sequence} (rows {start}..{end}) has length {length} > max_sequence_length {max}; split the sequence or raise max_sequence_length")]
    SequenceTooLong {
        /// Sequence (0-based, within the group).
        sequence: usize,
        /// Its first row.
        start: usize,
        /// One past its last row.
        end: usize,
        /// Its length.
        length: usize,
        /// The configured cap.
        max: usize,
    },
    /// Memory that grows with the data (the model width, classes, CRF tags, rows) would exceed
    /// `max_memory`, or the default memory budget when it is unset; found before anything was
    /// allocated ([`crate::budget`]).
    #[error(
        "{cause}: {what} would need about {}, more than {}; {fix}",
        crate::budget::human_bytes(*needed),
        crate::budget::describe_limit(*limit, *max_memory)
    )]
    MemoryLimit {
        /// The quantity in the data that makes the fit large, e.g. `the largest sparse index is
        /// 4,294,967,290` or `100,000 classes for 100,000 rows`.
        cause: String,
        /// What would be allocated, e.g. `the model`.
        what: &'static str,
        /// Estimated bytes.
        needed: u64,
        /// The limit in bytes.
        limit: u64,
        /// Whether the limit is the user's `max_memory` (else the default budget).
        max_memory: bool,
        /// How to make the fit smaller.
        fix: String,
    },
    /// A computation left the range or the precision of `f64`: a model, certificate or
    /// prediction came out NaN, infinite, or inconsistent.
    #[error("{what} overflowed f64: the problem is scaled beyond f64's range or precision (values near 1e150, or a tiny l2 against large data); rescale the features or labels (or the warm start or model), or raise l2")]
    NonFiniteResult {
        /// Which output, e.g. `the fit's coef`, `the crf marginals`.
        what: &'static str,
    },
    /// The operating system refused an allocation that the memory budget allowed (an
    /// address-space or container limit below the budget).
    #[error("could not allocate {} ({bytes} bytes): the process is out of memory; fit fewer rows, features, classes or sequences per group, or set max_memory to fail early", crate::budget::human_bytes(*bytes))]
    AllocationFailed {
        /// Requested bytes.
        bytes: u64,
    },
}

/// `Result` with [`SdcaError`].
pub type Result<T> = std::result::Result<T, SdcaError>;
