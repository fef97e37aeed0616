use async_trait::async_trait;
use rand::rngs::StdRng;
use splitbrain_compose::ComposeError;

use super::partition::{apply, Grudge, Partition};
use super::{Action, Fault, Layout, Started, Target};
use crate::links::{link_name, LinkState, Links, Toxics};
use crate::NemesisOptions;

/// Cut the current master off from every other node, Jepsen's 2013 Sentinel test: the
/// majority side promotes a replica while the old master goes on taking writes from every
/// client still talking to it. On `cluster` the master is that of the key's slot, and the
/// window lasts until cluster-node-timeout.
///
/// When clients reach the nodes through link groups (`--client-groups` of 2 or more), the
/// clients are split as the nodes are: group 0 stays on the master's side (its links to
/// every other node go dark) and the other groups on the majority's (their links to the
/// master go dark). Which node is master is known only when the fault starts; `measured`
/// names it, with the grudge and the links cut.
pub struct PrimaryPartition;

#[async_trait]
impl Fault for PrimaryPartition {
    fn name(&self) -> &'static str {
        "partition-primary"
    }

    fn aims_when_started(&self) -> bool {
        true
    }

    fn family(&self) -> &'static str {
        "iptables"
    }

    fn summary(&self) -> &'static str {
        "cut the current master off from the other nodes (and client group 0 with it)"
    }

    /// Splits the clients when they come in groups; on `cluster`, where links cannot
    /// carry the clients, they are left out.
    fn needs_links(&self) -> bool {
        true
    }

    fn fits(&self, layout: &Layout) -> Result<(), String> {
        if !layout.replication.fails_over() {
            return Err(format!(
                "partition-primary needs a master with replicas: use {}",
                layout.deployments_where(|d| d.replication.fails_over())
            ));
        }
        Ok(())
    }

    fn plan(&self, _layout: &Layout, _options: &NemesisOptions, _rng: &mut StdRng) -> Action {
        Action::on(Vec::new())
    }

    async fn start(&self, target: &Target, _action: &Action) -> Result<Started, ComposeError> {
        let deployment = &target.deployment;
        let Some(primary) = deployment.master_of(&target.key).await else {
            return Ok(Started {
                measured: Some(serde_json::json!({ "refused": "no node is master" })),
                background: None,
                targets: None,
                acting_from: None,
            });
        };
        let mut others = deployment.node_names();
        others.retain(|n| *n != primary);
        let mut grudge = Grudge::new();
        grudge.insert(primary.clone(), others.clone());
        for other in &others {
            grudge.insert(other.clone(), vec![primary.clone()]);
        }
        // Clients first: a majority-side client that could still reach the master after its
        // replicas were cut off would have writes acknowledged there that no failover keeps.
        let cut = split_clients(&target.links, &primary, &others);
        apply(deployment, &grudge).await?;
        Ok(Started {
            measured: Some(
                serde_json::json!({ "primary": primary, "grudge": grudge, "links cut": cut }),
            ),
            background: None,
            targets: Some(vec![primary]),
            acting_from: None,
        })
    }

    /// The isolated node was chosen at start; healing every node's rules and every link
    /// covers it, and faults run one at a time.
    async fn stop(&self, target: &Target, _action: &Action) -> Result<(), ComposeError> {
        self.heal_all(target).await
    }

    async fn heal_all(&self, target: &Target) -> Result<(), ComposeError> {
        for link in target.links.names() {
            target.links.set(&link, LinkState::default());
        }
        Partition(None).heal_all(target).await
    }

    async fn leftovers(&self, target: &Target) -> Result<Vec<String>, ComposeError> {
        let mut left = Partition(None).leftovers(target).await?;
        left.extend(
            target
                .links
                .toxic()
                .into_iter()
                .map(|link| format!("link {link} is still cut")),
        );
        Ok(left)
    }
}

/// Blackholes the links that cross the partition: group 0's to the majority's nodes, and
/// every other group's to the isolated master. Returns the links cut; none with fewer than
/// two groups, where every client keeps reaching every node.
fn split_clients(links: &Links, primary: &str, others: &[String]) -> Vec<String> {
    if links.groups() < 2 {
        return Vec::new();
    }
    let dark = Toxics {
        blackhole: true,
        ..Toxics::default()
    };
    let cut = LinkState {
        upstream: dark.clone(),
        downstream: dark,
        reset: false,
    };
    let mut crossing: Vec<String> = others.iter().map(|node| link_name(0, node)).collect();
    crossing.extend((1..links.groups()).map(|group| link_name(group, primary)));
    for link in &crossing {
        links.set(link, cut.clone());
    }
    crossing
}
