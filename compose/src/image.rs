//! splitbrain's images, built locally: no container registry is needed.
//!
//! One image per system under test (each system's module names its recipe, see
//! [`crate::system`]) and the storage that lock-protected workloads write to ([`STORAGE`],
//! PostgreSQL). Both are built on one Debian base, which is, in order of
//! preference: splitbrain's own Debian image from an earlier build, a local
//! `debian:bookworm-slim`, a Debian rootfs made here with debootstrap (or mmdebstrap) and
//! imported through the Docker API, or `debian:bookworm-slim` pulled from a registry. The
//! Dockerfiles are the same on every base.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bollard::query_parameters::{BuildImageOptions, CreateImageOptions};
use bollard::Docker;
use futures_util::StreamExt;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use crate::ComposeError;

/// splitbrain's own Debian base image, imported from a debootstrapped rootfs.
pub const BASE_IMAGE: &str = "splitbrain/debian:bookworm";
/// The registry base image used where one is available.
pub const SLIM_IMAGE: &str = "debian:bookworm-slim";

/// An image splitbrain builds: its repository and its build context, every file by name.
pub struct Recipe {
    pub repository: &'static str,
    /// The build context's files: name, contents, mode.
    pub context: &'static [(&'static str, &'static str, u32)],
    /// The Dockerfile's build arguments (besides `BASE`), where one Dockerfile makes several
    /// images: which Debian suite, which packages.
    pub args: &'static [(&'static str, &'static str)],
}

/// The entry point every node image shares (as `splitbrain-node` in its build context): it
/// starts the server, and crashes and restarts it in place on the harness's word, keeping its
/// data.
pub const NODE_ENTRY_POINT: (&str, &str, u32) = (
    "splitbrain-node",
    include_str!("../images/node/splitbrain-node"),
    0o755,
);

/// The storage service: PostgreSQL, trusting every client on the run's private network.
pub const STORAGE: Recipe = Recipe {
    repository: "splitbrain/storage",
    context: &[
        (
            "Dockerfile",
            include_str!("../images/storage/Dockerfile"),
            0o644,
        ),
        (
            "splitbrain-storage",
            include_str!("../images/storage/splitbrain-storage"),
            0o755,
        ),
    ],
    args: &[],
};
const SUITE: &str = "bookworm";
/// Overrides the Debian mirror that debootstrap fetches from.
pub const MIRROR_ENV: &str = "SPLITBRAIN_DEBIAN_MIRROR";

impl Recipe {
    /// The image's tag. It changes whenever the recipe changes, so a stale image is never
    /// used.
    pub fn tag(&self) -> String {
        // FNV-1a: stable across Rust releases, unlike `DefaultHasher`.
        let files = self
            .context
            .iter()
            .flat_map(|(name, text, _)| name.bytes().chain(text.bytes()));
        let args = self
            .args
            .iter()
            .flat_map(|(name, value)| name.bytes().chain(value.bytes()));
        let bytes = files.chain(args);
        let hash = bytes.fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        format!("{}:{:012x}", self.repository, hash >> 16)
    }
}

/// Makes sure the image exists, building it (and its base) if not. Returns its tag.
pub async fn ensure(
    docker: &Docker,
    recipe: &Recipe,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<String, ComposeError> {
    let tag = recipe.tag();
    if exists(docker, &tag).await? {
        return Ok(tag);
    }
    // Seeds or cells side by side are processes of their own, and on a fresh machine each
    // finds the images missing: one builds while the others wait, then find them made (two
    // debootstraps at once fight over apt's lock, and over the base image's name).
    let _one_build_at_a_time = build_lock().await?;
    if exists(docker, &tag).await? {
        return Ok(tag);
    }
    build(docker, recipe, progress).await
}

/// Builds the image even if it exists, as [`build`] does, taking the build lock first: a run
/// beside it that finds the image missing waits for this build rather than making its own.
pub async fn rebuild(
    docker: &Docker,
    recipe: &Recipe,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<String, ComposeError> {
    let _one_build_at_a_time = build_lock().await?;
    build(docker, recipe, progress).await
}

/// The lock every splitbrain process on this machine takes to build images, held while the
/// file it returns is open.
async fn build_lock() -> Result<std::fs::File, ComposeError> {
    let path = std::env::temp_dir().join("splitbrain-image-build.lock");
    let locked = tokio::task::spawn_blocking(move || {
        let file = std::fs::File::create(&path)?;
        file.lock()?;
        Ok(file)
    });
    locked
        .await
        .map_err(std::io::Error::other)
        .and_then(|file| file)
        .map_err(ComposeError::io(
            "taking the image build lock in the temporary folder",
        ))
}

/// Builds the image (and the base image if it is missing), even if it exists.
pub async fn build(
    docker: &Docker,
    recipe: &Recipe,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<String, ComposeError> {
    let base = ensure_base(docker, progress).await?;
    let tag = recipe.tag();
    progress(&format!("building {tag} from {base}"));
    let context = build_context(recipe)?;
    let options = BuildImageOptions {
        dockerfile: "Dockerfile".into(),
        t: Some(tag.clone()),
        rm: true,
        forcerm: true,
        buildargs: Some(
            recipe
                .args
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .chain([("BASE".to_string(), base)])
                .collect::<HashMap<_, _>>(),
        ),
        ..Default::default()
    };
    let mut stream = docker.build_image(options, None, Some(bollard::body_full(context.into())));
    while let Some(step) = stream.next().await {
        let info = step.map_err(|e| ComposeError::ImageBuild {
            image: tag.clone(),
            message: e.to_string(),
        })?;
        if let Some(line) = info.stream.as_deref().map(str::trim_end) {
            if !line.is_empty() {
                progress(line);
            }
        }
    }
    if !exists(docker, &tag).await? {
        return Err(ComposeError::ImageBuild {
            image: tag,
            message: "the build finished but the image is missing".into(),
        });
    }
    Ok(tag)
}

async fn exists(docker: &Docker, image: &str) -> Result<bool, ComposeError> {
    match docker.inspect_image(image).await {
        Ok(_) => Ok(true),
        Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 404, ..
        }) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

fn build_context(recipe: &Recipe) -> Result<Vec<u8>, ComposeError> {
    let mut archive = tar::Builder::new(Vec::new());
    for (name, text, mode) in recipe.context {
        let mut header = tar::Header::new_gnu();
        header.set_size(text.len() as u64);
        header.set_mode(*mode);
        header.set_cksum();
        archive
            .append_data(&mut header, name, text.as_bytes())
            .map_err(ComposeError::io("writing the build context"))?;
    }
    archive
        .into_inner()
        .map_err(ComposeError::io("writing the build context"))
}

/// Finds or makes a Debian base image and returns its name.
async fn ensure_base(
    docker: &Docker,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<String, ComposeError> {
    for image in [BASE_IMAGE, SLIM_IMAGE] {
        if exists(docker, image).await? {
            return Ok(image.to_string());
        }
    }
    if bootstrap_tool().is_none() && can_install_packages() {
        progress("debootstrap is not installed; installing it with apt-get (running as root)");
        install_debootstrap(progress).await?;
    }
    if let Some(tool) = bootstrap_tool() {
        import_rootfs(docker, tool, progress).await?;
        return Ok(BASE_IMAGE.to_string());
    }
    progress(&format!(
        "neither debootstrap nor mmdebstrap is installed; pulling {SLIM_IMAGE}"
    ));
    match tokio::time::timeout(Duration::from_secs(120), pull(docker, SLIM_IMAGE)).await {
        Ok(Ok(())) => Ok(SLIM_IMAGE.to_string()),
        Ok(Err(e)) => Err(ComposeError::BaseImage(format!(
            "install debootstrap (`apt-get install debootstrap`, as root) so splitbrain can make \
             a Debian rootfs, or make {SLIM_IMAGE} available; pulling it failed: {e}"
        ))),
        Err(_) => Err(ComposeError::BaseImage(format!(
            "install debootstrap (`apt-get install debootstrap`, as root) so splitbrain can make \
             a Debian rootfs; pulling {SLIM_IMAGE} timed out after 120 s"
        ))),
    }
}

async fn pull(docker: &Docker, image: &str) -> Result<(), bollard::errors::Error> {
    let options = CreateImageOptions {
        from_image: Some(image.to_string()),
        ..Default::default()
    };
    let mut stream = docker.create_image(Some(options), None, None);
    while let Some(step) = stream.next().await {
        step?;
    }
    Ok(())
}

/// Root on a machine with apt: splitbrain may install debootstrap itself.
fn can_install_packages() -> bool {
    use std::os::unix::fs::MetadataExt;
    let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    root && Path::new("/usr/bin/apt-get").is_file()
}

async fn install_debootstrap(progress: &mut (dyn FnMut(&str) + Send)) -> Result<(), ComposeError> {
    let install = || {
        let mut c = Command::new("apt-get");
        c.args(["install", "-y", "-q", "debootstrap"])
            .env("DEBIAN_FRONTEND", "noninteractive");
        c
    };
    if run_logged(install(), progress).await.is_ok() {
        return Ok(());
    }
    // A fresh machine has no package lists yet.
    let mut update = Command::new("apt-get");
    update.args(["update", "-q"]);
    run_logged(update, progress).await?;
    run_logged(install(), progress).await
}

#[derive(Clone, Copy)]
enum BootstrapTool {
    Debootstrap,
    Mmdebstrap,
}

fn bootstrap_tool() -> Option<BootstrapTool> {
    let on_path = |name: &str| {
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
            .any(|dir| dir.join(name).is_file())
    };
    if on_path("mmdebstrap") {
        Some(BootstrapTool::Mmdebstrap)
    } else if on_path("debootstrap") {
        Some(BootstrapTool::Debootstrap)
    } else {
        None
    }
}

/// Makes a minimal Debian rootfs tarball and imports it as [`BASE_IMAGE`].
async fn import_rootfs(
    docker: &Docker,
    tool: BootstrapTool,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<(), ComposeError> {
    let work = std::env::temp_dir().join(format!("splitbrain-rootfs-{}", std::process::id()));
    let result = make_and_import(docker, tool, &work, progress).await;
    let _ = std::fs::remove_dir_all(&work);
    result
}

async fn make_and_import(
    docker: &Docker,
    tool: BootstrapTool,
    work: &Path,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<(), ComposeError> {
    let _ = std::fs::remove_dir_all(work);
    std::fs::create_dir_all(work)
        .map_err(ComposeError::io(format!("creating {}", work.display())))?;
    let tarball = work.join("rootfs.tar");
    let rootfs = work.join("rootfs");
    let mirror = debian_mirror();
    progress(&format!(
        "making a Debian {SUITE} rootfs from {}",
        mirror.as_deref().unwrap_or("the tool's default mirror")
    ));
    let mut command = match tool {
        BootstrapTool::Mmdebstrap => {
            let mut c = Command::new("mmdebstrap");
            c.args(["--variant=minbase", SUITE]).arg(&tarball);
            c
        }
        BootstrapTool::Debootstrap => {
            let mut c = Command::new("debootstrap");
            c.args(["--variant=minbase", SUITE]).arg(&rootfs);
            c
        }
    };
    command.args(mirror.iter());
    run_logged(command, progress).await?;
    if let BootstrapTool::Debootstrap = tool {
        let mut pack = Command::new("tar");
        pack.arg("-C")
            .arg(&rootfs)
            .arg("-cf")
            .arg(&tarball)
            .arg(".");
        run_logged(pack, progress).await?;
    }
    let bytes = tokio::fs::read(&tarball)
        .await
        .map_err(ComposeError::io(format!("reading {}", tarball.display())))?;
    progress(&format!(
        "importing the rootfs ({} MB) as {BASE_IMAGE}",
        bytes.len() >> 20
    ));
    let (repo, tag) = BASE_IMAGE.split_once(':').unwrap_or((BASE_IMAGE, "latest"));
    let options = CreateImageOptions {
        from_src: Some("-".into()),
        repo: Some(repo.into()),
        tag: Some(tag.into()),
        ..Default::default()
    };
    let mut stream =
        docker.create_image(Some(options), Some(bollard::body_full(bytes.into())), None);
    while let Some(step) = stream.next().await {
        step.map_err(|e| ComposeError::BaseImage(format!("importing the rootfs: {e}")))?;
    }
    Ok(())
}

/// Runs a command, passing each line it prints to `progress`; fails with its last lines.
async fn run_logged(
    mut command: Command,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<(), ComposeError> {
    let program = command
        .as_std()
        .get_program()
        .to_string_lossy()
        .into_owned();
    let mut child = command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| ComposeError::BaseImage(format!("cannot start {program}: {e}")))?;
    let stdout = BufReader::new(child.stdout.take().expect("piped")).lines();
    let stderr = BufReader::new(child.stderr.take().expect("piped")).lines();
    let mut lines =
        futures_util::stream::select(tokio_stream_lines(stdout), tokio_stream_lines(stderr));
    let mut tail: Vec<String> = Vec::new();
    while let Some(line) = lines.next().await {
        progress(&line);
        tail.push(line);
        if tail.len() > 5 {
            tail.remove(0);
        }
    }
    let status = child
        .wait()
        .await
        .map_err(|e| ComposeError::BaseImage(format!("{program}: {e}")))?;
    if status.success() {
        Ok(())
    } else {
        let hint = if program.ends_with("strap") {
            " (it must run as root and reach a Debian mirror; set SPLITBRAIN_DEBIAN_MIRROR to choose one)"
        } else {
            ""
        };
        Err(ComposeError::BaseImage(format!(
            "{program} failed ({status}){hint}: {}",
            tail.join(" | ")
        )))
    }
}

fn tokio_stream_lines<R>(
    lines: tokio::io::Lines<R>,
) -> impl futures_util::Stream<Item = String> + Unpin
where
    R: tokio::io::AsyncBufRead + Unpin,
{
    Box::pin(futures_util::stream::unfold(
        lines,
        |mut lines| async move {
            match lines.next_line().await {
                Ok(Some(line)) => Some((line, lines)),
                _ => None,
            }
        },
    ))
}

/// The Debian mirror to bootstrap from: `SPLITBRAIN_DEBIAN_MIRROR`, else the first source in
/// this machine's apt configuration that serves the suite, else none (the tool's default).
fn debian_mirror() -> Option<String> {
    if let Ok(mirror) = std::env::var(MIRROR_ENV) {
        return Some(mirror);
    }
    let mut files = vec![PathBuf::from("/etc/apt/sources.list")];
    if let Ok(dir) = std::fs::read_dir("/etc/apt/sources.list.d") {
        let mut more: Vec<_> = dir.flatten().map(|e| e.path()).collect();
        more.sort();
        files.extend(more);
    }
    files
        .iter()
        .filter_map(|path| {
            let text = std::fs::read_to_string(path).ok()?;
            match path.extension().and_then(|e| e.to_str()) {
                Some("sources") => mirror_in_deb822(&text),
                Some("list") | None => mirror_in_one_line_format(&text),
                _ => None,
            }
        })
        .next()
}

/// Reads a mirror serving [`SUITE`] from deb822 `.sources` text.
fn mirror_in_deb822(text: &str) -> Option<String> {
    text.split("\n\n").find_map(|stanza| {
        let field = |name: &str| {
            stanza
                .lines()
                .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_string()))
        };
        let serves = field("Suites:")?.split_whitespace().any(|s| s == SUITE);
        let uri = field("URIs:")?.split_whitespace().next()?.to_string();
        serves.then_some(uri)
    })
}

/// Reads a mirror serving [`SUITE`] from one-line `deb URI SUITE COMPONENTS` text.
fn mirror_in_one_line_format(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let mut words = line.split_whitespace().filter(|w| !w.starts_with('['));
        if words.next()? != "deb" {
            return None;
        }
        let uri = words.next()?;
        (words.next()? == SUITE).then(|| uri.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_suite_in_deb822_sources() {
        let text = "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\n\n\
                    Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\n";
        assert_eq!(
            mirror_in_deb822(text).as_deref(),
            Some("http://mirror.example/debian")
        );
        assert_eq!(mirror_in_deb822("URIs: http://x/\nSuites: trixie\n"), None);
    }

    #[test]
    fn finds_the_suite_in_one_line_sources() {
        let text = "# comment\ndeb [arch=amd64] http://mirror.example/debian bookworm main\n";
        assert_eq!(
            mirror_in_one_line_format(text).as_deref(),
            Some("http://mirror.example/debian")
        );
        assert_eq!(
            mirror_in_one_line_format("deb http://x/ jammy main\n"),
            None
        );
    }

    #[test]
    fn image_tags_are_stable_and_distinct() {
        assert_eq!(STORAGE.tag(), STORAGE.tag());
        assert!(STORAGE.tag().starts_with("splitbrain/storage:"));
    }

    #[tokio::test]
    async fn a_second_image_build_waits_for_the_first() {
        let first = build_lock().await.unwrap();
        let second = tokio::spawn(build_lock());
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!second.is_finished(), "the lock was taken twice at once");
        drop(first);
        let taken = tokio::time::timeout(Duration::from_secs(5), second).await;
        assert!(
            matches!(taken, Ok(Ok(Ok(_)))),
            "the second never got the lock"
        );
    }
}
