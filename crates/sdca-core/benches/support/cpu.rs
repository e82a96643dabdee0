//! Process CPU time for the timing programs (`benches/epoch_cost.rs`, `examples/crf_epoch.rs`),
//! which run without a benchmark harness and compare CPU seconds on a shared machine.

/// Process CPU seconds (user + system, all threads), from `/proc/self/stat` fields 14 and 15
/// (clock ticks, 100 Hz); 0 where the file is missing.
pub fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<f64> = after.split_whitespace().map(|v| v.parse().unwrap_or(0.0)).collect();
    (f.get(11).copied().unwrap_or(0.0) + f.get(12).copied().unwrap_or(0.0)) / 100.0
}
