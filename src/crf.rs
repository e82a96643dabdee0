//! The linear-chain CRF expressions: `crf_fit`, `crf_fit_rows` and `crf_predict`.
//!
//! Inputs are `[tag, features..., sequence]` (fit) or `[model, features..., sequence]`
//! (predict). Consecutive equal values of the sequence column form one sequence, in frame order;
//! an id that re-appears after another id is an error (rows of a sequence must be contiguous).
//! Tags (strings, integers or booleans) become `0..K` in sorted order; the model keeps them in
//! its `labels` list, so predictions come back in the tag dtype.
//!
//! Model layout (DESIGN.md section 4): `emission` is `List(List(Float64))` with one list of
//! `n_attributes` weights per label (in `labels` order), `transition` one list of `K` weights
//! per previous label (`transition[k][l]`: label `k` followed by `l`), and `start`, `end`,
//! `bias` one weight per label.

use std::collections::HashSet;

use polars::prelude::*;
use sdca_core::crf::{
    crf_fit_on, crf_marginals, crf_predict, CrfConfig, CrfFit, CrfProblem, CrfWeights, TokenRows,
};
use sdca_core::Rows;

use crate::convert::{self, Features};
use crate::error::{compute, param};
use crate::interrupt;
use crate::kwargs::{CrfKwargs, CrfPredictKwargs, Layout};
use crate::output::{f64_list, matrix};
use crate::threads;

fn list(dt: DataType) -> DataType {
    DataType::List(Box::new(dt))
}

/// Splits `[first, features..., sequence]`.
pub fn split<'a>(
    inputs: &'a [Series],
    layout: &Layout,
) -> PolarsResult<(&'a Series, &'a [Series], &'a Series)> {
    let k = usize::try_from(layout.n_feature_inputs).unwrap_or(0);
    if k == 0 || inputs.len() != k + 2 {
        return Err(compute(format!(
            "internal error: expected {} crf inputs, got {}; please report",
            k + 2,
            inputs.len()
        )));
    }
    Ok((&inputs[0], &inputs[1..1 + k], &inputs[1 + k]))
}

/// Checks the policies that are not solver parameters.
pub fn check_policies(kw: &CrfKwargs) -> PolarsResult<()> {
    crate::kwargs::one_of("on_error", &kw.on_error, sdca_core::options::ON_ERROR)?;
    if !sdca_core::options::CRF_NULL_POLICIES.contains(&kw.layout.null_policy.as_str()) {
        return Err(compute(format!(
            "invalid parameter `null_policy`: unknown value {:?}; crf fits only support \"raise\" (dropping rows would split sequences): filter or impute nulls first",
            kw.layout.null_policy
        )));
    }
    Ok(())
}

/// Checks that tags have a supported dtype (plan time).
pub fn check_tag_dtype(name: &str, dt: &DataType) -> PolarsResult<()> {
    convert::check_class_dtype(name, dt, "crf tags")
}

/// The `crf_fit` struct's fields, in order.
pub fn model_fields(tag: &DataType) -> Vec<Field> {
    use DataType::*;
    vec![
        Field::new("emission".into(), list(list(Float64))),
        Field::new("transition".into(), list(list(Float64))),
        Field::new("start".into(), list(Float64)),
        Field::new("end".into(), list(Float64)),
        Field::new("bias".into(), list(Float64)),
        Field::new("labels".into(), list(tag.clone())),
        Field::new("l2".into(), Float64),
        Field::new("primal".into(), Float64),
        Field::new("dual".into(), Float64),
        Field::new("gap".into(), Float64),
        Field::new("epochs".into(), UInt32),
        Field::new("converged".into(), Boolean),
        Field::new("gap_trace".into(), list(Float64)),
        Field::new("n_sequences".into(), UInt64),
        Field::new("n_tokens".into(), UInt64),
        Field::new("n_attributes".into(), UInt64),
        Field::new("n_threads".into(), UInt32),
        Field::new("status".into(), String),
    ]
}

/// The `crf_fit_rows` struct's fields.
pub fn rows_fields(tag: &DataType) -> Vec<Field> {
    vec![
        Field::new("prediction".into(), tag.clone()),
        Field::new("marginals".into(), list(DataType::Float64)),
        Field::new("gap".into(), DataType::Float64),
    ]
}

/// Output dtype of `crf_predict`: the inner dtype of the model's `labels` (`kind="labels"`), or
/// `List(Float64)` (`kind="marginals"`: one probability per label).
pub fn predict_dtype(model: &DataType, kind: &str) -> PolarsResult<DataType> {
    let DataType::Struct(fields) = model else {
        return Err(compute(format!(
            "crf_predict needs a crf model struct column (the output of crf_fit), got {model}"
        )));
    };
    for required in ["emission", "transition", "start", "end", "bias", "labels"] {
        if !fields.iter().any(|f| f.name().as_str() == required) {
            return Err(compute(format!(
                "crf model struct has no field {required:?}; pass the output of crf_fit"
            )));
        }
    }
    crate::kwargs::one_of("kind", kind, &["labels", "marginals"])?;
    match fields.iter().find(|f| f.name().as_str() == "labels").map(|f| f.dtype()) {
        Some(DataType::List(_)) if kind == "marginals" => Ok(DataType::List(Box::new(DataType::Float64))),
        Some(DataType::List(inner)) => Ok(inner.as_ref().clone()),
        other => Err(compute(format!("crf model field \"labels\" must be a list, got {other:?}"))),
    }
}

/// Sequence offsets from consecutive equal ids; an id re-appearing later is an error.
fn sequence_starts(seq: &Series) -> PolarsResult<Vec<usize>> {
    let name = seq.name().to_string();
    let ids = seq.cast(&DataType::String).map_err(|_| {
        compute(format!(
            "column {name:?}: sequence ids of dtype {} are not supported; use integer or string ids",
            seq.dtype()
        ))
    })?;
    let ids = ids.str()?;
    let mut starts = vec![0usize];
    let mut seen: HashSet<&str> = HashSet::new();
    let mut prev: Option<&str> = None;
    for (r, id) in ids.iter().enumerate() {
        let id = id
            .ok_or_else(|| compute(format!("column {name:?}, row {r}: null sequence id; drop or fill it")))?;
        if prev != Some(id) {
            if r > 0 {
                starts.push(r);
            }
            if !seen.insert(id) {
                return Err(compute(format!(
                    "column {name:?}, row {r}: sequence {id:?} re-appears after other sequences; rows of a sequence must be contiguous (sort by the sequence column, keeping token order; ids are per call, so use .over(group) when groups reuse ids)"
                )));
            }
            prev = Some(id);
        }
    }
    if !ids.is_empty() {
        starts.push(ids.len());
    }
    Ok(starts)
}

/// One group's converted inputs.
struct Group {
    y: Vec<u32>,
    labels: Series,
    features: Features,
    starts: Vec<usize>,
    tag_name: String,
    seq_name: String,
}

fn prepare(inputs: &[Series], kw: &CrfKwargs) -> PolarsResult<Group> {
    let (inputs, _) = convert::apply_null_policy(inputs, "raise", false)?;
    let (tag, feats, seq) = split(&inputs, &kw.layout)?;
    let (y, labels) = convert::encode_classes(tag, "crf tags")?;
    let features = convert::features(feats, &kw.layout)?;
    let starts = sequence_starts(seq)?;
    Ok(Group {
        y,
        labels,
        features,
        starts,
        tag_name: tag.name().to_string(),
        seq_name: seq.name().to_string(),
    })
}

/// Row-level results of a fit: Viterbi labels and node marginals (`N x K`).
struct RowResults {
    prediction: Vec<u32>,
    marginals: Vec<f64>,
}

fn solve_on<D: TokenRows>(
    x: &D,
    g: &Group,
    cfg: &CrfConfig,
    rows: bool,
) -> PolarsResult<(CrfFit, Option<RowResults>)> {
    let k = g.labels.len();
    let problem = CrfProblem::new(x, &g.starts, &g.y, k)
        .map_err(|e| compute(format!("columns {:?} / {:?}: {e}", g.tag_name, g.seq_name)))?;
    let cells = (problem.n_tokens() as u64).saturating_mul((k as u64).saturating_mul(k as u64));
    let mut cfg = cfg.clone();
    cfg.n_threads = Some(threads::resolve(cfg.n_threads, problem.n_sequences(), cells));
    let pool = if cfg.threads() > 1 { threads::pool() } else { None };
    let fit = crf_fit_on(&problem, &cfg, pool).map_err(|e| match e {
        sdca_core::SdcaError::InvalidParameter { .. } => param(e),
        sdca_core::SdcaError::MemoryLimit { what: "the marginals", .. } => {
            compute(format!("column {:?}: {e}", g.tag_name))
        }
        sdca_core::SdcaError::MemoryLimit { what: "the weights", .. } => {
            compute(format!("column {:?}: {e}", g.features.width().2))
        }
        e => compute(format!("sequence column {:?}: {e}", g.seq_name)),
    })?;
    if fit.status == sdca_core::Status::Interrupted {
        return Err(interrupt::error());
    }
    let out = if rows {
        let w = fit.weights();
        let prediction = crf_predict(&w, x, &g.starts).map_err(param)?;
        let marginals = crf_marginals(&w, x, &g.starts).map_err(param)?.node;
        Some(RowResults { prediction, marginals })
    } else {
        None
    };
    Ok((fit, out))
}

fn solve(g: &Group, cfg: &CrfConfig, rows: bool) -> PolarsResult<(CrfFit, Option<RowResults>)> {
    match &g.features {
        Features::Sparse(s) => solve_on(&s.view()?, g, cfg, rows),
        Features::Dense(d) => solve_on(&d.view()?, g, cfg, rows),
    }
}

fn status_of(e: &PolarsError) -> String {
    match e {
        PolarsError::ComputeError(msg) => msg.to_string(),
        other => other.to_string(),
    }
}

fn model_row(name: &str, fit: &CrfFit, labels: &Series) -> PolarsResult<Series> {
    let k = fit.n_labels;
    let cols = [
        matrix("emission", &fit.emission, k)?,
        matrix("transition", &fit.transition, k)?,
        f64_list("start", &fit.start)?,
        f64_list("end", &fit.end)?,
        f64_list("bias", &fit.bias)?,
        labels.clone().implode()?.into_series().with_name("labels".into()),
        Series::new("l2".into(), [fit.l2]),
        Series::new("primal".into(), [fit.primal]),
        Series::new("dual".into(), [fit.dual]),
        Series::new("gap".into(), [fit.gap]),
        Series::new("epochs".into(), [fit.epochs]),
        Series::new("converged".into(), [fit.converged()]),
        f64_list("gap_trace", &fit.gap_trace)?,
        Series::new("n_sequences".into(), [fit.n_sequences as u64]),
        Series::new("n_tokens".into(), [fit.n_tokens as u64]),
        Series::new("n_attributes".into(), [fit.n_attributes as u64]),
        Series::new("n_threads".into(), [u32::try_from(fit.n_threads).unwrap_or(u32::MAX)]),
        Series::new("status".into(), [fit.status.as_str()]),
    ];
    Ok(StructChunked::from_series(name.into(), 1, cols.iter())?.into_series())
}

fn null_model(name: &str, tag: &DataType, l2: Option<f64>, status: &str) -> PolarsResult<Series> {
    let cols: Vec<Series> = model_fields(tag)
        .into_iter()
        .map(|f| match f.name().as_str() {
            "l2" => Series::new("l2".into(), [l2]),
            "status" => Series::new("status".into(), [status]),
            "converged" => Series::new("converged".into(), [false]),
            _ => Series::full_null(f.name().clone(), 1, f.dtype()),
        })
        .collect();
    Ok(StructChunked::from_series(name.into(), 1, cols.iter())?.into_series())
}

/// `crf_fit`: one model row for the group.
pub fn model(inputs: &[Series], kw: &CrfKwargs) -> PolarsResult<Series> {
    check_policies(kw)?;
    let mut cfg = kw.params.check().map_err(param)?;
    cfg.interrupt = interrupt::arm();
    cfg.memory_budget = convert::default_budget();
    let tag = &inputs[0];
    let result = prepare(inputs, kw).and_then(|g| {
        let (fit, _) = solve(&g, &cfg, false)?;
        model_row(tag.name(), &fit, &g.labels)
    });
    match result {
        Err(e) if kw.on_error == "null" && !interrupt::is_interrupt(&e) => {
            null_model(tag.name(), tag.dtype(), kw.params.l2, &status_of(&e))
        }
        other => other,
    }
}

fn rows_series(
    name: &str,
    n: usize,
    tag: &DataType,
    fitted: Option<(&Group, &CrfFit, &RowResults)>,
) -> PolarsResult<Series> {
    let cols = match fitted {
        Some((g, fit, out)) => {
            let k = fit.n_labels;
            let idx = IdxCa::from_vec("".into(), out.prediction.iter().map(|&l| l as IdxSize).collect());
            let prediction = g.labels.take(&idx)?.cast(tag)?;
            let marginals: Vec<Series> =
                (0..n).map(|r| Series::new("".into(), &out.marginals[r * k..(r + 1) * k])).collect();
            let marginals = Series::new("marginals".into(), marginals).cast(&list(DataType::Float64))?;
            let mut gap = vec![0.0; n];
            for (i, w) in g.starts.windows(2).enumerate() {
                gap[w[0]..w[1]].fill(fit.block_gaps[i]);
            }
            [prediction.with_name("prediction".into()), marginals, Series::new("gap".into(), gap)]
        }
        None => [
            Series::full_null("prediction".into(), n, tag),
            Series::full_null("marginals".into(), n, &list(DataType::Float64)),
            Series::full_null("gap".into(), n, &DataType::Float64),
        ],
    };
    Ok(StructChunked::from_series(name.into(), n, cols.iter())?.into_series())
}

/// `crf_fit_rows`: per-token Viterbi label, node marginals and the sequence's block gap.
pub fn rows(inputs: &[Series], kw: &CrfKwargs) -> PolarsResult<Series> {
    check_policies(kw)?;
    let mut cfg = kw.params.check().map_err(param)?;
    cfg.interrupt = interrupt::arm();
    cfg.memory_budget = convert::default_budget();
    let tag = &inputs[0];
    let result = prepare(inputs, kw).and_then(|g| {
        let (fit, out) = solve(&g, &cfg, true)?;
        let out =
            out.ok_or_else(|| compute("internal error: missing crf row outputs; please report".into()))?;
        rows_series(tag.name(), tag.len(), tag.dtype(), Some((&g, &fit, &out)))
    });
    match result {
        Err(e) if kw.on_error == "null" && !interrupt::is_interrupt(&e) => {
            rows_series(tag.name(), tag.len(), tag.dtype(), None)
        }
        other => other,
    }
}

/// One model row, decoded into owned buffers.
struct Decoded {
    k: usize,
    a: usize,
    emission: Vec<f64>,
    transition: Vec<f64>,
    start: Vec<f64>,
    end: Vec<f64>,
    bias: Vec<f64>,
    labels: Series,
}

impl Decoded {
    fn weights(&self, name: &str) -> PolarsResult<CrfWeights<'_>> {
        CrfWeights::new(self.k, self.a, &self.emission, &self.transition, &self.start, &self.end, &self.bias)
            .map_err(|e| compute(format!("column {name:?}: {e}")))
    }
}

fn field(st: &StructChunked, model: &str, name: &str) -> PolarsResult<Series> {
    st.field_by_name(name).map_err(|_| {
        compute(format!(
            "column {model:?}: crf model struct has no field {name:?}; pass the output of crf_fit"
        ))
    })
}

fn f64_values(s: Option<Series>) -> PolarsResult<Vec<f64>> {
    match s {
        Some(s) => Ok(s.cast(&DataType::Float64)?.f64()?.iter().map(|v| v.unwrap_or(f64::NAN)).collect()),
        None => Ok(Vec::new()),
    }
}

/// Decodes model row `m`, or `None` when the model (or its emission) is null.
fn decode(st: &StructChunked, name: &str, m: usize) -> PolarsResult<Option<Decoded>> {
    let get_list = |f: &str| -> PolarsResult<Option<Series>> {
        let s = field(st, name, f)?;
        let ca = s
            .list()
            .map_err(|_| compute(format!("column {name:?}: crf model field {f:?} must be a list")))?;
        Ok(ca.get_as_series(m))
    };
    if !st.is_not_null().get(m).unwrap_or(false) {
        return Ok(None);
    }
    let (Some(em), Some(tr), Some(labels)) =
        (get_list("emission")?, get_list("transition")?, get_list("labels")?)
    else {
        return Ok(None);
    };
    let k = labels.len();
    let em_rows =
        em.list().map_err(|_| compute(format!("column {name:?}: crf emission must be a list of lists")))?;
    let mut emission = Vec::new();
    let mut a: Option<usize> = None;
    for row in (0..em_rows.len()).map(|i| em_rows.get_as_series(i)) {
        let v = f64_values(row)?;
        if *a.get_or_insert(v.len()) != v.len() {
            return Err(compute(format!("column {name:?}: crf emission rows have different lengths")));
        }
        emission.extend(v);
    }
    let a = match field(st, name, "n_attributes").ok().and_then(|s| s.cast(&DataType::UInt64).ok()) {
        Some(s) => s.u64()?.get(m).map_or(a.unwrap_or(0), |v| v as usize),
        None => a.unwrap_or(0),
    };
    let tr_rows =
        tr.list().map_err(|_| compute(format!("column {name:?}: crf transition must be a list of lists")))?;
    let mut transition = Vec::new();
    for row in (0..tr_rows.len()).map(|i| tr_rows.get_as_series(i)) {
        transition.extend(f64_values(row)?);
    }
    Ok(Some(Decoded {
        k,
        a,
        emission,
        transition,
        start: f64_values(get_list("start")?)?,
        end: f64_values(get_list("end")?)?,
        bias: f64_values(get_list("bias")?)?,
        labels,
    }))
}

/// A cheap identity of model row `m`, to reuse one decoded model across consecutive sequences
/// (after a join every row carries its own copy of its group's model).
fn fingerprint(st: &StructChunked, m: usize) -> Option<Vec<u64>> {
    let mut out = Vec::new();
    for f in ["primal", "dual", "gap", "l2", "n_tokens", "n_sequences", "n_attributes"] {
        let s = st.field_by_name(f).ok()?.cast(&DataType::Float64).ok()?;
        out.push(s.f64().ok()?.get(m)?.to_bits());
    }
    Some(out)
}

/// What `crf_predict` computes for a run of sequences.
enum Prediction {
    /// Viterbi labels, one per row.
    Labels(Vec<u32>),
    /// `p(y_t = k | x)`, row-major `N x K`.
    Marginals(Vec<f64>),
}

fn predict_on<D: TokenRows>(
    w: &CrfWeights<'_>,
    x: &D,
    starts: &[usize],
    marginals: bool,
) -> sdca_core::Result<Prediction> {
    match marginals {
        true => crf_marginals(w, x, starts).map(|m| Prediction::Marginals(m.node)),
        false => crf_predict(w, x, starts).map(Prediction::Labels),
    }
}

fn run_predict(
    model: &Decoded,
    feats: &Features,
    starts: &[usize],
    name: &str,
    marginals: bool,
) -> PolarsResult<Prediction> {
    let w = model.weights(name)?;
    let out = match feats {
        Features::Sparse(s) => {
            predict_on(&w, &s.view_with_width(s.n_cols().max(model.a))?, starts, marginals)
        }
        Features::Dense(d) => {
            let view = d.view()?;
            if view.n_cols() != model.a {
                return Err(compute(format!(
                    "column {:?}: dense features have {} columns but the crf model was fitted on {} attributes; pass the same feature columns as at fit time",
                    d.name(),
                    view.n_cols(),
                    model.a
                )));
            }
            predict_on(&w, &view, starts, marginals)
        }
    };
    out.map_err(|e| compute(format!("column {name:?}: {e}")))
}

/// `crf_predict`: the Viterbi tag (or the label marginals) of every row, each sequence with the
/// model at its first row.
pub fn predict(inputs: &[Series], kw: &CrfPredictKwargs) -> PolarsResult<Series> {
    let (model, feats, seq) = split(inputs, &kw.layout)?;
    let out_dtype = predict_dtype(model.dtype(), &kw.kind)?;
    let marginals = kw.kind == "marginals";
    let name = model.name().to_string();
    let n = seq.len();
    if model.len() != n && model.len() != 1 {
        return Err(compute(format!("column {name:?} has {} rows but the features have {n}", model.len())));
    }
    let (checked, _) = convert::apply_null_policy(&inputs[1..], "raise", false)?;
    let (feats_checked, seq) = checked.split_at(feats.len());
    let seq =
        seq.first().ok_or_else(|| compute("internal error: no sequence input; please report".into()))?;
    let starts = sequence_starts(seq)?;
    let st = model.struct_()?;
    // Runs of consecutive sequences sharing one model row.
    let broadcast = model.len() == 1;
    let mut runs: Vec<(usize, usize, usize)> = Vec::new(); // (first sequence, end sequence, model row)
    let mut last_print: Option<Vec<u64>> = None;
    for (i, &start) in starts.iter().enumerate().take(starts.len().saturating_sub(1)) {
        let m = if broadcast { 0 } else { start };
        let print = if broadcast { Some(Vec::new()) } else { fingerprint(st, m) };
        match runs.last_mut() {
            Some(run) if print.is_some() && print == last_print => run.1 = i + 1,
            _ => runs.push((i, i + 1, m)),
        }
        last_print = print;
    }
    let mut values: Vec<Series> = Vec::with_capacity(runs.len());
    for (s0, s1, m) in runs {
        let (lo, hi) = (starts[s0], starts[s1]);
        let Some(decoded) = decode(st, &name, m)? else {
            values.push(Series::full_null("".into(), hi - lo, &out_dtype));
            continue;
        };
        let sliced: Vec<Series> = feats_checked.iter().map(|s| s.slice(lo as i64, hi - lo)).collect();
        let features = convert::features(&sliced, &kw.layout)?;
        let local: Vec<usize> = starts[s0..=s1].iter().map(|s| s - lo).collect();
        match run_predict(&decoded, &features, &local, &name, marginals)? {
            Prediction::Labels(labels) => {
                let idx = IdxCa::from_vec("".into(), labels.iter().map(|&l| l as IdxSize).collect());
                values.push(decoded.labels.take(&idx)?.cast(&out_dtype)?);
            }
            Prediction::Marginals(node) => {
                let rows: Vec<Option<&[f64]>> =
                    node.chunks_exact(decoded.labels.len().max(1)).map(Some).collect();
                values.push(crate::output::blocks("", &rows, true));
            }
        }
    }
    let mut out = Series::new_empty(name.as_str().into(), &out_dtype);
    for v in values {
        out.append(&v)?;
    }
    Ok(out.with_name(name.as_str().into()))
}
