//! Real workloads: [`swf`] reads and cleans Standard Workload Format traces, [`estimate`]
//! predicts run times from history, and [`cut`] cuts snapshots out of a trace replay
//! (docs/traces.md).

pub mod cut;
pub mod estimate;
pub mod swf;
