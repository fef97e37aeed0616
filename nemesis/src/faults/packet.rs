//! Packet faults between nodes. Random loss uses iptables' `statistic` match, which every
//! kernel with iptables has. Delay, duplication and reordering need the kernel's netem qdisc,
//! which some kernels lack (these machines' among them): the fault checks for it before the
//! run and says so plainly, pointing at what can be had without it.

use async_trait::async_trait;
use rand::rngs::StdRng;
use rand::Rng;
use splitbrain_compose::{ComposeError, Deployment};

use super::chain::Chain;
use super::{one_or_minority, Action, Fault, Layout, Started, Target};
use crate::NemesisOptions;

/// The chain packet-loss rules go in, apart from any partition's.
const LOSS: Chain = Chain("splitbrain-packet-loss");

/// Packet loss or netem trouble on one node or a minority's incoming traffic from the others.
pub enum Packet {
    /// Drop each packet from the other nodes with a probability (iptables `statistic`).
    Loss,
    /// Delay, duplicate and reorder packets (tc netem).
    Netem,
}

const NETEM: &str = "netem delay 100ms 20ms duplicate 1% reorder 25% 50%";

async fn netem_off(deployment: &Deployment, node: &str) -> Result<(), ComposeError> {
    // `del` fails when there is nothing to delete: that is the healed state.
    deployment
        .exec(node, &["tc", "qdisc", "del", "dev", "eth0", "root"])
        .await
        .map(drop)
}

#[async_trait]
impl Fault for Packet {
    fn name(&self) -> &'static str {
        match self {
            Packet::Loss => "packet-loss",
            Packet::Netem => "packet-netem",
        }
    }

    fn family(&self) -> &'static str {
        match self {
            Packet::Loss => "packet-loss",
            Packet::Netem => "netem",
        }
    }

    fn summary(&self) -> &'static str {
        match self {
            Packet::Loss => "drop 10-50% of the packets nodes send each other (iptables statistic)",
            Packet::Netem => "delay, duplicate and reorder packets between nodes (tc netem)",
        }
    }

    fn fits(&self, layout: &Layout) -> Result<(), String> {
        if layout.nodes.len() < 2 {
            return Err(format!(
                "{} acts between nodes and needs at least 2",
                self.name()
            ));
        }
        Ok(())
    }

    fn plan(&self, layout: &Layout, _options: &NemesisOptions, rng: &mut StdRng) -> Action {
        let targets = one_or_minority(&layout.nodes, rng);
        let params = match self {
            Packet::Loss => {
                let probability = (rng.random_range(0.1..0.5) * 100.0_f64).round() / 100.0;
                serde_json::json!({ "probability": probability })
            }
            Packet::Netem => serde_json::json!({ "netem": NETEM }),
        };
        Action { targets, params }
    }

    async fn preflight(&self, target: &Target) -> Result<(), String> {
        let Packet::Netem = self else { return Ok(()) };
        let deployment = &target.deployment;
        let Some(node) = deployment.nodes().first() else {
            return Ok(());
        };
        let mut add = vec!["tc", "qdisc", "add", "dev", "eth0", "root"];
        add.extend(NETEM.split_whitespace());
        let out = deployment
            .exec(&node.name, &add)
            .await
            .map_err(|e| e.to_string())?;
        netem_off(deployment, &node.name)
            .await
            .map_err(|e| e.to_string())?;
        if out.exit_code == 0 {
            return Ok(());
        }
        Err(format!(
            "packet-netem needs the kernel's netem qdisc, and this kernel has none (tc said: \
             {}). Use packet-loss (iptables) and link-latency (the link proxy) here, or run on a \
             kernel with sch_netem (most distributions and Docker Desktop have it)",
            out.output.trim()
        ))
    }

    async fn start(&self, target: &Target, action: &Action) -> Result<Started, ComposeError> {
        let deployment = &target.deployment;
        for node in &action.targets {
            match self {
                Packet::Loss => {
                    let p = action.params["probability"].as_f64().unwrap_or(0.0);
                    let rules: Vec<String> = deployment
                        .nodes()
                        .iter()
                        .filter(|n| &n.name != node)
                        .map(|peer| {
                            let ip = peer.addr.ip();
                            format!("-s {ip} -m statistic --mode random --probability {p} -j DROP")
                        })
                        .collect();
                    LOSS.append(deployment, node, &rules).await?;
                }
                Packet::Netem => {
                    let mut add = vec!["tc", "qdisc", "add", "dev", "eth0", "root"];
                    add.extend(NETEM.split_whitespace());
                    deployment.exec_ok(node, &add).await?;
                }
            }
        }
        Ok(Started::default())
    }

    async fn stop(&self, target: &Target, action: &Action) -> Result<(), ComposeError> {
        let deployment = &target.deployment;
        for node in &action.targets {
            match self {
                Packet::Loss => LOSS.flush(deployment, node).await?,
                Packet::Netem => netem_off(deployment, node).await?,
            }
        }
        Ok(())
    }

    async fn heal_all(&self, target: &Target) -> Result<(), ComposeError> {
        let all = target.deployment.node_names();
        self.stop(target, &Action::on(all)).await
    }

    async fn leftovers(&self, target: &Target) -> Result<Vec<String>, ComposeError> {
        let mut left = Vec::new();
        for node in target.deployment.nodes() {
            if let Packet::Loss = self {
                let count = LOSS.rules(&target.deployment, &node.name).await?;
                if count > 0 {
                    left.push(format!("{} has {count} packet-loss rule(s)", node.name));
                }
                continue;
            }
            let shown = target
                .deployment
                .exec(&node.name, &["tc", "qdisc", "show", "dev", "eth0"])
                .await?;
            if shown.output.contains("netem") {
                left.push(format!("{} has a netem qdisc", node.name));
            }
        }
        Ok(left)
    }
}
