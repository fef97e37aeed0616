/// Everything that can go wrong bringing a deployment up, changing it, or taking it down.
///
/// Each message says the error it wraps, which is therefore not also its `source`: an error
/// chain printed whole (`{:#}`) would say it twice ("Input/output error: Input/output error").
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
    #[error("docker: {0}")]
    Docker(bollard::errors::Error),
    #[error("{context}: {error}")]
    Io {
        context: String,
        error: std::io::Error,
    },
}

impl From<bollard::errors::Error> for ComposeError {
    fn from(error: bollard::errors::Error) -> ComposeError {
        ComposeError::Docker(error)
    }
}

impl ComposeError {
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> ComposeError {
        let context = context.into();
        move |error| ComposeError::Io { context, error }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The error and every source under it, as `anyhow`'s `{:#}` prints them.
    fn whole_chain(error: &dyn std::error::Error) -> String {
        let mut printed = error.to_string();
        let mut source = error.source();
        while let Some(next) = source {
            printed += &format!(": {next}");
            source = next.source();
        }
        printed
    }

    #[test]
    fn a_chain_printed_whole_says_the_wrapped_error_once() {
        let error = ComposeError::io("writing the run's log")(std::io::Error::from_raw_os_error(5));
        let printed = whole_chain(&error);
        assert_eq!(
            printed.matches("Input/output error").count(),
            1,
            "{printed}"
        );
        let docker = ComposeError::from(bollard::errors::Error::DockerResponseServerError {
            status_code: 500,
            message: "no space left on device".into(),
        });
        let printed = whole_chain(&docker);
        assert_eq!(printed.matches("no space left").count(), 1, "{printed}");
    }
}
