//! Kernels built twice, for any x86-64 and for AVX2, and chosen at run time.
//!
//! The wheels must run on every x86-64 CPU, so the crate is built for the baseline (SSE2: two
//! `f64` lanes) and never with `-C target-cpu=native`, whose binaries die on an illegal
//! instruction on a CPU older than the build machine. The dense kernels, the forward-backward
//! and the CRF oracle run faster with AVX2's four lanes, so each of them is written once, as a
//! portable body, and [`kernel!`] compiles that body a second time inside a
//! `#[target_feature(enable = "avx2")]` function; its dispatcher runs that copy when
//! [`has_avx2`] says the CPU can.
//!
//! Both copies give the same bits, so a model does not depend on the machine that fitted it.
//! Only `avx2` is enabled, not `fma`, and Rust neither fuses `a * b + c` into one rounding nor
//! reorders a sum on its own: the wider registers run the same operations in the same order
//! (kernels that keep several running sums keep them in explicit lanes, added in a fixed
//! order). The tests compare the two copies bit for bit, which is why the portable body keeps
//! a name of its own.
//!
//! A kernel whose AVX2 copy is written by hand with intrinsics (the vectorised `log` and `exp`
//! of `crf::vlog`) names that copy instead, and the macro writes only the dispatcher.

/// Whether the CPU has AVX2. `std` detects the features once and caches them in a static, so
/// a call is one relaxed atomic load and a bit test: cheap enough for every kernel call.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn has_avx2() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
}

/// Defines a kernel `name` that runs as AVX2 code when the CPU has it, and its portable body
/// under the name given after `as` (same visibility, always inlined: the fallback, and the
/// reference that tests compare the AVX2 copy with):
///
/// ```ignore
/// crate::simd::kernel! {
///     /// `sum_k a_k b_k`.
///     #[inline]
///     pub(crate) fn dot(a: &[f64], b: &[f64]) -> f64 as dot_portable {
///         a.iter().zip(b).map(|(a, b)| a * b).sum()
///     }
/// }
/// ```
///
/// The attributes go to `name`. Parameters are plain names (destructure inside the body) and
/// type parameters take one bound each, as in `<F: Fn(f64) -> f64>`. Without more, the AVX2
/// copy is the body compiled again; `} avx2: path` after the body names a hand-written
/// `#[target_feature(enable = "avx2")] unsafe fn` with the same parameters instead, which must
/// give the same bits and be safe to call whenever the CPU has AVX2.
macro_rules! kernel {
    // No AVX2 copy named: the portable body compiled for AVX2 is the copy.
    (
        @dispatch [] $portable:ident [$($g:ident: $bound:path),*] ($($arg:ident: $ty:ty),*)
            $(-> $ret:ty)?
    ) => {{
        // Safety: the CPU must support AVX2.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2")]
        unsafe fn avx2<$($g: $bound),*>($($arg: $ty),*) $(-> $ret)? {
            $portable($($arg),*)
        }
        $crate::simd::kernel!(@dispatch [avx2] $portable [] ($($arg: $ty),*))
    }};
    // The dispatcher's body: the AVX2 copy when the CPU has it, else the portable body.
    (
        @dispatch [$avx2:path] $portable:ident [$($g:ident: $bound:path),*] ($($arg:ident: $ty:ty),*)
            $(-> $ret:ty)?
    ) => {{
        #[cfg(target_arch = "x86_64")]
        if $crate::simd::has_avx2() {
            // SAFETY: the CPU supports AVX2 (checked), all that the AVX2 copy requires.
            return unsafe { $avx2($($arg),*) };
        }
        $portable($($arg),*)
    }};
    (
        $(#[$attr:meta])*
        $vis:vis fn $name:ident $(<$($g:ident: $bound:path),+ $(,)?>)?
            ($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? as $portable:ident $body:block
            $(avx2: $avx2:path)?
    ) => {
        $(#[$attr])*
        $vis fn $name $(<$($g: $bound),+>)? ($($arg: $ty),*) $(-> $ret)? {
            $crate::simd::kernel!(
                @dispatch [$($avx2)?] $portable [$($($g: $bound),+)?] ($($arg: $ty),*) $(-> $ret)?
            )
        }

        #[doc = concat!("[`", stringify!($name), "`] on any CPU: the fallback, and the reference")]
        #[doc = "that the AVX2 copy must match bit for bit."]
        #[inline(always)]
        $vis fn $portable $(<$($g: $bound),+>)? ($($arg: $ty),*) $(-> $ret)? $body
    };
}
pub(crate) use kernel;
