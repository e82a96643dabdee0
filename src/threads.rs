//! How many threads a fit uses when the user did not say, and the pool they run on.
//!
//! Polars calls a plugin once, on the Python main thread, for `select` on a whole column, and
//! once per group for `group_by().agg` and `.over()`: for a function of several columns (every
//! fit: a label and features) one group after the other, on one thread of Polars' pool (threads
//! named `polars-N`; polars-expr 0.55 `apply_multiple_group_aware` loops over the groups, and
//! 20,000 groups take as much CPU time as wall time in `benchmarks/results.md`, Polars 1.30 and
//! 2.1 alike). So a call on the main thread or on Polars' pool is the only fit running and may
//! use every core; any other thread (a user's thread pool, an unknown platform) gets one
//! thread, so that nothing is oversubscribed by default. The host never sets
//! `CallerContext::parallel()`. `n_threads=` overrides this.
//!
//! The parallel work runs on a dedicated Rayon pool, built once with as many threads as Polars
//! uses (`POLARS_MAX_THREADS`, else the available parallelism), named `sdca-N`; never on the
//! global pool, which `fit_groups` uses. Calls that do run at once (several queries collected
//! from Python threads) share it, so they queue rather than oversubscribe. A fit's result
//! depends on its `n_threads`, not on the pool's size.

use std::sync::OnceLock;

/// Threads Polars uses: `POLARS_MAX_THREADS` when it is a positive integer, else the available
/// parallelism.
pub fn max_threads() -> usize {
    std::env::var("POLARS_MAX_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The calling thread's name (Linux: `/proc/thread-self/comm`; Rust's own name is unset on
/// threads the host created).
fn thread_name() -> Option<String> {
    std::fs::read_to_string("/proc/thread-self/comm").ok().map(|s| s.trim_end().to_string())
}

/// Whether the calling thread is the process's main thread (Linux: its thread id, the last part
/// of `/proc/thread-self`, is the process id).
fn on_main_thread() -> bool {
    std::fs::read_link("/proc/thread-self")
        .ok()
        .and_then(|p| p.file_name().and_then(|t| t.to_str()).and_then(|t| t.parse::<u32>().ok()))
        .is_some_and(|tid| tid == std::process::id())
}

/// Lattice cells (`tokens x labels^2`) below which a fit runs on one thread by default: its
/// blocks would be shorter than the cost of waking the pool.
pub const MIN_PARALLEL_CELLS: u64 = 1 << 20;

/// The thread count of a CRF fit over `sequences` sequences and `cells` lattice cells:
/// `n_threads` when given, else [`max_threads`] for a call on the main thread or on Polars'
/// pool (module docs: the only fit running), and 1 on any other thread or for a small fit.
pub fn resolve(n_threads: Option<usize>, sequences: usize, cells: u64) -> usize {
    if let Some(n) = n_threads {
        return n;
    }
    if cells < MIN_PARALLEL_CELLS || sequences < 2 {
        return 1;
    }
    let polars_pool = thread_name().is_some_and(|name| name.starts_with("polars-"));
    if polars_pool || on_main_thread() {
        max_threads()
    } else {
        1
    }
}

/// The dedicated pool (built on first use with [`max_threads`] threads), or `None` if it could
/// not be built (the fit then runs its parallel phases on the calling thread's current pool).
pub fn pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(max_threads())
            .thread_name(|i| format!("sdca-{i}"))
            .build()
            .ok()
    })
    .as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_counts_win_and_threads_are_detected() {
        assert_eq!(resolve(Some(3), 10, 1 << 30), 3);
        assert!(max_threads() >= 1);
        // A thread spawned here is neither the main thread nor Polars' pool: one thread.
        let other = std::thread::spawn(|| resolve(None, 10, 1 << 30)).join().unwrap_or(0);
        assert_eq!(other, 1);
        // Small fits run on one thread wherever they are called from.
        assert_eq!(resolve(None, 10, MIN_PARALLEL_CELLS - 1), 1);
    }
}
