//! `splitbrain serve`: the results folder over HTTP on 127.0.0.1, for browsing reports and
//! following their links to histories and node logs.
//!
//! Static files only, read-only, on the loopback interface. `/` is the index, rendered fresh
//! on each request so that it lists runs that finished after the server started. A request
//! path is percent-decoded, may not name `..`, and must resolve (links included: `latest`)
//! to a file inside the results folder, or the answer is 404.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode, Uri};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use tokio_util::sync::CancellationToken;

use crate::cli::ServeArgs;
use crate::error::{Exit, HarnessError};
use crate::report;

/// Serves `args.results` until `stop` is cancelled (Ctrl-C).
pub async fn serve(args: &ServeArgs, stop: CancellationToken) -> Result<Exit, HarnessError> {
    let root = args.results.canonicalize().map_err(|e| {
        HarnessError::BadInput(format!(
            "{} is not a results folder ({e}); give one with --results",
            args.results.display()
        ))
    })?;
    if !root.is_dir() {
        return Err(HarnessError::BadInput(format!(
            "{} is not a folder; give a results folder with --results",
            args.results.display()
        )));
    }
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port))
        .await
        .map_err(|e| {
            HarnessError::BadInput(format!(
                "cannot listen on 127.0.0.1:{} ({e}); choose another port with --port",
                args.port
            ))
        })?;
    let port = listener.local_addr().map_err(anyhow::Error::from)?.port();
    stdoutln!(
        "serving {} on http://127.0.0.1:{port}/ (Ctrl-C stops)",
        args.results.display()
    );
    let app = Router::new()
        .route("/", get(file))
        .route("/{*path}", get(file))
        .with_state(Arc::new(root));
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { stop.cancelled().await })
        .await
        .map_err(anyhow::Error::from)?;
    Ok(Exit::Success)
}

async fn file(State(root): State<Arc<PathBuf>>, uri: Uri) -> Response {
    let path = uri.path();
    if path == "/" || path == "/index.html" {
        return match report::render_index(&root) {
            Ok(page) => {
                ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], page).into_response()
            }
            Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
        };
    }
    let Some(target) = resolve(&root, path) else {
        return (StatusCode::NOT_FOUND, "not found\n").into_response();
    };
    if target.is_dir() {
        if !path.ends_with('/') {
            // Relative links in the folder's page resolve against the folder only with a slash.
            return Redirect::permanent(&format!("{path}/")).into_response();
        }
        let index = target.join("index.html");
        if !index.is_file() {
            return (
                [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                listing(&target, path),
            )
                .into_response();
        }
        return send(&index).await;
    }
    send(&target).await
}

async fn send(path: &Path) -> Response {
    match tokio::fs::read(path).await {
        Ok(bytes) => (
            [
                (header::CONTENT_TYPE, content_type(path)),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            ],
            bytes,
        )
            .into_response(),
        Err(_) => (StatusCode::NOT_FOUND, "not found\n").into_response(),
    }
}

/// The file a request path names under `root` (already canonical), or `None` if it is not
/// there or would leave it.
pub fn resolve(root: &Path, request_path: &str) -> Option<PathBuf> {
    let decoded = percent_decode(request_path)?;
    let mut path = root.to_path_buf();
    for part in decoded.split('/') {
        match part {
            "" | "." => {}
            ".." => return None,
            part if part.contains(['\\', '\0']) => return None,
            part => path.push(part),
        }
    }
    let resolved = path.canonicalize().ok()?;
    resolved.starts_with(root).then_some(resolved)
}

/// Decodes `%XX` escapes; `None` for a malformed escape or bytes that are not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("json") => "application/json",
        // Histories and logs are text a browser should show, not download.
        Some("jsonl" | "log" | "txt" | "edn") => "text/plain; charset=utf-8",
        Some("png") => "image/png",
        Some("svg") => "image/svg+xml",
        _ => "application/octet-stream",
    }
}

/// A plain page linking to each entry of a folder that has no index.html.
fn listing(dir: &Path, request_path: &str) -> String {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    if e.path().is_dir() {
                        name + "/"
                    } else {
                        name
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    report::listing_page(request_path, &names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("results");
        std::fs::create_dir_all(root.join("t/20261130T002335/nodes/n1")).unwrap();
        std::fs::write(root.join("t/20261130T002335/nodes/n1/redis.log"), "log").unwrap();
        std::fs::write(dir.path().join("secret"), "no").unwrap();
        std::os::unix::fs::symlink("20261130T002335", root.join("t/latest")).unwrap();
        std::os::unix::fs::symlink("../secret", root.join("escape")).unwrap();
        let root = root.canonicalize().unwrap();
        (dir, root)
    }

    #[test]
    fn paths_inside_the_results_folder_resolve() {
        let (_dir, root) = tree();
        let log = resolve(&root, "/t/20261130T002335/nodes/n1/redis.log").unwrap();
        assert!(log.ends_with("nodes/n1/redis.log"));
        assert!(resolve(&root, "/t/latest/nodes/n1/redis.log").is_some());
        assert!(
            resolve(&root, "/t/2026%31130T002335/").is_some(),
            "escapes decode"
        );
        assert!(resolve(&root, "/t/nothing").is_none());
    }

    #[test]
    fn nothing_outside_it_does() {
        let (_dir, root) = tree();
        for path in [
            "/../secret",
            "/t/../../secret",
            "/%2e%2e/secret",
            "/t/..%2F..%2Fsecret",
            "/escape",
            "/t/%00",
            "/..\\secret",
            "/%zz",
        ] {
            assert_eq!(resolve(&root, path), None, "{path}");
        }
    }

    #[test]
    fn logs_and_histories_show_as_text() {
        assert_eq!(
            content_type(Path::new("a/history.jsonl")),
            "text/plain; charset=utf-8"
        );
        assert_eq!(
            content_type(Path::new("report.html")),
            "text/html; charset=utf-8"
        );
        assert_eq!(content_type(Path::new("x.bin")), "application/octet-stream");
    }
}
