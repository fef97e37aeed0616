use std::collections::HashMap;

use bollard::query_parameters::{
    ListContainersOptions, ListNetworksOptions, RemoveContainerOptions,
};
use bollard::Docker;

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

/// Removes every container and network labelled with this run id.
pub async fn remove_run(docker: &Docker, run_id: &str) -> Result<Leftovers, ComposeError> {
    remove_labelled(docker, &format!("{RUN_LABEL}={run_id}")).await
}

/// Removes everything any splitbrain run left behind (for example after a SIGKILL).
pub async fn clean(docker: &Docker) -> Result<Leftovers, ComposeError> {
    remove_labelled(docker, RUN_LABEL).await
}

/// Lists, without removing, the containers and networks labelled with this run id.
pub async fn list_run(docker: &Docker, run_id: &str) -> Result<Leftovers, ComposeError> {
    let (containers, networks) = labelled(docker, &format!("{RUN_LABEL}={run_id}")).await?;
    Ok(Leftovers {
        containers: containers.into_iter().map(|(_, name)| name).collect(),
        networks: networks.into_iter().map(|(_, name)| name).collect(),
    })
}

type Named = Vec<(String, String)>;

/// (id, name) of every container and network carrying `label`.
async fn labelled(docker: &Docker, label: &str) -> Result<(Named, Named), ComposeError> {
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
            Some((id, name.trim_start_matches('/').to_string()))
        })
        .collect();
    let networks = docker
        .list_networks(Some(ListNetworksOptions {
            filters: Some(filters),
        }))
        .await?
        .into_iter()
        .filter_map(|n| {
            let id = n.id?;
            Some((id.clone(), n.name.unwrap_or(id)))
        })
        .collect();
    Ok((containers, networks))
}

async fn remove_labelled(docker: &Docker, label: &str) -> Result<Leftovers, ComposeError> {
    let (containers, networks) = labelled(docker, label).await?;
    let mut removed = Leftovers::default();
    for (id, name) in containers {
        // A paused container cannot be killed; a failed unpause just means it was not paused.
        let _ = docker.unpause_container(&id).await;
        let force = RemoveContainerOptions {
            force: true,
            v: true,
            ..Default::default()
        };
        match docker.remove_container(&id, Some(force)).await {
            Ok(())
            | Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => {}
            Err(e) => return Err(e.into()),
        }
        removed.containers.push(name);
    }
    for (id, name) in networks {
        match docker.remove_network(&id).await {
            Ok(())
            | Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => {}
            Err(e) => return Err(e.into()),
        }
        removed.networks.push(name);
    }
    Ok(removed)
}
