//! Evaluation of schedulers (priority rules, local search, the exact portfolio, language
//! models) on dataset snapshots and in online trace replay, with optimality-gap reports.
