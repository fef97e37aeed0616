/// Everything that can go wrong bringing a deployment up, changing it, or taking it down.
#[derive(Debug, thiserror::Error)]
pub enum ComposeError {
    #[error("cannot reach the Docker engine ({0}); start it (e.g. `systemctl start docker` or `dockerd &`) or set DOCKER_HOST")]
    DockerUnreachable(String),
    #[error("cannot make the base image: {0}")]
    BaseImage(String),
    #[error("building image {image}: {message}")]
    ImageBuild { image: String, message: String },
    #[error("node {node} did not answer within {seconds} s: {last_error}")]
    NodeNotReady {
        node: String,
        seconds: u64,
        last_error: String,
    },
    #[error("node {node} still accepted connections {seconds} s after it was crashed")]
    NodeNotDown { node: String, seconds: u64 },
    #[error("bad deployment options: {0}")]
    BadOptions(String),
    #[error("no free subnet for the run's network: {0}")]
    NoSubnet(String),
    #[error("`{command}` on {node} exited with {exit_code}: {output}")]
    Exec {
        node: String,
        command: String,
        exit_code: i64,
        output: String,
    },
    #[error("unknown node {0}")]
    UnknownNode(String),
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    #[error("docker: {0}")]
    Docker(#[from] bollard::errors::Error),
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
}

impl ComposeError {
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> ComposeError {
        let context = context.into();
        move |source| ComposeError::Io { context, source }
    }
}
