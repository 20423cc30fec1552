//! What `sssp` prints: the table for people and the JSON rows, from the rows of a run.

use asym_apps::cli;
use asym_apps::sssp::coop_delta::CoopStats;
use serde_json::json;

use super::{Args, Prepared, Row};

/// A cooperative search's shares: `cpu 3% · gpu 97%, 2 + 1 stints, split 2048`.
fn coop_text(c: &CoopStats) -> String {
    let total = (c.host_visited + c.device_visited).max(1) as f64;
    format!(
        "cpu {:.0}% · gpu {:.0}%, {} + {} stints, split {}",
        100.0 * c.host_visited as f64 / total,
        100.0 * c.device_visited as f64 / total,
        c.host_stints,
        c.device_stints,
        if c.to_device == usize::MAX {
            "none (threads alone)".to_string()
        } else {
            c.to_device.to_string()
        }
    )
}

/// A cooperative search's split and shares for --json.
fn coop_json(c: &CoopStats) -> serde_json::Value {
    json!({
        "to_device": (c.to_device != usize::MAX).then_some(c.to_device),
        "peak_round": c.peak_round,
        "host_stints": c.host_stints, "device_stints": c.device_stints,
        "host_visited": c.host_visited, "device_visited": c.device_visited,
        "host_ms": c.host_time.as_secs_f64() * 1e3,
        "device_ms": c.device_time.as_secs_f64() * 1e3,
        "handover_ms": c.handover_time.as_secs_f64() * 1e3,
        "host_vertices_per_s": c.host_rate(),
        "device_vertices_per_s": c.device_rate(),
    })
}

/// What a run prints: its rows and where they ran.
pub(super) struct Report<'a> {
    pub(super) args: &'a Args,
    pub(super) prep: &'a Prepared,
    /// Each member's label, and the set's.
    pub(super) labels: Vec<String>,
    pub(super) device_label: Option<String>,
    pub(super) rows: &'a [Row],
}

impl Report<'_> {
    /// The frontier search on the same engine as `mode` (coop expands on the device).
    fn baseline(&self, mode: &str) -> Option<f64> {
        let engine = if mode == "coop" { "gpu" } else { mode };
        self.rows
            .iter()
            .find(|r| r.mode == engine && r.order == "frontier")
            .map(|r| r.ms)
    }

    /// The device a row ran on: a member (gpu@i; coop and gpu on the first), or the set.
    fn device_of(&self, mode: &str) -> Option<String> {
        if let Some(i) = mode.strip_prefix("gpu@") {
            return i
                .parse::<usize>()
                .ok()
                .and_then(|i| self.labels.get(i).cloned());
        }
        match mode {
            m if m.starts_with("gpu-set") || m.starts_with("coop-set") => self.device_label.clone(),
            "gpu" | "coop" => self.labels.first().cloned(),
            _ => None,
        }
    }

    pub(super) fn print_json(&self) {
        let (args, p) = (self.args, self.prep);
        for r in self.rows {
            asym_apps::report!(
                "{}",
                json!({
                    "graph": p.name, "vertices": p.graph.vertices(), "edges": p.graph.edges(),
                    "source": p.given_source + 1, "source_searched": p.source + 1,
                    "vertex_order": args.vertex_order.trim(), "order_ms": p.order_ms,
                    "reached": p.reached, "hop_depth": p.hop_depth, "mode": r.mode, "order": r.order,
                    "threshold": args.threshold, "pop": args.pop.unwrap_or(args.threshold),
                    "batch": args.batch, "ms": r.ms, "runs": r.runs,
                    "ms_min": r.ms_min, "ms_max": r.ms_max,
                    "heap_ms": r.stats.heap_time.as_secs_f64() * 1e3,
                    "compute_ms": r.stats.compute_time.as_secs_f64() * 1e3,
                    "wait_ms": r.stats.wait_time.as_secs_f64() * 1e3,
                    "transfer_ms": r.stats.transfer_time.as_secs_f64() * 1e3,
                    "iterations": r.stats.iterations, "visited": r.stats.visited,
                    "stale": r.stats.stale, "heap_inserted": r.stats.heap_inserted,
                    "relaxed": r.stats.relaxed, "buckets": r.stats.buckets,
                    "launches": r.stats.launches,
                    "speedup_vs_frontier": self.baseline(&r.mode).map(|b| b / r.ms),
                    "speedup_vs_dijkstra": p.dijkstra_ms / r.ms,
                    "device": self.device_of(&r.mode),
                    "set": r.set, "delta": r.delta,
                    "coop": r.coop.as_ref().map(coop_json),
                    "verified": r.check.is_ok(),
                })
            );
        }
    }

    pub(super) fn print_table(&self) {
        let p = self.prep;
        asym_apps::report!(
            "{}: {} vertices, {} edges, source {}, {} reached, hop depth {}{}{}",
            p.name,
            p.graph.vertices(),
            p.graph.edges(),
            p.given_source + 1,
            p.reached,
            p.hop_depth,
            if p.relabeling.is_some() {
                format!(
                    ", searched in breadth-first order (renumbered in {:.1} ms)",
                    p.order_ms
                )
            } else {
                String::new()
            },
            self.device_label
                .as_ref()
                .map_or(String::new(), |d| format!(", device {d}"))
        );
        let mut columns = vec![
            "mode",
            "order",
            ">ms",
            ">heap ms",
            ">comp ms",
            ">iters",
            ">visited",
            ">vs front",
            ">vs dijk",
            "check",
        ];
        let on_set = self.rows.iter().any(|r| r.set.is_some());
        if on_set {
            columns.push("set: plan, shares of the entries");
        }
        let on_coop = self.rows.iter().any(|r| r.coop.is_some());
        if on_coop {
            columns.push("coop: vertices expanded, stints, split");
        }
        let repeated = self.rows.iter().any(|r| r.runs > 1);
        if repeated {
            // Right after the time: the fastest and slowest of the row's searches.
            columns.insert(3, ">of runs, min-max");
        }
        let mut table = cli::Table::new(&columns);
        for r in self.rows {
            let mut cells = vec![
                r.mode.to_string(),
                match r.delta {
                    Some(width) => format!("{} {width}", r.order),
                    None => r.order.to_string(),
                },
                format!("{:.2}", r.ms),
                format!("{:.2}", r.stats.heap_time.as_secs_f64() * 1e3),
                format!("{:.2}", r.stats.compute_time.as_secs_f64() * 1e3),
                r.stats.iterations.to_string(),
                r.stats.visited.to_string(),
                self.baseline(&r.mode)
                    .map_or("-".into(), |b| format!("{:.2}x", b / r.ms)),
                format!("{:.2}x", p.dijkstra_ms / r.ms),
                match &r.check {
                    Ok(()) => "= Dijkstra".to_string(),
                    Err(e) => format!("DIFFERENT: {e}"),
                },
            ];
            if repeated {
                cells.insert(
                    3,
                    if r.runs > 1 {
                        format!("{} runs, {:.2}-{:.2}", r.runs, r.ms_min, r.ms_max)
                    } else {
                        "-".into()
                    },
                );
            }
            if on_coop {
                cells.push(r.coop.as_ref().map_or(String::new(), coop_text));
            }
            if on_set {
                cells.push(r.set.as_ref().map_or(String::new(), |s| {
                    format!(
                        "{}: {}",
                        s["plan"].as_str().unwrap_or("?"),
                        s["shares"].as_str().unwrap_or("")
                    )
                }));
            }
            table.row(cells);
        }
        table.print();
    }
}
