//! CRF fit parameters: unchecked as given ([`CrfParams`]), checked once into a [`CrfConfig`].
//!
//! Same pattern as [`crate::config::FitParams::check`]: wide field types so that every bad value
//! reaches [`CrfParams::check`] and gets our wording (the parameter's name, the value, what is
//! allowed); [`crate::crf::crf_fit`] accepts only a [`CrfConfig`].

use crate::error::{Result, SdcaError};

/// How the next sequence is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrfSampling {
    /// Uniformly at random (SDCA of Le Priol et al. 2018).
    Uniform,
    /// Proportionally to the stored block gaps, mixed with uniform (SDCA-GAP).
    Gap,
}

impl CrfSampling {
    /// Accepted names.
    pub const NAMES: &'static [&'static str] = &["uniform", "gap"];
    /// User-facing name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Uniform => "uniform",
            Self::Gap => "gap",
        }
    }
}

/// CRF parameters as the user gave them.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CrfParams {
    /// L2 strength, `lambda` of the paper; `> 0`. `None` means `1 / n` (n = number of sequences),
    /// the paper's choice in every experiment.
    pub l2: Option<f64>,
    /// Relative duality-gap tolerance: stop when `gap <= tol * max(P, tiny)`; `> 0`.
    pub tol: f64,
    /// Maximum number of epochs (`n` sequence updates each); `>= 1`.
    pub max_epochs: i64,
    /// Compute the true gap every this many epochs (`>= 0`; 0: only when the running estimate
    /// falls below `tol`). Each check costs about one epoch of oracle calls.
    pub check_every: i64,
    /// Sampling name: `"uniform"` or `"gap"`.
    pub sampling: String,
    /// Fraction of gap-proportional draws under `"gap"` sampling, in `[0, 1]` (paper: 0.8).
    pub non_uniform: f64,
    /// Newton line-search "sub-precision": stop when the last step is shorter; `> 0`
    /// (default 1e-2; the paper runs 1e-3).
    pub line_search_tol: f64,
    /// Random seed; `>= 0`.
    pub seed: i64,
    /// Refuse to start when the estimated memory exceeds this many bytes; `> 0`.
    pub max_memory: Option<i64>,
    /// Wall-clock budget in seconds; `> 0`.
    pub max_seconds: Option<f64>,
    /// Reject sequences longer than this; `>= 1`.
    pub max_sequence_length: Option<i64>,
    /// Threads computing oracles in parallel; `>= 1`. `None` means 1 in the core (the plugin
    /// resolves `None` to every core for a lone fit, 1 inside Polars' parallel groups). The
    /// result depends on the seed and this number, never on the machine.
    pub n_threads: Option<i64>,
}

/// The defaults of the option schema ([`crate::options::CRF_OPTIONS`]), read at compile time.
impl Default for CrfParams {
    fn default() -> Self {
        use crate::options::{float, int, text, CRF_OPTIONS as O};
        Self {
            l2: None,
            tol: const { float(O, "tol") },
            max_epochs: const { int(O, "max_epochs") },
            check_every: const { int(O, "check_every") },
            sampling: const { text(O, "sampling") }.into(),
            non_uniform: const { float(O, "non_uniform") },
            // Not a user option. Le Priol et al. 2018 (section 6.2, Fig. 8) find convergence the
            // same for any sub-precision <= 0.01 and run 1e-3 to be safe. On CoNLL NER with gap
            // sampling, 1e-2 against 1e-3: epochs to a relative gap of 1e-5 13 and 13, to 1e-8
            // 20 and 20 (uniform sampling to 1e-6: 51 and 53), and 1.20 evaluations per search
            // instead of 1.63 (the search starts close to the root, so most stop at once).
            line_search_tol: 1e-2,
            seed: const { int(O, "seed") },
            max_memory: None,
            max_seconds: None,
            max_sequence_length: None,
            n_threads: None,
        }
    }
}

/// Checked CRF parameters; only [`CrfParams::check`] builds one.
// The private `_checked` field (not `#[non_exhaustive]`) also keeps the rest of this crate from
// building an unchecked config.
#[allow(clippy::manual_non_exhaustive)]
#[derive(Debug, Clone, PartialEq)]
pub struct CrfConfig {
    /// L2 strength (`> 0`), or `None` for `1 / n`.
    pub l2: Option<f64>,
    /// Relative gap tolerance, `> 0`.
    pub tol: f64,
    /// Epoch cap, `>= 1`.
    pub max_epochs: u32,
    /// True-gap check period in epochs (0: only on the running estimate).
    pub check_every: u32,
    /// Sampling rule.
    pub sampling: CrfSampling,
    /// Fraction of gap-proportional draws, in `[0, 1]`.
    pub non_uniform: f64,
    /// Line-search sub-precision, `> 0`.
    pub line_search_tol: f64,
    /// RNG seed.
    pub seed: u64,
    /// Memory cap in bytes.
    pub max_memory: Option<u64>,
    /// The memory budget in bytes when `max_memory` is unset ([`crate::budget`]); `None` after
    /// `check` (no limit): the caller sets it (the plugin passes half of the machine's memory).
    pub memory_budget: Option<u64>,
    /// Wall-clock budget in seconds.
    pub max_seconds: Option<f64>,
    /// Asked after every epoch: `true` stops the fit with [`crate::solver::Status::Interrupted`]
    /// (the plugin passes its SIGINT check, so Ctrl-C stops a long `collect()`). `None` after
    /// `check`; the caller sets it.
    pub interrupt: Option<crate::config::Interrupt>,
    /// Longest accepted sequence.
    pub max_sequence_length: Option<usize>,
    /// Oracle threads (`>= 1`), or `None` for 1.
    pub n_threads: Option<usize>,
    _checked: (),
}

impl CrfConfig {
    /// The memory budget of this fit: `max_memory`, else `memory_budget` ([`crate::budget`]).
    pub fn budget(&self) -> crate::budget::Budget {
        crate::budget::Budget::new(self.max_memory, self.memory_budget)
    }

    /// The L2 strength used for `n` sequences.
    pub fn l2_for(&self, n: usize) -> f64 {
        self.l2.unwrap_or(1.0 / n.max(1) as f64)
    }

    /// The number of oracle threads (`n_threads`, 1 when unset).
    pub fn threads(&self) -> usize {
        self.n_threads.unwrap_or(1)
    }
}

fn invalid(name: &'static str, message: String) -> SdcaError {
    SdcaError::InvalidParameter { name, message }
}

fn finite(name: &'static str, x: f64, ok: bool, want: &str) -> Result<f64> {
    if x.is_finite() && ok {
        Ok(x)
    } else {
        Err(invalid(name, format!("got {x}; must be a finite number {want}")))
    }
}

fn int_at_least(name: &'static str, x: i64, min: i64, max: i64) -> Result<i64> {
    if (min..=max).contains(&x) {
        Ok(x)
    } else {
        Err(invalid(name, format!("got {x}; must be an integer in {min}..={max}")))
    }
}

impl CrfParams {
    /// Checks every value and converts the sampling name to [`CrfSampling`].
    pub fn check(&self) -> Result<CrfConfig> {
        let l2 = match self.l2 {
            Some(l) => Some(finite("l2", l, l > 0.0, "> 0 (the L2 strength lambda), or None for 1/n")?),
            None => None,
        };
        let tol = finite("tol", self.tol, self.tol > 0.0, "> 0 (a relative duality gap)")?;
        let max_epochs = int_at_least("max_epochs", self.max_epochs, 1, u32::MAX as i64)? as u32;
        let check_every = int_at_least("check_every", self.check_every, 0, u32::MAX as i64)? as u32;
        let sampling = match self.sampling.as_str() {
            "uniform" => CrfSampling::Uniform,
            "gap" => CrfSampling::Gap,
            other => {
                return Err(invalid(
                    "sampling",
                    format!("unknown value {other:?}; expected one of {}", CrfSampling::NAMES.join(", ")),
                ))
            }
        };
        let non_uniform = finite(
            "non_uniform",
            self.non_uniform,
            (0.0..=1.0).contains(&self.non_uniform),
            "in [0, 1] (the fraction of gap-proportional draws)",
        )?;
        let line_search_tol = finite(
            "line_search_tol",
            self.line_search_tol,
            self.line_search_tol > 0.0,
            "> 0 (the paper uses 1e-3)",
        )?;
        let seed = int_at_least("seed", self.seed, 0, i64::MAX)? as u64;
        let max_memory = match self.max_memory {
            Some(m) => Some(int_at_least("max_memory", m, 1, i64::MAX)? as u64),
            None => None,
        };
        let max_seconds = match self.max_seconds {
            Some(s) => Some(finite("max_seconds", s, s > 0.0, "> 0")?),
            None => None,
        };
        let max_sequence_length = match self.max_sequence_length {
            Some(m) => Some(int_at_least("max_sequence_length", m, 1, i64::MAX)? as usize),
            None => None,
        };
        let n_threads = match self.n_threads {
            Some(t) => Some(int_at_least("n_threads", t, 1, 1 << 16)? as usize),
            None => None,
        };
        Ok(CrfConfig {
            l2,
            tol,
            max_epochs,
            check_every,
            sampling,
            non_uniform,
            line_search_tol,
            seed,
            max_memory,
            memory_budget: None,
            max_seconds,
            interrupt: None,
            max_sequence_length,
            n_threads,
            _checked: (),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_check() {
        let cfg = CrfParams::default().check().unwrap();
        assert_eq!(cfg.sampling, CrfSampling::Gap);
        assert_eq!((cfg.non_uniform, cfg.line_search_tol), (0.8, 1e-2));
        assert_eq!(cfg.l2_for(50), 0.02);
        let cfg = CrfParams { l2: Some(0.5), ..Default::default() }.check().unwrap();
        assert_eq!(cfg.l2_for(50), 0.5);
    }

    #[test]
    fn bad_values_name_the_parameter() {
        let d = CrfParams::default;
        let cases: Vec<(CrfParams, &str)> = vec![
            (CrfParams { l2: Some(0.0), ..d() }, "l2"),
            (CrfParams { l2: Some(f64::NAN), ..d() }, "l2"),
            (CrfParams { tol: -1.0, ..d() }, "tol"),
            (CrfParams { max_epochs: 0, ..d() }, "max_epochs"),
            (CrfParams { check_every: -1, ..d() }, "check_every"),
            (CrfParams { sampling: "max".into(), ..d() }, "sampling"),
            (CrfParams { non_uniform: 1.5, ..d() }, "non_uniform"),
            (CrfParams { line_search_tol: 0.0, ..d() }, "line_search_tol"),
            (CrfParams { seed: -1, ..d() }, "seed"),
            (CrfParams { max_memory: Some(0), ..d() }, "max_memory"),
            (CrfParams { max_seconds: Some(f64::INFINITY), ..d() }, "max_seconds"),
            (CrfParams { max_sequence_length: Some(0), ..d() }, "max_sequence_length"),
            (CrfParams { n_threads: Some(0), ..d() }, "n_threads"),
        ];
        for (p, name) in cases {
            let err = p.check().unwrap_err();
            assert!(matches!(err, SdcaError::InvalidParameter { name: n, .. } if n == name), "{err}");
        }
        let msg = CrfParams { sampling: "max".into(), ..d() }.check().unwrap_err().to_string();
        assert!(msg.contains("expected one of uniform, gap"), "{msg}");
    }
}
