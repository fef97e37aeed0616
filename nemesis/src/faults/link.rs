//! Faults on client-to-node links, through the link proxy: one client group's links to some
//! nodes go slow, silent, reset, thin or slow to close, while other groups' links stay clean;
//! or are cut at the nodes' firewalls (`link-drop`), where no kernel answers for the group.
//! Targets are link names, `g<group>-><node>`.

use std::time::Duration;

use async_trait::async_trait;
use rand::rngs::StdRng;
use rand::Rng;
use splitbrain_compose::ComposeError;

use super::{jepsen_targets, Action, Fault, Layout, Started, Target};
use crate::links::{
    link_name, parse_link_name, source_ports, LinkState, Toxics, GROUPS_WITH_SOURCE_PORTS,
};
use crate::NemesisOptions;

/// The link toxics, after toxiproxy's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkKind {
    Latency,
    Blackhole,
    Reset,
    Bandwidth,
    SlowClose,
    /// Drop the group's packets at the nodes' firewalls, by the group's source ports. The
    /// proxy's blackhole leaves the proxy's kernel answering the server's TCP keepalives for
    /// the group, as a paused client's kernel would; a machine cut off answers nothing, and
    /// only this lets a server's keepalive find the client gone.
    Drop,
}

/// A toxic on one client group's links to one node, a minority, a majority or all nodes.
pub struct Link(pub LinkKind);

/// Which way a toxic applies: `upstream` (client to node), `downstream`, or `both`.
fn direction(rng: &mut StdRng) -> &'static str {
    ["upstream", "downstream", "both"][rng.random_range(0..3)]
}

impl Link {
    /// The link state this action asks for.
    fn state(&self, params: &serde_json::Value) -> LinkState {
        let ms = |field: &str| Duration::from_millis(params[field].as_u64().unwrap_or_default());
        let toxics = match self.0 {
            LinkKind::Latency => Toxics {
                latency: ms("latency_ms"),
                jitter: ms("jitter_ms"),
                ..Toxics::default()
            },
            LinkKind::Blackhole => Toxics {
                blackhole: true,
                ..Toxics::default()
            },
            LinkKind::Bandwidth => Toxics {
                bandwidth: params["bytes_per_second"].as_u64(),
                ..Toxics::default()
            },
            LinkKind::SlowClose => Toxics {
                slow_close: ms("delay_ms"),
                ..Toxics::default()
            },
            LinkKind::Drop => return LinkState::default(),
            LinkKind::Reset => {
                return LinkState {
                    reset: true,
                    ..LinkState::default()
                }
            }
        };
        let way = params["direction"].as_str().unwrap_or("both");
        LinkState {
            upstream: if way == "downstream" {
                Toxics::default()
            } else {
                toxics.clone()
            },
            downstream: if way == "upstream" {
                Toxics::default()
            } else {
                toxics
            },
            reset: false,
        }
    }
}

#[async_trait]
impl Fault for Link {
    fn name(&self) -> &'static str {
        match self.0 {
            LinkKind::Latency => "link-latency",
            LinkKind::Blackhole => "link-blackhole",
            LinkKind::Reset => "link-reset",
            LinkKind::Bandwidth => "link-bandwidth",
            LinkKind::SlowClose => "link-slow-close",
            LinkKind::Drop => "link-drop",
        }
    }

    /// The proxy's toxics heal apart from the firewall's drops.
    fn family(&self) -> &'static str {
        match self.0 {
            LinkKind::Drop => "link-drop",
            _ => "link",
        }
    }

    fn summary(&self) -> &'static str {
        match self.0 {
            LinkKind::Latency => {
                "delay one client group's traffic to some nodes by about --link-latency"
            }
            LinkKind::Blackhole => {
                "swallow one client group's traffic to some nodes, connections open"
            }
            LinkKind::Reset => "reset one client group's connections to some nodes",
            LinkKind::Bandwidth => "throttle one client group's links to some nodes to 1-10 KB/s",
            LinkKind::SlowClose => {
                "delay the close of one client group's connections to some nodes"
            }
            LinkKind::Drop => {
                "drop one client group's packets at some nodes' firewalls (a cut-off machine: \
                 no keepalive is answered)"
            }
        }
    }

    fn needs_links(&self) -> bool {
        true
    }

    fn fits(&self, layout: &Layout) -> Result<(), String> {
        links_fit(self.name(), layout, self.0 == LinkKind::Drop)
    }

    fn plan(&self, layout: &Layout, options: &NemesisOptions, rng: &mut StdRng) -> Action {
        let group = rng.random_range(0..layout.groups.max(1));
        let targets = jepsen_targets(&layout.nodes, rng)
            .iter()
            .map(|node| link_name(group, node))
            .collect();
        let params = match self.0 {
            LinkKind::Latency => {
                let latency = options.link_latency.mul_f64(rng.random_range(0.5..1.5));
                serde_json::json!({
                    "direction": direction(rng),
                    "latency_ms": latency.as_millis() as u64,
                    "jitter_ms": (latency / 10).as_millis() as u64,
                })
            }
            LinkKind::Blackhole => serde_json::json!({ "direction": direction(rng) }),
            LinkKind::Reset | LinkKind::Drop => serde_json::Value::Null,
            LinkKind::Bandwidth => serde_json::json!({
                "direction": direction(rng),
                "bytes_per_second": rng.random_range(1_000..=10_000u64),
            }),
            LinkKind::SlowClose => serde_json::json!({
                "direction": direction(rng),
                "delay_ms": options.interval.as_millis() as u64,
            }),
        };
        Action { targets, params }
    }

    async fn start(&self, target: &Target, action: &Action) -> Result<Started, ComposeError> {
        if self.0 == LinkKind::Drop {
            for link in &action.targets {
                firewall(target, link, "-I").await?;
            }
            return Ok(Started::default());
        }
        let state = self.state(&action.params);
        for link in &action.targets {
            target.links.set(link, state.clone());
        }
        Ok(Started::default())
    }

    async fn stop(&self, target: &Target, action: &Action) -> Result<(), ComposeError> {
        if self.0 == LinkKind::Drop {
            for link in &action.targets {
                firewall(target, link, "-D").await?;
            }
            return Ok(());
        }
        for link in &action.targets {
            target.links.set(link, LinkState::default());
        }
        Ok(())
    }

    async fn heal_all(&self, target: &Target) -> Result<(), ComposeError> {
        if self.0 == LinkKind::Drop {
            for link in dropped(target).await? {
                firewall(target, &link, "-D").await?;
            }
            return Ok(());
        }
        target.links.heal();
        Ok(())
    }

    async fn leftovers(&self, target: &Target) -> Result<Vec<String>, ComposeError> {
        if self.0 == LinkKind::Drop {
            let dropped = dropped(target).await?;
            return Ok(dropped
                .into_iter()
                .map(|link| format!("link {link} is still dropped at its node's firewall"))
                .collect());
        }
        Ok(target
            .links
            .toxic()
            .into_iter()
            .map(|link| format!("link {link} still has a toxic"))
            .collect())
    }
}

/// Why a fault on the client links named `fault` cannot run on `layout`, if it cannot; `drop`
/// for one that cuts them at the firewall, by the groups' source ports.
pub(super) fn links_fit(fault: &str, layout: &Layout, drop: bool) -> Result<(), String> {
    if layout.replication.clients_bypass_links {
        return Err(format!(
            "{fault} works on client links, and this deployment's clients follow redirects to \
             the nodes' own addresses, around the links; use partition or packet faults here"
        ));
    }
    if layout.groups == 0 {
        return Err(format!(
            "{fault} needs client links (--client-groups 1 or more)"
        ));
    }
    if drop && layout.groups > GROUPS_WITH_SOURCE_PORTS {
        return Err(format!(
            "{fault} tells client groups apart by source port ranges, of which there are \
             {GROUPS_WITH_SOURCE_PORTS}; use --client-groups {GROUPS_WITH_SOURCE_PORTS} or fewer"
        ));
    }
    Ok(())
}

/// The firewall rules that drop a group's packets at a node, by the group's source ports:
/// both ways, so that neither the server's replies nor its keepalive probes get through.
fn drop_rules(ports: &std::ops::RangeInclusive<u16>) -> [[String; 4]; 2] {
    let range = format!("{}:{}", ports.start(), ports.end());
    [
        [
            "INPUT".into(),
            "--sport".into(),
            range.clone(),
            "-j DROP".into(),
        ],
        ["OUTPUT".into(), "--dport".into(), range, "-j DROP".into()],
    ]
}

/// Adds (`-I`) or deletes (`-D`) the rules that cut `link` at its node.
pub(super) async fn firewall(target: &Target, link: &str, how: &str) -> Result<(), ComposeError> {
    let (group, node) = parse_link_name(link).ok_or_else(|| {
        ComposeError::BadOptions(format!("`{link}` names no client group's link"))
    })?;
    let ports = source_ports(group).ok_or_else(|| {
        ComposeError::BadOptions(format!(
            "client group {group} has no source ports of its own"
        ))
    })?;
    let rules: Vec<String> = drop_rules(&ports)
        .iter()
        .map(|[chain, port, range, jump]| {
            format!("iptables {how} {chain} -p tcp {port} {range} {jump}")
        })
        .collect();
    target
        .deployment
        .exec_ok(node, &["sh", "-c", &rules.join(" && ")])
        .await
        .map(drop)
}

/// Every link whose drop rules are on its node's firewall.
async fn dropped(target: &Target) -> Result<Vec<String>, ComposeError> {
    let deployment = &target.deployment;
    let mut dropped = Vec::new();
    if target.links.groups() == 0 {
        // No client links, so no drop rules: no need to ask the nodes.
        return Ok(dropped);
    }
    for node in deployment.nodes() {
        let rules = deployment
            .exec_ok(&node.name, &["iptables", "-S", "INPUT"])
            .await?;
        for group in 0..target.links.groups() {
            let Some(ports) = source_ports(group) else {
                continue;
            };
            let range = format!("--sport {}:{}", ports.start(), ports.end());
            if rules.lines().any(|rule| rule.contains(&range)) {
                dropped.push(link_name(group, &node.name));
            }
        }
    }
    Ok(dropped)
}
