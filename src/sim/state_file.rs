//! `--state-file`: the document (what `GET /_sim/state` shows, with its credentials)
//! loaded at start and written after every burst of changes and at shutdown, so a
//! restarted emulator, even one killed, starts where it was.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::atomic_file;
use super::document::SimDocument;
use super::emulator::Sim;

/// How long the state waits for more changes before it is written.
pub const WRITE_QUIET: Duration = Duration::from_millis(200);

/// The document a state file holds; `None` when there is no file yet.
pub fn load(path: &Path) -> Result<Option<SimDocument>, String> {
    match std::fs::read(path) {
        Ok(bytes) => SimDocument::from_json(&bytes)
            .map(Some)
            .map_err(|e| format!("the state file {} is not a valid document: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("the state file {} cannot be read: {e}", path.display())),
    }
}

/// Writes `sim`'s document to `path` after each burst of changes until `stop`
/// resolves, then once more if a change is pending.
pub async fn keep_written(sim: Arc<Sim>, path: PathBuf, stop: impl std::future::Future<Output = ()>) {
    let changes = sim.changes();
    let write: Arc<dyn Fn() + Send + Sync> = Arc::new(move || {
        let written = serde_json::to_vec_pretty(&sim.document())
            .map_err(|e| e.to_string())
            .and_then(|bytes| atomic_file::write(&path, &bytes).map_err(|e| e.to_string()));
        match written {
            Ok(()) => tracing::debug!(path = %path.display(), "state written"),
            Err(error) => tracing::error!(path = %path.display(), %error, "cannot write the state file"),
        }
    });
    atomic_file::write_after_changes(changes, WRITE_QUIET, stop, write).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_change_is_written_and_loads_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state.json");
        assert_eq!(load(&path), Ok(None), "no file yet");
        let sim = Sim::new(SimDocument {
            access_keys: vec!["k".into()],
            ..SimDocument::default()
        });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let writer = tokio::spawn(keep_written(sim.clone(), path.clone(), async move {
            let _ = stopped.await;
        }));
        sim.world_mut().document.access_keys.push("second".into());
        let _ = stop.send(());
        writer.await.expect("writer");
        let loaded = load(&path).expect("valid").expect("written");
        assert_eq!(
            loaded.access_keys,
            ["k", "second"],
            "credentials are kept: the file is the owner's only"
        );
    }

    #[test]
    fn a_damaged_file_is_an_error_that_names_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state.json");
        std::fs::write(&path, b"{not json").expect("write");
        let error = load(&path).expect_err("refused");
        assert!(error.contains("state.json"), "{error}");
    }
}
