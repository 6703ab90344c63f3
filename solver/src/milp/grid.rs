//! The time grid: the step `delta` (the gcd of the problem's times, raised when the model
//! would be too large) and each job's first and last start slot.

use schedlm_model::{Problem, Time};

use super::MilpError;

pub(super) fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a.abs()
    } else {
        gcd(b, a % b)
    }
}

/// The gcd of the walltimes and of the offsets from `now` of running ends and releases.
pub(super) fn grid_gcd(problem: &Problem) -> i64 {
    let now = problem.now();
    let g = (0..problem.jobs())
        .flat_map(|j| [problem.walltime(j), problem.released(j) - now])
        .chain(problem.running().iter().map(|r| r.end - now))
        .fold(0, gcd);
    g.max(1)
}

pub(super) fn on_grid(problem: &Problem, delta: i64) -> bool {
    grid_gcd(problem) % delta == 0
}

/// Slot ranges of every job for one step.
pub(super) struct Grid {
    pub(super) delta: i64,
    pub(super) kmin: Vec<i64>,
    pub(super) kmax: Vec<i64>,
    pub(super) len: Vec<i64>,
    pub(super) columns: usize,
    pub(super) nonzeros: usize,
}

impl Grid {
    pub(super) fn new(
        problem: &Problem,
        topo: &[usize],
        est: &[Time],
        latest: &[Time],
        delta: i64,
    ) -> Grid {
        let n = problem.jobs();
        let now = problem.now();
        let len: Vec<i64> = (0..n).map(|j| problem.walltime(j) / delta).collect();
        let mut kmin: Vec<i64> = (0..n).map(|j| (est[j] - now) / delta).collect();
        let mut kmax: Vec<i64> = (0..n).map(|j| (latest[j] - now) / delta).collect();
        for &j in topo {
            for &d in problem.deps(j) {
                kmin[j] = kmin[j].max(kmin[d] + len[d]);
            }
        }
        for &j in topo.iter().rev() {
            for &d in problem.deps(j) {
                kmax[d] = kmax[d].min(kmax[j] - len[d]);
            }
        }
        let mut columns = 0usize;
        let mut nonzeros = 0usize;
        for j in 0..n {
            // Never empty: a wider range only adds columns (see the module docs).
            kmax[j] = kmax[j].max(kmin[j]);
            let servers = (0..problem.servers())
                .filter(|&s| problem.fits(j, s))
                .count();
            let cols = servers.saturating_mul((kmax[j] - kmin[j] + 1) as usize);
            let used = problem.demand(j).iter().filter(|&&d| d > 0).count();
            let per = 2 + used * len[j] as usize + problem.deps(j).len();
            columns = columns.saturating_add(cols);
            nonzeros = nonzeros.saturating_add(cols.saturating_mul(per));
        }
        Grid {
            delta,
            kmin,
            kmax,
            len,
            columns,
            nonzeros,
        }
    }

    pub(super) fn too_large(&self, max_columns: usize, max_nonzeros: usize) -> MilpError {
        MilpError::TooLarge {
            columns: self.columns,
            nonzeros: self.nonzeros,
            step: self.delta,
            max_columns,
            max_nonzeros,
        }
    }
}

/// The exact grid, coarsened until the model fits the limits.
pub(super) fn auto_grid(
    problem: &Problem,
    topo: &[usize],
    est: &[Time],
    latest: &[Time],
    max_columns: usize,
    max_nonzeros: usize,
) -> Result<Grid, MilpError> {
    let base = grid_gcd(problem);
    let now = problem.now();
    // Past this step every job has one slot and length 0: coarser cannot help.
    let widest = (0..problem.jobs())
        .map(|j| latest[j] - now + problem.walltime(j))
        .max()
        .unwrap_or(0)
        + 1;
    let mut delta = base;
    loop {
        let grid = Grid::new(problem, topo, est, latest, delta);
        if grid.columns <= max_columns && grid.nonzeros <= max_nonzeros {
            return Ok(grid);
        }
        if delta > widest {
            return Err(grid.too_large(max_columns, max_nonzeros));
        }
        let ratio = (grid.columns as f64 / max_columns.max(1) as f64)
            .max((grid.nonzeros as f64 / max_nonzeros.max(1) as f64).sqrt())
            .max(1.05);
        let next = ((delta as f64) * ratio).ceil().min(widest as f64 + 1.0) as i64;
        let next = next.max(delta + 1);
        // Stay on multiples of the exact step where possible.
        delta = (next + base - 1) / base * base;
    }
}
