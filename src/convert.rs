//! Series to core views: labels, features (sparse or dense) and weights.
//!
//! Arrow's `List(Struct{index, value})` already is CSR: the list offsets are the row pointer
//! and the struct children are the column indices and values, so a single-chunk `UInt32` /
//! `Float64` input is read without copying. Other index or value types are cast once. Dense
//! inputs are a list of numeric columns (copied into one row-major buffer, which SDCA's row
//! access needs), or one `List` / `Array` column whose values already are row-major.
//!
//! Nulls are found here at every level (list, struct, field) and either reported with their
//! column and row (`null_policy="raise"`) or dropped from all inputs together (`"drop"`).

use std::collections::{BTreeSet, HashMap};
use std::sync::OnceLock;

use polars::prelude::*;
use polars_arrow::array::Array;
use sdca_core::budget::{self, Width};
use sdca_core::loss::LossKind;
use sdca_core::{CsrView, DenseView};

use crate::error::{compute, InColumn};
use crate::kwargs::Layout;

/// A contiguous buffer: borrowed from a single-chunk, null-free Arrow array, or owned.
enum Buf<T: PolarsNumericType> {
    Arrow(ChunkedArray<T>),
    Owned(Vec<T::Native>),
}

impl<T: PolarsNumericType> Buf<T> {
    fn from_series(s: &Series) -> PolarsResult<Self> {
        let s = s.cast(&T::get_static_dtype())?.rechunk();
        let ca: &ChunkedArray<T> = s.as_ref().as_ref();
        if ca.null_count() == 0 && ca.cont_slice().is_ok() {
            Ok(Self::Arrow(ca.clone()))
        } else {
            // Nulls were reported or dropped by the null policy before conversion.
            let mut owned = budget::with_capacity(ca.len()).in_column(s.name())?;
            owned.extend(ca.iter().map(|v| v.unwrap_or_default()));
            Ok(Self::Owned(owned))
        }
    }

    fn as_slice(&self) -> &[T::Native] {
        match self {
            Self::Arrow(ca) => ca.cont_slice().unwrap_or(&[]),
            Self::Owned(v) => v,
        }
    }
}

/// Sparse features in CSR form.
pub struct Sparse {
    indptr: Vec<i64>,
    indices: Buf<UInt32Type>,
    values: Buf<Float64Type>,
    n_cols: usize,
    name: String,
    /// Whether `n_cols` is the user's `n_features` (else the largest index + 1).
    declared: bool,
}

/// Dense row-major features: a window of an Arrow buffer, or an owned copy.
pub struct Dense {
    buf: Buf<Float64Type>,
    offset: usize,
    n_rows: usize,
    n_cols: usize,
    name: String,
    /// One name per feature when the features are separate columns (empty for one vector
    /// column), so that a bad value's message names its own column.
    columns: Vec<String>,
}

/// Features of one fit or prediction call.
pub enum Features {
    /// `List(Struct{index, value})`.
    Sparse(Sparse),
    /// Numeric columns, or one `List`/`Array` column of equal-length rows.
    Dense(Dense),
}

impl Features {
    /// The model width, where it comes from (for the memory check) and the column name.
    pub fn width(&self) -> (usize, Width, &str) {
        match self {
            Features::Sparse(s) => {
                (s.n_cols, if s.declared { Width::Declared } else { Width::LargestIndex }, &s.name)
            }
            Features::Dense(d) if d.columns.is_empty() => (d.n_cols, Width::Vector, &d.name),
            Features::Dense(d) => (d.n_cols, Width::Features, &d.name),
        }
    }
}

/// The memory budget of a fit without `max_memory` ([`sdca_core::budget`]): half of the
/// machine's physical memory (`MemTotal` in `/proc/meminfo`), or of the cgroup's limit when it
/// is lower (a container), read once. The environment variable `POLARS_SDCA_MEMORY_BUDGET`
/// (bytes) replaces it. `None` where neither is known: no default limit (allocations stay
/// fallible).
pub fn default_budget() -> Option<u64> {
    static BUDGET: OnceLock<Option<u64>> = OnceLock::new();
    *BUDGET.get_or_init(|| {
        if let Some(bytes) =
            std::env::var("POLARS_SDCA_MEMORY_BUDGET").ok().and_then(|v| v.trim().parse().ok())
        {
            return Some(bytes);
        }
        let meminfo = std::fs::read_to_string("/proc/meminfo").ok().and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            kb.checked_mul(1024)
        });
        let cgroup = ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"]
            .iter()
            .find_map(|p| std::fs::read_to_string(p).ok()?.trim().parse::<u64>().ok());
        let physical = match (meminfo, cgroup) {
            (Some(m), Some(c)) => Some(m.min(c)),
            (m, c) => m.or(c),
        };
        physical.map(|b| b / 2)
    })
}

impl Sparse {
    /// The validated CSR view (checks indices, duplicates and finiteness once).
    pub fn view(&self) -> PolarsResult<CsrView<'_>> {
        self.view_with_width(self.n_cols)
    }
    /// The validated CSR view at another width (prediction with a wider model).
    pub fn view_with_width(&self, n_cols: usize) -> PolarsResult<CsrView<'_>> {
        CsrView::new(&self.indptr, self.indices.as_slice(), self.values.as_slice(), n_cols)
            .in_column(&self.name)
    }
    /// Column name, for messages.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Declared or inferred width.
    pub fn n_cols(&self) -> usize {
        self.n_cols
    }
}

impl Dense {
    /// Row-major `data` (`n_rows x columns.len()`) of the separate feature columns `columns`,
    /// `name` their names joined (as [`features`] names them).
    pub fn from_rows(data: Vec<f64>, n_rows: usize, columns: Vec<String>, name: String) -> Self {
        let n_cols = columns.len();
        Self { buf: Buf::Owned(data), offset: 0, n_rows, n_cols, name, columns }
    }

    /// The validated row-major view.
    pub fn view(&self) -> PolarsResult<DenseView<'_>> {
        let data = &self.buf.as_slice()[self.offset..self.offset + self.n_rows * self.n_cols];
        let column = || {
            let bad = data.iter().position(|x| !x.is_finite());
            bad.and_then(|k| self.columns.get(k % self.n_cols.max(1))).unwrap_or(&self.name)
        };
        DenseView::new(data, self.n_rows, self.n_cols)
            .map_err(|e| compute(format!("column {:?}: {e}", column())))
    }
    /// Column name(s), for messages.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Number of features.
    pub fn n_cols(&self) -> usize {
        self.n_cols
    }
}

fn is_sparse_dtype(dt: &DataType) -> bool {
    matches!(dt, DataType::List(inner) if matches!(inner.as_ref(), DataType::Struct(_)))
}

/// Whether the fits read a column of this dtype as numbers (`f64`): every integer (8 to 128
/// bits), float (16 to 64 bits) and decimal dtype, and booleans (0 / 1). The accepted dtypes
/// are listed in `docs/sparse.md`; `tests/test_dtypes.py` fits each.
pub fn is_number(dt: &DataType) -> bool {
    dt.is_numeric() || dt.is_bool()
}

/// The struct field names of a sparse column, checked.
fn sparse_fields(name: &str, dt: &DataType) -> PolarsResult<()> {
    let mut got = dt.to_string();
    if let DataType::List(inner) = dt {
        if let DataType::Struct(fields) = inner.as_ref() {
            let find = |f: &str| fields.iter().find(|x| x.name().as_str() == f).map(|x| x.dtype().clone());
            match (find("index"), find("value")) {
                (Some(i), Some(v)) if i.is_integer() && is_number(&v) => return Ok(()),
                _ => {}
            }
            let listed: Vec<String> = fields.iter().map(|f| format!("{}: {}", f.name(), f.dtype())).collect();
            got = format!("List(Struct{{{}}})", listed.join(", "));
        }
    }
    Err(compute(format!(
        "column {name:?}: sparse features must be List(Struct{{index: integer, value: number}}), got {got}"
    )))
}

/// Checks the dtypes of the feature inputs when the plan is built (no data read).
pub fn check_feature_dtypes(fields: &[Field]) -> PolarsResult<()> {
    if fields.is_empty() {
        return Err(compute("no feature columns given; pass features=[...] or a sparse column".into()));
    }
    if let [f] = fields {
        let dt = f.dtype();
        if let DataType::List(inner) = dt {
            if matches!(inner.as_ref(), DataType::Struct(_)) {
                return sparse_fields(f.name(), dt);
            }
            if is_number(inner) {
                return Ok(());
            }
        }
        if let DataType::Array(inner, _) = dt {
            if is_number(inner) {
                return Ok(());
            }
        }
    }
    for f in fields {
        if !(is_number(f.dtype()) || f.dtype().is_null()) {
            return Err(compute(format!(
                "column {:?}: feature columns must be numeric (integer, float, decimal or boolean), or one List / Array of numbers or one sparse List(Struct{{index, value}}) column; got {}",
                f.name(),
                f.dtype()
            )));
        }
    }
    Ok(())
}

/// The expression a call's inputs belong to: it fixes what each input is ([`aligned`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// `fit`, `fit_rows` and a CoCoA+ partition: label, features, weights, warm start.
    Fit,
    /// `fit_groups`: the `fit` inputs, then the group id and the `by` keys.
    FitGroups,
    /// `predict`: model, features.
    Predict,
    /// `crf_fit`, `crf_fit_rows`: tag, features, sequence.
    Crf,
    /// `crf_predict`: model, features, sequence.
    CrfPredict,
}

/// What one input of a call is, for messages and for what a single value means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Label,
    Tag,
    Model,
    Feature,
    Weights,
    WarmStart,
    Folds,
    Sequence,
    GroupId,
    Key,
}

/// What a one-value input (a literal, or an aggregation such as `mean()`) becomes when the
/// other inputs have `n` rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OneValue {
    /// Repeated to `n` rows, as Polars broadcasts a literal: a constant feature, weight,
    /// sequence id (one sequence) or group key (one group).
    Broadcast,
    /// Kept as one row: the consumer reads it for every row (a model, a warm start).
    Shared,
    /// An error: one label or tag for many rows is a mistake, not a constant.
    Refused,
}

impl Role {
    fn what(self) -> &'static str {
        match self {
            Role::Label => "label",
            Role::Tag => "tag",
            Role::Model => "model",
            Role::Feature => "feature",
            Role::Weights => "weights",
            Role::WarmStart => "warm_start",
            Role::Folds => "fold_column",
            Role::Sequence => "sequence",
            Role::GroupId => "group id",
            Role::Key => "by key",
        }
    }

    fn one_value(self) -> OneValue {
        match self {
            Role::Label | Role::Tag => OneValue::Refused,
            Role::Model | Role::WarmStart => OneValue::Shared,
            Role::Feature | Role::Weights | Role::Folds | Role::Sequence | Role::GroupId | Role::Key => {
                OneValue::Broadcast
            }
        }
    }
}

/// The role of each of `n_inputs` inputs of `call`, by position.
fn roles(call: Call, layout: &Layout, n_inputs: usize) -> Vec<Role> {
    let k = usize::try_from(layout.n_feature_inputs).unwrap_or(0);
    let first = match call {
        Call::Fit | Call::FitGroups => Role::Label,
        Call::Crf => Role::Tag,
        Call::Predict | Call::CrfPredict => Role::Model,
    };
    let mut roles = vec![first];
    roles.extend(std::iter::repeat_n(Role::Feature, k));
    match call {
        Call::Fit | Call::FitGroups => {
            roles.extend(layout.has_weights.then_some(Role::Weights));
            roles.extend(layout.has_warm_start.then_some(Role::WarmStart));
            roles.extend(layout.has_folds.then_some(Role::Folds));
            if call == Call::FitGroups {
                roles.push(Role::GroupId);
            }
        }
        Call::Crf | Call::CrfPredict => roles.push(Role::Sequence),
        Call::Predict => {}
    }
    // Anything beyond the layout: `fit_groups`' keys (a miscount fails in the caller's split).
    let rest = if call == Call::FitGroups { Role::Key } else { Role::Feature };
    roles.resize(n_inputs.max(roles.len()), rest);
    roles.truncate(n_inputs);
    roles
}

/// Every expression's inputs, checked in one place: named as the user wrote them (Polars
/// passes group slices without names) and of one length.
///
/// Polars hands a literal (`pl.lit(1.0)`) or a one-value aggregation to a plugin as a column of
/// length 1. Where its semantics broadcast such a value, it is repeated to the length `n` of the
/// other inputs (a constant feature, weight, sequence id or group key); a model or warm start
/// stays one row, read for every row; one label or tag for many rows is refused. Any other
/// length that differs from `n` is an error naming both inputs.
pub fn aligned(inputs: &[Series], layout: &Layout, call: Call) -> PolarsResult<Vec<Series>> {
    aligned_owned(inputs.to_vec(), layout, call)
}

/// [`aligned`] of inputs the caller owns: a series held nowhere else is renamed in place,
/// where renaming a shared one copies its chunk list and field (per group, in a `group_by`).
pub fn aligned_owned(inputs: Vec<Series>, layout: &Layout, call: Call) -> PolarsResult<Vec<Series>> {
    let roles = roles(call, layout, inputs.len());
    let named: Vec<Series> = inputs
        .into_iter()
        .enumerate()
        .map(|(k, s)| match layout.names.get(k) {
            Some(name) if s.name().is_empty() || s.name() != name.as_str() => s.with_name(name.into()),
            _ => s,
        })
        .collect();
    // The row count: the longest input that is not a single value (all single values: 1 row);
    // the first of them, so that a short input is the one the message blames.
    let longest = named.iter().map(|s| s.len()).filter(|&len| len != 1).max();
    let Some(reference) = longest.and_then(|n| named.iter().position(|s| s.len() == n)) else {
        return Ok(named);
    };
    let n = named[reference].len();
    let describe = |k: usize| format!("{} {:?}", roles[k].what(), named[k].name().as_str());
    named
        .iter()
        .enumerate()
        .map(|(k, s)| match (s.len(), roles[k].one_value()) {
            (len, _) if len == n => Ok(s.clone()),
            (1, OneValue::Broadcast) => Ok(s.new_from_index(0, n)),
            (1, OneValue::Shared) => Ok(s.clone()),
            (1, OneValue::Refused) => Err(compute(format!(
                "{} is a single value (a literal or an aggregation) but {} has {n} rows; pass a column \
                 with one {} per row",
                describe(k),
                describe(reference),
                roles[k].what()
            ))),
            (len, _) => Err(compute(format!(
                "{} has {len} rows but {} has {n}; every input needs one value per row (only a single \
                 value, such as a literal, is broadcast)",
                describe(k),
                describe(reference)
            ))),
        })
        .collect()
}

/// Whether `s` holds no null at any level (rows, list or array elements, struct fields), from
/// the null counts Arrow keeps: O(1) per level, so a column without nulls (the common case)
/// skips the per-element scan of [`null_rows`] (a tenth of a one-epoch fit on 2.4 M non-zeros).
fn null_free(s: &Series) -> PolarsResult<bool> {
    if s.null_count() > 0 {
        return Ok(false);
    }
    let inner = match s.dtype() {
        DataType::List(_) => s.list()?.get_inner(),
        DataType::Array(..) => s.array()?.get_inner(),
        DataType::Struct(_) => {
            for f in s.struct_()?.fields_as_series() {
                if !null_free(&f)? {
                    return Ok(false);
                }
            }
            return Ok(true);
        }
        _ => return Ok(true),
    };
    null_free(&inner)
}

/// Per-row "has a null anywhere" flags of one input, or `None` when it has none.
fn null_rows(s: &Series) -> PolarsResult<Option<Vec<bool>>> {
    if null_free(s)? {
        return Ok(None);
    }
    let n = s.len();
    let mut bad = vec![false; n];
    let mut any = false;
    let mut mark = |r: usize, bad: &mut Vec<bool>| {
        bad[r] = true;
        any = true;
    };
    match s.dtype() {
        DataType::List(_) => {
            let s = s.rechunk();
            let ca = s.list()?;
            let arr = ca.downcast_as_array();
            let inner = ca.get_inner();
            let mut inner_bad: Vec<bool> = inner.is_null().iter().map(|v| v.unwrap_or(true)).collect();
            if let DataType::Struct(_) = inner.dtype() {
                for f in inner.struct_()?.fields_as_series() {
                    for (k, v) in f.is_null().iter().enumerate() {
                        inner_bad[k] |= v.unwrap_or(true);
                    }
                }
            }
            let offs = arr.offsets().as_slice();
            for r in 0..n {
                let (lo, hi) = (offs[r] as usize, offs[r + 1] as usize);
                if !arr.is_valid(r) || inner_bad[lo..hi].iter().any(|b| *b) {
                    mark(r, &mut bad);
                }
            }
        }
        DataType::Array(_, width) => {
            let width = *width;
            let s = s.rechunk();
            let ca = s.array()?;
            let inner = ca.get_inner();
            let inner_bad: Vec<bool> = inner.is_null().iter().map(|v| v.unwrap_or(true)).collect();
            let outer = ca.is_null();
            for (r, o) in outer.iter().enumerate() {
                let lo = r * width;
                if o.unwrap_or(true) || inner_bad.get(lo..lo + width).is_some_and(|w| w.iter().any(|b| *b)) {
                    mark(r, &mut bad);
                }
            }
        }
        _ => {
            if s.null_count() > 0 {
                for (r, v) in s.is_null().iter().enumerate() {
                    if v.unwrap_or(true) {
                        mark(r, &mut bad);
                    }
                }
            }
        }
    }
    Ok(any.then_some(bad))
}

/// Applies the null policy to all inputs together. Returns the (possibly filtered) inputs and,
/// when rows were dropped, the original index of each kept row. `can_drop` says whether the
/// caller accepts `null_policy="drop"` (CRFs do not: a dropped token would split its sequence),
/// so that the message only suggests what works.
pub fn apply_null_policy(
    inputs: &[Series],
    policy: &str,
    can_drop: bool,
) -> PolarsResult<(Vec<Series>, Option<Vec<IdxSize>>)> {
    let n = inputs.first().map_or(0, |s| s.len());
    let mut drop: Option<Vec<bool>> = None;
    for s in inputs {
        // `inputs` aligned every length first.
        if s.len() != n {
            return Err(compute(format!(
                "internal error: input {:?} has {} rows but the first input has {n}; please report",
                s.name(),
                s.len()
            )));
        }
        if let Some(bad) = null_rows(s)? {
            match policy {
                "raise" => {
                    let r = bad.iter().position(|b| *b).unwrap_or(0);
                    let fix = if can_drop {
                        "drop or impute it, or pass null_policy=\"drop\""
                    } else {
                        "drop its sequence or impute it"
                    };
                    return Err(compute(format!("column {:?}, row {r}: null value; {fix}", s.name())));
                }
                "drop" => {
                    let d = drop.get_or_insert_with(|| vec![false; n]);
                    for (x, b) in d.iter_mut().zip(bad) {
                        *x |= b;
                    }
                }
                other => {
                    return Err(compute(format!(
                    "invalid parameter `null_policy`: unknown value {other:?}; expected one of raise, drop"
                )))
                }
            }
        }
    }
    let Some(drop) = drop else { return Ok((inputs.to_vec(), None)) };
    let keep: BooleanChunked = drop.iter().map(|d| !d).collect();
    let kept: Vec<IdxSize> = (0..n).filter(|&i| !drop[i]).map(|i| i as IdxSize).collect();
    let filtered = inputs.iter().map(|s| s.filter(&keep)).collect::<PolarsResult<Vec<_>>>()?;
    Ok((filtered, Some(kept)))
}

fn sparse(s: &Series, n_features: Option<i64>) -> PolarsResult<Sparse> {
    let name = s.name().to_string();
    sparse_fields(&name, s.dtype())?;
    let s = s.rechunk();
    let ca = s.list()?;
    let arr = ca.downcast_as_array();
    let offsets = arr.offsets().as_slice();
    let mut indptr = budget::with_capacity(offsets.len()).in_column(&name)?;
    indptr.extend_from_slice(offsets);
    let inner = ca.get_inner();
    let st = inner.struct_()?;
    let index = st.field_by_name("index")?;
    let value = st.field_by_name("value")?;
    let row_of = |k: usize| indptr.partition_point(|&o| o as usize <= k).saturating_sub(1);
    // Negative indices cannot be cast to u32: report them with their row first.
    if index.dtype().is_signed_integer() {
        let as_i64 = index.cast(&DataType::Int64)?;
        let negative =
            as_i64.i64()?.iter().enumerate().find_map(|(k, v)| v.filter(|v| *v < 0).map(|v| (k, v)));
        if let Some((k, v)) = negative {
            return Err(compute(format!(
                "column {name:?}: row {}: feature index {v} is negative; indices must be >= 0",
                row_of(k)
            )));
        }
    }
    // The largest index in the column's own dtype (negatives were refused above): no u64 copy.
    let max_index = index.max::<u64>()?;
    if let Some(m) = max_index {
        if m > u32::MAX as u64 - 1 {
            return Err(compute(format!(
                "column {name:?}: feature index {m} is too large (the limit is 2^32 - 2)"
            )));
        }
    }
    let n_cols = match n_features {
        Some(w) if w < 0 => {
            return Err(compute(format!("invalid parameter `n_features`: got {w}; must be >= 0")));
        }
        Some(w) => w as usize,
        None => max_index.map_or(0, |m| m as usize + 1),
    };
    let (indices, values) = (Buf::from_series(&index)?, Buf::from_series(&value)?);
    Ok(Sparse { indptr, indices, values, n_cols, name, declared: n_features.is_some() })
}

fn dense_vector(s: &Series) -> PolarsResult<Dense> {
    let name = s.name().to_string();
    let s = s.rechunk();
    let n_rows = s.len();
    let (inner, offset, n_cols) = match s.dtype() {
        DataType::Array(_, width) => (s.array()?.get_inner(), 0usize, *width),
        _ => {
            let ca = s.list()?;
            let offs = ca.downcast_as_array().offsets().as_slice().to_vec();
            let width = if n_rows == 0 { 0 } else { (offs[1] - offs[0]) as usize };
            if let Some(r) = (0..n_rows).find(|&r| (offs[r + 1] - offs[r]) as usize != width) {
                return Err(compute(format!(
                    "column {name:?}, row {r}: has {} values but row 0 has {width}; dense vector rows must all have the same length",
                    offs[r + 1] - offs[r]
                )));
            }
            (ca.get_inner(), offs.first().copied().unwrap_or(0) as usize, width)
        }
    };
    if inner.len() < offset + n_rows * n_cols {
        return Err(compute(
            "internal error: dense vector buffer shorter than its rows; please report".into(),
        ));
    }
    Ok(Dense { buf: Buf::from_series(&inner)?, offset, n_rows, n_cols, name, columns: Vec::new() })
}

fn dense_columns(cols: &[Series]) -> PolarsResult<Dense> {
    let n_rows = cols[0].len();
    let n_cols = cols.len();
    let len = n_rows.saturating_mul(n_cols);
    let mut data = budget::zeros(len).map_err(|e| compute(format!("columns {:?}: {e}", cols[0].name())))?;
    for (j, c) in cols.iter().enumerate() {
        let c = c.cast(&DataType::Float64)?;
        for (i, v) in c.f64()?.iter().enumerate() {
            data[i * n_cols + j] = v.unwrap_or(f64::NAN);
        }
    }
    let columns: Vec<String> = cols.iter().map(|c| c.name().to_string()).collect();
    let name = columns.join(", ");
    Ok(Dense { buf: Buf::Owned(data), offset: 0, n_rows, n_cols, name, columns })
}

/// Builds the feature input from the feature series (after the null policy).
pub fn features(cols: &[Series], layout: &Layout) -> PolarsResult<Features> {
    check_feature_dtypes(&cols.iter().map(|c| c.field().into_owned()).collect::<Vec<_>>())?;
    match cols {
        [s] if is_sparse_dtype(s.dtype()) => Ok(Features::Sparse(sparse(s, layout.n_features)?)),
        [s] if matches!(s.dtype(), DataType::List(_) | DataType::Array(..)) => {
            Ok(Features::Dense(dense_vector(s)?))
        }
        _ => Ok(Features::Dense(dense_columns(cols)?)),
    }
}

/// Labels as the core takes them.
pub struct Labels {
    /// `+-1` for binary losses, class indices for multiclass losses, the raw value for
    /// regression.
    pub y: Vec<f64>,
    /// The classes in the label dtype: `[negative, positive]` (binary) or every class sorted
    /// (multiclass); `None` for regression.
    pub classes: Option<Series>,
}

/// Checks that class labels (multiclass labels, CRF tags: `what`) have a supported dtype.
pub fn check_class_dtype(name: &str, dt: &DataType, what: &str) -> PolarsResult<()> {
    if dt.is_string() || dt.is_integer() || dt.is_bool() {
        Ok(())
    } else {
        Err(compute(format!(
            "column {name:?}: {what} must be strings, integers or booleans, got {dt}; cast the column"
        )))
    }
}

/// Class labels as indices `0..K` into their sorted distinct values, and those values in the
/// label dtype (`what` names the labels in messages).
pub fn encode_classes(s: &Series, what: &str) -> PolarsResult<(Vec<u32>, Series)> {
    let name = s.name().to_string();
    check_class_dtype(&name, s.dtype(), what)?;
    if let Some(r) = s.is_null().iter().position(|v| v.unwrap_or(true)) {
        return Err(compute(format!("column {name:?}, row {r}: null label; drop or fill it")));
    }
    if s.dtype().is_string() {
        let ca = s.str()?;
        let sorted: BTreeSet<&str> = ca.iter().flatten().collect();
        let index: HashMap<&str, u32> = sorted.iter().enumerate().map(|(k, s)| (*s, k as u32)).collect();
        let y = ca.iter().map(|v| v.and_then(|s| index.get(s).copied()).unwrap_or(0)).collect();
        let classes = Series::new(name.as_str().into(), sorted.into_iter().collect::<Vec<_>>());
        return Ok((y, classes));
    }
    let as_i64 = s.cast(&DataType::Int64)?;
    let ca = as_i64.i64()?;
    if ca.null_count() > 0 {
        return Err(compute(format!("column {name:?}: integer {what} must fit in Int64")));
    }
    let sorted: BTreeSet<i64> = ca.iter().flatten().collect();
    let index: HashMap<i64, u32> = sorted.iter().enumerate().map(|(k, v)| (*v, k as u32)).collect();
    let y = ca.iter().map(|v| v.and_then(|s| index.get(&s).copied()).unwrap_or(0)).collect();
    let classes =
        Series::new(name.as_str().into(), sorted.into_iter().collect::<Vec<_>>()).cast(s.dtype())?;
    Ok((y, classes))
}

/// Converts a label column for `loss`: binary classes, multiclass classes or regression values.
pub fn labels(s: &Series, loss_kind: &LossKind) -> PolarsResult<Labels> {
    let name = s.name().to_string();
    let dt = s.dtype().clone();
    if loss_kind.is_multiclass() {
        let (y, classes) = encode_classes(s, "multiclass labels")?;
        if classes.len() == 1 {
            // Named by its value here: the core only sees class indices.
            let label = classes.get(0).map(|v| v.to_string()).unwrap_or_default();
            return Err(sdca_core::SdcaError::OneClass { label }).in_column(&name);
        }
        return Ok(Labels { y: y.into_iter().map(f64::from).collect(), classes: Some(classes) });
    }
    let (classification, loss) = (loss_kind.is_classification(), loss_kind.name());
    if !is_number(&dt) {
        return Err(compute(format!(
            "column {name:?}: labels of dtype {dt} are not supported by loss {loss:?}; {}",
            if classification {
                "binary losses take {-1, +1}, {0, 1} or booleans (use loss=\"multinomial\" or \
                 \"multiclass_hinge\" for string or multiclass labels)"
            } else {
                "regression losses take numbers"
            }
        )));
    }
    let raw: Vec<f64> = s.cast(&DataType::Float64)?.f64()?.iter().map(|v| v.unwrap_or(f64::NAN)).collect();
    numeric_labels(raw, &name, &dt, loss_kind)
}

/// [`labels`] of a scalar loss from the label values as `f64` (nulls as NaN) of a numeric
/// column `name` of dtype `dt`.
pub fn numeric_labels(
    raw: Vec<f64>,
    name: &str,
    dt: &DataType,
    loss_kind: &LossKind,
) -> PolarsResult<Labels> {
    let (y, negative) = binary_labels(raw, name, dt, loss_kind)?;
    let classes = negative.map(|negative| class_series(name, negative, dt)).transpose()?;
    Ok(Labels { y, classes })
}

/// The labels of [`numeric_labels`] as the solver reads them, and for a classification loss
/// the value of the negative class (0 or -1; its classes are [`class_series`]).
pub fn binary_labels(
    raw: Vec<f64>,
    name: &str,
    dt: &DataType,
    loss_kind: &LossKind,
) -> PolarsResult<(Vec<f64>, Option<f64>)> {
    let (classification, loss) = (loss_kind.is_classification(), loss_kind.name());
    if !classification {
        return Ok((raw, None));
    }
    let has = |c: f64| raw.contains(&c);
    let negative = if dt.is_bool() || !has(-1.0) { 0.0 } else { -1.0 };
    if let Some(r) = raw.iter().position(|v| !(*v == 1.0 || *v == negative)) {
        let expected = if negative == 0.0 && has(-1.0) {
            "labels mix -1 and 0"
        } else {
            "expected {-1, +1}, {0, 1} or booleans (multiclass labels need loss=\"multinomial\" or \"multiclass_hinge\")"
        };
        return Err(compute(format!(
            "column {name:?}, row {r}: label {} is not valid for binary loss {loss:?}; {expected}",
            raw[r]
        )));
    }
    let y = raw.into_iter().map(|v| if v == 1.0 { 1.0 } else { -1.0 }).collect();
    Ok((y, Some(negative)))
}

/// The classes `[negative, 1]` of a binary label column `name` of dtype `dt`.
pub fn class_series(name: &str, negative: f64, dt: &DataType) -> PolarsResult<Series> {
    Series::new(name.into(), [negative, 1.0]).cast(dt)
}

/// Sample weights as `f64`.
pub fn weights(s: &Series) -> PolarsResult<Vec<f64>> {
    if !is_number(s.dtype()) {
        return Err(compute(format!(
            "column {:?}: weights must be numeric (integer, float, decimal or boolean), got {}",
            s.name(),
            s.dtype()
        )));
    }
    Ok(s.cast(&DataType::Float64)?.f64()?.iter().map(|v| v.unwrap_or(f64::NAN)).collect())
}
