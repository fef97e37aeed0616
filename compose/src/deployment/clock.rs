//! Each node's wall clock, moved by the clock shim in the node image without touching the
//! host's clock (which every container shares).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::{ComposeError, Deployment};

/// Where the shim reads the skew, inside every node.
const SKEW_FILE: &str = "/run/splitbrain/clock";

/// A node's clock skew: a fixed offset, plus a drift from an anchor instant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClockSkew {
    pub offset_ns: i64,
    /// The clock runs at (1 + drift_ppm / 1e6) times real speed from `anchor_ns` on.
    pub drift_ppm: i64,
    /// A real (host) wall-clock instant, in ns since the epoch.
    pub anchor_ns: i64,
}

impl ClockSkew {
    pub fn offset(offset_ns: i64) -> ClockSkew {
        ClockSkew {
            offset_ns,
            ..ClockSkew::default()
        }
    }

    /// A clock that runs at `rate` times real speed from now on.
    pub fn drift(rate: f64) -> ClockSkew {
        ClockSkew {
            offset_ns: 0,
            drift_ppm: ((rate - 1.0) * 1e6).round() as i64,
            anchor_ns: now_ns(),
        }
    }

    /// The file's 24 bytes, as `printf` octal escapes: the only way to write binary through
    /// a shell that every Debian image has.
    fn printf_escapes(&self) -> String {
        [self.offset_ns, self.drift_ppm, self.anchor_ns]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .map(|b| format!("\\{b:03o}"))
            .collect()
    }
}

/// The host's wall clock, in ns since the epoch.
pub fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

impl Deployment {
    /// Sets a node's clock skew; it takes effect at once, for every process on the node.
    pub async fn set_clock(&self, node: &str, skew: ClockSkew) -> Result<(), ComposeError> {
        let script = format!(
            "printf '{}' | dd of={SKEW_FILE} bs=24 count=1 conv=notrunc 2>/dev/null",
            skew.printf_escapes()
        );
        self.exec_ok(node, &["sh", "-c", &script]).await.map(drop)
    }

    /// The skew stored in a node's clock file.
    pub async fn clock(&self, node: &str) -> Result<ClockSkew, ComposeError> {
        let out = self
            .exec_ok(node, &["od", "-An", "-td8", "-w24", SKEW_FILE])
            .await?;
        let values: Vec<i64> = out
            .split_whitespace()
            .filter_map(|v| v.parse().ok())
            .collect();
        match values[..] {
            [offset_ns, drift_ppm, anchor_ns] => Ok(ClockSkew {
                offset_ns,
                drift_ppm,
                anchor_ns,
            }),
            _ => Err(ComposeError::Exec {
                node: node.to_string(),
                command: format!("od {SKEW_FILE}"),
                exit_code: 0,
                output: out,
            }),
        }
    }

    /// How far the node's clock is from the host's, in milliseconds, as its server reads it.
    pub async fn measured_skew_ms(&self, node: &str) -> Result<f64, ComposeError> {
        let node = self.node(node)?;
        let unread = |last_error: String| ComposeError::NodeNotReady {
            node: node.name.clone(),
            seconds: 2,
            last_error,
        };
        let ask = self.system().clock_skew_ms(node.addr);
        tokio::time::timeout(Duration::from_secs(2), ask)
            .await
            .map_err(|_| unread("asking its clock timed out".into()))?
            .map_err(unread)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_little_endian_octal() {
        let escapes = ClockSkew::offset(1).printf_escapes();
        assert!(escapes.starts_with("\\001\\000"));
        assert_eq!(escapes.len(), 24 * 4);
    }

    #[test]
    fn a_rate_is_parts_per_million_faster() {
        assert_eq!(ClockSkew::drift(2.0).drift_ppm, 1_000_000);
        assert_eq!(ClockSkew::drift(0.5).drift_ppm, -500_000);
    }
}
