//! Branch and bound on several threads, with the result of one.
//!
//! The root and its children are expanded once, on the calling thread, exactly as the
//! sequential search expands them (same bounds, same child order, same dominance rules); each
//! surviving grandchild becomes a work item, numbered in depth-first order. Workers take items
//! in that order from a shared counter and search each subtree; they share one identical-state
//! table ([`SharedTable`]).
//!
//! Workers share the best total found by any of them. Against their own best they prune ties,
//! as the sequential search does; against the shared best only nodes strictly worse. So an
//! item that holds an optimal order always finds its first one (in depth-first order): any
//! node above it has a bound at most the optimum, and no worker's best is below the optimum.
//! Taking the items' improvements in item order, with the sequential rule (a later order must
//! be better by the tolerance), then returns the first optimal order of the whole depth-first
//! order: the sequential answer, whatever the number of threads or their timing. The shared
//! table prunes a node only with a state that its own item or an earlier one reached at no
//! higher cost: that item covers the state's futures, and its orders come first.
//!
//! A time limit stops every worker; items left unexplored, or stopped midway, keep their
//! parents' bounds as the open bound, as in the sequential search.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use schedlm_model::{Objective, Placement, Problem, Variant};

use super::{BnbOptions, Found, Search, StateKey};

/// Shards of the shared identical-state table (a lock each).
const SHARDS: usize = 64;

/// The identical-state table shared by the workers: per state, the lowest cost it was reached
/// at and the work item that reached it. A state prunes a node only when it came from the
/// node's own item or an earlier one: that item covers the state's futures, and its orders
/// come first in depth-first order, so the result stays the sequential one. A state recorded
/// by a later item does not prune (it is replaced by the earlier item's, at no higher cost).
pub(super) struct SharedTable {
    shards: Vec<Mutex<std::collections::HashMap<StateKey, (f64, usize)>>>,
    /// Most states per shard.
    limit: usize,
}

impl SharedTable {
    fn new(limit: usize) -> Self {
        SharedTable {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            limit: limit.div_ceil(SHARDS),
        }
    }

    /// Whether `key` was reached at a cost within `eps` of `g` or lower by item `item` or an
    /// earlier one; records it otherwise.
    pub(super) fn seen_before(&self, key: StateKey, g: f64, eps: f64, item: usize) -> bool {
        let shard = (key.1 as usize) % SHARDS;
        let Ok(mut map) = self.shards[shard].lock() else {
            return false;
        };
        let full = map.len() >= self.limit;
        match map.get_mut(&key) {
            Some(&mut (seen, by)) if by <= item && seen <= g + eps => true,
            Some(entry) => {
                if g < entry.0 - eps || (item < entry.1 && g <= entry.0 + eps) {
                    *entry = (g, item);
                }
                false
            }
            None => {
                if !full {
                    map.insert(key, (g, item));
                }
                false
            }
        }
    }
}

/// A subtree: the first two placements below the root and the bound of the first.
struct Item {
    first: (usize, Placement),
    second: (usize, Placement),
    /// The bound of the level-1 node (the item's parent).
    bound: f64,
}

/// What a worker found in one item: a better total than its best before the item.
struct Improvement {
    item: usize,
    total: f64,
    order: Vec<usize>,
}

/// What a worker leaves.
#[derive(Default)]
struct WorkerEnd {
    improvements: Vec<Improvement>,
    stopped: Option<super::Status>,
    open_bound: f64,
    nodes: u64,
}

/// Searches `problem` from `incumbent` with `options.threads` threads (see the module docs).
pub(super) fn search(
    problem: &Problem,
    objective: Objective,
    variant: Variant,
    options: &BnbOptions,
    started: Instant,
    incumbent: &[usize],
) -> Found {
    let mut root = Search::new(problem, objective, variant, options, started);
    root.set_incumbent(incumbent);
    let (items, root_bound) = items(&mut root);
    let initial = root.best_total;
    let mut found = Found {
        best_order: incumbent.to_vec(),
        best_total: initial,
        stopped: root.stopped,
        open_bound: f64::INFINITY,
        nodes: root.nodes,
    };
    if let (Some(_), Some(bound)) = (root.stopped, root_bound) {
        // Stopped while expanding the root: nothing below it was searched.
        found.open_bound = bound;
        return found;
    }
    if items.is_empty() || root_bound.is_none() {
        return found;
    }
    let pool = match rayon::ThreadPoolBuilder::new()
        .num_threads(options.threads)
        .build()
    {
        Ok(pool) => pool,
        // No threads to be had: the same search on this one.
        Err(_) => {
            return super::sequential(problem, objective, variant, options, started, incumbent)
        }
    };
    let shared = Arc::new(AtomicU64::new(initial.to_bits()));
    let table = Arc::new(SharedTable::new(options.table_limit));
    let next = AtomicUsize::new(0);
    let ends = Mutex::new(Vec::new());
    pool.broadcast(|_| {
        let mut worker = Search::new(problem, objective, variant, options, started);
        worker.set_incumbent(incumbent);
        worker.shared = Some(Arc::clone(&shared));
        if worker.use_table {
            worker.shared_table = Some(Arc::clone(&table));
        }
        let end = work(&mut worker, &items, &next);
        if let Ok(mut ends) = ends.lock() {
            ends.push(end);
        }
    });
    let ends = ends.into_inner().unwrap_or_default();
    let mut improvements: Vec<Improvement> = Vec::new();
    for end in ends {
        found.nodes += end.nodes;
        found.stopped = found.stopped.or(end.stopped);
        found.open_bound = found.open_bound.min(end.open_bound);
        improvements.extend(end.improvements);
    }
    // The sequential acceptance rule, in depth-first (item) order.
    improvements.sort_by_key(|i| i.item);
    for imp in improvements {
        if imp.total < found.best_total - 1e-9 * found.best_total.abs().max(1.0) {
            found.best_total = imp.total;
            found.best_order = imp.order;
        }
    }
    found
}

/// Expands the root and its children on `root` as the sequential search would, and returns
/// the grandchildren in depth-first order with the root's bound (`None` when the root is
/// pruned: the incumbent is optimal).
fn items(root: &mut Search) -> (Vec<Item>, Option<f64>) {
    root.update_estimates(0, None);
    root.nodes = 1;
    let zero = if root.cost.is_max() {
        f64::NEG_INFINITY
    } else {
        0.0
    };
    let destructive = root.root_bound();
    let Some(root_bound) = root.node_bound(0, zero, destructive) else {
        return (Vec::new(), None);
    };
    let mut items = Vec::new();
    let mut kids = Vec::new();
    root.collect_children(0, &mut kids);
    for &(start, server, job) in &kids {
        if root.deadline.passed_now() {
            root.stopped = Some(super::Status::TimeLimit);
            return (Vec::new(), Some(root_bound));
        }
        let at = Placement { start, server };
        root.d.place_at(job, at);
        root.toggle(job, at);
        root.update_estimates(1, Some((job, at)));
        root.nodes += 1;
        let g = root.cost.add(zero, root.cost.job(job, start));
        if let Some(bound) = root.node_bound(1, g, root_bound) {
            let mut grandchildren = Vec::new();
            root.collect_children(1, &mut grandchildren);
            for &(start, server, second) in &grandchildren {
                items.push(Item {
                    first: (job, at),
                    second: (second, Placement { start, server }),
                    bound,
                });
            }
        }
        root.toggle(job, at);
        root.d.undo();
    }
    (items, Some(root_bound))
}

/// One worker: takes items in order until none is left; after a stop, the rest only count as
/// open.
fn work(worker: &mut Search, items: &[Item], next: &AtomicUsize) -> WorkerEnd {
    let mut end = WorkerEnd {
        open_bound: f64::INFINITY,
        ..WorkerEnd::default()
    };
    worker.update_estimates(0, None);
    let zero = if worker.cost.is_max() {
        f64::NEG_INFINITY
    } else {
        0.0
    };
    loop {
        let index = next.fetch_add(1, Ordering::Relaxed);
        let Some(item) = items.get(index) else { break };
        if worker.stopped.is_some() {
            end.open_bound = end.open_bound.min(item.bound);
            continue;
        }
        let before = worker.best_total;
        worker.item = index;
        let mut g = zero;
        for (level, &(job, at)) in [item.first, item.second].iter().enumerate() {
            worker.d.place_at(job, at);
            worker.toggle(job, at);
            worker.update_estimates(level + 1, Some((job, at)));
            g = worker.cost.add(g, worker.cost.job(job, at.start));
        }
        worker.dfs(2, g, item.bound);
        for &(job, at) in [item.second, item.first].iter() {
            worker.toggle(job, at);
            worker.d.undo();
        }
        if worker.stopped.is_some() {
            end.open_bound = end.open_bound.min(item.bound);
        }
        if worker.best_total < before {
            end.improvements.push(Improvement {
                item: index,
                total: worker.best_total,
                order: worker.best_order.clone(),
            });
        }
    }
    end.stopped = worker.stopped;
    end.open_bound = end.open_bound.min(worker.open_bound);
    end.nodes = worker.nodes;
    end
}
