//! Ctrl-C for long fits.
//!
//! Python turns SIGINT into `KeyboardInterrupt` only when the main thread runs bytecode again,
//! and `collect()` holds it inside Polars until the query ends, so a long fit would ignore
//! Ctrl-C. The plugin therefore counts SIGINTs itself: a handler installed once per process
//! (signal-hook chains to the previous handler, so Python still sees the signal) increments a
//! counter, and each fit, through the core's [`Interrupt`] check after every epoch, stops when
//! the counter moved since the fit started on its thread. The fit then returns [`error`],
//! which `on_error="null"` does not swallow, and Polars stops the query.
//!
//! The counter is the plugin's only process-wide state; it never changes a result, only stops
//! fits that are running when Ctrl-C arrives.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;

use polars::prelude::PolarsError;
use sdca_core::Interrupt;

use crate::error::compute;

static SIGNALS: AtomicU64 = AtomicU64::new(0);
static INSTALL: Once = Once::new();

thread_local! {
    /// The counter when this thread's current fit started.
    static SEEN: Cell<u64> = const { Cell::new(0) };
}

/// The start of the message of an interrupted fit's error.
const MESSAGE: &str = "interrupted by Ctrl-C (SIGINT)";

fn requested() -> bool {
    SIGNALS.load(Ordering::Relaxed) != SEEN.with(Cell::get)
}

/// Installs the SIGINT counter (once) and starts a fit on this thread: only signals arriving
/// from now on stop it. Without a handler (registration refused) fits run to the end.
pub fn arm() -> Option<Interrupt> {
    INSTALL.call_once(|| {
        // SAFETY: the handler only does an atomic add, which is async-signal-safe.
        let installed = unsafe {
            signal_hook::low_level::register(signal_hook::consts::SIGINT, || {
                SIGNALS.fetch_add(1, Ordering::Relaxed);
            })
        };
        // A refused registration leaves fits uninterruptible, as before; nothing to report.
        drop(installed);
    });
    SEEN.with(|s| s.set(SIGNALS.load(Ordering::Relaxed)));
    Some(Interrupt(requested))
}

/// The error an interrupted fit returns.
pub fn error() -> PolarsError {
    compute(format!("{MESSAGE}: the fit stopped and the query was cancelled"))
}

/// Whether `e` is [`error`] (which `on_error="null"` must not turn into a null model).
pub fn is_interrupt(e: &PolarsError) -> bool {
    matches!(e, PolarsError::ComputeError(m) if m.starts_with(MESSAGE))
}
