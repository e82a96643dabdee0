//! CSR arrays (`indptr`, `indices`, `data` of a `scipy.sparse` matrix) as the plugin's sparse
//! feature column, `List(Struct{index: UInt32, value: Float64})`: the list offsets are
//! `indptr` and the struct children the indices and values, so nothing is regrouped.

use polars::prelude::*;
use polars_arrow::array::ListArray;
use polars_arrow::offset::OffsetsBuffer;

use crate::error::compute;

/// The sparse column `name` of the CSR arrays; errors name what does not fit together.
pub fn csr_column(name: &str, indptr: &Series, indices: &Series, values: &Series) -> PolarsResult<Series> {
    let offsets: Vec<i64> = indptr.cast(&DataType::Int64)?.i64()?.into_no_null_iter().collect();
    let nnz = indices.len();
    if values.len() != nnz || offsets.first() != Some(&0) || offsets.last() != Some(&(nnz as i64)) {
        return Err(compute(format!(
            "CSR arrays do not fit together: indptr must run from 0 to the {nnz} indices, and the values \
             must be as many (got indptr {:?}..{:?} and {} values)",
            offsets.first(),
            offsets.last(),
            values.len()
        )));
    }
    let offsets = OffsetsBuffer::try_from(offsets)
        .map_err(|_| compute("CSR indptr must be non-decreasing".to_string()))?;
    let index = indices.cast(&DataType::UInt32)?.with_name("index".into());
    let value = values.cast(&DataType::Float64)?.with_name("value".into());
    let entries = StructChunked::from_series("".into(), nnz, [index, value].iter())?;
    let entries = entries.rechunk();
    let chunk = entries.chunks().first().cloned().ok_or_else(|| compute("empty CSR struct".into()))?;
    let dtype = ListArray::<i64>::default_datatype(chunk.dtype().clone());
    let list = ListArray::<i64>::try_new(dtype, offsets, chunk, None)?;
    Ok(ListChunked::with_chunk(name.into(), list).into_series())
}
