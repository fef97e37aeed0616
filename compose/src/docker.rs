use std::collections::{BTreeMap, HashMap};

use bollard::query_parameters::{
    ListContainersOptions, ListNetworksOptions, RemoveContainerOptions,
};
use bollard::Docker;

use crate::owner::{Liveness, Owner, OWNER_LABEL};
use crate::ComposeError;

/// The label on every container and network a run makes; its value is the run id.
pub const RUN_LABEL: &str = "splitbrain.run";

/// Connects to the local Docker engine and agrees on an API version with it.
pub async fn connect() -> Result<Docker, ComposeError> {
    let unreachable = |e: bollard::errors::Error| ComposeError::DockerUnreachable(e.to_string());
    let docker = Docker::connect_with_defaults().map_err(unreachable)?;
    let docker = docker.negotiate_version().await.map_err(unreachable)?;
    docker.ping().await.map_err(unreachable)?;
    Ok(docker)
}

/// What [`clean`] or [`remove_run`] removed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Leftovers {
    pub containers: Vec<String>,
    pub networks: Vec<String>,
}

impl Leftovers {
    fn extend(&mut self, other: Leftovers) {
        self.containers.extend(other.containers);
        self.networks.extend(other.networks);
    }
}

/// The environment variable holding one more `key=value` label for everything a run makes, so
/// that a CI job (or anyone sharing a Docker engine) can find what its own runs made.
pub const EXTRA_LABEL_VAR: &str = "SPLITBRAIN_LABEL";

/// The labels of everything a run makes: its run id, the process that owns it, and the label
/// in [`EXTRA_LABEL_VAR`] if one is set.
pub(crate) fn run_labels(run_id: &str) -> HashMap<String, String> {
    let mut labels = HashMap::from([
        (RUN_LABEL.to_string(), run_id.to_string()),
        (OWNER_LABEL.to_string(), Owner::this_process().label()),
    ]);
    if let Ok(extra) = std::env::var(EXTRA_LABEL_VAR) {
        // `key` alone is a label with an empty value, as `docker run --label key` makes.
        let (key, value) = extra.split_once('=').unwrap_or((&extra, ""));
        labels.insert(key.to_string(), value.to_string());
    }
    labels
}

/// Removes every container and network labelled with this run id.
pub async fn remove_run(docker: &Docker, run_id: &str) -> Result<Leftovers, ComposeError> {
    remove_labelled(docker, &format!("{RUN_LABEL}={run_id}")).await
}

/// Removes every container and network the process named by `owner` (an [`Owner`] label)
/// made: what the reaper does once that process is gone.
pub async fn remove_owned(docker: &Docker, owner: &str) -> Result<Leftovers, ComposeError> {
    remove_labelled(docker, &format!("{OWNER_LABEL}={owner}")).await
}

/// What [`clean`] did: what it removed, and the runs it left alone because their owner runs.
#[derive(Debug, Default)]
pub struct Cleaned {
    pub removed: Leftovers,
    /// (run id, owner label, why it was left) of each run left alone.
    pub spared: Vec<(String, String, &'static str)>,
    /// (run id, why) of each run that could not be removed.
    pub failed: Vec<(String, String)>,
}

/// Removes what splitbrain runs left behind (a harness killed before the reaper could act, an
/// engine restarted): every run whose owner is gone, or every run at all with `force`. A run
/// whose owner still runs on this machine, or runs on another machine sharing the engine, is
/// left alone without `force`.
pub async fn clean(docker: &Docker, force: bool) -> Result<Cleaned, ComposeError> {
    let mut cleaned = Cleaned::default();
    for (run, found) in runs(docker).await? {
        let spared = match found.liveness {
            Some(Liveness::Alive) => Some("its harness is still running"),
            Some(Liveness::Elsewhere) => Some("its harness runs on another machine"),
            Some(Liveness::Gone) | None => None,
        };
        let owner = found.owner;
        match spared {
            Some(why) if !force => {
                cleaned.spared.push((run, owner.unwrap_or_default(), why));
            }
            _ => match remove_run(docker, &run).await {
                Ok(removed) => cleaned.removed.extend(removed),
                Err(e) => cleaned.failed.push((run, e.to_string())),
            },
        }
    }
    Ok(cleaned)
}

/// A run's containers and networks on the engine, and whether the process that made them runs.
struct RunFound {
    owner: Option<String>,
    /// `None` for an owner label this version cannot read: its run is taken as abandoned.
    liveness: Option<Liveness>,
    containers: usize,
}

/// Every run with a container or network on the engine, by run id.
async fn runs(docker: &Docker) -> Result<BTreeMap<String, RunFound>, ComposeError> {
    let mut runs: BTreeMap<String, RunFound> = BTreeMap::new();
    for item in labelled(docker, RUN_LABEL).await? {
        let run = item.labels.get(RUN_LABEL).cloned().unwrap_or_default();
        let owner = item.labels.get(OWNER_LABEL).cloned();
        let found = runs.entry(run).or_insert_with(|| RunFound {
            liveness: owner
                .as_deref()
                .and_then(Owner::parse)
                .map(|o| o.liveness()),
            owner,
            containers: 0,
        });
        if item.kind == Kind::Container {
            found.containers += 1;
        }
    }
    Ok(runs)
}

/// The runs whose harness is gone (killed with its reaper) and whose containers or networks
/// are still on the engine, each with how many containers it left: what [`clean`] removes.
pub async fn abandoned(docker: &Docker) -> Result<Vec<(String, usize)>, ComposeError> {
    Ok(runs(docker)
        .await?
        .into_iter()
        .filter(|(_, found)| matches!(found.liveness, Some(Liveness::Gone) | None))
        .map(|(run, found)| (run, found.containers))
        .collect())
}

/// Lists, without removing, the containers and networks labelled with this run id.
pub async fn list_run(docker: &Docker, run_id: &str) -> Result<Leftovers, ComposeError> {
    let mut found = Leftovers::default();
    for item in labelled(docker, &format!("{RUN_LABEL}={run_id}")).await? {
        match item.kind {
            Kind::Container => found.containers.push(item.name),
            Kind::Network => found.networks.push(item.name),
        }
    }
    Ok(found)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Container,
    Network,
}

/// A container or network found by its label.
struct Labelled {
    kind: Kind,
    id: String,
    name: String,
    labels: HashMap<String, String>,
}

/// Every container, then every network, carrying `label` (`name` or `name=value`).
async fn labelled(docker: &Docker, label: &str) -> Result<Vec<Labelled>, ComposeError> {
    let filters = HashMap::from([("label".to_string(), vec![label.to_string()])]);
    let containers = docker
        .list_containers(Some(ListContainersOptions {
            all: true,
            filters: Some(filters.clone()),
            ..Default::default()
        }))
        .await?
        .into_iter()
        .filter_map(|c| {
            let id = c.id?;
            let name = c
                .names
                .and_then(|n| n.into_iter().next())
                .unwrap_or(id.clone());
            Some(Labelled {
                kind: Kind::Container,
                name: name.trim_start_matches('/').to_string(),
                id,
                labels: c.labels.unwrap_or_default(),
            })
        });
    let networks = docker
        .list_networks(Some(ListNetworksOptions {
            filters: Some(filters),
        }))
        .await?
        .into_iter()
        .filter_map(|n| {
            let id = n.id?;
            Some(Labelled {
                kind: Kind::Network,
                name: n.name.unwrap_or(id.clone()),
                id,
                labels: n.labels.unwrap_or_default(),
            })
        });
    Ok(containers.chain(networks).collect())
}

async fn remove_labelled(docker: &Docker, label: &str) -> Result<Leftovers, ComposeError> {
    let mut removed = Leftovers::default();
    // Containers come first: a network cannot go while a container is on it.
    for item in labelled(docker, label).await? {
        match item.kind {
            Kind::Container => {
                // A paused container cannot be killed; a failed unpause just means it was
                // not paused.
                let _ = docker.unpause_container(&item.id).await;
                let force = RemoveContainerOptions {
                    force: true,
                    v: true,
                    ..Default::default()
                };
                gone_or(docker.remove_container(&item.id, Some(force)).await)?;
                removed.containers.push(item.name);
            }
            Kind::Network => {
                remove_network(docker, &item.id).await?;
                removed.networks.push(item.name);
            }
        }
    }
    Ok(removed)
}

/// Removes a network. Another remover (a reaper, a `clean`, the run itself) may be taking
/// its last containers away at the same moment, which the engine refuses as "active
/// endpoints" until they are gone: that is retried for a few seconds.
async fn remove_network(docker: &Docker, id: &str) -> Result<(), ComposeError> {
    for _ in 0..20 {
        match docker.remove_network(id).await {
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 403 | 409,
                ..
            }) => tokio::time::sleep(std::time::Duration::from_millis(250)).await,
            outcome => return gone_or(outcome),
        }
    }
    gone_or(docker.remove_network(id).await)
}

/// A removal's outcome, where "already gone" (404) and "already being removed" (409) by
/// someone else are as good as done.
fn gone_or(outcome: Result<(), bollard::errors::Error>) -> Result<(), ComposeError> {
    match outcome {
        Ok(())
        | Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 404 | 409,
            ..
        }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}
