//! The command line that makes a spec again: `test.json`'s `command`, and the options a
//! matrix cell or a replay prints.

use std::time::Duration;

use splitbrain_compose::topology::{Persistence, Replication};

use super::{shell_quoted, TestSpec};

impl TestSpec {
    /// The command line that runs this test again, seed included.
    pub fn command_line(&self) -> String {
        if let Some(script) = self.script.as_ref().filter(|script| script.replay) {
            return format!(
                "splitbrain run --replay {}",
                shell_quoted(&script.from.display().to_string())
            );
        }
        let mut line = "splitbrain run".to_string();
        for (flag, value) in self.options() {
            line += &format!(" --{flag}");
            if let Some(value) = value {
                line += &format!(" {}", shell_quoted(&value));
            }
        }
        line
    }

    /// The `splitbrain run` options that make this test again, seed and faults included, as
    /// `(flag, value)`; no value for a switch.
    pub fn options(&self) -> Vec<(&'static str, Option<String>)> {
        let time = |d: Duration| Some(humantime::format_duration(d).to_string());
        let mut options = vec![
            ("deployment", Some(self.deployment.name().to_string())),
            ("client", Some(self.client.to_string())),
            ("workload", Some(self.workload.name.to_string())),
        ];
        options.push(match &self.script {
            Some(script) => ("script", Some(script.from.display().to_string())),
            None if self.skip_unsupported => ("nemesis", Some("all".to_string())),
            None => (
                "nemesis",
                Some(self.fault_names().unwrap_or_else(|| "none".to_string())),
            ),
        });
        options.extend([
            ("time-limit", time(self.time_limit)),
            ("concurrency", Some(self.concurrency.to_string())),
            ("ttl", time(self.ttl)),
            ("seed", Some(self.seed.to_string())),
        ]);
        // Each fault's own option only beside the fault: elsewhere `run` refuses it.
        let faults = |names: &[&str]| self.nemesis.iter().any(|f| names.contains(&f.name()));
        if self.persistence != Persistence::None {
            options.push(("persistence", Some(self.persistence.name().to_string())));
        }
        if faults(&["clock-bump", "clock-strobe", "clock-holder"]) {
            options.push(("clock-bump", time(self.clock_bump)));
        }
        if faults(&["clock-drift"]) {
            options.push(("clock-drift", Some(self.clock_drift.to_string())));
        }
        if faults(&["client-pause"]) {
            options.push(("client-pause", time(self.client_pause)));
        }
        if let Some(nodes) = self.nodes {
            options.push(("nodes", Some(nodes.to_string())));
        }
        if let Some(server) = self
            .server
            .filter(|s| s.name() != self.deployment.system().name())
        {
            options.push(("server", Some(server.name().to_string())));
        }
        if let Some(delay) = self.restart_delay {
            options.push(("restart-delay", time(delay)));
        }
        if let Some(interval) = self.nemesis_interval {
            options.push(("nemesis-interval", time(interval)));
        }
        if self.client.command.is_some() {
            options.push(("exec-start-timeout", time(self.exec_start_timeout)));
        }
        if let Some(hold) = self.hold {
            options.push(("hold", time(hold)));
        }
        if self.client_groups > 0 {
            options.push(("client-groups", Some(self.client_groups.to_string())));
        }
        if faults(&["link-latency"]) {
            options.push(("link-latency", time(self.link_latency)));
        }
        if !self.link_jitter.is_zero() {
            options.push(("link-jitter", time(self.link_jitter)));
        }
        if let Some(port) = self.toxiproxy_port {
            options.push(("toxiproxy-port", Some(port.to_string())));
        }
        if self.resources != 1 {
            options.push(("resources", Some(self.resources.to_string())));
        }
        if let Some(tag) = &self.hash_tag {
            options.push(("hash-tag", Some(tag.clone())));
        }
        if self.deployment.replication() == Replication::Sentinel {
            options.extend([
                ("sentinel-quorum", Some(self.sentinel_quorum.to_string())),
                ("down-after", time(self.down_after)),
                ("failover-timeout", time(self.failover_timeout)),
                (
                    "min-replicas-to-write",
                    Some(self.min_replicas_to_write.to_string()),
                ),
            ]);
        }
        if self.deployment.replication() == Replication::Cluster {
            options.extend([
                ("cluster-replicas", Some(self.cluster_replicas.to_string())),
                ("cluster-node-timeout", time(self.cluster_node_timeout)),
            ]);
        }
        if !self.jitter {
            options.push(("no-jitter", None));
        }
        if self.sequential {
            options.push(("acquire", Some("sequential".to_string())));
        }
        if let Some(replicas) = self.wait_replicas {
            options.push(("wait-replicas", Some(replicas.to_string())));
        }
        if self.fencing {
            options.push(("fencing", None));
        }
        options
    }
}
