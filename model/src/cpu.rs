//! CPU time of this process, for benchmarks that report it beside wall-clock time (a figure
//! that other processes sharing the cores do not move).

/// CPU time of this process (every thread) in ms, from `clock_gettime(CLOCK_PROCESS_CPUTIME_ID)`
/// (nanosecond resolution, unlike `/proc`), or `None` where it is not available.
#[cfg(target_os = "linux")]
pub fn cpu_ms() -> Option<f64> {
    use rustix::time::{clock_gettime, ClockId};
    let ts = clock_gettime(ClockId::ProcessCPUTime);
    Some(ts.tv_sec as f64 * 1e3 + ts.tv_nsec as f64 * 1e-6)
}

/// CPU time of this process: not available on this system.
#[cfg(not(target_os = "linux"))]
pub fn cpu_ms() -> Option<f64> {
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn cpu_time_grows_with_work() {
        let Some(before) = super::cpu_ms() else {
            return;
        };
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(super::cpu_ms().unwrap() > before);
    }
}
