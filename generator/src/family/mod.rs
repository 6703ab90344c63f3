//! The snapshot families: [`uniform`] (small heterogeneous clusters), [`hpc`] (rigid HPC jobs
//! on identical nodes) and [`dl`] (deep-learning jobs on GPU servers), [`mixed`] (GPU and CPU servers, jobs of
//! very different lengths), and [`draft`], what
//! they share: the per-instance random streams, the draft instance a family fills, the
//! placement of running jobs, walltime rounding, user pools and dependencies.
//! docs/generator.md lists every distribution.

pub mod dl;
pub mod draft;
pub mod hpc;
pub mod mixed;
pub mod uniform;
